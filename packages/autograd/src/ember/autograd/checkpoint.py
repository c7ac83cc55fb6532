"""Activation checkpointing (torch.utils.checkpoint; import it as ember.utils.checkpoint
or ember.autograd.checkpoint, the same module).

``checkpoint(fn, *args)`` runs ``fn(*args)`` without recording its graph, so the
activations inside it are freed as soon as it returns; the backward pass runs
``fn`` again, this time recording, and backpropagates through that recomputation.
Memory falls from every activation inside ``fn`` to its inputs and outputs, for one
more forward of ``fn`` per backward. The random number generators (the CPU's and
those of the devices of the tensor arguments) are put back to their state at the
forward before the recomputation (``preserve_rng_state=True``), so dropout inside
``fn`` draws the same mask twice, and restored afterwards.

Gradients flow to the tensor arguments and to the parameters ``fn`` uses: when
``fn`` is an ember.nn.Module (or one of its bound methods), its parameters are inputs
of the checkpoint's graph node, so ``loss.backward()`` and ``ember.autograd.grad``
both see them. For any other callable the parameters it reaches are found during the
recomputation and their gradients accumulated into ``.grad`` by ``backward`` (as
PyTorch's reentrant variant does): use ``loss.backward()`` then, not
``autograd.grad`` with respect to such parameters.

``use_reentrant`` (True or False; None, PyTorch's warning default, means False)
picks between PyTorch's two implementations; ember has one, which behaves as above
in both cases. Tensor arguments that need gradients must be positional (keyword
arguments are passed through to ``fn`` as they are). Outputs are a tensor or a tuple
(non-tensors allowed in the tuple). ``determinism_check="default"`` compares the
recomputed outputs' shapes and dtypes with the forward's and raises on a mismatch;
"none" skips that.
"""
from __future__ import annotations

import functools

import ember as em
from ember._C import core as _core
from ember.autograd.function import Function

__all__ = ["checkpoint", "checkpoint_sequential"]

_TB = _core.TensorBase


def _module_params(fn):
    """The parameters of fn when it is a Module or a Module's bound method, else None."""
    from_module = getattr(fn, "__self__", fn)
    params = getattr(from_module, "parameters", None)
    if params is None or not callable(params) or type(from_module).__module__ == "builtins":
        return None
    try:
        from ember.nn import Module
    except ModuleNotFoundError:
        return None
    return list(params()) if isinstance(from_module, Module) else None


def _rng_states(devices):
    from ember.ops.random import _default_for
    return {d: _default_for(d).get_state() for d in devices}


def _set_rng_states(states):
    from ember.ops.random import _default_for
    for d, s in states.items():
        _default_for(d).set_state(s)


class _Spec:
    """What one checkpoint call recomputes: fn, the arguments (tensors taken out) and
    the layout of the node's tensor inputs: [args' tensors] + [params] + [dummy]."""

    __slots__ = ("fn", "args", "slots", "n_args", "n_params", "explicit", "rng", "metas",
                 "check")

    def rebuild(self, tensors):
        args = list(self.args)
        for slot, t in zip(self.slots, tensors):
            args[slot] = t
        return args


def _metas(outputs):
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    return [(tuple(o.shape), o.dtype) if isinstance(o, _TB) else None for o in outs]


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, spec, *tensors):
        ctx.spec = spec
        outputs = spec.fn(*spec.rebuild(tensors[:spec.n_args]))
        spec.metas = _metas(outputs)
        ctx.save_for_backward(*tensors)
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        spec = ctx.spec
        saved = ctx.saved_tensors
        inputs = [t.detach().requires_grad_(t.requires_grad) for t in saved[:spec.n_args]]
        params = list(saved[spec.n_args:spec.n_args + spec.n_params])
        current = None
        if spec.rng is not None:
            current = _rng_states(spec.rng)
            _set_rng_states(spec.rng)
        try:
            with em.enable_grad():
                outputs = spec.fn(*spec.rebuild(inputs))
        finally:
            if current is not None:
                _set_rng_states(current)
        if spec.check and _metas(outputs) != spec.metas:
            raise RuntimeError(f"checkpoint: the recomputation of {_name(spec.fn)} gave "
                               f"outputs {_metas(outputs)} (shape, dtype), the forward gave "
                               f"{spec.metas}; the function must compute the same thing "
                               f"both times (pass determinism_check='none' to skip this "
                               f"check)")
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, _TB) and o.requires_grad and g is not None]
        result = [None] * len(saved)
        if not pairs:
            return (None,) + tuple(result)
        outs_, grads_ = [o for o, _ in pairs], [g for _, g in pairs]
        if spec.explicit:
            targets = [(i, t) for i, t in enumerate(inputs) if t.requires_grad]
            targets += [(spec.n_args + j, p) for j, p in enumerate(params) if p.requires_grad]
            if targets:
                got = em.autograd.grad(outs_, [t for _, t in targets], grads_,
                                       allow_unused=True)
                for (i, _), g in zip(targets, got):
                    result[i] = g
        else:
            em.autograd.backward(outs_, grads_)   # the parameters fn reached: into .grad
            for i, t in enumerate(inputs):
                result[i] = t.grad
        return (None,) + tuple(result)


def _name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _checkpoint(fn, args, kwargs, preserve_rng_state, determinism_check, params=None):
    if not callable(fn):
        raise TypeError(f"checkpoint: expected a callable, got {type(fn).__name__}")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"checkpoint: determinism_check must be 'default' or 'none', got "
                         f"{determinism_check!r}")
    if kwargs:
        fn = functools.partial(fn, **kwargs)
    if not em.is_grad_enabled():
        return fn(*args)                 # nothing is recorded: nothing to recompute
    spec = _Spec()
    spec.fn, spec.args = fn, list(args)
    spec.slots = [i for i, a in enumerate(args) if isinstance(a, _TB)]
    tensors = [args[i] for i in spec.slots]
    for i in spec.slots:
        spec.args[i] = None              # the node holds the tensors, not the spec
    spec.n_args = len(tensors)
    if params is None:
        params = _module_params(getattr(fn, "func", fn))
    spec.explicit = params is not None
    params = [p for p in (params or []) if isinstance(p, _TB)]
    spec.n_params = len(params)
    spec.check = determinism_check == "default"
    spec.rng = None
    if preserve_rng_state:
        devices = {_core.Device("cpu")} | {t.device for t in tensors}
        spec.rng = _rng_states(devices)
    extra = [] if spec.explicit else [em.zeros((), requires_grad=True)]
    # the dummy makes the node record when no argument needs a gradient (the parameters
    # inside fn still do)
    return _Checkpoint.apply(spec, *tensors, *params, *extra)


def checkpoint(function, *args, use_reentrant=None, context_fn=None,
               determinism_check="default", debug=False, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs), its activations recomputed in the backward pass
    instead of kept (see this module's docstring)."""
    if use_reentrant not in (None, True, False):
        raise TypeError(f"checkpoint: use_reentrant must be a bool, got {use_reentrant!r}")
    if context_fn is not None:
        raise ValueError("checkpoint: context_fn (the selective checkpointing of PyTorch's "
                         "non-reentrant variant) is not supported by ember")
    if debug:
        raise ValueError("checkpoint: debug=True (PyTorch's trace of the recomputed ops) "
                         "is not supported by ember")
    return _checkpoint(function, args, kwargs, preserve_rng_state, determinism_check)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run the modules (or functions) of `functions` (an nn.Sequential or a list) in
    order on `input`, in `segments` chunks; every chunk but the last is checkpointed,
    the last runs normally, as torch.utils.checkpoint.checkpoint_sequential.
    kwargs: preserve_rng_state, determinism_check."""
    preserve = kwargs.pop("preserve_rng_state", True)
    check = kwargs.pop("determinism_check", "default")
    if kwargs:
        raise TypeError(f"checkpoint_sequential: unexpected keyword arguments "
                        f"{sorted(kwargs)}")
    if hasattr(functions, "children") and callable(functions.children) and \
            not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    segments = int(segments)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be >= 1, got {segments}")
    n = len(functions)
    size = n // segments if segments <= n else 1

    def run(start, end):
        def forward(x):
            for f in functions[start:end + 1]:
                x = f(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        part = functions[start:end + 1]
        params = None
        if all(_module_params(f) is not None for f in part):
            params = [p for f in part for p in _module_params(f)]
        input = _checkpoint(run(start, end), (input,), {}, preserve, check, params=params)
    return run(end + 1, n - 1)(input)
