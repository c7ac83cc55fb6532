"""DistributedDataParallel: the same model on every rank, each rank on its shard of the
batch, gradients averaged across ranks during backward.

How the averaging overlaps the backward pass: the parameters are packed, in reverse
registration order (roughly the order in which backward produces their gradients),
into buckets of about `bucket_cap_mb`. A hook after each parameter's gradient is
accumulated copies it into its bucket's flat buffer; a bucket whose parameters are all
in starts a non-blocking all_reduce at once, while backward goes on with the layers
below. Buckets start strictly in index order, so every rank issues the same sequence
of collectives even when gradients arrive in different orders. When the last bucket
has started, the hook waits for all of them and writes the averaged gradients back.
The buckets come from ember.distributed.new_buckets: when all ranks run on one machine
they live in MPI shared memory and are averaged in place; across machines they go
through MPI_Iallreduce. Only ember.distributed's public names are used, imported when a
DistributedDataParallel is made, so ember-nn works without ember-mp installed.
"""
import contextlib

import ember as em
from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]

_NEED = ("DistributedDataParallel needs ember.distributed from the ember-mp package: "
         "pip install 'ember-mp[distributed]'")


def _dist():
    try:
        import ember.distributed as dist
    except ModuleNotFoundError as e:
        if e.name and (e.name.startswith("ember.distributed") or e.name.startswith("mpi4py")):
            raise ModuleNotFoundError(_NEED, name=e.name) from None
        raise
    return dist


class _Bucket:
    __slots__ = ("index", "params", "reducer", "flat", "pending", "work")

    def __init__(self, index, params, reducer):
        self.index = index
        self.params = params                  # [(param index, offset, numel)]
        self.reducer = reducer                # its ember.distributed.new_buckets bucket
        self.flat = reducer.tensor
        self.pending = 0
        self.work = None


class DistributedDataParallel(Module):
    """Wrap `module` for data-parallel training (PyTorch's signature; device_ids,
    output_device and dim are accepted for compatibility: every rank runs its module
    where it lives).

    At construction the ranks check that their models have the same parameters
    (names, shapes, dtypes; ValueError on every rank otherwise) and copy rank 0's
    parameters and buffers to all. Each forward with grad enabled arms the gradient
    averaging for the next backward; `no_sync()` skips it (gradients accumulate
    locally and are averaged by the first backward outside the block).
    `find_unused_parameters=True` allows parameters that don't take part in a forward
    on some ranks (found by walking the output's graph); without it such a parameter
    makes the next forward raise, since its bucket never completes. Works with any
    optimizer: it only changes `.grad`. `gradient_as_bucket_view=True` leaves each
    `.grad` of a CPU parameter as a view of its bucket instead of a copy (saves a copy
    per step; a gradient kept across steps is then overwritten by the next backward);
    the buckets are host memory, so parameters on a GPU get their averages copied."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        dist = _dist()
        op = "DistributedDataParallel"
        if not dist.is_initialized():
            raise RuntimeError(f"{op}: the default process group is not initialized; call "
                               f"ember.distributed.init_process_group() first")
        if not isinstance(module, Module):
            raise TypeError(f"{op}: module must be an ember.nn.Module, got "
                            f"{type(module).__name__}")
        if not bucket_cap_mb > 0:
            raise ValueError(f"{op}: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        d = self.__dict__      # plain attributes, not submodules or parameters
        d["_dist"] = dist
        d["process_group"] = process_group
        d["broadcast_buffers"] = bool(broadcast_buffers)
        d["find_unused_parameters"] = bool(find_unused_parameters)
        d["gradient_as_bucket_view"] = bool(gradient_as_bucket_view)
        d["require_backward_grad_sync"] = True
        d["_world"] = dist.get_world_size(process_group)
        d["_src"] = dist.get_process_group_ranks(process_group)[0] \
            if process_group is not None else 0
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        d["_names"] = [n for n, _ in named]
        d["_params"] = [p for _, p in named]
        self._verify_same_model(module)
        self._sync_module_states()
        d["_buckets"], d["_where"] = self._make_buckets(bucket_cap_mb * 1024 * 1024)
        # each parameter's place in its bucket, as a view of its shape, made once
        # (slicing and reshaping per step cost more than the copies themselves)
        d["_slots"] = [self._buckets[b].flat[off:off + n].view(tuple(p.shape))
                       for (b, off, n), p in zip(self._where, self._params)]
        d["_armed"], d["_unused"], d["_reduced"] = False, set(), False
        d["_ready"] = [False] * len(self._params)
        d["_next"] = 0
        d["_hooks"] = [p.register_post_accumulate_grad_hook(self._hook(i))
                       for i, p in enumerate(self._params)]

    # construction -------------------------------------------------------------------
    def _verify_same_model(self, module):
        ranks = self._dist.get_process_group_ranks(self.process_group)
        mine = [[n, list(t.shape), t.dtype.name] for n, t in
                list(module.named_parameters()) + list(module.named_buffers())]
        everyone = [None] * len(ranks)
        self._dist.all_gather_object(everyone, mine, group=self.process_group)
        for r, theirs in enumerate(everyone):
            if theirs == everyone[0]:
                continue
            diff = next((f"{a[0]} {tuple(a[1])} {a[2]} where rank {ranks[0]} has "
                         f"{b[0]} {tuple(b[1])} {b[2]}" for a, b in zip(theirs, everyone[0])
                         if a != b), f"{len(theirs)} parameters and buffers where rank "
                                     f"{ranks[0]} has {len(everyone[0])}")
            raise ValueError(f"DistributedDataParallel: the model differs across ranks: "
                             f"rank {ranks[r]} has {diff}")

    def _sync_module_states(self):
        tensors = list(self.module.parameters()) + list(self.module.buffers())
        works = [self._dist.broadcast(t, self._src, self.process_group, async_op=True)
                 for t in tensors]
        for w in works:
            w.wait()

    def _make_buckets(self, cap):
        buckets, where = [], [None] * len(self._params)
        open_ = {}            # dtype -> (params, bytes) of the bucket being filled
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            members, size = open_.get(p.dtype, ([], 0))
            if members and size + p.numel() * p.element_size() > cap:
                buckets.append((members, p.dtype))
                members, size = [], 0
            members.append(i)
            open_[p.dtype] = (members, size + p.numel() * p.element_size())
        buckets += [(m, dt) for dt, (m, _) in open_.items() if m]
        reducers = self._dist.new_buckets(
            [(sum(self._params[i].numel() for i in m), dt) for m, dt in buckets],
            self.process_group)
        out = []
        for b, (members, _) in enumerate(buckets):
            layout, off = [], 0
            for i in members:
                n = self._params[i].numel()
                layout.append((i, off, n))
                where[i] = (b, off, n)
                off += n
            out.append(_Bucket(b, layout, reducers[b]))
        return out, where

    # forward ------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._armed and any(self._ready):
            missing = [self._names[i] for i, r in enumerate(self._ready) if not r]
            raise RuntimeError(
                "DistributedDataParallel: the previous backward did not produce gradients "
                f"for {missing}, so their buckets were never averaged. Pass "
                "find_unused_parameters=True when parameters can be left out of a forward, "
                "and make sure every forward output takes part in the loss")
        if self.broadcast_buffers:
            for b in self.module.buffers():
                self._dist.broadcast(b, self._src, self.process_group)
        out = self.module(*inputs, **kwargs)
        self.__dict__["_reduced"] = False
        if em.is_grad_enabled() and self.require_backward_grad_sync and self._params:
            self._arm(out)
        else:
            self.__dict__["_armed"] = False
        return out

    def _arm(self, out):
        d = self.__dict__
        d["_armed"], d["_next"] = True, 0
        d["_ready"] = [False] * len(self._params)
        d["_unused"] = self._find_unused(out) if self.find_unused_parameters else set()
        for b in self._buckets:
            b.work = None
            b.pending = sum(1 for i, _, _ in b.params if i not in self._unused)

    def _find_unused(self, out):
        """Indices of the parameters that `out`'s graph does not reach."""
        seen, reached = set(), set()
        stack = [t.grad_fn for t in _tensors(out) if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            var = getattr(node, "variable", None)
            if var is not None:
                reached.add(id(var))
            stack.extend(fn for fn, _ in node.next_functions)
        # a leaf used directly as an output has no node of its own
        reached.update(id(t) for t in _tensors(out) if t.grad_fn is None)
        return {i for i, p in enumerate(self._params) if id(p) not in reached}

    # backward -----------------------------------------------------------------------
    def _hook(self, i):
        def hook(p):
            if not self._armed:
                if self._reduced:
                    raise RuntimeError(
                        f"DistributedDataParallel: a second backward through the same "
                        f"forward (parameter {self._names[i]} got another gradient after "
                        f"the averaging); its gradients would differ across ranks. Run "
                        f"forward again, or sum the losses and call backward once")
                return
            if self._ready[i]:
                raise RuntimeError(f"DistributedDataParallel: parameter {self._names[i]} got "
                                   f"its gradient twice in one backward (reentrant backward "
                                   f"or a second backward on the same forward)")
            self._ready[i] = True
            bucket = self._buckets[self._where[i][0]]
            if i in self._unused:
                if bucket.work is not None:
                    raise RuntimeError(
                        f"DistributedDataParallel: parameter {self._names[i]} got a gradient "
                        f"although the forward's output does not depend on it (backward "
                        f"from another tensor?); its bucket was already averaged")
                self._unused.discard(i)
            else:
                bucket.pending -= 1
            self._to_bucket(i, p.grad)
            self._launch_ready()
        return hook

    def _launch_ready(self):
        buckets = self._buckets
        while self._next < len(buckets) and buckets[self._next].pending == 0:
            b = buckets[self._next]
            for i, _, _ in b.params:
                if not self._ready[i]:      # unused here: its grad so far, or zeros
                    self._to_bucket(i, self._params[i].grad)
            b.work = b.reducer.all_reduce(average=True)
            self.__dict__["_next"] = self._next + 1
        # MPI moves data only inside MPI calls: a poll here lets started buckets progress
        for b in buckets[:self._next]:
            b.work.is_completed()
        if self._next == len(buckets):
            self._finish()

    def _to_bucket(self, i, grad):
        slot = self._slots[i]
        with em.no_grad():
            if grad is None:
                slot.fill_(0)
            elif grad.data_ptr() != slot.data_ptr():    # not already the bucket's view
                slot.copy_(grad)

    def _finish(self):
        self.__dict__["_armed"] = False
        used = None
        if self.find_unused_parameters:
            # a parameter without gradient on every rank keeps grad None, as without DDP
            # (one unused now but with a gradient accumulated under no_sync has one)
            used = em.tensor([int(r or p.grad is not None)
                              for r, p in zip(self._ready, self._params)], dtype=em.int32)
            self._dist.all_reduce(used, op=self._dist.ReduceOp.MAX, group=self.process_group)
            used = used.tolist()
        with em.no_grad():
            for b in self._buckets:
                b.work.wait()
                for i, _, _ in b.params:
                    if used is not None and not used[i]:
                        continue
                    p, avg = self._params[i], self._slots[i]
                    # buckets are host memory: a parameter on a device gets a copy
                    if self.gradient_as_bucket_view and p.device == avg.device:
                        p.grad = avg
                    elif p.grad is None:
                        p.grad = avg.to(p.device, copy=True)
                    elif p.grad.data_ptr() != avg.data_ptr():
                        p.grad.copy_(avg)
        self.__dict__["_ready"] = [False] * len(self._params)
        self.__dict__["_reduced"] = True

    @contextlib.contextmanager
    def no_sync(self):
        """Inside: backward accumulates gradients locally, without communication."""
        before = self.require_backward_grad_sync
        self.__dict__["require_backward_grad_sync"] = False
        try:
            yield
        finally:
            self.__dict__["require_backward_grad_sync"] = before

    def extra_repr(self):
        return f"world_size={self._world}, buckets={len(self._buckets)}"


def _tensors(obj):
    if isinstance(obj, em.Tensor):
        if obj.requires_grad:
            yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)
