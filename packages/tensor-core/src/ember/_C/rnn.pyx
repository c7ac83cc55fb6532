# kernels: rnn.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU LSTM cell kernels (kernels/cpu/rnn.c), for ember.ops.rnn; other backends
provide functions of the same names and arguments."""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from ember._C.core cimport TensorBase, new_tensor

include "float_kernels.pxi"

cdef extern from *:
    """
    void em_lstm_cell_f32(const float *gates, const float *c, float *hc, int64_t B, int64_t H);
    void em_lstm_cell_f64(const double *gates, const double *c, double *hc, int64_t B,
                          int64_t H);
    void em_lstm_cell_backward_f32(const float *ghc, const float *gates, const float *c,
                                   const float *hc, float *dgates, float *dc, int64_t B,
                                   int64_t H);
    void em_lstm_cell_backward_f64(const double *ghc, const double *gates, const double *c,
                                   const double *hc, double *dgates, double *dc, int64_t B,
                                   int64_t H);
    """
    void em_lstm_cell_f32(const float *gates, const float *c, float *hc, int64_t B,
                          int64_t H) nogil
    void em_lstm_cell_f64(const double *gates, const double *c, double *hc, int64_t B,
                          int64_t H) nogil
    void em_lstm_cell_backward_f32(const float *ghc, const float *gates, const float *c,
                                   const float *hc, float *dgates, float *dc, int64_t B,
                                   int64_t H) nogil
    void em_lstm_cell_backward_f64(const double *ghc, const double *gates, const double *c,
                                   const double *hc, double *dgates, double *dc, int64_t B,
                                   int64_t H) nogil


cdef void _cell_shapes(TensorBase gates, TensorBase c, str op) except *:
    _check(gates, op)
    _check(c, op)
    if gates._ndim != 2 or c._ndim != 2 or gates._dtype != c._dtype or \
            c._shape[0] != gates._shape[0] or 4 * c._shape[1] != gates._shape[1]:
        raise ValueError(f"{op}: expected gates (B, 4H) and c (B, H) of one dtype, got "
                         f"{tuple(gates.shape)} {gates.dtype!r} and {tuple(c.shape)} "
                         f"{c.dtype!r}")


def lstm_cell(TensorBase gates not None, TensorBase c not None):
    """hc (B, 2H) = [h' | c'] of the LSTM cell from contiguous gate pre-activations
    gates (B, 4H) (order i, f, g, o) and the cell state c (B, H)."""
    _cell_shapes(gates, c, "lstm_cell")
    cdef int64_t B = c._shape[0], H = c._shape[1]
    cdef int64_t shape[2]
    shape[0], shape[1] = B, 2 * H
    cdef TensorBase hc = _new(c, 2, shape)
    cdef char *gp = gates.ptr()
    cdef char *cp = c.ptr()
    cdef char *hp = hc.ptr()
    if B and H:
        with nogil:
            if c._dtype == FLOAT32:
                em_lstm_cell_f32(<const float *>gp, <const float *>cp, <float *>hp, B, H)
            else:
                em_lstm_cell_f64(<const double *>gp, <const double *>cp, <double *>hp, B, H)
    return hc


def lstm_cell_backward(TensorBase grad not None, TensorBase gates not None,
                       TensorBase c not None, TensorBase hc not None):
    """(dgates, dc) of lstm_cell from the gradient of hc and the saved gates, c, hc."""
    _cell_shapes(gates, c, "lstm_cell_backward")
    _same(grad, hc, "lstm_cell_backward")
    cdef int64_t B = c._shape[0], H = c._shape[1]
    cdef char *hp = _opt(hc, c, 2 * B * H, "lstm_cell_backward", "hc")
    cdef TensorBase dgates = _like(gates), dc = _like(c)
    cdef char *gr = grad.ptr()
    cdef char *gp = gates.ptr()
    cdef char *cp = c.ptr()
    cdef char *dgp = dgates.ptr()
    cdef char *dcp = dc.ptr()
    if B and H:
        with nogil:
            if c._dtype == FLOAT32:
                em_lstm_cell_backward_f32(<const float *>gr, <const float *>gp,
                                          <const float *>cp, <const float *>hp,
                                          <float *>dgp, <float *>dcp, B, H)
            else:
                em_lstm_cell_backward_f64(<const double *>gr, <const double *>gp,
                                          <const double *>cp, <const double *>hp,
                                          <double *>dgp, <double *>dcp, B, H)
    return dgates, dc
