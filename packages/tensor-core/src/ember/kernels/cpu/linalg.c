/* Dense linear algebra for ember.linalg (declarations and conventions: linalg.h).
 *
 * LU, triangular solves and Cholesky are LAPACK's recursive algorithms (getrf2, potrf2
 * and a recursive trsm: each level one GEMM of half the order, so nearly all the work
 * is in large GEMMs), QR the blocked right-looking one (compact WY), all over ember's
 * GEMM, written once over the element type in linalg_impl.h and included here per
 * dtype. Their unblocked leaves (LU panels copied to a column-major buffer, the
 * triangular solves' diagonal blocks) are compiled per instruction set (LEAF_CLONES);
 * matrices up to SMALL_N use paths without workspace or GEMM, and up to SMALL_UNROLL
 * one copy per order (SMALL_CASES), so a batch of small matrices pays no per-matrix
 * allocation or loop overhead. The eigensolvers and the SVD (symmetric: Householder
 * tridiagonalisation + implicit QL with Wilkinson shifts, EISPACK's tred2/tql2, for
 * small matrices; from SYEVD_MIN rows blocked tridiagonalisation, divide and conquer
 * and blocked back-transformation, LAPACK's syevd;
 * SVD: Golub-Kahan bidiagonalisation + implicit-shift QR, LINPACK's dsvdc, for small
 * matrices; from GESDD_MIN columns blocked bidiagonalisation, Gu and Eisenstat's
 * divide and conquer for the vectors and blocked back-transformation, LAPACK's gesdd;
 * nonsymmetric: Householder reduction to Hessenberg form + Francis double-shift QR
 * and back-substitution for the eigenvectors, EISPACK's orthes/hqr2) work in double
 * for both real dtypes: float32 inputs are widened into the double workspace, so
 * their results are as accurate as float32 can hold.
 *
 * Batches: matrices below BATCH_ALONE rows are shared out over the thread pool by
 * batch entry (nested GEMMs then run on their own thread); larger ones run one after
 * the other with the pool inside their GEMMs. */

/* Complex products and quotients by Fortran's rules, as LAPACK computes them: C99's
 * recovery of infinities from NaN results costs a branch and a libgcc call per product
 * and keeps the complex loops from vectorising (quotients are still scaled against
 * overflow). First, so that the whole file is compiled alike (GCC does not inline
 * across differing optimize options). */
#pragma GCC optimize("cx-fortran-rules")
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>
#include "gemm.h"
#include "linalg.h"
#include "threads.h"

#define LU_LEAF 16   /* columns of the unblocked leaves of the recursive LU */
#define LU_PACK_MIN 64   /* from this many rows the LU's leaves are packed (getf2_packed) */
#define TRSM_NB 64   /* rows of trsm's diagonal blocks (solved by row operations) */
#define TRSM_KC 256  /* columns of b per pass of a diagonal block (in L1 with 4 rows) */
#define CHOL_LEAF 32 /* order of the recursive Cholesky's unblocked diagonal blocks */
#define CHOL_NB 256  /* columns per GEMM of its trailing update (lower triangle only) */
#define QR_NB 32
#define SMALL_N 32   /* up to this order: the small-matrix paths (no workspace, no GEMM) */
#define SMALL_UNROLL 8   /* up to this order they are compiled once per order */

/* STMT once per order 1 .. SMALL_UNROLL with NN that order, a constant, so that the
 * small kernels (inlined there) unroll completely: the batched small matrices pay no
 * loop overhead. 1 <= n <= SMALL_UNROLL. */
#define ALWAYS_INLINE __attribute__((always_inline))
#define SMALL_CASE(K, STMT) case K: { enum { NN = K }; STMT; } break;
#define SMALL_CASES(n, STMT) do { switch (n) {                                            \
    SMALL_CASE(1, STMT) SMALL_CASE(2, STMT) SMALL_CASE(3, STMT) SMALL_CASE(4, STMT)       \
    SMALL_CASE(5, STMT) SMALL_CASE(6, STMT) SMALL_CASE(7, STMT) SMALL_CASE(8, STMT)       \
    default: break; } } while (0)
#define BATCH_ALONE 96   /* matrices this large run alone (their GEMMs use the pool) */
#define MAXIT 60         /* QR/QL sweeps per eigenvalue or singular value */

/* The leaves of the blocked factorizations (row operations, panels) are compiled for
 * AVX-512, AVX2+FMA and the baseline, picked at load time; their GEMMs do the rest. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LEAF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", \
                                                 "default")))
#else
#define LEAF_CLONES
#endif

#define CPLX 0
#define T float
#define R float
#define SFX f32
#define DT 7
#include "linalg_impl.h"
#undef T
#undef R
#undef SFX
#undef DT

#define T double
#define R double
#define SFX f64
#define DT 8
#include "linalg_impl.h"
#undef T
#undef R
#undef SFX
#undef DT
#undef CPLX

/* the complex dtypes: C99 _Complex, laid out as em_complex64/128 (re, im) */
#define CPLX 1
#define T float _Complex
#define R float
#define SFX c64
#define DT 7
#include "linalg_impl.h"
#undef T
#undef R
#undef SFX
#undef DT

#define T double _Complex
#define R double
#define SFX c128
#define DT 8
#include "linalg_impl.h"
#undef T
#undef R
#undef SFX
#undef DT
#undef CPLX

static const double EPS = 0x1p-52, TINY = 0x1p-966;

/* sqrt(x^2 + y^2) directly where the squares can neither overflow nor underflow enough
 * to matter, else libm's hypot (scaled, but slow: it was a third of the time of a batch
 * of 8 x 8 eigh). The double-precision cores below call it as hypot. */
static inline double fast_hypot(double x, double y)
{
    double ax = fabs(x), ay = fabs(y), big = ax > ay ? ax : ay;
    if (big < 0x1p500 && big > 0x1p-500)
        return sqrt(ax * ax + ay * ay);
    return (hypot)(x, y);
}
#undef hypot
#define hypot fast_hypot

/* The double-precision cores are compiled for AVX2 (FMA) and the baseline, picked at
 * load time (GCC function multi-versioning, as the op table's loops). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

/* x . y in four partial sums: a reduction the compiler may vectorise without
 * reassociating (no -ffast-math). */
static inline double dot(const double *x, const double *y, int64_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i] * y[i];
        s1 += x[i + 1] * y[i + 1];
        s2 += x[i + 2] * y[i + 2];
        s3 += x[i + 3] * y[i + 3];
    }
    for (; i < n; i++) s0 += x[i] * y[i];
    return (s0 + s1) + (s2 + s3);
}

static inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline double dmax(double a, double b) { return a > b ? a : b; }

/* ------------------------------------------------------- symmetric eigensolver -- */

/* Eigenvalues d (ascending) and eigenvectors of a symmetric n x n matrix held in z,
 * where z[c * n + r] is element (r, c) of the matrix (on exit: of the eigenvector
 * matrix, column c the vector of d[c], so each vector is contiguous). e is n
 * elements of workspace. Returns 0 or 1 (no convergence). */
#define V(r, c) z[(c) * n + (r)]
CLONES static void tred2(double *z, double *d, double *e, int64_t n, int vectors)
{
    for (int64_t j = 0; j < n; j++) d[j] = V(n - 1, j);
    for (int64_t i = n - 1; i > 0; i--) {
        double scale = 0, h = 0;
        for (int64_t k = 0; k < i; k++) scale += fabs(d[k]);
        if (scale == 0) {
            e[i] = d[i - 1];
            for (int64_t j = 0; j < i; j++) {
                d[j] = V(i - 1, j);
                V(i, j) = 0;
                V(j, i) = 0;
            }
        } else {
            for (int64_t k = 0; k < i; k++) { d[k] /= scale; h += d[k] * d[k]; }
            double f = d[i - 1], g = sqrt(h);
            if (f > 0) g = -g;
            e[i] = scale * g;
            h -= f * g;
            d[i - 1] = f - g;
            for (int64_t j = 0; j < i; j++) e[j] = 0;
            for (int64_t j = 0; j < i; j++) {
                f = d[j];
                V(j, i) = f;
                g = e[j] + V(j, j) * f;
                double *col = &V(0, j);
                g += dot(col + j + 1, d + j + 1, i - 1 - j);
                for (int64_t k = j + 1; k <= i - 1; k++) e[k] += col[k] * f;
                e[j] = g;
            }
            f = 0;
            for (int64_t j = 0; j < i; j++) { e[j] /= h; f += e[j] * d[j]; }
            double hh = f / (h + h);
            for (int64_t j = 0; j < i; j++) e[j] -= hh * d[j];
            for (int64_t j = 0; j < i; j++) {
                f = d[j];
                g = e[j];
                double *col = &V(0, j);
                for (int64_t k = j; k <= i - 1; k++) col[k] -= f * e[k] + g * d[k];
                d[j] = V(i - 1, j);
                V(i, j) = 0;
            }
        }
        d[i] = h;
    }
    if (vectors) {
        for (int64_t i = 0; i < n - 1; i++) {
            V(n - 1, i) = V(i, i);
            V(i, i) = 1;
            double h = d[i + 1];
            double *ci1 = &V(0, i + 1);
            if (h != 0) {
                for (int64_t k = 0; k <= i; k++) d[k] = ci1[k] / h;
                for (int64_t j = 0; j <= i; j++) {
                    double *cj = &V(0, j);
                    double g = dot(ci1, cj, i + 1);
                    for (int64_t k = 0; k <= i; k++) cj[k] -= g * d[k];
                }
            }
            for (int64_t k = 0; k <= i; k++) ci1[k] = 0;
        }
        for (int64_t j = 0; j < n; j++) {
            d[j] = V(n - 1, j);
            V(n - 1, j) = 0;
        }
    } else {
        for (int64_t j = 0; j < n; j++) d[j] = V(j, j);
    }
    V(n - 1, n - 1) = 1;
    e[0] = 0;
}

CLONES static int tql2(double *z, double *d, double *e, int64_t n, int vectors)
{
    for (int64_t i = 1; i < n; i++) e[i - 1] = e[i];
    e[n - 1] = 0;
    double f = 0, tst1 = 0;
    for (int64_t l = 0; l < n; l++) {
        tst1 = dmax(tst1, fabs(d[l]) + fabs(e[l]));
        int64_t m = l;
        while (m < n) {
            if (fabs(e[m]) <= EPS * tst1) break;
            m++;
        }
        if (m == n) m = n - 1;   /* e[n-1] is 0: not reached */
        if (m > l) {
            int iter = 0;
            do {
                if (++iter > MAXIT) return 1;
                double g = d[l];
                double p = (d[l + 1] - g) / (2 * e[l]);
                double r = hypot(p, 1.0);
                if (p < 0) r = -r;
                d[l] = e[l] / (p + r);
                d[l + 1] = e[l] * (p + r);
                double dl1 = d[l + 1];
                double h = g - d[l];
                for (int64_t i = l + 2; i < n; i++) d[i] -= h;
                f += h;
                p = d[m];
                double c = 1, c2 = 1, c3 = 1, el1 = e[l + 1], s = 0, s2 = 0;
                for (int64_t i = m - 1; i >= l; i--) {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    g = c * e[i];
                    h = c * p;
                    r = hypot(p, e[i]);
                    e[i + 1] = s * r;
                    s = e[i] / r;
                    c = p / r;
                    p = c * d[i] - s * g;
                    d[i + 1] = h + s * (c * g + s * d[i]);
                    if (vectors) {
                        double *vi = &V(0, i), *vi1 = &V(0, i + 1);
                        for (int64_t k = 0; k < n; k++) {
                            h = vi1[k];
                            vi1[k] = s * vi[k] + c * h;
                            vi[k] = c * vi[k] - s * h;
                        }
                    }
                }
                p = -s * s2 * c3 * el1 * e[l] / dl1;
                e[l] = s * p;
                d[l] = c * p;
            } while (fabs(e[l]) > EPS * tst1);
        }
        d[l] += f;
        e[l] = 0;
    }
    /* ascending, the vectors along (selection sort: n swaps of contiguous columns) */
    for (int64_t i = 0; i < n - 1; i++) {
        int64_t k = i;
        double p = d[i];
        for (int64_t j = i + 1; j < n; j++)
            if (d[j] < p) { k = j; p = d[j]; }
        if (k != i) {
            d[k] = d[i];
            d[i] = p;
            if (vectors) {
                double *vi = &V(0, i), *vk = &V(0, k);
                for (int64_t j = 0; j < n; j++) { double t = vi[j]; vi[j] = vk[j]; vk[j] = t; }
            }
        }
    }
    return 0;
}
#undef V

/* -------------------------------------- symmetric eigensolver, large matrices -- */

/* For n >= SYEVD_MIN (LAPACK's syevd): blocked Householder tridiagonalisation
 * (sytrd with latrd panels: each panel's reflectors accumulated in V and W and the
 * trailing lower triangle updated by A -= V W^T + W V^T in GEMMs), Cuppen's divide and
 * conquer on the tridiagonal matrix (stedc: the merges' eigenvectors by Gu and
 * Eisenstat's formula, so they are orthogonal, and their products with the halves'
 * eigenvectors in GEMMs), and the back-transformation by the reflectors in blocks
 * (ormqr's compact WY form). Smaller matrices keep tred2/tql2 above. */
#define SYEVD_MIN 48
#define SYTRD_NB 32
#define DC_LEAF 24

/* sytrd (hetrd_f64) and larfg_f64 */
#define T double
#define R double
#define SFX f64
#define CPLX 0
#include "linalg_herm.h"
#undef T
#undef R
#undef SFX
#undef CPLX

/* One root of the secular equation 1/rho + sum_j z_j^2 / (dl_j - lam) = 0 (rho > 0, dl
 * ascending, K poles): the i-th, in (dl_i, dl_{i+1}) (the last in (dl_{K-1}, dl_{K-1} +
 * rho)). It is found as an offset tau from the nearer pole, so that delta_j = dl_j - lam
 * = (dl_j - dl_org) - tau is accurate for every j (Gu and Eisenstat need it), by the
 * two-pole rational model of each side (Bunch, Nielsen and Sorensen), safeguarded by
 * bisection of a bracket. */
static double secular(int64_t K, const double *dl, const double *zl, double rho, int64_t i,
                      double *delta)
{
    double rinv = 1 / rho, lo, hi;
    int64_t org;
    if (i < K - 1) {
        double mid = 0.5 * (dl[i] + dl[i + 1]), gap = dl[i + 1] - dl[i], f = rinv;
        for (int64_t j = 0; j < K; j++) f += zl[j] * zl[j] / (dl[j] - mid);
        if (f >= 0) { org = i; lo = 0; hi = 0.5 * gap; }
        else { org = i + 1; lo = -0.5 * gap; hi = 0; }
    } else {
        double zz = 0;
        for (int64_t j = 0; j < K; j++) zz += zl[j] * zl[j];
        org = K - 1; lo = 0; hi = rho * zz * (1 + 4 * EPS) + TINY;
    }
    double base = dl[org], tau = 0.5 * (lo + hi);
    for (int it = 0; it < 200; it++) {
        double psi = 0, dpsi = 0, phi = 0, dphi = 0;
        for (int64_t j = 0; j <= i; j++) {
            double t = zl[j] / ((dl[j] - base) - tau);
            psi += zl[j] * t;
            dpsi += t * t;
        }
        for (int64_t j = i + 1; j < K; j++) {
            double t = zl[j] / ((dl[j] - base) - tau);
            phi += zl[j] * t;
            dphi += t * t;
        }
        double f = rinv + psi + phi;
        if (f == 0) break;
        if (f < 0) lo = tau; else hi = tau;
        if (fabs(f) <= 4 * EPS * (double)K * (rinv + phi - psi)) break;
        double da = (dl[i] - base) - tau, x = NAN;
        if (i < K - 1) {
            double db = (dl[i + 1] - base) - tau;
            double q = dpsi * da * da, s = dphi * db * db, c = f - dpsi * da - dphi * db;
            /* c (da - x)(db - x) + q (db - x) + s (da - x) = 0, the root in (da, db) */
            double Bq = -(c * (da + db) + q + s), Cq = c * da * db + q * db + s * da;
            if (c == 0) {
                x = Bq != 0 ? -Cq / Bq : NAN;
            } else {
                double disc = Bq * Bq - 4 * c * Cq;
                double sq = sqrt(disc > 0 ? disc : 0), qq = -0.5 * (Bq + copysign(sq, Bq));
                double x1 = qq / c, x2 = qq != 0 ? Cq / qq : x1;
                x = (x1 > da && x1 < db) ? x1 : x2;
            }
        } else {
            double q = dpsi * da * da, c = f - dpsi * da;   /* f ~ c + q / (da - x) */
            if (c != 0) x = da + q / c;
        }
        double tn = tau + x;
        if (!(tn > lo && tn < hi)) tn = 0.5 * (lo + hi);
        double step = fabs(tn - tau);
        tau = tn;
        if (step <= 2 * EPS * fabs(tau) || hi - lo <= 4 * EPS * dmax(fabs(lo), fabs(hi)))
            break;
    }
    for (int64_t j = 0; j < K; j++) delta[j] = (dl[j] - base) - tau;
    return base + tau;
}

typedef struct { double v; int64_t src; } dc_pair;
static int dc_cmp(const void *x, const void *y)
{
    double a = ((const dc_pair *)x)->v, b = ((const dc_pair *)y)->v;
    return a < b ? -1 : a > b;
}

/* The merge of stedc: d[0:n1] and d[n1:n] the eigenvalues (ascending) of the halves,
 * q (n x n of ld ldq, column-major) block diagonal with their eigenvectors; the
 * coupling beta. On exit d and q are the eigenpairs of the whole, ascending. */
static int dc_merge(double *d, double *q, int64_t ldq, int64_t n, int64_t n1, double beta)
{
    double sg = beta < 0 ? -1 : 1, rho = fabs(beta);
    size_t nn = (size_t)n;
    double *buf = (double *)malloc((5 * nn + 4 * nn * nn) * sizeof(double));
    int64_t *ib = (int64_t *)malloc(4 * nn * sizeof(int64_t));
    dc_pair *pr = (dc_pair *)malloc(nn * sizeof(dc_pair));
    if (!buf || !ib || !pr) { free(buf); free(ib); free(pr); return EM_LINALG_ENOMEM; }
    double *z = buf, *dl = z + n, *zl = dl + n, *lam = zl + n, *zh = lam + n;
    double *M1 = zh + n, *M2 = M1 + nn * nn, *M3 = M2 + nn * nn, *M4 = M3 + nn * nn;
    int64_t *perm = ib, *nd = perm + n, *df = nd + n, *typ = df + n;
    for (int64_t j = 0; j < n1; j++) z[j] = q[j * ldq + n1 - 1];
    for (int64_t j = n1; j < n; j++) z[j] = sg * q[j * ldq + n1];
    double zn = 0, dmx = 0, zmx = 0;
    for (int64_t j = 0; j < n; j++) zn += z[j] * z[j];
    zn = sqrt(zn);
    if (zn > 0) for (int64_t j = 0; j < n; j++) z[j] /= zn;
    rho *= zn * zn;
    for (int64_t j = 0; j < n; j++) {
        typ[j] = j < n1 ? 1 : 3;
        dmx = dmax(dmx, fabs(d[j]));
        zmx = dmax(zmx, fabs(z[j]));
    }
    {   /* merge the two ascending halves */
        int64_t a = 0, b = n1;
        for (int64_t t = 0; t < n; t++)
            perm[t] = (b >= n || (a < n1 && d[a] <= d[b])) ? a++ : b++;
    }
    double tol = 8 * EPS * dmax(dmx, zmx);
    int64_t K = 0, ndf = 0, pj = -1;
    for (int64_t t = 0; t < n; t++) {
        int64_t nj = perm[t];
        if (rho * fabs(z[nj]) <= tol) { df[ndf++] = nj; continue; }
        if (pj < 0) { pj = nj; continue; }
        double s = z[pj], c = z[nj], tau = hypot(c, s), tt = d[nj] - d[pj];
        c /= tau;
        s = -s / tau;
        if (fabs(tt * c * s) <= tol) {
            /* two close poles: a rotation zeros z[pj], which deflates */
            z[nj] = tau;
            z[pj] = 0;
            double *x = q + pj * ldq, *y = q + nj * ldq;
            for (int64_t r = 0; r < n; r++) {
                double xr = x[r], yr = y[r];
                x[r] = c * xr + s * yr;
                y[r] = c * yr - s * xr;
            }
            if (typ[pj] != typ[nj]) typ[pj] = typ[nj] = 2;
            double tv = d[pj] * c * c + d[nj] * s * s;
            d[nj] = d[pj] * s * s + d[nj] * c * c;
            d[pj] = tv;
            df[ndf++] = pj;
            pj = nj;
        } else {
            nd[K++] = pj;
            pj = nj;
        }
    }
    if (pj >= 0) nd[K++] = pj;
    /* the rotations may have moved poles past each other by rounding: keep them sorted */
    for (int64_t a = 1; a < K; a++) {
        int64_t v = nd[a], b = a;
        while (b > 0 && d[nd[b - 1]] > d[v]) { nd[b] = nd[b - 1]; b--; }
        nd[b] = v;
    }
    double *Dm = M1;     /* Dm[i * K + j] = dl_j - lam_i */
    for (int64_t j = 0; j < K; j++) { dl[j] = d[nd[j]]; zl[j] = z[nd[j]]; }
    for (int64_t i = 0; i < K; i++) lam[i] = secular(K, dl, zl, rho, i, Dm + i * K);
    /* Gu-Eisenstat: the z for which the computed lam are exact eigenvalues */
    for (int64_t j = 0; j < K; j++) {
        double w = -Dm[j * K + j] / rho;
        for (int64_t k = 0; k < K; k++)
            if (k != j) w *= -Dm[k * K + j] / (dl[k] - dl[j]);
        zh[j] = copysign(sqrt(fabs(w)), zl[j]);
    }
    /* the secular problem's eigenvectors: Vs (K x K, row-major), column i for lam_i */
    double *Vs = M2;
    for (int64_t i = 0; i < K; i++) {
        double nr = 0;
        for (int64_t j = 0; j < K; j++) {
            double v = zh[j] / Dm[i * K + j];
            Vs[j * K + i] = v;
            nr += v * v;
        }
        nr = 1 / sqrt(nr);
        for (int64_t j = 0; j < K; j++) Vs[j * K + i] *= nr;
    }
    /* Qn (n x K, column-major) = Q[:, nd] Vs: the top rows from the columns nonzero
     * there (types 1, 2), the bottom rows from types 2, 3 */
    double *Qn = M3, *G = M1, *Vg = M4;   /* Dm is no longer needed */
    int64_t n2 = n - n1;
    for (int half = 0; half < 2 && K; half++) {
        int64_t r0 = half ? n1 : 0, nr = half ? n2 : n1, kk = 0;
        for (int64_t j = 0; j < K; j++) {
            int64_t c = nd[j];
            if (typ[c] == (half ? 1 : 3)) continue;
            memcpy(G + kk * nr, q + c * ldq + r0, (size_t)nr * sizeof(double));
            memcpy(Vg + kk * K, Vs + j * K, (size_t)K * sizeof(double));
            kk++;
        }
        if (kk == 0) {
            for (int64_t i = 0; i < K; i++) memset(Qn + i * n + r0, 0, (size_t)nr * 8);
        } else if (em_gemm(8, nr, K, kk, 1.0, G, 1, nr, Vg, K, 1, 0.0, Qn + r0, 1, n)) {
            free(buf); free(ib); free(pr);
            return EM_LINALG_ENOMEM;
        }
    }
    /* everything ascending: the roots (Qn's columns) and the deflated (q's) */
    for (int64_t i = 0; i < K; i++) { pr[i].v = lam[i]; pr[i].src = i; }
    for (int64_t t = 0; t < ndf; t++) { pr[K + t].v = d[df[t]]; pr[K + t].src = -1 - df[t]; }
    qsort(pr, nn, sizeof(dc_pair), dc_cmp);
    double *out = M2;    /* Vs is no longer needed */
    for (int64_t t = 0; t < n; t++) {
        int64_t s = pr[t].src;
        memcpy(out + t * n, s >= 0 ? Qn + s * n : q + (-1 - s) * ldq, nn * sizeof(double));
    }
    for (int64_t t = 0; t < n; t++) {
        d[t] = pr[t].v;
        memcpy(q + t * ldq, out + t * n, nn * sizeof(double));
    }
    free(buf); free(ib); free(pr);
    return 0;
}

/* Eigenpairs of the tridiagonal (d, e) (e[i] couples i and i + 1): d ascending, q
 * (n x n of ld ldq, column-major, zero on entry) the eigenvectors. 1 = no convergence
 * of a leaf's QL. */
static int stedc_rec(double *d, double *e, double *q, int64_t ldq, int64_t n)
{
    if (n <= DC_LEAF) {
        double z[DC_LEAF * DC_LEAF], e2[DC_LEAF];
        memset(z, 0, sizeof z);
        for (int64_t i = 0; i < n; i++) z[i * n + i] = 1;
        e2[0] = 0;
        for (int64_t i = 1; i < n; i++) e2[i] = e[i - 1];
        if (tql2(z, d, e2, n, 1)) return 1;
        for (int64_t c = 0; c < n; c++) memcpy(q + c * ldq, z + c * n, (size_t)n * 8);
        return 0;
    }
    int64_t n1 = n / 2;
    double beta = e[n1 - 1];
    d[n1 - 1] -= fabs(beta);
    d[n1] -= fabs(beta);
    int rc = stedc_rec(d, e, q, ldq, n1);
    if (!rc) rc = stedc_rec(d + n1, e + n1, q + n1 * ldq + n1, ldq, n - n1);
    if (!rc) rc = dc_merge(d, q, ldq, n, n1, beta);
    return rc;
}

/* The eigenpairs of a symmetric n x n matrix (z, any layout: symmetric), n >= 1:
 * w ascending, and when vectors, vout (n x n row-major, the eigenvectors as columns).
 * Returns 0, 1 (no convergence) or EM_LINALG_ENOMEM. */
static int syevd(double *z, int64_t n, double *w, double *vout, int vectors)
{
    size_t nn = (size_t)n;
    double *ws = (double *)malloc((4 * SYTRD_NB * nn + 3 * nn) * sizeof(double));
    if (!ws) return EM_LINALG_ENOMEM;
    double *e = ws + 4 * SYTRD_NB * nn, *tau = e + n, *e2 = tau + n;
    int rc = hetrd_f64(z, n, w, e, tau, ws);
    if (rc) { free(ws); return rc; }
    if (!vectors) {
        e2[0] = 0;
        for (int64_t i = 1; i < n; i++) e2[i] = e[i - 1];
        rc = tql2(z, w, e2, n, 0);
        free(ws);
        return rc;
    }
    double *qd = (double *)calloc(nn * nn, sizeof(double));
    double *R = (double *)malloc(nn * nn * sizeof(double));
    if (!qd || !R) { free(ws); free(qd); free(R); return EM_LINALG_ENOMEM; }
    /* scaled to max |T| = 1 (the merges' tolerances are absolute) */
    double sc = 0;
    for (int64_t i = 0; i < n; i++) sc = dmax(sc, fabs(w[i]));
    for (int64_t i = 0; i + 1 < n; i++) sc = dmax(sc, fabs(e[i]));
    if (sc > 0) {
        for (int64_t i = 0; i < n; i++) w[i] /= sc;
        for (int64_t i = 0; i + 1 < n; i++) e[i] /= sc;
    }
    rc = stedc_rec(w, e, qd, n, n);
    if (sc > 0) for (int64_t i = 0; i < n; i++) w[i] *= sc;
    if (!rc) {
        /* Z row-major into vout, then vout[1:, :] <- Q' vout[1:, :] with the reflectors
         * of column i in row i of R ((n-1) x (n-1) row-major, ormqr's layout) */
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < n; c++) vout[r * n + c] = qd[c * n + r];
        int64_t m1 = n - 1;
        for (int64_t c = 0; c < m1; c++)
            for (int64_t r = c + 1; r < m1; r++) R[r * m1 + c] = z[c * n + r + 1];
        if (m1 > 0) rc = ormqr_f64(R, m1, m1, m1, tau, vout + n, n, 0);
    }
    free(ws); free(qd); free(R);
    return rc;
}

/* ------------------------------------------------------------------------- SVD -- */

/* A (m x n, m >= n >= 1, column-major: a[j * m + i]) = U diag(s) V^T, s descending
 * (n values), U m x n and V n x n column-major. a is destroyed; e is n and work m
 * elements. Returns 0 or 1 (no convergence). */
CLONES static int svd_iter(double *s, double *e, int64_t m, int64_t n, int64_t p,
                           double *u, double *v, int want);

CLONES static int svd_core(double *a, int64_t m, int64_t n, double *s, double *u, double *v,
                    int want, double *e, double *work)
{
#define A(i, j) a[(j) * m + (i)]
#define U(i, j) u[(j) * m + (i)]
#define Vm(i, j) v[(j) * n + (i)]
    int64_t nu = n;
    int64_t nct = imin(m - 1, n), nrt = imax(0, imin(n - 2, m));
    for (int64_t k = 0; k < imax(nct, nrt); k++) {
        if (k < nct) {
            /* the k-th column's reflector; s[k] its diagonal */
            double *ak = &A(0, k);
            s[k] = 0;
            for (int64_t i = k; i < m; i++) s[k] = hypot(s[k], ak[i]);
            if (s[k] != 0) {
                if (ak[k] < 0) s[k] = -s[k];
                for (int64_t i = k; i < m; i++) ak[i] /= s[k];
                ak[k] += 1;
            }
            s[k] = -s[k];
        }
        for (int64_t j = k + 1; j < n; j++) {
            double *aj = &A(0, j);
            if (k < nct && s[k] != 0) {
                double *ak = &A(0, k);
                double t = -dot(ak + k, aj + k, m - k) / ak[k];
                for (int64_t i = k; i < m; i++) aj[i] += t * ak[i];
            }
            e[j] = aj[k];
        }
        if (want && k < nct)
            for (int64_t i = k; i < m; i++) U(i, k) = A(i, k);
        if (k < nrt) {
            /* the k-th row's reflector; e[k] the superdiagonal */
            e[k] = 0;
            for (int64_t i = k + 1; i < n; i++) e[k] = hypot(e[k], e[i]);
            if (e[k] != 0) {
                if (e[k + 1] < 0) e[k] = -e[k];
                for (int64_t i = k + 1; i < n; i++) e[i] /= e[k];
                e[k + 1] += 1;
            }
            e[k] = -e[k];
            if (k + 1 < m && e[k] != 0) {
                for (int64_t i = k + 1; i < m; i++) work[i] = 0;
                for (int64_t j = k + 1; j < n; j++) {
                    const double *aj = &A(0, j);
                    double ej = e[j];
                    for (int64_t i = k + 1; i < m; i++) work[i] += ej * aj[i];
                }
                for (int64_t j = k + 1; j < n; j++) {
                    double *aj = &A(0, j);
                    double t = -e[j] / e[k + 1];
                    for (int64_t i = k + 1; i < m; i++) aj[i] += t * work[i];
                }
            }
            if (want)
                for (int64_t i = k + 1; i < n; i++) Vm(i, k) = e[i];
        }
    }
    int64_t p = imin(n, m + 1);
    if (nct < n) s[nct] = A(nct, nct);
    if (m < p) s[p - 1] = 0;
    if (nrt + 1 < p) e[nrt] = A(nrt, p - 1);
    e[p - 1] = 0;
    if (want) {
        for (int64_t j = nct; j < nu; j++) {
            for (int64_t i = 0; i < m; i++) U(i, j) = 0;
            U(j, j) = 1;
        }
        for (int64_t k = nct - 1; k >= 0; k--) {
            double *uk = &U(0, k);
            if (s[k] != 0) {
                for (int64_t j = k + 1; j < nu; j++) {
                    double *uj = &U(0, j);
                    double t = -dot(uk + k, uj + k, m - k) / uk[k];
                    for (int64_t i = k; i < m; i++) uj[i] += t * uk[i];
                }
                for (int64_t i = k; i < m; i++) uk[i] = -uk[i];
                uk[k] = 1 + uk[k];
                for (int64_t i = 0; i < k - 1; i++) uk[i] = 0;
            } else {
                for (int64_t i = 0; i < m; i++) uk[i] = 0;
                uk[k] = 1;
            }
        }
        for (int64_t k = n - 1; k >= 0; k--) {
            double *vk = &Vm(0, k);
            if (k < nrt && e[k] != 0) {
                for (int64_t j = k + 1; j < nu; j++) {
                    double *vj = &Vm(0, j);
                    double t = -dot(vk + k + 1, vj + k + 1, n - k - 1) / vk[k + 1];
                    for (int64_t i = k + 1; i < n; i++) vj[i] += t * vk[i];
                }
            }
            for (int64_t i = 0; i < n; i++) vk[i] = 0;
            vk[k] = 1;
        }
    }
    return svd_iter(s, e, m, n, p, u, v, want);
#undef A
#undef U
#undef Vm
}

/* The implicit-shift QR iteration on the bidiagonal (s, e) of order p (e[p - 1] = 0),
 * the rotations applied to U (m x n) and V (n x n, column-major) when want. */
CLONES static int svd_iter(double *s, double *e, int64_t m, int64_t n, int64_t p, double *u,
                           double *v, int want)
{
#define U(i, j) u[(j) * m + (i)]
#define Vm(i, j) v[(j) * n + (i)]
    int64_t pp = p - 1;
    int iter = 0;
    while (p > 0) {
        int64_t k, kase;
        if (iter > MAXIT) return 1;
        for (k = p - 2; k >= -1; k--) {
            if (k == -1) break;
            if (fabs(e[k]) <= TINY + EPS * (fabs(s[k]) + fabs(s[k + 1]))) {
                e[k] = 0;
                break;
            }
        }
        if (k == p - 2) {
            kase = 4;
        } else {
            int64_t ks;
            for (ks = p - 1; ks >= k; ks--) {
                if (ks == k) break;
                double t = (ks != p ? fabs(e[ks]) : 0.) + (ks != k + 1 ? fabs(e[ks - 1]) : 0.);
                if (fabs(s[ks]) <= TINY + EPS * t) {
                    s[ks] = 0;
                    break;
                }
            }
            if (ks == k) kase = 3;
            else if (ks == p - 1) kase = 1;
            else { kase = 2; k = ks; }
        }
        k++;
        switch (kase) {
        case 1: {          /* deflate a negligible s[p-1] */
            double f = e[p - 2];
            e[p - 2] = 0;
            for (int64_t j = p - 2; j >= k; j--) {
                double t = hypot(s[j], f), cs = s[j] / t, sn = f / t;
                s[j] = t;
                if (j != k) {
                    f = -sn * e[j - 1];
                    e[j - 1] = cs * e[j - 1];
                }
                if (want) {
                    double *vj = &Vm(0, j), *vp = &Vm(0, p - 1);
                    for (int64_t i = 0; i < n; i++) {
                        t = cs * vj[i] + sn * vp[i];
                        vp[i] = -sn * vj[i] + cs * vp[i];
                        vj[i] = t;
                    }
                }
            }
        } break;
        case 2: {          /* split at a negligible s[k] */
            double f = e[k - 1];
            e[k - 1] = 0;
            for (int64_t j = k; j < p; j++) {
                double t = hypot(s[j], f), cs = s[j] / t, sn = f / t;
                s[j] = t;
                f = -sn * e[j];
                e[j] = cs * e[j];
                if (want) {
                    double *uj = &U(0, j), *uk = &U(0, k - 1);
                    for (int64_t i = 0; i < m; i++) {
                        t = cs * uj[i] + sn * uk[i];
                        uk[i] = -sn * uj[i] + cs * uk[i];
                        uj[i] = t;
                    }
                }
            }
        } break;
        case 3: {          /* one QR step, shifted by the trailing 2 x 2's eigenvalue */
            double scale = dmax(dmax(dmax(dmax(fabs(s[p - 1]), fabs(s[p - 2])),
                                          fabs(e[p - 2])), fabs(s[k])), fabs(e[k]));
            double sp = s[p - 1] / scale, spm1 = s[p - 2] / scale, epm1 = e[p - 2] / scale;
            double sk = s[k] / scale, ek = e[k] / scale;
            double b = ((spm1 + sp) * (spm1 - sp) + epm1 * epm1) / 2.0;
            double c = (sp * epm1) * (sp * epm1), shift = 0;
            if (b != 0 || c != 0) {
                shift = sqrt(b * b + c);
                if (b < 0) shift = -shift;
                shift = c / (b + shift);
            }
            double f = (sk + sp) * (sk - sp) + shift, g = sk * ek;
            for (int64_t j = k; j < p - 1; j++) {
                double t = hypot(f, g), cs = f / t, sn = g / t;
                if (j != k) e[j - 1] = t;
                f = cs * s[j] + sn * e[j];
                e[j] = cs * e[j] - sn * s[j];
                g = sn * s[j + 1];
                s[j + 1] = cs * s[j + 1];
                if (want) {
                    double *vj = &Vm(0, j), *vj1 = &Vm(0, j + 1);
                    for (int64_t i = 0; i < n; i++) {
                        t = cs * vj[i] + sn * vj1[i];
                        vj1[i] = -sn * vj[i] + cs * vj1[i];
                        vj[i] = t;
                    }
                }
                t = hypot(f, g);
                cs = f / t;
                sn = g / t;
                s[j] = t;
                f = cs * e[j] + sn * s[j + 1];
                s[j + 1] = -sn * e[j] + cs * s[j + 1];
                g = sn * e[j + 1];
                e[j + 1] = cs * e[j + 1];
                if (want && j < m - 1) {
                    double *uj = &U(0, j), *uj1 = &U(0, j + 1);
                    for (int64_t i = 0; i < m; i++) {
                        t = cs * uj[i] + sn * uj1[i];
                        uj1[i] = -sn * uj[i] + cs * uj1[i];
                        uj[i] = t;
                    }
                }
            }
            e[p - 2] = f;
            iter++;
        } break;
        case 4: {          /* convergence: make s[k] positive, order it */
            if (s[k] <= 0) {
                s[k] = s[k] < 0 ? -s[k] : 0;
                if (want)
                    for (int64_t i = 0; i <= pp; i++) Vm(i, k) = -Vm(i, k);
            }
            while (k < pp) {
                if (s[k] >= s[k + 1]) break;
                double t = s[k];
                s[k] = s[k + 1];
                s[k + 1] = t;
                if (want && k < n - 1) {
                    double *a1 = &Vm(0, k), *a2 = &Vm(0, k + 1);
                    for (int64_t i = 0; i < n; i++) { t = a1[i]; a1[i] = a2[i]; a2[i] = t; }
                }
                if (want && k < m - 1) {
                    double *a1 = &U(0, k), *a2 = &U(0, k + 1);
                    for (int64_t i = 0; i < m; i++) { t = a1[i]; a1[i] = a2[i]; a2[i] = t; }
                }
                k++;
            }
            iter = 0;
            p--;
        } break;
        }
    }
    return 0;
#undef U
#undef Vm
}

/* ------------------------------------------------ SVD, divide and conquer -- */

/* For vectors from GESDD_MIN columns (LAPACK's gesdd): Householder bidiagonalisation
 * (gebd2), the bidiagonal SVD by Gu and Eisenstat's divide and conquer (bdsdc: the
 * merges' secular equation 1 + sum z_j^2 / (d_j^2 - s^2) = 0 solved by the symmetric
 * solver's `secular` on the squared poles, the vectors by their formula so that they
 * are orthogonal, and their products with the halves' vectors in GEMMs), and the
 * back-transformation by the reflectors in blocks (ormqr). The rotations of the QR
 * iteration (dsvdc above) would cost 12 n^3 flops of level-1 work instead. */
#define GESDD_MIN 32
#define BD_LEAF 24

/* A subproblem is the upper bidiagonal B (n x (n + sqre)): d[i] at (i, i), e[i] at
 * (i, i + 1). Its SVD B = U [diag(d) 0] V^T has d ascending, U (n x n, ld ldu) and V
 * ((n + sqre) square, ld ldv), column-major; for sqre V's last column is B's null
 * vector. A leaf is the square [B; 0] by dsvdc: its zero row keeps the last left
 * vector e_n exactly (it deflates first and is never rotated again). */
static int bd_leaf(double *d, const double *e, int64_t n, int sqre, double *u, int64_t ldu,
                   double *v, int64_t ldv)
{
    enum { L = BD_LEAF + 1 };
    double a[L * L], uc[L * L], vc[L * L], s[L], ee[L], wk[L];
    int64_t N = n + sqre;
    memset(a, 0, sizeof a);
    memset(uc, 0, sizeof uc);
    memset(vc, 0, sizeof vc);
    for (int64_t i = 0; i < n; i++) {
        a[i * N + i] = d[i];
        if (i + 1 < N) a[(i + 1) * N + i] = e[i];
    }
    if (svd_core(a, N, N, s, uc, vc, 1, ee, wk)) return 1;
    for (int64_t c = 0; c < n; c++) {     /* ascending: column c is dsvdc's n - 1 - c */
        int64_t src = n - 1 - c;
        d[c] = s[src];
        memcpy(u + c * ldu, uc + src * N, (size_t)n * sizeof(double));
        memcpy(v + c * ldv, vc + src * N, (size_t)N * sizeof(double));
    }
    if (sqre) memcpy(v + n * ldv, vc + n * N, (size_t)N * sizeof(double));
    return 0;
}

typedef struct { double d, z; int64_t uc, vc; int fu, fv; } bd_item;
static int bd_cmp(const void *x, const void *y)
{
    double a = ((const bd_item *)x)->d, b = ((const bd_item *)y)->d;
    return a < b ? -1 : a > b;
}

/* The merge (dlasd1-3): d[0:nl] and d[nl+1:n] the halves' singular values, u and v
 * block diagonal with their vectors (the left half n_l x (n_l + 1), the right n_r x
 * (n_r + sqre)), alpha and beta the middle row's entries. With the middle row first
 * and the left half's null vector as column 0, U~^T B V~ = e_0 z^T + diag(0, d): its
 * SVD from the secular equation. Flags say which row blocks of U (top, middle,
 * bottom) and V (top, bottom) a column is nonzero in, so the GEMMs skip zeros. */
static int bd_merge(double *d, int64_t n, int sqre, double alpha, double beta, double *u,
                    int64_t ldu, double *v, int64_t ldv)
{
    int64_t nl = n / 2, nr = n - nl - 1, N = n + sqre;
    size_t nn = (size_t)N;
    bd_item *it = (bd_item *)malloc(nn * sizeof(bd_item));
    int64_t *nd = (int64_t *)malloc(nn * sizeof(int64_t));
    double *buf = (double *)malloc((4 * nn + 7 * nn * nn) * sizeof(double));
    if (!it || !nd || !buf) { free(it); free(nd); free(buf); return EM_LINALG_ENOMEM; }
    double *dl = buf, *zl = dl + N, *lam = zl + N, *zh = lam + N;
    double *Dm = zh + N, *Us = Dm + nn * nn, *Vs = Us + nn * nn, *Un = Vs + nn * nn,
           *Vn = Un + nn * nn, *G = Vn + nn * nn, *Wg = G + nn * nn;
    u[nl * ldu + nl] = 1;
    it[0] = (bd_item){0, alpha * v[nl * ldv + nl], nl, nl, 2, 1};
    double dmx = dmax(fabs(alpha), fabs(beta));
    for (int64_t i = 0; i < nl; i++) {
        it[1 + i] = (bd_item){d[i], alpha * v[i * ldv + nl], i, i, 1, 1};
        dmx = dmax(dmx, d[i]);
    }
    for (int64_t i = 0; i < nr; i++) {
        int64_t c = nl + 1 + i;
        it[1 + nl + i] = (bd_item){d[c], beta * v[c * ldv + nl + 1], c, c, 4, 2};
        dmx = dmax(dmx, d[c]);
    }
    if (sqre) {
        /* the right half's null vector, rotated into column 0: its z becomes 0 and it
         * is the merged problem's null vector */
        double zx = beta * v[(N - 1) * ldv + nl + 1], r = hypot(it[0].z, zx);
        if (r > 0) {
            double c = it[0].z / r, s = zx / r, *x = v + nl * ldv, *y = v + (N - 1) * ldv;
            for (int64_t q = 0; q < N; q++) {
                double xq = x[q], yq = y[q];
                x[q] = c * xq + s * yq;
                y[q] = c * yq - s * xq;
            }
            it[0].z = r;
            it[0].fv = 3;
        }
    }
    double tol = 8 * EPS * dmx;
    qsort(it + 1, (size_t)(n - 1), sizeof(bd_item), bd_cmp);
    if (fabs(it[0].z) <= tol) it[0].z = tol;
    if (n > 1 && it[1].d <= 0.5 * tol) it[1].d = 0.5 * tol;
    int64_t K = 0, pj = -1;
    nd[K++] = 0;
    for (int64_t t = 1; t < n; t++) {
        bd_item *y = it + t;
        if (fabs(y->z) <= tol) { y->z = 0; continue; }       /* deflated: z = 0 */
        if (pj < 0) { pj = t; continue; }
        bd_item *x = it + pj;
        if (y->d - x->d <= tol) {
            /* two close poles: a rotation zeros x's z, which deflates */
            double r = hypot(x->z, y->z), c = y->z / r, s = -x->z / r;
            double *xu = u + x->uc * ldu, *yu = u + y->uc * ldu;
            for (int64_t q = 0; q < n; q++) {
                double a = xu[q], b = yu[q];
                xu[q] = c * a + s * b;
                yu[q] = c * b - s * a;
            }
            double *xv = v + x->vc * ldv, *yv = v + y->vc * ldv;
            for (int64_t q = 0; q < N; q++) {
                double a = xv[q], b = yv[q];
                xv[q] = c * a + s * b;
                yv[q] = c * b - s * a;
            }
            x->fu = y->fu = x->fu | y->fu;
            x->fv = y->fv = x->fv | y->fv;
            y->z = r;
            x->z = 0;
        } else {
            nd[K++] = pj;
        }
        pj = t;
    }
    if (pj >= 0) nd[K++] = pj;
    for (int64_t j = 0; j < K; j++) {
        dl[j] = it[nd[j]].d * it[nd[j]].d;
        zl[j] = it[nd[j]].z;
    }
    for (int64_t i = 0; i < K; i++) lam[i] = secular(K, dl, zl, 1.0, i, Dm + i * K);
    /* Gu-Eisenstat: the z for which the computed roots are exact */
    for (int64_t j = 0; j < K; j++) {
        double w = -Dm[j * K + j];
        for (int64_t k = 0; k < K; k++)
            if (k != j) w *= -Dm[k * K + j] / (dl[k] - dl[j]);
        zh[j] = copysign(sqrt(fabs(w)), zl[j]);
    }
    /* the vectors of e_0 z^T + diag(d) (row-major K x K, column i for root i): right
     * z_j / (d_j^2 - s_i^2), left (-1, d_j z_j / (d_j^2 - s_i^2)) */
    for (int64_t i = 0; i < K; i++) {
        double nu = 0, nv = 0;
        for (int64_t j = 0; j < K; j++) {
            double x = zh[j] / Dm[i * K + j], y = j ? it[nd[j]].d * x : -1;
            Vs[j * K + i] = x;
            Us[j * K + i] = y;
            nv += x * x;
            nu += y * y;
        }
        nv = 1 / sqrt(nv);
        nu = 1 / sqrt(nu);
        for (int64_t j = 0; j < K; j++) { Vs[j * K + i] *= nv; Us[j * K + i] *= nu; }
    }
    /* Un (n x K) = U~[:, nd] Us and Vn (N x K) = V~[:, nd] Vs, by row blocks */
    int rc = 0;
    for (int side = 0; side < 2 && !rc; side++) {
        const double *S = side ? Vs : Us;
        double *out = side ? Vn : Un, *src = side ? v : u;
        int64_t ld = side ? ldv : ldu, rows = side ? N : n;
        int64_t r0s[3] = {0, nl, nl + 1}, nrs[3] = {nl, 1, n - nl - 1};
        int nb = 3;
        if (side) { r0s[1] = nl + 1; nrs[0] = nl + 1; nrs[1] = N - nl - 1; nb = 2; }
        for (int b = 0; b < nb && !rc; b++) {
            int64_t r0 = r0s[b], nrw = nrs[b], kk = 0;
            if (nrw <= 0) continue;
            for (int64_t j = 0; j < K; j++) {
                const bd_item *x = it + nd[j];
                if (!((side ? x->fv : x->fu) & (1 << b))) continue;
                memcpy(G + kk * nrw, src + (side ? x->vc : x->uc) * ld + r0,
                       (size_t)nrw * sizeof(double));
                memcpy(Wg + kk * K, S + j * K, (size_t)K * sizeof(double));
                kk++;
            }
            if (kk == 0) {
                for (int64_t i = 0; i < K; i++) memset(out + i * rows + r0, 0, (size_t)nrw * 8);
            } else if (em_gemm(8, nrw, K, kk, 1.0, G, 1, nrw, Wg, K, 1, 0.0, out + r0, 1, rows)) {
                rc = EM_LINALG_ENOMEM;
            }
        }
    }
    if (!rc) {
        /* everything ascending: the roots (Un's, Vn's columns) and the deflated */
        dc_pair *pr = (dc_pair *)malloc((size_t)n * sizeof(dc_pair));
        if (!pr) rc = EM_LINALG_ENOMEM;
        else {
            int64_t q = 0;
            char *isnd = (char *)calloc((size_t)n, 1);
            for (int64_t i = 0; i < K; i++) { pr[q].v = sqrt(lam[i]); pr[q++].src = i; }
            for (int64_t j = 0; j < K && isnd; j++) isnd[nd[j]] = 1;
            for (int64_t t = 0; t < n && isnd; t++)
                if (!isnd[t]) { pr[q].v = it[t].d; pr[q++].src = -1 - t; }
            if (!isnd) rc = EM_LINALG_ENOMEM;
            else {
                qsort(pr, (size_t)n, sizeof(dc_pair), dc_cmp);
                /* G, Wg (n x n, N x n) take the sorted columns, then back into u, v */
                for (int64_t t = 0; t < n; t++) {
                    int64_t s = pr[t].src;
                    const double *cu = s >= 0 ? Un + s * n : u + it[-1 - s].uc * ldu;
                    const double *cv = s >= 0 ? Vn + s * N : v + it[-1 - s].vc * ldv;
                    memcpy(G + t * n, cu, (size_t)n * sizeof(double));
                    memcpy(Wg + t * N, cv, nn * sizeof(double));
                }
                for (int64_t t = 0; t < n; t++) {
                    d[t] = pr[t].v;
                    memcpy(u + t * ldu, G + t * n, (size_t)n * sizeof(double));
                    memcpy(v + t * ldv, Wg + t * N, nn * sizeof(double));
                }
            }
            free(isnd);
            free(pr);
        }
    }
    free(it); free(nd); free(buf);
    return rc;
}

static int bd_rec(double *d, double *e, int64_t n, int sqre, double *u, int64_t ldu,
                  double *v, int64_t ldv)
{
    if (n <= BD_LEAF) return bd_leaf(d, e, n, sqre, u, ldu, v, ldv);
    int64_t nl = n / 2, nr = n - nl - 1;
    double alpha = d[nl], beta = e[nl];
    int rc = bd_rec(d, e, nl, 1, u, ldu, v, ldv);
    if (!rc) rc = bd_rec(d + nl + 1, e + nl + 1, nr, sqre, u + (nl + 1) * ldu + nl + 1, ldu,
                         v + (nl + 1) * ldv + nl + 1, ldv);
    if (!rc) rc = bd_merge(d, n, sqre, alpha, beta, u, ldu, v, ldv);
    return rc;
}

/* The upper bidiagonal (d, e) (n x n) = U diag(d) V^T: d descending, U and V (n x n,
 * column-major) written. Scaled to max 1 (the merges' tolerances are absolute). */
static int bdsdc(double *d, double *e, int64_t n, double *u, double *v)
{
    size_t nn = (size_t)n;
    memset(u, 0, nn * nn * sizeof(double));
    memset(v, 0, nn * nn * sizeof(double));
    double sc = 0;
    for (int64_t i = 0; i < n; i++) sc = dmax(sc, fabs(d[i]));
    for (int64_t i = 0; i + 1 < n; i++) sc = dmax(sc, fabs(e[i]));
    if (sc == 0) {
        for (int64_t i = 0; i < n; i++) { u[i * n + i] = v[i * n + i] = 1; d[i] = 0; }
        return 0;
    }
    for (int64_t i = 0; i < n; i++) d[i] /= sc;
    for (int64_t i = 0; i + 1 < n; i++) e[i] /= sc;
    int rc = bd_rec(d, e, n, 0, u, n, v, n);
    if (rc) return rc;
    for (int64_t i = 0; i < n; i++) d[i] *= sc;
    for (int64_t a = 0, b = n - 1; a < b; a++, b--) {     /* descending */
        double t = d[a]; d[a] = d[b]; d[b] = t;
        for (int64_t r = 0; r < n; r++) {
            t = u[a * n + r]; u[a * n + r] = u[b * n + r]; u[b * n + r] = t;
            t = v[a * n + r]; v[a * n + r] = v[b * n + r]; v[b * n + r] = t;
        }
    }
    return 0;
}

#define GEBRD_NB 32

/* Householder bidiagonalisation of a (m x n, row-major, m >= n): Q^T A P = B upper
 * bidiagonal (d, e); H_i's vector below A(i, i), G_i's right of A(i, i + 1), their
 * units implied (gebrd). Panels of GEBRD_NB by labrd: each column's reflectors see
 * the panel's earlier ones through X (m x nb) and Y (n x nb), and the trailing matrix
 * is updated once per panel, A22 -= V Y^T + X U^T, in two GEMMs; the last columns
 * unblocked (gebd2). ws holds (m + n) * GEBRD_NB + 2 * (m + n) doubles. */
CLONES static int gebrd(double *a, int64_t m, int64_t n, double *d, double *e, double *tq,
                        double *tp, double *ws)
{
#define A(i, j) a[(i) * n + (j)]
    const int64_t nb = GEBRD_NB;
    double *X = ws, *Y = X + m * nb, *t1 = Y + n * nb, *t2 = t1 + (m + n);
    int64_t i0 = 0;
    for (; n - i0 > 2 * nb; i0 += nb) {
        memset(X, 0, (size_t)(m * nb) * sizeof(double));
        memset(Y, 0, (size_t)(n * nb) * sizeof(double));
        for (int64_t j = 0; j < nb; j++) {
            int64_t i = i0 + j;
            /* column i (rows i:) with the panel's earlier reflectors applied */
            for (int64_t r = i; r < m; r++) {
                double acc = 0;
                for (int64_t q = 0; q < j; q++)
                    acc += A(r, i0 + q) * Y[i * nb + q] + X[r * nb + q] * A(i0 + q, i);
                A(r, i) -= acc;
            }
            tq[i] = larfg_f64(&A(i, i), &A(i + 1, i), m - i - 1, n);
            d[i] = A(i, i);
            A(i, i) = 1;
            /* Y(i+1:, j) = tau (A^T v - Y (V^T v) - U^T (X^T v)), v = A(i:, i) */
            double *yc = t2;
            for (int64_t c = i + 1; c < n; c++) yc[c] = 0;
            for (int64_t q = 0; q < j; q++) t1[q] = t1[nb + q] = 0;
            int64_t r = i;
            for (; r + 4 <= m; r += 4) {      /* four rows a pass: y is read once for them */
                double v0 = A(r, i), v1 = A(r + 1, i), v2 = A(r + 2, i), v3 = A(r + 3, i);
                const double *a0 = &A(r, 0), *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;
                for (int64_t c = i + 1; c < n; c++)
                    yc[c] += (v0 * a0[c] + v1 * a1[c]) + (v2 * a2[c] + v3 * a3[c]);
            }
            for (; r < m; r++) {
                double vr = A(r, i);
                const double *ar = &A(r, 0);
                for (int64_t c = i + 1; c < n; c++) yc[c] += vr * ar[c];
            }
            for (r = i; r < m && j; r++) {
                double vr = A(r, i);
                for (int64_t q = 0; q < j; q++) {
                    t1[q] += A(r, i0 + q) * vr;
                    t1[nb + q] += X[r * nb + q] * vr;
                }
            }
            for (int64_t c = i + 1; c < n; c++) {
                double acc = yc[c];
                for (int64_t q = 0; q < j; q++)
                    acc -= Y[c * nb + q] * t1[q] + A(i0 + q, c) * t1[nb + q];
                Y[c * nb + j] = tq[i] * acc;
            }
            /* row i (columns i+1:) with the panel's reflectors applied, this one too */
            for (int64_t c = i + 1; c < n; c++) {
                double acc = 0;
                for (int64_t q = 0; q <= j; q++) acc += Y[c * nb + q] * A(i, i0 + q);
                for (int64_t q = 0; q < j; q++) acc += A(i0 + q, c) * X[i * nb + q];
                A(i, c) -= acc;
            }
            tp[i] = larfg_f64(&A(i, i + 1), &A(i, i + 2), n - i - 2, 1);
            e[i] = A(i, i + 1);
            A(i, i + 1) = 1;
            /* X(i+1:, j) = tau (A u - V (Y^T u) - X (U u)), u = A(i, i+1:) */
            const double *uu = &A(i, i + 1);
            int64_t nu = n - i - 1;
            for (int64_t q = 0; q <= j; q++) {
                double acc = 0;
                for (int64_t c = i + 1; c < n; c++) acc += Y[c * nb + q] * A(i, c);
                t1[q] = acc;
            }
            for (int64_t q = 0; q < j; q++) t1[nb + q] = dot(&A(i0 + q, i + 1), uu, nu);
            for (int64_t r = i + 1; r < m; r += 4) {    /* four rows a pass: u read once */
                int64_t rb = imin(4, m - r);
                double s4[4] = {0, 0, 0, 0};
                if (rb == 4) {
                    const double *a0 = &A(r, i + 1), *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;
                    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                    for (int64_t c = 0; c < nu; c++) {
                        double x = uu[c];
                        s0 += a0[c] * x;
                        s1 += a1[c] * x;
                        s2 += a2[c] * x;
                        s3 += a3[c] * x;
                    }
                    s4[0] = s0; s4[1] = s1; s4[2] = s2; s4[3] = s3;
                } else {
                    for (int64_t q = 0; q < rb; q++) s4[q] = dot(&A(r + q, i + 1), uu, nu);
                }
                for (int64_t q = 0; q < rb; q++) X[(r + q) * nb + j] = s4[q];
            }
            for (int64_t r = i + 1; r < m; r++) {
                double acc = X[r * nb + j];
                for (int64_t q = 0; q <= j; q++) acc -= A(r, i0 + q) * t1[q];
                for (int64_t q = 0; q < j; q++) acc -= X[r * nb + q] * t1[nb + q];
                X[r * nb + j] = tp[i] * acc;
            }
        }
        /* A22 -= V Y^T + X U^T (rows, columns i0 + nb:) */
        int64_t k1 = i0 + nb, M2 = m - k1, N2 = n - k1;
        if (em_gemm(8, M2, N2, nb, -1.0, &A(k1, i0), n, 1, Y + k1 * nb, 1, nb, 1.0, &A(k1, k1),
                    n, 1) ||
            em_gemm(8, M2, N2, nb, -1.0, X + k1 * nb, nb, 1, &A(i0, k1), n, 1, 1.0, &A(k1, k1),
                    n, 1))
            return EM_LINALG_ENOMEM;
    }
    double *wk = t1;
    for (int64_t i = i0; i < n; i++) {
        /* the column reflector: H_i zeros A(i+1:, i) */
        double t = larfg_f64(&A(i, i), &A(i + 1 < m ? i + 1 : i, i), m - i - 1, n);
        tq[i] = t;
        d[i] = A(i, i);
        if (t != 0 && i + 1 < n) {      /* A(i:, i+1:) -= tau v (v^T A) */
            A(i, i) = 1;
            for (int64_t c = i + 1; c < n; c++) wk[c] = 0;
            for (int64_t r = i; r < m; r++) {
                double vr = A(r, i);
                const double *ar = &A(r, 0);
                for (int64_t c = i + 1; c < n; c++) wk[c] += vr * ar[c];
            }
            for (int64_t r = i; r < m; r++) {
                double vr = t * A(r, i);
                double *ar = &A(r, 0);
                for (int64_t c = i + 1; c < n; c++) ar[c] -= vr * wk[c];
            }
        }
        if (i + 1 >= n) continue;
        /* the row reflector: A(i+1:, i+1:) <- A G_i zeros A(i, i+2:) */
        t = larfg_f64(&A(i, i + 1), &A(i, i + 2 < n ? i + 2 : i + 1), n - i - 2, 1);
        tp[i] = t;
        e[i] = A(i, i + 1);
        if (t != 0) {
            A(i, i + 1) = 1;
            const double *vv = &A(i, i + 1);
            for (int64_t r = i + 1; r < m; r++) {
                double *ar = &A(r, i + 1);
                double acc = t * dot(ar, vv, n - i - 1);
                for (int64_t c = 0; c < n - i - 1; c++) ar[c] -= acc * vv[c];
            }
        }
    }
    return 0;
#undef A
}

/* a (m x n, row-major, m >= n >= 1, read only) = U diag(s) V^T with vectors: s (n)
 * descending, u (m x n) and vh (n x n) row-major. */
static int gesdd(const double *a0, int64_t m, int64_t n, double *s, double *u, double *vh)
{
    size_t mm = (size_t)m, nn = (size_t)n;
    double *a = (double *)malloc((mm * nn + 3 * nn + 3 * nn * nn +
                                  (mm + nn) * (GEBRD_NB + 2)) * sizeof(double));
    if (!a) return EM_LINALG_ENOMEM;
    double *tq = a + mm * nn, *tp = tq + n, *e = tp + n, *ub = e + n, *vb = ub + nn * nn,
           *P = vb + nn * nn, *ws = P + nn * nn;
    memcpy(a, a0, mm * nn * sizeof(double));
#define A(i, j) a[(i) * n + (j)]
    if (gebrd(a, m, n, s, e, tq, tp, ws)) { free(a); return EM_LINALG_ENOMEM; }
    int rc = bdsdc(s, e, n, ub, vb);
    if (!rc) {
        /* U = Q [Ub; 0]: the column reflectors are ormqr's layout already */
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < n; c++) u[r * n + c] = r < n ? ub[c * n + r] : 0;
        rc = ormqr_f64(a, m, n, n, tq, u, n, 0);
    }
    if (!rc) {
        /* V = P Vb, P = G_0 ... G_{n-2} with G_i's vector in A(i, i+1:) */
        int64_t m1 = n - 1;
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < n; c++) P[r * n + c] = vb[c * n + r];
        if (m1 > 0) {
            double *Rp = ub;     /* Ub is no longer needed */
            for (int64_t c = 0; c < m1; c++)
                for (int64_t r = c + 1; r < m1; r++) Rp[r * m1 + c] = A(c, r + 1);
            rc = ormqr_f64(Rp, m1, m1, m1, tp, P + n, n, 0);
        }
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < n; c++) vh[r * n + c] = P[c * n + r];
    }
#undef A
    free(a);
    return rc;
}

/* -------------------------------------------------- nonsymmetric eigensolver -- */

static inline void cdiv(double xr, double xi, double yr, double yi, double *cr, double *ci)
{
    double r, d;
    if (fabs(yr) > fabs(yi)) {
        r = yi / yr;
        d = yr + r * yi;
        *cr = (xr + r * xi) / d;
        *ci = (xi - r * xr) / d;
    } else {
        r = yr / yi;
        d = yi + r * yr;
        *cr = (r * xr + xi) / d;
        *ci = (r * xi - xr) / d;
    }
}

/* H (n x n row-major, h[i * n + j]) is reduced to Hessenberg form by Householder
 * similarities accumulated in V (row-major), then to real Schur form by the Francis
 * double-shift QR; the eigenvalues are d + i e, and (when vectors) V's columns the
 * eigenvectors in LAPACK's real form (unnormalised). ort: n of workspace. */
CLONES static int hqr_core(double *h, double *vv, double *d, double *e, double *ort, int64_t nn,
                    int vectors)
{
#define H(i, j) h[(i) * nn + (j)]
#define V(i, j) vv[(i) * nn + (j)]
    int64_t low = 0, high = nn - 1;
    for (int64_t m = low + 1; m <= high - 1; m++) {        /* orthes */
        double scale = 0;
        for (int64_t i = m; i <= high; i++) scale += fabs(H(i, m - 1));
        if (scale != 0) {
            double hh = 0;
            for (int64_t i = high; i >= m; i--) {
                ort[i] = H(i, m - 1) / scale;
                hh += ort[i] * ort[i];
            }
            double g = sqrt(hh);
            if (ort[m] > 0) g = -g;
            hh -= ort[m] * g;
            ort[m] -= g;
            for (int64_t j = m; j < nn; j++) {
                double f = 0;
                for (int64_t i = high; i >= m; i--) f += ort[i] * H(i, j);
                f /= hh;
                for (int64_t i = m; i <= high; i++) H(i, j) -= f * ort[i];
            }
            for (int64_t i = 0; i <= high; i++) {
                double f = 0;
                for (int64_t j = high; j >= m; j--) f += ort[j] * H(i, j);
                f /= hh;
                for (int64_t j = m; j <= high; j++) H(i, j) -= f * ort[j];
            }
            ort[m] *= scale;
            H(m, m - 1) = scale * g;
        }
    }
    for (int64_t i = 0; i < nn; i++)
        for (int64_t j = 0; j < nn; j++) V(i, j) = i == j;
    if (vectors) {
        for (int64_t m = high - 1; m >= low + 1; m--) {
            if (H(m, m - 1) != 0) {
                for (int64_t i = m + 1; i <= high; i++) ort[i] = H(i, m - 1);
                for (int64_t j = m; j <= high; j++) {
                    double g = 0;
                    for (int64_t i = m; i <= high; i++) g += ort[i] * V(i, j);
                    g = (g / ort[m]) / H(m, m - 1);
                    for (int64_t i = m; i <= high; i++) V(i, j) += g * ort[i];
                }
            }
        }
    }
    /* hqr2 */
    int64_t n = nn - 1;
    double exshift = 0, p = 0, q = 0, r = 0, s = 0, z = 0, t, w, x, y;
    double norm = 0;
    for (int64_t i = 0; i < nn; i++)
        for (int64_t j = imax(i - 1, 0); j < nn; j++) norm += fabs(H(i, j));
    int iter = 0;
    while (n >= low) {
        int64_t l = n;
        while (l > low) {
            s = fabs(H(l - 1, l - 1)) + fabs(H(l, l));
            if (s == 0) s = norm;
            if (fabs(H(l, l - 1)) < EPS * s) break;
            l--;
        }
        if (l == n) {
            H(n, n) += exshift;
            d[n] = H(n, n);
            e[n] = 0;
            n--;
            iter = 0;
        } else if (l == n - 1) {
            w = H(n, n - 1) * H(n - 1, n);
            p = (H(n - 1, n - 1) - H(n, n)) / 2.0;
            q = p * p + w;
            z = sqrt(fabs(q));
            H(n, n) += exshift;
            H(n - 1, n - 1) += exshift;
            x = H(n, n);
            if (q >= 0) {
                z = p >= 0 ? p + z : p - z;
                d[n - 1] = x + z;
                d[n] = d[n - 1];
                if (z != 0) d[n] = x - w / z;
                e[n - 1] = 0;
                e[n] = 0;
                x = H(n, n - 1);
                s = fabs(x) + fabs(z);
                p = x / s;
                q = z / s;
                r = sqrt(p * p + q * q);
                p /= r;
                q /= r;
                for (int64_t j = n - 1; j < nn; j++) {
                    z = H(n - 1, j);
                    H(n - 1, j) = q * z + p * H(n, j);
                    H(n, j) = q * H(n, j) - p * z;
                }
                for (int64_t i = 0; i <= n; i++) {
                    z = H(i, n - 1);
                    H(i, n - 1) = q * z + p * H(i, n);
                    H(i, n) = q * H(i, n) - p * z;
                }
                for (int64_t i = low; i <= high; i++) {
                    z = V(i, n - 1);
                    V(i, n - 1) = q * z + p * V(i, n);
                    V(i, n) = q * V(i, n) - p * z;
                }
            } else {
                d[n - 1] = x + p;
                d[n] = x + p;
                e[n - 1] = z;
                e[n] = -z;
            }
            n -= 2;
            iter = 0;
        } else {
            x = H(n, n);
            y = 0;
            w = 0;
            if (l < n) {
                y = H(n - 1, n - 1);
                w = H(n, n - 1) * H(n - 1, n);
            }
            if (iter == 10) {          /* Wilkinson's exceptional shift */
                exshift += x;
                for (int64_t i = low; i <= n; i++) H(i, i) -= x;
                s = fabs(H(n, n - 1)) + fabs(H(n - 1, n - 2));
                x = y = 0.75 * s;
                w = -0.4375 * s * s;
            }
            if (iter == 30) {          /* MATLAB's */
                s = (y - x) / 2.0;
                s = s * s + w;
                if (s > 0) {
                    s = sqrt(s);
                    if (y < x) s = -s;
                    s = x - w / ((y - x) / 2.0 + s);
                    for (int64_t i = low; i <= n; i++) H(i, i) -= s;
                    exshift += s;
                    x = y = w = 0.964;
                }
            }
            if (++iter > 10 * MAXIT) return 1;
            int64_t m = n - 2;
            while (m >= l) {
                z = H(m, m);
                r = x - z;
                s = y - z;
                p = (r * s - w) / H(m + 1, m) + H(m, m + 1);
                q = H(m + 1, m + 1) - z - r - s;
                r = H(m + 2, m + 1);
                s = fabs(p) + fabs(q) + fabs(r);
                p /= s;
                q /= s;
                r /= s;
                if (m == l) break;
                if (fabs(H(m, m - 1)) * (fabs(q) + fabs(r)) <
                    EPS * (fabs(p) * (fabs(H(m - 1, m - 1)) + fabs(z) + fabs(H(m + 1, m + 1)))))
                    break;
                m--;
            }
            for (int64_t i = m + 2; i <= n; i++) {
                H(i, i - 2) = 0;
                if (i > m + 2) H(i, i - 3) = 0;
            }
            for (int64_t k = m; k <= n - 1; k++) {
                int notlast = k != n - 1;
                if (k != m) {
                    p = H(k, k - 1);
                    q = H(k + 1, k - 1);
                    r = notlast ? H(k + 2, k - 1) : 0;
                    x = fabs(p) + fabs(q) + fabs(r);
                    if (x == 0) continue;
                    p /= x;
                    q /= x;
                    r /= x;
                }
                s = sqrt(p * p + q * q + r * r);
                if (p < 0) s = -s;
                if (s != 0) {
                    if (k != m) H(k, k - 1) = -s * x;
                    else if (l != m) H(k, k - 1) = -H(k, k - 1);
                    p += s;
                    x = p / s;
                    y = q / s;
                    z = r / s;
                    q /= p;
                    r /= p;
                    for (int64_t j = k; j < nn; j++) {
                        p = H(k, j) + q * H(k + 1, j);
                        if (notlast) {
                            p += r * H(k + 2, j);
                            H(k + 2, j) -= p * z;
                        }
                        H(k, j) -= p * x;
                        H(k + 1, j) -= p * y;
                    }
                    for (int64_t i = 0; i <= imin(n, k + 3); i++) {
                        p = x * H(i, k) + y * H(i, k + 1);
                        if (notlast) {
                            p += z * H(i, k + 2);
                            H(i, k + 2) -= p * r;
                        }
                        H(i, k) -= p;
                        H(i, k + 1) -= p * q;
                    }
                    for (int64_t i = low; i <= high; i++) {
                        p = x * V(i, k) + y * V(i, k + 1);
                        if (notlast) {
                            p += z * V(i, k + 2);
                            V(i, k + 2) -= p * r;
                        }
                        V(i, k) -= p;
                        V(i, k + 1) -= p * q;
                    }
                }
            }
        }
    }
    if (!vectors || norm == 0)
        return 0;
    /* back-substitution for the eigenvectors of the quasi-triangular form */
    for (n = nn - 1; n >= 0; n--) {
        p = d[n];
        q = e[n];
        if (q == 0) {
            int64_t l = n;
            H(n, n) = 1.0;
            for (int64_t i = n - 1; i >= 0; i--) {
                w = H(i, i) - p;
                r = 0;
                for (int64_t j = l; j <= n; j++) r += H(i, j) * H(j, n);
                if (e[i] < 0) {
                    z = w;
                    s = r;
                } else {
                    l = i;
                    if (e[i] == 0) {
                        H(i, n) = w != 0 ? -r / w : -r / (EPS * norm);
                    } else {
                        x = H(i, i + 1);
                        y = H(i + 1, i);
                        q = (d[i] - p) * (d[i] - p) + e[i] * e[i];
                        t = (x * s - z * r) / q;
                        H(i, n) = t;
                        H(i + 1, n) = fabs(x) > fabs(z) ? (-r - w * t) / x : (-s - y * t) / z;
                    }
                    t = fabs(H(i, n));
                    if ((EPS * t) * t > 1)
                        for (int64_t j = i; j <= n; j++) H(j, n) /= t;
                }
            }
        } else if (q < 0) {
            int64_t l = n - 1;
            double cr, ci;
            if (fabs(H(n, n - 1)) > fabs(H(n - 1, n))) {
                H(n - 1, n - 1) = q / H(n, n - 1);
                H(n - 1, n) = -(H(n, n) - p) / H(n, n - 1);
            } else {
                cdiv(0.0, -H(n - 1, n), H(n - 1, n - 1) - p, q, &cr, &ci);
                H(n - 1, n - 1) = cr;
                H(n - 1, n) = ci;
            }
            H(n, n - 1) = 0.0;
            H(n, n) = 1.0;
            for (int64_t i = n - 2; i >= 0; i--) {
                double ra = 0, sa = 0, vr, vi;
                for (int64_t j = l; j <= n; j++) {
                    ra += H(i, j) * H(j, n - 1);
                    sa += H(i, j) * H(j, n);
                }
                w = H(i, i) - p;
                if (e[i] < 0) {
                    z = w;
                    r = ra;
                    s = sa;
                } else {
                    l = i;
                    if (e[i] == 0) {
                        cdiv(-ra, -sa, w, q, &cr, &ci);
                        H(i, n - 1) = cr;
                        H(i, n) = ci;
                    } else {
                        x = H(i, i + 1);
                        y = H(i + 1, i);
                        vr = (d[i] - p) * (d[i] - p) + e[i] * e[i] - q * q;
                        vi = (d[i] - p) * 2.0 * q;
                        if (vr == 0 && vi == 0)
                            vr = EPS * norm * (fabs(w) + fabs(q) + fabs(x) + fabs(y) + fabs(z));
                        cdiv(x * r - z * ra + q * sa, x * s - z * sa - q * ra, vr, vi, &cr, &ci);
                        H(i, n - 1) = cr;
                        H(i, n) = ci;
                        if (fabs(x) > fabs(z) + fabs(q)) {
                            H(i + 1, n - 1) = (-ra - w * H(i, n - 1) + q * H(i, n)) / x;
                            H(i + 1, n) = (-sa - w * H(i, n) - q * H(i, n - 1)) / x;
                        } else {
                            cdiv(-r - y * H(i, n - 1), -s - y * H(i, n), z, q, &cr, &ci);
                            H(i + 1, n - 1) = cr;
                            H(i + 1, n) = ci;
                        }
                    }
                    t = dmax(fabs(H(i, n - 1)), fabs(H(i, n)));
                    if ((EPS * t) * t > 1)
                        for (int64_t j = i; j <= n; j++) {
                            H(j, n - 1) /= t;
                            H(j, n) /= t;
                        }
                }
            }
        }
    }
    for (int64_t j = nn - 1; j >= low; j--)
        for (int64_t i = low; i <= high; i++) {
            z = 0;
            for (int64_t k = low; k <= imin(j, high); k++) z += V(i, k) * H(k, j);
            V(i, j) = z;
        }
    return 0;
#undef H
#undef V
}

enum { OP_LU, OP_LU_SOLVE, OP_TRSM, OP_CHOL, OP_GEQRF, OP_ORMQR, OP_SYEV, OP_SVD, OP_GEEV };

/* ------------------------------------ complex Hermitian eigensolver and SVD -- */

/* Both reduce the complex matrix by complex Householder reflectors (LAPACK's larfg:
 * the reduced diagonal and off-diagonal are real) to a REAL tridiagonal (hetrd, the
 * float64 sytrd's text) or bidiagonal (gebrd_panels, blocked as gebrd, then gebd2 for
 * the last columns) matrix, solve that in double with the real solvers above, and
 * apply the reflectors to the real vectors in blocks (ormqr): linalg_herm.h, in each
 * complex dtype's own precision (the real vectors rounded to it). */
typedef double _Complex zc;

/* Eigenpairs of the real symmetric tridiagonal (d, e) (e[i] couples i and i + 1):
 * d ascending, q (n x n, column-major, zeroed here) the eigenvectors when vectors. */
static int tridiag_eig(double *d, double *e, int64_t n, double *q, int vectors)
{
    if (!vectors) {
        double *e2 = (double *)malloc((size_t)n * sizeof(double));
        if (!e2) return EM_LINALG_ENOMEM;
        e2[0] = 0;
        for (int64_t i = 1; i < n; i++) e2[i] = e[i - 1];
        int rc = tql2(NULL, d, e2, n, 0);
        free(e2);
        return rc;
    }
    memset(q, 0, (size_t)(n * n) * sizeof(double));
    double sc = 0;
    for (int64_t i = 0; i < n; i++) sc = dmax(sc, fabs(d[i]));
    for (int64_t i = 0; i + 1 < n; i++) sc = dmax(sc, fabs(e[i]));
    if (sc > 0) {
        for (int64_t i = 0; i < n; i++) d[i] /= sc;
        for (int64_t i = 0; i + 1 < n; i++) e[i] /= sc;
    }
    int rc = stedc_rec(d, e, q, n, n);
    if (sc > 0) for (int64_t i = 0; i < n; i++) d[i] *= sc;
    return rc;
}

/* hetrd, heev, gesvd and herm_entry of each complex dtype, in its own precision */
#define CPLX 1
#define T float _Complex
#define R float
#define SFX c64
#include "linalg_herm.h"
#undef T
#undef R
#undef SFX
#define T double _Complex
#define R double
#define SFX c128
#include "linalg_herm.h"
#undef T
#undef R
#undef SFX
#undef CPLX

/* Nonsymmetric complex eigensolver: Householder reduction to Hessenberg form (gehd2,
 * the reflectors accumulated into Z), the complex single-shift QR iteration with
 * Wilkinson shifts (LAPACK's zlahqr, Givens rotations, the full Schur form T and its
 * vectors Z), and the eigenvectors of T by back-substitution (ztrevc), then Z x,
 * each of unit 2-norm with its largest component real (zgeev's normalisation). h
 * (n x n, row-major) is destroyed. Returns 0, 1 (no convergence) or ENOMEM. */
static int zgeev_core(zc *h, int64_t n, zc *w, zc *v, int vectors)
{
#define H(i, j) h[(i) * n + (j)]
    size_t nn = (size_t)n;
    zc *z = (zc *)calloc(nn * nn + 2 * nn, sizeof(zc));
    if (!z) return EM_LINALG_ENOMEM;
    zc *x = z + nn * nn, *tmp = x + n;
#define Z(i, j) z[(i) * n + (j)]
    for (int64_t i = 0; i < n; i++) Z(i, i) = 1;
    for (int64_t j = 0; j + 2 < n; j++) {
        int64_t k = n - j - 1;               /* the reflector's length, rows j+1.. */
        for (int64_t r = 0; r < k; r++) x[r] = H(j + 1 + r, j);
        zc alpha = x[0];
        zc tau = larfg_c128(&alpha, x + 1, k - 1, 1);
        x[0] = 1;
        H(j + 1, j) = alpha;
        for (int64_t r = 1; r < k; r++) H(j + 1 + r, j) = 0;
        if (tau == 0) continue;
        /* rows j+1..: A <- H^H A = A - conj(tau) v (v^H A), columns j+1.. */
        zc ct = conj(tau);
        for (int64_t c = j + 1; c < n; c++) {
            zc s = 0;
            for (int64_t r = 0; r < k; r++) s += conj(x[r]) * H(j + 1 + r, c);
            s *= ct;
            for (int64_t r = 0; r < k; r++) H(j + 1 + r, c) -= x[r] * s;
        }
        /* columns j+1..: A <- A H = A - tau (A v) v^H, all rows; and Z <- Z H */
        for (int pass = 0; pass < 2; pass++) {
            zc *m_ = pass ? z : h;
            for (int64_t r = 0; r < n; r++) {
                zc *row = m_ + r * n + j + 1, s = 0;
                for (int64_t c = 0; c < k; c++) s += row[c] * x[c];
                s *= tau;
                for (int64_t c = 0; c < k; c++) row[c] -= s * conj(x[c]);
            }
        }
    }
    double nrm = 0;
    for (int64_t q = 0; q < n * n; q++) nrm = dmax(nrm, cabs(h[q]));
    int64_t hi = n - 1, its = 0, total = 0;
    while (hi >= 0) {
        int64_t l = hi;
        while (l > 0) {
            double t = cabs(H(l - 1, l - 1)) + cabs(H(l, l));
            if (t == 0) t = nrm;
            if (cabs(H(l, l - 1)) <= EPS * t || cabs(H(l, l - 1)) < TINY) break;
            l--;
        }
        if (l > 0) H(l, l - 1) = 0;
        if (l == hi) { hi--; its = 0; continue; }
        if (++total > 30 * (n + 10)) { free(z); return 1; }
        its++;
        zc mu;
        if (its % 10 == 0) {               /* an exceptional shift */
            mu = H(hi, hi) + 0.75 * cabs(H(hi, hi - 1));
        } else {                            /* the eigenvalue of the trailing 2 x 2 nearer d */
            zc a = H(hi - 1, hi - 1), b = H(hi - 1, hi), c = H(hi, hi - 1), d = H(hi, hi);
            zc tr = 0.5 * (a - d), disc = csqrt(tr * tr + b * c);
            zc m1 = d + tr + disc, m2 = d + tr - disc;    /* (a+d)/2 +- disc */
            mu = cabs(m1 - d) < cabs(m2 - d) ? m1 : m2;
        }
        for (int64_t k = l; k < hi; k++) {
            zc xx = k == l ? H(l, l) - mu : H(k, k - 1), yy = k == l ? H(l + 1, l) : H(k + 1, k - 1);
            double ax = cabs(xx), r = hypot(ax, cabs(yy));
            if (r == 0) continue;
            double c;
            zc s;
            if (ax == 0) { c = 0; s = 1; }
            else { c = ax / r; s = (xx / ax) * conj(yy) / r; }
            /* rows k, k+1 <- G [rows], G = [[c, s], [-conj(s), c]], columns k-1.. */
            for (int64_t q = k > l ? k - 1 : k; q < n; q++) {
                zc p = H(k, q), o = H(k + 1, q);
                H(k, q) = c * p + s * o;
                H(k + 1, q) = -conj(s) * p + c * o;
            }
            if (k > l) H(k + 1, k - 1) = 0;
            /* columns k, k+1 <- [cols] G^H, rows 0..min(k+2, hi); Z all rows */
            int64_t rmax = imin(k + 2, hi);
            for (int pass = 0; pass < 2; pass++) {
                zc *m_ = pass ? z : h;
                int64_t re = pass ? n - 1 : rmax;
                for (int64_t q = 0; q <= re; q++) {
                    zc p = m_[q * n + k], o = m_[q * n + k + 1];
                    m_[q * n + k] = c * p + conj(s) * o;
                    m_[q * n + k + 1] = -s * p + c * o;
                }
            }
        }
    }
    for (int64_t i = 0; i < n; i++) w[i] = H(i, i);
    if (vectors) {
        double smin = dmax(EPS * nrm, TINY);
        for (int64_t k = 0; k < n; k++) {
            /* (T[:k+1, :k+1] - T[k, k]) x = 0 with x[k] = 1, by back-substitution */
            x[k] = 1;
            for (int64_t i = k - 1; i >= 0; i--) {
                zc s = 0;
                for (int64_t j = i + 1; j <= k; j++) s += H(i, j) * x[j];
                zc d = H(i, i) - H(k, k);
                if (cabs(d) < smin) d = smin;
                x[i] = -s / d;
                if (cabs(x[i]) > 1e100) {   /* rescale to keep it finite */
                    for (int64_t j = i; j <= k; j++) x[j] *= 1e-100;
                }
            }
            double nr = 0, big = -1;
            zc ph = 1;
            for (int64_t r = 0; r < n; r++) {
                zc s = 0;
                for (int64_t j = 0; j <= k; j++) s += Z(r, j) * x[j];
                tmp[r] = s;
                double m = cabs(s);
                nr = hypot(nr, m);
                if (m > big) { big = m; ph = s; }
            }
            zc sc = big > 0 && nr > 0 ? conj(ph) / (cabs(ph) * nr) : 1;
            for (int64_t r = 0; r < n; r++) v[r * n + k] = tmp[r] * sc;
        }
    }
#undef H
#undef Z
    free(z);
    return 0;
}

/* One complex entry of OP_GEEV: w (n, complex) and, when vectors, v (n x n). */
static int complex_geev_entry(int dtype, int64_t n, const char *src, char *w_out,
                              char *v_out, int want, int32_t *info)
{
    int c64 = dtype == 9;
    zc *buf = (zc *)calloc((size_t)(2 * n * n + n + 1), sizeof(zc));
    if (!buf) return EM_LINALG_ENOMEM;
    zc *h = buf, *v = h + n * n, *w = v + n * n;
    double fin = 0;
    for (int64_t q = 0; q < n * n; q++) {
        h[q] = c64 ? (zc)((const float _Complex *)src)[q] : ((const zc *)src)[q];
        fin += creal(h[q]) * 0 + cimag(h[q]) * 0;
    }
    int rc = fin != 0 || !n ? 0 : zgeev_core(h, n, w, v, want);
    if (rc == EM_LINALG_ENOMEM) { free(buf); return rc; }
    *info = fin != 0 ? -1 : rc;    /* -1: not finite */
    for (int64_t q = 0; q < n; q++) {
        if (c64) ((float _Complex *)w_out)[q] = (float _Complex)w[q];
        else ((zc *)w_out)[q] = w[q];
    }
    if (want)
        for (int64_t q = 0; q < n * n; q++) {
            if (c64) ((float _Complex *)v_out)[q] = (float _Complex)v[q];
            else ((zc *)v_out)[q] = v[q];
        }
    free(buf);
    return 0;
}

/* ------------------------------------------------------------ batched drivers -- */


typedef struct {
    int op, dtype, f1, f2, f3;
    int64_t m, n, k, p;
    char *a, *b, *c, *d, *e;
    int32_t *piv, *info;
    volatile int rc;
} job;

/* The double-precision cores (syev, svd, geev) for one entry of either real dtype:
 * the operands are converted to double on the way in and out. */
static int all_finite(const double *x, int64_t n)
{
    double acc = 0;
    for (int64_t i = 0; i < n; i++) acc += x[i] * 0;   /* NaN iff some x is inf or NaN */
    return acc == 0;
}

static int eig_svd_entry(job *J, int64_t i)
{
    int64_t m = J->m, n = J->n;
    if (J->dtype == 9 || J->dtype == 10) {
        size_t cl = J->dtype == 9 ? 8 : 16;
        if (J->op == OP_GEEV)
            return complex_geev_entry(J->dtype, n, J->a + (size_t)i * n * n * cl,
                                      J->b + (size_t)i * n * cl,
                                      J->d ? J->d + (size_t)i * n * n * cl : NULL, J->f1,
                                      J->info + i);
        int syev = J->op == OP_SYEV;
        if (syev) m = n;
        int64_t k = imin(m, n);
        /* eigh: the eigenvectors over a; svd: u (m x k) and vh (k x n) */
#define HERM(SFX, T, R)                                                                   \
        herm_entry_##SFX(J->op, m, n, (const T *)J->a + i * m * n, (R *)J->b + i * k,     \
                         !J->f1 ? NULL : syev ? (T *)J->a + i * m * n : (T *)J->c + i * m * k, \
                         !J->f1 || syev ? NULL : (T *)J->d + i * k * n, J->f1, J->info + i)
        return J->dtype == 9 ? HERM(c64, float _Complex, float) : HERM(c128, zc, double);
#undef HERM
    }
    int f32 = J->dtype == 7;
    size_t el = f32 ? 4 : 8;
#define LOAD(dst, src, cnt) do { if (f32) { const float *s_ = (const float *)(src);       \
        for (int64_t q_ = 0; q_ < (cnt); q_++) (dst)[q_] = s_[q_]; }                    \
        else memcpy((dst), (src), (size_t)(cnt) * 8); } while (0)
#define STORE(dst, src, cnt) do { if (f32) { float *d_ = (float *)(dst);                 \
        for (int64_t q_ = 0; q_ < (cnt); q_++) d_[q_] = (float)(src)[q_]; }             \
        else memcpy((dst), (src), (size_t)(cnt) * 8); } while (0)
    if (J->op == OP_SYEV) {
        double *ws = (double *)malloc((size_t)(n * n + 2 * n) * sizeof(double));
        if (!ws) return EM_LINALG_ENOMEM;
        double *z = ws, *d = z + n * n, *e = d + n;
        char *a = J->a + (size_t)i * n * n * el;
        LOAD(z, a, n * n);     /* symmetric: z[c * n + r] = A[r][c] either way */
        int info = all_finite(z, n * n) ? 0 : -1;
        if (n >= SYEVD_MIN && !info) {
            double *vo = J->f1 ? (double *)malloc((size_t)(n * n) * sizeof(double)) : NULL;
            int rc = J->f1 && !vo ? EM_LINALG_ENOMEM : syevd(z, n, d, vo, J->f1);
            if (rc < 0) { free(vo); free(ws); return rc; }
            J->info[i] = rc;
            STORE(J->b + (size_t)i * n * el, d, n);
            if (J->f1) STORE(a, vo, n * n);
            free(vo);
            free(ws);
            return 0;
        }
        if (n && !info) {
            tred2(z, d, e, n, J->f1);
            info = tql2(z, d, e, n, J->f1);
        }
        J->info[i] = info;
        STORE(J->b + (size_t)i * n * el, d, n);
        if (J->f1) {
            /* z[c * n + r] is V[r][c]: transpose into the row-major output */
            for (int64_t r = 0; r < n; r++)
                for (int64_t c = 0; c < n; c++) {
                    if (f32) ((float *)a)[r * n + c] = (float)z[c * n + r];
                    else ((double *)a)[r * n + c] = z[c * n + r];
                }
        }
        free(ws);
        return 0;
    }
    if (J->op == OP_SVD) {
        /* m' x n' with m' >= n' column-major: A itself (transposed copy) when m >= n,
         * else A^T, whose column-major form is A's row-major buffer */
        int tr = m < n;
        int64_t mm = tr ? n : m, nn = tr ? m : n, k = nn;
        int want = J->f1;
        if (want && nn >= GESDD_MIN) {
            /* A' = A (m >= n) or A^T, row-major m' x n': A' = U' S V'^T */
            double *ws = (double *)malloc((size_t)(2 * mm * nn + nn * nn + nn) * sizeof(double));
            if (!ws) return EM_LINALG_ENOMEM;
            double *a = ws, *u = a + mm * nn, *vh = u + mm * nn, *s = vh + nn * nn;
            const char *src = J->a + (size_t)i * m * n * el;
            for (int64_t r = 0; r < m; r++)
                for (int64_t c = 0; c < n; c++) {
                    double x = f32 ? ((const float *)src)[r * n + c] : ((const double *)src)[r * n + c];
                    a[tr ? c * m + r : r * n + c] = x;
                }
            int fin = all_finite(a, mm * nn), rc = 0;
            if (fin) rc = gesdd(a, mm, nn, s, u, vh);
            else memset(u, 0, (size_t)(mm * nn + nn * nn + nn) * sizeof(double));
            if (rc < 0) { free(ws); return rc; }
            J->info[i] = fin ? rc : -1;
            STORE(J->b + (size_t)i * k * el, s, k);
            char *uo = J->c + (size_t)i * m * k * el, *vo = J->d + (size_t)i * k * n * el;
            /* m >= n: U = u, Vh = vh. m < n: A = V' S U'^T, U = vh^T (m x m), Vh = u^T */
            for (int64_t r = 0; r < m; r++)
                for (int64_t c = 0; c < k; c++) {
                    double x = tr ? vh[c * m + r] : u[r * k + c];
                    if (f32) ((float *)uo)[r * k + c] = (float)x;
                    else ((double *)uo)[r * k + c] = x;
                }
            for (int64_t r = 0; r < k; r++)
                for (int64_t c = 0; c < n; c++) {
                    double x = tr ? u[c * k + r] : vh[r * n + c];
                    if (f32) ((float *)vo)[r * n + c] = (float)x;
                    else ((double *)vo)[r * n + c] = x;
                }
            free(ws);
            return 0;
        }
        if (!want && nn >= GESDD_MIN) {
            /* the values only: gebrd and the bidiagonal's QR iteration without vectors;
             * where that does not converge (dsvdc has no zero shift for graded
             * matrices), the bidiagonal's divide and conquer */
            double *ws = (double *)malloc((size_t)(mm * nn + 6 * nn + (mm + nn) *
                                                   (GEBRD_NB + 2)) * sizeof(double));
            if (!ws) return EM_LINALG_ENOMEM;
            double *a = ws, *s = a + mm * nn, *e = s + nn, *tq = e + nn, *tp = tq + nn,
                   *s0 = tp + nn, *e0 = s0 + nn, *w2 = e0 + nn;
            const char *src = J->a + (size_t)i * m * n * el;
            for (int64_t r = 0; r < m; r++)
                for (int64_t c = 0; c < n; c++) {
                    double x = f32 ? ((const float *)src)[r * n + c] : ((const double *)src)[r * n + c];
                    a[tr ? c * m + r : r * n + c] = x;
                }
            int rc = 0;
            if (!all_finite(a, mm * nn)) J->info[i] = -1;
            else if ((rc = gebrd(a, mm, nn, s, e, tq, tp, w2)) == 0) {
                e[nn - 1] = 0;
                memcpy(s0, s, (size_t)nn * sizeof(double));
                memcpy(e0, e, (size_t)nn * sizeof(double));
                J->info[i] = svd_iter(s, e, nn, nn, nn, NULL, NULL, 0);
                if (J->info[i]) {
                    double *q = (double *)malloc((size_t)(2 * nn * nn) * sizeof(double));
                    if (!q) rc = EM_LINALG_ENOMEM;
                    else {
                        memcpy(s, s0, (size_t)nn * sizeof(double));
                        memcpy(e, e0, (size_t)nn * sizeof(double));
                        J->info[i] = bdsdc(s, e, nn, q, q + nn * nn);
                        if (J->info[i] < 0) rc = J->info[i];
                        free(q);
                    }
                }
            }
            if (rc) { free(ws); return rc; }
            STORE(J->b + (size_t)i * k * el, s, k);
            free(ws);
            return 0;
        }
        double *ws = (double *)malloc((size_t)(mm * nn * 2 + nn * nn + 2 * nn + mm) *
                                      sizeof(double));
        if (!ws) return EM_LINALG_ENOMEM;
        double *a = ws, *u = a + mm * nn, *v = u + mm * nn, *s = v + nn * nn, *e = s + nn,
               *work = e + nn;
        memset(u, 0, (size_t)(mm * nn + nn * nn) * sizeof(double));   /* dsvdc reads zeros */
        const char *src = J->a + (size_t)i * m * n * el;
        if (tr) {
            LOAD(a, src, m * n);
        } else {
            for (int64_t r = 0; r < m; r++)
                for (int64_t c = 0; c < n; c++)
                    a[c * m + r] = f32 ? ((const float *)src)[r * n + c]
                                       : ((const double *)src)[r * n + c];
        }
        J->info[i] = all_finite(a, mm * nn) ? svd_core(a, mm, nn, s, u, v, want, e, work) : -1;
        STORE(J->b + (size_t)i * k * el, s, k);
        if (want) {
            char *uo = J->c + (size_t)i * m * k * el, *vo = J->d + (size_t)i * k * n * el;
            /* A = U S V^T (m >= n): U[r][c] = u[c*m + r], Vh = V^T = v's buffer.
             * A = V' S U'^T (m < n): U = V' (m x m): U[r][c] = v[c*m + r], Vh = U'^T:
             * the buffer of u (n x m column-major) read row-major as m x n. */
            const double *uu = tr ? v : u, *vh = tr ? u : v;
            for (int64_t r = 0; r < m; r++)
                for (int64_t c = 0; c < k; c++) {
                    double x = uu[c * m + r];
                    if (f32) ((float *)uo)[r * k + c] = (float)x;
                    else ((double *)uo)[r * k + c] = x;
                }
            STORE(vo, vh, k * n);
        }
        free(ws);
        return 0;
    }
    /* OP_GEEV */
    double *ws = (double *)malloc((size_t)(2 * n * n + 3 * n) * sizeof(double));
    if (!ws) return EM_LINALG_ENOMEM;
    double *h = ws, *v = h + n * n, *d = v + n * n, *e = d + n, *ort = e + n;
    LOAD(h, J->a + (size_t)i * n * n * el, n * n);
    J->info[i] = !all_finite(h, n * n) ? -1 : n ? hqr_core(h, v, d, e, ort, n, J->f1) : 0;
    STORE(J->b + (size_t)i * n * el, d, n);
    STORE(J->c + (size_t)i * n * el, e, n);
    if (J->f1) {
        /* unit 2-norm columns; a complex pair (columns j, j+1) as one vector whose
         * largest component is real (LAPACK's normalisation) */
        for (int64_t j = 0; j < n; j++) {
            if (e[j] == 0) {
                double nr = 0;
                for (int64_t r = 0; r < n; r++) nr = hypot(nr, v[r * n + j]);
                if (nr > 0) for (int64_t r = 0; r < n; r++) v[r * n + j] /= nr;
            } else if (e[j] > 0 && j + 1 < n) {
                double nr = 0, big = -1, cr = 1, ci = 0;
                for (int64_t r = 0; r < n; r++) {
                    double re = v[r * n + j], im = v[r * n + j + 1], mag = hypot(re, im);
                    nr = hypot(nr, mag);
                    if (mag > big) { big = mag; cr = re; ci = im; }
                }
                double mag = hypot(cr, ci);
                if (nr > 0 && mag > 0) {
                    cr /= mag; ci /= mag;        /* multiply by conj(cr + i ci) / nr */
                    for (int64_t r = 0; r < n; r++) {
                        double re = v[r * n + j], im = v[r * n + j + 1];
                        v[r * n + j] = (re * cr + im * ci) / nr;
                        v[r * n + j + 1] = (im * cr - re * ci) / nr;
                    }
                }
                j++;
            }
        }
        STORE(J->d + (size_t)i * n * n * el, v, n * n);
    }
    free(ws);
    return 0;
#undef LOAD
#undef STORE
}

#define RUN_ONE(SFX, T)                                                                   \
static int run_##SFX(job *J, int64_t i)                                                   \
{                                                                                         \
    int64_t m = J->m, n = J->n, k = J->k, p = J->p;                                       \
    switch (J->op) {                                                                      \
    case OP_LU: {                                                                         \
        int64_t mn = m < n ? m : n;                                                       \
        return getrf_##SFX((T *)J->a + i * m * n, m, n, n, J->piv + i * mn, J->info + i); \
    }                                                                                     \
    case OP_LU_SOLVE:                                                                     \
        return getrs_##SFX((const T *)J->a + i * n * n, n, J->piv + i * n,                \
                           (T *)J->b + i * n * k, k, J->f1);                              \
    case OP_TRSM: {                                                                       \
        const T *a = (const T *)J->a + i * n * n;                                         \
        int lower = !J->f1 ^ J->f2;   /* op(A) lower: lower A, or upper A transposed */   \
        return J->f2 ? trsm_##SFX(a, 1, n, (T *)J->b + i * n * k, n, k, k, lower, J->f3)  \
                     : trsm_##SFX(a, n, 1, (T *)J->b + i * n * k, n, k, k, lower, J->f3); \
    }                                                                                     \
    case OP_CHOL:                                                                         \
        return potrf_##SFX((T *)J->a + i * n * n, n, n, J->info + i);                     \
    case OP_GEQRF: {                                                                      \
        int64_t mn = m < n ? m : n;                                                       \
        return geqrf_##SFX((T *)J->a + i * m * n, m, n, n, (T *)J->b + i * mn);           \
    }                                                                                     \
    case OP_ORMQR:                                                                        \
        return ormqr_##SFX((const T *)J->a + i * m * n, m, n, k, (const T *)J->b + i * k, \
                           (T *)J->c + i * m * p, p, J->f1);                              \
    default:                                                                              \
        return eig_svd_entry(J, i);                                                       \
    }                                                                                     \
}
RUN_ONE(f32, float)
RUN_ONE(f64, double)
RUN_ONE(c64, float _Complex)
RUN_ONE(c128, double _Complex)

static void run_range(void *ctx, int64_t begin, int64_t end)
{
    job *J = (job *)ctx;
    for (int64_t i = begin; i < end; i++) {
        int rc = J->dtype == 7 ? run_f32(J, i) : J->dtype == 8 ? run_f64(J, i)
               : J->dtype == 9 ? run_c64(J, i) : run_c128(J, i);
        if (rc) J->rc = rc;
    }
}

static int run_batch(job *J, int64_t batch, int64_t size)
{
    if (J->dtype < 7 || J->dtype > 10)   /* float32, float64, complex64, complex128 */
        return EM_LINALG_EDTYPE;
    J->rc = 0;
    if (batch <= 0) return 0;
    if (batch == 1 || size >= BATCH_ALONE) {
        run_range(J, 0, batch);
    } else {
        int64_t work = size * size * size;
        em_parallel_for(batch, work >= 32768 ? 1 : 32768 / (work + 1), run_range, J);
    }
    return J->rc;
}

int em_lu_factor(int dtype, int64_t batch, int64_t m, int64_t n, void *a, int32_t *piv,
                 int32_t *info)
{
    job J = {.op = OP_LU, .dtype = dtype, .m = m, .n = n, .a = a, .piv = piv, .info = info};
    return run_batch(&J, batch, imax(m, n));
}

int em_lu_solve(int dtype, int64_t batch, int64_t n, int64_t k, const void *lu,
                const int32_t *piv, void *b, int adjoint)
{
    job J = {.op = OP_LU_SOLVE, .dtype = dtype, .n = n, .k = k, .a = (char *)lu,
             .piv = (int32_t *)piv, .b = b, .f1 = adjoint};
    return run_batch(&J, batch, imax(n, k));
}

int em_trsm(int dtype, int64_t batch, int64_t n, int64_t k, const void *a, void *b,
            int upper, int trans, int unit)
{
    job J = {.op = OP_TRSM, .dtype = dtype, .n = n, .k = k, .a = (char *)a, .b = b,
             .f1 = upper, .f2 = trans, .f3 = unit};
    return run_batch(&J, batch, imax(n, k));
}

int em_cholesky(int dtype, int64_t batch, int64_t n, void *a, int32_t *info)
{
    job J = {.op = OP_CHOL, .dtype = dtype, .n = n, .a = a, .info = info};
    return run_batch(&J, batch, n);
}

int em_geqrf(int dtype, int64_t batch, int64_t m, int64_t n, void *a, void *tau)
{
    job J = {.op = OP_GEQRF, .dtype = dtype, .m = m, .n = n, .a = a, .b = tau};
    return run_batch(&J, batch, imax(m, n));
}

int em_ormqr(int dtype, int64_t batch, int64_t m, int64_t nv, int64_t k, const void *v,
             const void *tau, int64_t p, void *c, int trans)
{
    job J = {.op = OP_ORMQR, .dtype = dtype, .m = m, .n = nv, .k = k, .p = p,
             .a = (char *)v, .b = (char *)tau, .c = c, .f1 = trans};
    return run_batch(&J, batch, imax(m, p));
}

int em_syev(int dtype, int64_t batch, int64_t n, void *a, void *w, int vectors,
            int32_t *info)
{
    job J = {.op = OP_SYEV, .dtype = dtype, .n = n, .a = a, .b = w, .f1 = vectors,
             .info = info};
    return run_batch(&J, batch, n);
}

int em_svd(int dtype, int64_t batch, int64_t m, int64_t n, const void *a, void *s,
           void *u, void *vh, int vectors, int32_t *info)
{
    job J = {.op = OP_SVD, .dtype = dtype, .m = m, .n = n, .a = (char *)a, .b = s, .c = u,
             .d = vh, .f1 = vectors, .info = info};
    if (m == 0 || n == 0) return 0;
    return run_batch(&J, batch, imax(m, n));
}

int em_geev(int dtype, int64_t batch, int64_t n, const void *a, void *wr, void *wi,
            void *v, int vectors, int32_t *info)
{
    job J = {.op = OP_GEEV, .dtype = dtype, .n = n, .a = (char *)a, .b = wr, .c = wi,
             .d = v, .f1 = vectors, .info = info};
    return run_batch(&J, batch, n);
}
