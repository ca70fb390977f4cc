"""The nn losses on float16 / bfloat16 (Note [16-bit losses], src/cpu/loss/loss.cpp) against PyTorch 2.13:
the pointwise losses (mse, l1, smooth_l1, huber, binary_cross_entropy[_with_logits]) bit for bit,
forward (each reduction) and gradient, with their weights, pos_weight and a broadcast target; cross
entropy and nll_loss, computed in float32 and rounded once, within a few units of the last place of
PyTorch's 16-bit accumulation and within one of the float64 reference."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import assert_within_ulps, from_torch, torch_values

DTYPES = ["float16", "bfloat16"]


def values(dtype: str, shape, seed: int, scale: float = 1.0, low: float | None = None) -> torch.Tensor:
    return torch_values(dtype, shape, seed, scale=scale, low=low)


REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


@pytest.fixture(autouse=True)
def _autograd():
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")


def leaf(t: torch.Tensor) -> fc.Tensor:
    return from_torch(t).requires_grad_(True)


def grad_seed(loss: torch.Tensor, seed: int) -> torch.Tensor:
    return values(str(loss.dtype).removeprefix("torch."), tuple(loss.shape), seed)


def check_bits(torch_fn, fc_fn, inputs: list[torch.Tensor], reduction: str, seed: int = 7, ulps: int = 0) -> None:
    """Forward and the first input's gradient, bit for bit (or within `ulps`)."""
    tx = [inputs[0].clone().requires_grad_(True), *inputs[1:]]
    theirs = torch_fn(*tx, reduction=reduction)
    g = grad_seed(theirs, seed)
    theirs.backward(g)
    x = leaf(inputs[0])
    ours = fc_fn(x, *[from_torch(t) if t is not None else None for t in inputs[1:]], REDUCTIONS[reduction])
    assert_within_ulps(ours.detach(), theirs.detach(), ulps)
    ours.backward(from_torch(g))
    assert_within_ulps(x.grad, tx[0].grad, ulps)


POINTWISE = {
    "mse_loss": (F.mse_loss, fc.mse_loss),
    "l1_loss": (F.l1_loss, fc.l1_loss),
    "smooth_l1_loss": (F.smooth_l1_loss, lambda x, t, r: fc.smooth_l1_loss(x, t, r, 1.0)),
    "smooth_l1_loss(beta=0.5)": (
        lambda x, t, reduction: F.smooth_l1_loss(x, t, reduction=reduction, beta=0.5),
        lambda x, t, r: fc.smooth_l1_loss(x, t, r, 0.5),
    ),
    "huber_loss": (F.huber_loss, lambda x, t, r: fc.huber_loss(x, t, r, 1.0)),
    "huber_loss(delta=1.5)": (
        lambda x, t, reduction: F.huber_loss(x, t, reduction=reduction, delta=1.5),
        lambda x, t, r: fc.huber_loss(x, t, r, 1.5),
    ),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise_losses_bits(name, reduction, dtype):
    # 3000 elements: a mean's 2 / count and 1 / count are not exact in either dtype.
    x, t = values(dtype, (30, 100), 0, 3.0), values(dtype, (30, 100), 1)
    # PyTorch's float16 smooth_l1_loss with beta != 1 rounds one more intermediate than the kernel
    # (one element of 3000 differs by a unit).
    ulps = 1 if name == "smooth_l1_loss(beta=0.5)" and dtype == "float16" else 0
    check_bits(*POINTWISE[name], [x, t], reduction, ulps=ulps)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss"])
def test_pointwise_losses_broadcast_target(name, dtype):
    x, t = values(dtype, (5, 7), 2, 2.0), values(dtype, (7,), 3)
    with pytest.warns(UserWarning):  # torch warns about the broadcast
        check_bits(*POINTWISE[name], [x, t], "mean")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_bits(weighted, reduction, dtype):
    x, t = values(dtype, (40, 50), 4, low=0.01), values(dtype, (40, 50), 5, low=0.0)
    w = values(dtype, (50,), 6, low=0.1) if weighted else None
    check_bits(
        lambda x, t, reduction: F.binary_cross_entropy(x, t, w, reduction=reduction),
        lambda x, t, r: fc.binary_cross_entropy(x, t, from_torch(w) if weighted else None, r),
        [x, t],
        reduction,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits_bits(pos_weighted, weighted, reduction, dtype):
    x, t = values(dtype, (40, 50), 7, 3.0), values(dtype, (40, 50), 8, low=0.0)
    w = values(dtype, (40, 50), 9, low=0.1) if weighted else None
    pw = values(dtype, (50,), 10, low=0.0) * 3 if pos_weighted else None
    check_bits(
        lambda x, t, reduction: F.binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw),
        lambda x, t, r: fc.binary_cross_entropy_with_logits(
            x, t, from_torch(w) if weighted else None, from_torch(pw) if pos_weighted else None, r
        ),
        [x, t],
        reduction,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_cross_entropy_checks_probabilities(dtype):
    x = from_torch(torch.tensor([0.5, 1.5]).to(getattr(torch, dtype)))
    with pytest.raises(ValueError, match="between 0 and 1"):
        fc.binary_cross_entropy(x, fc.zeros_like(x), None, 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_mean_is_nan(dtype):
    x = from_torch(torch.empty(0, 3, dtype=getattr(torch, dtype)))
    assert np.isnan(fc.mse_loss(x, x, 1).float().item())
    assert fc.l1_loss(x, x, 2).float().item() == 0.0


# ---- cross entropy and nll_loss: float32, rounded once ----

CLASS_CASES = {
    "indices": {},
    "weight": {"weight": True},
    "ignore_index": {"ignore_index": 2},
    "label_smoothing": {"label_smoothing": 0.1},
    "spatial": {"spatial": True},
    "probabilities": {"probs": True},
}


def class_inputs(dtype: str, case: dict, seed: int):
    shape = (8, 5, 3, 4) if case.get("spatial") else (64, 10)
    x = values(dtype, shape, seed, 2.0)
    c = shape[1]
    target_shape = (shape[0], *shape[2:])
    rng = np.random.default_rng(seed + 1)
    if case.get("probs"):
        target = torch.softmax(values(dtype, shape, seed + 2).float(), 1).to(x.dtype)
    else:
        target = torch.from_numpy(rng.integers(0, c, target_shape))
    weight = values(dtype, (c,), seed + 3, low=0.1) if case.get("weight") else None
    return x, target, weight


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CLASS_CASES)
def test_cross_entropy(case, reduction, dtype):
    spec = CLASS_CASES[case]
    x, target, weight = class_inputs(dtype, spec, 20)
    ignore, smoothing = spec.get("ignore_index", -100), spec.get("label_smoothing", 0.0)
    tx = x.clone().requires_grad_(True)
    theirs = F.cross_entropy(tx, target, weight, ignore_index=ignore, reduction=reduction, label_smoothing=smoothing)
    g = grad_seed(theirs, 21)
    theirs.backward(g)
    # The float64 reference from the same 16-bit values.
    xd = x.double().requires_grad_(True)
    ref = F.cross_entropy(
        xd,
        target.double() if spec.get("probs") else target,
        weight.double() if weight is not None else None,
        ignore_index=ignore,
        reduction=reduction,
        label_smoothing=smoothing,
    )
    ref.backward(g.double())
    xf = leaf(x)
    tf = from_torch(target)
    ours = fc._C._cross_entropy(
        xf, tf, from_torch(weight) if weight is not None else None, REDUCTIONS[reduction], ignore, smoothing
    )[0]
    ours.backward(from_torch(g))
    assert_within_ulps(ours.detach(), ref.to(x.dtype), 1)
    assert_within_ulps(xf.grad, xd.grad.to(x.dtype), 1)
    if case in ("label_smoothing", "probabilities"):
        return  # PyTorch composes these in the 16-bit dtype: its gradient is hundreds of units off near 0
    # PyTorch rounds its log-softmax (and accumulates nll_loss) in the 16-bit dtype.
    assert_within_ulps(ours.detach(), theirs, 4)
    assert_within_ulps(xf.grad, tx.grad, 8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["indices", "weight", "ignore_index", "spatial"])
def test_nll_loss(case, reduction, dtype):
    spec = CLASS_CASES[case]
    x, target, weight = class_inputs(dtype, spec, 30)
    x = torch.log_softmax(x.float(), 1).to(x.dtype)
    ignore = spec.get("ignore_index", -100)
    tx = x.clone().requires_grad_(True)
    theirs = F.nll_loss(tx, target, weight, ignore_index=ignore, reduction=reduction)
    g = grad_seed(theirs, 31)
    theirs.backward(g)
    xd = x.double().requires_grad_(True)
    ref = F.nll_loss(
        xd, target, weight.double() if weight is not None else None, ignore_index=ignore, reduction=reduction
    )
    ref.backward(g.double())
    xf = leaf(x)
    ours = fc.nll_loss_nd(
        xf, from_torch(target), from_torch(weight) if weight is not None else None, REDUCTIONS[reduction], ignore
    )
    ours.backward(from_torch(g))
    assert_within_ulps(ours.detach(), ref.to(x.dtype), 1)
    assert_within_ulps(xf.grad, xd.grad.to(x.dtype), 1)
    assert_within_ulps(ours.detach(), theirs, 4)
    assert_within_ulps(xf.grad, tx.grad, 2)  # PyTorch's weight sum is 16-bit
