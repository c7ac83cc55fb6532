"""PyTorch's autocast op lists (torch.amp, "Autocast Op Reference"), as ember names.

Each entry is (CPU policy, CUDA policy); the CUDA column also serves OpenCL. A policy:
  "lower"   floating inputs (float32, float16, bfloat16; never float64) are cast to the
            region's dtype,
  "fp32"    float16/bfloat16 inputs are cast to float32 (an explicit dtype= wins),
  "promote" floating inputs are cast to the widest of them and the region's dtype,
  "banned"  the op raises inside an enabled region (binary_cross_entropy on CUDA),
  None      the op runs in its inputs' dtypes on that device type.
Ops on neither list run in their inputs' dtypes; an unlisted op written with listed
ones (einsum with matmul, ...) sees their casts, as PyTorch's composite ops do.
"""
from __future__ import annotations

import sys

from ember.amp import autocast_mode as _mode

L, F32, P = "lower", "fp32", "promote"
BOTH_L, BOTH_F32, BOTH_P = (L, L), (F32, F32), (P, P)
CPU_F32, CUDA_F32, CUDA_L = (F32, None), (None, F32), (None, L)

# the op-table rows (ember._C.core's `ew` hands them over when the flag is on)
ELEMENTWISE = {
    **dict.fromkeys(("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10",
                     "log1p", "log2", "pow", "reciprocal", "rsqrt", "sinh", "tan"),
                    CUDA_F32),
    "atan2": (None, P),
}

# ember.<name> (tensor-core entries; their Tensor methods follow)
EMBER = {
    **dict.fromkeys(("matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "conv1d", "conv2d",
                     "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                     "convolution", "prelu"), BOTH_L),
    "vecdot": (L, None),
    **dict.fromkeys(("mv", "addmv", "addr", "chain_matmul"), CUDA_L),
    **dict.fromkeys(("prod", "cdist"), BOTH_F32),
    **dict.fromkeys(("sum", "cumsum", "cumprod", "norm", "dist", "renorm", "softmax",
                     "log_softmax", "layer_norm", "group_norm", "cosine_similarity",
                     "pdist"), CUDA_F32),
    **dict.fromkeys(("trace", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d",
                     "adaptive_max_pool3d", "polar", "quantile", "nanquantile", "stft",
                     "view_as_complex", "inverse", "cholesky", "cholesky_inverse",
                     "cholesky_solve", "lu_solve", "pinverse", "orgqr", "ormqr", "geqrf",
                     "qr", "svd", "triangular_solve"), CPU_F32),
    **dict.fromkeys(("nll_loss", "cross_entropy", "kl_div", "hinge_embedding_loss",
                     "cosine_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
                     "triplet_margin_loss", "binary_cross_entropy_with_logits"), BOTH_F32),
    **dict.fromkeys(("cat", "concat", "concatenate", "stack", "index_copy"), BOTH_P),
    **dict.fromkeys(("addcdiv", "addcmul", "bilinear", "cross", "dot", "index_put",
                     "scatter_add", "tensordot"), (None, P)),
}

LINALG = {
    **dict.fromkeys(("cond", "matrix_rank", "solve", "cholesky", "svdvals", "eigvals",
                     "eigvalsh", "inv", "householder_product", "tensorinv", "tensorsolve",
                     "qr", "cholesky_ex", "svd", "eig", "eigh", "lstsq", "inv_ex", "lu_factor",
                     "lu_factor_ex", "lu_solve", "solve_ex"), CPU_F32),
    "vecdot": (L, None),
    "multi_dot": CUDA_L,
    **dict.fromkeys(("norm", "vector_norm", "matrix_norm"), CUDA_F32),
}

FFT = dict.fromkeys(("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft",
                     "rfft2", "irfft2", "rfftn", "irfftn", "hfft", "ihfft"), CPU_F32)

# ember.nn.functional.<name> (ember-nn installs these when it is imported)
NN_FUNCTIONAL = {
    **dict.fromkeys(("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                     "conv_transpose2d", "conv_transpose3d", "prelu",
                     "scaled_dot_product_attention"), BOTH_L),
    **dict.fromkeys(("mse_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss",
                     "poisson_nll_loss", "smooth_l1_loss", "cross_entropy", "l1_loss",
                     "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
                     "multi_margin_loss", "kl_div", "multilabel_margin_loss",
                     "binary_cross_entropy_with_logits"), BOTH_F32),
    **dict.fromkeys(("huber_loss", "ctc_loss", "avg_pool3d", "max_pool3d",
                     "adaptive_avg_pool3d", "adaptive_max_pool3d", "max_unpool2d",
                     "max_unpool3d"), CPU_F32),
    "binary_cross_entropy": (F32, "banned"),
    "grid_sample": (F32, P),
    "bilinear": (None, P),
    **dict.fromkeys(("softmax", "log_softmax", "softmin", "layer_norm", "group_norm",
                     "normalize", "softplus", "cosine_similarity", "pdist"), CUDA_F32),
}


def wrap_namespace(ns, table, module_name=None):
    """Replace each table entry of namespace `ns` (a module's globals) with its autocast
    entry; returns {original function: entry} (names the namespace lacks are skipped)."""
    done = {}
    for name, policy in table.items():
        fn = ns.get(name)
        if fn is None or not callable(fn):
            continue
        entry = done.get(fn)
        if entry is None:
            entry = done[fn] = _mode.wrap(fn, policy)
        ns[name] = entry
        home = sys.modules.get(getattr(fn, "__module__", None) or "")
        if home is not None and getattr(home, name, None) is fn:
            setattr(home, name, entry)
    return done


def install(ember_ns):
    """Wrap ember's listed entries (ember/__init__ calls this before it installs the
    Tensor methods, so x.sum(), x @ w, ... are entries too) and hand the core the rows."""
    import ember.fft as fft
    import ember.linalg as linalg
    from ember._C import core
    from ember._registry import METHODS

    done = wrap_namespace(ember_ns, EMBER)
    for k, fn in list(METHODS.items()):
        entry = done.get(fn)
        if entry is None and k in EMBER and callable(fn) and not isinstance(fn, core.AutocastOp):
            entry = done[fn] = _mode.wrap(fn, EMBER[k])
        if entry is not None:
            METHODS[k] = entry
            if ember_ns["Tensor"].__dict__.get(k) is fn:
                setattr(ember_ns["Tensor"], k, entry)
    for mod in (linalg, fft):         # their aliases of ember's entries (linalg.matmul)
        ns = vars(mod)
        for name, fn in list(ns.items()):
            if callable(fn) and not isinstance(fn, type) and fn in done:
                ns[name] = done[fn]
    wrap_namespace(vars(linalg), LINALG)
    wrap_namespace(vars(fft), FFT)
    rows = {name: pol for name, pol in ELEMENTWISE.items() if name in core.OP_INDEX}
    _mode._EW_POLICY.clear()
    _mode._EW_POLICY.update({core.OP_INDEX[n]: p for n, p in rows.items()})
    core._autocast_install(_mode._call, _mode._ew, list(rows))
