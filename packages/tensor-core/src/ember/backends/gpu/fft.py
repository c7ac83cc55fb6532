"""GPUBackend's FFT kernels (kernels/gpu/programs/fft.h), with the CPU kernels'
signatures (ember/_C/fft.pyx): complex signals are float [..., 2] tensors.

Each transform brings its lines to dense rows (the transformed dim last, zero-padded
or trimmed to n, with ember's device ops), runs one Stockham pass per radix of n
(fft_pass; radices up to 16) or, when n has a larger prime factor, Bluestein's
convolution through such passes of a smooth length n2 >= 2n - 1, and copies the rows
into `out` through its strides. r2c transforms the signal as complex (imaginary part
zero) and keeps the first entries; c2r rebuilds the whole Hermitian line first
(fft_hermitian). Plans (the radices, the root table, Bluestein's chirp and filter,
computed on the host in float64) are cached per (device, length, dtype, direction),
at most 32.
"""
from __future__ import annotations

import math
from collections import OrderedDict

_MAX_RADIX = 16
_PLANS = 32


def _factors(n):
    """[4, 4, ..., 2?, odd primes] ([1] for n = 1: one pass that only scales) or None
    when a prime factor exceeds the radix limit."""
    if n == 1:
        return [1]
    f = []
    while n % 4 == 0:
        f.append(4)
        n //= 4
    if n % 2 == 0:
        f.append(2)
        n //= 2
    p = 3
    while p * p <= n:
        while n % p == 0:
            f.append(p)
            n //= p
        p += 2
    if n > 1:
        f.append(n)
    return f if all(p <= _MAX_RADIX for p in f) else None


def _good_size(m):
    """The smallest 2^a 3^b 5^c 7^d >= m."""
    best = 1 << (m - 1).bit_length()
    a = 1
    while a < best:
        b = a
        while b < best:
            c = b
            while c < best:
                x = c
                while x < m:
                    x *= 2
                best = min(best, x)
                c *= 3
            b *= 5
        a *= 7
    return best


class FFTKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, cast_into, ...) it uses."""

    def _fft_plan(self, device, n, dtype, fwd):
        cache = self.__dict__.setdefault("_fft_plans", OrderedDict())
        key = (str(device), n, dtype.name, bool(fwd))
        plan = cache.get(key)
        if plan is not None:
            cache.move_to_end(key)
            return plan
        import ember as em
        sign = -1.0 if fwd else 1.0
        f = _factors(n)
        if f is not None:
            t = em.arange(n, dtype=em.float64) * (2 * math.pi / n)
            tw = em.stack([t.cos(), t.sin() * sign], -1)
            plan = {"factors": f, "tw": tw.to(dtype).to(device)}
        else:
            n2 = _good_size(2 * n - 1)
            m = em.arange(n, dtype=em.int64)
            q = ((m * m) % (2 * n)).to(em.float64) * (math.pi / n)
            bk = em.stack([q.cos(), q.sin() * sign], -1)                 # (n, 2) float64
            b = em.zeros(n2, 2, dtype=em.float64)
            conj = bk * em.tensor([1.0, -1.0], dtype=em.float64)
            b[:n] = conj
            if n > 1:
                b[n2 - n + 1:] = conj[1:].flip(0)
            from ember.ops.fft import _c2c
            bkf = _c2c(b, 0, n2, True, 1.0 / n2)                          # on the CPU
            plan = {"n2": n2, "bk": bk.to(dtype).to(device), "bkf": bkf.to(dtype).to(device),
                    "sub_f": self._fft_plan(device, n2, dtype, True),
                    "sub_b": self._fft_plan(device, n2, dtype, False)}
        cache[key] = plan
        while len(cache) > _PLANS:
            cache.popitem(last=False)
        return plan

    def _fft_rows(self, x, n, fwd, scale):
        """The DFT of the dense rows x (lines, n, 2), a scratch tensor this overwrites:
        returns the dense (lines, n, 2) result (x itself or another buffer)."""
        lines, dt, dev = x.shape[0], x.dtype, x.device
        plan = self._fft_plan(dev, n, dt, fwd)
        name = dt.name
        if "factors" in plan:          # Stockham passes, ping-ponging between x and one buffer
            src, dst = x, self.empty((lines, n, 2), dt, dev)
            l1, last = 1, len(plan["factors"]) - 1
            for i, ip in enumerate(plan["factors"]):
                ido = n // (l1 * ip)
                self.run(dev, f"fft_pass_{name}", lines * (n // ip),
                         [lines, n, ip, l1, ido, self.handle(src), self.handle(dst),
                          self.handle(plan["tw"]), scale if i == last else 1.0])
                src, dst = dst, src
                l1 *= ip
            return src
        n2 = plan["n2"]
        a = self.empty((lines, n2, 2), dt, dev)
        self.run(dev, f"fft_blue_pre_{name}", lines * n2,
                 [lines, n, n2, self.handle(x), self.handle(plan["bk"]), self.handle(a)])
        a = self._fft_rows(a, n2, True, 1.0)
        self.run(dev, f"fft_blue_mul_{name}", lines * n2,
                 [lines, n2, self.handle(a), self.handle(plan["bkf"])])
        a = self._fft_rows(a, n2, False, 1.0)
        y = self.empty((lines, n, 2), dt, dev)
        self.run(dev, f"fft_blue_post_{name}", lines * n,
                 [lines, n, n2, self.handle(a), self.handle(plan["bk"]), self.handle(y),
                  float(scale)])
        return y

    def _fft_check(self, x, op):
        self._float_kernel(x, op, ("float32", "float64"))

    @staticmethod
    def _fft_sized(xs, d, n):
        """xs along d trimmed or zero-padded to n (device ops, nothing recorded)."""
        import ember as em
        m = xs.shape[d]
        if m > n:
            return xs.narrow(d, 0, n)
        if m < n:
            shape = list(xs.shape)
            shape[d] = n - m
            return em.cat([xs, em.zeros(shape, dtype=xs.dtype, device=xs.device)], d)
        return xs

    def fft_c2c(self, x, out, dim, forward, scale):
        self._fft_check(x, "fft")
        n = out.shape[dim]
        if out.numel() == 0:
            return out
        xs = self._fft_sized(x.movedim(dim, -2), x.ndim - 2, n)
        bshape = list(xs.shape[:-2])
        rows = self.contiguous(xs).reshape(-1, n, 2)
        y = self._fft_rows(rows, n, forward, float(scale))
        self.cast_into(out.movedim(dim, -2), y.reshape(bshape + [n, 2]))
        return out

    def fft_r2c(self, x, out, dim, n, scale):
        import ember as em
        self._fft_check(x, "rfft")
        if out.numel() == 0:
            return out
        n_out = out.shape[dim]
        xs = self._fft_sized(x.movedim(dim, -1), x.ndim - 1, n)
        bshape = list(xs.shape[:-1])
        rows = self.contiguous(em.stack([xs, em.zeros_like(xs)], -1)).reshape(-1, n, 2)
        y = self._fft_rows(rows, n, True, float(scale))
        self.cast_into(out.movedim(dim, -2), y.narrow(1, 0, n_out).reshape(bshape + [n_out, 2]))
        return out

    def fft_c2r(self, x, out, dim, scale):
        self._fft_check(x, "irfft")
        n = out.shape[dim]
        if out.numel() == 0:
            return out
        xs = x.movedim(dim, -2)
        m = xs.shape[-2]
        bshape = list(xs.shape[:-2])
        rows = self.contiguous(xs).reshape(-1, m, 2) if m else None
        lines = math.prod(bshape)
        full = self.empty((lines, n, 2), x.dtype, x.device)
        if m:
            self.run(x.device, f"fft_hermitian_{x.dtype.name}", lines * n,
                     [lines, n, m, self.handle(rows), self.handle(full)])
        else:
            self.fill(full, 0)
        y = self._fft_rows(full, n, False, float(scale))
        self.cast_into(out.movedim(dim, -1), y.select(-1, 0).reshape(bshape + [n]))
        return out
