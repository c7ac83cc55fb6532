/* The raw memory pairs the caching allocator (allocator.h) runs over on a GPU. */
#ifndef EMBER_CUDA_RUNTIME_H
#define EMBER_CUDA_RUNTIME_H
#include <stddef.h>
#include <stdint.h>
/* ctx: the device index, as (void *)(intptr_t)index */
void *em_cuda_raw_alloc(void *ctx, size_t nbytes);
void em_cuda_raw_free(void *ctx, void *ptr, size_t nbytes);
/* page-locked host memory (ctx unused) */
void *em_cuda_pinned_alloc(void *ctx, size_t nbytes);
void em_cuda_pinned_free(void *ctx, void *ptr, size_t nbytes);
#endif
