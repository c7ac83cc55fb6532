/* ember's FFT kernels (kernels/cpu/fft.c): complex-to-complex, real-to-complex and
 * complex-to-real transforms of float32/float64 lines, batched over any strided
 * layout.
 *
 * A complex number is two adjacent reals (re, im): a complex tensor is a float
 * tensor of shape [..., 2] with a last stride of 1. All strides are in reals (T
 * elements): `s_in` is the step between consecutive entries of a line, `bs_in[d]`
 * the step along batch dim d.
 *
 * Every length is supported: mixed-radix Stockham passes of radix 2, 3, 4, 5, 7 and
 * generic odd radices (AVX2/FMA butterflies where the CPU has them), Bluestein's
 * algorithm for lengths with large prime factors. Twiddles are computed in double
 * from an octant-reduced table, so float32 errors grow like log n. Plans
 * (factorisation, twiddles, Bluestein chirp) are kept in a bounded, thread-safe
 * cache per (kind, length, dtype, direction). Lines along an outer dim whose
 * neighbours are adjacent run a block at a time through batched passes (whole-vector
 * loads, no transpose); contiguous lines run straight from the input into the output;
 * real transforms of odd n cost about half a complex one: real radix passes (FFTPACK's
 * radf/radb: 3, 5, 7 unrolled, any odd radix generic) over halfcomplex spectra, after a
 * leaf of the factors Bluestein's algorithm takes (its decimated lines in complex
 * pairs); a prime's lines run two per complex transform, or alone by a Bluestein
 * convolution of n + n / 2 indices instead of 2n - 1 (only half the outputs, or inputs,
 * are needed). Bluestein's padded length is picked by a cost model fitted to measured
 * times. Batches of lines are spread over ember's thread pool.
 *
 * dtype: 0 float32, 1 float64. Results are multiplied by `scale`. Each returns 0, or
 * -1 when out of memory.
 */
#ifndef EMBER_FFT_H
#define EMBER_FFT_H
#include <stdint.h>

#define EM_FFT_MAXDIM 32

/* out line = scale * DFT_n(in line zero-padded or trimmed to n); `forward` chooses
 * the sign of the exponent (-1 forward, +1 backward). Output lines have n entries. */
int em_fft_c2c(int dtype, const void *in, void *out, int64_t n, int64_t n_in, int64_t s_in,
               int64_t s_out, int bdims, const int64_t *bshape, const int64_t *bs_in,
               const int64_t *bs_out, int forward, double scale);

/* The forward transform of real lines (n_in reals used, padded/trimmed to n); the
 * output has n_out complex entries: n / 2 + 1 (onesided) or n (the Hermitian rest
 * filled in). */
int em_fft_r2c(int dtype, const void *in, void *out, int64_t n, int64_t n_in, int64_t s_in,
               int64_t n_out, int64_t s_out, int bdims, const int64_t *bshape,
               const int64_t *bs_in, const int64_t *bs_out, double scale);

/* The backward transform of Hermitian lines given by their first n / 2 + 1 complex
 * entries (n_in of them read, the rest taken as zero; the imaginary parts of entry 0
 * and, for even n, entry n / 2 are ignored) into n reals. */
int em_fft_c2r(int dtype, const void *in, void *out, int64_t n, int64_t n_in, int64_t s_in,
               int64_t s_out, int bdims, const int64_t *bshape, const int64_t *bs_in,
               const int64_t *bs_out, double scale);

/* The plan cache: entries held now, its capacity (plans kept), and clearing it. */
int em_fft_cache_size(void);
int em_fft_cache_capacity(void);
void em_fft_cache_set_capacity(int capacity);
void em_fft_cache_clear(void);
/* "avx2-fma" or "generic": the butterflies in use. */
const char *em_fft_kernel_name(void);
void em_fft_force_generic(int on);
#endif
