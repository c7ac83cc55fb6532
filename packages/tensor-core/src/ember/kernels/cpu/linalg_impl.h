/* The factorizations of linalg.c for one element type, included once per dtype with
 *   T      the element type          SFX    the name suffix (f32, f64, c64, c128)
 *   R      its real type             CPLX   1 for the complex dtypes (C99 _Complex,
 *                                           the layout of em_complex64/128), else 0
 *   DT     ember's dtype number of R (GEMM's dtype argument: a complex GEMM is four
 *          real ones over the interleaved parts, strides doubled)
 * All matrices are row-major with a leading dimension (row stride) in elements.
 * Blocked algorithms do their O(n^3) work in em_gemm; the panels are unblocked.
 *
 * For the complex dtypes the same text applies with conjugation where LAPACK's
 * complex routines have it (the reflectors of QR, the transposes of Cholesky's
 * update and of trans solves): the CONJ() marks below. */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)
#if CPLX
#define CONJ(x) conj(x)
#define RE(x) creal(x)
#define IM(x) cimag(x)
#define ABS1(x) (fabs(creal(x)) + fabs(cimag(x)))   /* LAPACK's cabs1, for pivoting */
#else
#define CONJ(x) (x)
#define RE(x) (x)
#define IM(x) ((R)0)
#define ABS1(x) fabs(x)
#endif

/* C = alpha op(A) op(B) + beta C with op = conjugation where ca / cb (alpha, beta real;
 * strides in elements, as em_gemm). Complex: four real GEMMs on the parts. */
static int FN(gemm)(int64_t m, int64_t n, int64_t k, double alpha, const T *a, int64_t rsa,
                    int64_t csa, int ca, const T *b, int64_t rsb, int64_t csb, int cb,
                    double beta, T *c, int64_t rsc, int64_t csc)
{
#if CPLX
    const R *ar = (const R *)a, *br = (const R *)b;
    R *cr = (R *)c;
    double sa = ca ? -1 : 1, sb = cb ? -1 : 1;
    rsa *= 2; csa *= 2; rsb *= 2; csb *= 2; rsc *= 2; csc *= 2;
    if (em_gemm(DT, m, n, k, alpha, ar, rsa, csa, br, rsb, csb, beta, cr, rsc, csc) ||
        em_gemm(DT, m, n, k, -alpha * sa * sb, ar + 1, rsa, csa, br + 1, rsb, csb, 1.0,
                cr, rsc, csc) ||
        em_gemm(DT, m, n, k, alpha * sb, ar, rsa, csa, br + 1, rsb, csb, beta, cr + 1, rsc,
                csc) ||
        em_gemm(DT, m, n, k, alpha * sa, ar + 1, rsa, csa, br, rsb, csb, 1.0, cr + 1, rsc,
                csc))
        return EM_LINALG_ENOMEM;
    return 0;
#else
    (void)ca; (void)cb;
    return em_gemm(DT, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
#endif
}

/* ---------------------------------------------------------------- LU (getrf) ---- */

/* Unblocked LU of the panel of columns j0 .. j0 + jb - 1 (rows j0 .. m - 1). A row
 * interchange swaps the whole row (all n columns): row-major rows are contiguous, so
 * this is cheaper than LAPACK's separate laswp of the other columns. */
static void FN(getf2)(T *a, int64_t m, int64_t n, int64_t lda, int64_t j0, int64_t jb,
                      int32_t *piv, int32_t *info)
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

static int FN(trsm)(const T *a, int64_t ars, int64_t acs, T *b, int64_t n, int64_t k,
                    int64_t ldb, int lower, int unit);

/* Recursive LU (LAPACK's getrf2) of the columns j0 .. j0 + n - 1 (rows j0 .. m - 1) of
 * the m x N matrix a: factor the left half, solve for the top of the right half, update
 * the bottom of the right half with one GEMM, factor it. Almost all the work is in the
 * GEMMs of the upper levels, as in a right-looking blocked LU, and the panels stay in
 * cache; narrow leaves use getf2. */
static int FN(getrf_rec)(T *a, int64_t m, int64_t N, int64_t lda, int64_t j0, int64_t n,
                         int32_t *piv, int32_t *info)
{
    if (n <= LU_LEAF) {
        FN(getf2)(a, m, N, lda, j0, n, piv, info);
        return 0;
    }
    int64_t n1 = n / 2, n2 = n - n1;
    if (n1 > 8) n1 -= n1 % 8;      /* whole micro-kernel widths for the GEMM */
    n2 = n - n1;
    if (FN(getrf_rec)(a, m, N, lda, j0, n1, piv, info))
        return EM_LINALG_ENOMEM;
    int64_t r1 = j0 + n1;           /* first row and column of the right half's bottom */
    /* A12 <- L11^{-1} A12 (L11 unit lower, n1 x n1) */
    if (FN(trsm)(a + j0 * lda + j0, lda, 1, a + j0 * lda + r1, n1, n2, lda, 1, 1))
        return EM_LINALG_ENOMEM;
    if (r1 < m && FN(gemm)(m - r1, n2, n1, -1.0, a + r1 * lda + j0, lda, 1, 0,
                           a + j0 * lda + r1, lda, 1, 0, 1.0, a + r1 * lda + r1, lda, 1))
        return EM_LINALG_ENOMEM;
    if (r1 < m)
        return FN(getrf_rec)(a, m, N, lda, r1, n2 < m - r1 ? n2 : m - r1, piv, info);
    return 0;
}

/* A = P L U of an m x n matrix (in place, row interchanges in piv, 1-based). */
static int FN(getrf)(T *a, int64_t m, int64_t n, int64_t lda, int32_t *piv, int32_t *info)
{
    int64_t k = m < n ? m : n;
    *info = 0;
    if (k == 0) return 0;
    if (FN(getrf_rec)(a, m, n, lda, 0, k, piv, info))
        return EM_LINALG_ENOMEM;
    /* a wide matrix: the columns right of the square part, U12 = L^{-1} A12 */
    if (n > k && FN(trsm)(a, lda, 1, a + k, m, n - k, lda, 1, 1))
        return EM_LINALG_ENOMEM;
    return 0;
}

/* ------------------------------------------------------ triangular solve (trsm) -- */

/* b (n x k, ldb) <- A^{-1} b for A lower (lower != 0) or upper, read through strides
 * (ars, acs) so that a transposed A is the same call with the strides swapped. The
 * diagonal blocks are solved by row operations, the rest of b updated by GEMM. */
static int FN(trsm)(const T *a, int64_t ars, int64_t acs, T *b, int64_t n, int64_t k,
                    int64_t ldb, int lower, int unit)
{
#define A_(i, j) a[(i) * ars + (j) * acs]
    if (lower) {
        for (int64_t i0 = 0; i0 < n; i0 += TRSM_NB) {
            int64_t i1 = n - i0 < TRSM_NB ? n : i0 + TRSM_NB;
            for (int64_t i = i0; i < i1; i++) {
                T *bi = b + i * ldb;
                for (int64_t q = i0; q < i; q++) {
                    T l = A_(i, q);
                    const T *bq = b + q * ldb;
                    if (l != 0)
                        for (int64_t c = 0; c < k; c++) bi[c] -= l * bq[c];
                }
                if (!unit) {
                    T d = A_(i, i);
                    for (int64_t c = 0; c < k; c++) bi[c] /= d;
                }
            }
            if (i1 < n && FN(gemm)(n - i1, k, i1 - i0, -1.0, &A_(i1, i0), ars, acs, 0,
                                   b + i0 * ldb, ldb, 1, 0, 1.0, b + i1 * ldb, ldb, 1))
                return EM_LINALG_ENOMEM;
        }
    } else {
        for (int64_t i1 = n; i1 > 0; i1 -= TRSM_NB) {
            int64_t i0 = i1 < TRSM_NB ? 0 : i1 - TRSM_NB;
            for (int64_t i = i1 - 1; i >= i0; i--) {
                T *bi = b + i * ldb;
                for (int64_t q = i + 1; q < i1; q++) {
                    T u = A_(i, q);
                    const T *bq = b + q * ldb;
                    if (u != 0)
                        for (int64_t c = 0; c < k; c++) bi[c] -= u * bq[c];
                }
                if (!unit) {
                    T d = A_(i, i);
                    for (int64_t c = 0; c < k; c++) bi[c] /= d;
                }
            }
            if (i0 > 0 && FN(gemm)(i0, k, i1 - i0, -1.0, &A_(0, i0), ars, acs, 0,
                                   b + i0 * ldb, ldb, 1, 0, 1.0, b, ldb, 1))
                return EM_LINALG_ENOMEM;
        }
    }
#undef A_
    return 0;
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

/* A = L L^T, right-looking blocked: the diagonal block and the panel below it by dot
 * products of contiguous row segments, the trailing lower triangle by GEMMs of one
 * block column each (no work above the diagonal beyond the diagonal blocks). */
static int FN(potrf)(T *a, int64_t n, int64_t lda, int32_t *info)
{
    *info = 0;
    for (int64_t j0 = 0; j0 < n; j0 += CHOL_NB) {
        int64_t jb = n - j0 < CHOL_NB ? n - j0 : CHOL_NB, j1 = j0 + jb;
        for (int64_t j = j0; j < j1; j++) {
            const T *rj = a + j * lda;
            R d = RE(rj[j]);
            for (int64_t c = j0; c < j; c++) d -= RE(rj[c] * CONJ(rj[c]));
            if (!(d > 0)) {          /* also NaN */
                *info = (int32_t)(j + 1);
                return 0;
            }
            d = sqrt(d);
            a[j * lda + j] = d;
            /* the rest of column j: the diagonal block's rows and the panel's */
            for (int64_t i = j + 1; i < n; i++) {
                T *ri = a + i * lda;
                T s = ri[j];
                for (int64_t c = j0; c < j; c++) s -= ri[c] * CONJ(rj[c]);
                ri[j] = s / d;
            }
        }
        /* A22 -= L21 L21^T, lower part, one block column at a time */
        for (int64_t c0 = j1; c0 < n; c0 += CHOL_NB) {
            int64_t cb = n - c0 < CHOL_NB ? n - c0 : CHOL_NB;
            if (FN(gemm)(n - c0, cb, jb, -1.0, a + c0 * lda + j0, lda, 1, 0,
                         a + c0 * lda + j0, 1, lda, 1, 1.0, a + c0 * lda + c0, lda, 1))
                return EM_LINALG_ENOMEM;
        }
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) a[i * lda + j] = 0;
    return 0;
}

/* --------------------------------------------------------------- QR (geqrf) ---- */

/* The 2-norm of x[0], x[s], ..., x[(n-1)s] without overflow or underflow. */
static R FN(nrm2)(const T *x, int64_t n, int64_t s)
{
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

/* Unblocked Householder QR of the panel columns j0 .. j0 + jb - 1 (rows j0 .. m-1):
 * each reflector (LAPACK's larfg) is applied to the panel's later columns only. w is
 * jb elements of workspace. */
static void FN(geqr2)(T *a, int64_t m, int64_t lda, int64_t j0, int64_t jb, T *tau, T *w)
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
        R beta = -copysign(hypot(fabs(alpha), xnorm), RE(alpha));
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
static int FN(geqrf)(T *a, int64_t m, int64_t n, int64_t lda, T *tau)
{
    int64_t k = m < n ? m : n;
    if (k == 0) return 0;
    int64_t nb = k < QR_NB ? k : QR_NB;
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

/* c (m x p) <- Q c or Q^T c, Q = H_0 ... H_{k-1} from the reflectors in v (m x nv). */
static int FN(ormqr)(const T *v, int64_t m, int64_t nv, int64_t k, const T *tau, T *c,
                     int64_t p, int trans)
{
    if (k == 0 || p == 0) return 0;
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
        FN(larft)(v + j0 * nv + j0, nv, m - j0, jb, tau + j0, V, Tm, t);
        rc = FN(larfb)(V, m - j0, jb, Tm, c + j0 * p, p, p, trans, W);
    }
    free(ws);
    return rc;
}

#undef FN
#undef CAT
#undef CAT_
#undef CONJ
#undef RE
#undef IM
#undef ABS1
