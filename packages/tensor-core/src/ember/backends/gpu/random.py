"""GPUBackend's Philox random numbers (kernels/gpu/programs/random.h), the CPU's
numbers word for word."""
from __future__ import annotations

from ember._C import core as _core


class RandomKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def random(self, kind, out, *args):
        """Philox draws into `out`, the CPU's numbers (ember.ops.random's entry point):
        random(kind, out, seed, offset, *params) for uniform (low, high), normal (mean,
        std), integers (low, span), exponential (lambd), randperm ()."""
        if kind == "multinomial":
            raise NotImplementedError(f"multinomial: no kernel for {out.device} "
                                      f"({out.dtype.name}); draw on the CPU and move the "
                                      f"result")
        seed, offset, *params = args
        n = out.numel()
        if n == 0:
            return out
        dt = out.dtype.name
        self._check_dtype(out.dtype, out.device, kind)
        # float16 uniforms come from float32 draws (the same words); bfloat16 from float32
        # draws of every kind, rounded once (the CPU's numbers, kernels/cpu/random.c)
        f16_via_f32 = (dt == "float16" and kind in ("uniform", "exponential")) or (
            dt == "bfloat16" and kind != "randperm")
        target = out if out.is_contiguous() and out.storage_offset() == 0 and not f16_via_f32 \
            else self.empty(out.shape, _core._dtype_by_name("float32") if f16_via_f32
                            else out.dtype, out.device)
        tdt = target.dtype.name
        keys = [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, offset]
        h = self.handle(target)
        if kind == "uniform":
            lo, hi = params
            self.run(out.device, f"random_uniform_{tdt}", n,
                     [n, h] + keys + [float(lo), float(hi - lo), float(lo), float(hi - lo)])
            if f16_via_f32 and hi > lo:
                from ember._dtypes import low_float_below
                self.elementwise("minimum", [target, max(low_float_below(hi, out.dtype), lo)],
                                 target.dtype, target.dtype, target)
        elif kind == "normal":
            self.run(out.device, f"random_normal_{tdt}", n,
                     [n, h] + keys + [float(p) for p in params])
        elif kind == "integers":
            low, span = params
            self.run(out.device, f"random_integers_{tdt}", n, [n, h] + keys + [int(low), int(span)])
        elif kind == "exponential":
            self.run(out.device, f"random_exponential_{tdt}", n, [n, h] + keys + [float(params[0])])
        elif kind == "randperm":
            self.launch(out.device, "randperm_int64", (1,), (1,), [n, h] + keys)
        else:
            raise NotImplementedError(f"random: no {self.name} kernel for {kind!r}")
        if target is not out:
            self.cast_into(out, target)
        return out
