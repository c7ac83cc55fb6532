"""Parametrizations (torch.nn.utils.parametrizations) built on nn.utils.parametrize:
weight_norm, spectral_norm, orthogonal."""
from __future__ import annotations

import ember as em
from ember.nn import functional as F
from ember.nn._checks import checked, instance, optional, positive, real
from ember.nn.modules.module import Module
from ember.nn.utils import _linalg, parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_module = instance(Module, "a Module")
_name = instance(str, "a str")


def _int_dim(op, name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{op}: {name} must be an int or None, got {type(v).__name__} "
                        f"{v!r:.60}")
    return v


def _norm_except_dim(v, dim):
    """The 2-norm of v over every dim but `dim` (kept, the others of size 1); over all
    of v for dim = -1 (PyTorch's norm_except_dim)."""
    if dim == -1:
        return em.linalg.vector_norm(v)
    dims = tuple(d for d in range(v.ndim) if d != dim)
    return em.linalg.vector_norm(v, 2, dims, keepdim=True) if dims else v.abs()


def _weight_norm(v, g, dim):
    """v * g / ||v|| (norm over every dim but dim): composed ops, differentiable."""
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def _module_tensor(module, name, op):
    weight = getattr(module, name, None)
    if not isinstance(weight, em.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    return weight


@checked(module=_module, name=_name, dim=optional(_int_dim))
def weight_norm(module, name="weight", dim=0):
    """Weight normalization (Salimans and Kingma): module.<name> = g * v / ||v||, with
    the magnitude g = original0 (norm over every dim but `dim`; dim=None: one norm of
    the whole tensor) and the direction v = original1 as the parameters."""
    weight = _module_tensor(module, name, "weight_norm")
    if dim is not None and not -weight.ndim <= dim < max(weight.ndim, 1):
        raise IndexError(f"weight_norm: dim {dim} is out of range for a {weight.ndim}-d "
                         f"tensor")
    if dim is not None and dim < 0:
        dim += weight.ndim
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with em.no_grad():
                u = em.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1)
                v = em.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with em.no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                F.normalize(em.mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
                F.normalize(em.mv(weight_mat.mT, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = em.vdot(u, em.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def _transposed_conv(module):
    from ember import nn
    kinds = tuple(getattr(nn, n) for n in ("ConvTranspose1d", "ConvTranspose2d",
                                           "ConvTranspose3d") if hasattr(nn, n))
    return isinstance(module, kinds)


@checked(module=_module, name=_name, n_power_iterations=positive, eps=real(),
         dim=optional(_int_dim))
def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization (Miyato et al.): module.<name> = W / sigma(W), sigma the
    largest singular value of W reshaped to a matrix around `dim` (default 0, 1 for
    transposed convolutions), estimated by n_power_iterations power-method steps at
    each access in training mode (vectors kept in the buffers _u and _v; 15 steps at
    registration)."""
    weight = _module_tensor(module, name, "spectral_norm")
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q):
    n, k = q.shape[-2], q.shape[-1]
    eye = em.eye(k, dtype=q.dtype, device=q.device)
    eps = 10.0 * n * em.finfo(q.dtype).eps
    return em.allclose(em.matmul(q.mT, q), eye.expand(q.shape[:-2] + (k, k)), atol=eps)


class _Orthogonal(Module):
    base: em.Tensor

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        # x is tall: n >= k
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = em.cat([x, em.zeros(*x.shape[:-2], n, n - k, dtype=x.dtype,
                                        device=x.device)], -1)
            a = x - x.mT
            if self.orthogonal_map == "matrix_exp":
                q = _linalg.matrix_exp(a)
            else:
                eye = em.eye(n, dtype=a.dtype, device=a.device)
                q = _linalg.solve_spd_part(eye - 0.5 * a, eye + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = _linalg.householder_product(a, tau)
            # the diagonal's integer part (-1, 0 or 1 after right_inverse) flips columns
            q = q * x.diagonal(0, -2, -1).detach().to(em.int64).to(x.dtype).unsqueeze(-2)
        if "base" in self._buffers:        # use_trivialization: set by right_inverse
            q = em.matmul(self.base, q)
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q):
        if q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {q.shape}.")
        with em.no_grad():
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations "
                                              "when use_trivialization=False.")
                a, tau = _linalg.geqrf(q)
                d = a.diagonal(0, -2, -1)
                sign = d.sign()
                sign = em.where(tau == 0.0, -sign, sign)
                a = a.clone()
                a.diagonal(0, -2, -1).copy_(sign)
                return a.mT if transpose else a
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _linalg.make_orthogonal(q)
            else:
                noise = em.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
                q = _linalg.make_orthogonal(em.cat([q, noise], -1))
            self._buffers["base"] = q
            neg_id = em.zeros_like(q_init)
            neg_id.diagonal(0, -2, -1).fill_(-1.0)
            return neg_id


@checked(module=_module, name=_name)
def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Make module.<name> orthogonal (semi-orthogonal when not square; each matrix of
    a batch), through orthogonal_map: "matrix_exp" (exp of a skew-symmetric matrix,
    the default for square matrices), "cayley" ((I - A/2)^-1 (I + A/2)) or
    "householder" (a product of reflectors, the default otherwise). With
    use_trivialization (the default) the map is applied around a base orthogonal
    matrix kept in the buffer `base`, which assigning a value resets.

    ember.linalg has no matrix_exp, solve or householder_product yet: they are
    composed from ember ops here (differentiable, every device); the QR factorisations
    of right_inverse (no gradient) run in NumPy on the host."""
    weight = _module_tensor(module, name, "orthogonal")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] \
            else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
