"""GPUBackend's fused optimizer, GradScaler and clipping steps
(kernels/gpu/programs/optim.h): multi-tensor launches, up to NSLOTS tensors each, where
the composed ember ops take 3 to ~10 launches per tensor. adam_ and sgd_ return the
indices of the entries they do not take (for the composed ops), and read GradScaler's
found-inf flag on the device (found_inf: skip the step there, no host read). Optional
for a backend: ember.optim, GradScaler and clip_grad_norm_ ask with getattr and compose
without them."""
from __future__ import annotations

import math
import struct

from ember._C import core as _core
from ember._dtypes import float32, float64, int64
from ember.backends.gpu.layout import GROUP

NSLOTS = 16                                   # EM_SLOTS16 in optim.h
CHUNK = 1 << 12                               # elements per work-group (optim.h)
_OPT_DTYPES = ("float32", "float64")          # what the CPU's fused loops take
_UNSCALE_DTYPES = ("float16", "bfloat16", "float32", "float64")
_TABLES_KEPT = 256                            # slot tables kept on each device


def _dense_like(p, others):
    """p dense (any offset) on its device in a fused dtype, the `others` (None skipped)
    dense of its dtype, size and device."""
    if p.dtype.name not in _OPT_DTYPES or not p.is_contiguous():
        return False
    for o in others:
        if o is not None and (o.device != p.device or o.dtype is not p.dtype
                              or o.numel() != p.numel() or not o.is_contiguous()):
            return False
    return True


def _flag(t, dev):
    """A one-element float32 tensor on dev (GradScaler's found-inf flag), or None."""
    return t is not None and t.device == dev and t.dtype is float32 and t.numel() == 1


def _chunks(idx):
    return [idx[k:k + NSLOTS] for k in range(0, len(idx), NSLOTS)]


def _chunk_rows(sizes):
    """The work-groups of an elementwise multi-tensor launch (optim.h's chunks): a
    slot of more than CHUNK elements in pieces of CHUNK, consecutive smaller ones
    together up to CHUNK (PoCL pays per work-group, and a group per small tensor cost
    the GPT's AdamW 1.5x a flat buffer's time); rows (first slot, end slot, lo, hi)."""
    rows, k = [], 0
    while k < len(sizes):
        if sizes[k] > CHUNK:
            rows += [(k, k + 1, lo, min(lo + CHUNK, sizes[k]))
                     for lo in range(0, sizes[k], CHUNK)]
            k += 1
            continue
        end, total = k, 0
        while end < len(sizes) and sizes[end] <= CHUNK and total + sizes[end] <= CHUNK:
            total += sizes[end]
            end += 1
        rows.append((k, end, 0, sizes[end - 1]))
        k = end
    return rows


class OptimKernels:
    """Mixed into GPUBackend."""

    def _slot_table(self, dev, rows):
        """(the em_int64 table of one launch's slots on dev, its work-groups): the rows
        (ints, each slot's element count first), then the count of chunks and the
        chunks (_chunk_rows); uploaded once per distinct content and kept, so a
        training loop's steps make no transfer."""
        tables = self.__dict__.setdefault("_slot_tables", {})
        key = (str(dev), tuple(v for r in rows for v in r))
        t = tables.get(key)
        if t is None:
            if len(tables) >= _TABLES_KEPT:
                tables.clear()
            chunks = _chunk_rows([r[0] for r in rows])
            words = key[1] + (len(chunks),) + tuple(v for c in chunks for v in c)
            host = _core.empty((len(words),), int64)
            memoryview(host).cast("B")[:] = struct.pack(f"{len(words)}q", *words)
            t = tables[key] = (self.from_cpu(host, dev), len(chunks) * GROUP)
        return t

    def _slots(self, tensors, fill):
        """The buffers of up to NSLOTS tensors, padded with `fill` (slots past ns are
        never read)."""
        return [self.handle(t) for t in tensors] + [fill] * (NSLOTS - len(tensors))

    def _found_args(self, found_inf, fill):
        if found_inf is None:
            return [fill, 0, 0]
        return [self.handle(found_inf), found_inf.storage_offset(), 1]

    def sumsq_(self, tensors):
        """A 1-d tensor (float32; float64 for float64 tensors) of each tensor's sum of
        squares, one launch per NSLOTS tensors; None when it does not take them all
        (dense tensors of one float dtype on this device)."""
        if not tensors:
            return None
        dt = tensors[0].dtype
        dev = tensors[0].device
        if dt.name not in _UNSCALE_DTYPES or any(
                t.dtype is not dt or t.device != dev or not t.is_contiguous()
                for t in tensors):
            return None
        self._check_dtype(dt, dev, "clip_grad_norm_")
        out = self.empty((len(tensors),), float64 if dt is float64 else float32, dev)
        for k, chunk in enumerate(_chunks(list(range(len(tensors))))):
            ts = [tensors[i] for i in chunk]
            tab, _ = self._slot_table(dev, [(t.numel(), t.storage_offset()) for t in ts])
            h = self.handle(tab)
            self.rows_launch(dev, f"sumsq_multi_{dt.name}", len(ts),
                             [len(ts), h, *self._slots(ts, h), self.handle(out), k * NSLOTS])
        return out

    def _scale_multi(self, grads, factor, found_inf, op):
        """grads[i] *= factor (a one-element tensor of the compute dtype) for the dense
        ones of a dtype the kernel takes, found_inf = 1 on a non-finite one (when given);
        returns the indices of the rest."""
        rest, groups = [], {}
        for i, g in enumerate(grads):
            if isinstance(g, _core.TensorBase) and g.dtype.name in _UNSCALE_DTYPES and \
                    g.is_contiguous() and g.device == factor.device:
                groups.setdefault(g.dtype, []).append(i)
            else:
                rest.append(i)
        for dt, idx in groups.items():
            dev = factor.device
            self._check_dtype(dt, dev, op)
            f = factor if factor.dtype is (float64 if dt is float64 else float32) else \
                factor.to(float64 if dt is float64 else float32)
            for chunk in _chunks(idx):
                gs = [grads[i] for i in chunk]
                tab, items = self._slot_table(dev, [(g.numel(), g.storage_offset()) for g in gs])
                h = self.handle(tab)
                self.run(dev, f"scale_multi_{dt.name}", items,
                         [len(gs), h, *self._slots(gs, h), self.handle(f), f.storage_offset(),
                          *self._found_args(found_inf, h)])
                for g in gs:
                    g._bump_version()
        if found_inf is not None:
            found_inf._bump_version()
        return rest

    def amp_unscale_(self, grads, found_inf, inv_scale):
        """grads[i] *= inv_scale in place, found_inf = 1 where one holds an inf or NaN
        (a launch per NSLOTS gradients of a dtype, no host read); returns the indices of
        the gradients it does not take."""
        return self._scale_multi(grads, inv_scale, found_inf,
                                 "_amp_foreach_non_finite_check_and_unscale_")

    def mul_multi_(self, tensors, factor):
        """tensors[i] *= factor (a one-element device tensor: clipping's coefficient);
        returns the indices of the tensors it does not take."""
        return self._scale_multi(tensors, factor, None, "clip_grads_with_norm_")

    def adam_(self, params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, lr, beta1, beta2,
              eps, weight_decay, decoupled, maximize, found_inf=None):
        """One Adam/AdamW step of the dense float32/float64 entries, steps[i] (0-d float32
        tensors on the parameters' device) read on the device and advanced after; with
        found_inf (a one-element float32 tensor there) nothing changes when it is
        nonzero. Returns the indices of the rest."""
        shrink = 1 - lr * weight_decay if decoupled else 1.0
        l2 = 0.0 if decoupled else weight_decay
        logs = [math.log(b) if b > 0 else -math.inf for b in (beta1, beta2)]
        rest, groups = [], {}
        for i, p in enumerate(params):
            st = steps[i]
            if not (_dense_like(p, (grads[i], exp_avgs[i], exp_avg_sqs[i], max_sqs[i]))
                    and _flag(st, p.device)
                    and (found_inf is None or _flag(found_inf, p.device))):
                rest.append(i)
                continue
            groups.setdefault((p.device, p.dtype), []).append(i)
        for (dev, dt), idx in groups.items():
            self._check_dtype(dt, dev, "adam")
            for chunk in _chunks(idx):
                ps = [params[i] for i in chunk]
                xs = [max_sqs[i] if max_sqs[i] is not None else exp_avg_sqs[i] for i in chunk]
                lists = (ps, [grads[i] for i in chunk], [exp_avgs[i] for i in chunk],
                         [exp_avg_sqs[i] for i in chunk], xs, [steps[i] for i in chunk])
                tab, items = self._slot_table(dev, [(ps[k].numel(), *(ts[k].storage_offset()
                                                               for ts in lists))
                                             for k in range(len(chunk))])
                h = self.handle(tab)
                found = self._found_args(found_inf, h)
                self.run(dev, f"adam_multi_{dt.name}", items,
                         [len(chunk), h, *(b for ts in lists for b in self._slots(ts, h)),
                          *found, int(max_sqs[chunk[0]] is not None), shrink, l2,
                          int(bool(maximize)), 1 - beta1, 1 - beta2, *logs, eps, lr])
                self._bump_steps(dev, lists[5], tab, 7, 6, found)
                for ts in (ps, lists[2], lists[3], [max_sqs[i] for i in chunk]):
                    for t in ts:
                        if t is not None:
                            t._bump_version()
        return rest

    def _bump_steps(self, dev, steps, tab, stride, at, found):
        h = self.handle(tab)
        self.run(dev, "step_bump_float32", len(steps),
                 [len(steps), h, stride, at, *self._slots(steps, h), *found])
        for t in steps:
            t._bump_version()

    def sgd_(self, params, grads, bufs, fresh, lr, momentum, dampening, weight_decay,
             nesterov, maximize, found_inf=None):
        """One SGD step of the dense float32/float64 entries (bufs[i]: the momentum
        buffer or None, fresh[i]: its first step); with found_inf (a one-element float32
        tensor on their device) nothing changes when it is nonzero. Returns the indices
        of the rest."""
        rest, groups = [], {}
        for i, p in enumerate(params):
            if not (_dense_like(p, (grads[i], bufs[i]))
                    and (found_inf is None or _flag(found_inf, p.device))):
                rest.append(i)
                continue
            # the kernel takes every entry with a buffer or every one without
            groups.setdefault((p.device, p.dtype, bufs[i] is not None), []).append(i)
        for (dev, dt, has_buf), idx in groups.items():
            self._check_dtype(dt, dev, "sgd")
            for chunk in _chunks(idx):
                ps = [params[i] for i in chunk]
                lists = (ps, [grads[i] for i in chunk],
                         [bufs[i] if has_buf else params[i] for i in chunk])
                tab, items = self._slot_table(dev, [(ps[k].numel(), *(ts[k].storage_offset()
                                                               for ts in lists),
                                              int(bool(fresh[i])))
                                             for k, i in enumerate(chunk)])
                h = self.handle(tab)
                self.run(dev, f"sgd_multi_{dt.name}", items,
                         [len(chunk), h, *(b for ts in lists for b in self._slots(ts, h)),
                          *self._found_args(found_inf, h), int(has_buf), weight_decay,
                          int(bool(maximize)), momentum, 1 - dampening, int(bool(nesterov)),
                          -lr])
                for t in ps + (lists[2] if has_buf else []):
                    t._bump_version()
        return rest

    def amp_update_scale_(self, scale, tracker, found_inf, growth, backoff, interval):
        """PyTorch's _amp_update_scale_ in one launch (scale float32, tracker int32,
        found_inf float32, one element each on this device); False when it does not take
        them."""
        dev = scale.device
        if not (_flag(scale, dev) and _flag(found_inf, dev) and tracker.device == dev
                and tracker.dtype.name == "int32" and tracker.numel() == 1):
            return False
        h = self.handle
        self.launch(dev, "amp_update_scale_float32", (1,), (1,),
                    [h(scale), scale.storage_offset(), h(tracker), tracker.storage_offset(),
                     h(found_inf), found_inf.storage_offset(), growth, backoff, interval])
        scale._bump_version()
        tracker._bump_version()
        return True
