/* ember's public C view of a tensor, for C and CUDA extension code.
 *
 * Get one from Cython with `ember.tensor_view(t)` (see ember/__init__.pxd) and
 * pass it to plain C. The view borrows: keep the Tensor alive while you use it.
 * Element (i0, i1, ...) lives at data + itemsize * (offset + sum(ik * strides[k])).
 * For C code written against the Python C API, ember/python.h gets the view from a
 * Python object. The header is plain C99 and compiles as C++ and CUDA (nvcc).
 *
 * On a CUDA device, data is a device address but shape and strides point to host
 * memory: pass the sizes a kernel needs as its own arguments, not the view.
 */
#ifndef EMBER_TENSOR_H
#define EMBER_TENSOR_H
#include <stdint.h>

#define EMBER_MAX_DIMS 16

/* The order is ember's dtype number (em.float32.num); never reorder. */
typedef enum {
    EM_BOOL = 0,
    EM_UINT8 = 1,
    EM_INT8 = 2,
    EM_INT16 = 3,
    EM_INT32 = 4,
    EM_INT64 = 5,
    EM_FLOAT16 = 6,
    EM_FLOAT32 = 7,
    EM_FLOAT64 = 8,
    EM_COMPLEX64 = 9,        /* interleaved (re, im) float32 pairs, as C99 float _Complex */
    EM_COMPLEX128 = 10,      /* interleaved (re, im) float64 pairs */
    EM_BFLOAT16 = 11,        /* the top 16 bits of a float32 (uint16_t bits in C) */
    EM_UINT16 = 12,          /* the unsigned integers after the others, so no number moved */
    EM_UINT32 = 13,
    EM_UINT64 = 14,
    EM_NUM_DTYPES = 15
} em_dtype;

typedef enum { EM_CPU = 0, EM_CUDA = 1, EM_OPENCL = 2 } em_device_type;

typedef struct {
    void *data;              /* start of the storage; add offset * itemsize */
    int64_t offset;          /* in elements */
    int32_t dtype;           /* an em_dtype */
    int32_t itemsize;        /* bytes per element */
    int32_t ndim;
    int32_t device_type;     /* an em_device_type */
    int32_t device_index;
    const int64_t *shape;    /* ndim entries */
    const int64_t *strides;  /* ndim entries, in elements (may be 0 or negative) */
} em_tensor_view;

static inline int64_t em_numel(const em_tensor_view *v) {
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++)
        n *= v->shape[i];
    return n;
}

/* 1 when the elements are in row-major order without gaps (as Tensor.is_contiguous:
 * dims of size 1 may have any stride, and an empty tensor is contiguous). */
static inline int em_is_contiguous(const em_tensor_view *v) {
    int64_t expected = 1;
    for (int i = 0; i < v->ndim; i++)
        if (v->shape[i] == 0)
            return 1;
    for (int i = v->ndim - 1; i >= 0; i--) {
        if (v->shape[i] != 1 && v->strides[i] != expected)
            return 0;
        expected *= v->shape[i];
    }
    return 1;
}

/* Address of element (0, ..., 0). */
static inline void *em_data(const em_tensor_view *v) {
    return (char *)v->data + v->offset * v->itemsize;
}

#endif
