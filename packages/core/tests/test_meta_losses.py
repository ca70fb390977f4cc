"""The meta steps of the losses: the pointwise losses, the class losses (nll_loss, cross_entropy) and
their gradients.

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
from meta_helpers import FC, LOSSES, cpu_tensor, meta_and_cpu

# ---- pointwise losses and their gradients ----


def loss_calls(name):
    """(description, call of x, target, weight) for the loss `name` and its gradient."""
    extra = {"smooth_l1_loss": (1.0,), "huber_loss": (1.0,)}.get(name, ())
    binary = name.startswith("binary")
    fwd = getattr(fc, name)
    bwd = getattr(fc, f"{name}_backward")
    weights = (lambda w: (w,)) if name == "binary_cross_entropy" else (lambda w: (w, None)) if binary else None

    def forward(x, t, w, r):
        return fwd(x, t, *weights(w), r) if binary else fwd(x, t, r, *extra)

    def backward(g, x, t, w, r):
        return bwd(g, x, t, *weights(w), r) if binary else bwd(g, x, t, r, *extra)

    return forward, backward


LOSS_SHAPES = [((2, 3), (2, 3), None), ((2, 3), (3,), None), ((2, 3), (2, 3), (3,)), ((2, 3), (4,), None),
               ((2, 3), (2, 3), (4,)), ((0, 3), (0, 3), None)]  # fmt: skip


# Only the binary cross entropies take a weight.
LOSS_CASES = [(n, *shapes) for n in LOSSES for shapes in LOSS_SHAPES if shapes[2] is None or n.startswith("binary")]


@pytest.mark.parametrize(("name", "sx", "st", "sw"), LOSS_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3])
def test_pointwise_losses(name, sx, st, sw, dtype, reduction):
    forward, backward = loss_calls(name)
    x = cpu_tensor(sx, dtype) / 4 if dtype != "int64" else cpu_tensor(sx, dtype)
    t, w = cpu_tensor(st, dtype) / 4, None if sw is None else cpu_tensor(sw, "float32")
    meta, cpu = meta_and_cpu(lambda x, t, w: forward(x, t, w, reduction), x, t, w)
    assert meta == cpu, (meta, cpu)
    for g in [cpu_tensor(sx, "float32"), cpu_tensor((), "float32"), cpu_tensor((), "int64")]:
        meta, cpu = meta_and_cpu(lambda g, x, t, w: backward(g, x, t, w, reduction), g, x, t, w)
        assert meta == cpu, (meta, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_loss_checks_keep_their_messages(device):
    x = fc.ones(2, 3, device=device) / 2
    with pytest.raises(
        TypeError, match=r"^\[mse_loss\] input must be a float16, bfloat16, float32 or float64 tensor, got dtype int64"
    ):
        fc.mse_loss(x.to(fc.int64), x, 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[l1_loss\] reduction must be 0 \(none\), 1 \(mean\) or 2"):
        fc.l1_loss(x, x, 5)
    with pytest.raises(fc.FlambeauError, match=r"^\[smooth_l1_loss\] smooth_l1_loss does not support negative"):
        fc.smooth_l1_loss(x, x, 1, -1.0)
    with pytest.raises(fc.FlambeauError, match=r"^\[huber_loss\] huber_loss does not support non-positive"):
        fc.huber_loss(x, x, 1, 0.0)
    with pytest.raises(fc.FlambeauError, match=r"^\[binary_cross_entropy\] target shape \(3,\) must be the same"):
        fc.binary_cross_entropy(x, x[0], None, 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[mse_loss_backward\] grad_output of a reduced loss must have one"):
        fc.mse_loss_backward(x, x, x, 1)


# ---- class losses (nll_loss, cross_entropy) over dim 1 of (N, C, d1, ...) ----

# (input shape, target shape, target dtype, weight shape)
CLASS_LOSS_CASES = [
    ((4, 3), (4,), "int64", None),
    ((4, 3, 2), (4, 2), "int64", (3,)),
    ((3,), (), "int64", None),
    ((4, 3), (4, 3), "float32", None),  # class probabilities (cross_entropy only)
    ((4, 3), (3,), "int64", None),  # a target of the wrong shape
    ((4, 3), (4,), "int32", None),
    ((4, 3), (4,), "int64", (4,)),  # one weight per class
    ((), (), "int64", None),
    ((0, 3), (0,), "int64", None),
]


@pytest.mark.parametrize(("sx", "st", "dt", "sw"), CLASS_LOSS_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
@pytest.mark.parametrize("reduction", [0, 1, 2, 5])
def test_class_losses(sx, st, dt, sw, dtype, reduction):
    x = cpu_tensor(sx, dtype)
    t = fc.zeros(st, dtype=FC[dt]) if dt != "float32" else fc.ones(st) / 3
    w = None if sw is None else fc.ones(sw)
    ce, cpu_ce = meta_and_cpu(lambda x, t, w: fc._C._cross_entropy(x, t, w, reduction), x, t, w)
    assert ce == cpu_ce, (ce, cpu_ce)
    nll, cpu_nll = meta_and_cpu(lambda x, t, w: fc.nll_loss_nd(x, t, w, reduction), x, t, w)
    assert nll == cpu_nll, (nll, cpu_nll)
    for result in (cpu_ce, cpu_nll):  # the op ran (or raised one of its own errors)
        assert result[0] == "ok" or result[1] in ("FlambeauError", "TypeError"), result
    if cpu_ce[0] == "ok":
        loss_shape, lse_shape = cpu_ce[1][0], cpu_ce[2][0]
        lse = fc.zeros(lse_shape, dtype=FC[dtype])
        for g in [fc.ones(loss_shape, dtype=FC[dtype]), fc.ones(2, 2), fc.ones((), dtype=fc.int64)]:
            meta, cpu = meta_and_cpu(
                lambda g, x, t, lse, w: fc._C._cross_entropy_backward(g, x, t, lse, w, reduction, -100, 0.0),
                g,
                x,
                t,
                lse,
                w,
            )
            assert meta == cpu, (meta, cpu)
            if cpu_nll[0] == "ok":
                meta, cpu = meta_and_cpu(
                    lambda g, x, t, w: fc.nll_loss_nd_backward(g, x, t, w, reduction, -100), g, x, t, w
                )
                assert meta == cpu, (meta, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_class_loss_checks_keep_their_messages(device):
    x, t = fc.ones(4, 3, device=device), fc.zeros(4, dtype=fc.int64, device=device)
    with pytest.raises(
        fc.FlambeauError, match=r"^\[cross_entropy\] label_smoothing must be between 0.0 and 1.0, got 1.5"
    ):
        fc._C._cross_entropy(x, t, None, 1, -100, 1.5)
    with pytest.raises(fc.FlambeauError, match=r"^\[nll_loss\] input shape \(4, 3\) needs target shape \(4,\), got"):
        fc.nll_loss_nd(x, t[:2], None, 1, -100)
    with pytest.raises(TypeError, match=r"^\[nll_loss\] target must hold int64 class indices, got dtype float32"):
        fc.nll_loss_nd(x, t.to(fc.float32), None, 1, -100)
    with pytest.raises(fc.FlambeauError, match=r"^\[cross_entropy_backward\] lse must hold 4 values of dtype float32"):
        fc._C._cross_entropy_backward(fc.ones((), device=device), x, t, fc.ones(3, device=device), None, 1, -100, 0.0)
