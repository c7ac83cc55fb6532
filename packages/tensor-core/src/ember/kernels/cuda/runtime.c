/* cudaMalloc/cudaFree and cudaHostAlloc/cudaFreeHost as the allocator's raw pairs. */
#include <cuda_runtime_api.h>
#include "runtime.h"

void *em_cuda_raw_alloc(void *ctx, size_t nbytes) {
    int dev = (int)(intptr_t)ctx, prev = dev;
    void *p = NULL;
    cudaGetDevice(&prev);
    if (prev != dev) cudaSetDevice(dev);
    cudaError_t err = cudaMalloc(&p, nbytes);
    if (prev != dev) cudaSetDevice(prev);
    if (err != cudaSuccess) {
        cudaGetLastError();     /* an OOM is reported by the allocator, not left sticky */
        return NULL;
    }
    return p;
}

void em_cuda_raw_free(void *ctx, void *ptr, size_t nbytes) {
    (void)ctx; (void)nbytes;
    cudaFree(ptr);              /* waits for the device, which is what empty_cache wants */
}

void *em_cuda_pinned_alloc(void *ctx, size_t nbytes) {
    (void)ctx;
    void *p = NULL;
    /* portable: usable by copies on any device's stream */
    if (cudaHostAlloc(&p, nbytes, cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

void em_cuda_pinned_free(void *ctx, void *ptr, size_t nbytes) {
    (void)ctx; (void)nbytes;
    cudaFreeHost(ptr);
}
