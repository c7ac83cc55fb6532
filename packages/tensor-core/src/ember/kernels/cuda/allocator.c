/* The caching allocator (policy in allocator.h). Plain C over a raw alloc/free pair:
 * ember._C.cuda gives it cudaMalloc/cudaFree per device (and cudaHostAlloc for pinned
 * host memory), the tests give it host malloc with an out-of-memory limit. */
#include <pthread.h>
#include <stdlib.h>
#include "allocator.h"

#define ROUND ((size_t)512)
#define SMALL_REQUEST ((size_t)1 << 20)      /* up to here: the small pool */
#define SMALL_SEGMENT ((size_t)2 << 20)
#define MEDIUM_REQUEST ((size_t)10 << 20)    /* under this: a 20 MiB segment */
#define MEDIUM_SEGMENT ((size_t)20 << 20)
#define LARGE_ROUND ((size_t)2 << 20)
#define LARGE_MIN_SPLIT ((size_t)1 << 20)    /* a large block's rest is split off above this */
#define SUBBINS 4                            /* bins per power of two */
#define NBINS (64 * SUBBINS)

typedef struct seg_node { em_block *head; struct seg_node *prev, *next; } seg_node;

struct em_allocator {
    em_raw_alloc_fn raw_alloc;
    em_raw_free_fn raw_free;
    void *ctx;
    pthread_mutex_t lock;
    em_block *bins[2][NBINS];
    seg_node *segments;          /* every live segment, for empty_cache and stats */
    em_alloc_stats st;
};

size_t em_allocator_round(size_t n) { return n < ROUND ? ROUND : (n + ROUND - 1) / ROUND * ROUND; }

size_t em_allocator_segment_size(size_t rounded) {
    if (rounded <= SMALL_REQUEST) return SMALL_SEGMENT;
    if (rounded < MEDIUM_REQUEST) return MEDIUM_SEGMENT;
    return (rounded + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
}

/* Bin of a size: the power of two below it and the next two bits, so the blocks of
 * one bin differ by at most 25% and every block of a higher bin is larger. */
static int bin_of(size_t size) {
    int lg = 63 - __builtin_clzll((unsigned long long)size);
    int sub = lg >= 2 ? (int)((size >> (lg - 2)) & (SUBBINS - 1)) : 0;
    return lg * SUBBINS + sub;
}

static void bin_insert(em_allocator *a, em_block *b) {
    em_block **head = &a->bins[b->pool][bin_of(b->size)];
    b->bin_prev = NULL;
    b->bin_next = *head;
    if (*head) (*head)->bin_prev = b;
    *head = b;
}

static void bin_remove(em_allocator *a, em_block *b) {
    if (b->bin_prev) b->bin_prev->bin_next = b->bin_next;
    else a->bins[b->pool][bin_of(b->size)] = b->bin_next;
    if (b->bin_next) b->bin_next->bin_prev = b->bin_prev;
    b->bin_prev = b->bin_next = NULL;
}

/* The smallest free block of `pool` that holds `size`: best fit within the first bin
 * that has one (any block of a later bin is larger than every block of this one). */
static em_block *find_free(em_allocator *a, int pool, size_t size) {
    for (int bin = bin_of(size); bin < NBINS; bin++) {
        em_block *best = NULL;
        for (em_block *b = a->bins[pool][bin]; b; b = b->bin_next)
            if (b->size >= size && (!best || b->size < best->size || (b->size == best->size && b->ptr < best->ptr)))
                best = b;
        if (best) return best;
    }
    return NULL;
}

static void bump(int64_t *cur, int64_t *peak, int64_t delta) {
    *cur += delta;
    if (*cur > *peak) *peak = *cur;
}

em_allocator *em_allocator_new(em_raw_alloc_fn raw_alloc, em_raw_free_fn raw_free, void *ctx) {
    em_allocator *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->raw_alloc = raw_alloc;
    a->raw_free = raw_free;
    a->ctx = ctx;
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

static void release_segment(em_allocator *a, seg_node *s) {
    em_block *b = s->head;
    size_t size = b->segment_size;
    a->raw_free(a->ctx, b->ptr, size);
    while (b) { em_block *next = b->seg_next; free(b); b = next; }
    if (s->prev) s->prev->next = s->next; else a->segments = s->next;
    if (s->next) s->next->prev = s->prev;
    free(s);
    a->st.reserved_bytes -= (int64_t)size;
    a->st.segments--;
    a->st.num_segment_frees++;
}

void em_allocator_destroy(em_allocator *a) {
    if (!a) return;
    while (a->segments) release_segment(a, a->segments);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

static size_t empty_cache_locked(em_allocator *a) {
    size_t released = 0;
    for (seg_node *s = a->segments, *next; s; s = next) {
        next = s->next;
        em_block *h = s->head;
        if (!h->allocated && !h->seg_next) {   /* free blocks merge: one block = wholly free */
            bin_remove(a, h);
            released += h->segment_size;
            release_segment(a, s);
        }
    }
    return released;
}

size_t em_allocator_empty_cache(em_allocator *a) {
    pthread_mutex_lock(&a->lock);
    size_t r = empty_cache_locked(a);
    pthread_mutex_unlock(&a->lock);
    return r;
}

static em_block *new_segment(em_allocator *a, size_t rounded) {
    size_t size = em_allocator_segment_size(rounded);
    void *p = a->raw_alloc(a->ctx, size);
    if (!p) {            /* give the cache back and try once more */
        a->st.num_alloc_retries++;
        empty_cache_locked(a);
        p = a->raw_alloc(a->ctx, size);
        if (!p) { a->st.num_ooms++; return NULL; }
    }
    em_block *b = calloc(1, sizeof *b);
    seg_node *s = calloc(1, sizeof *s);
    if (!b || !s) { free(b); free(s); a->raw_free(a->ctx, p, size); return NULL; }
    b->ptr = p;
    b->size = b->segment_size = size;
    b->pool = rounded > SMALL_REQUEST;
    s->head = b;
    s->next = a->segments;
    if (a->segments) a->segments->prev = s;
    a->segments = s;
    bump(&a->st.reserved_bytes, &a->st.reserved_peak, (int64_t)size);
    bump(&a->st.segments, &a->st.segments_peak, 1);
    a->st.num_segment_allocs++;
    return b;
}

em_block *em_allocator_alloc(em_allocator *a, size_t nbytes) {
    size_t size = em_allocator_round(nbytes);
    int pool = size > SMALL_REQUEST;
    pthread_mutex_lock(&a->lock);
    em_block *b = find_free(a, pool, size);
    if (b) {
        bin_remove(a, b);
        a->st.num_cache_hits++;
    } else if (!(b = new_segment(a, size))) {
        pthread_mutex_unlock(&a->lock);
        return NULL;
    }
    size_t rest = b->size - size;
    if (pool == 0 ? rest >= ROUND : rest > LARGE_MIN_SPLIT) {
        em_block *r = calloc(1, sizeof *r);
        if (r) {     /* without memory for the record, the block is just not split */
            r->ptr = b->ptr + size;
            r->size = rest;
            r->pool = pool;
            r->seg_prev = b;
            r->seg_next = b->seg_next;
            if (b->seg_next) b->seg_next->seg_prev = r;
            b->seg_next = r;
            b->size = size;
            bin_insert(a, r);
        }
    }
    b->allocated = 1;
    b->requested = nbytes;
    bump(&a->st.allocated_bytes, &a->st.allocated_peak, (int64_t)b->size);
    bump(&a->st.requested_bytes, &a->st.requested_peak, (int64_t)nbytes);
    bump(&a->st.active_blocks, &a->st.active_peak, 1);
    a->st.num_allocs++;
    pthread_mutex_unlock(&a->lock);
    return b;
}

/* Fold `next` (free, not in a bin) into b, its left neighbour. */
static void absorb(em_block *b, em_block *next) {
    b->size += next->size;
    b->seg_next = next->seg_next;
    if (next->seg_next) next->seg_next->seg_prev = b;
    free(next);
}

void em_allocator_free(em_allocator *a, em_block *b) {
    pthread_mutex_lock(&a->lock);
    a->st.allocated_bytes -= (int64_t)b->size;
    a->st.requested_bytes -= (int64_t)b->requested;
    a->st.active_blocks--;
    a->st.num_frees++;
    b->allocated = 0;
    b->requested = 0;
    if (b->seg_next && !b->seg_next->allocated) {
        bin_remove(a, b->seg_next);
        absorb(b, b->seg_next);
    }
    if (b->seg_prev && !b->seg_prev->allocated) {
        em_block *prev = b->seg_prev;
        bin_remove(a, prev);
        absorb(prev, b);
        b = prev;
    }
    bin_insert(a, b);
    pthread_mutex_unlock(&a->lock);
}

void em_allocator_stats(em_allocator *a, em_alloc_stats *out) {
    pthread_mutex_lock(&a->lock);
    a->st.inactive_split_bytes = 0;
    for (seg_node *s = a->segments; s; s = s->next)
        if (s->head->seg_next)                  /* a split segment: count its free parts */
            for (em_block *b = s->head; b; b = b->seg_next)
                if (!b->allocated) a->st.inactive_split_bytes += (int64_t)b->size;
    *out = a->st;
    pthread_mutex_unlock(&a->lock);
}

void em_allocator_reset_peaks(em_allocator *a) {
    pthread_mutex_lock(&a->lock);
    a->st.allocated_peak = a->st.allocated_bytes;
    a->st.requested_peak = a->st.requested_bytes;
    a->st.reserved_peak = a->st.reserved_bytes;
    a->st.active_peak = a->st.active_blocks;
    a->st.segments_peak = a->st.segments;
    pthread_mutex_unlock(&a->lock);
}

void *em_host_raw_alloc(void *ctx, size_t nbytes) {
    em_host_raw *h = ctx;
    h->calls++;
    if (h->limit && h->in_use + nbytes > h->limit) { h->fails++; return NULL; }
    void *p = malloc(nbytes);
    if (p) h->in_use += nbytes;
    return p;
}

void em_host_raw_free(void *ctx, void *ptr, size_t nbytes) {
    em_host_raw *h = ctx;
    free(ptr);
    h->in_use -= nbytes;
}
