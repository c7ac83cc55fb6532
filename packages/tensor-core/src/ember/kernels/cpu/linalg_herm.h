/* The Householder reductions of the Hermitian eigensolver and the SVD, included by
 * linalg.c with linalg_impl.h's T, R, SFX and CPLX: for float64 (CPLX 0) only the
 * tridiagonal reduction (hetrd is LAPACK's dsytrd then, under syevd), for the complex
 * dtypes all of it, in the dtype's own precision (complex64 in float complex; only the
 * real tridiagonal or bidiagonal matrix is solved in double, by linalg.c's real
 * solvers). The reduced diagonal and off-diagonal are real (larfg's beta), returned as
 * double. */
#include "linalg_scalar.h"
#if CPLX
#define HERM_CLONES LEAF_CLONES
#else
#define HERM_CLONES CLONES
#endif

/* conj(x) . y: the real dtypes' four partial sums (dot), the complex ones' in order */
static inline T FN(dotc)(const T *x, const T *y, int64_t n)
{
#if CPLX
    T s = 0;
    for (int64_t i = 0; i < n; i++) s += conj(x[i]) * y[i];
    return s;
#else
    return dot(x, y, n);
#endif
}

/* larfg on (alpha, x[0], x[s], ... x[(k-1)s]): H^H (alpha, x) = (beta, 0), H = I -
 * tau v v^H, v = (1, x') with x' written over x; alpha <- beta (real). Returns tau. */
static T FN(larfg)(T *alpha, T *x, int64_t k, int64_t s)
{
    R xnorm = FN(nrm2)(x, k, s);
    if (xnorm == 0 && IM(*alpha) == 0) return 0;
    R beta = -copysign(hypot(fabs(*alpha), xnorm), RE(*alpha));
    T tau = (beta - *alpha) / beta, scal = 1 / (*alpha - beta);
    for (int64_t i = 0; i < k; i++) x[i * s] *= scal;
    *alpha = beta;
    return tau;
}

/* Tridiagonal reduction (LAPACK's sytrd / zhetrd, lower, with latrd panels): a (n x n,
 * column-major, Hermitian: only the lower triangle is read and written) -> T = Q^H A Q
 * real tridiagonal: d (n), e (n - 1, e[i] couples i and i + 1); Q = H_0 ... H_{n-2},
 * H_i = I - tau[i] v v^H, v[i + 1] = 1 and v[i + 2:] in a(i + 2:, i). Each panel's
 * reflectors are accumulated in V and W and the trailing lower triangle updated by
 * A -= V W^H + W V^H in GEMMs. ws holds 4 * SYTRD_NB * n elements. */
HERM_CLONES static int FN(hetrd)(T *a, int64_t n, double *d, double *e, T *tau, T *ws)
{
#define A(i, j) a[(j) * n + (i)]
    const int64_t nb = SYTRD_NB;
    T *X = ws, *Y = X + 2 * nb * n;       /* X = [V W], Y = [W V], n x 2nb each */
    T *V = X, *W = X + nb * n;
    for (int64_t k0 = 0; k0 < n; k0 += nb) {
        int64_t jb = imin(nb, n - k0);
        for (int64_t j = 0; j < jb; j++) {
            int64_t i = k0 + j;
            T *ai = &A(0, i);
            /* column i (rows i..) with the panel's earlier reflectors applied */
            for (int64_t q = 0; q < j; q++) {
                const T *vq = V + q * n, *wq = W + q * n;
                T wi = CONJ(wq[i]), vi = CONJ(vq[i]);
                for (int64_t r = i; r < n; r++) ai[r] -= vq[r] * wi + wq[r] * vi;
            }
            d[i] = RE(ai[i]);
            T *vj = V + j * n, *wj = W + j * n;
            if (i == n - 1) break;
            T alpha = ai[i + 1];
            T t = FN(larfg)(&alpha, ai + (i + 2 < n ? i + 2 : i + 1), n - i - 2, 1);
            e[i] = RE(alpha);
            tau[i] = t;
            ai[i + 1] = 1;
            for (int64_t r = 0; r <= i; r++) { vj[r] = 0; wj[r] = 0; }
            for (int64_t r = i + 1; r < n; r++) { vj[r] = ai[r]; wj[r] = 0; }
            if (t == 0) continue;
            /* w = A22 v from the lower triangle (A22 as the earlier panels left it; its
             * diagonal is real) */
            for (int64_t c = i + 1; c < n; c++) {
                const T *ac = &A(0, c);
                T vc = vj[c];
                for (int64_t r = c + 1; r < n; r++) wj[r] += ac[r] * vc;
                wj[c] += RE(ac[c]) * vc + FN(dotc)(ac + c + 1, vj + c + 1, n - c - 1);
            }
            /* w -= V (W^H v) + W (V^H v) for the panel's earlier reflectors */
            for (int64_t q = 0; q < j; q++) {
                const T *vq = V + q * n, *wq = W + q * n;
                T t1 = FN(dotc)(wq + i + 1, vj + i + 1, n - i - 1),
                  t2 = FN(dotc)(vq + i + 1, vj + i + 1, n - i - 1);
                for (int64_t r = i + 1; r < n; r++) wj[r] -= vq[r] * t1 + wq[r] * t2;
            }
            for (int64_t r = i + 1; r < n; r++) wj[r] *= t;
            T a2 = -0.5 * t * FN(dotc)(wj + i + 1, vj + i + 1, n - i - 1);
            for (int64_t r = i + 1; r < n; r++) wj[r] += a2 * vj[r];
        }
        int64_t k1 = k0 + jb;
        if (k1 >= n) break;
        memcpy(Y, W, (size_t)(nb * n) * sizeof(T));
        memcpy(Y + nb * n, V, (size_t)(nb * n) * sizeof(T));
        /* A22 -= [V W] [W V]^H, lower triangle, one block column at a time */
        for (int64_t c0 = k1; c0 < n; c0 += 64) {
            int64_t cb = imin(64, n - c0);
            if (FN(gemm)(n - c0, cb, 2 * nb, -1.0, X + c0, 1, n, 0, Y + c0, n, 1, 1, 1.0,
                         &A(c0, c0), 1, n))
                return EM_LINALG_ENOMEM;
        }
    }
    return 0;
#undef A
}
#undef HERM_CLONES

#if CPLX
/* Hermitian a (n x n, row-major; the lower triangle is read) -> w ascending and, when
 * vectors, v (n x n row-major, the eigenvectors as columns). */
static int FN(heev)(const T *h, int64_t n, double *w, T *v, int vectors)
{
    size_t nn = (size_t)n;
    T *a = (T *)malloc((nn * nn + nn + 4 * SYTRD_NB * nn) * sizeof(T));
    double *rw = (double *)malloc((nn * nn + nn) * sizeof(double));
    if (!a || !rw) { free(a); free(rw); return EM_LINALG_ENOMEM; }
    T *tau = a + nn * nn, *ws = tau + n;
    double *e = rw, *q = rw + n;
#define A(i, j) a[(j) * n + (i)]
    for (int64_t c = 0; c < n; c++)   /* column-major (hetrd's GEMMs also write above) */
        for (int64_t r = 0; r < n; r++) A(r, c) = h[r * n + c];
    int rc = FN(hetrd)(a, n, w, e, tau, ws);
    if (!rc) rc = tridiag_eig(w, e, n, q, vectors);
    if (!rc && vectors) {
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < n; c++) v[r * n + c] = q[c * n + r];
        int64_t m1 = n - 1;
        T *Rv = (T *)malloc((nn * nn + 1) * sizeof(T));
        if (!Rv) rc = EM_LINALG_ENOMEM;
        else {
            for (int64_t c = 0; c < m1; c++)
                for (int64_t r = c + 1; r < m1; r++) Rv[r * m1 + c] = A(r + 1, c);
            if (m1 > 0) rc = FN(ormqr)(Rv, m1, m1, m1, tau, v + n, n, 0);
            free(Rv);
        }
    }
#undef A
    free(a); free(rw);
    return rc;
}

/* The complex gebrd's panels (LAPACK's zlabrd) on a (m x n, row-major, m >= n), from
 * column 0 while more than 2 * GEBRD_NB columns remain; returns the first column left
 * for the unblocked loop of gesvd_c. Q^H A P = B with H_i = I - tq[i] u u^H (u below
 * A(i, i)) and G_i = I - tp[i] v v^H (v right of A(i, i + 1), as v, not conjugated),
 * their units written. Within a panel the trailing matrix is A - U Y^H - X V^H, Y =
 * tq A^H u and X = tp A v taken against it; it is updated once per panel in two
 * GEMMs. ws holds (m + n) * GEBRD_NB + n elements, or returns EM_LINALG_ENOMEM. */
LEAF_CLONES static int64_t FN(gebrd_panels)(T *a, int64_t m, int64_t n, double *d,
                                         double *e, T *tq, T *tp, T *ws)
{
#define A(i, j) a[(i) * n + (j)]
    const int64_t nb = GEBRD_NB;
    T *X = ws, *Y = X + m * nb, *z = Y + n * nb, t1[2 * GEBRD_NB], cy[GEBRD_NB],
       cv[GEBRD_NB];
    int64_t i0 = 0;
    for (; n - i0 > 2 * nb; i0 += nb) {
        memset(X, 0, (size_t)(m * nb) * sizeof(T));
        memset(Y, 0, (size_t)(n * nb) * sizeof(T));
        for (int64_t j = 0; j < nb; j++) {
            int64_t i = i0 + j;
            /* column i (rows i:) with the panel's earlier reflectors applied */
            for (int64_t q = 0; q < j; q++) {
                cy[q] = conj(Y[i * nb + q]);
                cv[q] = conj(A(i0 + q, i));
            }
            for (int64_t r = i; r < m && j; r++) {
                T acc = 0;
                const T *ar = &A(r, i0), *xr = X + r * nb;
                for (int64_t q = 0; q < j; q++) acc += ar[q] * cy[q] + xr[q] * cv[q];
                A(r, i) -= acc;
            }
            tq[i] = FN(larfg)(&A(i, i), &A(i + 1, i), m - i - 1, n);
            d[i] = creal(A(i, i));
            A(i, i) = 1;
            /* Y(i+1:, j) = tq (A^H u - Y (U^H u) - V (X^H u)), u = A(i:, i): z = u^H A
             * four rows a pass (z is read once for them), then conjugated */
            for (int64_t c = i + 1; c < n; c++) z[c] = 0;
            int64_t r = i;
            for (; r + 4 <= m; r += 4) {
                T u0 = conj(A(r, i)), u1 = conj(A(r + 1, i)), u2 = conj(A(r + 2, i)),
                   u3 = conj(A(r + 3, i));
                const T *a0 = &A(r, 0), *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;
                for (int64_t c = i + 1; c < n; c++)
                    z[c] += (u0 * a0[c] + u1 * a1[c]) + (u2 * a2[c] + u3 * a3[c]);
            }
            for (; r < m; r++) {
                T ur = conj(A(r, i));
                const T *ar = &A(r, 0);
                for (int64_t c = i + 1; c < n; c++) z[c] += ur * ar[c];
            }
            for (int64_t q = 0; q < j; q++) t1[q] = t1[nb + q] = 0;
            for (r = i; r < m && j; r++) {
                T ur = A(r, i);
                const T *ar = &A(r, i0), *xr = X + r * nb;
                for (int64_t q = 0; q < j; q++) {
                    t1[q] += conj(ar[q]) * ur;
                    t1[nb + q] += conj(xr[q]) * ur;
                }
            }
            for (int64_t c = i + 1; c < n; c++) {
                T acc = conj(z[c]);
                const T *yc = Y + c * nb;
                for (int64_t q = 0; q < j; q++)
                    acc -= yc[q] * t1[q] + A(i0 + q, c) * t1[nb + q];
                Y[c * nb + j] = tq[i] * acc;
            }
            /* row i (columns i+1:) with the panel's reflectors applied, this one too */
            for (int64_t q = 0; q < j; q++) cv[q] = X[i * nb + q];
            const T *ai = &A(i, i0);
            for (int64_t c = i + 1; c < n; c++) {
                T acc = 0;
                const T *yc = Y + c * nb;
                for (int64_t q = 0; q <= j; q++) acc += ai[q] * conj(yc[q]);
                for (int64_t q = 0; q < j; q++) acc += cv[q] * conj(A(i0 + q, c));
                A(i, c) -= acc;
            }
            /* the row reflector on conj(A(i, i+1:)) */
            for (int64_t c = i + 1; c < n; c++) A(i, c) = conj(A(i, c));
            tp[i] = FN(larfg)(&A(i, i + 1), &A(i, i + 2), n - i - 2, 1);
            e[i] = creal(A(i, i + 1));
            A(i, i + 1) = 1;
            /* X(i+1:, j) = tp (A v - U (Y^H v) - X (V^H v)), v = A(i, i+1:) */
            const T *vv = &A(i, 0);
            for (int64_t q = 0; q <= j; q++) {
                T acc = 0;
                for (int64_t c = i + 1; c < n; c++) acc += conj(Y[c * nb + q]) * vv[c];
                t1[q] = acc;
            }
            for (int64_t q = 0; q < j; q++) {
                T acc = 0;
                const T *aq = &A(i0 + q, 0);
                for (int64_t c = i + 1; c < n; c++) acc += conj(aq[c]) * vv[c];
                t1[nb + q] = acc;
            }
            for (r = i + 1; r < m; r++) {
                const T *ar = &A(r, 0), *xr = X + r * nb;
                T acc = 0;
                for (int64_t c = i + 1; c < n; c++) acc += ar[c] * vv[c];
                for (int64_t q = 0; q <= j; q++) acc -= ar[i0 + q] * t1[q];
                for (int64_t q = 0; q < j; q++) acc -= xr[q] * t1[nb + q];
                X[r * nb + j] = tp[i] * acc;
            }
        }
        /* A22 -= U Y^H + X V^H (rows, columns i0 + nb:) */
        int64_t k1 = i0 + nb, M2 = m - k1, N2 = n - k1;
        if (FN(gemm)(M2, N2, nb, -1.0, &A(k1, i0), n, 1, 0, Y + k1 * nb, 1, nb, 1, 1.0,
                      &A(k1, k1), n, 1) ||
            FN(gemm)(M2, N2, nb, -1.0, X + k1 * nb, nb, 1, 0, &A(i0, k1), n, 1, 1, 1.0,
                      &A(k1, k1), n, 1))
            return EM_LINALG_ENOMEM;
    }
    return i0;
#undef A
}

/* a (m x n, row-major, m >= n >= 1, read only) = U diag(s) V^H: s (n) descending; when
 * vectors u (m x n) and vh (n x n), row-major. */
LEAF_CLONES static int FN(gesvd)(const T *a0, int64_t m, int64_t n, double *s, T *u,
                               T *vh, int want)
{
    size_t mm = (size_t)m, nn = (size_t)n;
    T *a = (T *)malloc((mm * nn + 2 * nn + mm + nn * nn) * sizeof(T));
    double *rw = (double *)malloc((3 * nn * nn + 3 * nn) * sizeof(double));
    if (!a || !rw) { free(a); free(rw); return EM_LINALG_ENOMEM; }
    T *tq = a + mm * nn, *tp = tq + n, *wk = tp + n, *P = wk + m;
    double *B = rw, *ub = B + nn * nn, *vb = ub + nn * nn, *d = vb + nn * nn, *e = d + n,
           *wr = e + n;
    memcpy(a, a0, mm * nn * sizeof(T));
    int64_t i0 = 0;
    if (n > 2 * GEBRD_NB) {      /* blocked panels, then the last columns one by one */
        T *ws = (T *)malloc((size_t)((m + n) * GEBRD_NB + n) * sizeof(T));
        i0 = ws ? FN(gebrd_panels)(a, m, n, d, e, tq, tp, ws) : EM_LINALG_ENOMEM;
        free(ws);
        if (i0 < 0) { free(a); free(rw); return EM_LINALG_ENOMEM; }
    }
#define A(i, j) a[(i) * n + (j)]
    for (int64_t i = i0; i < n; i++) {
        /* the column reflector: H_i^H zeros A(i+1:, i) */
        T alpha = A(i, i);
        tq[i] = FN(larfg)(&alpha, i + 1 < m ? &A(i + 1, i) : &A(i, i), m - i - 1, n);
        d[i] = creal(alpha);
        A(i, i) = 1;
        T ct = conj(tq[i]);
        if (ct != 0 && i + 1 < n) {     /* A(i:, i+1:) -= conj(tau) v (v^H A) */
            for (int64_t c = i + 1; c < n; c++) wk[c] = 0;
            for (int64_t r = i; r < m; r++) {
                T vr = conj(A(r, i));
                for (int64_t c = i + 1; c < n; c++) wk[c] += vr * A(r, c);
            }
            for (int64_t r = i; r < m; r++) {
                T vr = ct * A(r, i);
                for (int64_t c = i + 1; c < n; c++) A(r, c) -= vr * wk[c];
            }
        }
        if (i + 1 >= n) { e[i] = 0; continue; }
        /* the row reflector on conj(A(i, i+1:)): A(i+1:, i+1:) <- A G_i */
        for (int64_t c = i + 1; c < n; c++) A(i, c) = conj(A(i, c));
        alpha = A(i, i + 1);
        tp[i] = FN(larfg)(&alpha, i + 2 < n ? &A(i, i + 2) : &A(i, i + 1), n - i - 2, 1);
        e[i] = creal(alpha);
        A(i, i + 1) = 1;
        T t = tp[i];
        if (t != 0) {                   /* A -= tau (A v) v^H, v = A(i, i+1:) */
            for (int64_t r = i + 1; r < m; r++) {
                T acc = 0;
                for (int64_t c = i + 1; c < n; c++) acc += A(r, c) * A(i, c);
                acc *= t;
                for (int64_t c = i + 1; c < n; c++) A(r, c) -= acc * conj(A(i, c));
            }
        }
    }
    /* the real bidiagonal B (upper: d, e) by the real SVD: divide and conquer for
     * the vectors from GESDD_MIN, else dsvdc on B column-major */
    int rc;
    if (want && n >= GESDD_MIN) {
        memcpy(s, d, nn * sizeof(double));
        rc = bdsdc(s, e, n, ub, vb);
    } else {
        memset(B, 0, nn * nn * sizeof(double));
        for (int64_t i = 0; i < n; i++) {
            B[i * n + i] = d[i];
            if (i + 1 < n) B[(i + 1) * n + i] = e[i];
        }
        memset(ub, 0, 2 * nn * nn * sizeof(double));
        rc = svd_core(B, n, n, s, ub, vb, want, e, wr);
    }
    if (!rc && want) {
        /* U = Q [Ub; 0]: the column reflectors are ormqr's layout already */
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < n; c++) u[r * n + c] = r < n ? ub[c * n + r] : 0;
        rc = FN(ormqr)(a, m, n, n, tq, u, n, 0);
        /* V = P Vb, P = G_0 ... G_{n-2} with G_i's v in A(i, i+1:) */
        int64_t m1 = n - 1;
        T *Vm = P;
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < n; c++) Vm[r * n + c] = vb[c * n + r];
        if (!rc && m1 > 0) {
            T *Rp = (T *)malloc((size_t)(m1 * m1) * sizeof(T));
            if (!Rp) rc = EM_LINALG_ENOMEM;
            else {
                for (int64_t c = 0; c < m1; c++)
                    for (int64_t r = c + 1; r < m1; r++) Rp[r * m1 + c] = A(c, r + 1);
                rc = FN(ormqr)(Rp, m1, m1, m1, tp, Vm + n, n, 0);
                free(Rp);
            }
        }
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < n; c++) vh[r * n + c] = conj(Vm[c * n + r]);
    }
#undef A
    free(a); free(rw);
    return rc;
}

/* One entry of OP_SYEV (m = n) or OP_SVD of this complex dtype: a (m x n, read only)
 * -> w (min(m, n), the real dtype) and, when want, u and vh as linalg.h's em_syev and
 * em_svd write them (eigh: u may be a itself, FN(heev) reads it first). */
static int FN(herm_entry)(int op, int64_t m, int64_t n, const T *a, R *w_out, T *u, T *vh,
                          int want, int32_t *info)
{
    int64_t k = imin(m, n);
    double *w = (double *)calloc((size_t)(imax(m, n) + 1), sizeof(double));
    if (!w) return EM_LINALG_ENOMEM;
    double fin = 0;
    for (int64_t q = 0; q < m * n; q++) fin += creal(a[q]) * 0 + cimag(a[q]) * 0;
    int rc = 0;
    if (fin != 0) {
        *info = -1;
    } else if (op == OP_SYEV) {
        rc = n ? FN(heev)(a, n, w, u, want) : 0;
        *info = rc > 0 ? rc : 0;
    } else if (m >= n) {
        rc = FN(gesvd)(a, m, n, w, u, vh, want);
        *info = rc > 0 ? rc : 0;
    } else {
        /* A^H (n x m, tall) = U' S V'^H: A = V' S U'^H, U = V', Vh = U'^H */
        T *ah = (T *)malloc((size_t)(m * n) * sizeof(T)), *u2 = NULL, *v2 = NULL;
        if (want) {
            u2 = (T *)malloc((size_t)(n * m) * sizeof(T));
            v2 = (T *)malloc((size_t)(m * m) * sizeof(T));
        }
        if (!ah || (want && (!u2 || !v2))) rc = EM_LINALG_ENOMEM;
        else {
            for (int64_t r = 0; r < m; r++)
                for (int64_t c = 0; c < n; c++) ah[c * m + r] = conj(a[r * n + c]);
            rc = FN(gesvd)(ah, n, m, w, u2, v2, want);
            *info = rc > 0 ? rc : 0;
            if (rc >= 0 && want) {
                /* U (m x m) = V'  = v2^H; Vh (m x n) = U'^H = u2^H */
                for (int64_t r = 0; r < m; r++)
                    for (int64_t c = 0; c < m; c++) u[r * m + c] = conj(v2[c * m + r]);
                for (int64_t r = 0; r < m; r++)
                    for (int64_t c = 0; c < n; c++) vh[r * n + c] = conj(u2[c * m + r]);
            }
        }
        free(ah); free(u2); free(v2);
    }
    if (rc >= 0)
        for (int64_t q = 0; q < k; q++) w_out[q] = (R)w[q];
    free(w);
    return rc < 0 ? rc : 0;
}
#endif
#undef FN
#undef CAT
#undef CAT_
#undef CONJ
#undef RE
#undef IM
