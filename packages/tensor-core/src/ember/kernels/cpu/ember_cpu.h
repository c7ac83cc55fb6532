/* The CPU backend's kernels, as the Cython core sees them. */
#ifndef EMBER_CPU_H
#define EMBER_CPU_H
#include <stddef.h>
#include <stdint.h>
#include "../../include/ember/tensor.h"

/* One inner loop of an op table row for one dtype: ptrs[0] is the output, ptrs[1..]
 * the inputs; strides are in bytes (0 = broadcast); n elements. */
typedef void (*em_loop_fn)(char **ptrs, const int64_t *strides, int64_t n);

/* Generated from ops/table.py (build output: generated/ember_cpu_ops.c). */
int em_num_elementwise_ops(void);
em_loop_fn em_elementwise_loop(int op, int dtype);
em_loop_fn em_cast_loop(int src_dtype, int dst_dtype);
/* The float16 loops' copies: 1 = the AVX2+F16C ones where the CPU has them (the
 * default), 0 = the portable ones (tests compare the two). */
void em_set_f16c_loops(int on);
/* Reductions: out = combine(out, run) for a strided run of n inputs ("inner"), or
 * elementwise out[i] = combine(out[i], in[i]) ("outer"); init writes the identity. */
typedef void (*em_reduce_inner_fn)(char *out, const char *in, int64_t stride, int64_t n);
typedef void (*em_reduce_outer_fn)(char *out, int64_t out_stride, const char *in,
                                   int64_t in_stride, int64_t n);
typedef void (*em_reduce_init_fn)(char *out, int64_t n);
em_reduce_inner_fn em_reduce_inner(int op, int dtype);
em_reduce_outer_fn em_reduce_outer(int op, int dtype);
em_reduce_init_fn em_reduce_init(int op, int dtype);

/* iterator.c: run `loop` over an n-d broadcast iteration space. strides[op][dim] in
 * bytes. Reorders and merges dims, tiles transposed 2-d access, and shares large
 * iteration spaces out to the thread pool. */
void em_iterate(em_loop_fn loop, int nop, char **ptrs, int ndim, const int64_t *shape,
                const int64_t *strides);
/* The same, told each operand's element size, which lets it copy 4-byte operands
 * that are read across a tile into a transposed buffer first. */
void em_iterate_sized(em_loop_fn loop, int nop, char **ptrs, int ndim, const int64_t *shape,
                      const int64_t *strides, const int *itemsizes);
/* Reduce `in` into `out` (out_strides are 0 along reduced dims); out already holds
 * the identity. Large reductions run on the thread pool; when there are too few
 * outputs to share out, and fold_inner/fold_outer are given, a reduced dim is cut
 * into chunks whose partial results (in the output dtype, out_itemsize bytes each,
 * set up by init) are folded in order by the same reduction over the OUTPUT dtype
 * (an int8 sum's partials are int64). Pass NULL folds where a partial rounded to the
 * output dtype loses too much (float16 sums). */
void em_reduce(em_reduce_inner_fn inner, em_reduce_outer_fn outer, em_reduce_init_fn init,
               em_reduce_inner_fn fold_inner, em_reduce_outer_fn fold_outer,
               int out_itemsize, char *out, const int64_t *out_strides,
               const char *in, const int64_t *in_strides, int ndim, const int64_t *shape);

/* Fill n contiguous elements of itemsize bytes with the value at `value`. */
void em_fill(char *out, int64_t n, const char *value, int itemsize);

/* alloc.c: host memory. Large blocks are 2 MiB aligned, advised for huge pages and
 * kept for reuse, so a fresh 40 MB result does not pay 10,000 page faults. */
void *em_host_alloc(size_t nbytes);
void em_host_free(void *ptr, size_t nbytes);
void em_host_empty_cache(void);
size_t em_host_cached_bytes(void);

/* random.c: counter-based random numbers (Philox4x32-10). Element i of a request
 * uses the stream position offset + i, so any device reproduces any element. */
void em_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
void em_random_uniform(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                       double low, double high);
void em_random_normal(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                      double mean, double std);
void em_random_int(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                   int64_t low, uint64_t range);
void em_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset);
/* Float32 kernels whose bodies are chains of multiply-adds (exp, tanh polynomials)
 * are built twice, for the baseline and for AVX2+FMA (target_clones' "avx2" leaves
 * FMA out), and EM_F32(fn) picks fn_f32_avx2 or fn_f32 at run time. A kernel file
 * instantiates its float32 body with EM_AVX2_FMA as the attribute and the _f32_avx2
 * suffix under #ifdef EM_F32_AVX2, and once plainly with _f32. */
#if defined(__x86_64__) && defined(__GNUC__)
#define EM_F32_AVX2 1
#define EM_AVX2_FMA __attribute__((target("avx2,fma")))
static inline int em_cpu_has_avx2_fma(void) {
    static int have = -1;
    if (have < 0) have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return have;
}
#define EM_F32(fn) (em_cpu_has_avx2_fma() ? fn##_f32_avx2 : fn##_f32)
#else
#define EM_F32(fn) fn##_f32
#endif
#endif
