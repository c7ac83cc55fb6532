/* The LU, Cholesky and triangular-solve kernels of the device linalg programs, for
 * real (programs/linalg.h) and complex (programs/linalg_complex.h) dtypes from one
 * text: the scalar arithmetic goes through the EM_LA_ macros below (complex: the
 * em_c*_ helpers of ember_complex.h). Included once per compile unit (one dtype).
 *
 * Two shapes of work. A small matrix (both dims <= EM_LA_SMALL) is factored by one
 * work-group in local memory from load to store (la_getrf_small, la_potrf_small: one
 * launch for the whole batch). A larger one is factored right-looking by blocks of
 * columns: the panel kernels (la_getrf_panel, la_potrf_panel) factor one block column
 * in global memory, one work-group per matrix, and the host updates the trailing
 * matrix with the device GEMM between them. The LU steps and the Cholesky steps are
 * written once (EM_LA_GETF2, EM_LA_POTF2) for both address spaces; they follow the
 * CPU's getf2/potrf step for step (the same pivot choice: LAPACK's |re| + |im| for
 * complex, the same order of the sums), so info and the pivots are the CPU's. At the
 * end, what both programs' eigensolvers share: the global-memory barrier, the
 * round-robin pairs and the 2 x 2 Jacobi rotation (real; the complex one is it after a
 * phase). */
#ifndef EM_LA_SMALL
#define EM_LA_SMALL 32
#define EM_LA_GROUP 64
#define EM_LA_NONE 0x7fffffff
#define EM_LA_SWEEPS 40
#endif

#undef EM_LA_R
#undef EM_LA_MUL
#undef EM_LA_SUB
#undef EM_LA_DIV
#undef EM_LA_CONJ
#undef EM_LA_ABS1
#undef EM_LA_NZ
#undef EM_LA_ZERO
#undef EM_LA_RE
#undef EM_LA_OF_RE
#if defined(EM_DT_complex64) || defined(EM_DT_complex128)
#if defined(EM_DT_complex64)
#define EM_LA_R float
#define EM_LA_CX(f) em_c##f##_complex64
#else
#define EM_LA_R double
#define EM_LA_CX(f) em_c##f##_complex128
#endif
#define EM_LA_MUL(a, b) EM_LA_CX(mul)(a, b)
#define EM_LA_SUB(a, b) EM_LA_CX(sub)(a, b)
#define EM_LA_DIV(a, b) EM_LA_CX(div)(a, b)
#define EM_LA_CONJ(a) EM_LA_CX(conj)(a)
#define EM_LA_ABS1(a) (fabs((a).re) + fabs((a).im))   /* LAPACK's cabs1 */
#define EM_LA_NZ(a) EM_LA_CX(nz)(a)
#define EM_LA_ZERO EM_LA_CX(make)(0, 0)
#define EM_LA_RE(a) ((a).re)
#define EM_LA_OF_RE(x) EM_LA_CX(make)(x, 0)
#else
#define EM_LA_R EM_CT
#define EM_LA_MUL(a, b) ((a) * (b))
#define EM_LA_SUB(a, b) ((a) - (b))
#define EM_LA_DIV(a, b) ((a) / (b))
#define EM_LA_CONJ(a) (a)
#define EM_LA_ABS1(a) fabs(a)
#define EM_LA_NZ(a) ((a) != 0)
#define EM_LA_ZERO ((EM_CT)0)
#define EM_LA_RE(a) (a)
#define EM_LA_OF_RE(x) ((EM_CT)(x))
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

/* The real and complex eigensolvers' shared parts. A barrier that also orders the
 * work-group's global memory (the Hessenberg reduction and the Jacobi kernels of any
 * size keep their matrices there; CUDA's __syncthreads() already does). */
#if defined(__OPENCL_VERSION__)
#define EM_LA_GBARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#else
#define EM_LA_GBARRIER() __syncthreads()
#endif

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
