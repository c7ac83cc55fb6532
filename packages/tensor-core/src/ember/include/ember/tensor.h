/* ember's public C view of a tensor, for C and CUDA extension code.
 *
 * Get one from Cython with `ember.tensor_view(t)` (see ember/__init__.pxd) and
 * pass it to plain C. The view borrows: keep the Tensor alive while you use it.
 * Element (i0, i1, ...) lives at data + itemsize * (offset + sum(ik * strides[k])).
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
    EM_NUM_DTYPES = 9
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

#endif
