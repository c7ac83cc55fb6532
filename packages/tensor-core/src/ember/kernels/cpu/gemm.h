/* ember's CPU matrix multiply.
 *
 *   C[m,n] = alpha * A[m,k] @ B[k,n] + beta * C
 *
 * Every operand is given as (pointer to element [0,0], row stride, column stride)
 * in ELEMENTS, any signs, so a transposed or strided view is just other strides:
 * the packing reads it, the operand is never copied first. beta == 0 means C is
 * write-only (whatever it holds, NaN included, is ignored).
 *
 * float32/float64: BLIS-style blocked GEMM (packed A and B panels, AVX2+FMA
 * micro-kernels chosen at run time, a portable C fallback), threaded through the
 * pool in threads.c for large problems only. float16 and bfloat16: accumulated in
 * float32, one rounding at the end (inputs widened to float32; bfloat16 on a CPU with
 * AVX512-BF16: packed as bfloat16 pairs for vdpbf16ps, which treats subnormal inputs
 * as zero and flushes subnormal sums, whatever MXCSR says). Integers and bool: a plain loop that
 * accumulates in int64 and wraps to the output type like NumPy (bool: any of the
 * products is true). complex64 and complex128: em_gemm_complex below.
 *
 * Return: 0, EM_GEMM_ENOMEM when a buffer could not be allocated, or
 * EM_GEMM_EDTYPE for a dtype number outside bool..complex128.
 */
#ifndef EMBER_GEMM_H
#define EMBER_GEMM_H
#include <stdint.h>

#define EM_GEMM_ENOMEM (-1)
#define EM_GEMM_EDTYPE (-2)

int em_gemm(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
            const void *a, int64_t rsa, int64_t csa,
            const void *b, int64_t rsb, int64_t csb, double beta,
            void *c, int64_t rsc, int64_t csc);

/* complex64 (dtype 9) and complex128 (10), strides in (complex) elements as above:
 * C = alpha op(A) op(B) + beta C, op(X) = conj(X) where ca (cb), alpha and beta real;
 * one real GEMM of the complex flop count (gemm_complex.c). C needs one stride of 1
 * (rows or columns), else EM_GEMM_EDTYPE; em_gemm's complex dtypes are this with
 * ca = cb = 0. */
int em_gemm_complex(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
                    const void *a, int64_t rsa, int64_t csa, int ca,
                    const void *b, int64_t rsb, int64_t csb, int cb, double beta,
                    void *c, int64_t rsc, int64_t csc);

/* bfloat16 A and B (uint16_t bits), a float32 C: C = A @ B + beta * C, the products
 * summed in float32 and nothing rounded to bfloat16 (for sums that gather several GEMMs,
 * rounded once by the caller). The same products as em_gemm's bfloat16 (vdpbf16ps
 * pairs where the CPU has AVX512-BF16, subnormal inputs as zero; else widened to float32
 * for the float32 kernel). */
int em_gemm_bf16_f32(int64_t m, int64_t n, int64_t k, const void *a, int64_t rsa,
                     int64_t csa, const void *b, int64_t rsb, int64_t csb, float beta,
                     float *c, int64_t rsc, int64_t csc);

/* The same GEMM over a batch: batch index (i_0, ..., i_{bdims-1}) in bshape moves
 * A by sum(i_d * bsa[d]) elements (0 = broadcast), B by bsb, C by bsc. Batches
 * whose A (or B) is broadcast and whose rows (columns) line up become one larger
 * GEMM; small matrices are spread over threads by batch. */
int em_gemm_batched(int dtype, int bdims, const int64_t *bshape, const int64_t *bsa,
                    const int64_t *bsb, const int64_t *bsc,
                    int64_t m, int64_t n, int64_t k, double alpha,
                    const void *a, int64_t rsa, int64_t csa,
                    const void *b, int64_t rsb, int64_t csb, double beta,
                    void *c, int64_t rsc, int64_t csc);

/* The micro-kernel in use: 0 = chosen at run time (AVX-512F, else AVX2+FMA, when the
 * CPU has it; bfloat16 with AVX512-BF16's vdpbf16ps when it has that), 1 = force the
 * portable C kernel (tests), 2 = force AVX2+FMA, 3 = AVX-512F (bfloat16 widened to
 * float32), 4 = AVX512-BF16 (each only if supported). em_gemm_kernel_name() says
 * which one runs: "avx512bf16", "avx512f", "avx2-fma" or "generic". */
void em_gemm_set_kernel(int which);
const char *em_gemm_kernel_name(void);
#endif
