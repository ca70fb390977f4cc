"""The meta steps of the matrix products: mm, bmm and linear.

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
import torch.nn.functional as tf
from meta_helpers import TH, agree, check_torch, cpu_tensor, meta_and_cpu, torch_fn

# ---- mm and bmm ----


@pytest.mark.parametrize(
    ("name", "sa", "sb", "da", "db"),
    [
        ("mm", (2, 3), (3, 4), "float32", "float32"),
        ("mm", (2, 3), (4, 5), "float32", "float32"),
        ("mm", (2, 3), (3, 4), "float32", "float64"),
        ("mm", (2, 3, 1), (3, 4), "float32", "float32"),
        ("mm", (0, 3), (3, 0), "int64", "int64"),
        ("bmm", (5, 2, 3), (5, 3, 4), "float64", "float64"),
        ("bmm", (5, 2, 3), (4, 3, 4), "float64", "float64"),
        ("bmm", (5, 2, 3), (5, 2, 4), "float64", "float64"),
    ],
)
def test_matmul(name, sa, sb, da, db):
    a, b = cpu_tensor(sa, da), cpu_tensor(sb, db)
    meta, cpu = meta_and_cpu(getattr(fc, name), a, b)
    assert agree(meta, cpu), (meta, cpu)
    ta, tb = torch.empty(sa, dtype=TH[da], device="meta"), torch.empty(sb, dtype=TH[db], device="meta")
    check_torch(torch_fn(name), cpu, ta, tb)


# ---- linear ----

LINEAR_SHAPES = [
    ((2, 3), (4, 3), None),
    ((5, 2, 3), (4, 3), (4,)),
    ((3,), (4, 3), (4,)),
    ((2, 3), (4, 3), (2, 1, 4)),  # a bias that broadcasts the result
    ((2, 3), (4, 3), (3,)),  # a bias that does not broadcast
    ((2, 3), (4, 2), None),  # in_features mismatch
    ((2, 3), (3,), None),  # a 1-D weight
    ((), (4, 3), None),
    ((0, 3), (4, 3), (4,)),
]


@pytest.mark.parametrize(("sx", "sw", "sb"), LINEAR_SHAPES)
@pytest.mark.parametrize(("dx", "dw"), [("float32", "float32"), ("float64", "float64"), ("int64", "int64"),
                                        ("float32", "float64")])  # fmt: skip
def test_linear(sx, sw, sb, dx, dw):
    args = [cpu_tensor(sx, dx), cpu_tensor(sw, dw)] + ([] if sb is None else [cpu_tensor(sb, dx)])
    meta, cpu = meta_and_cpu(fc.linear, *args)
    assert agree(meta, cpu), (meta, cpu)
    check_torch(tf.linear, cpu, *[torch.ones(a.shape, dtype=TH[str(a.dtype).rsplit(".", 1)[-1]]) for a in args])


@pytest.mark.parametrize(("device", "bias_device"), [("cpu", "meta"), ("meta", "cpu")])
def test_a_bias_on_another_device_is_refused_by_the_meta_step(device, bias_device):
    # The meta step checks the bias's device for every backend (the cpu kernel read a bias on another
    # device; CUDA checked it on its own), as PyTorch refuses it; a cpu 0-dim bias goes with any device.
    x, w = fc.ones(2, 3, device=device), fc.ones(4, 3, device=device)
    tx, tw = torch.ones(2, 3, device=device), torch.ones(4, 3, device=device)
    with pytest.raises(RuntimeError):
        tf.linear(tx, tw, torch.ones(4, device=bias_device))
    with pytest.raises(RuntimeError) as e:
        fc.linear(x, w, fc.ones(4, device=bias_device))
    assert str(e.value) == (
        f"[linear] expected all tensors to be on the same device, but found at least two devices, {device} and "
        f"{bias_device}"
    )
    expected = tf.linear(tx, tw, torch.tensor(0.5))
    got = fc.linear(x, w, fc.tensor(0.5))
    assert got.device.type == expected.device.type == device and tuple(got.shape) == tuple(expected.shape)
    if device == "cpu":
        assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_linear_checks_keep_their_messages(device):
    x, w = fc.ones(2, 3, device=device), fc.ones(4, 3, device=device)
    with pytest.raises(fc.FlambeauError, match=r"^\[linear\] weight must be 2-D \(out_features, in_features\)"):
        fc.linear(x, w[0])
    with pytest.raises(fc.FlambeauError, match=r"^\[linear\] input shape \(2, 3\) does not match weight shape"):
        fc.linear(x, w[:, :2])
    with pytest.raises(TypeError, match=r"^\[linear\] input and weight must have the same dtype, got float32 and"):
        fc.linear(x, w.to(fc.float64))
    with pytest.raises(TypeError, match=r"^\[linear\] bias must have the dtype of input and weight \(float32\)"):
        fc.linear(x, w, fc.ones(4, dtype=fc.float64, device=device))
    with pytest.raises(RuntimeError, match=r"^\[linear\] input and weight must be on the same device"):
        fc.linear(x, fc.ones(4, 3, device="cpu" if device == "meta" else "meta"))
