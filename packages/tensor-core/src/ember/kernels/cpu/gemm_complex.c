/* The complex GEMM (gemm.h's em_gemm_complex, and em_gemm's complex64/complex128):
 * one real GEMM of the complex flop count on em_gemm's float32/float64 kernels.
 *
 * With A's and C's parts interleaved along their rows (column stride 1), C and A read
 * as real matrices (C m x 2n, A m x 2k), and C = op(A) op(B) is the one real product
 * C = A B2, where B2 (2k x 2n) holds each element b of op(B) as the 2 x 2 block
 * [[Re b, Im b], [-Im b, Re b]] (the rows multiplying Re a and Im a; conj(A) negates
 * the second row). B2 is built a block of ZG_KC x ZG_NC at a time (a few MB), which
 * em_gemm then packs as it packs any operand. A whose columns are strided is copied
 * first (m k elements, against the product's m n k); a C with contiguous columns
 * instead of rows is computed as C^T = op(B)^T op(A)^T. Products and sums are the real
 * kernels' (Fortran's rules, as LAPACK's: no C99 recovery of infinities). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gemm.h"

#define ZG_KC 128    /* complex k per real GEMM: 2 * ZG_KC is one of em_gemm's k blocks */
#define ZG_NC 512    /* complex columns per expanded block of B */

#define ZGEMM_EXPAND(SFX, R, DT)                                                          \
static int expand_##SFX(int64_t m, int64_t n, int64_t k, double alpha, const R *a,        \
                        int64_t rsa, int ca, const R *b, int64_t rsb, int64_t csb, int cb, \
                        double beta, R *c, int64_t rsc)                                   \
{                                                                                         \
    int64_t kc = k < ZG_KC ? k : ZG_KC, nc = n < ZG_NC ? n : ZG_NC;                       \
    R *b2 = (R *)malloc((size_t)(4 * kc * nc) * sizeof(R));                               \
    if (!b2) return EM_GEMM_ENOMEM;                                                       \
    R sa = ca ? -1 : 1, sb = cb ? -1 : 1;                                                 \
    int rc = 0;                                                                           \
    for (int64_t j0 = 0; j0 < n && !rc; j0 += ZG_NC) {                                    \
        int64_t nj = n - j0 < ZG_NC ? n - j0 : ZG_NC;                                     \
        for (int64_t p0 = 0; p0 < k && !rc; p0 += ZG_KC) {                                \
            int64_t kp = k - p0 < ZG_KC ? k - p0 : ZG_KC;                                 \
            for (int64_t p = 0; p < kp; p++) {                                            \
                R *r0 = b2 + (2 * p) * (2 * nj), *r1 = r0 + 2 * nj;                       \
                const R *bp = b + 2 * ((p0 + p) * rsb + j0 * csb);                        \
                for (int64_t j = 0; j < nj; j++) {                                        \
                    R br = bp[2 * j * csb], bi = sb * bp[2 * j * csb + 1];                \
                    r0[2 * j] = br;                                                       \
                    r0[2 * j + 1] = bi;                                                   \
                    r1[2 * j] = -sa * bi;                                                 \
                    r1[2 * j + 1] = sa * br;                                              \
                }                                                                         \
            }                                                                             \
            rc = em_gemm(DT, m, 2 * nj, 2 * kp, alpha, a + 2 * p0, 2 * rsa, 1, b2,        \
                         2 * nj, 1, p0 ? 1.0 : beta, c + 2 * j0, 2 * rsc, 1);             \
        }                                                                                 \
    }                                                                                     \
    free(b2);                                                                             \
    return rc;                                                                            \
}
ZGEMM_EXPAND(c64, float, 7)
ZGEMM_EXPAND(c128, double, 8)

int em_gemm_complex(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
                    const void *a, int64_t rsa, int64_t csa, int ca,
                    const void *b, int64_t rsb, int64_t csb, int cb, double beta,
                    void *c, int64_t rsc, int64_t csc)
{
    if (dtype != 9 && dtype != 10) return EM_GEMM_EDTYPE;
    if (m <= 0 || n <= 0) return 0;
    size_t el = dtype == 9 ? 8 : 16;
    if (k <= 0) {        /* C = beta C (beta == 0: write-only) */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                char *e = (char *)c + (size_t)(i * rsc + j * csc) * el;
                if (dtype == 9) {
                    float *f = (float *)e;
                    f[0] = beta == 0 ? 0 : (float)beta * f[0];
                    f[1] = beta == 0 ? 0 : (float)beta * f[1];
                } else {
                    double *f = (double *)e;
                    f[0] = beta == 0 ? 0 : beta * f[0];
                    f[1] = beta == 0 ? 0 : beta * f[1];
                }
            }
        return 0;
    }
    if (n == 1) csc = 1;              /* a one-column C or A: that stride is free */
    if (k == 1) csa = 1;
    if (csc != 1 && (rsc == 1 || m == 1))   /* C^T = op(B)^T op(A)^T, rows contiguous */
        return em_gemm_complex(dtype, n, m, k, alpha, b, csb, rsb, cb, a, csa, rsa, ca, beta,
                               c, csc, rsc);
    if (csc != 1)                     /* neither of C's strides is 1: no caller has it */
        return EM_GEMM_EDTYPE;
    void *ac = NULL;
    if (csa != 1) {                   /* A's rows made contiguous */
        ac = malloc((size_t)(m * k) * el);
        if (!ac) return EM_GEMM_ENOMEM;
        for (int64_t i = 0; i < m; i++)
            for (int64_t q = 0; q < k; q++)
                memcpy((char *)ac + (size_t)(i * k + q) * el,
                       (const char *)a + (size_t)(i * rsa + q * csa) * el, el);
        a = ac;
        rsa = k;
    }
    int rc = dtype == 9
        ? expand_c64(m, n, k, alpha, (const float *)a, rsa, ca, (const float *)b, rsb, csb,
                     cb, beta, (float *)c, rsc)
        : expand_c128(m, n, k, alpha, (const double *)a, rsa, ca, (const double *)b, rsb,
                      csb, cb, beta, (double *)c, rsc);
    free(ac);
    return rc;
}
