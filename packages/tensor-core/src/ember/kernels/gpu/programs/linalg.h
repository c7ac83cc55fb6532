// dtypes: float32 float64
/* ember.linalg's real device kernels (kernels/cpu/linalg.c on the CPU; the host half
 * is backends/gpu/linalg.py), each over a batch of contiguous row-major matrices: LU
 * with partial pivoting, Cholesky, triangular solves and the row interchanges of a
 * solve (../linalg_lu.h, shared with the complex program linalg_complex.h), Householder
 * QR and applying its Q, the Hessenberg reduction of the nonsymmetric eigenproblem and
 * applying its Q, and the symmetric eigenproblem and the SVD (cyclic and one-sided
 * Jacobi).
 *
 * The panels' work-groups are EM_LA_GROUP work-items, the small kernels' any size (the
 * host sizes them to the matrix). info is int32 per matrix: LAPACK's meaning, written
 * by the kernels, never read back here. */
#include "../group_reduce.h"
#include "../linalg_lu.h"
#undef EM_LA_EPS
#define EM_LA_EPS (sizeof(EM_CT) == 8 ? (EM_CT)2.220446049250313e-16 : (EM_CT)1.1920929e-07f)

/* Householder QR steps j0 .. j1-1 of each a (batch, m, n) in place (R on and above the
 * diagonal, the reflectors' vectors below it, LAPACK's larfg: beta = -sign(alpha)
 * ||(alpha, x)||, tau = (beta - alpha) / beta, v = x / (alpha - beta)), each reflector
 * applied to the columns up to ce-1 (all of them, or the panel's when the host blocks);
 * tau (batch, min(m, n)). One work-group per matrix in global memory. The norm of x is
 * scaled by its largest magnitude (no overflow or underflow, as the CPU's nrm2); the
 * reflector is applied a column per work-item. */
EM_KERNEL void EM_NAME(la_geqr2)(em_int64 batch, em_int64 m, em_int64 n, em_int64 j0,
                                 em_int64 j1, em_int64 ce, EM_GLOBAL EM_T *a,
                                 EM_GLOBAL EM_T *tau) {
    EM_LOCAL EM_CT buf[EM_LA_GROUP];
    const int lid = EM_LID(), ls = EM_LSIZE();
    const em_int64 k = m < n ? m : n;
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *A = a + b * m * n;
        for (em_int64 j = j0; j < j1; j++) {
            const EM_CT alpha = A[j * n + j];
            EM_CT mx = 0;
            for (em_int64 i = j + 1 + lid; i < m; i += ls) {
                const EM_CT t = fabs(A[i * n + j]);
                mx = (t > mx || t != t) ? t : mx;
            }
            mx = EM_NAME(group_max)(buf, mx);
            EM_CT ss = 0;
            if (mx != 0)
                for (em_int64 i = j + 1 + lid; i < m; i += ls) {
                    const EM_CT t = A[i * n + j] / mx;
                    ss += t * t;
                }
            ss = EM_NAME(group_sum)(buf, ss);
            const EM_CT xnorm = mx != 0 ? mx * sqrt(ss) : (EM_CT)0;
            const int skip = xnorm == 0;
            const EM_CT beta = -copysign(hypot(fabs(alpha), xnorm), alpha);
            const EM_CT tj = skip ? (EM_CT)0 : (beta - alpha) / beta;
            if (!skip) {
                const EM_CT scal = 1 / (alpha - beta);
                for (em_int64 i = j + 1 + lid; i < m; i += ls) A[i * n + j] *= scal;
            }
            EM_BARRIER();
            if (lid == 0) {
                tau[b * k + j] = tj;
                if (!skip) A[j * n + j] = beta;
            }
            if (!skip)
                for (em_int64 c = j + 1 + lid; c < ce; c += ls) {
                    EM_CT w = A[j * n + c];
                    for (em_int64 i = j + 1; i < m; i++) w += A[i * n + j] * A[i * n + c];
                    w *= tj;
                    A[j * n + c] -= w;
                    for (em_int64 i = j + 1; i < m; i++) A[i * n + c] -= A[i * n + j] * w;
                }
            EM_BARRIER();
        }
    }
}

/* The explicit V (batch, m - j0, jb) of the reflectors j0 .. j0+jb-1 stored in a
 * (batch, m, n): ones on its diagonal, zeros above (the blocked QR's larfb). */
EM_KERNEL void EM_NAME(la_qr_v)(em_int64 batch, em_int64 m, em_int64 n, em_int64 j0,
                                em_int64 jb, EM_GLOBAL const EM_T *a, EM_GLOBAL EM_T *v) {
    const em_int64 r = m - j0, per = r * jb;
    for (em_int64 t = EM_GID(); t < batch * per; t += EM_GSIZE()) {
        const em_int64 bi = t / per, e = t % per, i = e / jb, c = e % jb;
        v[t] = i == c ? (EM_CT)1 : i > c ? a[bi * m * n + (j0 + i) * n + j0 + c] : (EM_CT)0;
    }
}

/* The upper triangular T (batch, jb, jb) of the block reflector H_j0 ... H_j0+jb-1 =
 * I - V T V^T (LAPACK's larft, forward, column by column: T[c, c] = tau_c, T[:c, c] =
 * -tau_c T[:c, :c] G[:c, c]) from G = V^T V (batch, jb, jb, the host's GEMM) and tau
 * (batch, k); a work-group per matrix, the rows of a column in parallel. */
EM_KERNEL void EM_NAME(la_larft)(em_int64 batch, em_int64 k, em_int64 j0, em_int64 jb,
                                 EM_GLOBAL const EM_T *tau, EM_GLOBAL const EM_T *g,
                                 EM_GLOBAL EM_T *t) {
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *T = t + b * jb * jb;
        EM_GLOBAL const EM_T *G = g + b * jb * jb;
        for (em_int64 e = lid; e < jb * jb; e += ls) T[e] = 0;
        EM_BARRIER();
        for (em_int64 c = 0; c < jb; c++) {
            const EM_CT tc = tau[b * k + j0 + c];
            for (em_int64 r = lid; r <= c; r += ls) {
                EM_CT x = 0;
                for (em_int64 q = r; q < c; q++) x += T[r * jb + q] * G[q * jb + c];
                T[r * jb + c] = r == c ? tc : -tc * x;
            }
            EM_BARRIER();
        }
    }
}

/* c (batch, m, p) <- Q c (Q^T c when trans), Q = H_0 ... H_{k-1}, H_i = I - tau_i v_i
 * v_i^T with v_i below the diagonal of column i of v (batch, m, nv) (1 on it), tau
 * (batch, k): one work-item per column of c, the reflectors one after the other (the
 * last first for Q c). */
EM_KERNEL void EM_NAME(la_ormqr)(em_int64 batch, em_int64 m, em_int64 nv, em_int64 k,
                                 em_int64 p, EM_GLOBAL const EM_T *v,
                                 EM_GLOBAL const EM_T *tau, EM_GLOBAL EM_T *c, int trans) {
    for (em_int64 t = EM_GID(); t < batch * p; t += EM_GSIZE()) {
        const em_int64 bi = t / p, col = t % p;
        EM_GLOBAL const EM_T *V = v + bi * m * nv;
        EM_GLOBAL EM_T *C = c + bi * m * p + col;
        for (em_int64 s = 0; s < k; s++) {
            const em_int64 i = trans ? s : k - 1 - s;
            const EM_CT ti = tau[bi * k + i];
            EM_CT w = C[i * p];
            for (em_int64 r = i + 1; r < m; r++) w += V[r * nv + i] * C[r * p];
            w *= ti;
            C[i * p] -= w;
            for (em_int64 r = i + 1; r < m; r++) C[r * p] -= V[r * nv + i] * w;
        }
    }
}

/* Hessenberg reduction of each a (batch, n, n) in place, A = Q H Q^T with Q = H_0 ...
 * H_{n-3}, H_j = I - tau_j v_j v_j^T (LAPACK's gehd2; the reflector of column j from
 * rows j+1.., larfg as la_geqr2's): a <- H, zeros below its subdiagonal, the vectors
 * v_j (1 at row j+1, implicit) in column j of v (batch, n, n) below row j+1, tau
 * (batch, n). One work-group per matrix in global memory: each reflector applied from
 * the left a column per work-item, then from the right a row per work-item. */
EM_KERNEL void EM_NAME(la_gehd2)(em_int64 batch, em_int64 n, EM_GLOBAL EM_T *a,
                                 EM_GLOBAL EM_T *v, EM_GLOBAL EM_T *tau) {
    EM_LOCAL EM_CT buf[EM_LA_GROUP];
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *A = a + b * n * n;
        EM_GLOBAL EM_T *Vb = v + b * n * n;
        for (em_int64 e = lid; e < n * n; e += ls) Vb[e] = 0;
        for (em_int64 j = lid; j < n; j += ls) tau[b * n + j] = 0;
        EM_LA_GBARRIER();
        for (em_int64 j = 0; j + 2 < n; j++) {
            const EM_CT alpha = A[(j + 1) * n + j];
            EM_CT mx = 0;
            for (em_int64 i = j + 2 + lid; i < n; i += ls) {
                const EM_CT t = fabs(A[i * n + j]);
                mx = (t > mx || t != t) ? t : mx;
            }
            mx = EM_NAME(group_max)(buf, mx);
            EM_CT ss = 0;
            if (mx != 0)
                for (em_int64 i = j + 2 + lid; i < n; i += ls) {
                    const EM_CT t = A[i * n + j] / mx;
                    ss += t * t;
                }
            ss = EM_NAME(group_sum)(buf, ss);
            const EM_CT xnorm = mx != 0 ? mx * sqrt(ss) : (EM_CT)0;
            const int skip = xnorm == 0;
            const EM_CT beta = -copysign(hypot(fabs(alpha), xnorm), alpha);
            const EM_CT tj = skip ? (EM_CT)0 : (beta - alpha) / beta;
            const EM_CT scal = skip ? (EM_CT)0 : 1 / (alpha - beta);
            for (em_int64 i = j + 2 + lid; i < n; i += ls) {
                Vb[i * n + j] = A[i * n + j] * scal;
                A[i * n + j] = 0;
            }
            if (lid == 0) {     /* before the barrier: PoCL 3 lost these writes after it */
                tau[b * n + j] = tj;
                if (!skip) A[(j + 1) * n + j] = beta;
            }
            EM_LA_GBARRIER();
            if (!skip)      /* from the left: rows j+1.., columns j+1.. */
                for (em_int64 c = j + 1 + lid; c < n; c += ls) {
                    EM_CT w = A[(j + 1) * n + c];
                    for (em_int64 i = j + 2; i < n; i++) w += Vb[i * n + j] * A[i * n + c];
                    w *= tj;
                    A[(j + 1) * n + c] -= w;
                    for (em_int64 i = j + 2; i < n; i++) A[i * n + c] -= Vb[i * n + j] * w;
                }
            EM_LA_GBARRIER();
            if (!skip)      /* from the right: every row, columns j+1.. */
                for (em_int64 r = lid; r < n; r += ls) {
                    EM_CT w = A[r * n + j + 1];
                    for (em_int64 i = j + 2; i < n; i++) w += A[r * n + i] * Vb[i * n + j];
                    w *= tj;
                    A[r * n + j + 1] -= w;
                    for (em_int64 i = j + 2; i < n; i++) A[r * n + i] -= w * Vb[i * n + j];
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
            const EM_CT tj = tau[bi * n + j];
            if (tj == 0) continue;
            EM_CT w = C[(j + 1) * p];
            for (em_int64 r = j + 2; r < n; r++) w += V[r * n + j] * C[r * p];
            w *= tj;
            C[(j + 1) * p] -= w;
            for (em_int64 r = j + 2; r < n; r++) C[r * p] -= V[r * n + j] * w;
        }
    }
}

/* Eigenvalues (w (batch, n), ascending) and, when `vectors`, eigenvectors (written over
 * a, as columns) of each symmetric a (batch, n, n): cyclic Jacobi by a work-group per
 * matrix on A and V (n x n each: local arrays for la_syevj_small, global workspace for
 * la_syevj). Each round rotates the n/2 disjoint pairs (p, q) of la_pair (CH at a time:
 * disjoint rotations commute), rows then columns; a pair whose |a_pq| <= eps
 * sqrt(|a_pp a_qq|) is not rotated, and a sweep without a rotation ends the iteration.
 * info: 0, 1 (not converged in EM_LA_SWEEPS sweeps) or -1 (a non-finite entry), as the
 * CPU's. BAR: the barrier that orders A and V. */
#define EM_LA_SYEVJ(A, V, CH, BAR)                                                    \
    const int lid = EM_LID(), ls = EM_LSIZE();                                       \
    const int nn = (int)n, n2 = nn + (nn & 1), np_ = n2 / 2;                         \
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {                    \
        EM_GLOBAL EM_T *ab = a + b * n * n;                                          \
        if (lid == 0) bad[0] = 0;                                                    \
        BAR();                                                                       \
        for (int e = lid; e < nn * nn; e += ls) {                                    \
            const EM_CT x = ab[e];                                                   \
            A[e] = x;                                                                \
            V[e] = (e / nn == e % nn) ? (EM_CT)1 : (EM_CT)0;                         \
            if (x * 0 != 0) bad[0] = 1;          /* inf or NaN */                    \
        }                                                                            \
        BAR();                                                                       \
        int go = !bad[0] && nn > 1, sweeps = 0;                                      \
        while (go) {                                                                 \
            BAR();                                                                   \
            if (lid == 0) rot[0] = 0;                                                \
            BAR();                                                                   \
            for (int r = 0; r < n2 - 1; r++)                                         \
                for (int k0 = 0; k0 < np_; k0 += (CH)) {                             \
                    const int nk = np_ - k0 < (CH) ? np_ - k0 : (CH);                \
                    for (int k = lid; k < nk; k += ls) {                             \
                        EM_NAME(la_pair)(r, k0 + k, n2, pp, qq, k);                  \
                        const int p = pp[k], q = qq[k];                              \
                        /* the padding index (odd n) pairs with nobody */            \
                        if (q < nn ? EM_NAME(la_jacobi)(A[p * nn + p], A[q * nn + q],  \
                                                        A[p * nn + q], EM_LA_EPS, cs, sn, k) \
                                   : EM_NAME(la_jacobi)(1, 1, 0, EM_LA_EPS, cs, sn, k)) \
                            rot[0] = 1;                                              \
                    }                                                                \
                    BAR();                                                           \
                    for (int e = lid; e < nk * nn; e += ls) {      /* rows p, q */   \
                        const int k = e / nn, col = e % nn;                          \
                        const EM_CT c = cs[k], s = sn[k];                            \
                        if (s != 0) {                                                \
                            const int p = pp[k], q = qq[k];                          \
                            const EM_CT x = A[p * nn + col], y = A[q * nn + col];    \
                            A[p * nn + col] = c * x - s * y;                         \
                            A[q * nn + col] = s * x + c * y;                         \
                        }                                                            \
                    }                                                                \
                    BAR();                                                           \
                    for (int e = lid; e < nk * nn; e += ls) {      /* columns p, q */\
                        const int k = e / nn, row = e % nn;                          \
                        const EM_CT c = cs[k], s = sn[k];                            \
                        if (s != 0) {                                                \
                            const int p = pp[k], q = qq[k];                          \
                            const EM_CT x = A[row * nn + p], y = A[row * nn + q];    \
                            A[row * nn + p] = row == q ? (EM_CT)0 : c * x - s * y;   \
                            A[row * nn + q] = row == p ? (EM_CT)0 : s * x + c * y;   \
                            if (vectors) {                                           \
                                const EM_CT u = V[row * nn + p], v = V[row * nn + q];\
                                V[row * nn + p] = c * u - s * v;                     \
                                V[row * nn + q] = s * u + c * v;                     \
                            }                                                        \
                        }                                                            \
                    }                                                                \
                    BAR();                                                           \
                }                                                                    \
            sweeps++;                                                                \
            go = rot[0] && sweeps < EM_LA_SWEEPS;                                    \
        }                                                                            \
        BAR();                                                                       \
        /* ascending: entry i goes to its rank (ties by index) */                    \
        for (int i = lid; i < nn; i += ls) {                                         \
            const EM_CT d = A[i * nn + i];                                           \
            int rank = 0;                                                            \
            for (int j = 0; j < nn; j++) {                                           \
                const EM_CT x = A[j * nn + j];                                       \
                rank += (x < d || (x == d && j < i)) ? 1 : 0;                        \
            }                                                                        \
            w[b * n + rank] = d;                                                     \
            if (vectors)                                                             \
                for (int row = 0; row < nn; row++) ab[row * nn + rank] = V[row * nn + i]; \
        }                                                                            \
        if (lid == 0) info[b] = bad[0] ? -1 : (nn > 1 && rot[0]) ? 1 : 0;            \
        BAR();                                                                       \
    }

/* n <= EM_LA_SMALL: A and V in local memory, every pair of a round at once. */
EM_KERNEL void EM_NAME(la_syevj_small)(em_int64 batch, em_int64 n, EM_GLOBAL EM_T *a,
                                       EM_GLOBAL EM_T *w, EM_GLOBAL em_int32 *info,
                                       int vectors) {
    EM_LOCAL EM_CT A[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL EM_CT V[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL EM_CT cs[EM_LA_SMALL / 2];
    EM_LOCAL EM_CT sn[EM_LA_SMALL / 2];
    EM_LOCAL int pp[EM_LA_SMALL / 2];
    EM_LOCAL int qq[EM_LA_SMALL / 2];
    EM_LOCAL int rot[1];
    EM_LOCAL int bad[1];
    EM_LA_SYEVJ(A, V, EM_LA_SMALL / 2, EM_BARRIER)
}

/* Any n: A and V in the workspace ws (2 n^2 per work-group, EM_NGROUPS() of them),
 * EM_LA_GROUP pairs of a round at a time. O(n^3) per sweep in one work-group. */
EM_KERNEL void EM_NAME(la_syevj)(em_int64 batch, em_int64 n, EM_GLOBAL EM_T *a,
                                 EM_GLOBAL EM_T *w, EM_GLOBAL em_int32 *info,
                                 EM_GLOBAL EM_T *ws, int vectors) {
    EM_LOCAL EM_CT cs[EM_LA_GROUP];
    EM_LOCAL EM_CT sn[EM_LA_GROUP];
    EM_LOCAL int pp[EM_LA_GROUP];
    EM_LOCAL int qq[EM_LA_GROUP];
    EM_LOCAL int rot[1];
    EM_LOCAL int bad[1];
    EM_GLOBAL EM_T *A = ws + (em_int64)EM_GROUP() * 2 * n * n;
    EM_GLOBAL EM_T *V = A + n * n;
    EM_LA_SYEVJ(A, V, EM_LA_GROUP, EM_LA_GBARRIER)
}

/* The SVD A = U diag(S) Vh of each a (batch, m, n), k = min(m, n): sv (batch, k)
 * descending and, when `vectors`, u (batch, m, k) and vh (batch, k, n); a is not
 * written. One-sided (Hestenes) Jacobi, a work-group per matrix: the k columns of W = A
 * (A^T when m < n; L = max(m, n) rows), scaled by max |a|, are rotated in round-robin
 * pairs (la_jacobi of their Gram matrix; CH pairs at a time) until every pair is
 * orthogonal to tol = L eps (|w_p.w_q| <= tol |w_p| |w_q|, LAPACK gesvj's), the
 * rotations accumulated in V (k x k). A column of norm <= tol ||W||_F is rounding noise
 * (the other columns of a rank-deficient A: rotating it never meets the test, its
 * rounding being its size): it is not rotated and its singular value is 0. Then S =
 * the column norms (SIG, k), U = the normalised columns (W^T gives Vh when m < n, V
 * gives U). A column of norm 0 is completed to an orthonormal one (Gram-Schmidt of
 * unit vectors, twice). info as la_syevj_small's. W, V, SIG: local
 * arrays (la_gesvj_small) or global workspace (la_gesvj); BAR orders them. */
#define EM_LA_GESVJ(W, V, SIG, CH, BAR)                                               \
    const int lid = EM_LID(), ls = EM_LSIZE();                                       \
    const int tall = m >= n;                                                         \
    const int L = (int)(tall ? m : n), k = (int)(tall ? n : m);                      \
    const int k2 = k + (k & 1), np_ = k2 / 2;                                        \
    const EM_CT tol = EM_LA_EPS * L;                                                 \
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {                    \
        EM_GLOBAL const EM_T *A = a + b * m * n;                                     \
        EM_CT mx = 0;                                                                \
        for (int e = lid; e < L * k; e += ls) {                                      \
            const int i = e / k, j = e % k;                                          \
            const EM_CT x = tall ? A[i * n + j] : A[j * n + i];                      \
            W[e] = x;                                                                \
            const EM_CT t = fabs(x);                                                 \
            mx = (t > mx || t != t) ? t : mx;                                        \
        }                                                                            \
        for (int e = lid; e < k * k; e += ls) V[e] = (e / k == e % k) ? (EM_CT)1 : (EM_CT)0; \
        mx = EM_NAME(group_max)(buf, mx);                                            \
        const int bad = mx * 0 != 0;                                                 \
        const EM_CT scale = (bad || mx == 0) ? (EM_CT)1 : mx;                        \
        EM_CT f2 = 0;                                                                \
        for (int e = lid; e < L * k; e += ls) {                                      \
            W[e] /= scale;                                                           \
            f2 += W[e] * W[e];                                                       \
        }                                                                            \
        /* a column of norm <= tol ||W||_F is rounding noise (zero for the rest) */  \
        const EM_CT small2 = tol * tol * EM_NAME(group_sum)(buf, f2);                \
        int go = !bad && k > 1, sweeps = 0;                                          \
        while (go) {                                                                 \
            BAR();                                                                   \
            if (lid == 0) rot[0] = 0;                                                \
            BAR();                                                                   \
            for (int r = 0; r < k2 - 1; r++)                                         \
                for (int k0 = 0; k0 < np_; k0 += (CH)) {                             \
                    const int nk = np_ - k0 < (CH) ? np_ - k0 : (CH);                \
                    for (int kk = lid; kk < nk; kk += ls) {                          \
                        EM_NAME(la_pair)(r, k0 + kk, k2, pp, qq, kk);                \
                        const int p = pp[kk], q = qq[kk];                            \
                        /* the Gram matrix of columns p and q (the padding: none) */ \
                        EM_CT al = 1, be = 1, ga = 0;                                \
                        if (q < k) {                                                 \
                            al = be = 0;                                             \
                            for (int i = 0; i < L; i++) {                            \
                                const EM_CT x = W[i * k + p], y = W[i * k + q];      \
                                al += x * x;                                         \
                                be += y * y;                                         \
                                ga += x * y;                                         \
                            }                                                        \
                            if (al <= small2 || be <= small2) ga = 0;                \
                        }                                                            \
                        if (EM_NAME(la_jacobi)(al, be, ga, tol, cs, sn, kk)) rot[0] = 1; \
                    }                                                                \
                    BAR();                                                           \
                    for (int e = lid; e < nk * (L + k); e += ls) {                   \
                        const int kk = e / (L + k), i = e % (L + k);                 \
                        const EM_CT c = cs[kk], s = sn[kk];                          \
                        if (s != 0 && (i < L || vectors)) {                          \
                            const int p = pp[kk], q = qq[kk];                        \
                            const int rp = i < L ? i * k + p : L * k + (i - L) * k + p, \
                                      rq = rp + q - p;                               \
                            if (i < L) {                                             \
                                const EM_CT x = W[rp], y = W[rq];                    \
                                W[rp] = c * x - s * y;                               \
                                W[rq] = s * x + c * y;                               \
                            } else {                                                 \
                                const EM_CT x = V[rp - L * k], y = V[rq - L * k];    \
                                V[rp - L * k] = c * x - s * y;                       \
                                V[rq - L * k] = s * x + c * y;                       \
                            }                                                        \
                        }                                                            \
                    }                                                                \
                    BAR();                                                           \
                }                                                                    \
            sweeps++;                                                                \
            go = rot[0] && sweeps < EM_LA_SWEEPS;                                    \
        }                                                                            \
        BAR();                                                                       \
        for (int j = lid; j < k; j += ls) {                                          \
            EM_CT t = 0;                                                             \
            for (int i = 0; i < L; i++) t += W[i * k + j] * W[i * k + j];            \
            SIG[j] = t <= small2 ? (EM_CT)0 : sqrt(t);                               \
        }                                                                            \
        BAR();                                                                       \
        if (vectors) {                                                               \
            for (int e = lid; e < L * k; e += ls)                                    \
                if (SIG[e % k] != 0) W[e] /= SIG[e % k];                             \
            BAR();                                                                   \
            if (lid == 0)                                                            \
                for (int j = 0; j < k; j++) {                                        \
                    if (SIG[j] != 0) continue;                                       \
                    for (int t = 0; t < L; t++) {                                    \
                        for (int i = 0; i < L; i++) W[i * k + j] = i == t ? (EM_CT)1 : (EM_CT)0; \
                        for (int pass = 0; pass < 2; pass++)                         \
                            for (int o = 0; o < k; o++) {                            \
                                if (o == j || !(SIG[o] != 0 || o < j)) continue;     \
                                EM_CT d = 0;                                         \
                                for (int i = 0; i < L; i++) d += W[i * k + o] * W[i * k + j]; \
                                for (int i = 0; i < L; i++) W[i * k + j] -= d * W[i * k + o]; \
                            }                                                        \
                        EM_CT nr = 0;                                                \
                        for (int i = 0; i < L; i++) nr += W[i * k + j] * W[i * k + j]; \
                        nr = sqrt(nr);                                               \
                        /* the complement's dimension d >= 1 is sum_t |P e_t|^2, so  \
                           some t has |P e_t|^2 >= 1 / L */                          \
                        if (nr * nr * L > (EM_CT)0.5) {                              \
                            for (int i = 0; i < L; i++) W[i * k + j] /= nr;          \
                            break;                                                   \
                        }                                                            \
                    }                                                                \
                }                                                                    \
            BAR();                                                                   \
        }                                                                            \
        for (int j = lid; j < k; j += ls) {                                          \
            const EM_CT d = SIG[j];                                                  \
            int rank = 0;                                                            \
            for (int i = 0; i < k; i++) rank += (SIG[i] > d || (SIG[i] == d && i < j)) ? 1 : 0; \
            sv[b * k + rank] = d * scale;                                            \
            if (vectors) {                                                           \
                EM_GLOBAL EM_T *U = u + b * m * k;                                   \
                EM_GLOBAL EM_T *Vh = vh + b * k * n;                                 \
                for (int i = 0; i < (int)m; i++)                                     \
                    U[i * k + rank] = tall ? W[i * k + j] : V[i * k + j];            \
                for (int c = 0; c < (int)n; c++)                                     \
                    Vh[rank * n + c] = tall ? V[c * k + j] : W[c * k + j];           \
            }                                                                        \
        }                                                                            \
        if (lid == 0) info[b] = bad ? -1 : (k > 1 && rot[0]) ? 1 : 0;               \
        BAR();                                                                       \
    }

/* max(m, n) <= EM_LA_SMALL: W, V and the norms in local memory, every pair at once. */
EM_KERNEL void EM_NAME(la_gesvj_small)(em_int64 batch, em_int64 m, em_int64 n,
                                       EM_GLOBAL const EM_T *a, EM_GLOBAL EM_T *sv,
                                       EM_GLOBAL EM_T *u, EM_GLOBAL EM_T *vh,
                                       EM_GLOBAL em_int32 *info, int vectors) {
    EM_LOCAL EM_CT W[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL EM_CT V[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL EM_CT sig[EM_LA_SMALL];
    EM_LOCAL EM_CT cs[EM_LA_SMALL / 2];
    EM_LOCAL EM_CT sn[EM_LA_SMALL / 2];
    EM_LOCAL EM_CT buf[EM_LA_GROUP];
    EM_LOCAL int pp[EM_LA_SMALL / 2];
    EM_LOCAL int qq[EM_LA_SMALL / 2];
    EM_LOCAL int rot[1];
    EM_LA_GESVJ(W, V, sig, EM_LA_SMALL / 2, EM_BARRIER)
}

/* Any m, n: W (L x k), V (k x k) and the norms (k) in the workspace ws (L k + k^2 + k
 * per work-group, EM_NGROUPS() of them), EM_LA_GROUP pairs of a round at a time. */
EM_KERNEL void EM_NAME(la_gesvj)(em_int64 batch, em_int64 m, em_int64 n,
                                 EM_GLOBAL const EM_T *a, EM_GLOBAL EM_T *sv,
                                 EM_GLOBAL EM_T *u, EM_GLOBAL EM_T *vh,
                                 EM_GLOBAL em_int32 *info, EM_GLOBAL EM_T *ws, int vectors) {
    EM_LOCAL EM_CT cs[EM_LA_GROUP];
    EM_LOCAL EM_CT sn[EM_LA_GROUP];
    EM_LOCAL EM_CT buf[EM_LA_GROUP];
    EM_LOCAL int pp[EM_LA_GROUP];
    EM_LOCAL int qq[EM_LA_GROUP];
    EM_LOCAL int rot[1];
    const em_int64 L_ = m > n ? m : n, k_ = m < n ? m : n;
    EM_GLOBAL EM_T *W = ws + (em_int64)EM_GROUP() * (L_ * k_ + k_ * k_ + k_);
    EM_GLOBAL EM_T *V = W + L_ * k_;
    EM_GLOBAL EM_T *sig = V + k_ * k_;
    EM_LA_GESVJ(W, V, sig, EM_LA_GROUP, EM_LA_GBARRIER)
}
