/* The CPU's n-d iteration: every elementwise op and reduction runs through here.
 *
 * Both walkers first drop size-1 dims, order dims so the innermost is the fastest
 * in memory, and merge dims that are contiguous for every operand, so a contiguous
 * tensor of any rank becomes one flat run handed to one generated loop.
 */
#include <string.h>
#include "ember_cpu.h"

#define MAX_OPS 4
#define TILE 64 /* elements per side of a tile for transposed 2-d access: fits L1 */

static int64_t iabs64(int64_t x) { return x < 0 ? -x : x; }

typedef struct {
    int ndim, nop;
    int64_t shape[EMBER_MAX_DIMS];
    int64_t strides[MAX_OPS][EMBER_MAX_DIMS];
} layout;

/* Returns 0 when the iteration space is empty. `key` is the operand whose strides
 * decide the dim order (innermost = smallest |stride|). */
static int simplify(layout *L, int nop, int ndim, const int64_t *shape,
                    const int64_t *strides, int key) {
    L->nop = nop;
    L->ndim = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) return 0;
        if (shape[d] == 1) continue;
        L->shape[L->ndim] = shape[d];
        for (int k = 0; k < nop; k++) L->strides[k][L->ndim] = strides[k * ndim + d];
        L->ndim++;
    }
    /* Stable insertion sort: larger |stride| of the key operand goes outward. A
     * zero stride (broadcast or reduced dim) stays where it is relative to others. */
    for (int i = 1; i < L->ndim; i++) {
        for (int j = i; j > 0; j--) {
            int64_t a = iabs64(L->strides[key][j - 1]), b = iabs64(L->strides[key][j]);
            if (a == 0 || b == 0 || a >= b) break;
            int64_t t = L->shape[j]; L->shape[j] = L->shape[j - 1]; L->shape[j - 1] = t;
            for (int k = 0; k < nop; k++) {
                t = L->strides[k][j]; L->strides[k][j] = L->strides[k][j - 1];
                L->strides[k][j - 1] = t;
            }
        }
    }
    /* Merge dim d-1 into d when every operand steps through both as one run. */
    int out = L->ndim ? 1 : 0;
    for (int d = 1; d < L->ndim; d++) {
        int ok = 1;
        for (int k = 0; k < nop; k++)
            if (L->strides[k][out - 1] != L->strides[k][d] * L->shape[d]) { ok = 0; break; }
        if (ok) {
            L->shape[out - 1] *= L->shape[d];
            for (int k = 0; k < nop; k++) L->strides[k][out - 1] = L->strides[k][d];
        } else {
            L->shape[out] = L->shape[d];
            for (int k = 0; k < nop; k++) L->strides[k][out] = L->strides[k][d];
            out++;
        }
    }
    L->ndim = out;
    return 1;
}

/* Advance the odometer over dims [0, last) by one step; pointers follow. */
static inline void step(const layout *L, int last, int64_t *idx, char **p) {
    for (int d = last - 1; d >= 0; d--) {
        for (int k = 0; k < L->nop; k++) p[k] += L->strides[k][d];
        if (++idx[d] < L->shape[d]) return;
        for (int k = 0; k < L->nop; k++) p[k] -= L->strides[k][d] * L->shape[d];
        idx[d] = 0;
    }
}

static int64_t count(const layout *L, int last) {
    int64_t n = 1;
    for (int d = 0; d < last; d++) n *= L->shape[d];
    return n;
}

/* Some input walks the inner two dims the other way round (a.T + b): visit them
 * in TILE x TILE tiles so that input's cache lines are reused across rows. */
static int wants_tiles(const layout *L) {
    if (L->ndim < 2) return 0;
    int r = L->ndim - 2, c = L->ndim - 1;
    if (L->shape[r] < TILE || L->shape[c] < TILE) return 0;
    for (int k = 1; k < L->nop; k++) {
        int64_t sr = iabs64(L->strides[k][r]), sc = iabs64(L->strides[k][c]);
        if (sr != 0 && sr < sc) return 1;
    }
    return 0;
}

void em_iterate(em_loop_fn loop, int nop, char **ptrs, int ndim, const int64_t *shape,
                const int64_t *strides) {
    layout L;
    if (!simplify(&L, nop, ndim, shape, strides, 0)) return;
    char *p[MAX_OPS];
    int64_t inner[MAX_OPS];
    memcpy(p, ptrs, sizeof(char *) * nop);
    if (L.ndim == 0) {
        memset(inner, 0, sizeof inner);
        loop(p, inner, 1);
        return;
    }
    int64_t idx[EMBER_MAX_DIMS] = {0};
    int c = L.ndim - 1;
    for (int k = 0; k < nop; k++) inner[k] = L.strides[k][c];
    if (wants_tiles(&L)) {
        int r = L.ndim - 2;
        int64_t outer = count(&L, r);
        for (int64_t o = 0; o < outer; o++) {
            for (int64_t i0 = 0; i0 < L.shape[r]; i0 += TILE) {
                int64_t i1 = i0 + TILE < L.shape[r] ? i0 + TILE : L.shape[r];
                for (int64_t j0 = 0; j0 < L.shape[c]; j0 += TILE) {
                    int64_t n = L.shape[c] - j0 < TILE ? L.shape[c] - j0 : TILE;
                    for (int64_t i = i0; i < i1; i++) {
                        char *q[MAX_OPS];
                        for (int k = 0; k < nop; k++)
                            q[k] = p[k] + i * L.strides[k][r] + j0 * L.strides[k][c];
                        loop(q, inner, n);
                    }
                }
            }
            step(&L, r, idx, p);
        }
        return;
    }
    int64_t outer = count(&L, c);
    for (int64_t o = 0; o < outer; o++) {
        loop(p, inner, L.shape[c]);
        step(&L, c, idx, p);
    }
}

void em_reduce(em_reduce_inner_fn inner, em_reduce_outer_fn outer, char *out,
               const int64_t *out_strides, const char *in, const int64_t *in_strides,
               int ndim, const int64_t *shape) {
    int64_t strides[2 * EMBER_MAX_DIMS];
    memcpy(strides, out_strides, sizeof(int64_t) * ndim);
    memcpy(strides + ndim, in_strides, sizeof(int64_t) * ndim);
    layout L;
    if (!simplify(&L, 2, ndim, shape, strides, 1)) return;
    char *p[2] = {out, (char *)in};
    if (L.ndim == 0) {
        inner(p[0], p[1], 0, 1);
        return;
    }
    int c = L.ndim - 1;
    int64_t idx[EMBER_MAX_DIMS] = {0};
    int64_t n = count(&L, c);
    if (L.strides[0][c] == 0) {
        /* The input's fastest dim is reduced: fold each run into one output. */
        for (int64_t o = 0; o < n; o++) {
            inner(p[0], p[1], L.strides[1][c], L.shape[c]);
            step(&L, c, idx, p);
        }
    } else {
        /* The fastest dim is kept: accumulate whole rows into the output. */
        for (int64_t o = 0; o < n; o++) {
            outer(p[0], L.strides[0][c], p[1], L.strides[1][c], L.shape[c]);
            step(&L, c, idx, p);
        }
    }
}
