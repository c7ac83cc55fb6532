/* The factorizations of linalg.c for one element type, included once per dtype with
 *   T      the element type          SFX    the name suffix (f32, f64, c64, c128)
 *   R      its real type             CPLX   1 for the complex dtypes (C99 _Complex,
 *                                           the layout of em_complex64/128), else 0
 *   DT     ember's dtype number of R (the complex dtype's is DT + 2: em_gemm_complex,
 *          one real GEMM over the interleaved parts)
 * All matrices are row-major with a leading dimension (row stride) in elements.
 * Blocked algorithms do their O(n^3) work in em_gemm; the panels are unblocked.
 *
 * For the complex dtypes the same text applies with conjugation where LAPACK's
 * complex routines have it (the reflectors of QR, the transposes of Cholesky's
 * update and of trans solves): the CONJ() marks below. */
#include "linalg_scalar.h"
#if CPLX
#define ABS1(x) (fabs(creal(x)) + fabs(cimag(x)))   /* LAPACK's cabs1, for pivoting */
#else
#define ABS1(x) fabs(x)
#endif

/* C = alpha op(A) op(B) + beta C with op = conjugation where ca / cb (alpha, beta real;
 * strides in elements, as em_gemm). Complex: em_gemm_complex, one real GEMM. */
static int FN(gemm)(int64_t m, int64_t n, int64_t k, double alpha, const T *a, int64_t rsa,
                    int64_t csa, int ca, const T *b, int64_t rsb, int64_t csb, int cb,
                    double beta, T *c, int64_t rsc, int64_t csc)
{
#if CPLX
    return em_gemm_complex(DT + 2, m, n, k, alpha, a, rsa, csa, ca, b, rsb, csb, cb, beta, c,
                           rsc, csc);
#else
    (void)ca; (void)cb;
    return em_gemm(DT, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
#endif
}

/* ---------------------------------------------------------------- LU (getrf) ---- */

/* Unblocked LU of the panel of columns j0 .. j0 + jb - 1 (rows j0 .. m - 1), in place
 * in the row-major matrix. A row interchange swaps the whole row (all n columns). For
 * small matrices, where the panel's rows share a few cache lines anyway. */
static inline ALWAYS_INLINE void FN(getf2)(T *a, int64_t m, int64_t n, int64_t lda,
                                           int64_t j0, int64_t jb, int32_t *piv,
                                           int32_t *info)
{
    int64_t je = j0 + jb;
    for (int64_t j = j0; j < je && j < m; j++) {
        int64_t p = j;
        R best = ABS1(a[j * lda + j]);
        for (int64_t i = j + 1; i < m; i++) {
            R v = ABS1(a[i * lda + j]);
            if (v > best) { best = v; p = i; }
        }
        piv[j] = (int32_t)(p + 1);
        T pivot = a[p * lda + j];
        if (pivot != 0) {
            if (p != j) {
                T *r0 = a + j * lda, *r1 = a + p * lda;
                for (int64_t c = 0; c < n; c++) { T t = r0[c]; r0[c] = r1[c]; r1[c] = t; }
            }
            T r = 1 / pivot;
            for (int64_t i = j + 1; i < m; i++)
                a[i * lda + j] *= r;
        } else if (*info == 0) {
            *info = (int32_t)(j + 1);
        }
        const T *rj = a + j * lda;
        for (int64_t i = j + 1; i < m; i++) {
            T *ri = a + i * lda;
            T l = ri[j];
            if (l != 0)
                for (int64_t c = j + 1; c < je; c++)
                    ri[c] -= l * rj[c];
        }
    }
}

/* The same panel factorization for large matrices: the panel is copied into w
 * (column-major, (m - j0) x jb), factored there with contiguous columns (the pivot
 * search and each column's update read one stream, where the row-major panel would
 * stride by the row length, which aliases in the caches for powers of two), copied
 * back, and its interchanges applied to the other columns (LAPACK's laswp). */
LEAF_CLONES
static void FN(getf2_packed)(T *a, int64_t m, int64_t n, int64_t lda, int64_t j0,
                             int64_t jb, int32_t *piv, int32_t *info, T *restrict w)
{
    int64_t mr = m - j0, je = j0 + jb;
    for (int64_t i = 0; i < mr; i++) {
        const T *ri = a + (j0 + i) * lda + j0;
        for (int64_t c = 0; c < jb; c++) w[c * mr + i] = ri[c];
    }
    for (int64_t j = 0; j < jb && j < mr; j++) {
        T *col = w + j * mr;
        int64_t p = j;
        R best = ABS1(col[j]);
        for (int64_t i = j + 1; i < mr; i++) {
            R v = ABS1(col[i]);
            if (v > best) { best = v; p = i; }
        }
        piv[j0 + j] = (int32_t)(j0 + p + 1);
        T pivot = col[p];
        if (pivot != 0) {
            if (p != j)
                for (int64_t c = 0; c < jb; c++) {
                    T t = w[c * mr + j]; w[c * mr + j] = w[c * mr + p]; w[c * mr + p] = t;
                }
            T r = 1 / pivot;
            for (int64_t i = j + 1; i < mr; i++) col[i] *= r;
        } else if (*info == 0) {
            *info = (int32_t)(j0 + j + 1);
        }
        for (int64_t c = j + 1; c < jb; c++) {
            T *cc = w + c * mr;
            T u = cc[j];
            if (u != 0)
                for (int64_t i = j + 1; i < mr; i++) cc[i] -= col[i] * u;
        }
    }
    for (int64_t i = 0; i < mr; i++) {
        T *ri = a + (j0 + i) * lda + j0;
        for (int64_t c = 0; c < jb; c++) ri[c] = w[c * mr + i];
    }
    for (int64_t j = j0; j < je && j < m; j++) {
        int64_t p = piv[j] - 1;
        if (p == j) continue;
        T *r0 = a + j * lda, *r1 = a + p * lda;
        for (int64_t c = 0; c < j0; c++) { T t = r0[c]; r0[c] = r1[c]; r1[c] = t; }
        for (int64_t c = je; c < n; c++) { T t = r0[c]; r0[c] = r1[c]; r1[c] = t; }
    }
}

static int FN(trsm)(const T *a, int64_t ars, int64_t acs, T *b, int64_t n, int64_t k,
                    int64_t ldb, int lower, int unit);

/* Recursive LU (LAPACK's getrf2) of the columns j0 .. j0 + n - 1 (rows j0 .. m - 1) of
 * the m x N matrix a: factor the left half, solve for the top of the right half, update
 * the bottom of the right half with one GEMM, factor it. Almost all the work is in the
 * GEMMs of the upper levels, as in a right-looking blocked LU, and the panels stay in
 * cache; narrow leaves use getf2 (getf2_packed when w, m x LU_LEAF, is given). */
static int FN(getrf_rec)(T *a, int64_t m, int64_t N, int64_t lda, int64_t j0, int64_t n,
                         int32_t *piv, int32_t *info, T *w)
{
    if (n <= LU_LEAF) {
        if (w) FN(getf2_packed)(a, m, N, lda, j0, n, piv, info, w);
        else FN(getf2)(a, m, N, lda, j0, n, piv, info);
        return 0;
    }
    int64_t n1 = n / 2, n2 = n - n1;
    if (n1 > 8) n1 -= n1 % 8;      /* whole micro-kernel widths for the GEMM */
    n2 = n - n1;
    if (FN(getrf_rec)(a, m, N, lda, j0, n1, piv, info, w))
        return EM_LINALG_ENOMEM;
    int64_t r1 = j0 + n1;           /* first row and column of the right half's bottom */
    /* A12 <- L11^{-1} A12 (L11 unit lower, n1 x n1) */
    if (FN(trsm)(a + j0 * lda + j0, lda, 1, a + j0 * lda + r1, n1, n2, lda, 1, 1))
        return EM_LINALG_ENOMEM;
    if (r1 < m && FN(gemm)(m - r1, n2, n1, -1.0, a + r1 * lda + j0, lda, 1, 0,
                           a + j0 * lda + r1, lda, 1, 0, 1.0, a + r1 * lda + r1, lda, 1))
        return EM_LINALG_ENOMEM;
    if (r1 < m)
        return FN(getrf_rec)(a, m, N, lda, r1, n2 < m - r1 ? n2 : m - r1, piv, info, w);
    return 0;
}

/* A = P L U of an m x n matrix (in place, row interchanges in piv, 1-based). */
static int FN(getrf)(T *a, int64_t m, int64_t n, int64_t lda, int32_t *piv, int32_t *info)
{
    int64_t k = m < n ? m : n;
    *info = 0;
    if (k == 0) return 0;
    if (m == n && lda == n && n <= SMALL_UNROLL) {   /* the batched case, n a constant */
        SMALL_CASES(n, FN(getf2)(a, NN, NN, NN, 0, NN, piv, info));
        return 0;
    }
    T *w = NULL;
    if (m > LU_PACK_MIN && !(w = (T *)malloc((size_t)(m * LU_LEAF) * sizeof(T))))
        return EM_LINALG_ENOMEM;
    int rc = FN(getrf_rec)(a, m, n, lda, 0, k, piv, info, w) ? EM_LINALG_ENOMEM : 0;
    free(w);
    /* a wide matrix: the columns right of the square part, U12 = L^{-1} A12 */
    if (!rc && n > k && FN(trsm)(a, lda, 1, a + k, m, n - k, lda, 1, 1))
        return EM_LINALG_ENOMEM;
    return rc;
}

/* ------------------------------------------------------ triangular solve (trsm) -- */

/* The diagonal block of trsm: b (n x k, ldb) <- A^{-1} b by row operations, four
 * earlier rows at a time, over column chunks of b that stay in L1. */
LEAF_CLONES
static void FN(trsm_leaf)(const T *a, int64_t ars, int64_t acs, T *b, int64_t n,
                          int64_t k, int64_t ldb, int lower, int unit)
{
#define A_(i, j) a[(i) * ars + (j) * acs]
    for (int64_t c0 = 0; c0 < k; c0 += TRSM_KC) {
        int64_t kc = k - c0 < TRSM_KC ? k - c0 : TRSM_KC;
        for (int64_t s = 0; s < n; s++) {
            int64_t i = lower ? s : n - 1 - s;
            int64_t q0 = lower ? 0 : i + 1, q1 = lower ? i : n;   /* rows solved before */
            T *restrict bi = b + i * ldb + c0;
            int64_t q = q0;
            for (; q + 4 <= q1; q += 4) {
                T l0 = A_(i, q), l1 = A_(i, q + 1), l2 = A_(i, q + 2), l3 = A_(i, q + 3);
                const T *b0 = b + q * ldb + c0, *b1 = b0 + ldb, *b2 = b1 + ldb,
                        *b3 = b2 + ldb;
                for (int64_t c = 0; c < kc; c++)
                    bi[c] -= (l0 * b0[c] + l1 * b1[c]) + (l2 * b2[c] + l3 * b3[c]);
            }
            for (; q < q1; q++) {
                T l = A_(i, q);
                const T *bq = b + q * ldb + c0;
                for (int64_t c = 0; c < kc; c++) bi[c] -= l * bq[c];
            }
            if (!unit) {
                T d = A_(i, i);
                for (int64_t c = 0; c < kc; c++) bi[c] /= d;
            }
        }
    }
#undef A_
}

/* b (n x k, ldb) <- A^{-1} b for A lower (lower != 0) or upper, read through strides
 * (ars, acs) so that a transposed A is the same call with the strides swapped.
 * Recursive: solve one half, update the other with one GEMM (of depth n / 2 at the
 * top), solve it; blocks of TRSM_NB rows by row operations. */
static int FN(trsm)(const T *a, int64_t ars, int64_t acs, T *b, int64_t n, int64_t k,
                    int64_t ldb, int lower, int unit)
{
    if (n <= TRSM_NB || k == 0) {
        FN(trsm_leaf)(a, ars, acs, b, n, k, ldb, lower, unit);
        return 0;
    }
    int64_t n1 = n / 2;
    if (n1 > 8) n1 -= n1 % 8;
    int64_t n2 = n - n1;
    const T *a22 = a + n1 * ars + n1 * acs;
    T *b2 = b + n1 * ldb;
    if (lower) {
        if (FN(trsm)(a, ars, acs, b, n1, k, ldb, 1, unit) ||
            FN(gemm)(n2, k, n1, -1.0, a + n1 * ars, ars, acs, 0, b, ldb, 1, 0, 1.0, b2,
                     ldb, 1) ||
            FN(trsm)(a22, ars, acs, b2, n2, k, ldb, 1, unit))
            return EM_LINALG_ENOMEM;
    } else {
        if (FN(trsm)(a22, ars, acs, b2, n2, k, ldb, 0, unit) ||
            FN(gemm)(n1, k, n2, -1.0, a + n1 * acs, ars, acs, 0, b2, ldb, 1, 0, 1.0, b,
                     ldb, 1) ||
            FN(trsm)(a, ars, acs, b, n1, k, ldb, 0, unit))
            return EM_LINALG_ENOMEM;
    }
    return 0;
}

/* One right-hand side of a small system (the batched case): column-oriented
 * substitutions, whose updates of the other entries are independent, and the
 * diagonal's reciprocals taken first, off the chain of dependent steps (the
 * row-oriented form is one chain of n^2 / 2 dependent multiply-adds). n <= SMALL_N. */
static inline ALWAYS_INLINE void FN(getrs1)(const T *lu, int64_t n, const int32_t *piv,
                                            T *b)
{
    T rd[SMALL_N];
    for (int64_t i = 0; i < n; i++) rd[i] = 1 / lu[i * n + i];
    for (int64_t i = 0; i < n; i++) {
        int64_t p = piv[i] - 1;
        if (p != i) { T t = b[i]; b[i] = b[p]; b[p] = t; }
    }
    for (int64_t q = 0; q < n; q++) {
        T x = b[q];
        for (int64_t i = q + 1; i < n; i++) b[i] -= lu[i * n + q] * x;
    }
    for (int64_t q = n - 1; q >= 0; q--) {
        T x = b[q] * rd[q];
        b[q] = x;
        for (int64_t i = 0; i < q; i++) b[i] -= lu[i * n + q] * x;
    }
}

/* b (n x k) <- A^{-1} b (or A^{-H} b) from getrf's lu and piv (getrs). */
static int FN(getrs)(const T *lu, int64_t n, const int32_t *piv, T *b, int64_t k,
                     int adjoint)
{
#if CPLX
    if (adjoint == 1) { /* A^H x = b  <=>  A^T conj(x) = conj(b) (2: A^T x = b) */
        for (int64_t i = 0; i < n * k; i++) b[i] = conj(b[i]);
        int rc = FN(getrs)(lu, n, piv, b, k, 2);
        for (int64_t i = 0; i < n * k; i++) b[i] = conj(b[i]);
        return rc;
    }
#endif
    if (!adjoint && k == 1 && n <= SMALL_N) {
        if (n <= SMALL_UNROLL) SMALL_CASES(n, FN(getrs1)(lu, NN, piv, b));
        else FN(getrs1)(lu, n, piv, b);
        return 0;
    }
    if (!adjoint) {
        for (int64_t i = 0; i < n; i++) {
            int64_t p = piv[i] - 1;
            if (p != i)
                for (int64_t c = 0; c < k; c++) {
                    T t = b[i * k + c]; b[i * k + c] = b[p * k + c]; b[p * k + c] = t;
                }
        }
        if (FN(trsm)(lu, n, 1, b, n, k, k, 1, 1) || FN(trsm)(lu, n, 1, b, n, k, k, 0, 0))
            return EM_LINALG_ENOMEM;
        return 0;
    }
    /* A^T = U^T L^T P^T: solve with U^T (lower), L^T (upper, unit), then undo P */
    if (FN(trsm)(lu, 1, n, b, n, k, k, 1, 0) || FN(trsm)(lu, 1, n, b, n, k, k, 0, 1))
        return EM_LINALG_ENOMEM;
    for (int64_t i = n - 1; i >= 0; i--) {
        int64_t p = piv[i] - 1;
        if (p != i)
            for (int64_t c = 0; c < k; c++) {
                T t = b[i * k + c]; b[i * k + c] = b[p * k + c]; b[p * k + c] = t;
            }
    }
    return 0;
}

/* ---------------------------------------------------------- Cholesky (potrf) ---- */

/* Unblocked Cholesky of the n x n diagonal block at a (lower triangle, left-looking by
 * dot products of contiguous row segments); the first non-positive pivot j gives
 * j + 1. */
LEAF_CLONES
static int32_t FN(potf2)(T *a, int64_t n, int64_t lda)
{
    for (int64_t j = 0; j < n; j++) {
        const T *rj = a + j * lda;
        R d = RE(rj[j]);
        for (int64_t c = 0; c < j; c++) d -= RE(rj[c] * CONJ(rj[c]));
        if (!(d > 0))            /* also NaN */
            return (int32_t)(j + 1);
        d = sqrt(d);
        a[j * lda + j] = d;
        R r = 1 / d;
        for (int64_t i = j + 1; i < n; i++) {
            T *ri = a + i * lda;
            T s = ri[j];
            for (int64_t c = 0; c < j; c++) s -= ri[c] * CONJ(rj[c]);
            ri[j] = s * r;
        }
    }
    return 0;
}

/* dst (cols x rows, ldd) = src (rows x cols, lds)^H, in 32 x 32 tiles (a plain loop
 * would stride through one of them a whole row per element). */
static void FN(transpose_h)(const T *src, int64_t lds, T *dst, int64_t ldd, int64_t rows,
                            int64_t cols)
{
    for (int64_t i0 = 0; i0 < rows; i0 += 32)
        for (int64_t j0 = 0; j0 < cols; j0 += 32) {
            int64_t i1 = rows - i0 < 32 ? rows : i0 + 32, j1 = cols - j0 < 32 ? cols : j0 + 32;
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = j0; j < j1; j++) dst[j * ldd + i] = CONJ(src[i * lds + j]);
        }
}

/* Recursive Cholesky (LAPACK's potrf2) of the n x n block at a: L11 of the leading
 * half, L21 = A21 L11^{-H} as a left triangular solve of A21^H (written transposed
 * into the upper triangle, which is free: it is zeroed at the end), A22 -= L21 L21^H
 * by GEMMs of depth n / 2 over block columns of the lower triangle, then L22. *info
 * = the first failing order (offset by off). */
static int FN(potrf_rec)(T *a, int64_t n, int64_t lda, int64_t off, int32_t *info)
{
    if (n <= CHOL_LEAF) {
        int32_t f = FN(potf2)(a, n, lda);
        if (f) *info = (int32_t)(off + f);
        return 0;
    }
    int64_t n1 = n / 2;
    if (n1 > 8) n1 -= n1 % 8;
    int64_t n2 = n - n1;
    if (FN(potrf_rec)(a, n1, lda, off, info)) return EM_LINALG_ENOMEM;
    if (*info) return 0;
    T *a21 = a + n1 * lda, *a12 = a + n1, *a22 = a21 + n1;
    FN(transpose_h)(a21, lda, a12, lda, n2, n1);        /* A12 = A21^H */
    if (FN(trsm)(a, lda, 1, a12, n1, n2, lda, 1, 0))   /* L11^{-1} A21^H = L21^H */
        return EM_LINALG_ENOMEM;
    FN(transpose_h)(a12, lda, a21, lda, n1, n2);
    /* A22[i, j] -= sum_q L21[i, q] L21^H[q, j], lower part by block columns */
    for (int64_t c0 = 0; c0 < n2; c0 += CHOL_NB) {
        int64_t cb = n2 - c0 < CHOL_NB ? n2 - c0 : CHOL_NB;
        if (FN(gemm)(n2 - c0, cb, n1, -1.0, a21 + c0 * lda, lda, 1, 0, a12 + c0, lda, 1, 0,
                     1.0, a22 + c0 * lda + c0, lda, 1))
            return EM_LINALG_ENOMEM;
    }
    return FN(potrf_rec)(a22, n2, lda, off + n1, info);
}

/* A = L L^H (lower), in place; zeros above the diagonal. */
static int FN(potrf)(T *a, int64_t n, int64_t lda, int32_t *info)
{
    *info = 0;
    if (FN(potrf_rec)(a, n, lda, 0, info)) return EM_LINALG_ENOMEM;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) a[i * lda + j] = 0;
    return 0;
}

/* --------------------------------------------------------------- QR (geqrf) ---- */

/* The 2-norm of x[0], x[s], ..., x[(n-1)s] without overflow or underflow. */
static R FN(nrm2)(const T *x, int64_t n, int64_t s)
{
    /* the plain sum of squares when it neither overflowed nor came near underflow
     * (where squares that underflowed could matter); else LAPACK's scaled sum, which
     * divides per element */
    R sq = 0;
    for (int64_t i = 0; i < n; i++) {
        T v = x[i * s];
        sq += RE(v) * RE(v) + IM(v) * IM(v);
    }
    if (sizeof(R) == 4 ? sq > 0x1p-80f && sq <= FLT_MAX : sq > 0x1p-900 && sq <= DBL_MAX)
        return sqrt(sq);
    R scale = 0, ssq = 1;
    for (int64_t i = 0; i < n; i++) {
        R v = fabs(x[i * s]);
        if (v != 0) {
            if (scale < v) { ssq = 1 + ssq * (scale / v) * (scale / v); scale = v; }
            else ssq += (v / scale) * (v / scale);
        }
    }
    return scale * sqrt(ssq);
}

/* sqrt(x^2 + y^2) for x, y >= 0: directly where that can neither overflow nor lose
 * the result to underflow (float: in double), else libm's hypot, which is slow. */
static inline R FN(hypot2)(R x, R y)
{
    if (sizeof(R) == 4)
        return (R)sqrt((double)x * x + (double)y * y);
    R big = x > y ? x : y;
    if (big < (R)0x1p500 && big > (R)0x1p-500)
        return sqrt(x * x + y * y);
    return hypot(x, y);
}

/* Unblocked Householder QR of the panel columns j0 .. j0 + jb - 1 (rows j0 .. m-1):
 * each reflector (LAPACK's larfg) is applied to the panel's later columns only. w is
 * jb elements of workspace. */
static inline ALWAYS_INLINE void FN(geqr2)(T *a, int64_t m, int64_t lda, int64_t j0,
                                           int64_t jb, T *tau, T *w)
{
    for (int64_t j = j0; j < j0 + jb; j++) {
        T *ajj = a + j * lda + j;
        T alpha = *ajj;
        R xnorm = j + 1 < m ? FN(nrm2)(ajj + lda, m - j - 1, lda) : 0;
        if (xnorm == 0 && IM(alpha) == 0) {
            tau[j] = 0;
            continue;
        }
        /* LAPACK's larfg: beta real (R's diagonal is real for complex inputs too) */
        R beta = -copysign(FN(hypot2)(FN(hypot2)(fabs(RE(alpha)), fabs(IM(alpha))), xnorm),
                           RE(alpha));
        tau[j] = (beta - alpha) / beta;
        T scal = 1 / (alpha - beta);
        for (int64_t i = j + 1; i < m; i++) a[i * lda + j] *= scal;
        *ajj = beta;
        int64_t nc = j0 + jb - j - 1;
        if (nc <= 0)
            continue;
        /* w = v^T A[j:, j+1:je], then A -= tau v w^T (v[j] = 1) */
        T *rj = ajj + 1;
        for (int64_t c = 0; c < nc; c++) w[c] = rj[c];
        for (int64_t i = j + 1; i < m; i++) {
            const T *ri = a + i * lda + j + 1;
            T v = a[i * lda + j];
            for (int64_t c = 0; c < nc; c++) w[c] += CONJ(v) * ri[c];
        }
        T t = CONJ(tau[j]);     /* H^H is applied (Q^H A = R) */
        for (int64_t c = 0; c < nc; c++) rj[c] -= t * w[c];
        for (int64_t i = j + 1; i < m; i++) {
            T *ri = a + i * lda + j + 1;
            T tv = t * a[i * lda + j];
            for (int64_t c = 0; c < nc; c++) ri[c] -= tv * w[c];
        }
    }
}

/* The block reflector of jb reflectors whose vectors start at v0 (row-major, lda,
 * the diagonal at v0[c * lda + c]) over mr rows: V (mr x jb, explicit ones and zeros)
 * and the upper triangular T (jb x jb) with H_0 ... H_{jb-1} = I - V T V^T (larft). */
LEAF_CLONES
static void FN(larft)(const T *v0, int64_t lda, int64_t mr, int64_t jb, const T *tau,
                      T *V, T *Tm, T *t)
{
    for (int64_t i = 0; i < mr; i++)
        for (int64_t c = 0; c < jb; c++)
            V[i * jb + c] = i == c ? 1 : (i > c ? v0[i * lda + c] : 0);
    for (int64_t c = 0; c < jb; c++) {
        for (int64_t r = 0; r < jb; r++) Tm[r * jb + c] = 0;
        T tc = tau[c];
        Tm[c * jb + c] = tc;
        if (c == 0 || tc == 0)
            continue;
        /* t = V[:, :c]^T v_c (v_c is zero above row c) */
        for (int64_t r = 0; r < c; r++) t[r] = 0;
        for (int64_t i = c; i < mr; i++) {
            T vic = V[i * jb + c];
            const T *vi = V + i * jb;
            for (int64_t r = 0; r < c; r++) t[r] += CONJ(vi[r]) * vic;
        }
        for (int64_t r = 0; r < c; r++) {
            T s = 0;
            for (int64_t q = r; q < c; q++) s += Tm[r * jb + q] * t[q];
            Tm[r * jb + c] = -tc * s;
        }
    }
}

/* c (mr x p, ldc) <- (I - V T V^H) c, or (I - V T^H V^H) c when trans (larfb). W is
 * jb x p of workspace. */
LEAF_CLONES
static int FN(larfb)(const T *V, int64_t mr, int64_t jb, const T *Tm, T *c, int64_t ldc,
                     int64_t p, int trans, T *W)
{
    if (p == 0) return 0;
    if (FN(gemm)(jb, p, mr, 1.0, V, 1, jb, 1, c, ldc, 1, 0, 0.0, W, p, 1))
        return EM_LINALG_ENOMEM;
    if (trans) {            /* W = T^H W: row i uses rows q <= i */
        for (int64_t i = jb - 1; i >= 0; i--) {
            T *wi = W + i * p;
            T d = CONJ(Tm[i * jb + i]);
            for (int64_t q = 0; q < p; q++) wi[q] *= d;
            for (int64_t r = 0; r < i; r++) {
                T tr = CONJ(Tm[r * jb + i]);
                const T *wr = W + r * p;
                if (tr != 0)
                    for (int64_t q = 0; q < p; q++) wi[q] += tr * wr[q];
            }
        }
    } else {                /* W = T W: row i uses rows q >= i */
        for (int64_t i = 0; i < jb; i++) {
            T *wi = W + i * p;
            T d = Tm[i * jb + i];
            for (int64_t q = 0; q < p; q++) wi[q] *= d;
            for (int64_t r = i + 1; r < jb; r++) {
                T tr = Tm[i * jb + r];
                const T *wr = W + r * p;
                if (tr != 0)
                    for (int64_t q = 0; q < p; q++) wi[q] += tr * wr[q];
            }
        }
    }
    if (FN(gemm)(mr, p, jb, -1.0, V, jb, 1, 0, W, p, 1, 0, 1.0, c, ldc, 1))
        return EM_LINALG_ENOMEM;
    return 0;
}

/* Blocked Householder QR with the compact WY form of each panel's reflectors. */
LEAF_CLONES
static int FN(geqrf)(T *a, int64_t m, int64_t n, int64_t lda, T *tau)
{
    int64_t k = m < n ? m : n;
    if (k == 0) return 0;
    int64_t nb = k < QR_NB ? k : QR_NB;
    if (n <= nb) {              /* one panel, no trailing update (the batched case) */
        T w[QR_NB];
        if (m == n && lda == n && n <= SMALL_UNROLL)
            SMALL_CASES(n, FN(geqr2)(a, NN, NN, 0, NN, tau, w));
        else
            FN(geqr2)(a, m, lda, 0, n, tau, w);
        return 0;
    }
    size_t need = (size_t)(m * nb + nb * nb + nb + nb * (n > nb ? n : nb));
    T *ws = (T *)malloc(need * sizeof(T));
    if (!ws) return EM_LINALG_ENOMEM;
    T *V = ws, *Tm = V + m * nb, *t = Tm + nb * nb, *W = t + nb;
    int rc = 0;
    for (int64_t j0 = 0; j0 < k && !rc; j0 += nb) {
        int64_t jb = k - j0 < nb ? k - j0 : nb;
        FN(geqr2)(a, m, lda, j0, jb, tau, W);
        if (j0 + jb < n) {
            FN(larft)(a + j0 * lda + j0, lda, m - j0, jb, tau + j0, V, Tm, t);
            rc = FN(larfb)(V, m - j0, jb, Tm, a + j0 * lda + j0 + jb, lda, n - j0 - jb, 1, W);
        }
    }
    free(ws);
    return rc;
}

/* ormqr for small m and p (the batched case): one reflector at a time (orm2r), no
 * workspace; eye: c is I's first p columns (see ormqr). */
static inline ALWAYS_INLINE void FN(orm2r)(const T *v, int64_t m, int64_t nv, int64_t k,
                                           const T *tau, T *c, int64_t p, int trans,
                                           int eye)
{
    T w[SMALL_N];
    for (int64_t s = 0; s < k; s++) {
        int64_t j = trans ? s : k - 1 - s, c0 = eye ? (j < p ? j : p) : 0;
        T t = trans ? CONJ(tau[j]) : tau[j];
        if (t == 0) continue;
        /* c[j:, c0:] -= t v (v^H c[j:, c0:]), v = (1, v[j+1:, j]) */
        for (int64_t q = c0; q < p; q++) w[q] = c[j * p + q];
        for (int64_t i = j + 1; i < m; i++) {
            T vi = CONJ(v[i * nv + j]);
            for (int64_t q = c0; q < p; q++) w[q] += vi * c[i * p + q];
        }
        for (int64_t q = c0; q < p; q++) c[j * p + q] -= t * w[q];
        for (int64_t i = j + 1; i < m; i++) {
            T tv = t * v[i * nv + j];
            for (int64_t q = c0; q < p; q++) c[i * p + q] -= tv * w[q];
        }
    }
}

/* c (m x p) <- Q c or Q^T c, Q = H_0 ... H_{k-1} from the reflectors in v (m x nv). */
LEAF_CLONES
static int FN(ormqr)(const T *v, int64_t m, int64_t nv, int64_t k, const T *tau, T *c,
                     int64_t p, int trans)
{
    if (k == 0 || p == 0) return 0;
    /* Q times I's first p columns (qr's Q, LAPACK's orgqr): when the reflector (block)
     * starting at row j0 is applied, the columns left of j0 are still those of I (the
     * later reflectors are zero above their own first row), zero from row j0 on: only
     * the columns from j0 on change, which saves a third of the work */
    int eye = !trans;
    for (int64_t i = 0; i < m && eye; i++)
        for (int64_t q = 0; q < p; q++)
            if (c[i * p + q] != (i == q ? (T)1 : (T)0)) { eye = 0; break; }
    if (m <= SMALL_N && p <= SMALL_N) {
        if (m == nv && m == p && m == k && m <= SMALL_UNROLL)   /* qr's square Q */
            SMALL_CASES(m, FN(orm2r)(v, NN, NN, NN, tau, c, NN, trans, eye));
        else
            FN(orm2r)(v, m, nv, k, tau, c, p, trans, eye);
        return 0;
    }
    int64_t nb = k < QR_NB ? k : QR_NB;
    T *ws = (T *)malloc((size_t)(m * nb + nb * nb + nb + nb * p) * sizeof(T));
    if (!ws) return EM_LINALG_ENOMEM;
    T *V = ws, *Tm = V + m * nb, *t = Tm + nb * nb, *W = t + nb;
    int rc = 0;
    int64_t nblk = (k + nb - 1) / nb;
    for (int64_t s = 0; s < nblk && !rc; s++) {
        /* Q c applies the last block first; Q^T c the first */
        int64_t bi = trans ? s : nblk - 1 - s;
        int64_t j0 = bi * nb, jb = k - j0 < nb ? k - j0 : nb;
        int64_t c0 = eye ? (j0 < p ? j0 : p) : 0;
        FN(larft)(v + j0 * nv + j0, nv, m - j0, jb, tau + j0, V, Tm, t);
        rc = FN(larfb)(V, m - j0, jb, Tm, c + j0 * p + c0, p, p - c0, trans, W);
    }
    free(ws);
    return rc;
}

#undef FN
#undef ZG_KC
#undef ZG_NC
#undef CAT
#undef CAT_
#undef CONJ
#undef RE
#undef IM
#undef ABS1
