"""Gradients of the reductions, scans and sorts (the reduce section of
derivatives.yaml and the composites built on them) against PyTorch, with
gradcheck in float64."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, make_inputs, to_np, torch

pytestmark = pytest.mark.on_devices


def _distinct(shape, seed):
    """Values without ties (finite differences of min/max/sort need a unique order)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(np.float64) / n + rng.standard_normal(n) * 1e-3).reshape(shape)


@pytest.mark.parametrize(
    "fb_fn, th_fn",
    [
        (lambda x: x.min(), lambda x: x.min()),
        (lambda x: x.min(1).values, lambda x: x.min(1).values),
        (lambda x: x.min(0, keepdim=True)[0], lambda x: x.min(0, keepdim=True)[0]),
        (lambda x: fc.amax(x, (0, 2)), lambda x: torch.amax(x, (0, 2))),
        (lambda x: fc.amin(x, -1, keepdim=True), lambda x: torch.amin(x, -1, keepdim=True)),
        (lambda x: fc.aminmax(x, dim=1)[1], lambda x: torch.aminmax(x, dim=1)[1]),
        (lambda x: x.sort(1).values, lambda x: x.sort(1).values),
        (lambda x: x.sort(0, descending=True)[0], lambda x: x.sort(0, descending=True)[0]),
        (lambda x: fc.msort(x), lambda x: torch.msort(x)),
        (lambda x: x.topk(2, dim=1).values, lambda x: x.topk(2, dim=1).values),
        (lambda x: x.topk(3, dim=-1, largest=False)[0], lambda x: x.topk(3, dim=-1, largest=False)[0]),
        (lambda x: fc.kthvalue(x, 2, 1)[0], lambda x: torch.kthvalue(x, 2, 1)[0]),
        (lambda x: x.median(), lambda x: x.median()),
        (lambda x: x.median(1).values, lambda x: x.median(1).values),
        (lambda x: fc.nanmedian(x, 2)[0], lambda x: torch.nanmedian(x, 2)[0]),
        (lambda x: x.cummax(1).values, lambda x: x.cummax(1).values),
        (lambda x: x.cummin(2)[0], lambda x: x.cummin(2)[0]),
        (lambda x: fc.quantile(x, 0.3, dim=1), lambda x: torch.quantile(x, 0.3, dim=1)),
        (
            lambda x: fc.quantile(x, fb_tensor([0.2, 0.9]), dim=2, keepdim=True),
            lambda x: torch.quantile(x, torch.tensor([0.2, 0.9], dtype=torch.float64), dim=2, keepdim=True),
        ),
    ],
)
def test_selecting_reductions(fb_fn, th_fn):
    compare_with_torch(fb_fn, th_fn, [_distinct((3, 4, 5), 1)])


@pytest.mark.parametrize(
    "fb_fn, th_fn",
    [
        (lambda x: x.prod(), lambda x: x.prod()),
        (lambda x: x.prod(1), lambda x: x.prod(1)),
        (lambda x: x.prod(-1, keepdim=True), lambda x: x.prod(-1, keepdim=True)),
        (lambda x: x.var(), lambda x: x.var()),
        (lambda x: x.var(1, unbiased=False), lambda x: x.var(1, unbiased=False)),
        (lambda x: x.var((0, 2), correction=2, keepdim=True), lambda x: x.var((0, 2), correction=2, keepdim=True)),
        (lambda x: x.std(), lambda x: x.std()),
        (lambda x: x.std(dim=2, correction=0), lambda x: x.std(dim=2, correction=0)),
        (lambda x: fc.var_mean(x, 1)[0] + fc.var_mean(x, 1)[1], lambda x: sum(torch.var_mean(x, 1))),
        (lambda x: fc.std_mean(x, (1, 2))[0], lambda x: torch.std_mean(x, (1, 2))[0]),
        (lambda x: x.norm(), lambda x: x.norm()),
        (lambda x: x.norm(3, dim=1), lambda x: x.norm(3, dim=1)),
        (lambda x: x.norm(1, dim=(0, 1), keepdim=True), lambda x: x.norm(1, dim=(0, 1), keepdim=True)),
        (lambda x: fc.norm(x, float("inf"), dim=2), lambda x: torch.norm(x, float("inf"), dim=2)),
        (lambda x: fc.norm(x, "fro", dim=(1, 2)), lambda x: torch.norm(x, "fro", dim=(1, 2))),
        (lambda x: fc.norm(x, "nuc", dim=(0, 2)), lambda x: torch.norm(x, "nuc", dim=(0, 2))),
        (lambda x: fc.norm(x, 0, dim=1), lambda x: torch.norm(x, 0, dim=1)),  # a count: zero gradient
        (lambda x: x.logsumexp(1), lambda x: x.logsumexp(1)),
        (lambda x: fc.logsumexp(x, (0, 2), keepdim=True), lambda x: torch.logsumexp(x, (0, 2), keepdim=True)),
        (lambda x: x.cumsum(1), lambda x: x.cumsum(1)),
        (lambda x: x.cumsum(-1), lambda x: x.cumsum(-1)),
        (lambda x: x.cumprod(2), lambda x: x.cumprod(2)),
        (lambda x: x.logcumsumexp(0), lambda x: x.logcumsumexp(0)),
        (lambda x: fc.nansum(x, 1), lambda x: torch.nansum(x, 1)),
        (lambda x: fc.nanmean(x, (0, 1)), lambda x: torch.nanmean(x, (0, 1))),
    ],
)
def test_smooth_reductions(fb_fn, th_fn):
    compare_with_torch(fb_fn, th_fn, make_inputs([(3, 4, 5)], seed=2))


def test_prod_and_cumprod_with_zeros():
    x = make_inputs([(4, 5)], seed=3)[0]
    x[0, 1] = 0.0  # one zero in a row
    x[1, 0] = x[1, 3] = 0.0  # two zeros in a row
    x[2, 4] = 0.0  # a zero at the end
    for dim in (0, 1):
        compare_with_torch(lambda t, d=dim: t.prod(d), lambda t, d=dim: t.prod(d), [x])
        compare_with_torch(lambda t, d=dim: t.cumprod(d), lambda t, d=dim: t.cumprod(d), [x])


def test_amax_gradient_is_shared_among_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    compare_with_torch(lambda t: fc.amax(t, 1), lambda t: torch.amax(t, 1), [x], gradcheck=False)
    compare_with_torch(lambda t: t.min(), lambda t: t.min(), [x], gradcheck=False)


def test_non_contiguous_inputs():
    x = make_inputs([(5, 4)], seed=4)[0]
    compare_with_torch(lambda t: t.t().cumsum(1), lambda t: t.t().cumsum(1), [x])
    compare_with_torch(lambda t: t.t().var(0), lambda t: t.t().var(0), [x])
    compare_with_torch(lambda t: t.t().sort(1).values, lambda t: t.t().sort(1).values, [_distinct((5, 4), 5)])
    compare_with_torch(lambda t: t.t().prod(1), lambda t: t.t().prod(1), [x])


def test_second_order():
    x = make_inputs([(3, 4)], seed=6)[0]
    for fn in (lambda t: t.cumsum(1), lambda t: t.var(1), lambda t: t.prod(1), lambda t: t.logsumexp(1)):
        a = fb_tensor(x, requires_grad=True)
        b = torch.tensor(x, requires_grad=True)
        (ga,) = fc_grad(fn(a).pow(2).sum(), a)
        (gb,) = torch.autograd.grad(fn(b).pow(2).sum(), b, create_graph=True)
        ga.sum().backward()
        gb.sum().backward()
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-6, atol=1e-9)


def fc_grad(out, inp):
    import flambeau_autograd as ag

    return ag.grad(out, inp, create_graph=True)


def test_integer_results_are_not_differentiable():
    x = fb_tensor(make_inputs([(3, 4)])[0], requires_grad=True)
    for r in (x.argsort(1), x.sort(1).indices, x.min(1).indices, fc.nonzero(x), fc.searchsorted(x.sort(1)[0], x)):
        assert not r.requires_grad
