"""embedding: rows of a weight matrix at integer indices (the index family's gather
kernel; no kernel of its own). embedding_backward (its scatter-add of the gradient
rows) is the derivative table's."""
from __future__ import annotations

from ember._args import int_arg
from ember._C import core as _core
from ember.ops._kernel_args import (
    _cast_back,
    _float_tensor,
    _number,
    _same_device,
    _tensor,
    _work,
    _work_dtype,
)

__all__ = ['embedding']

_int64 = _core._dtype_by_name("int64")


# embedding -----------------------------------------------------------------------------

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """The rows of `weight` (num_embeddings, dim) at the integer indices `input`:
    shape input.shape + (dim,). The argument order is torch.nn.functional.embedding's
    (indices first). padding_idx (negative counts from the end) gets no gradient;
    max_norm renormalises, in place in weight, the rows it looks up whose norm_type
    norm exceeds it (as PyTorch). Records "embedding" with attrs indices,
    num_weights, padding_idx, scale_grad_by_freq and input (the indices as given)."""
    op = "embedding"
    _tensor(input, op, "indices")
    _float_tensor(weight, op, "weight")
    if input.dtype.kind != "int":
        raise TypeError(f"{op}: indices must be an integer tensor, got {input.dtype!r}")
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-d (num_embeddings, embedding_dim), got "
                         f"shape {tuple(weight.shape)}")
    if sparse:
        raise NotImplementedError(f"{op}: sparse gradients are not supported")
    _same_device(op, weight, input)
    num, dim = weight.shape
    if padding_idx is not None:
        padding_idx = int_arg(padding_idx, "padding_idx", op)
        if not -num <= padding_idx < num:
            raise ValueError(f"{op}: padding_idx={padding_idx} must be within the "
                             f"{num} embeddings")
        padding_idx %= num
    from ember.ops.index import _along, _prep, _run
    with _core._no_record():
        idx = _prep(input.reshape(-1), num, op, "dim 0 of the weight", allow_negative=False)
        if max_norm is not None:
            _renorm_rows_(weight, idx, _number(max_norm, op, "max_norm"),
                          _number(norm_type, op, "norm_type"))
        # the gather kernel at once: index_select would check and copy idx again
        out = _core.empty((idx.shape[0], dim), weight.dtype, weight.device)
        strides, args = _along(weight, 0, idx)
        _run("gather", op, out, weight, strides, args)
        out = out.reshape(tuple(input.shape) + (dim,))
    return _core.record(op, (weight,), out,
                        {"indices": idx.reshape(tuple(input.shape)), "num_weights": num,
                         "input": input,       # the indices as given, for ember.onnx
                         "padding_idx": padding_idx,
                         "scale_grad_by_freq": bool(scale_grad_by_freq)})


def _renorm_rows_(weight, idx, max_norm, norm_type):
    """weight[i] *= max_norm / (norm + 1e-7) for the looked-up rows whose norm exceeds
    max_norm (PyTorch's embedding_renorm_), in place."""
    from ember.linalg import vector_norm
    from ember.ops.elementwise import where
    from ember.ops.sort import unique
    rows = unique(idx)
    w = weight.index_select(0, rows)
    norms = vector_norm(w, norm_type, dim=1, keepdim=True)
    scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    weight.index_copy_(0, rows, (w * scale).to(weight.dtype))


def embedding_backward(grad, indices, num_weights, padding_idx=None, scale_grad_by_freq=False):
    """The gradient w.r.t. embedding's weight: grad's rows added up at their indices
    (one scatter-add into zeros), each divided by how often its index occurs when
    scale_grad_by_freq; the padding_idx row is zero. indices: the forward's checked
    int64 indices (its attrs["indices"]), so they are not checked again."""
    from ember.ops.index import _along, _run
    dim = grad.shape[-1]
    work = _work_dtype(grad.dtype)
    with _core._no_record():
        idx = indices.reshape(-1).contiguous()
        if idx.dtype is not _int64:
            raise TypeError(f"embedding_backward: indices must be the forward's int64 "
                            f"indices, got {idx.dtype!r}")
        g = _work(grad, work).reshape(-1, dim)
        out = _core.empty((num_weights, dim), work, grad.device).fill_(0)
        strides, args = _along(out, 0, idx)
        _run("scatter", "embedding_backward", out, strides, g, tuple(g.stride()),
             (idx.shape[0], dim), args, "add")
        if scale_grad_by_freq:
            counts = _core.empty((num_weights,), work, grad.device).fill_(0)
            counts.index_add_(0, idx, _core.empty((idx.shape[0],), work, grad.device).fill_(1))
            out = out / counts.clamp_min(1).unsqueeze(1)
        if padding_idx is not None:
            out[padding_idx] = 0
        return _cast_back(out, grad.dtype)


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """In place, the rows of weight that `indices` names whose norm_type-norm exceeds
    max_norm are scaled by max_norm / (norm + 1e-7) (torch.embedding_renorm_, what
    embedding(max_norm=) does before its lookup); returns weight. Not recorded for
    autograd (PyTorch runs it under no_grad too)."""
    op = "embedding_renorm_"
    _float_tensor(weight, op, "weight")
    _tensor(indices, op, "indices")
    if indices.dtype.kind != "int":
        raise TypeError(f"{op}: indices must be an integer tensor, got {indices.dtype!r}")
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-d, got shape {tuple(weight.shape)}")
    _same_device(op, weight, indices)
    from ember.ops.index import _prep
    with _core._no_record():
        idx = _prep(indices.reshape(-1), weight.shape[0], op, "dim 0 of the weight",
                    allow_negative=False)
        if idx.numel():
            _renorm_rows_(weight, idx, _number(max_norm, op, "max_norm"),
                          _number(norm_type, op, "norm_type"))
    return weight


__all__ += ["embedding_renorm_"]
