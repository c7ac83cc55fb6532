/* ember's dense linear algebra on the CPU (kernels/cpu/linalg.c): the LAPACK
 * factorizations ember.linalg is built on, written for ember's own GEMM (gemm.h) and
 * thread pool (threads.h).
 *
 * Every entry point works on a BATCH of `batch` matrices stored one after the other,
 * each row-major and contiguous (element (i, j) of matrix b of an m x n operand is
 * at b*m*n + i*n + j), in place where the operand is an input and an output. Small
 * matrices are shared out over the thread pool by batch entry; a large one runs alone
 * and its GEMMs use the pool.
 *
 * dtype is ember's dtype number: 7 float32, 8 float64. The algorithms are written
 * once over the element type (linalg_impl.h, included per dtype), so the complex
 * dtypes are the same include with complex arithmetic.
 *
 * Return value: 0, EM_LINALG_ENOMEM (a workspace could not be allocated) or
 * EM_LINALG_EDTYPE. Numerical failures are not errors here: they are reported per
 * batch entry in `info` (int32, LAPACK's meaning, 0 = success) and the caller decides.
 */
#ifndef EMBER_LINALG_H
#define EMBER_LINALG_H
#include <stdint.h>

#define EM_LINALG_ENOMEM (-1)
#define EM_LINALG_EDTYPE (-2)

/* LU with partial pivoting, A = P L U (getrf): a (m x n) is overwritten by L (unit
 * lower, below the diagonal) and U; piv (min(m, n) per entry) holds LAPACK's 1-based
 * row interchanges; info = i + 1 when U[i, i] is exactly zero (the first such i). */
int em_lu_factor(int dtype, int64_t batch, int64_t m, int64_t n, void *a, int32_t *piv,
                 int32_t *info);

/* Solve with an LU factorization (getrs): b (n x k) <- A^{-1} b, or A^{-T} b when
 * adjoint. lu and piv are em_lu_factor's output. */
int em_lu_solve(int dtype, int64_t batch, int64_t n, int64_t k, const void *lu,
                const int32_t *piv, void *b, int adjoint);

/* Triangular solve (trsm, left side): b (n x k) <- op(A)^{-1} b for A (n x n) lower
 * or upper (only that triangle is read), op(A) = A or A^T, unit: the diagonal is
 * taken as ones. */
int em_trsm(int dtype, int64_t batch, int64_t n, int64_t k, const void *a, void *b,
            int upper, int trans, int unit);

/* Cholesky (potrf), A = L L^T: reads a's lower triangle, writes L there and zeros
 * above the diagonal; info = j + 1 when the leading minor of order j + 1 is not
 * positive-definite (the factorization stops there). */
int em_cholesky(int dtype, int64_t batch, int64_t n, void *a, int32_t *info);

/* Householder QR (geqrf): a (m x n) <- R on and above the diagonal, the reflectors'
 * vectors below it (v[j] = 1 implied); tau (min(m, n) per entry). */
int em_geqrf(int dtype, int64_t batch, int64_t m, int64_t n, void *a, void *tau);

/* Apply Q = H_0 H_1 ... H_{k-1} (reflectors in the first k columns of v, m x nv,
 * with tau (k)) from the left: c (m x p) <- Q c, or Q^T c when trans (ormqr). */
int em_ormqr(int dtype, int64_t batch, int64_t m, int64_t nv, int64_t k, const void *v,
             const void *tau, int64_t p, void *c, int trans);

/* Symmetric eigendecomposition (syev): a (n x n, symmetric: both triangles are read)
 * <- the eigenvectors as columns (when vectors), w (n) the eigenvalues ascending;
 * info = 1 when the QL iteration did not converge. */
int em_syev(int dtype, int64_t batch, int64_t n, void *a, void *w, int vectors,
            int32_t *info);

/* Singular value decomposition (gesvd), A = U diag(s) Vh with k = min(m, n): s (k)
 * descending; when vectors, u (m x k) and vh (k x n). a is read only. info = 1 when
 * the QR iteration did not converge. */
int em_svd(int dtype, int64_t batch, int64_t m, int64_t n, const void *a, void *s,
           void *u, void *vh, int vectors, int32_t *info);

/* Nonsymmetric eigendecomposition (geev): eigenvalues wr + i wi of a (n x n, read
 * only), complex pairs adjacent with the positive imaginary part first; when vectors,
 * v (n x n) holds the right eigenvectors in LAPACK's real form (a real eigenvalue's
 * vector in its column; a pair's in columns j (real part) and j + 1 (imaginary part)),
 * each normalised to unit 2-norm. info = 1 when the QR iteration did not converge. */
int em_geev(int dtype, int64_t batch, int64_t n, const void *a, void *wr, void *wi,
            void *v, int vectors, int32_t *info);
#endif
