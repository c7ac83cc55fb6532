/* The CPU's n-d iteration: every elementwise op and reduction runs through here.
 *
 * Both walkers first drop size-1 dims, order dims so the innermost is the fastest
 * in memory, and merge dims that are contiguous for every operand, so a contiguous
 * tensor of any rank becomes one flat run handed to one generated loop.
 *
 * Threads: work of at least two grains (EM_GRAIN elements each, EM_RED_GRAIN for
 * reductions) is cut into chunks for the pool (threads.h); anything smaller runs
 * on the caller and wakes no thread. Elementwise ops cut the flat iteration space
 * anywhere (each element is written once, so the result does not depend on the
 * cut). Reductions cut a kept dim when there are enough outputs (each output is
 * still computed whole, in the sequential order); otherwise they cut a reduced dim
 * into chunks of a fixed size and fold the chunks' partial results in order, so a
 * result does not depend on the number of threads either.
 */
#include <stdlib.h>
#include <string.h>
#include "ember_cpu.h"
#include "threads.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EM_HAVE_X86 1
#endif

#define MAX_OPS 4
#define TILE 64 /* elements per side of a tile for transposed 2-d access: fits L1 */
/* Elements per chunk handed to a thread: ~40-80 us of a float32 add here (a
 * reduction reads, and costs, about half as much per element), against 5-50 us to
 * wake a thread on a shared 2-vCPU machine. So an op starts threads from two
 * grains: 256K elements (elementwise), 512K (reductions). */
#define EM_GRAIN ((int64_t)1 << 17)
#define EM_RED_GRAIN ((int64_t)1 << 18)
/* Input elements per partial result when a reduction cuts a reduced dim; fixed, so
 * that the result does not depend on the number of threads. */
#define EM_RED_CHUNK ((int64_t)1 << 16)

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

/* Operand tile (i, j) -> buf[i * TILE + j] for 4-byte elements that are adjacent
 * along i (stride 4 bytes) and `sc` bytes apart along j: the transposed operand of
 * a.T + b. 8x8 blocks go through AVX2 registers, reading 8 source rows at a time so
 * each cache line is used whole (rows 16 KiB apart all map to one L1 set). */
#ifdef EM_HAVE_X86
__attribute__((target("avx2"))) static void transpose8x8(const char *src, int64_t sc,
                                                        float *dst) {
    __m256 r[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps((const float *)(src + k * sc));
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst + 0 * TILE, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + 1 * TILE, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * TILE, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * TILE, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * TILE, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * TILE, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * TILE, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * TILE, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

static void gather_tile(const char *base, int64_t sc, int64_t ni, int64_t nj, float *buf) {
#ifdef EM_HAVE_X86
    static int avx2 = -1;
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2");
#else
    const int avx2 = 0;
#endif
    for (int64_t j0 = 0; j0 < nj; j0 += 8) {
        for (int64_t i0 = 0; i0 < ni; i0 += 8) {
#ifdef EM_HAVE_X86
            if (avx2 && i0 + 8 <= ni && j0 + 8 <= nj) {
                transpose8x8(base + j0 * sc + i0 * 4, sc, buf + i0 * TILE + j0);
                continue;
            }
#endif
            for (int64_t j = j0; j < j0 + 8 && j < nj; j++)
                for (int64_t i = i0; i < i0 + 8 && i < ni; i++)
                    buf[i * TILE + j] = *(const float *)(base + j * sc + i * 4);
        }
    }
}

/* Point p at element `b` of the row-major order over dims [0, last); idx follows. */
static void seek(const layout *L, int last, int64_t b, int64_t *idx, char **p) {
    for (int d = last - 1; d >= 0; d--) {
        idx[d] = b % L->shape[d];
        b /= L->shape[d];
        for (int k = 0; k < L->nop; k++) p[k] += idx[d] * L->strides[k][d];
    }
}

typedef struct {
    const layout *L;
    char *const *p;
    em_loop_fn loop;
    const int64_t *inner;
} ew_job;

/* Elements [b, e) of the flat iteration space, as pieces of inner runs: a chunk may
 * start and end inside a row. */
static void ew_range(void *ctx, int64_t b, int64_t e) {
    const ew_job *J = ctx;
    const layout *L = J->L;
    int c = L->ndim - 1;
    char *p[MAX_OPS];
    int64_t idx[EMBER_MAX_DIMS] = {0};
    memcpy(p, J->p, sizeof(char *) * L->nop);
    if (b) seek(L, L->ndim, b, idx, p);
    for (;;) {
        int64_t len = L->shape[c] - idx[c] < e - b ? L->shape[c] - idx[c] : e - b;
        J->loop(p, J->inner, len);
        b += len;
        if (b >= e) return;
        for (int k = 0; k < L->nop; k++) p[k] -= idx[c] * L->strides[k][c];
        idx[c] = 0;            /* the piece ended a row: on to the next one */
        step(L, c, idx, p);
    }
}

typedef struct {
    const layout *L;
    char *const *p;
    em_loop_fn loop;
    const int64_t *tile_inner;
    const int *buffered;
    int64_t ntr;               /* row tiles per iteration of the outer dims */
} tile_job;

/* Units [b, e): unit u is row tile u % ntr of outer iteration u / ntr. */
static void tile_range(void *ctx, int64_t b, int64_t e) {
    const tile_job *J = ctx;
    const layout *L = J->L;
    int nop = L->nop, r = L->ndim - 2, c = L->ndim - 1;
    float storage[MAX_OPS][TILE * TILE];
    for (int64_t u = b; u < e; u++) {
        char *p[MAX_OPS];
        int64_t idx[EMBER_MAX_DIMS];
        memcpy(p, J->p, sizeof(char *) * nop);
        seek(L, r, u / J->ntr, idx, p);
        int64_t i0 = (u % J->ntr) * TILE;
        int64_t i1 = i0 + TILE < L->shape[r] ? i0 + TILE : L->shape[r];
        for (int64_t j0 = 0; j0 < L->shape[c]; j0 += TILE) {
            int64_t n = L->shape[c] - j0 < TILE ? L->shape[c] - j0 : TILE;
            for (int k = 1; k < nop; k++)
                if (J->buffered[k])
                    gather_tile(p[k] + i0 * 4 + j0 * L->strides[k][c], L->strides[k][c],
                                i1 - i0, n, storage[k]);
            for (int64_t i = i0; i < i1; i++) {
                char *q[MAX_OPS];
                for (int k = 0; k < nop; k++)
                    q[k] = J->buffered[k] ? (char *)(storage[k] + (i - i0) * TILE)
                                          : p[k] + i * L->strides[k][r] + j0 * L->strides[k][c];
                J->loop(q, J->tile_inner, n);
            }
        }
    }
}

void em_iterate_sized(em_loop_fn loop, int nop, char **ptrs, int ndim, const int64_t *shape,
                      const int64_t *strides, const int *itemsizes) {
    layout L;
    if (!simplify(&L, nop, ndim, shape, strides, 0)) return;
    int64_t inner[MAX_OPS] = {0};
    if (L.ndim == 0) {
        loop(ptrs, inner, 1);
        return;
    }
    int c = L.ndim - 1;
    for (int k = 0; k < nop; k++) inner[k] = L.strides[k][c];
    if (wants_tiles(&L)) {
        int r = L.ndim - 2;
        /* 4-byte inputs read across the tile go through a transposed copy */
        int buffered[MAX_OPS] = {0};
        int64_t tile_inner[MAX_OPS];
        for (int k = 0; k < nop; k++) {
            tile_inner[k] = inner[k];
            if (k > 0 && itemsizes && itemsizes[k] == 4 && L.strides[k][r] == 4 &&
                iabs64(L.strides[k][c]) > 4) {
                buffered[k] = 1;
                tile_inner[k] = 4;
            }
        }
        int64_t ntr = (L.shape[r] + TILE - 1) / TILE;
        tile_job J = {&L, ptrs, loop, tile_inner, buffered, ntr};
        int64_t per_unit = TILE * L.shape[c];
        em_parallel_for(count(&L, r) * ntr, EM_GRAIN / per_unit > 1 ? EM_GRAIN / per_unit : 1,
                        tile_range, &J);
        return;
    }
    ew_job J = {&L, ptrs, loop, inner};
    em_parallel_for(count(&L, L.ndim), EM_GRAIN, ew_range, &J);
}

void em_iterate(em_loop_fn loop, int nop, char **ptrs, int ndim, const int64_t *shape,
                const int64_t *strides) {
    em_iterate_sized(loop, nop, ptrs, ndim, shape, strides, NULL);
}

/* The sequential walk of a reduction: operand 0 is the output, 1 the input. */
static void reduce_seq(const layout *L, char *out, const char *in, em_reduce_inner_fn inner,
                       em_reduce_outer_fn outer) {
    char *p[2] = {out, (char *)in};
    if (L->ndim == 0) {
        inner(p[0], p[1], 0, 1);
        return;
    }
    int c = L->ndim - 1;
    int64_t idx[EMBER_MAX_DIMS] = {0};
    int64_t n = count(L, c);
    if (L->strides[0][c] == 0) {
        /* The input's fastest dim is reduced: fold each run into one output. */
        for (int64_t o = 0; o < n; o++) {
            inner(p[0], p[1], L->strides[1][c], L->shape[c]);
            step(L, c, idx, p);
        }
    } else {
        /* The fastest dim is kept: accumulate whole rows into the output. */
        for (int64_t o = 0; o < n; o++) {
            outer(p[0], L->strides[0][c], p[1], L->strides[1][c], L->shape[c]);
            step(L, c, idx, p);
        }
    }
}

typedef struct {
    const layout *L;
    char *out;
    const char *in;
    em_reduce_inner_fn inner;
    em_reduce_outer_fn outer;
    int d;                     /* the dim cut into chunks */
    /* split_reduced only: */
    int64_t chunk;             /* indices of dim d per chunk */
    const int64_t *pstrides;   /* a chunk's partial output: compact over the kept dims */
    int64_t n_out;
    int itemsize;
    em_reduce_init_fn init;
} red_job;

/* Indices [b, e) of kept dim d: these outputs, each computed whole, in the same
 * order as the sequential walk. */
static void kept_range(void *ctx, int64_t b, int64_t e) {
    const red_job *J = ctx;
    layout S = *J->L;
    S.shape[J->d] = e - b;
    reduce_seq(&S, J->out + b * S.strides[0][J->d], J->in + b * S.strides[1][J->d],
               J->inner, J->outer);
}

/* Chunks [b, e) of reduced dim d, each reduced into its own partial output. */
static void split_range(void *ctx, int64_t b, int64_t e) {
    const red_job *J = ctx;
    layout S = *J->L;
    memcpy(S.strides[0], J->pstrides, sizeof(int64_t) * S.ndim);
    for (int64_t q = b; q < e; q++) {
        int64_t lo = q * J->chunk;
        S.shape[J->d] = J->L->shape[J->d] - lo < J->chunk ? J->L->shape[J->d] - lo : J->chunk;
        char *part = J->out + q * J->n_out * J->itemsize;
        J->init(part, J->n_out);
        reduce_seq(&S, part, J->in + lo * S.strides[1][J->d], J->inner, J->outer);
    }
}

/* Cut reduced dim d into chunks of a fixed size (from the shape only, not the
 * thread count, so the result does not depend on it either), reduce each into a
 * partial output, then fold the partials into `out` in chunk order. A chunk is
 * at least EM_RED_CHUNK input elements, and there are at most 16-1024 of them (the
 * fewer, the fewer elements each output reduces), so the partials stay small next
 * to the input. 0 when d gives fewer than two chunks or the partials can't be
 * allocated. */
static int split_reduced(const layout *L, int d, char *out, const char *in,
                         em_reduce_inner_fn inner, em_reduce_outer_fn outer,
                         em_reduce_init_fn init, em_reduce_inner_fn fold_inner,
                         em_reduce_outer_fn fold_outer, int itemsize) {
    int64_t total = count(L, L->ndim), per = total / L->shape[d];
    int64_t pstrides[EMBER_MAX_DIMS], n_out = 1;
    for (int k = L->ndim - 1; k >= 0; k--) {
        pstrides[k] = L->strides[0][k] ? n_out * itemsize : 0;
        if (L->strides[0][k]) n_out *= L->shape[k];
    }
    int64_t max_parts = total / n_out / 256;
    max_parts = max_parts < 16 ? 16 : max_parts > 1024 ? 1024 : max_parts;
    int64_t chunk = (EM_RED_CHUNK + per - 1) / per;
    int64_t even = (L->shape[d] + max_parts - 1) / max_parts;
    chunk = chunk > even ? chunk : even;
    int64_t nchunks = (L->shape[d] + chunk - 1) / chunk;
    if (nchunks < 2 || nchunks * n_out > total / 8) return 0;
    layout F;                  /* the fold: [chunks, kept dims...] */
    F.nop = 2;
    F.ndim = 1;
    F.shape[0] = nchunks;
    F.strides[0][0] = 0;
    F.strides[1][0] = n_out * itemsize;
    for (int k = 0; k < L->ndim; k++) {
        if (!L->strides[0][k]) continue;
        F.shape[F.ndim] = L->shape[k];
        F.strides[0][F.ndim] = L->strides[0][k];
        F.strides[1][F.ndim] = pstrides[k];
        F.ndim++;
    }
    char *parts = malloc((size_t)(nchunks * n_out * itemsize));
    if (!parts) return 0;
    red_job J = {L, parts, in, inner, outer, d, chunk, pstrides, n_out, itemsize, init};
    int64_t per_chunk = per * chunk;
    em_parallel_for(nchunks, EM_RED_GRAIN / per_chunk > 1 ? EM_RED_GRAIN / per_chunk : 1,
                    split_range, &J);
    reduce_seq(&F, out, parts, fold_inner, fold_outer);
    free(parts);
    return 1;
}

/* Columns [b, e) of the innermost dim, walked row by row, as a thread's share:
 * each row's piece should be a long run of input (a new 4 KiB page per row costs a
 * TLB miss and a fresh prefetch stream), and whole cache lines of output. */
static int64_t column_grain(const layout *L, int64_t total, int64_t run_bytes) {
    int c = L->ndim - 1;
    int64_t s = iabs64(L->strides[1][c]), run = run_bytes / (s ? s : 1);
    int64_t per = total / L->shape[c], grain = (EM_RED_GRAIN + per - 1) / per;
    grain = grain > run ? grain : run;
    return grain > 64 ? grain : 64;
}

static void kept_parallel(const layout *L, int d, int64_t grain, char *out, const char *in,
                          em_reduce_inner_fn inner, em_reduce_outer_fn outer) {
    if (d == L->ndim - 1) {
        /* about two column blocks per thread: longer runs still (how a kept dim is
         * cut never changes the result, so this may follow the thread count) */
        int64_t nt2 = 2 * (int64_t)em_get_num_threads();
        int64_t wide = ((L->shape[d] + nt2 - 1) / nt2 + 15) & ~(int64_t)15;
        grain = grain > wide ? grain : wide;
    }
    red_job J = {L, out, in, inner, outer, d};
    em_parallel_for(L->shape[d], grain, kept_range, &J);
}

void em_reduce(em_reduce_inner_fn inner, em_reduce_outer_fn outer, em_reduce_init_fn init,
               em_reduce_inner_fn fold_inner, em_reduce_outer_fn fold_outer,
               int out_itemsize, char *out, const int64_t *out_strides,
               const char *in, const int64_t *in_strides, int ndim, const int64_t *shape) {
    int64_t strides[2 * EMBER_MAX_DIMS];
    memcpy(strides, out_strides, sizeof(int64_t) * ndim);
    memcpy(strides + ndim, in_strides, sizeof(int64_t) * ndim);
    layout L;
    if (!simplify(&L, 2, ndim, shape, strides, 1)) return;
    int64_t total = count(&L, L.ndim);
    if (L.ndim && total >= 2 * EM_RED_GRAIN) {
        /* Which way to cut depends on the shape only. (1) The outermost kept dim
         * (not the innermost) that gives two grains: each thread streams through
         * whole slabs. */
        int c = L.ndim - 1;
        for (int d = 0; d < c; d++) {
            if (!L.strides[0][d]) continue;
            int64_t per = total / L.shape[d], grain = (EM_RED_GRAIN + per - 1) / per;
            if (L.shape[d] >= 2 * grain) {
                kept_parallel(&L, d, grain, out, in, inner, outer);
                return;
            }
        }
        int c_kept = L.strides[0][c] != 0;
        /* (2) The innermost dim kept, with rows long enough for blocks of 64 KiB. */
        int64_t grain = c_kept ? column_grain(&L, total, 64 << 10) : 0;
        if (c_kept && L.shape[c] >= 2 * grain) {
            kept_parallel(&L, c, grain, out, in, inner, outer);
            return;
        }
        /* (3) Too few outputs, or short rows: a reduced dim in fixed chunks. */
        for (int d = 0; fold_inner && fold_outer && d < L.ndim; d++)
            if (!L.strides[0][d] && L.shape[d] > 1)
                if (split_reduced(&L, d, out, in, inner, outer, init, fold_inner, fold_outer,
                                  out_itemsize))
                    return;
        /* (4) Else column blocks of at least a page per row. */
        grain = c_kept ? column_grain(&L, total, 4096) : 0;
        if (c_kept && L.shape[c] >= 2 * grain) {
            kept_parallel(&L, c, grain, out, in, inner, outer);
            return;
        }
    }
    reduce_seq(&L, out, in, inner, outer);
}


/* Fill n contiguous elements of itemsize bytes with *value: memset for an all-zero
 * value, else a 4 KiB block of copies of it, copied over and over (memcpy speed,
 * where the cast loop with a 0-stride input went element by element, 15x slower). */
void em_fill(char *out, int64_t n, const char *value, int itemsize) {
    size_t total = (size_t)n * (size_t)itemsize;
    int zero = 1;
    for (int i = 0; i < itemsize; i++) zero &= value[i] == 0;
    if (zero) {
        memset(out, 0, total);
        return;
    }
    size_t block = total < 4096 ? total : 4096 / (size_t)itemsize * (size_t)itemsize;
    for (size_t off = 0; off < block; off += (size_t)itemsize) memcpy(out + off, value, (size_t)itemsize);
    for (size_t off = block; off < total; off += block)
        memcpy(out + off, out, total - off < block ? total - off : block);
}

