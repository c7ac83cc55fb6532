"""gradcheck / gradgradcheck: compare autograd's gradients with central finite
differences, in float64.

The analytic Jacobian is built one output element at a time (a backward pass with a
one-hot gradient), the numerical one one input element at a time. On a mismatch the
error names the input, the output, the worst element's position and both values.
"""
from __future__ import annotations

import ember as em
from ember._C import core as _core

_TB = _core.TensorBase


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _flat_numpyless(t):
    return t.detach().reshape(-1).tolist()


def _callable(func, op):
    if not callable(func):
        raise TypeError(f"{op}: func must be callable, got {type(func).__name__} {func!r:.60}")


def _outputs(fn, inputs):
    out = _as_tuple(fn(*inputs))
    return tuple(o for o in out if isinstance(o, _TB) and o.is_floating_point())


def _numerical(fn, inputs, wrt, eps):
    """J[out][in] as lists of rows (one row per input element) of output values."""
    jac = []
    for i in wrt:
        x = inputs[i]
        cols = []
        for k in range(x.numel()):
            idx = _unravel(k, tuple(x.shape))
            # values are set without recording; func itself runs with grad mode on (it
            # may differentiate internally, as gradgradcheck's does)
            with em.no_grad():
                orig = float(x[idx]) if idx else float(x)
                _set(x, idx, orig + eps)
            plus = [o.detach().reshape(-1).clone() for o in _outputs(fn, inputs)]
            with em.no_grad():
                _set(x, idx, orig - eps)
            minus = [o.detach().reshape(-1).clone() for o in _outputs(fn, inputs)]
            with em.no_grad():
                _set(x, idx, orig)
            cols.append([((p - m) / (2 * eps)).tolist() for p, m in zip(plus, minus)])
        jac.append(cols)
    return jac


def _set(x, idx, value):
    if idx:
        x[idx] = value
    else:
        x.fill_(value)


def _unravel(k, shape):
    idx = []
    for s in reversed(shape):
        idx.append(k % s)
        k //= s
    return tuple(reversed(idx))


def _analytic(fn, inputs, wrt):
    outs = _outputs(fn, inputs)
    jac = [[[[0.0] * o.numel() for o in outs] for _ in range(inputs[i].numel())] for i in wrt]
    for oi, o in enumerate(outs):
        for k in range(o.numel()):
            if not o.requires_grad:
                continue
            g = em.zeros_like(o).reshape(-1)
            g[k] = 1.0
            grads = em.autograd.grad((o,), [inputs[i] for i in wrt], (g.reshape(o.shape),),
                                     retain_graph=True, allow_unused=True)
            for wi, gr in enumerate(grads):
                if gr is None:
                    continue
                vals = _flat_numpyless(gr)
                for j, v in enumerate(vals):
                    jac[wi][j][oi][k] = v
    return jac, outs


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_undefined_grad=True, nondet_tol=0.0):
    """True when autograd's gradients of func at `inputs` match finite differences.
    Inputs that require grad must be float64 (float32 differences are too coarse)."""
    _callable(func, "gradcheck")
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, _TB) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck: at least one input must be a tensor that requires grad")
    for i in wrt:
        if inputs[i].dtype is not em.float64:
            raise ValueError(f"gradcheck: input {i} is {inputs[i].dtype.name}; use float64 "
                             f"inputs (finite differences in lower precision are too coarse)")
    analytic, outs = _analytic(func, inputs, wrt)
    numerical = _numerical(func, inputs, wrt, eps)
    worst = None
    for wi, i in enumerate(wrt):
        for j in range(inputs[i].numel()):
            for oi, o in enumerate(outs):
                for k in range(o.numel()):
                    a = analytic[wi][j][oi][k]
                    n = numerical[wi][j][oi][k]
                    err = abs(a - n)
                    if not err <= atol + rtol * abs(n):    # NaN fails too
                        if worst is None or not err <= worst[0]:
                            worst = (err, i, j, oi, k, a, n)
    if worst is None:
        return True
    err, i, j, oi, k, a, n = worst
    x, o = inputs[i], outs[oi]
    msg = (f"gradcheck: Jacobian mismatch for output {oi} (shape {tuple(o.shape)}) with "
           f"respect to input {i} (shape {tuple(x.shape)}); worst element: d out"
           f"{list(_unravel(k, tuple(o.shape)))} / d in{list(_unravel(j, tuple(x.shape)))}: "
           f"analytic {a!r}, numerical {n!r} (|difference| {err:.3g} > atol {atol} + rtol "
           f"{rtol} * |numerical|)")
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, seed=0):
    """gradcheck of the gradient itself (create_graph=True), with random float64
    grad_outputs unless given."""
    _callable(func, "gradgradcheck")
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        gen = em.Generator().manual_seed(seed)
        grad_outputs = tuple(em.randn(o.shape, dtype=o.dtype, generator=gen).requires_grad_()
                             for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, _TB) and x.requires_grad]

    def first_grads(*args):
        ins, gos = args[:n_in], args[n_in:]
        o = _outputs(func, ins)
        grads = em.autograd.grad(o, [ins[i] for i in wrt], gos, create_graph=True,
                                 allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grads, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
