/* Host memory for CPU storages.
 *
 * Policy: blocks under 4 KiB come from malloc, up to 128 KiB from posix_memalign
 * (64-byte aligned, for vector loads). Larger blocks are mmapped (from 1 MiB at
 * 2 MiB alignment, advised for transparent huge pages), and a freed one is kept in
 * a cache (up to SLOTS blocks) for the next request of a similar size (its own size
 * class first, else at least the request and at most twice it). A training step
 * holds more than 64 large blocks at its peak (the 6-layer GPT's activations): with
 * 64 slots the rest were unmapped at every step and faulted in afresh at the next
 * (11% of the step in the kernel's page clearing). A training loop or `a + b` on 10^7 elements then reuses warm
 * memory instead of faulting in fresh 4 KiB pages per result: glibc maps blocks
 * over 128 KiB afresh or trims them off its heap when freed, which cost a third of
 * an MLP training step in page faults. The cache holds at most EMBER_HOST_CACHE_MB
 * (default 1024) MiB; em.empty_cache() returns it to the OS.
 *
 * A large block does not start at its 2 MiB boundary but 256 * (1..15) bytes into it,
 * a different offset each time: buffers that all start at the same offset modulo
 * 4 KiB make the CPU's store-to-load disambiguation stall ("4K aliasing") whenever a
 * loop reads one and writes another at the same pace. MPI's copies and reductions
 * (ember.distributed) ran 20-30% slower on 2 MiB-aligned tensors than on NumPy's
 * malloc'd arrays because of it. 256 keeps DLPack's alignment.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "ember_cpu.h"

#define SMALL ((size_t)4096)
#define MAPPED ((size_t)128 << 10)
#define LARGE ((size_t)1 << 20)
#define PAGE ((size_t)4096)
#define HUGE_PAGE ((size_t)2 << 20)
#define SLOTS 512
#define COLOUR ((size_t)256)
#define COLOURS 15                 /* offsets COLOUR * (1..COLOURS), all < 4 KiB */

typedef struct { void *ptr; size_t size; } block;

static block cache[SLOTS];
static int ncached;
static size_t cached_bytes, cache_limit = (size_t)-1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* the mapping behind a mapped block of nbytes, with room for the colour offset,
 * rounded up to a size class (8 per power of two): requests of nearby sizes then share
 * blocks exactly, instead of a large cached block being cut down (its tail unmapped)
 * for a smaller request and the next large request mapping fresh pages */
static size_t align_of(size_t nbytes) { return nbytes < LARGE ? PAGE : HUGE_PAGE; }
static size_t mapped_size(size_t nbytes) {
    size_t n = nbytes + PAGE, top = (size_t)1 << (63 - __builtin_clzll(n));
    size_t step = top / 8 > align_of(nbytes) ? top / 8 : align_of(nbytes);
    return round_up(n, step);
}

static char *coloured(void *base) {
    static unsigned next;
    unsigned k = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % COLOURS;
    return (char *)base + COLOUR * (1 + k);
}

static void reinit_lock_in_child(void) { pthread_mutex_init(&lock, NULL); }

static void init_once(void) {
    const char *env = getenv("EMBER_HOST_CACHE_MB");
    cache_limit = (env ? (size_t)strtoull(env, NULL, 10) : 1024) << 20;
    /* A fork while another thread held the lock would leave it locked forever in
     * the child (DataLoader workers fork). */
    pthread_atfork(NULL, NULL, reinit_lock_in_child);
}

static void *map_block(size_t size) {
    if (size < LARGE) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    size_t span = size + HUGE_PAGE;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *aligned = (char *)round_up((size_t)raw, HUGE_PAGE);
    if (aligned > raw) munmap(raw, aligned - raw);
    size_t tail = (raw + span) - (aligned + size);
    if (tail) munmap(aligned + size, tail);
#ifdef MADV_HUGEPAGE
    madvise(aligned, size, MADV_HUGEPAGE);
#endif
    return aligned;
}

void *em_host_alloc(size_t nbytes) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_once);
    if (nbytes < SMALL)   /* malloc's 16-byte alignment is enough; memalign is slow */
        return malloc(nbytes ? nbytes : 1);
    if (nbytes < MAPPED) {
        void *p = NULL;
        if (posix_memalign(&p, 64, round_up(nbytes, 64))) return NULL;
        return p;
    }
    size_t size = mapped_size(nbytes);
    pthread_mutex_lock(&lock);
    int best = -1;
    for (int i = 0; i < ncached; i++)
        if (cache[i].size >= size && cache[i].size <= 2 * size &&
            (best < 0 || cache[i].size < cache[best].size)) {
            best = i;
            if (cache[i].size == size) break;     /* its own class: nothing to cut */
        }
    if (best >= 0) {
        void *p = cache[best].ptr;
        cached_bytes -= cache[best].size;
        /* The block keeps its true size: free() gets nbytes back, so remember it. */
        size_t got = cache[best].size;
        cache[best] = cache[--ncached];
        pthread_mutex_unlock(&lock);
        if (got != size) munmap((char *)p + size, got - size);
        return coloured(p);
    }
    pthread_mutex_unlock(&lock);
    void *p = map_block(size);
    return p ? coloured(p) : NULL;
}

void em_host_free(void *ptr, size_t nbytes) {
    if (!ptr) return;
    if (nbytes < MAPPED) {
        free(ptr);
        return;
    }
    size_t size = mapped_size(nbytes);
    ptr = (void *)((size_t)ptr & ~(PAGE - 1));    /* back to the mapping's start */
    pthread_mutex_lock(&lock);
    if (ncached < SLOTS && cached_bytes + size <= cache_limit) {
        cache[ncached].ptr = ptr;
        cache[ncached].size = size;
        ncached++;
        cached_bytes += size;
        pthread_mutex_unlock(&lock);
        return;
    }
    pthread_mutex_unlock(&lock);
    munmap(ptr, size);
}

void em_host_empty_cache(void) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ncached; i++) munmap(cache[i].ptr, cache[i].size);
    ncached = 0;
    cached_bytes = 0;
    pthread_mutex_unlock(&lock);
}

size_t em_host_cached_bytes(void) { return cached_bytes; }
