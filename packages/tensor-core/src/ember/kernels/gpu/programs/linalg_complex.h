// dtypes: complex64 complex128
/* ember.linalg's complex device kernels: LU with partial pivoting and its solves,
 * triangular solves and Cholesky (A = L L^H), the real programs' text (../linalg_lu.h)
 * over the complex helpers of ember_complex.h; the host half is
 * backends/gpu/linalg.py (its trailing updates: four real GEMMs on the parts). */
#include "../linalg_lu.h"
