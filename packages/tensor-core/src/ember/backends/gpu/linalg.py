"""GPUBackend's linalg family (kernels/gpu/programs/linalg.h): LU with partial
pivoting and the solve with it, triangular solves, Cholesky, Householder QR and
applying its Q, the symmetric (Hermitian) eigenproblem, the SVD and the nonsymmetric
eigenproblem, float32, float64, complex64 and complex128 (one kernel text for all
four, its arithmetic through the EM_LA_* macros; complex: LAPACK's complex algorithms
with the real ones' work split, the trailing updates four real GEMMs on the parts),
with the CPU kernels' signatures (ember/_C/linalg.pyx).
All but the nonsymmetric eigenproblem stay on the device: no host transfer, no
synchronization (info is written by the kernels; the raising forms of ember.ops.linalg
read it once, after the call).

Small matrices (both dims <= SMALL) are factored in one launch, a work-group per
matrix in local memory. Larger ones are blocked right-looking by NB columns: a panel
kernel factors the block column on the device (a work-group per matrix), then the
trailing matrix is updated by the device GEMM (matmul.h) and a subtraction. The
triangular solves run one work-item per right-hand side column, diagonal blocks of NB
rows at a time with the GEMM between them. QR up to QR_BLOCKED columns is unblocked,
a work-group per matrix (la_geqr2; its Q applied a work-item per column, la_ormqr);
wider, the panels of NB columns are la_geqr2's and the rest block reflectors (I - V T
V^T, compact WY: T by la_larft) applied by the device GEMM, for R and for Q alike.
The symmetric eigenproblem (eigh, eigvalsh) and the SVD: cyclic and one-sided Jacobi,
a work-group per matrix, in local memory up to SMALL, in a device workspace above it
(O(n^3) a sweep in one work-group: a batch of mid-sized matrices fills the device, one
large matrix does not). The nonsymmetric
eigenproblem (eig, eigvals) is the hybrid of linalg_geev: Hessenberg reduction and
back-transformation on the device, the QR iteration on the host, with its host
transfers counted there."""
from __future__ import annotations

import functools

from ember import _dtypes
from ember._C import core as _core

SMALL = 32     # EM_LA_SMALL of linalg.h: the largest dims factored in local memory
GROUP = 64     # EM_LA_GROUP of linalg.h: work-items per work-group of its kernels
NB = 32        # the block of the blocked factorizations and solves
QR_BLOCKED = 64   # QR (and applying its Q) unblocked up to this many reflectors
# the least work-group of the small kernels: a CUDA warp; on OpenCL 8 (PoCL runs a
# work-group as loops between barriers, so idle work-items cost: 64 of them made the
# 8 x 8 LU 6x slower than 8)
SMALL_GROUP_MIN = {"cuda": 32}
DTYPES = ("float32", "float64")
COMPLEX = ("complex64", "complex128")
KERNELS = ("linalg_lu_factor", "linalg_lu_solve", "linalg_trsm", "linalg_cholesky",
           "linalg_geqrf", "linalg_ormqr", "linalg_syev", "linalg_svd", "linalg_geev")
SIZED = ("linalg_syev", "linalg_svd")   # kernels whose errors name the calling op


def _parts(t):
    """The real and imaginary parts of a complex view, as real views of its storage."""
    real = _dtypes.float32 if t.dtype.name == "complex64" else _dtypes.float64
    shape, strides = tuple(t.shape), tuple(2 * x for x in t.stride())
    return tuple(_core.as_strided_from(t.untyped_storage(), real, shape, strides,
                                       2 * t.storage_offset() + k) for k in (0, 1))


def _batch(t, tail=2):
    b = 1
    for s in t.shape[:t.ndim - tail]:
        b *= s
    return b


class LinalgKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    # the dtypes each kernel has on a device (Backend.kernel refuses the others with
    # "<op>: no kernel for <device> (<dtype>)", as a missing kernel)
    kernel_dtypes = {name: DTYPES + COMPLEX for name in KERNELS}

    def kernel(self, name, op, device, dtype):
        fn = super().kernel(name, op, device, dtype)
        return functools.partial(fn, op=op) if name in SIZED else fn

    def _groups(self, device, kernel, batch, args, group=GROUP):
        """One work-group of `group` work-items per matrix (grid-stride past 16384)."""
        if batch > 0:
            g = min(batch, 16384)
            self.launch(device, kernel, (g * group,), (group,), args)

    def _small_group(self, n):
        """The work-group of a small kernel for matrices of order n: a work-item per
        row or column (a power of two from SMALL_GROUP_MIN up)."""
        g = SMALL_GROUP_MIN.get(self.name, 8)
        while g < n and g < GROUP:
            g *= 2
        return g

    def _sub_product(self, c, a, b, conj_a=False, conj_b=False, sign=-1):
        """c -= a @ b (c += a @ b when sign is 1) on views (the trailing updates), by
        the device GEMM; complex: four real GEMMs on the parts (a and b conjugated when
        conj_a / conj_b)."""
        if c.dtype.name not in COMPLEX:
            t = self.matmul(a, b)
            self.elementwise("sub" if sign < 0 else "add", [c, t], c.dtype, c.dtype, c)
            return
        (cr, ci), (ar, ai), (br, bi) = _parts(c), _parts(a), _parts(b)
        sa, sb = -1 if conj_a else 1, -1 if conj_b else 1
        # (ar + i sa ai)(br + i sb bi) = ar br - sa sb ai bi + i (sb ar bi + sa ai br)
        for out, x, y, s in ((cr, ar, br, 1), (cr, ai, bi, -sa * sb), (ci, ar, bi, sb),
                             (ci, ai, br, sa)):
            t = self.matmul(x, y)
            self.elementwise("sub" if s * sign < 0 else "add", [out, t], out.dtype,
                             out.dtype, out)

    def _product(self, a, b, conj_a=False):
        """a @ b (conj(a) @ b when conj_a) of views, a new tensor: the device GEMM, or
        for complex _sub_product's four real ones into zeros."""
        if a.dtype.name not in COMPLEX:
            return self.matmul(a, b)
        out = self.empty(tuple(a.shape[:-1]) + (b.shape[-1],), a.dtype, a.device)
        self.fill(out, 0)
        self._sub_product(out, a, b, conj_a, sign=1)
        return out

    def _trsm(self, a, a_rs, a_cs, b, lower, unit, conj=False):
        """b (B, n, k) <- T^{-1} b for T the triangle of a (B, n, n) read with row and
        column strides (a_rs, a_cs) (conjugated when conj): blocks of NB rows solved by
        la_trsm, the rest of b updated by GEMM after each."""
        nb_, n, k = b.shape
        if nb_ == 0 or n == 0 or k == 0:
            return b
        dev, dt = b.device, b.dtype.name
        abs_, bbs = n * n, n * k

        def solve(i0, i1):
            self.run(dev, f"la_trsm_{dt}", nb_ * k,
                     [nb_, i1 - i0, k, self.handle(a), i0 * a_rs + i0 * a_cs, abs_, a_rs,
                      a_cs, self.handle(b), i0 * k, bbs, k, 1, int(lower), int(unit),
                      int(conj)])

        def tri(r0, r1, c0, c1):     # the block [r0:r1, c0:c1] of T
            return self.view(a, (nb_, r1 - r0, c1 - c0), (abs_, a_rs, a_cs),
                             r0 * a_rs + c0 * a_cs)

        def rows(r0, r1):            # rows r0:r1 of b
            return self.view(b, (nb_, r1 - r0, k), (bbs, k, 1), r0 * k)

        if lower:
            for i0 in range(0, n, NB):
                i1 = min(n, i0 + NB)
                solve(i0, i1)
                if i1 < n:
                    self._sub_product(rows(i1, n), tri(i1, n, i0, i1), rows(i0, i1), conj)
        else:
            for i1 in range(n, 0, -NB):
                i0 = max(0, i1 - NB)
                solve(i0, i1)
                if i0 > 0:
                    self._sub_product(rows(0, i0), tri(0, i0, i0, i1), rows(i0, i1), conj)
        return b

    def linalg_lu_factor(self, a, piv, info):
        """a (..., m, n) <- L and U of A = P L U (in place); piv (..., min(m, n)) int32
        1-based row interchanges; info (...) int32."""
        self._check_dtype(a.dtype, a.device, "lu_factor")
        m, n = a.shape[-2:]
        batch, k = _batch(a), min(m, n)
        dev, dt = a.device, a.dtype.name
        if batch == 0:
            return a
        if m <= SMALL and n <= SMALL:
            self._groups(dev, f"la_getrf_small_{dt}", batch,
                         [batch, m, n, self.handle(a), self.handle(piv), self.handle(info)],
                         self._small_group(max(m, n)))
            return a
        self.fill(info, 0)
        mn = m * n
        for j0 in range(0, k, NB):
            jb = min(NB, k - j0)
            j1 = j0 + jb
            self._groups(dev, f"la_getrf_panel_{dt}", batch,
                         [batch, m, n, j0, jb, self.handle(a), self.handle(piv),
                          self.handle(info)])
            if j1 < n:
                # U12 <- L11^{-1} A12 (unit lower, jb rows), then A22 -= L21 U12
                self.run(dev, f"la_trsm_{dt}", batch * (n - j1),
                         [batch, jb, n - j1, self.handle(a), j0 * n + j0, mn, n, 1,
                          self.handle(a), j0 * n + j1, mn, n, 1, 1, 1, 0])
                if j1 < m:
                    self._sub_product(
                        self.view(a, (batch, m - j1, n - j1), (mn, n, 1), j1 * n + j1),
                        self.view(a, (batch, m - j1, jb), (mn, n, 1), j1 * n + j0),
                        self.view(a, (batch, jb, n - j1), (mn, n, 1), j0 * n + j1))
        return a

    def linalg_lu_solve(self, lu, piv, b, adjoint):
        """b (..., n, k) <- A^{-1} b (A^{-H} b when adjoint) from lu (..., n, n) and
        piv: the interchanges, then the two triangles of lu."""
        self._check_dtype(lu.dtype, lu.device, "lu_solve")
        n, k = b.shape[-2:]
        batch = _batch(lu)
        if batch == 0 or n == 0 or k == 0:
            return b
        dev, dt = b.device, b.dtype.name
        bv = self.view(b, (batch, n, k), (n * k, k, 1))
        luv = self.view(lu, (batch, n, n), (n * n, n, 1))
        swap = [batch, n, k, self.handle(b), self.handle(piv)]
        if not adjoint:
            self.run(dev, f"la_laswp_{dt}", batch * k, swap + [0])
            self._trsm(luv, n, 1, bv, True, True)
            self._trsm(luv, n, 1, bv, False, False)
        else:
            # A^H = U^H L^H P^T: U^H (lower), L^H (upper, unit), then the interchanges
            # undone
            cx = lu.dtype.name in COMPLEX
            self._trsm(luv, 1, n, bv, True, False, cx)
            self._trsm(luv, 1, n, bv, False, True, cx)
            self.run(dev, f"la_laswp_{dt}", batch * k, swap + [1])
        return b

    def linalg_trsm(self, a, b, upper, trans, unit):
        """b (..., n, k) <- op(A)^{-1} b for the triangle of a (..., n, n) that upper
        names (the other is not read), op(A) = A^T when trans; unit: ones on the
        diagonal."""
        self._check_dtype(a.dtype, a.device, "solve_triangular")
        n, k = b.shape[-2:]
        batch = _batch(a)
        av = self.view(a, (batch, n, n), (n * n, n, 1))
        bv = self.view(b, (batch, n, k), (n * k, k, 1))
        lower = bool(upper) if trans else not upper
        rs, cs = (1, n) if trans else (n, 1)
        self._trsm(av, rs, cs, bv, lower, bool(unit))
        return b

    def linalg_cholesky(self, a, info):
        """a (..., n, n) <- L with A = L L^H from a's lower triangle, zeros above (in
        place); info (...) int32: the order of the first leading minor that is not
        positive-definite."""
        self._check_dtype(a.dtype, a.device, "cholesky")
        n = a.shape[-1]
        batch = _batch(a)
        dev, dt = a.device, a.dtype.name
        if batch == 0:
            return a
        if n <= SMALL:
            self._groups(dev, f"la_potrf_small_{dt}", batch,
                         [batch, n, self.handle(a), self.handle(info)], self._small_group(n))
            return a
        self.fill(info, 0)
        nn = n * n
        for j0 in range(0, n, NB):
            jb = min(NB, n - j0)
            j1 = j0 + jb
            self._groups(dev, f"la_potrf_panel_{dt}", batch,
                         [batch, n, j0, jb, self.handle(a), self.handle(info)])
            if j1 < n:
                # A22 -= L21 L21^H (the whole square: its upper part is zeroed below)
                self._sub_product(
                    self.view(a, (batch, n - j1, n - j1), (nn, n, 1), j1 * n + j1),
                    self.view(a, (batch, n - j1, jb), (nn, n, 1), j1 * n + j0),
                    self.view(a, (batch, jb, n - j1), (nn, 1, n), j1 * n + j0),
                    conj_b=a.dtype.name in COMPLEX)
        self.run(dev, f"la_zero_upper_{dt}", batch * nn,
                 [batch, n, self.handle(a), self.handle(info)])
        return a

    def _larfb(self, v, tau, j0, jb, c, trans):
        """c (B, m - j0, p), a view, <- (I - V T V^H) c (T^H when trans) for the block
        reflector of the reflectors j0 .. j0+jb-1 in v (B, m, nv), tau (B, k): V made
        explicit, T by la_larft from V^H V, the rest GEMMs (complex: _product's)."""
        nb_, m, nv = v.shape
        k = tau.shape[-1]
        r = m - j0
        dev, dt = v.device, v.dtype.name
        V = self.empty((nb_, r, jb), v.dtype, dev)
        self.run(dev, f"la_qr_v_{dt}", nb_ * r * jb,
                 [nb_, m, nv, j0, jb, self.handle(v), self.handle(V)])
        Vt = self.view(V, (nb_, jb, r), (r * jb, 1, jb))
        G = self._product(Vt, V, True)
        T = self.empty((nb_, jb, jb), v.dtype, dev)
        self._groups(dev, f"la_larft_{dt}", nb_,
                     [nb_, k, j0, jb, self.handle(tau), self.handle(G), self.handle(T)],
                     self._small_group(jb))
        if trans:
            T = self.view(T, (nb_, jb, jb), (jb * jb, 1, jb))
        self._sub_product(c, V, self._product(T, self._product(Vt, c, True), trans))

    def linalg_geqrf(self, a, tau):
        """a (..., m, n) <- R and the Householder vectors below it (in place); tau
        (..., min(m, n)). Up to QR_BLOCKED columns unblocked (la_geqr2 applies each
        reflector to every column), more blocked: la_geqr2 on a panel of NB columns,
        the trailing columns by _larfb's GEMMs (complex: zgeqr2's H^H, the block
        reflectors' GEMMs on the parts)."""
        self._check_dtype(a.dtype, a.device, "geqrf")
        m, n = a.shape[-2:]
        batch, k = _batch(a), min(m, n)
        if not (batch and k):
            return a
        dev, dt = a.device, a.dtype.name
        group = self._small_group(max(m, n))
        if k <= QR_BLOCKED:
            self._groups(dev, f"la_geqr2_{dt}", batch,
                         [batch, m, n, 0, k, n, self.handle(a), self.handle(tau)], group)
            return a
        av = self.view(a, (batch, m, n), (m * n, n, 1))
        tv = self.view(tau, (batch, k), (k, 1))
        for j0 in range(0, k, NB):
            j1 = min(k, j0 + NB)
            self._groups(dev, f"la_geqr2_{dt}", batch,
                         [batch, m, n, j0, j1, j1, self.handle(a), self.handle(tau)], group)
            if j1 < n:
                self._larfb(av, tv, j0, j1 - j0,
                            self.view(a, (batch, m - j0, n - j1), (m * n, n, 1), j0 * n + j1),
                            True)
        return a

    def linalg_ormqr(self, v, tau, c, trans):
        """c (..., m, p) <- Q c (Q^H c when trans), Q = H_0 ... H_{k-1} from the
        reflectors in the first k = tau.shape[-1] columns of v (..., m, nv): one
        work-item per column of c up to QR_BLOCKED reflectors, more by blocks of NB
        (_larfb)."""
        self._check_dtype(v.dtype, v.device, "ormqr")
        m, nv = v.shape[-2:]
        p = c.shape[-1]
        k = tau.shape[-1] if tau.ndim else 0
        batch = _batch(v)
        if not (batch and k and p):
            return c
        if k <= QR_BLOCKED:
            self.run(c.device, f"la_ormqr_{c.dtype.name}", batch * p,
                     [batch, m, nv, k, p, self.handle(v), self.handle(tau), self.handle(c),
                      int(trans)])
            return c
        vv = self.view(v, (batch, m, nv), (m * nv, nv, 1))
        tv = self.view(tau, (batch, k), (k, 1))
        starts = list(range(0, k, NB))
        for j0 in (starts if trans else reversed(starts)):   # Q c: the last block first
            self._larfb(vv, tv, j0, min(NB, k - j0),
                        self.view(c, (batch, m - j0, p), (m * p, p, 1), j0 * p), trans)
        return c

    def _jacobi_groups(self, batch):
        """The work-groups of the Jacobi kernels of any size, each with its own
        workspace (a group loops over the matrices past 16384)."""
        return min(batch, 16384)

    def linalg_syev(self, a, w, info, vectors, *, op="linalg.eigh"):
        """Symmetric (Hermitian) a (..., n, n) <- its eigenvectors as columns (when
        vectors; in place); w (..., n) the eigenvalues ascending (real); info (...)
        int32 (1: no convergence, -1: a non-finite entry). Cyclic Jacobi, a work-group
        per matrix: n <= SMALL in local memory (la_syevj_small), larger in a device
        workspace of 2 n^2 per work-group (la_syevj). No host transfer."""
        self._check_dtype(a.dtype, a.device, op)
        n = a.shape[-1]
        batch = _batch(a)
        dev, dt = a.device, a.dtype.name
        if not (batch and n):
            if batch:
                self.fill(info, 0)
            return a
        if n <= SMALL:
            self._groups(dev, f"la_syevj_small_{dt}", batch,
                         [batch, n, self.handle(a), self.handle(w), self.handle(info),
                          int(bool(vectors))], self._small_group(n))
            return a
        g = self._jacobi_groups(batch)
        ws = self.empty((g, 2 * n * n), a.dtype, dev)
        self._groups(dev, f"la_syevj_{dt}", batch,
                     [batch, n, self.handle(a), self.handle(w), self.handle(info),
                      self.handle(ws), int(bool(vectors))])
        return a

    def linalg_svd(self, a, s, u, vh, info, vectors, *, op="linalg.svd"):
        """A (..., m, n) = U diag(S) Vh with k = min(m, n): s (..., k) descending, and
        when vectors u (..., m, k) and vh (..., k, n) (else None); a is not written;
        info (...) int32 (1: no convergence, -1: a non-finite entry). One-sided Jacobi,
        a work-group per matrix: both dims <= SMALL in local memory (la_gesvj_small),
        larger in a device workspace of L k + k^2 + k per work-group (L = max(m, n),
        la_gesvj). No host transfer."""
        self._check_dtype(a.dtype, a.device, op)
        m, n = a.shape[-2:]
        batch = _batch(a)
        dev, dt = a.device, a.dtype.name
        if not (batch and min(m, n)):
            if batch:
                self.fill(info, 0)
            return a
        h = self.handle
        outs = [h(a), h(s), h(u) if vectors else h(s), h(vh) if vectors else h(s), h(info)]
        if max(m, n) <= SMALL:
            self._groups(dev, f"la_gesvj_small_{dt}", batch,
                         [batch, m, n] + outs + [int(bool(vectors))],
                         self._small_group(max(m, n)))
            return a
        L, k = max(m, n), min(m, n)
        g = self._jacobi_groups(batch)
        ws = self.empty((g, L * k + k * k + k), a.dtype, dev)
        self._groups(dev, f"la_gesvj_{dt}", batch,
                     [batch, m, n] + outs + [h(ws), int(bool(vectors))])
        return a

    def linalg_geev(self, a, wr, wi, v, info, vectors):
        """Eigenvalues wr + i wi (..., n) of real a (..., n, n) (a is overwritten) and,
        when vectors, v (..., n, n) the right eigenvectors in LAPACK's real form, unit
        2-norm; info (...) int32 (1: no convergence), as the CPU's. Complex a: wr and
        wi are the same complex tensor w, v complex (the CPU's complex signature). The
        hybrid design (MAGMA's geev): Hessenberg reduction A = Q H Q^H on the device
        (la_gehd2); H to the host, where the CPU's kernel runs the Francis double-shift
        QR (complex: single-shift) and the eigenvectors Y of H; the eigenvalues, info
        and Y back; the eigenvectors Q Y on the device (la_orghr_apply). Host transfers
        per call, whatever the batch: 1 down (H, n^2 per matrix), 3 up for real a (wr
        and wi: n each; info: 1), 2 for complex (w, info), and with vectors one more
        (Y: n^2)."""
        from ember._C import linalg as cpu_linalg
        self._check_dtype(a.dtype, a.device, "eig")
        n = a.shape[-1]
        batch = _batch(a)
        if not (batch and n):
            return wr
        dev, dt = a.device, a.dtype.name
        refl = self.empty((batch, n, n), a.dtype, dev)
        tau = self.empty((batch, n), a.dtype, dev)
        self._groups(dev, f"la_gehd2_{dt}", batch,
                     [batch, n, self.handle(a), self.handle(refl), self.handle(tau)])
        h = self.to_cpu(a)
        # complex: wr is wi (w), uploaded once
        outs = (wr, info) if wr is wi else (wr, wi, info)
        hw = [_core.empty(tuple(t.shape), t.dtype) for t in outs]
        hv = _core.empty(tuple(v.shape), v.dtype) if vectors else None
        cpu_linalg.linalg_geev(h, hw[0], hw[-2], hv, hw[-1], bool(vectors))
        for dst, src in zip(outs + ((v,) if vectors else ()), hw + ([hv] if vectors else [])):
            self._upload(dst, src)
        if vectors:
            self.run(dev, f"la_orghr_apply_{dt}", batch * n,
                     [batch, n, n, self.handle(refl), self.handle(tau), self.handle(v)])
        return wr

    def _upload(self, dst, host):
        """The contiguous host tensor's bytes into the contiguous device tensor dst (a
        host transfer)."""
        from ember.backends.gpu import _host_bytes
        if host.nbytes:
            self.host_transfers += 1
            self.write(self.handle(dst), dst.storage_offset() * dst.itemsize, _host_bytes(host))
