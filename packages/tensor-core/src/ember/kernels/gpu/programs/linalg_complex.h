// dtypes: complex64 complex128
/* ember.linalg's complex device kernels. LU with partial pivoting and its solves,
 * triangular solves and Cholesky (A = L L^H): the real programs' text (../linalg_lu.h)
 * over the complex helpers of ember_complex.h. Below, the kernels whose complex form
 * differs from linalg.h's in more than the arithmetic, each LAPACK's complex
 * algorithm with linalg.h's work split: Householder QR (zgeqr2: H = I - tau v v^H,
 * tau complex, beta real) and applying its Q; the Hessenberg reduction and its Q
 * (zgehd2); the Hermitian eigenproblem by cyclic Jacobi and the SVD by one-sided
 * Jacobi, each complex rotation a phase (the pair's entry made real) followed by
 * linalg.h's real rotation. All in global memory, a work-group per matrix (the Jacobi
 * ones in a device workspace). The host half is backends/gpu/linalg.py (the blocked
 * factorizations' trailing updates: four real GEMMs on the parts). */
#include "../linalg_lu.h"
#undef EM_LA_EPS
#define EM_LA_EPS (sizeof(EM_LA_R) == 8 ? (EM_LA_R)2.220446049250313e-16 : (EM_LA_R)1.1920929e-07f)
#define EM_LA_ADD(a, b) EM_LA_CX(add)(a, b)
#define EM_LA_MAKE(r, i) EM_LA_CX(make)(r, i)
#define EM_LA_SCALE(a, s) EM_LA_CX(scale)(a, s)
#define EM_LA_CMUL(a, b) EM_LA_MUL(EM_LA_CONJ(a), b)     /* conj(a) b */
#define EM_LA_ABS2(a) ((a).re * (a).re + (a).im * (a).im)

/* Sum and maximum of a real value over the work-group (power-of-two size; buf holds
 * EM_LSIZE() values; every work-item calls); the maximum lets NaN win. */
EM_INLINE EM_LA_R EM_NAME(la_rsum)(EM_LPTR EM_LA_R *buf, EM_LA_R v) {
    const int lid = EM_LID();
    buf[lid] = v;
    EM_BARRIER();
    for (int s = EM_LSIZE() / 2; s > 0; s >>= 1) {
        if (lid < s) buf[lid] += buf[lid + s];
        EM_BARRIER();
    }
    const EM_LA_R r = buf[0];
    EM_BARRIER();
    return r;
}

EM_INLINE EM_LA_R EM_NAME(la_rmax)(EM_LPTR EM_LA_R *buf, EM_LA_R v) {
    const int lid = EM_LID();
    buf[lid] = v;
    EM_BARRIER();
    for (int s = EM_LSIZE() / 2; s > 0; s >>= 1) {
        if (lid < s) {
            const EM_LA_R a = buf[lid], b = buf[lid + s];
            buf[lid] = (b > a || b != b) ? b : a;
        }
        EM_BARRIER();
    }
    const EM_LA_R r = buf[0];
    EM_BARRIER();
    return r;
}

/* LAPACK's zlarfg on the column (alpha, x) = p[0], p[ld], ..., p[(len - 1) ld] by the
 * whole work-group: H^H (alpha, x) = (beta, 0) with H = I - tau v v^H, v = (1, x / (alpha
 * - beta)), beta = -sign(Re alpha) ||(alpha, x)|| real. x is scaled to v in place; tau is
 * returned (0 when H = I: x = 0 and alpha real) and beta stored at *beta; the caller
 * writes them. ||x|| is scaled by the largest |re| + |im| (no overflow). */
EM_INLINE EM_T EM_NAME(la_larfg)(EM_LPTR EM_LA_R *buf, EM_GLOBAL EM_T *p, em_int64 ld,
                                 em_int64 len, EM_LA_R *beta) {
    const int lid = EM_LID(), ls = EM_LSIZE();
    const EM_T alpha = p[0];
    EM_LA_R mx = 0;
    for (em_int64 i = 1 + lid; i < len; i += ls) {
        const EM_LA_R t = EM_LA_ABS1(p[i * ld]);
        mx = (t > mx || t != t) ? t : mx;
    }
    mx = EM_NAME(la_rmax)(buf, mx);
    EM_LA_R ss = 0;
    if (mx != 0)
        for (em_int64 i = 1 + lid; i < len; i += ls) ss += EM_LA_ABS2(EM_LA_SCALE(p[i * ld], 1 / mx));
    ss = EM_NAME(la_rsum)(buf, ss);
    const EM_LA_R xnorm = mx != 0 ? mx * sqrt(ss) : (EM_LA_R)0;
    if (xnorm == 0 && alpha.im == 0) {
        *beta = alpha.re;
        return EM_LA_ZERO;
    }
    const EM_LA_R b = -copysign(hypot(hypot(alpha.re, alpha.im), xnorm), alpha.re);
    const EM_T scal = EM_LA_DIV(EM_LA_MAKE(1, 0), EM_LA_MAKE(alpha.re - b, alpha.im));
    for (em_int64 i = 1 + lid; i < len; i += ls) p[i * ld] = EM_LA_MUL(p[i * ld], scal);
    *beta = b;
    return EM_LA_MAKE((b - alpha.re) / b, -alpha.im / b);
}

/* Householder QR steps j0 .. j1-1 of each a (batch, m, n) in place (zgeqr2: R on and
 * above the diagonal, the reflectors' vectors below it), each H_j^H applied to the
 * columns up to ce-1; tau (batch, min(m, n)). A work-group per matrix in global
 * memory, the reflector applied a column per work-item. */
EM_KERNEL void EM_NAME(la_geqr2)(em_int64 batch, em_int64 m, em_int64 n, em_int64 j0,
                                 em_int64 j1, em_int64 ce, EM_GLOBAL EM_T *a,
                                 EM_GLOBAL EM_T *tau) {
    EM_LOCAL EM_LA_R buf[EM_LA_GROUP];
    const int lid = EM_LID(), ls = EM_LSIZE();
    const em_int64 k = m < n ? m : n;
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *A = a + b * m * n;
        for (em_int64 j = j0; j < j1; j++) {
            EM_LA_R beta;
            const EM_T tj = EM_NAME(la_larfg)(buf, A + j * n + j, n, m - j, &beta);
            const EM_T tc = EM_LA_CONJ(tj);
            EM_LA_GBARRIER();
            if (lid == 0) {
                tau[b * k + j] = tj;
                A[j * n + j] = EM_LA_MAKE(beta, 0);
            }
            if (EM_LA_NZ(tj))      /* H^H C = C - conj(tau) v (v^H C) */
                for (em_int64 c = j + 1 + lid; c < ce; c += ls) {
                    EM_T w = A[j * n + c];
                    for (em_int64 i = j + 1; i < m; i++)
                        w = EM_LA_ADD(w, EM_LA_CMUL(A[i * n + j], A[i * n + c]));
                    w = EM_LA_MUL(w, tc);
                    A[j * n + c] = EM_LA_SUB(A[j * n + c], w);
                    for (em_int64 i = j + 1; i < m; i++)
                        A[i * n + c] = EM_LA_SUB(A[i * n + c], EM_LA_MUL(A[i * n + j], w));
                }
            EM_LA_GBARRIER();
        }
    }
}

/* c (batch, m, p) <- Q c (Q^H c when trans), Q = H_0 ... H_{k-1}, H_i = I - tau_i v_i
 * v_i^H with v_i below the diagonal of column i of v (batch, m, nv) (1 on it): one
 * work-item per column of c, the reflectors one after the other (the last first for
 * Q c; conj(tau_i) for Q^H). */
EM_KERNEL void EM_NAME(la_ormqr)(em_int64 batch, em_int64 m, em_int64 nv, em_int64 k,
                                 em_int64 p, EM_GLOBAL const EM_T *v,
                                 EM_GLOBAL const EM_T *tau, EM_GLOBAL EM_T *c, int trans) {
    for (em_int64 t = EM_GID(); t < batch * p; t += EM_GSIZE()) {
        const em_int64 bi = t / p, col = t % p;
        EM_GLOBAL const EM_T *V = v + bi * m * nv;
        EM_GLOBAL EM_T *C = c + bi * m * p + col;
        for (em_int64 s = 0; s < k; s++) {
            const em_int64 i = trans ? s : k - 1 - s;
            const EM_T ti = trans ? EM_LA_CONJ(tau[bi * k + i]) : tau[bi * k + i];
            EM_T w = C[i * p];
            for (em_int64 r = i + 1; r < m; r++) w = EM_LA_ADD(w, EM_LA_CMUL(V[r * nv + i], C[r * p]));
            w = EM_LA_MUL(w, ti);
            C[i * p] = EM_LA_SUB(C[i * p], w);
            for (em_int64 r = i + 1; r < m; r++) C[r * p] = EM_LA_SUB(C[r * p], EM_LA_MUL(V[r * nv + i], w));
        }
    }
}

/* Hessenberg reduction of each a (batch, n, n) in place, A = Q H Q^H with Q = H_0 ...
 * H_{n-3}, H_j = I - tau_j v_j v_j^H (zgehd2; the reflector of column j from rows
 * j+1.., la_larfg): a <- H, zeros below its subdiagonal, v_j (1 at row j+1, implicit)
 * in column j of v (batch, n, n) below row j+1, tau (batch, n). A work-group per matrix
 * in global memory: H_j^H applied from the left a column per work-item, then H_j from
 * the right a row per work-item. */
EM_KERNEL void EM_NAME(la_gehd2)(em_int64 batch, em_int64 n, EM_GLOBAL EM_T *a,
                                 EM_GLOBAL EM_T *v, EM_GLOBAL EM_T *tau) {
    EM_LOCAL EM_LA_R buf[EM_LA_GROUP];
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *A = a + b * n * n;
        EM_GLOBAL EM_T *Vb = v + b * n * n;
        for (em_int64 e = lid; e < n * n; e += ls) Vb[e] = EM_LA_ZERO;
        for (em_int64 j = lid; j < n; j += ls) tau[b * n + j] = EM_LA_ZERO;
        EM_LA_GBARRIER();
        for (em_int64 j = 0; j + 2 < n; j++) {
            EM_LA_R beta;
            const EM_T tj = EM_NAME(la_larfg)(buf, A + (j + 1) * n + j, n, n - j - 1, &beta);
            const EM_T tc = EM_LA_CONJ(tj);
            EM_LA_GBARRIER();
            for (em_int64 i = j + 2 + lid; i < n; i += ls) {
                Vb[i * n + j] = A[i * n + j];
                A[i * n + j] = EM_LA_ZERO;
            }
            if (lid == 0) {     /* before the barrier: PoCL 3 lost these writes after it */
                tau[b * n + j] = tj;
                A[(j + 1) * n + j] = EM_LA_MAKE(beta, 0);
            }
            EM_LA_GBARRIER();
            if (EM_LA_NZ(tj))   /* from the left, H^H: rows j+1.., columns j+1.. */
                for (em_int64 c = j + 1 + lid; c < n; c += ls) {
                    EM_T w = A[(j + 1) * n + c];
                    for (em_int64 i = j + 2; i < n; i++)
                        w = EM_LA_ADD(w, EM_LA_CMUL(Vb[i * n + j], A[i * n + c]));
                    w = EM_LA_MUL(w, tc);
                    A[(j + 1) * n + c] = EM_LA_SUB(A[(j + 1) * n + c], w);
                    for (em_int64 i = j + 2; i < n; i++)
                        A[i * n + c] = EM_LA_SUB(A[i * n + c], EM_LA_MUL(Vb[i * n + j], w));
                }
            EM_LA_GBARRIER();
            if (EM_LA_NZ(tj))   /* from the right, H: every row, columns j+1.. */
                for (em_int64 r = lid; r < n; r += ls) {
                    EM_T w = A[r * n + j + 1];
                    for (em_int64 i = j + 2; i < n; i++)
                        w = EM_LA_ADD(w, EM_LA_MUL(A[r * n + i], Vb[i * n + j]));
                    w = EM_LA_MUL(w, tj);
                    A[r * n + j + 1] = EM_LA_SUB(A[r * n + j + 1], w);
                    for (em_int64 i = j + 2; i < n; i++)
                        A[r * n + i] = EM_LA_SUB(A[r * n + i], EM_LA_MUL(w, EM_LA_CONJ(Vb[i * n + j])));
                }
            EM_LA_GBARRIER();
        }
    }
}

/* c (batch, n, p) <- Q c for la_gehd2's Q = H_0 ... H_{n-3} (v, tau as it writes them):
 * one work-item per column of c, the last reflector first. */
EM_KERNEL void EM_NAME(la_orghr_apply)(em_int64 batch, em_int64 n, em_int64 p,
                                       EM_GLOBAL const EM_T *v, EM_GLOBAL const EM_T *tau,
                                       EM_GLOBAL EM_T *c) {
    for (em_int64 t = EM_GID(); t < batch * p; t += EM_GSIZE()) {
        const em_int64 bi = t / p, col = t % p;
        EM_GLOBAL const EM_T *V = v + bi * n * n;
        EM_GLOBAL EM_T *C = c + bi * n * p + col;
        for (em_int64 j = n - 3; j >= 0; j--) {
            const EM_T tj = tau[bi * n + j];
            if (!EM_LA_NZ(tj)) continue;
            EM_T w = C[(j + 1) * p];
            for (em_int64 r = j + 2; r < n; r++) w = EM_LA_ADD(w, EM_LA_CMUL(V[r * n + j], C[r * p]));
            w = EM_LA_MUL(w, tj);
            C[(j + 1) * p] = EM_LA_SUB(C[(j + 1) * p], w);
            for (em_int64 r = j + 2; r < n; r++) C[r * p] = EM_LA_SUB(C[r * p], EM_LA_MUL(V[r * n + j], w));
        }
    }
}

/* The complex Jacobi rotation of the Hermitian 2 x 2 [[app, apq], [conj(apq), aqq]]:
 * the phase u = apq / |apq| (ph[k]) makes it real under D = diag(1, conj(u)), then
 * la_jacobi's real rotation G: J = D G, applied as rows p, q <- J^H (c x - s u y, s x +
 * c u y) and columns p, q <- J (c x - s conj(u) y, s x + c conj(u) y). */
EM_INLINE int EM_NAME(la_cjacobi)(EM_LA_R app, EM_LA_R aqq, EM_T apq, EM_LA_R tol,
                                  EM_LPTR EM_LA_R *cs, EM_LPTR EM_LA_R *sn,
                                  EM_LPTR EM_T *ph, int k) {
    const EM_LA_R g = hypot(apq.re, apq.im);
    ph[k] = g != 0 ? EM_LA_MAKE(apq.re / g, apq.im / g) : EM_LA_MAKE(1, 0);
    return EM_NAME(la_jacobi)(app, aqq, g, tol, cs, sn, k);
}

/* x, y <- c x - s z y, s x + c z y (z: a phase) */
#define EM_LA_CROT(X, Y, c, s, z)                                                     \
    do {                                                                             \
        const EM_T x_ = (X), zy_ = EM_LA_MUL(z, (Y));                                \
        (X) = EM_LA_SUB(EM_LA_SCALE(x_, c), EM_LA_SCALE(zy_, s));                    \
        (Y) = EM_LA_ADD(EM_LA_SCALE(x_, s), EM_LA_SCALE(zy_, c));                    \
    } while (0)

/* Eigenvalues (w (batch, n) real, ascending) and, when `vectors`, eigenvectors (over
 * a, as columns) of each Hermitian a (batch, n, n) (its diagonal real): cyclic Jacobi
 * as linalg.h's la_syevj, a work-group per matrix on A and V in the workspace ws (2 n^2
 * per work-group), EM_LA_GROUP pairs of a round at a time, each pair's rotation
 * la_cjacobi's (the diagonal kept real). info as the real one's. */
EM_KERNEL void EM_NAME(la_syevj)(em_int64 batch, em_int64 n, EM_GLOBAL EM_T *a,
                                 EM_GLOBAL EM_LA_R *w, EM_GLOBAL em_int32 *info,
                                 EM_GLOBAL EM_T *ws, int vectors) {
    EM_LOCAL EM_LA_R cs[EM_LA_GROUP];
    EM_LOCAL EM_LA_R sn[EM_LA_GROUP];
    EM_LOCAL EM_T ph[EM_LA_GROUP];
    EM_LOCAL int pp[EM_LA_GROUP];
    EM_LOCAL int qq[EM_LA_GROUP];
    EM_LOCAL int rot[1];
    EM_LOCAL int bad[1];
    EM_GLOBAL EM_T *A = ws + (em_int64)EM_GROUP() * 2 * n * n;
    EM_GLOBAL EM_T *V = A + n * n;
    const int lid = EM_LID(), ls = EM_LSIZE();
    const int nn = (int)n, n2 = nn + (nn & 1), np_ = n2 / 2;
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *ab = a + b * n * n;
        if (lid == 0) bad[0] = 0;
        EM_LA_GBARRIER();
        for (int e = lid; e < nn * nn; e += ls) {
            const EM_T x = ab[e];
            A[e] = x;
            V[e] = EM_LA_MAKE(e / nn == e % nn ? 1 : 0, 0);
            if (x.re * 0 != 0 || x.im * 0 != 0) bad[0] = 1;      /* inf or NaN */
        }
        EM_LA_GBARRIER();
        int go = !bad[0] && nn > 1, sweeps = 0;
        while (go) {
            EM_LA_GBARRIER();
            if (lid == 0) rot[0] = 0;
            EM_LA_GBARRIER();
            for (int r = 0; r < n2 - 1; r++)
                for (int k0 = 0; k0 < np_; k0 += EM_LA_GROUP) {
                    const int nk = np_ - k0 < EM_LA_GROUP ? np_ - k0 : EM_LA_GROUP;
                    for (int k = lid; k < nk; k += ls) {
                        EM_NAME(la_pair)(r, k0 + k, n2, pp, qq, k);
                        const int p = pp[k], q = qq[k];
                        /* the padding index (odd n) pairs with nobody */
                        if (q < nn ? EM_NAME(la_cjacobi)(A[p * nn + p].re, A[q * nn + q].re,
                                                         A[p * nn + q], EM_LA_EPS, cs, sn, ph, k)
                                   : EM_NAME(la_cjacobi)(1, 1, EM_LA_ZERO, EM_LA_EPS, cs, sn,
                                                         ph, k))
                            rot[0] = 1;
                    }
                    EM_LA_GBARRIER();
                    for (int e = lid; e < nk * nn; e += ls) {      /* rows p, q */
                        const int k = e / nn, col = e % nn;
                        if (sn[k] != 0) {
                            const int p = pp[k], q = qq[k];
                            EM_LA_CROT(A[p * nn + col], A[q * nn + col], cs[k], sn[k], ph[k]);
                        }
                    }
                    EM_LA_GBARRIER();
                    for (int e = lid; e < nk * nn; e += ls) {      /* columns p, q */
                        const int k = e / nn, row = e % nn;
                        if (sn[k] != 0) {
                            const int p = pp[k], q = qq[k];
                            const EM_T z = EM_LA_CONJ(ph[k]);
                            EM_LA_CROT(A[row * nn + p], A[row * nn + q], cs[k], sn[k], z);
                            /* the pair's entries zero, its diagonal real */
                            if (row == p) {
                                A[row * nn + q] = EM_LA_ZERO;
                                A[row * nn + p].im = 0;
                            }
                            if (row == q) {
                                A[row * nn + p] = EM_LA_ZERO;
                                A[row * nn + q].im = 0;
                            }
                            if (vectors)
                                EM_LA_CROT(V[row * nn + p], V[row * nn + q], cs[k], sn[k], z);
                        }
                    }
                    EM_LA_GBARRIER();
                }
            sweeps++;
            go = rot[0] && sweeps < EM_LA_SWEEPS;
        }
        EM_LA_GBARRIER();
        /* ascending: entry i goes to its rank (ties by index) */
        for (int i = lid; i < nn; i += ls) {
            const EM_LA_R d = A[i * nn + i].re;
            int rank = 0;
            for (int j = 0; j < nn; j++) {
                const EM_LA_R x = A[j * nn + j].re;
                rank += (x < d || (x == d && j < i)) ? 1 : 0;
            }
            w[b * n + rank] = d;
            if (vectors)
                for (int row = 0; row < nn; row++) ab[row * nn + rank] = V[row * nn + i];
        }
        if (lid == 0) info[b] = bad[0] ? -1 : (nn > 1 && rot[0]) ? 1 : 0;
        EM_LA_GBARRIER();
    }
}

/* The SVD A = U diag(S) Vh of each a (batch, m, n), k = min(m, n): sv (batch, k) real,
 * descending and, when `vectors`, u (batch, m, k) and vh (batch, k, n); a is not
 * written. One-sided Jacobi as linalg.h's la_gesvj on W = A (A^H when m < n; L =
 * max(m, n) rows): each pair of columns made orthogonal by la_cjacobi of its Gram
 * matrix [[|w_p|^2, w_p^H w_q], [., |w_q|^2]] (W and V <- W J, V J), the same tolerance,
 * rounding-noise columns and completion of the null ones (Gram-Schmidt with complex
 * inner products). Then S = the column norms, U = the normalised columns (W^H gives Vh
 * when m < n, V gives U). W (L k), V (k^2) and the norms (k, real) in the workspace ws
 * (L k + k^2 + k per work-group), EM_LA_GROUP pairs of a round at a time. */
EM_KERNEL void EM_NAME(la_gesvj)(em_int64 batch, em_int64 m, em_int64 n,
                                 EM_GLOBAL const EM_T *a, EM_GLOBAL EM_LA_R *sv,
                                 EM_GLOBAL EM_T *u, EM_GLOBAL EM_T *vh,
                                 EM_GLOBAL em_int32 *info, EM_GLOBAL EM_T *ws, int vectors) {
    EM_LOCAL EM_LA_R cs[EM_LA_GROUP];
    EM_LOCAL EM_LA_R sn[EM_LA_GROUP];
    EM_LOCAL EM_T ph[EM_LA_GROUP];
    EM_LOCAL EM_LA_R buf[EM_LA_GROUP];
    EM_LOCAL int pp[EM_LA_GROUP];
    EM_LOCAL int qq[EM_LA_GROUP];
    EM_LOCAL int rot[1];
    const em_int64 L_ = m > n ? m : n, k_ = m < n ? m : n;
    EM_GLOBAL EM_T *W = ws + (em_int64)EM_GROUP() * (L_ * k_ + k_ * k_ + k_);
    EM_GLOBAL EM_T *V = W + L_ * k_;
    EM_GLOBAL EM_LA_R *SIG = (EM_GLOBAL EM_LA_R *)(V + k_ * k_);
    const int lid = EM_LID(), ls = EM_LSIZE();
    const int tall = m >= n;
    const int L = (int)L_, k = (int)k_;
    const int k2 = k + (k & 1), np_ = k2 / 2;
    const EM_LA_R tol = EM_LA_EPS * L;
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL const EM_T *A = a + b * m * n;
        EM_LA_R mx = 0;
        for (int e = lid; e < L * k; e += ls) {
            const int i = e / k, j = e % k;
            const EM_T x = tall ? A[i * n + j] : EM_LA_CONJ(A[j * n + i]);
            W[e] = x;
            const EM_LA_R t = EM_LA_ABS1(x);     /* NaN in either part stays NaN */
            mx = (t > mx || t != t) ? t : mx;
        }
        for (int e = lid; e < k * k; e += ls) V[e] = EM_LA_MAKE(e / k == e % k ? 1 : 0, 0);
        mx = EM_NAME(la_rmax)(buf, mx);
        const int bad = mx * 0 != 0;
        const EM_LA_R scale = (bad || mx == 0) ? (EM_LA_R)1 : mx;
        EM_LA_R f2 = 0;
        for (int e = lid; e < L * k; e += ls) {
            W[e] = EM_LA_SCALE(W[e], 1 / scale);
            f2 += EM_LA_ABS2(W[e]);
        }
        /* a column of norm <= tol ||W||_F is rounding noise (zero for the rest) */
        const EM_LA_R small2 = tol * tol * EM_NAME(la_rsum)(buf, f2);
        int go = !bad && k > 1, sweeps = 0;
        while (go) {
            EM_LA_GBARRIER();
            if (lid == 0) rot[0] = 0;
            EM_LA_GBARRIER();
            for (int r = 0; r < k2 - 1; r++)
                for (int k0 = 0; k0 < np_; k0 += EM_LA_GROUP) {
                    const int nk = np_ - k0 < EM_LA_GROUP ? np_ - k0 : EM_LA_GROUP;
                    for (int kk = lid; kk < nk; kk += ls) {
                        EM_NAME(la_pair)(r, k0 + kk, k2, pp, qq, kk);
                        const int p = pp[kk], q = qq[kk];
                        /* the Gram matrix of columns p and q (the padding: none) */
                        EM_LA_R al = 1, be = 1;
                        EM_T ga = EM_LA_ZERO;
                        if (q < k) {
                            al = be = 0;
                            for (int i = 0; i < L; i++) {
                                const EM_T x = W[i * k + p], y = W[i * k + q];
                                al += EM_LA_ABS2(x);
                                be += EM_LA_ABS2(y);
                                ga = EM_LA_ADD(ga, EM_LA_CMUL(x, y));
                            }
                            if (al <= small2 || be <= small2) ga = EM_LA_ZERO;
                        }
                        if (EM_NAME(la_cjacobi)(al, be, ga, tol, cs, sn, ph, kk)) rot[0] = 1;
                    }
                    EM_LA_GBARRIER();
                    for (int e = lid; e < nk * (L + k); e += ls) {
                        const int kk = e / (L + k), i = e % (L + k);
                        if (sn[kk] != 0 && (i < L || vectors)) {
                            const int p = pp[kk], q = qq[kk];
                            const EM_T z = EM_LA_CONJ(ph[kk]);
                            EM_GLOBAL EM_T *M = i < L ? W + i * k : V + (i - L) * k;
                            EM_LA_CROT(M[p], M[q], cs[kk], sn[kk], z);
                        }
                    }
                    EM_LA_GBARRIER();
                }
            sweeps++;
            go = rot[0] && sweeps < EM_LA_SWEEPS;
        }
        EM_LA_GBARRIER();
        for (int j = lid; j < k; j += ls) {
            EM_LA_R t = 0;
            for (int i = 0; i < L; i++) t += EM_LA_ABS2(W[i * k + j]);
            SIG[j] = t <= small2 ? (EM_LA_R)0 : sqrt(t);
        }
        EM_LA_GBARRIER();
        if (vectors) {
            for (int e = lid; e < L * k; e += ls)
                if (SIG[e % k] != 0) W[e] = EM_LA_SCALE(W[e], 1 / SIG[e % k]);
            EM_LA_GBARRIER();
            if (lid == 0)
                for (int j = 0; j < k; j++) {
                    if (SIG[j] != 0) continue;
                    for (int t = 0; t < L; t++) {
                        for (int i = 0; i < L; i++) W[i * k + j] = EM_LA_MAKE(i == t ? 1 : 0, 0);
                        for (int pass = 0; pass < 2; pass++)
                            for (int o = 0; o < k; o++) {
                                if (o == j || !(SIG[o] != 0 || o < j)) continue;
                                EM_T d = EM_LA_ZERO;
                                for (int i = 0; i < L; i++)
                                    d = EM_LA_ADD(d, EM_LA_CMUL(W[i * k + o], W[i * k + j]));
                                for (int i = 0; i < L; i++)
                                    W[i * k + j] = EM_LA_SUB(W[i * k + j], EM_LA_MUL(d, W[i * k + o]));
                            }
                        EM_LA_R nr = 0;
                        for (int i = 0; i < L; i++) nr += EM_LA_ABS2(W[i * k + j]);
                        nr = sqrt(nr);
                        /* some t has |P e_t|^2 >= 1 / L (la_gesvj's argument) */
                        if (nr * nr * L > (EM_LA_R)0.5) {
                            for (int i = 0; i < L; i++) W[i * k + j] = EM_LA_SCALE(W[i * k + j], 1 / nr);
                            break;
                        }
                    }
                }
            EM_LA_GBARRIER();
        }
        for (int j = lid; j < k; j += ls) {
            const EM_LA_R d = SIG[j];
            int rank = 0;
            for (int i = 0; i < k; i++) rank += (SIG[i] > d || (SIG[i] == d && i < j)) ? 1 : 0;
            sv[b * k + rank] = d * scale;
            if (vectors) {
                EM_GLOBAL EM_T *U = u + b * m * k;
                EM_GLOBAL EM_T *Vh = vh + b * k * n;
                for (int i = 0; i < (int)m; i++)
                    U[i * k + rank] = tall ? W[i * k + j] : V[i * k + j];
                for (int c = 0; c < (int)n; c++)
                    Vh[rank * n + c] = EM_LA_CONJ(tall ? V[c * k + j] : W[c * k + j]);
            }
        }
        if (lid == 0) info[b] = bad ? -1 : (k > 1 && rot[0]) ? 1 : 0;
        EM_LA_GBARRIER();
    }
}
