"""gradcheck of issue 18's composed ops (addcmul ... vander): each is written with
differentiable ember ops, so its gradient comes from their rows in formulas.py;
these checks pin that the compositions differentiate correctly."""
import math

import numpy as np
import pytest

import ember as em
from ember.autograd import gradcheck


def leaf(*shape, seed=0, lo=-2.0, hi=2.0):
    rng = np.random.default_rng(seed)
    return em.from_numpy(rng.uniform(lo, hi, size=shape)).requires_grad_()


def pos(*shape, seed=0):
    return leaf(*shape, seed=seed, lo=0.5, hi=2.0)


CASES = {
    "addcmul": (lambda a, b, c: em.addcmul(a, b, c, value=0.5),
             lambda: (leaf(2, 3), leaf(2, 3, seed=1), leaf(3, seed=2))),
    "addcdiv": (lambda a, b, c: a.addcdiv(b, c, value=-2),
             lambda: (leaf(2, 3), leaf(2, 3, seed=1), pos(2, 3, seed=2))),
    "baddbmm": (lambda x, a, b: em.baddbmm(x, a, b, beta=0.5, alpha=2),
             lambda: (leaf(2, 2, 4), leaf(2, 2, 3, seed=1), leaf(2, 3, 4, seed=2))),
    "addbmm": (lambda x, a, b: em.addbmm(x, a, b),
             lambda: (leaf(2, 4), leaf(3, 2, 3, seed=1), leaf(3, 3, 4, seed=2))),
    "addmv": (lambda x, a, v: em.addmv(x, a, v, beta=2),
             lambda: (leaf(3), leaf(3, 2, seed=1), leaf(2, seed=2))),
    "addr": (lambda x, a, b: em.addr(x, a, b, alpha=3),
             lambda: (leaf(3, 2), leaf(3, seed=1), leaf(2, seed=2))),
    "kron": (lambda a, b: em.kron(a, b), lambda: (leaf(2, 3), leaf(2, 2, seed=1))),
    "cross": (lambda a, b: em.linalg.cross(a, b), lambda: (leaf(2, 3), leaf(2, 3, seed=1))),
    "cdist_p2": (lambda a, b: em.cdist(a, b), lambda: (leaf(3, 2), leaf(4, 2, seed=1))),
    "cdist_p2_mm": (lambda a, b: em.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
             lambda: (leaf(3, 2), leaf(4, 2, seed=1))),
    "cdist_p1": (lambda a, b: em.cdist(a, b, p=1), lambda: (leaf(3, 2), leaf(4, 2, seed=1))),
    "diag_vec": (lambda v: em.diag(v, 1), lambda: (leaf(3),)),
    "diag_mat": (lambda m: em.diag(m, -1), lambda: (leaf(3, 3),)),
    "diag_embed": (lambda v: em.diag_embed(v, 1, 0, 2), lambda: (leaf(2, 3),)),
    "diagflat": (lambda v: em.diagflat(v), lambda: (leaf(2, 2),)),
    "block_diag": (lambda a, b: em.block_diag(a, b), lambda: (leaf(2, 2), leaf(3, seed=1))),
    "cartesian_prod": (lambda a, b: em.cartesian_prod(a, b), lambda: (leaf(2), leaf(3, seed=1))),
    "combinations": (lambda a: em.combinations(a, 2), lambda: (leaf(4),)),
    "vander": (lambda x: em.vander(x, 4), lambda: (leaf(3),)),
    "cummax": (lambda x: em.cummax(x, 1).values, lambda: (leaf(2, 5),)),
    "cummin": (lambda x: em.cummin(x, 0).values, lambda: (leaf(4, 2),)),
    "logcumsumexp": (lambda x: em.logcumsumexp(x, 1), lambda: (leaf(2, 5),)),
    "quantile_linear": (lambda x: em.quantile(x, em.tensor([0.3, 0.8], dtype=em.float64), dim=1),
             lambda: (leaf(2, 5),)),
    "nanquantile_midpoint": (lambda x: em.nanquantile(x, 0.5, interpolation="midpoint"),
             lambda: (leaf(6),)),
    "mode": (lambda x: em.mode(x, 1).values, lambda: (leaf(2, 4),)),
    "renorm": (lambda x: em.renorm(x, 2, 0, 1.0), lambda: (leaf(3, 2),)),
    "sum_to_size": (lambda x: x.sum_to_size(2, 1), lambda: (leaf(3, 2, 4),)),
    "trace": (lambda x: em.trace(x), lambda: (leaf(3, 4),)),
    "trapezoid": (lambda y, x: em.trapezoid(y, x), lambda: (leaf(2, 4), leaf(4, seed=1))),
    "cumulative_trapezoid": (lambda y: em.cumulative_trapezoid(y, dx=0.5, dim=0),
             lambda: (leaf(4, 2),)),
    "frac": (lambda x: em.frac(x * 3), lambda: (leaf(5),)),
    "xlogy": (lambda x, y: em.xlogy(x, y), lambda: (leaf(4), pos(4, seed=1))),
    "logaddexp2": (lambda x, y: em.logaddexp2(x, y), lambda: (leaf(4), leaf(4, seed=1))),
    "sinc": (lambda x: em.sinc(x), lambda: (leaf(5),)),
    "logit": (lambda x: em.logit(x), lambda: (leaf(4, lo=0.1, hi=0.9),)),
    "deg2rad": (lambda x: em.deg2rad(x), lambda: (leaf(3),)),
    "ldexp": (lambda x: em.ldexp(x, em.tensor([1, -1, 2])), lambda: (leaf(3),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, make = CASES[name]
    assert gradcheck(fn, make())


def test_gradients_at_the_special_points_are_finite():
    x = em.tensor([0.0, 0.5], dtype=em.float64, requires_grad=True)
    em.sinc(x).sum().backward()
    assert x.grad.tolist()[0] == 0.0
    x = em.tensor([0.0, 1.0], dtype=em.float64, requires_grad=True)
    y = em.tensor([0.0, 2.0], dtype=em.float64, requires_grad=True)
    em.xlogy(x, y).sum().backward()
    assert x.grad.tolist() == [0.0, math.log(2.0)]
    v = em.tensor([0.0, 2.0], dtype=em.float64, requires_grad=True)
    em.vander(v, 3).sum().backward()
    assert all(math.isfinite(g) for g in v.grad.tolist())


def test_inplace_view_ops_are_recorded_on_non_leaves():
    w = em.ones(2, 3, dtype=em.float64, requires_grad=True)
    v = w * 2
    v.t_()
    v.unsqueeze_(0)
    assert v.shape == (1, 3, 2) and v.grad_fn is not None
    (v * em.arange(6.0, dtype=em.float64).reshape(1, 3, 2)).sum().backward()
    assert w.grad.tolist() == [[0.0, 4.0, 8.0], [2.0, 6.0, 10.0]]
    w.grad = None
    a = w * 1
    a.addcmul_(w, w)
    a.sum().backward()
    assert w.grad.tolist() == [[3.0] * 3] * 2


BATCH2 = {
    "erfinv": (lambda x: em.erfinv(x), lambda: (leaf(5, lo=-0.95, hi=0.95),)),
    "cov": (lambda x: em.cov(x), lambda: (leaf(3, 5),)),
    "cov_weighted": (lambda x, a: em.cov(x, fweights=em.tensor([1, 2, 1, 3]), aweights=a),
                     lambda: (leaf(2, 4), pos(4, seed=1))),
    "corrcoef": (lambda x: em.corrcoef(x), lambda: (leaf(3, 5),)),
    "dist": (lambda a, b: em.dist(a, b, 3), lambda: (leaf(2, 3), leaf(2, 3, seed=1))),
    "slice_scatter": (lambda a, b: em.slice_scatter(a, b, 0, 1, 4, 2),
                      lambda: (leaf(4, 2), leaf(2, 2, seed=1))),
    "select_scatter": (lambda a, b: em.select_scatter(a, b, 1, 0),
                       lambda: (leaf(3, 2), leaf(3, seed=1))),
    "diagonal_scatter": (lambda a, b: em.diagonal_scatter(a, b, -1),
                         lambda: (leaf(3, 3), leaf(2, seed=1))),
    "rsub": (lambda a, b: em.rsub(a, b, alpha=2), lambda: (leaf(3), leaf(3, seed=1))),
}


@pytest.mark.parametrize("name", sorted(BATCH2))
def test_gradcheck_batch2(name):
    fn, make = BATCH2[name]
    assert gradcheck(fn, make())


def test_samplers_cut_the_graph():
    w = em.ones(3, dtype=em.float64, requires_grad=True)
    v = w * 2
    v.log_normal_()
    (v * w).sum().backward()
    assert w.grad.tolist() == v.detach().tolist()   # through the product only
