"""The top-level `ember.<name>` forms of nn functions PyTorch has at `torch.<name>`
(torch.celu, torch.bilinear, torch.kl_div, ...), with the ATen signatures PyTorch gives
them there: the train flag of the dropouts is positional, losses take `reduction` as
PyTorch's int enum (0 'none', 1 'mean', 2 'sum'), and the norms take the arguments in
ATen's order. Each is the ember.nn.functional function under it, so behaviour, errors
and gradients are those. ember (tensor-core) finds these names here on first use
(ember._components.NN_FUNCTIONS), so they exist whenever ember-nn is installed."""
from __future__ import annotations

import warnings

import ember as em
from ember.nn import functional as F

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(value, op):
    if isinstance(value, str) and value in ("none", "mean", "sum"):
        return value
    try:
        return _REDUCTIONS[value]
    except (KeyError, TypeError):
        raise ValueError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                         f"{value!r}") from None


def _train(train, op):
    if not isinstance(train, bool):
        raise TypeError(f"{op}: train must be a bool, got {type(train).__name__}")
    return train


# dropouts (input, p, train) ---------------------------------------------------------------

def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, _train(train, "alpha_dropout"))


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, _train(train, "alpha_dropout_"), inplace=True)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, _train(train, "feature_alpha_dropout"))


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, _train(train, "feature_alpha_dropout_"),
                                   inplace=True)


def _feature_dropout(input, p, train, inplace, op):
    _train(train, op)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim < 2:
        raise ValueError(f"{op}: expected an input of at least 2 dims (N, C, *), got shape "
                         f"{tuple(input.shape)}")
    return F._feature_dropout(input, p, train, inplace)


def feature_dropout(input, p, train):
    """Zero whole channels (one draw per (N, C)), scaling the rest by 1/(1-p)."""
    return _feature_dropout(input, p, train, False, "feature_dropout")


def feature_dropout_(input, p, train):
    return _feature_dropout(input, p, train, True, "feature_dropout_")


# activations ------------------------------------------------------------------------------

def celu(input, alpha=1.0):
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):
    return F.celu(input, alpha, inplace=True)


def selu(input):
    return F.selu(input)


def selu_(input):
    return F.selu(input, inplace=True)


def threshold(input, threshold, value):
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return F.threshold(input, threshold, value, inplace=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if generator is not None:
        raise TypeError("rrelu: generator= is not supported by ember's rrelu (it draws "
                        "from the default generator)")
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if generator is not None:
        raise TypeError("rrelu_: generator= is not supported by ember's rrelu")
    return F.rrelu(input, lower, upper, training, inplace=True)


# layers -----------------------------------------------------------------------------------

def bilinear(input1, input2, weight, bias=None):
    return F.bilinear(input1, input2, weight, bias)


def constant_pad_nd(input, pad, value=0):
    """Pad the last len(pad) // 2 dims with value (F.pad in 'constant' mode); negative
    pads crop."""
    if not isinstance(pad, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in pad):
        raise TypeError(f"constant_pad_nd: pad must be a list of ints, got {pad!r:.60}")
    if not isinstance(input, em.Tensor):
        raise TypeError(f"constant_pad_nd: input must be a tensor, got "
                        f"{type(input).__name__}")
    return F.pad(input, list(pad), "constant", value)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """ATen's native_group_norm: (output, mean, rstd) for an input of N * C * HxW
    elements (N, C, *); mean and rstd = 1 / sqrt(biased var + eps) of shape (N, group).
    The output is F.group_norm's."""
    op = "native_group_norm"
    if not isinstance(input, em.Tensor):
        raise TypeError(f"{op}: input must be a tensor, got {type(input).__name__}")
    for name, v in (("N", N), ("C", C), ("HxW", HxW), ("group", group)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__}")
    if input.numel() != N * C * HxW or input.ndim < 2 or input.shape[0] != N or \
            input.shape[1] != C:
        raise ValueError(f"{op}: input of shape {tuple(input.shape)} does not match N={N}, "
                         f"C={C}, HxW={HxW}")
    out = F.group_norm(input, group, weight, bias, eps)
    x = input.reshape(N, group, -1)
    x = x.float() if x.dtype == em.float16 else x
    return out, x.mean(-1), (x.var(-1, correction=0) + eps).rsqrt()


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return F.rms_norm(input, normalized_shape, weight, eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2):
    return F.pdist(input, p)


def affine_grid_generator(theta, size, align_corners):
    """ATen's affine_grid_generator: F.affine_grid(theta, size, align_corners)."""
    return F.affine_grid(theta, size, align_corners)


def pixel_shuffle(input, upscale_factor):
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return F.pixel_unshuffle(input, downscale_factor)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """ATen's embedding_bag: (output, offset2bag, bag_size, max_indices), mode 0 sum, 1
    mean, 2 max; output is F.embedding_bag's. The other three are PyTorch's backward
    bookkeeping; ember gives them as: offset2bag the bag of each index (PyTorch's CPU
    sum path leaves it empty), bag_size the non-padding entries per bag (zeros in sum
    mode, as PyTorch), max_indices the row chosen per bag and feature in max mode,
    bag_size in mean mode and zeros in sum mode."""
    op = "embedding_bag"
    if not isinstance(mode, (int, str)) or mode not in _BAG_MODES:   # (a list is unhashable)
        raise ValueError(f"{op}: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    m = _BAG_MODES[mode]
    for name, t in (("weight", weight), ("indices", indices)):
        if not isinstance(t, em.Tensor):
            raise TypeError(f"{op}: {name} must be a tensor, got {type(t).__name__}")
    if offsets is not None and not isinstance(offsets, em.Tensor):
        raise TypeError(f"{op}: offsets must be a tensor or None, got {type(offsets).__name__}")
    out = F.embedding_bag(indices, weight, offsets if indices.ndim == 1 else None, None, 2,
                          scale_grad_by_freq, m, sparse, per_sample_weights,
                          include_last_offset, padding_idx)
    dev = indices.device
    with em.no_grad():
        if indices.ndim == 2:
            bags, length = indices.shape
            flat = indices.reshape(-1)
            bag_ids = em.arange(bags, device=dev).repeat_interleave(length)
        else:
            offs = offsets.to(em.int64).to(dev)
            starts = offs[:-1] if include_last_offset else offs
            end = int(offs[-1].item()) if include_last_offset else indices.shape[0]
            bounds = em.cat([starts, em.tensor([end], dtype=em.int64, device=dev)])
            lengths = bounds[1:] - bounds[:-1]
            bags = starts.shape[0]
            flat = indices[:end].to(em.int64)
            bag_ids = em.arange(bags, device=dev).repeat_interleave(lengths)
        keep = em.ones(flat.shape[0], dtype=em.int64, device=dev)
        if padding_idx is not None:
            keep = (flat != padding_idx % weight.shape[0]).to(em.int64)
        count = em.zeros(bags, dtype=em.int64, device=dev).index_add(0, bag_ids, keep)
        if m == "sum":
            bag_size = em.zeros(bags, dtype=em.int64, device=dev)
            max_indices = bag_size.clone()
        elif m == "mean":
            bag_size, max_indices = count, count.clone()
        else:
            bag_size = count
            dim = weight.shape[1]
            max_indices = em.zeros(bags, dim, dtype=em.int64, device=dev)
            if flat.shape[0] and bags:
                rows = weight.detach()[flat]                           # (n, dim)
                member = bag_ids.unsqueeze(0) == em.arange(bags, device=dev).unsqueeze(1)
                member = member & (keep != 0).unsqueeze(0)
                scores = em.where(member.unsqueeze(-1), rows.unsqueeze(0), float("-inf"))
                pos = scores.argmax(1)                                 # (bags, dim)
                chosen = flat[pos.reshape(-1)].reshape(bags, dim)
                max_indices = em.where((count > 0).unsqueeze(-1), chosen, 0)
    return out, bag_ids, bag_size, max_indices


# losses (reduction as PyTorch's int enum) --------------------------------------------------

def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction(reduction, "binary_cross_entropy_with_logits"),
        pos_weight=pos_weight)


def kl_div(input, target, reduction=1, *, log_target=False):
    """ATen's kl_div: 'mean' (1) divides by the element count, without F.kl_div's
    warning (as torch.kl_div)."""
    r = _reduction(reduction, "kl_div")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return F.kl_div(input, target, reduction=r, log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction, "cosine_embedding_loss"))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction, "margin_ranking_loss"))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction(reduction, "hinge_embedding_loss"))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction, "poisson_nll_loss"))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss"))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction, "ctc_loss"), zero_infinity)


__all__ = ["alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
           "feature_dropout", "feature_dropout_", "celu", "celu_", "selu", "selu_",
           "threshold", "threshold_", "rrelu", "rrelu_", "bilinear", "constant_pad_nd",
           "group_norm", "native_group_norm", "instance_norm", "rms_norm", "cosine_similarity",
           "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "embedding_bag",
           "affine_grid_generator", "binary_cross_entropy_with_logits", "kl_div",
           "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "poisson_nll_loss", "triplet_margin_loss", "ctc_loss"]
