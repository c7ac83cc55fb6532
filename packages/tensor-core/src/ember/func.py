"""ember.func: function transforms with torch.func's signatures: vmap, grad,
grad_and_value, vjp, jacrev, jacfwd, hessian.

How ember computes them (documented differences from torch.func):

- vmap maps func over the batch dim by calling it once per batch entry (on the
  in_dims slices, which are views) and stacking the results along out_dims. The
  results are what torch.func.vmap returns for functions that vmap supports, but it
  costs one call per entry (no batching rules); chunk_size is accepted (and checked)
  and changes nothing. randomness: "error" makes ember's random ops raise inside func,
  "different" draws independently per entry, "same" replays the generator state so
  every entry draws the same numbers (ember's default generators of every device,
  saved before the first entry and restored before each).
- grad/vjp/jacrev use ember.autograd (reverse mode; they need ember-autograd). They
  compose (grad(grad(f)), jacrev(grad(f)), vmap(grad(f))) because each transform
  records its gradient computation when its inputs require grad.
- jacfwd computes the same Jacobian with reverse mode (ember has no forward-mode AD):
  one backward pass per output element instead of one forward pass per input element.
"""
from __future__ import annotations

import functools
import importlib

from ember._C import core as _core

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jacrev", "jacfwd", "hessian", "cond",
           "while_loop"]

_TB = _core.TensorBase


# pytrees of tuples, lists and dicts -----------------------------------------------------

def _flatten(tree):
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        leaves, specs = [], []
        for t in tree:
            lv, sp = _flatten(t)
            leaves += lv
            specs.append(sp)
        return leaves, (type(tree), specs)
    if isinstance(tree, tuple):          # a namedtuple
        leaves, specs = [], []
        for t in tree:
            lv, sp = _flatten(t)
            leaves += lv
            specs.append(sp)
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        keys = list(tree)
        for k in keys:
            lv, sp = _flatten(tree[k])
            leaves += lv
            specs.append(sp)
        return leaves, (dict, keys, specs)
    return [tree], None


def _unflatten(leaves, spec):
    it = iter(leaves)

    def build(sp):
        if sp is None:
            return next(it)
        if sp[0] is dict:
            return {k: build(s) for k, s in zip(sp[1], sp[2])}
        kind, specs = sp
        vals = [build(s) for s in specs]
        if kind in (tuple, list):
            return kind(vals)
        return kind(*vals)
    return build(spec)


def _broadcast_dims(dims, tree, what):
    """in_dims/out_dims broadcast to the leaves of tree."""
    leaves, spec = _flatten(tree)
    if dims is None or isinstance(dims, int):
        return [dims] * len(leaves)
    if isinstance(dims, (tuple, list, dict)):
        if isinstance(dims, dict) != isinstance(tree, dict) or \
                (not isinstance(dims, dict) and len(dims) != len(tree)):
            raise ValueError(f"vmap: {what} {dims!r} does not match the structure of the "
                             f"{len(tree) if hasattr(tree, '__len__') else 1} values it "
                             f"applies to")
        out = []
        items = ([(dims[k], tree[k]) for k in tree] if isinstance(dims, dict)
                 else list(zip(dims, tree)))
        for d, t in items:
            out += _broadcast_dims(d, t, what)
        return out
    raise ValueError(f"vmap: {what} must be an int, None, or a (nested) tuple/list/dict of "
                     f"them, got {type(dims).__name__}")


# vmap --------------------------------------------------------------------------------

_RANDOMNESS = ("error", "different", "same")


def _rng_states():
    """(generator, state) of every default generator made so far."""
    from ember.ops import random as rnd
    gens = [rnd.default_generator] + [g for g in rnd._device_defaults.values()]
    return [(g, g.get_state()) for g in gens]


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a batch dim of its inputs (torch.func.vmap's semantics; see the
    module docstring for how ember computes it): in_dims says which dim of each
    positional argument is mapped (an int, None for not mapped, or a structure matching
    the arguments); out_dims where the batch dim goes in each output."""
    if not callable(func):
        raise TypeError(f"vmap: func must be callable, got {type(func).__name__}")
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0, got "
                         f"{chunk_size!r}")

    @functools.wraps(func)
    def batched(*args, **kwargs):
        if not args:
            raise ValueError("vmap: the function must be called with at least one positional "
                             "argument to map over")
        if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args):
            raise ValueError(f"vmap: in_dims is {in_dims!r} ({len(in_dims)} entries) but the "
                             f"function got {len(args)} positional arguments")
        dims = _broadcast_dims(in_dims if not isinstance(in_dims, list) else tuple(in_dims),
                               args, "in_dims")
        leaves, spec = _flatten(args)
        size = None
        norm_dims = []
        for x, d in zip(leaves, dims):
            if d is None:
                norm_dims.append(None)
                continue
            if not isinstance(x, _TB):
                raise ValueError(f"vmap: in_dim {d} given for an argument of type "
                                 f"{type(x).__name__}; only tensors can be mapped (use None)")
            if x.ndim == 0:
                raise ValueError("vmap: cannot map over a 0-d tensor (in_dim given for a "
                                 "scalar tensor)")
            nd = _core.normalize_dim(d, x.ndim, "vmap")
            n = x.shape[nd]
            if size is not None and n != size:
                raise ValueError(f"vmap: Expected all tensors to have the same size in the "
                                 f"mapped dimension, got sizes {size} and {n}")
            size = n
            norm_dims.append(nd)
        if size is None:
            raise ValueError("vmap: at least one argument must be a tensor mapped over "
                             "(in_dims is None for all of them)")
        from ember.ops import random as rnd
        saved = _rng_states() if randomness == "same" else None
        prev_guard = rnd._RANDOM_GUARD[0]
        if randomness == "error":
            rnd._RANDOM_GUARD[0] = ("called a random operation inside vmap with "
                                    "randomness='error'; pass randomness='different' or "
                                    "'same' to vmap")
        results = []
        try:
            for i in range(size):
                if saved is not None:
                    for g, st in saved:
                        g.set_state(st)
                sl = [x if d is None else x.select(d, i) for x, d in zip(leaves, norm_dims)]
                results.append(func(*_unflatten(sl, spec), **kwargs))
        finally:
            rnd._RANDOM_GUARD[0] = prev_guard
        outs0, ospec = _flatten(results[0])
        per = [_flatten(r)[0] for r in results]
        odims = _broadcast_dims(out_dims, results[0] if isinstance(out_dims, (tuple, list, dict))
                                else results[0], "out_dims")
        from ember.ops.shape import stack
        stacked = []
        for j, od in enumerate(odims):
            vals = [p[j] for p in per]
            if not all(isinstance(v, _TB) for v in vals):
                bad = next(v for v in vals if not isinstance(v, _TB))
                raise ValueError(f"vmap: the function must return tensors (or structures of "
                                 f"them), got an output of type {type(bad).__name__}")
            if od is None:
                stacked.append(vals[0])
                continue
            s = stack(vals, 0)
            stacked.append(s.movedim(0, _core.normalize_dim(od, s.ndim, "vmap")))
        return _unflatten(stacked, ospec)

    return batched


# reverse-mode transforms ------------------------------------------------------------------

def _autograd():
    try:
        return importlib.import_module("ember.autograd")
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("ember.autograd"):
            from ember._components import missing
            raise missing("ember.func", "autograd") from None
        raise


def _argnums(argnums, n, op):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ValueError(f"{op}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int) or not -n <= a < n:
            raise ValueError(f"{op}: Got argnums={argnums}, but only {n} positional inputs")
    return tuple(a % n for a in nums)


def _track(x):
    """x as a tensor whose gradient we can take, connected to x's own graph when x is
    part of one (so transforms compose)."""
    if not isinstance(x, _TB):
        raise TypeError(f"expected tensors for the differentiated arguments, got "
                        f"{type(x).__name__}")
    if x.dtype.kind != "float":
        raise TypeError(f"only floating point tensors can be differentiated, got {x.dtype!r}")
    if x.requires_grad:
        return x.view_as(x)
    return x.detach().requires_grad_()


def _prepare(args, argnums, op):
    nums = _argnums(argnums, len(args), op)
    args = list(args)
    tracked = {}
    for a in nums:
        leaves, spec = _flatten(args[a])
        tl = [_track(x) for x in leaves]
        tracked[a] = (tl, spec)
        args[a] = _unflatten(tl, spec)
    return args, nums, tracked


def _keep_graph(tracked):
    return any(x.requires_grad and x._grad_fn is not None
               for tl, _ in tracked.values() for x in tl)


def grad_and_value(func, argnums=0, has_aux=False):
    """(gradient, value) of a function returning a scalar tensor (or (scalar, aux) with
    has_aux), w.r.t. the arguments argnums names (torch.func.grad_and_value)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ag = _autograd()
        from ember._grad_mode import enable_grad
        with enable_grad():
            args2, nums, tracked = _prepare(args, argnums, "grad")
            out = func(*args2, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise ValueError("grad: with has_aux=True the function must return a "
                                     "(output, aux) tuple")
                out, aux = out
            if not isinstance(out, _TB) or out.numel() != 1:
                raise ValueError(f"grad: the function must return a tensor with a single "
                                 f"element, got {out!r:.60}")
            inputs = [x for a in nums for x in tracked[a][0]]
            create = _keep_graph(tracked)
            if out.requires_grad:
                gs = ag.grad(out, inputs, create_graph=create, allow_unused=True)
            else:
                gs = [None] * len(inputs)
            gs = [g if g is not None else x.detach().mul(0) for g, x in zip(gs, inputs)]
            if not create:
                gs = [g.detach() for g in gs]
        it = iter(gs)
        per = [_unflatten([next(it) for _ in tracked[a][0]], tracked[a][1]) for a in nums]
        g = per[0] if isinstance(argnums, int) else tuple(per)
        value = out if create else out.detach()
        return (g, (value, aux)) if has_aux else (g, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar function w.r.t. its arguments argnums (torch.func.grad):
    grad(f)(x) is df/dx; with has_aux, (gradient, aux)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) with vjp_fn(cotangents) the vector-Jacobian products,
    one per primal (torch.func.vjp); with has_aux, (output, vjp_fn, aux)."""
    ag = _autograd()
    from ember._grad_mode import enable_grad
    with enable_grad():
        args, nums, tracked = _prepare(primals, tuple(range(len(primals))), "vjp")
        out = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise ValueError("vjp: with has_aux=True the function must return an "
                                 "(output, aux) tuple")
            out, aux = out
    outs, ospec = _flatten(out)
    create = _keep_graph(tracked)

    def vjp_fn(cotangents):
        cots, _ = _flatten(cotangents)
        if len(cots) != len(outs):
            raise ValueError(f"vjp: expected cotangents for {len(outs)} outputs, got "
                             f"{len(cots)}")
        for o, c in zip(outs, cots):
            if not isinstance(c, _TB) or tuple(c.shape) != tuple(o.shape):
                raise ValueError(f"vjp: a cotangent must be a tensor of its output's shape "
                                 f"{tuple(o.shape)}, got {c!r:.60}")
        inputs = [x for a in nums for x in tracked[a][0]]
        pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        with enable_grad():
            if pairs:
                gs = ag.grad([o for o, _ in pairs], inputs, [c for _, c in pairs],
                             retain_graph=True, create_graph=create, allow_unused=True)
            else:
                gs = [None] * len(inputs)
        gs = [g if g is not None else x.detach().mul(0) for g, x in zip(gs, inputs)]
        if not create:
            gs = [g.detach() for g in gs]
        it = iter(gs)
        return tuple(_unflatten([next(it) for _ in tracked[a][0]], tracked[a][1])
                     for a in nums)

    value = out if create else _unflatten([o.detach() for o in outs], ospec)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func w.r.t. the arguments argnums by reverse mode
    (torch.func.jacrev): for an output of shape O and an input of shape I, a tensor of
    shape O + I (nested per output and per argnum as torch.func)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"jacrev: chunk_size should be None or greater than 0, got "
                         f"{chunk_size!r}")

    @functools.wraps(func)
    def wrapper(*args):
        from ember.ops.creation import zeros
        from ember.ops.shape import stack
        nums = _argnums(argnums, len(args), "jacrev")
        primals = [args[a] for a in nums]
        rest = list(args)

        def f(*ps):
            a2 = list(rest)
            for a, p in zip(nums, ps):
                a2[a] = p
            return func(*a2)
        res = vjp(f, *primals, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        outs, ospec = _flatten(out)
        jac_per_out = []
        for k, o in enumerate(outs):
            rows = []
            for idx in range(o.numel()):
                cots = [zeros(x.shape, dtype=x.dtype, device=x.device) for x in outs]
                cots[k].reshape(-1)[idx] = 1
                rows.append(vjp_fn(_unflatten(cots, ospec)))
            per_arg = []
            for j in range(len(nums)):
                leaves0, pspec = _flatten(primals[j])
                cols = []
                for li, x in enumerate(leaves0):
                    if rows:
                        vals = [_flatten(r[j])[0][li] for r in rows]
                        cols.append(stack(vals, 0).reshape(tuple(o.shape) + tuple(x.shape)))
                    else:
                        cols.append(zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype,
                                          device=x.device))
                per_arg.append(_unflatten(cols, pspec))
            jac_per_out.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = _unflatten(jac_per_out, ospec)
        return (jac, res[2]) if has_aux else jac
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func (torch.func.jacfwd's signature and result), computed by
    ember with reverse mode (jacrev): ember has no forward-mode AD."""
    if randomness not in _RANDOMNESS:
        raise ValueError(f"jacfwd: randomness must be one of {_RANDOMNESS}, got "
                         f"{randomness!r}")
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func, argnums=0):
    """The Hessian of a scalar function: jacfwd(jacrev(func)) (both reverse mode in
    ember)."""
    return jacfwd(jacrev(func, argnums), argnums)


# control flow (torch.cond, torch.while_loop) -------------------------------------------------

def _truth(pred, op):
    if isinstance(pred, _TB):
        if pred.numel() != 1:
            raise ValueError(f"{op}: the predicate must be a single-element tensor, got shape "
                             f"{tuple(pred.shape)}")
        return bool(pred.item())
    if isinstance(pred, (bool, int, float)):
        return bool(pred)
    raise TypeError(f"{op}: the predicate must be a bool, a number or a one-element tensor, "
                    f"got {type(pred).__name__}")


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands) (torch.cond), run eagerly:
    ember has no graph capture, so this is the operator's defined meaning, with its
    argument checks."""
    if not (callable(true_fn) and callable(false_fn)):
        raise TypeError("cond: true_fn and false_fn must be callables")
    if not isinstance(operands, (tuple, list)):
        raise TypeError(f"cond: operands must be a tuple or list, got "
                        f"{type(operands).__name__}")
    return (true_fn if _truth(pred, "cond") else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run body_fn(*carried) while cond_fn(*carried) is true and return the carried
    values (torch.while_loop), eagerly. As PyTorch requires, body_fn must return as many
    values as it takes, tensors of the same shape and dtype as the ones carried in."""
    if not (callable(cond_fn) and callable(body_fn)):
        raise TypeError("while_loop: cond_fn and body_fn must be callables")
    if not isinstance(carried_inputs, (tuple, list)):
        raise TypeError(f"while_loop: carried_inputs must be a tuple, got "
                        f"{type(carried_inputs).__name__}")
    val = tuple(carried_inputs)
    leaves0, spec0 = _flatten(val)
    while _truth(cond_fn(*val), "while_loop"):
        new = body_fn(*val)
        if not isinstance(new, (tuple, list)):
            new = (new,)
        new = tuple(new)
        leaves, spec = _flatten(new)
        if spec != spec0:
            raise ValueError(f"while_loop: body_fn must return the structure it takes "
                             f"({len(val)} values), got {len(new)}")
        for a, b in zip(leaves0, leaves):
            if isinstance(a, _TB) and (not isinstance(b, _TB) or tuple(a.shape) != tuple(
                    b.shape) or a.dtype != b.dtype):
                raise ValueError(f"while_loop: body_fn must return tensors of the shapes "
                                 f"and dtypes it takes: {tuple(a.shape)} {a.dtype!r} became "
                                 f"{b!r:.60}")
        val = new
    return val
