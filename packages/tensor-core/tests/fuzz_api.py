"""Hostile-argument fuzzer for ember's whole public API.

Every public function and Tensor method is found by enumeration (``dir()`` of ember,
ember.Tensor, ember.nn.functional, ember.linalg, ember.array_api, ember.autograd,
ember.nn.init, ember.nn.utils, the nn layers (constructor and forward) and the
optimizers and schedulers); only the few calls in ``DENY`` are left out. Each call gets
hostile arguments: tensors of random dtypes, shapes and layouts on the device under test,
results of earlier calls, ints near 2**31, 2**62 and 2**63, sizes whose product overflows
int64, negative sizes, NaN and infinities, None, strings, nested tuples and lists,
dtypes, devices, slices, Ellipsis, object(), and keyword arguments named after the
function's signature.

The calls run in a child process that logs each call before making it, under two per-call
watchdogs that turn a hang into a finding: the child's CPU time (RLIMIT_CPU: a call that
spins) and, WALL_FACTOR times longer, the wall clock (``faulthandler.dump_traceback_later``:
a call that blocks). A call that legitimately takes long on a busy shared machine (an 8 GiB
fill waits for pages) uses little CPU and is not a hang. The parent classifies each call:

- clean: returned, or raised one of ``ALLOWED`` with a message that is not internal;
- unexpected: another exception type (AttributeError, ZeroDivisionError, ...) or a
  message that leaks internals (``'str' object has no attribute 'shape'``);
- crash: the child died of a signal;  hang: the watchdog fired.

After a crash or hang it restarts the child at the next call. Call ``i`` of seed ``s``
is drawn from its own generator, so a run can resume anywhere and a finding is replayed
with ``--seed s --start i --calls 1``.

    python fuzz_api.py --device cpu --calls 200000 --seed 0
"""
from __future__ import annotations

import argparse
import collections
import faulthandler
import inspect
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

# BufferError: what the Array API's from_dlpack raises for a producer it cannot take
ALLOWED = (ValueError, TypeError, IndexError, RuntimeError, OverflowError,
           NotImplementedError, MemoryError, KeyError, BufferError)

# ember's own exception types that are ALLOWED ones: the devices' OutOfMemoryError
# (ember.cuda.OutOfMemoryError and the OpenCL backend's) subclasses RuntimeError and
# MemoryError, as torch.cuda.OutOfMemoryError does; ember.linalg.LinAlgError (a singular,
# non-positive-definite or non-finite matrix) subclasses RuntimeError, as
# torch.linalg.LinAlgError does
EMBER_ALLOWED = {"OutOfMemoryError", "LinAlgError"}

# Messages that show an argument reached internal code unchecked: Python's own wording
# for an operation on a value of the wrong type. A clean error says which op and which
# argument instead.
INTERNAL = re.compile(
    r"object has no attribute|object is not (subscriptable|iterable|callable)|"
    r"unsupported operand type\(s\)|not supported between instances of|"
    r"object cannot be interpreted as an integer|object of type '\w+' has no len|"
    r"can only concatenate|must be real number, not|unhashable type|"
    r"an integer is required|'\w+' object does not support|"
    r"^Expected \w+, got \w+$|^Argument '\w+' has incorrect type|"
    r"cannot convert float (NaN|infinity) to integer|"
    r"^int too large to convert|^Python int too large|signed integer is greater than|"
    r"can't convert negative (int|value) to unsigned|"
    r"^(list|tuple) index out of range$|^index out of range$|^pop from|"
    r"division by zero|^math domain error$|^\d+$")

# Left out, with the reason. Everything else that enumeration finds is called.
DENY = {
    # files, processes and the outside world
    "ember.save", "ember.load", "ember.serialization", "ember.from_dlpack", "ember.from_file",
    "Tensor.share_memory_",  # shared memory segments outlive the child
    # global state that would change the meaning of later calls
    "ember.set_default_dtype", "ember.set_num_threads", "ember.manual_seed", "ember.seed",
    "ember.set_rng_state", "ember.set_printoptions", "ember.set_grad_enabled",
    "autograd.set_grad_enabled", "autograd.set_detect_anomaly",
    "ember.set_default_device", "ember.set_default_tensor_type", "ember.set_flush_denormal",
    "ember.set_num_interop_threads", "ember.set_anomaly_enabled",
    "ember.set_float32_matmul_precision",
    "ember.printoptions",  # a context manager; as a call it is set_printoptions
    # device management
    "ember.empty_cache", "ember.cuda", "ember.opencl", "ember.backends",
    # the fuzzer's own plumbing (modules, not functions)
    "ember.ops", "ember.autograd", "ember.linalg", "ember.array_api", "ember.ember",
}

# ----------------------------------------------------------------------------- values

INTS = [0, 1, 2, 3, -1, -2, -3, 5, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 62, 3 * 2 ** 61,
        2 ** 63 - 1, 2 ** 63, -2 ** 63, -2 ** 63 - 1, 2 ** 64, -2 ** 31]
FLOATS = [0.5, -1.5, 0.0, -0.0, 1e308, 5e-324, math.nan, math.inf, -math.inf, 2.0 ** 63]
STRINGS = ["", "a", "float32", "cpu", "mean", "sum", "none", "ij", "fro", "reflect",
           "nearest", "\x00", "opencl:9"]
SIZES = [(), (0,), (2, 3), (2, -1), (-1,), (-2, 3), (2 ** 32, 2 ** 32), (2 ** 62, 4),
         (3 * 2 ** 61,), (2 ** 31, 2 ** 31, 4), (2 ** 63 - 1,), (1,) * 17, (3, 0, 2 ** 62)]


class Fuzz:
    """Draws the arguments of one call; `pool` holds results of earlier calls."""

    def __init__(self, em, device, rng, pool):
        self.em, self.device, self.rng, self.pool = em, device, rng, pool
        self.dtypes = [em.bool, em.uint8, em.int8, em.int16, em.int32, em.int64,
                       em.float16, em.float32, em.float64]

    def tensor(self):
        """(tensor, description): random dtype, shape and layout on the device."""
        em, rng = self.em, self.rng
        ndim = rng.choice([0, 1, 1, 2, 2, 3, 4])
        shape = tuple(rng.choice([0, 1, 1, 2, 3, 4]) for _ in range(ndim))
        dt = rng.choice(self.dtypes)
        dev = self.device if rng.random() < 0.9 else "cpu"
        t = (em.randn(shape, device=dev) * 3).to(dt)
        how = "contiguous"
        k = rng.random()
        if k < 0.15 and t.ndim >= 2:
            t, how = t.transpose(0, -1), "transposed"
        elif k < 0.25 and t.ndim >= 1 and t.shape[0] == 1:
            t, how = t.expand(3, *t.shape[1:]), "expanded"
        elif k < 0.35 and t.ndim >= 1:
            t, how = t[::2], "sliced"
        elif k < 0.40 and t.ndim >= 1 and t.shape[0] >= 2:
            t, how = t[1:], "offset"
        if dt.is_floating_point and rng.random() < 0.1:
            t = t.detach().requires_grad_()
            how += ",grad"
        return t, f"T({dt.name},{tuple(shape)},{how},{dev})"

    def scalar(self):
        k = self.rng.random()
        if k < 0.55:
            v = self.rng.choice(INTS)
        elif k < 0.8:
            v = self.rng.choice(FLOATS)
        else:
            v = self.rng.choice([None, True, False, complex(1, 2), b"x"])
        return v, repr(v)

    def value(self, depth=0):
        """(value, description) of one hostile argument."""
        em, rng = self.em, self.rng
        k = rng.random()
        if k < 0.30:
            return self.tensor()
        j = rng.random()   # drawn always, so a replay draws the same numbers
        if k < 0.40 and self.pool:
            v, d = self.pool[int(j * len(self.pool))]
            return v, "pool:" + d
        if k < 0.62:
            return self.scalar()
        if k < 0.70:
            v = rng.choice(SIZES)
            return v, repr(v)
        if k < 0.76 and depth < 2:
            n = rng.randint(0, 3)
            items = [self.value(depth + 1) if rng.random() < 0.4 else self.scalar()
                     for _ in range(n)]
            seq = rng.choice([tuple, list])
            return seq(v for v, _ in items), (
                "(" if seq is tuple else "[") + ", ".join(d for _, d in items) + (
                ",)" if seq is tuple and n == 1 else ")" if seq is tuple else "]")
        if k < 0.80:
            v = rng.choice(STRINGS)
            return v, repr(v)
        if k < 0.86:
            v = rng.choice(self.dtypes + [int, float, bool, "int64"])
            return v, repr(v)
        if k < 0.89:
            v = rng.choice(["cpu", "opencl", "cuda:7", "tpu", -1, em.device("cpu"), self.device])
            return v, f"device({v!r})"
        if k < 0.93:
            v = rng.choice([slice(None), slice(1, 2), slice(None, None, -1),
                            slice(0, 2 ** 63), slice(None, None, 0), Ellipsis])
            return v, repr(v)
        if k < 0.96:
            import numpy as np
            v = rng.choice([np.ones(3), np.float64(2.5), np.int64(3), np.zeros((2, 0)),
                            np.array(["a"])])
            return v, "np:" + repr(v)
        return object(), "object()"


# ----------------------------------------------------------------------------- targets

def targets(em):
    """{name: (kind, obj)} of every public callable, found by enumeration.

    kind: 'fn' (call it), 'method' (call it on a tensor), 'prop' (read it from a
    tensor), 'module' (construct the layer, then call it), 'optim' (construct the
    optimizer, then step it), 'sched' (construct the scheduler on an optimizer)."""
    import ember.array_api
    import ember.autograd
    import ember.linalg
    import ember.nn as nn
    import ember.nn.functional
    import ember.nn.init
    import ember.nn.utils
    import ember.optim as optim
    import ember.optim.lr_scheduler as sched
    out = {}
    for prefix, mod in (("ember", em), ("F", ember.nn.functional), ("linalg", ember.linalg),
                        ("array_api", ember.array_api), ("autograd", ember.autograd),
                        ("init", ember.nn.init), ("nn.utils", ember.nn.utils)):
        for name in dir(mod):
            try:
                obj = getattr(mod, name)
            except AttributeError:   # listed by dir() but missing: a finding itself
                out[f"{prefix}.{name}"] = ("missing", name)
                continue
            if name.startswith("_") or inspect.ismodule(obj) or not callable(obj):
                continue
            if prefix != "ember" and getattr(obj, "__module__", "").split(".")[0] not in (
                    "ember", "builtins"):
                continue   # re-exported helpers (math, warnings, ...)
            out[f"{prefix}.{name}"] = ("fn", obj)
    for name in dir(em.Tensor):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(em.Tensor, name)
        kind = "method" if callable(getattr(em.Tensor, name)) and not isinstance(
            attr, property) else "prop"
        out[f"Tensor.{name}"] = (kind, name)
    for name in dir(nn):
        obj = getattr(nn, name)
        if inspect.isclass(obj) and issubclass(obj, nn.Module) and name not in (
                "Module", "RNNBase"):
            out[f"nn.{name}"] = ("module", obj)
    for name in dir(optim):
        obj = getattr(optim, name)
        if inspect.isclass(obj) and issubclass(obj, optim.Optimizer) and obj is not optim.Optimizer:
            out[f"optim.{name}"] = ("optim", obj)
    for name in dir(sched):
        obj = getattr(sched, name)
        if inspect.isclass(obj) and name.endswith(("LR", "Plateau")) and name != "LRScheduler":
            out[f"lr_scheduler.{name}"] = ("sched", obj)
    for name in DENY:
        out.pop(name, None)
    return out


def _params(fn, bound=False):
    """(number of required positional params, optional keyword names) or None; bound:
    the first parameter is the receiver (a method or constructor)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    req, kw = 0, []
    ps = list(sig.parameters.values())
    if bound and ps and ps[0].kind in (ps[0].POSITIONAL_ONLY, ps[0].POSITIONAL_OR_KEYWORD):
        ps = ps[1:]
    for p in ps:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            req += 1
        elif p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty:
            kw.append(p.name)
        elif p.kind is p.KEYWORD_ONLY:
            kw.append(p.name)
    return req, kw


def _draw_call(fz, name, kind, obj):
    """(args, kwargs, description) for one call of `name`."""
    rng = fz.rng
    if kind == "missing":
        return [], {}, ""
    fn = getattr(fz.em.Tensor, obj) if kind in ("method", "prop") else obj
    info = _params(fn.__init__ if inspect.isclass(fn) else fn,
                   bound=inspect.isclass(fn) or kind == "method")
    req, kw = info if info else (rng.randint(0, 3), [])
    n = req if rng.random() < 0.6 else rng.randint(0, req + 2)
    drawn = [fz.value() for _ in range(n)]
    kwargs, kdesc = {}, []
    for k in kw:
        if rng.random() < 0.25:
            v, d = fz.value()
            kwargs[k] = v
            kdesc.append(f"{k}={d}")
    return [v for v, _ in drawn], kwargs, ", ".join([d for _, d in drawn] + kdesc)


def _small_args(rng, fn):
    """Plausible constructor arguments (small positive ints) for a layer's forward test."""
    info = _params(fn.__init__, bound=True)
    req = info[0] if info else 1
    return [rng.choice([1, 2, 3, 4]) for _ in range(req)]


def _touch(em, r, depth=0):
    """Read a result the way a user would: every element of small tensors."""
    if isinstance(r, em.Tensor):
        if r.numel() <= 64:
            r.tolist()
            repr(r)
    elif isinstance(r, (tuple, list)) and depth < 2:
        for x in r[:8]:
            _touch(em, x, depth + 1)


def _names_op(name, target, message):
    """Whether an error message names the op: its public name, or the name of the
    function behind it (aliases such as less -> lt)."""
    kind, obj = target
    words = {name.rsplit(".", 1)[-1]}
    words.add(getattr(obj, "__name__", "") if not isinstance(obj, str) else obj)
    message = message.lower()
    return any(w.strip("_").lower() in message for w in words if w.strip("_"))


def _one_call(em, fz, names, table, pool):
    """Draw and make one call; returns (description, thunk)."""
    rng = fz.rng
    name = rng.choice(names)
    kind, obj = table[name]
    args, kwargs, desc = _draw_call(fz, name, kind, obj)
    if kind in ("method", "prop"):
        j = rng.random()
        recv, rdesc = pool[int(j / 0.3 * len(pool))] if pool and j < 0.3 else fz.tensor()
        if not isinstance(recv, em.Tensor):
            recv, rdesc = fz.tensor()
        desc = f"{rdesc}.{obj}" + ("" if kind == "prop" else f"({desc})")

        def call():
            m = getattr(recv, obj)
            return m if kind == "prop" else m(*args, **kwargs)
        return name, args, kwargs, desc, call
    if kind == "module":
        if rng.random() < 0.5:   # hostile constructor
            return name, args, kwargs, f"{name}({desc})", lambda: obj(*args, **kwargs)
        cargs = _small_args(rng, obj)
        fargs = [fz.value()[0] if rng.random() < 0.3 else fz.tensor()[0]
                 for _ in range(rng.randint(1, 3))]
        fdesc = ", ".join(_describe(em, a) for a in fargs)

        def forward():
            try:
                m = obj(*cargs)
            except ALLOWED:
                return None   # not a valid small layer; nothing to forward
            m.to(fz.device)
            return m(*fargs)
        desc = f"{name}({', '.join(map(str, cargs))})({fdesc})"
        return name + ".forward", fargs, {}, desc, forward
    if kind == "optim":
        if rng.random() < 0.5:
            t = fz.tensor()[0]
            p = em.zeros(3, device=fz.device, requires_grad=True)
            args = [[p, t]] + args[1:]
            desc = f"[param, {_describe(em, t)}], " + desc

        def step():
            o = obj(*args, **kwargs)
            for g in o.param_groups:
                for p in g["params"]:
                    if isinstance(p, em.Tensor) and p.is_floating_point():
                        p.grad = em.ones_like(p)
            o.step()
            o.zero_grad()
            return o
        return name, args, kwargs, f"{name}({desc})", step
    if kind == "sched":
        import ember.optim as optim
        p = em.zeros(3, device=fz.device, requires_grad=True)
        opt = optim.SGD([p], lr=0.1)
        args = [opt] + args[1:]

        def sched():
            s = obj(*args, **kwargs)
            for _ in range(3):
                opt.step()
                s.step(*([1.0] if "Plateau" in name else []))
            return s
        return name, args, kwargs, f"{name}(sgd, {desc})", sched
    if kind == "missing":
        def missing():
            raise AttributeError(f"{name} is listed by dir() but does not exist")
        return name, args, kwargs, name, missing
    return name, args, kwargs, f"{name}({desc})", lambda: obj(*args, **kwargs)


def _describe(em, a):
    if isinstance(a, em.Tensor):
        return f"T({a.dtype.name},{tuple(a.shape)},{a.device})"
    return repr(a)[:60]


def classify(exc_type, message):
    """'clean' or 'unexpected' for an exception a call raised."""
    import builtins
    if exc_type in EMBER_ALLOWED:
        return "unexpected" if INTERNAL.search(message) else "clean"
    builtin = getattr(builtins, exc_type, None)
    if builtin is None or not (isinstance(builtin, type) and issubclass(builtin, ALLOWED)):
        return "unexpected"
    if INTERNAL.search(message):
        return "unexpected"
    return "clean"


def arm_watchdogs(timeout):
    """The watchdogs of the next call: `timeout` more CPU seconds for this process
    (SIGXCPU after that) and timeout * WALL_FACTOR wall seconds (faulthandler exits)."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    used = resource.getrusage(resource.RUSAGE_SELF)
    budget = int(used.ru_utime + used.ru_stime + timeout) + 1
    if hard != resource.RLIM_INFINITY:
        budget = min(budget, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (budget, hard))
    faulthandler.dump_traceback_later(timeout * WALL_FACTOR, exit=True)


def child(device, seed, start, stop, logpath, timeout):
    """Make calls start..stop-1, logging 'C i name desc' before each and 'R i outcome'
    after it."""
    import resource
    # impossible allocations must fail as MemoryError, not take the machine down
    # (PoCL crashes when a host allocation behind a device buffer fails: give it room
    # for its largest buffer, 8 GiB)
    limit = int(os.environ.get("EMBER_FUZZ_MEMORY", (3 if device == "cpu" else 12) << 30))
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:   # already limited (ulimit -v): stay below it
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    faulthandler.enable()
    # past its CPU budget the kernel sends SIGXCPU: dump the stack, then die of it
    faulthandler.register(signal.SIGXCPU, chain=True)
    import warnings
    warnings.simplefilter("ignore")
    import ember as em
    table = targets(em)
    names = sorted(table)
    pool = []
    log = open(logpath, "a", buffering=1)
    for i in range(start, stop):
        rng = random.Random(f"{seed}:{i}")
        fz = Fuzz(em, device, rng, pool)
        try:
            name, args, kwargs, desc, call = _one_call(em, fz, names, table, pool)
        except ALLOWED:
            continue   # drawing a tensor failed (e.g. a dtype the device lacks)
        log.write(f"C {i} {name} {desc[:400]!r}\n")
        arm_watchdogs(timeout)
        try:
            r = call()
            _touch(em, r)
            outcome = {"ok": True}
            if isinstance(r, em.Tensor):   # a later call's argument
                entry = (r, f"<{desc[:200]}>")
                if len(pool) < 32:
                    pool.append(entry)
                else:
                    pool[rng.randrange(32)] = entry
        except BaseException as e:   # noqa: BLE001 - the parent judges every outcome
            if isinstance(e, KeyboardInterrupt):
                raise
            outcome = {"type": type(e).__name__, "msg": str(e)[:300],
                       "named": _names_op(name, table[name.removesuffix(".forward")], str(e))}
        finally:
            faulthandler.cancel_dump_traceback_later()
        log.write(f"R {i} {json.dumps(outcome)}\n")


# ----------------------------------------------------------------------------- parent

_NUM = re.compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?")


def _cause(name, exc_type, msg):
    """A finding's cause: the target, the exception type and its message with the
    numbers taken out."""
    return f"{name}: {exc_type}: {_NUM.sub('N', msg)[:120]}"


# A call that takes this long is a hang: generous, since on a busy 2-core machine PoCL
# compiles a new kernel in seconds, while the hangs this is for ran for minutes.
WATCHDOG_S = 30.0     # CPU seconds per call
WALL_FACTOR = 4       # ... and this many times as many wall seconds


def run(device, seed, calls, start=0, timeout=WATCHDOG_S, out=sys.stdout, verbose=False):
    """Fuzz `calls` calls; returns the figures and the findings."""
    figures = collections.Counter()
    findings = collections.defaultdict(list)   # kind -> [(cause, reproducer)]
    with tempfile.TemporaryDirectory() as tmp:
        logpath = os.path.join(tmp, "calls.log")
        i, stop = start, start + calls
        while i < stop:
            open(logpath, "w").close()
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--device", device,
                   "--seed", str(seed), "--start", str(i), "--calls", str(stop - i),
                   "--log", logpath, "--timeout", str(timeout)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=None)
            last = None
            with open(logpath) as f:
                for line in f:
                    tag, idx, rest = (line.rstrip("\n").split(" ", 2) + [""])[:3]
                    if tag == "C":
                        name, desc = rest.split(" ", 1)
                        last = (int(idx), name, desc)
                        continue
                    figures["calls"] += 1
                    o = json.loads(rest)
                    if o.get("ok"):
                        figures["returned"] += 1
                    elif classify(o["type"], o["msg"]) == "clean":
                        figures["clean errors"] += 1
                        if not o.get("named", True):   # reported, not a failure
                            figures["clean, op not named"] += 1
                            findings["op not named"].append(
                                (_cause(last[1], o["type"], o["msg"]),
                                 f"seed {seed} call {idx}: {last[2]}"))
                    else:
                        figures["unexpected"] += 1
                        findings["unexpected"].append((_cause(last[1], o["type"], o["msg"]),
                                                       f"seed {seed} call {idx}: {last[2]}"))
                    last = None
            if proc.returncode == 0:
                break
            if last is None:   # died outside a call: report and stop
                figures["child errors"] += 1
                findings["child"].append(("child died outside a call", proc.stderr[-2000:]))
                break
            figures["calls"] += 1
            hang = "Timeout (" in proc.stderr or proc.returncode == -signal.SIGXCPU
            kind = "hangs" if hang else "crashes"
            figures[kind] += 1
            how = "watchdog" if hang else f"signal {-proc.returncode}" if proc.returncode < 0 \
                else f"exit {proc.returncode}"
            findings[kind].append((f"{last[1]} ({how})", f"seed {seed} call {last[0]}: {last[2]}"))
            if verbose:
                print(f"{kind.upper()} {how} seed {seed} call {last[0]}: {last[2]}",
                      file=out, flush=True)
            i = last[0] + 1
    figures["calls"] = figures["calls"]
    return figures, findings


def report(figures, findings, out=sys.stdout, limit=1000):
    keys = ["calls", "returned", "clean errors", "clean, op not named", "unexpected",
            "crashes", "hangs", "child errors"]
    print("  ".join(f"{k}: {figures.get(k, 0)}" for k in keys), file=out)
    for kind in ("crashes", "hangs", "unexpected", "child", "op not named"):
        causes = collections.OrderedDict()
        for cause, repro in findings.get(kind, []):
            causes.setdefault(cause, []).append(repro)
        if causes:
            print(f"\n{kind}: {len(causes)} distinct causes", file=out)
        for cause, repros in list(causes.items())[:limit]:
            print(f"  [{len(repros)}x] {cause}\n      e.g. {repros[0][:300]}", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=WATCHDOG_S, help="per-call watchdog, seconds")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(a.device, a.seed, a.start, a.start + a.calls, a.log, a.timeout)
        return 0
    t0 = time.time()
    figures, findings = run(a.device, a.seed, a.calls, a.start, a.timeout, verbose=True)
    print(f"device {a.device}, seed {a.seed}, calls {a.start}..{a.start + a.calls}, "
          f"{time.time() - t0:.0f} s")
    report(figures, findings)
    bad = sum(figures[k] for k in ("unexpected", "crashes", "hangs", "child errors"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
