"""Flatten parameters into one vector and back."""
from __future__ import annotations

import ember as em
from ember.nn._checks import checked, tensors

__all__ = ["parameters_to_vector", "vector_to_parameters"]


@checked(parameters=tensors())
def parameters_to_vector(parameters):
    """One 1-d tensor holding all of `parameters`' elements (a Tensor or an iterable of
    them), in order (a copy)."""
    params = parameters
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    device = params[0].device
    for p in params:
        if p.device != device:
            raise TypeError(f"parameters_to_vector: found two parameters on different "
                            f"devices, {device} and {p.device}")
    return em.cat([p.reshape(-1) for p in params])


@checked(parameters=tensors())
def vector_to_parameters(vec, parameters):
    """Make each of `parameters` a view of its slice of `vec` (in order): writes to vec
    show in the parameters and back, as in PyTorch."""
    if not isinstance(vec, em.Tensor):
        raise TypeError(f"vector_to_parameters: expected ember.Tensor, but got: "
                        f"{type(vec).__name__}")
    params = parameters
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise ValueError(f"vector_to_parameters: expected a 1-d vector of {total} elements "
                         f"(the parameters' total), got shape {tuple(vec.shape)}")
    pointer = 0
    for p in params:
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n
