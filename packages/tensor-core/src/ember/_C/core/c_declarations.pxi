"""The C that the core calls: the CPU kernels and allocator (ember_cpu.h), small inline
C helpers, the CPU API capsule every extension shares, and the compile-time limits."""

cdef extern from "ember_cpu.h" nogil:
    ctypedef void (*em_loop_fn)(char **ptrs, const int64_t *strides, int64_t n)
    ctypedef void (*em_reduce_inner_fn)(char *out, const char *inp, int64_t stride, int64_t n)
    ctypedef void (*em_reduce_outer_fn)(char *out, int64_t os, const char *inp, int64_t s,
                                        int64_t n)
    ctypedef void (*em_reduce_init_fn)(char *out, int64_t n)
    int em_num_elementwise_ops()
    em_loop_fn em_elementwise_loop(int op, int dtype)
    em_loop_fn em_cast_loop(int src, int dst)
    void em_set_f16c_loops(int on)
    em_reduce_inner_fn em_reduce_inner(int op, int dtype)
    em_reduce_outer_fn em_reduce_outer(int op, int dtype)
    em_reduce_init_fn em_reduce_init(int op, int dtype)
    void em_iterate(em_loop_fn loop, int nop, char **ptrs, int ndim, const int64_t *shape,
                    const int64_t *strides)
    void em_iterate_sized(em_loop_fn loop, int nop, char **ptrs, int ndim,
                          const int64_t *shape, const int64_t *strides, const int *itemsizes)
    void em_reduce(em_reduce_inner_fn inner, em_reduce_outer_fn outer, em_reduce_init_fn init,
                   em_reduce_inner_fn fold_inner, em_reduce_outer_fn fold_outer,
                   int out_itemsize, char *out, const int64_t *out_strides,
                   const char *inp, const int64_t *in_strides, int ndim, const int64_t *shape)
    void em_fill(char *out, int64_t n, const char *value, int itemsize)
    void *em_host_alloc(size_t nbytes)
    void em_host_free(void *ptr, size_t nbytes)
    void em_host_empty_cache()
    size_t em_host_cached_bytes()

cdef extern from *:
    """
    /* Grad mode is per OS thread, as in PyTorch; a C thread-local costs nothing. */
    static __thread int em_grad_off = 0;
    static __thread int em_inference_on = 0;
    static void em_store_f16(char *p, double v) { *(_Float16 *)p = (_Float16)v; }
    static double em_load_f16(const char *p) { return (double)*(const _Float16 *)p; }
    /* bfloat16 scalars: through float, rounded as the kernels round */
    #include "ember_bf16.h"
    static void em_store_bf16(char *p, double v) {
        *(em_bfloat16 *)p = em_f32_to_bf16((float)v);
    }
    static double em_load_bf16(const char *p) {
        return (double)em_bf16_to_f32(*(const em_bfloat16 *)p);
    }
    /* int64 arithmetic that reports overflow (nonzero) instead of wrapping: layouts
       come from users, and a wrapped size or reach would pass any bounds check. */
    static int em_mul_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_mul_overflow(a, b, r);
    }
    static int em_add_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_add_overflow(a, b, r);
    }
    """
    int em_grad_off
    int em_inference_on
    void em_store_f16(char *p, double v)
    double em_load_f16(const char *p)
    void em_store_bf16(char *p, double v)
    double em_load_bf16(const char *p)
    bint em_mul_ovf(int64_t a, int64_t b, int64_t *r) nogil
    bint em_add_ovf(int64_t a, int64_t b, int64_t *r) nogil

cdef extern from "cpu_api.h":
    const void *em_cpu_api_table()

# The thread pool and GEMM that every ember extension shares (cpu_api.h).
_cpu_api = PyCapsule_New(<void *>em_cpu_api_table(), b"ember._C.core._cpu_api", NULL)

cdef extern from "Python.h":
    ctypedef object (*newfunc)(object, object, PyObject *)
    ctypedef struct PyTypeObject_new "PyTypeObject":
        newfunc tp_new

DEF MAXD = 16
DEF NBIG = 1 << 16      # release the GIL above this many elements
