"""Optimizer: the base class of ember's optimizers, with PyTorch's param groups, state
and state_dict format."""
from __future__ import annotations

import copy
import warnings
from collections import defaultdict
from itertools import chain

import ember as em
from ember.nn._checks import real

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a default that every param group must set (SGD's lr in old PyTorch)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _scalar_dtype():
    # PyTorch keeps `step` in float64 only when that is the default dtype
    return em.float64 if em.get_default_dtype() == em.float64 else em.float32


def _step_tensor(value=0.0):
    return em.tensor(float(value), dtype=_scalar_dtype())


def _steps_to_tensors(state):
    """State dicts from older code may hold 'step' as a number: make it a tensor."""
    for s in state.values():
        if "step" in s and not isinstance(s["step"], em.Tensor):
            s["step"] = _step_tensor(s["step"])


def _bump_step(state):
    """Advance state['step'] (a 0-d tensor, as in PyTorch's state_dicts); returns it as
    a float for the bias corrections."""
    t = state["step"]
    step = t.item() + 1
    t.fill_(step)
    return step


def _device_steps(name, found_inf, n_lists, *args):
    """Give the entries on devices to their backend's multi-tensor step `name`
    (backends/gpu/optim.py: a launch per 16 parameters of a dtype, GradScaler's found_inf
    read there); args: the n_lists per-tensor lists, then the scalars. Returns the
    indices left: the CPU entries and what a backend does not take."""
    lists, scalars = args[:n_lists], args[n_lists:]
    by_device, left = {}, []
    for i, p in enumerate(lists[0]):
        dev = p.device
        (left if dev.type == "cpu" else by_device.setdefault(dev, [])).append(i)
    for dev, idx in by_device.items():
        fused = getattr(em._C.core.backend_for(dev), name, None)
        if fused is None:
            left += idx
            continue
        left += [idx[j] for j in fused(*[[xs[i] for i in idx] for xs in lists], *scalars,
                                       found_inf=found_inf)]
    return sorted(left)


def _skipped(found_inf):
    """Whether GradScaler's flag (handed to step as optimizer.found_inf) says to skip
    the step: a host read, made only for the entries a device kernel did not take."""
    return found_inf is not None and bool(found_inf.item())


def _on_device_kernel(p):
    """Whether p is what the device kernels take (dense float32/float64 on a device):
    its step count then lives beside it (float32, PyTorch's fused layout)."""
    return p.device.type != "cpu" and p.dtype in (em.float32, em.float64) and \
        p.is_contiguous()


def _directions(params, grads, weight_decay, maximize):
    """The foreach form of _decayed: the list of descent directions (the gradients
    themselves when neither option applies)."""
    if maximize:
        grads = em._foreach_neg(grads)
    if weight_decay != 0:
        grads = em._foreach_add(grads, params, alpha=weight_decay)
    return grads


def _check_foreach_fused(op, foreach, fused):
    """PyTorch's rule: foreach and fused cannot both be set. Both select ember's
    multi-tensor path (fused has no separate kernel: it shares foreach's C loop)."""
    _check_flags(op, {"foreach": foreach, "fused": fused})
    if foreach and fused:
        raise RuntimeError(f"{op}: `fused` and `foreach` cannot be `True` together.")


def _decayed(p, g, weight_decay, maximize):
    """The direction an update descends: the gradient g, negated to maximize, plus the
    L2 term weight_decay * p (callers skip the call when neither applies)."""
    if weight_decay != 0:
        # p*wd - g is p*wd + (-g) bit for bit, one op fewer
        return p.mul(weight_decay).sub_(g) if maximize else p.mul(weight_decay).add_(g)
    return -g if maximize else g


class Optimizer:
    """Base class of all optimizers.

    params: an iterable of tensors, or of dicts (param groups: {'params': [...],
    'lr': ..., ...}) whose options override `defaults` for that group. Subclasses
    implement _update (and _init_state) for the shared step(), or step() itself; their
    state lives in self.state[param].
    """

    def __init__(self, params, defaults):
        _check_flags(type(self).__name__, defaults)
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        what = (f"{type(self).__name__}: params argument given to the optimizer should be an "
                f"iterable of Tensors or dicts, but got")
        if isinstance(params, em.Tensor):
            raise TypeError(f"{what} {params.type()}")
        try:
            param_groups = list(params)
        except TypeError:
            raise TypeError(f"{what} {type(params).__name__} {params!r:.60}") from None
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (missing ones come from the
        defaults), e.g. to unfreeze layers during fine-tuning."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, em.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, em.Tensor):
                raise TypeError(f"{type(self).__name__}: optimizer can only optimize Tensors, "
                                f"but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error", UserWarning, stacklevel=3)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized tensors: to None (the default, which
        frees memory), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    # the step, shared by every optimizer ---------------------------------------------
    # PyTorch's split: step() gathers, per param group, the parameters that have a
    # gradient with their gradients and state, and hands the lists to the algorithm's one
    # functional update, `_update(group, params, grads, states)`, which loops over them
    # (the single-tensor form). `_update_foreach` takes the same lists and updates them
    # all at once with the multi-tensor functions (em._foreach_*), looping in C over the
    # list; step() calls it for a group whose foreach or fused option is true. An
    # algorithm supplies _update (and _update_foreach) and, if it keeps state,
    # _init_state.
    _update = None
    _update_foreach = None

    def step(self, closure=None):
        """Perform one optimization step. closure: re-evaluates the model and returns
        the loss (needed by some algorithms); step returns what it returns."""
        update = self._update
        if update is None:
            raise NotImplementedError(f"{type(self).__name__}.step is not implemented")
        loss = None
        if closure is not None:
            with em.enable_grad():
                loss = closure()
        # GradScaler's inf flag, set around this call where the class supports it
        # (_step_supports_amp_scaling, PyTorch's protocol): the update skips itself
        found = getattr(self, "found_inf", None)
        if found is not None and self._makes_state():
            # a skipped step leaves no state behind (as when it is not called): read the
            # flag this once, at a parameter's first step
            if bool(found.item()):
                return loss
            found = None
        kw = {} if found is None else {"found_inf": found}
        with em.no_grad():
            for group in self.param_groups:
                params, grads, states = self._init_group(group)
                if params:
                    multi = self._update_foreach
                    if multi is not None and (group.get("foreach") or group.get("fused")):
                        multi(group, params, grads, states, **kw)
                    else:
                        update(group, params, grads, states, **kw)
        return loss

    def _init_group(self, group):
        """group's parameters that have a gradient, their gradients and their states
        (filled by _init_state at a parameter's first step; None where the algorithm
        keeps none)."""
        params, grads, states = [], [], []
        state = self.state if self._has_state(group) else None
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            params.append(p)
            grads.append(g)
            if state is None:
                states.append(None)
                continue
            s = state[p]
            if not s:
                self._init_state(s, p, group)
            states.append(s)
        return params, grads, states

    def _makes_state(self):
        """Whether this step would create a parameter's state (its first step)."""
        return any(p.grad is not None and not self.state.get(p)
                   for group in self.param_groups if self._has_state(group)
                   for p in group["params"])

    def _has_state(self, group):
        """Whether the algorithm keeps per-parameter state with group's options."""
        return True

    def _init_state(self, state, p, group):
        """Fill p's empty state before its first step (buffers, 'step')."""

    # state dicts ------------------------------------------------------------------------
    def state_dict(self):
        """{'state': {index: per-parameter state}, 'param_groups': [options with 'params'
        as indices]}, parameters numbered in order across groups (PyTorch's format). The
        tensors in it are the optimizer's own (not copies)."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)] if isinstance(p, em.Tensor) else p: v
                 for p, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a state_dict() of an optimizer over parameters of the same shapes. The
        state's tensors are copied (cast to each parameter's dtype, except 'step'), so
        the dict can be reused; options missing from an older dict keep the defaults."""
        if not isinstance(state_dict, dict) or "state" not in state_dict or \
                "param_groups" not in state_dict:
            raise ValueError("load_state_dict: expected a dict with 'state' and 'param_groups' "
                             f"(an Optimizer.state_dict()), got {type(state_dict).__name__}")
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups "
                             f"({len(saved_groups)}) than the optimizer ({len(groups)})")
        for i, (g, s) in enumerate(zip(groups, saved_groups)):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't "
                                 f"match the size of optimizer's group (group {i}: "
                                 f"{len(s['params'])} saved, {len(g['params'])} here)")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = {key: _cast(param, value, key) for key, value in v.items()}
            else:
                state[k] = v
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            for name, default in self.defaults.items():
                s.setdefault(name, default)
        self.__setstate__({"state": state, "param_groups": saved_groups})


def _hyper(op, name, v):
    """A real hyperparameter (momentum, eps, weight_decay, ...); its range is each
    optimizer's to check, with PyTorch's messages."""
    return real()(op, name, v)


def _check_ranges(**values):
    """PyTorch's range checks of hyperparameters, with its messages, in the order given:
    each value >= 0 ("Invalid learning rate: -1", "Invalid eps value" is spelled
    "Invalid epsilon value"), each of betas in [0, 1)."""
    for name, v in values.items():
        if name == "betas":
            for i, b in enumerate(v):
                if not 0.0 <= b < 1.0:
                    raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        elif not 0.0 <= v:
            label = {"lr": "learning rate", "eps": "epsilon value"}.get(name, f"{name} value")
            raise ValueError(f"Invalid {label}: {v}")


def _betas(op, name, v):
    """Adam's (beta1, beta2)."""
    if not (isinstance(v, (tuple, list)) and len(v) == 2):
        raise TypeError(f"{op}: betas must be a tuple of two floats, got "
                        f"{type(v).__name__} {v!r:.60}")
    for i, b in enumerate(v):
        _hyper(op, f"betas[{i}]", b)
    return v


def _cast(param, value, key):
    """A copy of one saved state value on param's device (floating state in param's
    dtype; 'step' as saved)."""
    if isinstance(value, em.Tensor):
        if key == "step":
            return value.clone()
        if param.dtype.kind == "float":
            return value.to(dtype=param.dtype, device=param.device, copy=True)
        return value.to(device=param.device, copy=True)
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v, key) for v in value)
    return value


def _per_tensor(fn):
    """The single-tensor form (foreach=False) of an algorithm written over lists: fn on
    one parameter at a time (the same arithmetic as the multi-tensor form, so the two
    agree bit for bit)."""
    def update(group, params, grads, states):
        for p, g, s in zip(params, grads, states):
            fn(group, [p], [g], [s])
    update.__name__ = fn.__name__ + "_single"
    update.__doc__ = fn.__doc__
    return update


_FLAGS = ("foreach", "fused", "maximize", "capturable", "differentiable", "amsgrad",
          "nesterov", "centered", "decoupled_weight_decay")


def _check_flags(op, options):
    """The on/off options (foreach, maximize, ...): a bool (or None where PyTorch's
    default is None), else a TypeError naming the optimizer and the option."""
    for key in _FLAGS:
        v = options.get(key)
        if v is not None and not isinstance(v, (bool, int)):
            raise TypeError(f"{op}: {key} must be a bool, got {type(v).__name__} {v!r:.60}")


def _not_differentiable(op, differentiable):
    _check_flags(op, {"differentiable": differentiable})
    if differentiable:
        raise NotImplementedError(f"{op}: differentiable=True is not supported by ember")


def _lr(lr):
    return float(lr)     # a Tensor lr too (scalar operands are numbers)
