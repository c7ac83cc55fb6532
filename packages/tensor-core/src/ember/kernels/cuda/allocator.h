/* The CUDA caching allocator, written over a raw alloc/free pair so that its logic
 * runs (and is tested) with host malloc on machines without a GPU.
 *
 * Policy (PyTorch's, which users know): requests are rounded up to 512 bytes.
 * Requests up to 1 MiB come from 2 MiB segments (the small pool); larger ones from
 * 20 MiB segments when under 10 MiB, else from a segment of the request rounded up
 * to 2 MiB (the large pool). A free block big enough is split (the rest stays
 * cached), a freed block merges with free neighbours of its segment, and the cache
 * returns to the driver only by empty_cache() or when an allocation would otherwise
 * fail (then it is freed and the raw allocation retried once). The caller owns
 * stream ordering: ember runs one stream per device, so a block freed on the host
 * can be reused by the next launch on that stream.
 */
#ifndef EMBER_CUDA_ALLOCATOR_H
#define EMBER_CUDA_ALLOCATOR_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The raw pair: alloc returns NULL when out of memory; free gets the size back. */
typedef void *(*em_raw_alloc_fn)(void *ctx, size_t nbytes);
typedef void (*em_raw_free_fn)(void *ctx, void *ptr, size_t nbytes);

typedef struct em_block em_block;
typedef struct em_allocator em_allocator;

struct em_block {
    char *ptr;
    size_t size;            /* the block's (rounded) size */
    size_t requested;       /* what the caller asked for (0 when free) */
    int allocated, pool;    /* pool: 0 small, 1 large */
    em_block *seg_prev, *seg_next;   /* neighbours in address order within the segment */
    em_block *bin_prev, *bin_next;   /* the free list of the block's size bin */
    size_t segment_size;    /* set on a segment's first block: the raw allocation */
};

/* Counters, PyTorch's memory_stats() names in comments. */
typedef struct {
    int64_t allocated_bytes, allocated_peak;      /* allocated_bytes.all.{current,peak} */
    int64_t requested_bytes, requested_peak;      /* requested_bytes.all.{current,peak} */
    int64_t reserved_bytes, reserved_peak;        /* reserved_bytes.all.{current,peak} */
    int64_t active_blocks, active_peak;           /* active.all.{current,peak} */
    int64_t segments, segments_peak;              /* segment.all.{current,peak} */
    int64_t inactive_split_bytes;                 /* inactive_split_bytes.all.current */
    int64_t num_allocs, num_frees;                /* allocation.all.allocated/freed */
    int64_t num_segment_allocs, num_segment_frees;/* segment.all.allocated/freed */
    int64_t num_cache_hits;                       /* requests served without the driver */
    int64_t num_alloc_retries, num_ooms;          /* num_alloc_retries, num_ooms */
} em_alloc_stats;

em_allocator *em_allocator_new(em_raw_alloc_fn raw_alloc, em_raw_free_fn raw_free, void *ctx);
/* Frees every segment (blocks still allocated included) and the allocator. */
void em_allocator_destroy(em_allocator *a);
/* A block of at least nbytes (nbytes 0 gives a 512-byte block), or NULL when the raw
 * allocation fails even after the cache was emptied (stats.num_ooms counts it). */
em_block *em_allocator_alloc(em_allocator *a, size_t nbytes);
void em_allocator_free(em_allocator *a, em_block *b);
/* Returns every wholly free segment to the raw free; the bytes released. */
size_t em_allocator_empty_cache(em_allocator *a);
void em_allocator_stats(em_allocator *a, em_alloc_stats *out);
void em_allocator_reset_peaks(em_allocator *a);
/* The size the allocator rounds a request to, and the segment it would reserve. */
size_t em_allocator_round(size_t nbytes);
size_t em_allocator_segment_size(size_t rounded);

/* Test hook: a raw pair over host malloc that fails once `limit` bytes are out. */
typedef struct { size_t limit, in_use; int64_t calls, fails; } em_host_raw;
void *em_host_raw_alloc(void *ctx, size_t nbytes);
void em_host_raw_free(void *ctx, void *ptr, size_t nbytes);

#ifdef __cplusplus
}
#endif
#endif
