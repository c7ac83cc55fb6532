/* The indexing, sorting and scan kernels of the CPU backend (index.c, sort.c,
 * scan.c), as ember/_C/index.pyx sees them. */
#ifndef EMBER_INDEX_H
#define EMBER_INDEX_H
#include <stdint.h>
#include "../../include/ember/tensor.h"
#include "ember_bf16.h"

#define EM_MAX_INDICES EMBER_MAX_DIMS

/* One int64 index tensor, as a loop over the iteration space reads it. */
typedef struct {
    const int64_t *data;              /* element 0 of the index tensor */
    int64_t strides[EMBER_MAX_DIMS];  /* elements of data per step of each iteration dim */
    int64_t step;                     /* bytes moved in the indexed tensor per index unit */
    int64_t size;                     /* values must lie in [0, size) */
} em_index_arg;

enum { EM_SCATTER_ASSIGN = 0, EM_SCATTER_ADD = 1, EM_SCATTER_MUL = 2,
       EM_SCATTER_MAX = 3, EM_SCATTER_MIN = 4 };

/* index.c */
int64_t em_index_normalize(int64_t *idx, int64_t n, int64_t size, int allow_negative);
int em_index_gather(int itemsize, int ndim, const int64_t *shape,
                    char *out, const int64_t *out_strides,
                    const char *src, const int64_t *src_strides,
                    int nidx, const em_index_arg *idx);
int em_index_scatter(int dtype, int op, int ndim, const int64_t *shape,
                     char *dst, const int64_t *dst_strides,
                     const char *src, const int64_t *src_strides,
                     int nidx, const em_index_arg *idx);
int64_t em_count_true(const uint8_t *mask, int64_t n);
void em_compress(int itemsize, const char *src, int64_t ss, const uint8_t *mask, int64_t n,
                 int64_t count, char *out);
void em_nonzero(const uint8_t *mask, int ndim, const int64_t *shape, int64_t count,
                int64_t *out);

/* sort.c: stable sort of nrows contiguous rows of n elements in place, writing the
 * original positions to idx; NaN sorts as the largest value. -1: out of memory. */
int em_sort_rows(int dtype, char *vals, int64_t *idx, int64_t nrows, int64_t n,
                 int descending);
/* For each of the m values of row r, the insertion point in row r of seq (row r at
 * seq + r * seq_row_stride elements; stride 0 shares one row): the first position
 * whose element is >= (left) or > (right) the value. NaN sorts last (as NumPy). */
void em_searchsorted(int dtype, const char *seq, int64_t seq_row_stride, int64_t n,
                     const char *vals, int64_t nrows, int64_t m, int64_t *out, int right);

/* scan.c: inclusive scan along the middle dim of a contiguous (outer, n, inner)
 * block, in place. op 0: sum, 1: product. -1: out of memory. */
int em_scan(int op, int dtype, char *data, int64_t outer, int64_t n, int64_t inner);
#endif
