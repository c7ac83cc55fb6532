// dtypes: float32 float64 complex64 complex128
/* ember.linalg's device kernels (kernels/cpu/linalg.c on the CPU; the host half is
 * backends/gpu/linalg.py), each over a batch of contiguous row-major matrices: LU with
 * partial pivoting, Cholesky, triangular solves and the row interchanges of a solve,
 * Householder QR and applying its Q, the Hessenberg reduction of the nonsymmetric
 * eigenproblem and applying its Q, and the symmetric (Hermitian) eigenproblem and the
 * SVD (cyclic and one-sided Jacobi).
 *
 * One text for the real and the complex dtypes: the scalar arithmetic goes through the
 * EM_LA_ macros below, plain operators for float32/float64 and the em_c*_ helpers of
 * ember_complex.h for complex64/complex128, where each kernel is LAPACK's complex
 * algorithm (A = L L^H; reflectors H = I - tau v v^H with tau complex and beta real,
 * zlarfg; a Jacobi rotation is a phase that makes the pair's entry real, then the real
 * rotation).
 *
 * Two shapes of work. A small matrix (both dims <= EM_LA_SMALL) is factored by one
 * work-group in local memory from load to store (la_getrf_small, la_potrf_small,
 * la_syevj_small, la_gesvj_small: one launch for the whole batch). A larger one is
 * factored right-looking by blocks of columns: the panel kernels (la_getrf_panel,
 * la_potrf_panel, la_geqr2 on a panel) factor one block column in global memory, one
 * work-group per matrix, and the host updates the trailing matrix with the device GEMM
 * between them; the Jacobi kernels of any size keep their matrices in a device
 * workspace. The LU and Cholesky steps are written once (EM_LA_GETF2, EM_LA_POTF2) for
 * both address spaces, and the Jacobi iterations once (EM_LA_SYEVJ, EM_LA_GESVJ); they
 * follow the CPU's step for step (the same pivot choice: LAPACK's |re| + |im| for
 * complex, the same order of the sums), so info and the pivots are the CPU's.
 *
 * The panels' work-groups are EM_LA_GROUP work-items, the small kernels' any size (the
 * host sizes them to the matrix). info is int32 per matrix: LAPACK's meaning, written
 * by the kernels, never read back here. */
#define EM_LA_SMALL 32
#define EM_LA_GROUP 64
#define EM_LA_NONE 0x7fffffff
#define EM_LA_SWEEPS 40

/* EM_LA_R: the real type; a, b: EM_T values, s: a real one; z: a complex phase */
#if defined(EM_DT_complex64) || defined(EM_DT_complex128)
#define EM_LA_COMPLEX 1
#if defined(EM_DT_complex64)
#define EM_LA_R float
#define EM_LA_CX(f) em_c##f##_complex64
#else
#define EM_LA_R double
#define EM_LA_CX(f) em_c##f##_complex128
#endif
#define EM_LA_MAKE(r, i) EM_LA_CX(make)(r, i)
#define EM_LA_ADD(a, b) EM_LA_CX(add)(a, b)
#define EM_LA_SUB(a, b) EM_LA_CX(sub)(a, b)
#define EM_LA_MUL(a, b) EM_LA_CX(mul)(a, b)
#define EM_LA_DIV(a, b) EM_LA_CX(div)(a, b)
#define EM_LA_NEG(a) EM_LA_CX(neg)(a)
#define EM_LA_CONJ(a) EM_LA_CX(conj)(a)
#define EM_LA_SCALE(a, s) EM_LA_CX(scale)(a, s)
#define EM_LA_RDIV(a, s) EM_LA_CX(scale)(a, 1 / (s))    /* a / s: one division */
#define EM_LA_PHASE(z, a) EM_LA_CX(mul)(z, a)
#define EM_LA_RE(a) ((a).re)
#define EM_LA_IM(a) ((a).im)
#define EM_LA_ABS(a) hypot((a).re, (a).im)
#define EM_LA_ABS1(a) (fabs((a).re) + fabs((a).im))   /* LAPACK's cabs1 */
#define EM_LA_ABS2(a) ((a).re * (a).re + (a).im * (a).im)
#define EM_LA_NZ(a) EM_LA_CX(nz)(a)
#define EM_LA_DROP_IM(a) ((a).im = 0)
#define EM_LA_IS_REAL(a) ((a).im == 0)
#else
#define EM_LA_COMPLEX 0
#define EM_LA_R EM_CT
#define EM_LA_MAKE(r, i) ((EM_CT)(r))
#define EM_LA_ADD(a, b) ((a) + (b))
#define EM_LA_SUB(a, b) ((a) - (b))
#define EM_LA_MUL(a, b) ((a) * (b))
#define EM_LA_DIV(a, b) ((a) / (b))
#define EM_LA_NEG(a) (-(a))
#define EM_LA_CONJ(a) (a)
#define EM_LA_SCALE(a, s) ((a) * (s))
#define EM_LA_RDIV(a, s) ((a) / (s))
#define EM_LA_PHASE(z, a) (a)
#define EM_LA_RE(a) (a)
#define EM_LA_IM(a) ((EM_CT)0)
#define EM_LA_ABS(a) fabs(a)
#define EM_LA_ABS1(a) fabs(a)
#define EM_LA_ABS2(a) ((a) * (a))
#define EM_LA_NZ(a) ((a) != 0)
#define EM_LA_DROP_IM(a) ((void)0)
#define EM_LA_IS_REAL(a) 1
#endif
#define EM_LA_ZERO EM_LA_MAKE(0, 0)
#define EM_LA_OF_RE(x) EM_LA_MAKE(x, 0)
#define EM_LA_CMUL(a, b) EM_LA_MUL(EM_LA_CONJ(a), b)     /* conj(a) b */
#define EM_LA_EPS (sizeof(EM_LA_R) == 8 ? (EM_LA_R)2.220446049250313e-16 : (EM_LA_R)1.1920929e-07f)

/* the work-group sums and maxima are of real values */
#define EM_GROUP_T EM_LA_R
#include "../group_reduce.h"

/* A barrier that also orders the work-group's global memory (the kernels that keep
 * their matrices there; CUDA's __syncthreads() already does). */
#if defined(__OPENCL_VERSION__)
#define EM_LA_GBARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#else
#define EM_LA_GBARRIER() __syncthreads()
#endif

/* The row of the largest value v[] (EM_LA_GROUP candidates (value, row), -1 / EM_LA_NONE
 * for none), the smallest row among equal values: the first maximum, as the CPU's
 * scan. Every work-item calls it. */
EM_INLINE int EM_NAME(la_argmax)(EM_LPTR EM_LA_R *v, EM_LPTR int *ix) {
    const int lid = EM_LID();
    EM_BARRIER();
    for (int s = EM_LA_GROUP / 2; s > 0; s >>= 1) {
        if (lid < s) {
            EM_LA_R x = v[lid], y = v[lid + s];
            int iy = ix[lid + s];
            if (y > x || (y == x && iy < ix[lid])) { v[lid] = y; ix[lid] = iy; }
        }
        EM_BARRIER();
    }
    int r = ix[0];
    EM_BARRIER();
    return r;
}

/* The pivot row p of column j (int p is declared): the first largest |S[i, j]| (cabs1
 * for complex), i >= j, NaN never winning, as the CPU's scan. PIVOT_TREE: every
 * work-item scans a stride of the rows, then a reduction over the group (v, ix: local
 * arrays of EM_LA_GROUP); PIVOT_SERIAL: work-item 0 scans them all (the small
 * matrices: fewer barriers), the result in the local pv[0]. */
#define EM_LA_PIVOT_TREE(S, ld, m, j)                                                 \
    EM_LA_R best = -1;                                                               \
    int bi = EM_LA_NONE;                                                             \
    for (em_int64 i = j + 1 + lid; i < (m); i += ls) {                               \
        EM_LA_R t = EM_LA_ABS1(S[i * (ld) + j]);                                     \
        if (t > best) { best = t; bi = (int)i; }                                     \
    }                                                                                \
    v[lid] = best;                                                                   \
    ix[lid] = bi;                                                                    \
    int p = EM_NAME(la_argmax)(v, ix);                                               \
    if (p == EM_LA_NONE || !(EM_LA_ABS1(S[p * (ld) + j]) > EM_LA_ABS1(S[j * (ld) + j]))) \
        p = (int)j;
#define EM_LA_PIVOT_SERIAL(S, ld, m, j)                                               \
    if (lid == 0) {                                                                  \
        int q = (int)j;                                                              \
        EM_LA_R best = EM_LA_ABS1(S[j * (ld) + j]);                                  \
        for (em_int64 i = j + 1; i < (m); i++) {                                     \
            EM_LA_R t = EM_LA_ABS1(S[i * (ld) + j]);                                 \
            if (t > best) { best = t; q = (int)i; }                                  \
        }                                                                            \
        pv[0] = q;                                                                   \
    }                                                                                \
    EM_BARRIER();                                                                    \
    int p = pv[0];

/* LU steps j0 .. j1-1 of the m x n matrix S (row stride ld) by a work-group of ls
 * work-items: the pivot (PIVOT, one of the above), the swap of the whole rows (all n
 * columns), the multipliers, and the update of columns j+1 .. ce-1. PIV[j] gets the
 * 1-based pivot row, INFO (an lvalue) j+1 for the first exactly zero pivot. */
#define EM_LA_GETF2(S, ld, m, n, j0, j1, ce, PIV, INFO, PIVOT)                        \
    for (em_int64 j = (j0); j < (j1); j++) {                                         \
        PIVOT(S, ld, m, j)                                                           \
        const EM_CT pivot = S[p * (ld) + j];                                         \
        if (lid == 0) {                                                              \
            PIV[j] = p + 1;                                                          \
            if (!EM_LA_NZ(pivot) && (INFO) == 0) (INFO) = (em_int32)(j + 1);         \
        }                                                                            \
        EM_BARRIER();                  /* every work-item has read the pivot column */ \
        if (EM_LA_NZ(pivot) && p != j)                                               \
            for (em_int64 c = lid; c < (n); c += ls) {                               \
                EM_CT t = S[j * (ld) + c];                                           \
                S[j * (ld) + c] = S[p * (ld) + c];                                   \
                S[p * (ld) + c] = t;                                                 \
            }                                                                        \
        EM_BARRIER();                                                                \
        if (EM_LA_NZ(pivot)) {                                                       \
            const EM_CT r = EM_LA_DIV(EM_LA_OF_RE(1), pivot);                        \
            for (em_int64 i = j + 1 + lid; i < (m); i += ls)                         \
                S[i * (ld) + j] = EM_LA_MUL(S[i * (ld) + j], r);                     \
        }                                                                            \
        EM_BARRIER();                                                                \
        const em_int64 w = (ce) - j - 1;                                             \
        for (em_int64 e = lid; e < ((m) - j - 1) * w; e += ls) {                     \
            const em_int64 i = j + 1 + e / w, c = j + 1 + e % w;                     \
            const EM_CT l = S[i * (ld) + j];                                         \
            if (EM_LA_NZ(l))                                                         \
                S[i * (ld) + c] = EM_LA_SUB(S[i * (ld) + c], EM_LA_MUL(l, S[j * (ld) + c])); \
        }                                                                            \
        EM_BARRIER();                                                                \
    }

/* a (batch, m, n), m and n <= EM_LA_SMALL <- L and U (in place), one work-group per
 * matrix holding it in local memory; piv (batch, min(m, n)), info (batch). */
EM_KERNEL void EM_NAME(la_getrf_small)(em_int64 batch, em_int64 m, em_int64 n,
                                       EM_GLOBAL EM_T *a, EM_GLOBAL em_int32 *piv,
                                       EM_GLOBAL em_int32 *info) {
    EM_LOCAL EM_CT s[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL int pv[1];
    EM_LOCAL em_int32 inf[1];
    const int lid = EM_LID(), ls = EM_LSIZE();
    const em_int64 k = m < n ? m : n;
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *ab = a + b * m * n;
        EM_GLOBAL em_int32 *pb = piv + b * k;
        for (em_int64 e = lid; e < m * n; e += ls) s[e] = ab[e];
        if (lid == 0) inf[0] = 0;
        EM_BARRIER();
        EM_LA_GETF2(s, n, m, n, 0, k, n, pb, inf[0], EM_LA_PIVOT_SERIAL)
        for (em_int64 e = lid; e < m * n; e += ls) ab[e] = s[e];
        if (lid == 0) info[b] = inf[0];
        EM_BARRIER();
    }
}

/* LU steps of the block column j0 .. j0+jb-1 of each a (batch, m, n) in global memory
 * (the trailing update of the columns right of it is the host's GEMM); info must start
 * at 0 (the first zero pivot of every panel is kept). */
EM_KERNEL void EM_NAME(la_getrf_panel)(em_int64 batch, em_int64 m, em_int64 n, em_int64 j0,
                                       em_int64 jb, EM_GLOBAL EM_T *a,
                                       EM_GLOBAL em_int32 *piv, EM_GLOBAL em_int32 *info) {
    EM_LOCAL EM_LA_R v[EM_LA_GROUP];
    EM_LOCAL int ix[EM_LA_GROUP];
    const int lid = EM_LID(), ls = EM_LA_GROUP;
    const em_int64 k = m < n ? m : n;
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *ab = a + b * m * n;
        EM_GLOBAL em_int32 *pb = piv + b * k;
        EM_LA_GETF2(ab, n, m, n, j0, j0 + jb, j0 + jb, pb, info[b], EM_LA_PIVOT_TREE)
    }
}

/* Cholesky steps j0 .. j1-1 of the n x n matrix S (row stride ld, the lower triangle
 * read): the diagonal element (real) from the dot product of its row's block part,
 * then the rest of its column (rows j+1 .. n-1), as the CPU's potrf (complex: A = L
 * L^H, the row's conjugates). A diagonal that is not > 0 (or NaN) sets INFO to j+1 and
 * FAILED, which stops the steps. */
#define EM_LA_POTF2(S, ld, n, j0, j1, INFO, FAILED)                                  \
    for (em_int64 j = (j0); j < (j1); j++) {                                         \
        if (lid == 0 && !(FAILED)) {                                                 \
            EM_LA_R d = EM_LA_RE(S[j * (ld) + j]);                                   \
            for (em_int64 c = (j0); c < j; c++)                                      \
                d -= EM_LA_RE(EM_LA_MUL(S[j * (ld) + c], EM_LA_CONJ(S[j * (ld) + c]))); \
            if (!(d > 0)) { (INFO) = (em_int32)(j + 1); (FAILED) = 1; }              \
            else S[j * (ld) + j] = EM_LA_OF_RE(sqrt(d));                             \
        }                                                                            \
        EM_BARRIER();                                                                \
        if (!(FAILED)) {                                                             \
            const EM_CT d = S[j * (ld) + j];                                         \
            for (em_int64 i = j + 1 + lid; i < (n); i += ls) {                       \
                EM_CT t = S[i * (ld) + j];                                           \
                for (em_int64 c = (j0); c < j; c++)                                  \
                    t = EM_LA_SUB(t, EM_LA_MUL(S[i * (ld) + c], EM_LA_CONJ(S[j * (ld) + c]))); \
                S[i * (ld) + j] = EM_LA_DIV(t, d);                                   \
            }                                                                        \
        }                                                                            \
        EM_BARRIER();                                                                \
    }

/* a (batch, n, n), n <= EM_LA_SMALL <- L (zeros above; left as it is after a failure,
 * as the CPU's), one work-group per matrix in local memory; info (batch). */
EM_KERNEL void EM_NAME(la_potrf_small)(em_int64 batch, em_int64 n, EM_GLOBAL EM_T *a,
                                       EM_GLOBAL em_int32 *info) {
    EM_LOCAL EM_CT s[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL em_int32 inf[1];
    EM_LOCAL int failed[1];
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *ab = a + b * n * n;
        for (em_int64 e = lid; e < n * n; e += ls) s[e] = ab[e];
        if (lid == 0) { inf[0] = 0; failed[0] = 0; }
        EM_BARRIER();
        EM_LA_POTF2(s, n, n, 0, n, inf[0], failed[0])
        const int ok = !failed[0];
        for (em_int64 e = lid; e < n * n; e += ls)
            ab[e] = (ok && e % n > e / n) ? EM_LA_ZERO : s[e];
        if (lid == 0) info[b] = inf[0];
        EM_BARRIER();
    }
}

/* Cholesky steps of the block column j0 .. j0+jb-1 (rows j0 .. n-1) of each a (batch,
 * n, n) in global memory, after the host's GEMM has applied the earlier blocks; a matrix
 * whose info is already nonzero is left alone. */
EM_KERNEL void EM_NAME(la_potrf_panel)(em_int64 batch, em_int64 n, em_int64 j0, em_int64 jb,
                                       EM_GLOBAL EM_T *a, EM_GLOBAL em_int32 *info) {
    EM_LOCAL int failed[1];
    const int lid = EM_LID(), ls = EM_LA_GROUP;
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *ab = a + b * n * n;
        if (lid == 0) failed[0] = info[b] != 0;
        EM_BARRIER();
        EM_LA_POTF2(ab, n, n, j0, j0 + jb, info[b], failed[0])
    }
}

/* Zeros above the diagonal of each a (batch, n, n) whose info is 0 (the blocked
 * Cholesky's last step). */
EM_KERNEL void EM_NAME(la_zero_upper)(em_int64 batch, em_int64 n, EM_GLOBAL EM_T *a,
                                      EM_GLOBAL const em_int32 *info) {
    for (em_int64 t = EM_GID(); t < batch * n * n; t += EM_GSIZE()) {
        const em_int64 e = t % (n * n);
        if (e % n > e / n && info[t / (n * n)] == 0) a[t] = EM_LA_ZERO;
    }
}

/* B <- T^{-1} B for each matrix of the batch: T n x n triangular (lower or upper; its
 * diagonal taken as ones when unit; its entries conjugated when conj), read at a +
 * a_off + i a_bs + r a_rs + c a_cs (a transposed T is the same call with the strides
 * swapped); B n x k at b + b_off + i b_bs + r b_rs + c b_cs. One work-item per column
 * of B (no barriers): substitution in the CPU's order. The host blocks large n (the
 * off-diagonal blocks by GEMM). */
EM_KERNEL void EM_NAME(la_trsm)(em_int64 batch, em_int64 n, em_int64 k,
                                EM_GLOBAL const EM_T *a, em_int64 a_off, em_int64 a_bs,
                                em_int64 a_rs, em_int64 a_cs,
                                EM_GLOBAL EM_T *b, em_int64 b_off, em_int64 b_bs,
                                em_int64 b_rs, em_int64 b_cs, int lower, int unit, int conj) {
    for (em_int64 t = EM_GID(); t < batch * k; t += EM_GSIZE()) {
        const em_int64 bi = t / k, c = t % k;
        EM_GLOBAL const EM_T *A = a + a_off + bi * a_bs;
        EM_GLOBAL EM_T *B = b + b_off + bi * b_bs + c * b_cs;
        for (em_int64 s = 0; s < n; s++) {
            const em_int64 i = lower ? s : n - 1 - s;
            EM_CT x = B[i * b_rs];
            const em_int64 q0 = lower ? 0 : i + 1, q1 = lower ? i : n;
            for (em_int64 q = q0; q < q1; q++) {
                EM_CT l = A[i * a_rs + q * a_cs];
                if (conj) l = EM_LA_CONJ(l);
                if (EM_LA_NZ(l)) x = EM_LA_SUB(x, EM_LA_MUL(l, B[q * b_rs]));
            }
            if (!unit) {
                EM_CT d = A[i * a_rs + i * a_cs];
                x = EM_LA_DIV(x, conj ? EM_LA_CONJ(d) : d);
            }
            B[i * b_rs] = x;
        }
    }
}

/* The row interchanges of LU pivots piv (batch, n; 1-based) applied to each b (batch,
 * n, k): in order (P^T b), or in reverse (P b) when `reverse`; one work-item per column. */
EM_KERNEL void EM_NAME(la_laswp)(em_int64 batch, em_int64 n, em_int64 k, EM_GLOBAL EM_T *b,
                                 EM_GLOBAL const em_int32 *piv, int reverse) {
    for (em_int64 t = EM_GID(); t < batch * k; t += EM_GSIZE()) {
        const em_int64 bi = t / k, c = t % k;
        EM_GLOBAL EM_T *B = b + bi * n * k + c;
        EM_GLOBAL const em_int32 *P = piv + bi * n;
        for (em_int64 s = 0; s < n; s++) {
            const em_int64 i = reverse ? n - 1 - s : s, p = P[i] - 1;
            if (p != i) {
                EM_CT x = B[i * k];
                B[i * k] = B[p * k];
                B[p * k] = x;
            }
        }
    }
}


/* LAPACK's larfg (zlarfg) on the column (alpha, x) = p[0], p[ld], ..., p[(len - 1) ld]
 * by the whole work-group: H^H (alpha, x) = (beta, 0) with H = I - tau v v^H, v = (1,
 * x / (alpha - beta)), beta = -sign(Re alpha) ||(alpha, x)|| real, tau = (beta - alpha)
 * / beta. x is scaled to v in place; tau is returned (0 when H = I: x = 0 and alpha
 * real) and beta stored at *beta; the caller writes them. ||x|| is scaled by its
 * largest magnitude (|re| + |im|: no overflow or underflow, as the CPU's nrm2). */
EM_INLINE EM_T EM_NAME(la_larfg)(EM_LPTR EM_LA_R *buf, EM_GLOBAL EM_T *p, em_int64 ld,
                                 em_int64 len, EM_LA_R *beta) {
    const int lid = EM_LID(), ls = EM_LSIZE();
    const EM_T alpha = p[0];
    EM_LA_R mx = 0;
    for (em_int64 i = 1 + lid; i < len; i += ls) {
        const EM_LA_R t = EM_LA_ABS1(p[i * ld]);
        mx = (t > mx || t != t) ? t : mx;
    }
    mx = EM_NAME(group_max)(buf, mx);
    EM_LA_R ss = 0;
    if (mx != 0)
        for (em_int64 i = 1 + lid; i < len; i += ls) ss += EM_LA_ABS2(EM_LA_RDIV(p[i * ld], mx));
    ss = EM_NAME(group_sum)(buf, ss);
    const EM_LA_R xnorm = mx != 0 ? mx * sqrt(ss) : (EM_LA_R)0;
    const EM_LA_R are = EM_LA_RE(alpha);
    if (xnorm == 0 && EM_LA_IS_REAL(alpha)) {
        *beta = are;
        return EM_LA_ZERO;
    }
    const EM_LA_R b = -copysign(hypot(EM_LA_ABS(alpha), xnorm), are);
    const EM_T scal = EM_LA_DIV(EM_LA_OF_RE(1), EM_LA_MAKE(are - b, EM_LA_IM(alpha)));
    for (em_int64 i = 1 + lid; i < len; i += ls) p[i * ld] = EM_LA_MUL(p[i * ld], scal);
    *beta = b;
    return EM_LA_MAKE((b - are) / b, -EM_LA_IM(alpha) / b);
}

/* Householder QR steps j0 .. j1-1 of each a (batch, m, n) in place (R on and above the
 * diagonal, the reflectors' vectors below it, la_larfg's), each H_j^H applied to the
 * columns up to ce-1 (all of them, or the panel's when the host blocks); tau (batch,
 * min(m, n)). One work-group per matrix in global memory, the reflector applied a
 * column per work-item. */
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
                A[j * n + j] = EM_LA_OF_RE(beta);
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

/* The explicit V (batch, m - j0, jb) of the reflectors j0 .. j0+jb-1 stored in a
 * (batch, m, n): ones on its diagonal, zeros above (the blocked QR's larfb). */
EM_KERNEL void EM_NAME(la_qr_v)(em_int64 batch, em_int64 m, em_int64 n, em_int64 j0,
                                em_int64 jb, EM_GLOBAL const EM_T *a, EM_GLOBAL EM_T *v) {
    const em_int64 r = m - j0, per = r * jb;
    for (em_int64 t = EM_GID(); t < batch * per; t += EM_GSIZE()) {
        const em_int64 bi = t / per, e = t % per, i = e / jb, c = e % jb;
        v[t] = i == c ? EM_LA_OF_RE(1) : i > c ? a[bi * m * n + (j0 + i) * n + j0 + c] : EM_LA_ZERO;
    }
}

/* The upper triangular T (batch, jb, jb) of the block reflector H_j0 ... H_j0+jb-1 =
 * I - V T V^H (LAPACK's larft, forward, column by column: T[c, c] = tau_c, T[:c, c] =
 * -tau_c T[:c, :c] G[:c, c]) from G = V^H V (batch, jb, jb, the host's GEMM) and tau
 * (batch, k); a work-group per matrix, the rows of a column in parallel. */
EM_KERNEL void EM_NAME(la_larft)(em_int64 batch, em_int64 k, em_int64 j0, em_int64 jb,
                                 EM_GLOBAL const EM_T *tau, EM_GLOBAL const EM_T *g,
                                 EM_GLOBAL EM_T *t) {
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {
        EM_GLOBAL EM_T *T = t + b * jb * jb;
        EM_GLOBAL const EM_T *G = g + b * jb * jb;
        for (em_int64 e = lid; e < jb * jb; e += ls) T[e] = EM_LA_ZERO;
        EM_BARRIER();
        for (em_int64 c = 0; c < jb; c++) {
            const EM_T tc = tau[b * k + j0 + c];
            for (em_int64 r = lid; r <= c; r += ls) {
                EM_T x = EM_LA_ZERO;
                for (em_int64 q = r; q < c; q++) x = EM_LA_ADD(x, EM_LA_MUL(T[r * jb + q], G[q * jb + c]));
                T[r * jb + c] = r == c ? tc : EM_LA_MUL(EM_LA_NEG(tc), x);
            }
            EM_BARRIER();
        }
    }
}

/* c (batch, m, p) <- Q c (Q^H c when trans), Q = H_0 ... H_{k-1}, H_i = I - tau_i v_i
 * v_i^H with v_i below the diagonal of column i of v (batch, m, nv) (1 on it), tau
 * (batch, k): one work-item per column of c, the reflectors one after the other (the
 * last first for Q c; conj(tau_i) for Q^H). */
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
 * H_{n-3}, H_j = I - tau_j v_j v_j^H (LAPACK's gehd2; the reflector of column j from
 * rows j+1.., la_larfg): a <- H, zeros below its subdiagonal, the vectors v_j (1 at
 * row j+1, implicit) in column j of v (batch, n, n) below row j+1, tau (batch, n). One
 * work-group per matrix in global memory: H_j^H applied from the left a column per
 * work-item, then H_j from the right a row per work-item. */
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
            /* the rows la_larfg scaled on this work-item */
            for (em_int64 i = j + 2 + lid; i < n; i += ls) {
                Vb[i * n + j] = A[i * n + j];
                A[i * n + j] = EM_LA_ZERO;
            }
            if (lid == 0) {     /* before the barrier: PoCL 3 lost these writes after it */
                tau[b * n + j] = tj;
                A[(j + 1) * n + j] = EM_LA_OF_RE(beta);
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

/* Pair k of round r of the round-robin (circle) ordering of n2 (even) indices, stored
 * at pp[slot], qq[slot]: over n2 - 1 rounds every pair (p < q) meets once, the n2 / 2
 * pairs of a round disjoint. */
EM_INLINE void EM_NAME(la_pair)(int r, int k, int n2, EM_LPTR int *pp, EM_LPTR int *qq,
                                int slot) {
    int p, q;
    if (k == 0) {
        p = r;
        q = n2 - 1;
    } else {
        p = (r + k) % (n2 - 1);
        q = (r - k + n2 - 1) % (n2 - 1);
    }
    pp[slot] = p < q ? p : q;
    qq[slot] = p < q ? q : p;
}

/* The Jacobi rotation (c, s) -> (cs[k], sn[k]) that zeroes the off-diagonal of the
 * symmetric 2 x 2 [[app, apq], [apq, aqq]] (Rutishauser's: t = sign(tau) / (|tau| +
 * sqrt(1 + tau^2)), tau = (aqq - app) / (2 apq), c = 1 / sqrt(1 + t^2), s = t c); (1, 0)
 * when |apq| <= tol sqrt(|app aqq|). Returns whether it rotates. */
EM_INLINE int EM_NAME(la_jacobi)(EM_LA_R app, EM_LA_R aqq, EM_LA_R apq, EM_LA_R tol,
                                 EM_LPTR EM_LA_R *cs, EM_LPTR EM_LA_R *sn, int k) {
    EM_LA_R c = 1, s = 0;
    const int rotate = apq != 0 && !(fabs(apq) <= tol * sqrt(fabs(app) * fabs(aqq)));
    if (rotate) {
        const EM_LA_R tau = (aqq - app) / (2 * apq);
        const EM_LA_R t = (tau >= 0 ? (EM_LA_R)1 : (EM_LA_R)-1) / (fabs(tau) + hypot((EM_LA_R)1, tau));
        c = 1 / sqrt(1 + t * t);
        s = t * c;
    }
    cs[k] = c;
    sn[k] = s;
    return rotate;
}

/* The rotation of the pair p, q of the symmetric (Hermitian) 2 x 2 [[app, apq],
 * [conj(apq), aqq]] (app, aqq real): real, la_jacobi's; complex, the phase u = apq /
 * |apq| (ph[k]) makes it real under D = diag(1, conj(u)), then la_jacobi's rotation G
 * of |apq|: J = D G, applied as rows p, q <- J^H (EM_LA_ROT with z = u) and columns p,
 * q <- J (z = conj(u)). */
EM_INLINE int EM_NAME(la_rotation)(EM_LA_R app, EM_LA_R aqq, EM_T apq, EM_LA_R tol,
                                   EM_LPTR EM_LA_R *cs, EM_LPTR EM_LA_R *sn,
                                   EM_LPTR EM_T *ph, int k) {
#if EM_LA_COMPLEX
    const EM_LA_R g = hypot(apq.re, apq.im);
    ph[k] = g != 0 ? EM_LA_MAKE(apq.re / g, apq.im / g) : EM_LA_MAKE(1, 0);
    return EM_NAME(la_jacobi)(app, aqq, g, tol, cs, sn, k);
#else
    (void)ph;
    return EM_NAME(la_jacobi)(app, aqq, apq, tol, cs, sn, k);
#endif
}

/* x, y <- c x - s z y, s x + c z y (real: z is 1, not read) */
#define EM_LA_ROT(X, Y, c, s, z)                                                      \
    do {                                                                             \
        const EM_LA_R c_ = (c), s_ = (s);                                            \
        const EM_T x_ = (X), zy_ = EM_LA_PHASE(z, (Y));                              \
        (X) = EM_LA_SUB(EM_LA_SCALE(x_, c_), EM_LA_SCALE(zy_, s_));                  \
        (Y) = EM_LA_ADD(EM_LA_SCALE(x_, s_), EM_LA_SCALE(zy_, c_));                  \
    } while (0)

/* Eigenvalues (w (batch, n) real, ascending) and, when `vectors`, eigenvectors (written
 * over a, as columns) of each symmetric (Hermitian, its diagonal real) a (batch, n, n):
 * cyclic Jacobi by a work-group per matrix on A and V (n x n each: local arrays for
 * la_syevj_small, global workspace for la_syevj). Each round rotates the n/2 disjoint
 * pairs (p, q) of la_pair (CH at a time: disjoint rotations commute), rows then columns
 * (la_rotation's; the diagonal kept real); a pair whose |a_pq| <= eps sqrt(|a_pp
 * a_qq|) is not rotated, and a sweep without a rotation ends the iteration. info: 0, 1
 * (not converged in EM_LA_SWEEPS sweeps) or -1 (a non-finite entry), as the CPU's.
 * BAR: the barrier that orders A and V. */
#define EM_LA_SYEVJ(A, V, CH, BAR)                                                    \
    const int lid = EM_LID(), ls = EM_LSIZE();                                       \
    const int nn = (int)n, n2 = nn + (nn & 1), np_ = n2 / 2;                         \
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {                    \
        EM_GLOBAL EM_T *ab = a + b * n * n;                                          \
        if (lid == 0) bad[0] = 0;                                                    \
        BAR();                                                                       \
        for (int e = lid; e < nn * nn; e += ls) {                                    \
            const EM_T x = ab[e];                                                    \
            A[e] = x;                                                                \
            V[e] = EM_LA_OF_RE(e / nn == e % nn ? 1 : 0);                            \
            if (EM_LA_ABS1(x) * 0 != 0) bad[0] = 1;          /* inf or NaN */        \
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
                        if (q < nn ? EM_NAME(la_rotation)(EM_LA_RE(A[p * nn + p]),   \
                                                          EM_LA_RE(A[q * nn + q]),   \
                                                          A[p * nn + q], EM_LA_EPS,  \
                                                          cs, sn, ph, k)             \
                                   : EM_NAME(la_rotation)(1, 1, EM_LA_ZERO, EM_LA_EPS, \
                                                          cs, sn, ph, k))            \
                            rot[0] = 1;                                              \
                    }                                                                \
                    BAR();                                                           \
                    for (int e = lid; e < nk * nn; e += ls) {      /* rows p, q */   \
                        const int k = e / nn, col = e % nn;                          \
                        if (sn[k] != 0) {                                            \
                            const int p = pp[k], q = qq[k];                          \
                            EM_LA_ROT(A[p * nn + col], A[q * nn + col], cs[k], sn[k], ph[k]); \
                        }                                                            \
                    }                                                                \
                    BAR();                                                           \
                    for (int e = lid; e < nk * nn; e += ls) {      /* columns p, q */\
                        const int k = e / nn, row = e % nn;                          \
                        if (sn[k] != 0) {                                            \
                            const int p = pp[k], q = qq[k];                          \
                            EM_LA_ROT(A[row * nn + p], A[row * nn + q], cs[k], sn[k], \
                                      EM_LA_CONJ(ph[k]));                            \
                            /* the pair's entries zero, its diagonal real */         \
                            if (row == p) {                                          \
                                A[row * nn + q] = EM_LA_ZERO;                        \
                                EM_LA_DROP_IM(A[row * nn + p]);                      \
                            }                                                        \
                            if (row == q) {                                          \
                                A[row * nn + p] = EM_LA_ZERO;                        \
                                EM_LA_DROP_IM(A[row * nn + q]);                      \
                            }                                                        \
                            if (vectors)                                             \
                                EM_LA_ROT(V[row * nn + p], V[row * nn + q], cs[k], sn[k], \
                                          EM_LA_CONJ(ph[k]));                        \
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
            const EM_LA_R d = EM_LA_RE(A[i * nn + i]);                               \
            int rank = 0;                                                            \
            for (int j = 0; j < nn; j++) {                                           \
                const EM_LA_R x = EM_LA_RE(A[j * nn + j]);                           \
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
                                       EM_GLOBAL EM_LA_R *w, EM_GLOBAL em_int32 *info,
                                       int vectors) {
    EM_LOCAL EM_T A[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL EM_T V[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL EM_LA_R cs[EM_LA_SMALL / 2];
    EM_LOCAL EM_LA_R sn[EM_LA_SMALL / 2];
    EM_LOCAL EM_T ph[EM_LA_SMALL / 2];
    EM_LOCAL int pp[EM_LA_SMALL / 2];
    EM_LOCAL int qq[EM_LA_SMALL / 2];
    EM_LOCAL int rot[1];
    EM_LOCAL int bad[1];
    EM_LA_SYEVJ(A, V, EM_LA_SMALL / 2, EM_BARRIER)
}

/* Any n: A and V in the workspace ws (2 n^2 per work-group, EM_NGROUPS() of them),
 * EM_LA_GROUP pairs of a round at a time. O(n^3) per sweep in one work-group. */
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
    EM_LA_SYEVJ(A, V, EM_LA_GROUP, EM_LA_GBARRIER)
}

/* The SVD A = U diag(S) Vh of each a (batch, m, n), k = min(m, n): sv (batch, k) real,
 * descending and, when `vectors`, u (batch, m, k) and vh (batch, k, n); a is not
 * written. One-sided (Hestenes) Jacobi, a work-group per matrix: the k columns of W = A
 * (A^H when m < n; L = max(m, n) rows), scaled by max |a| (|re| + |im|), are rotated
 * in round-robin pairs (la_rotation of their Gram matrix [[|w_p|^2, w_p^H w_q], [.,
 * |w_q|^2]]; CH pairs at a time) until every pair is orthogonal to tol = L eps
 * (|w_p^H w_q| <= tol |w_p| |w_q|, LAPACK gesvj's), the rotations accumulated in V (k x
 * k). A column of norm <= tol ||W||_F is rounding noise (the other columns of a
 * rank-deficient A: rotating it never meets the test, its rounding being its size):
 * it is not rotated and its singular value is 0. Then S = the column norms (SIG, k,
 * real), U = the normalised columns (W^H gives Vh when m < n, V gives U). A column of
 * norm 0 is completed to an orthonormal one (Gram-Schmidt of unit vectors, twice).
 * info as la_syevj's. W, V, SIG: local arrays (la_gesvj_small) or global workspace
 * (la_gesvj); BAR orders them. */
#define EM_LA_GESVJ(W, V, SIG, CH, BAR)                                               \
    const int lid = EM_LID(), ls = EM_LSIZE();                                       \
    const int tall = m >= n;                                                         \
    const int L = (int)(tall ? m : n), k = (int)(tall ? n : m);                      \
    const int k2 = k + (k & 1), np_ = k2 / 2;                                        \
    const EM_LA_R tol = EM_LA_EPS * L;                                               \
    for (em_int64 b = EM_GROUP(); b < batch; b += EM_NGROUPS()) {                    \
        EM_GLOBAL const EM_T *A = a + b * m * n;                                     \
        EM_LA_R mx = 0;                                                              \
        for (int e = lid; e < L * k; e += ls) {                                      \
            const int i = e / k, j = e % k;                                          \
            const EM_T x = tall ? A[i * n + j] : EM_LA_CONJ(A[j * n + i]);           \
            W[e] = x;                                                                \
            const EM_LA_R t = EM_LA_ABS1(x);       /* NaN in either part stays NaN */ \
            mx = (t > mx || t != t) ? t : mx;                                        \
        }                                                                            \
        for (int e = lid; e < k * k; e += ls) V[e] = EM_LA_OF_RE(e / k == e % k ? 1 : 0); \
        mx = EM_NAME(group_max)(buf, mx);                                            \
        const int bad = mx * 0 != 0;                                                 \
        const EM_LA_R scale = (bad || mx == 0) ? (EM_LA_R)1 : mx;                    \
        EM_LA_R f2 = 0;                                                              \
        for (int e = lid; e < L * k; e += ls) {                                      \
            W[e] = EM_LA_RDIV(W[e], scale);                                          \
            f2 += EM_LA_ABS2(W[e]);                                                  \
        }                                                                            \
        /* a column of norm <= tol ||W||_F is rounding noise (zero for the rest) */  \
        const EM_LA_R small2 = tol * tol * EM_NAME(group_sum)(buf, f2);              \
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
                        EM_LA_R al = 1, be = 1;                                      \
                        EM_T ga = EM_LA_ZERO;                                        \
                        if (q < k) {                                                 \
                            al = be = 0;                                             \
                            for (int i = 0; i < L; i++) {                            \
                                const EM_T x = W[i * k + p], y = W[i * k + q];       \
                                al += EM_LA_ABS2(x);                                 \
                                be += EM_LA_ABS2(y);                                 \
                                ga = EM_LA_ADD(ga, EM_LA_CMUL(x, y));                \
                            }                                                        \
                            if (al <= small2 || be <= small2) ga = EM_LA_ZERO;       \
                        }                                                            \
                        if (EM_NAME(la_rotation)(al, be, ga, tol, cs, sn, ph, kk)) rot[0] = 1; \
                    }                                                                \
                    BAR();                                                           \
                    for (int e = lid; e < nk * (L + k); e += ls) {                   \
                        const int kk = e / (L + k), i = e % (L + k);                 \
                        const EM_LA_R c = cs[kk], s = sn[kk];                        \
                        if (s != 0 && (i < L || vectors)) {                          \
                            const int p = pp[kk], q = qq[kk];                        \
                            const int rp = i < L ? i * k + p : L * k + (i - L) * k + p, \
                                      rq = rp + q - p;                               \
                            /* (PoCL ran the 8 x 8 real SVD 1.6x slower with the     \
                               rotation as EM_LA_ROT on two address expressions) */  \
                            if (i < L) {                                             \
                                const EM_T x = W[rp], y = W[rq];                     \
                                const EM_T zy = EM_LA_PHASE(EM_LA_CONJ(ph[kk]), y);  \
                                W[rp] = EM_LA_SUB(EM_LA_SCALE(x, c), EM_LA_SCALE(zy, s)); \
                                W[rq] = EM_LA_ADD(EM_LA_SCALE(x, s), EM_LA_SCALE(zy, c)); \
                            } else {                                                 \
                                const EM_T x = V[rp - L * k], y = V[rq - L * k];     \
                                const EM_T zy = EM_LA_PHASE(EM_LA_CONJ(ph[kk]), y);  \
                                V[rp - L * k] = EM_LA_SUB(EM_LA_SCALE(x, c), EM_LA_SCALE(zy, s)); \
                                V[rq - L * k] = EM_LA_ADD(EM_LA_SCALE(x, s), EM_LA_SCALE(zy, c)); \
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
            EM_LA_R t = 0;                                                           \
            for (int i = 0; i < L; i++) t += EM_LA_ABS2(W[i * k + j]);               \
            SIG[j] = t <= small2 ? (EM_LA_R)0 : sqrt(t);                             \
        }                                                                            \
        BAR();                                                                       \
        if (vectors) {                                                               \
            for (int e = lid; e < L * k; e += ls)                                    \
                if (SIG[e % k] != 0) W[e] = EM_LA_RDIV(W[e], SIG[e % k]);            \
            BAR();                                                                   \
            if (lid == 0)                                                            \
                for (int j = 0; j < k; j++) {                                        \
                    if (SIG[j] != 0) continue;                                       \
                    for (int t = 0; t < L; t++) {                                    \
                        for (int i = 0; i < L; i++) W[i * k + j] = EM_LA_OF_RE(i == t ? 1 : 0); \
                        for (int pass = 0; pass < 2; pass++)                         \
                            for (int o = 0; o < k; o++) {                            \
                                if (o == j || !(SIG[o] != 0 || o < j)) continue;     \
                                EM_T d = EM_LA_ZERO;                                 \
                                for (int i = 0; i < L; i++)                          \
                                    d = EM_LA_ADD(d, EM_LA_CMUL(W[i * k + o], W[i * k + j])); \
                                for (int i = 0; i < L; i++)                          \
                                    W[i * k + j] = EM_LA_SUB(W[i * k + j], EM_LA_MUL(d, W[i * k + o])); \
                            }                                                        \
                        EM_LA_R nr = 0;                                              \
                        for (int i = 0; i < L; i++) nr += EM_LA_ABS2(W[i * k + j]);  \
                        nr = sqrt(nr);                                               \
                        /* the complement's dimension d >= 1 is sum_t |P e_t|^2, so  \
                           some t has |P e_t|^2 >= 1 / L */                          \
                        if (nr * nr * L > (EM_LA_R)0.5) {                            \
                            for (int i = 0; i < L; i++) W[i * k + j] = EM_LA_RDIV(W[i * k + j], nr); \
                            break;                                                   \
                        }                                                            \
                    }                                                                \
                }                                                                    \
            BAR();                                                                   \
        }                                                                            \
        for (int j = lid; j < k; j += ls) {                                          \
            const EM_LA_R d = SIG[j];                                                \
            int rank = 0;                                                            \
            for (int i = 0; i < k; i++) rank += (SIG[i] > d || (SIG[i] == d && i < j)) ? 1 : 0; \
            sv[b * k + rank] = d * scale;                                            \
            if (vectors) {                                                           \
                EM_GLOBAL EM_T *U = u + b * m * k;                                   \
                EM_GLOBAL EM_T *Vh = vh + b * k * n;                                 \
                for (int i = 0; i < (int)m; i++)                                     \
                    U[i * k + rank] = tall ? W[i * k + j] : V[i * k + j];            \
                for (int c = 0; c < (int)n; c++)                                     \
                    Vh[rank * n + c] = EM_LA_CONJ(tall ? V[c * k + j] : W[c * k + j]); \
            }                                                                        \
        }                                                                            \
        if (lid == 0) info[b] = bad ? -1 : (k > 1 && rot[0]) ? 1 : 0;               \
        BAR();                                                                       \
    }

/* max(m, n) <= EM_LA_SMALL: W, V and the norms in local memory, every pair at once. */
EM_KERNEL void EM_NAME(la_gesvj_small)(em_int64 batch, em_int64 m, em_int64 n,
                                       EM_GLOBAL const EM_T *a, EM_GLOBAL EM_LA_R *sv,
                                       EM_GLOBAL EM_T *u, EM_GLOBAL EM_T *vh,
                                       EM_GLOBAL em_int32 *info, int vectors) {
    EM_LOCAL EM_T W[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL EM_T V[EM_LA_SMALL * EM_LA_SMALL];
    EM_LOCAL EM_LA_R sig[EM_LA_SMALL];
    EM_LOCAL EM_LA_R cs[EM_LA_SMALL / 2];
    EM_LOCAL EM_LA_R sn[EM_LA_SMALL / 2];
    EM_LOCAL EM_T ph[EM_LA_SMALL / 2];
    EM_LOCAL EM_LA_R buf[EM_LA_GROUP];
    EM_LOCAL int pp[EM_LA_SMALL / 2];
    EM_LOCAL int qq[EM_LA_SMALL / 2];
    EM_LOCAL int rot[1];
    EM_LA_GESVJ(W, V, sig, EM_LA_SMALL / 2, EM_BARRIER)
}

/* Any m, n: W (L x k), V (k x k) and the norms (k, real) in the workspace ws (L k + k^2
 * + k per work-group, EM_NGROUPS() of them), EM_LA_GROUP pairs of a round at a time. */
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
    EM_GLOBAL EM_LA_R *sig = (EM_GLOBAL EM_LA_R *)(V + k_ * k_);
    EM_LA_GESVJ(W, V, sig, EM_LA_GROUP, EM_LA_GBARRIER)
}
