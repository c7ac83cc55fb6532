"""gradcheck / gradgradcheck: compare autograd's gradients with central finite
differences, in float64 (complex128 for complex inputs).

Both Jacobians are over real coordinates, as PyTorch's gradcheck does: a complex input
element contributes two columns (its real and its imaginary part, each perturbed on
its own) and a complex output element two rows (its real and imaginary part). The
analytic row of an output's real part is the backward of a one-hot gradient 1 at that
element, the row of its imaginary part the backward of 1j (PyTorch's convention: the
gradient of a real loss L w.r.t. a complex z is dL/dRe z + i dL/dIm z, so the real and
imaginary parts of the input's gradient are the two columns). A real input receives
the real part of a complex gradient. So every Wirtinger derivative is checked: a
function that is not holomorphic (abs, conj, real) is checked as well as one that is.

On a mismatch the error names the input, the output, the worst element's position
(and which part, for complex ones) and both values.
"""
from __future__ import annotations

import ember as em
from ember._C import core as _core

_TB = _core.TensorBase


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _callable(func, op):
    if not callable(func):
        raise TypeError(f"{op}: func must be callable, got {type(func).__name__} {func!r:.60}")


def _differentiable(o):
    return isinstance(o, _TB) and (o.is_floating_point() or o.is_complex())


def _outputs(fn, inputs):
    out = _as_tuple(fn(*inputs))
    return tuple(o for o in out if _differentiable(o))


def _real_values(o):
    """An output as a flat list of its real coordinates: per element its value, or
    (complex) its real then its imaginary part."""
    o = o.detach().reshape(-1)
    if o.is_complex():
        return em.view_as_real(o.resolve_conj()).reshape(-1).tolist()
    return o.tolist()


def _width(t):
    """How many real coordinates an element of t has."""
    return 2 if t.is_complex() else 1


def _numerical(fn, inputs, wrt, eps):
    """J[in][coordinate][out] = the list of an output's real coordinates' derivatives
    w.r.t. one real coordinate of an input."""
    jac = []
    for i in wrt:
        x = inputs[i]
        cols = []
        steps = (eps, eps * 1j) if x.is_complex() else (eps,)
        for k in range(x.numel()):
            idx = _unravel(k, tuple(x.shape))
            # values are set without recording; func itself runs with grad mode on (it
            # may differentiate internally, as gradgradcheck's does)
            with em.no_grad():
                orig = (x[idx] if idx else x).item()
            for step in steps:
                with em.no_grad():
                    _set(x, idx, orig + step)
                plus = [_real_values(o) for o in _outputs(fn, inputs)]
                with em.no_grad():
                    _set(x, idx, orig - step)
                minus = [_real_values(o) for o in _outputs(fn, inputs)]
                with em.no_grad():
                    _set(x, idx, orig)
                cols.append([[(p - m) / (2 * eps) for p, m in zip(po, mo)]
                             for po, mo in zip(plus, minus)])
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
    jac = [[[[0.0] * (o.numel() * _width(o)) for o in outs]
            for _ in range(inputs[i].numel() * _width(inputs[i]))] for i in wrt]
    for oi, o in enumerate(outs):
        if not o.requires_grad:
            continue
        seeds = (1.0, 1j) if o.is_complex() else (1.0,)
        w = len(seeds)
        for k in range(o.numel()):
            for part, seed in enumerate(seeds):
                g = em.zeros_like(o).reshape(-1)
                g[k] = seed
                grads = em.autograd.grad((o,), [inputs[i] for i in wrt],
                                         (g.reshape(o.shape),), retain_graph=True,
                                         allow_unused=True)
                for wi, gr in enumerate(grads):
                    if gr is None:
                        continue
                    for j, v in enumerate(_real_values(gr)):
                        jac[wi][j][oi][k * w + part] = v
    return jac, outs


def _where_in(t, j):
    """The element and (complex) part that real coordinate j of t is."""
    w = _width(t)
    pos = list(_unravel(j // w, tuple(t.shape)))
    if w == 1:
        return f"{pos}"
    return f"{pos} ({'real' if j % w == 0 else 'imaginary'} part)"


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_undefined_grad=True, nondet_tol=0.0):
    """True when autograd's gradients of func at `inputs` match finite differences.
    Inputs that require grad must be float64 or complex128 (float32 differences are
    too coarse); complex inputs and outputs are checked part by part (module doc)."""
    _callable(func, "gradcheck")
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, _TB) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck: at least one input must be a tensor that requires grad")
    for i in wrt:
        if inputs[i].dtype not in (em.float64, em.complex128):
            raise ValueError(f"gradcheck: input {i} is {inputs[i].dtype.name}; use float64 "
                             f"or complex128 inputs (finite differences in lower precision "
                             f"are too coarse)")
    analytic, outs = _analytic(func, inputs, wrt)
    numerical = _numerical(func, inputs, wrt, eps)
    worst = None
    for wi, i in enumerate(wrt):
        for j in range(inputs[i].numel() * _width(inputs[i])):
            for oi, o in enumerate(outs):
                for k in range(o.numel() * _width(o)):
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
    msg = (f"gradcheck: Jacobian mismatch for output {oi} (shape {tuple(o.shape)}, "
           f"{o.dtype.name}) with respect to input {i} (shape {tuple(x.shape)}, "
           f"{x.dtype.name}); worst element: d out{_where_in(o, k)} / d in"
           f"{_where_in(x, j)}: analytic {a!r}, numerical {n!r} (|difference| {err:.3g} > "
           f"atol {atol} + rtol {rtol} * |numerical|)")
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _random_like(o, gen):
    if o.is_complex():
        real = o.dtype.to_real()
        return em.complex(em.randn(o.shape, dtype=real, generator=gen),
                          em.randn(o.shape, dtype=real, generator=gen))
    return em.randn(o.shape, dtype=o.dtype, generator=gen)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, seed=0):
    """gradcheck of the gradient itself (create_graph=True), with random float64 (or,
    for complex outputs, complex128) grad_outputs unless given."""
    _callable(func, "gradgradcheck")
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        gen = em.Generator().manual_seed(seed)
        grad_outputs = tuple(_random_like(o, gen).requires_grad_() for o in outs)
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
