"""Gradients and memory formats: a preserving conversion backpropagates in the source's layout, and a
leaf's .grad has the leaf's layout (Note [Gradient layout]: channels-last in, channels-last gradient), as
PyTorch's."""

from __future__ import annotations

import flambeau_autograd  # registers the autograd layer
import flambeau_core as fc
import numpy as np
import pytest
import torch


def test_a_preserving_conversion_backpropagates():
    x = fc.randn(3, 4, dtype=fc.float32).t()
    x.requires_grad_(True)
    y = x.double()
    assert y.stride() == (1, 4)
    (y * fc.arange(12, dtype=fc.float64).view(4, 3)).sum().backward()
    assert x.grad.tolist() == np.arange(12, dtype=np.float32).reshape(4, 3).tolist()


# ---- Note [Gradient layout]: a leaf's .grad takes the leaf's strides, as PyTorch's layout contract ----


_GRAPHS = {
    "mul": lambda lib, x: x * 2.0,
    "relu_add": lambda lib, x: lib.relu(x) + x,
    "conv": lambda lib, x: lib.conv2d(x, lib.ones(2, 3, 3, 3) * 0.1, padding=1),
    "max_pool": lambda lib, x: (
        fc.max_pool2d_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1])[0]
        if lib is fc
        else torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1])[0]
    ),
    "avg_pool": lambda lib, x: (
        lib.ops.aten.avg_pool2d(x, [2, 2]) if lib is torch else fc.avg_pool2d(x, [2, 2], [2, 2], [0, 0])
    ),
    "upsample": lambda lib, x: (
        lib.ops.aten.upsample_nearest2d(x, [8, 12]) if lib is torch else fc.upsample_nearest2d(x, [8, 12])
    ),
    "batch_norm": lambda lib, x: lib.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[0] * x,
    "cat": lambda lib, x: lib.cat([x, x * 3.0], 1),
    "stack": lambda lib, x: lib.stack([x, x], 0),
    "expand_sum": lambda lib, x: x.sum(),
}


def _leaf(lib, layout):
    a = np.random.default_rng(0).standard_normal((2, 3, 4, 6)).astype(np.float32)
    x = fc.tensor(a) if lib is fc else torch.from_numpy(a)
    if layout == "channels_last":
        x = x.contiguous(memory_format=fc.channels_last if lib is fc else torch.channels_last)
    elif layout == "permuted":
        x = x.permute(3, 1, 0, 2).contiguous().permute(2, 1, 3, 0)
    elif layout == "sliced":
        x = x[..., ::2]
    return x.detach().requires_grad_(True)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "permuted", "sliced"])
@pytest.mark.parametrize("graph", sorted(_GRAPHS))
def test_a_leafs_gradient_has_the_leafs_layout_as_torch(graph, layout):
    ours, theirs = _leaf(fc, layout), _leaf(torch, layout)
    assert ours.stride() == theirs.stride()
    _GRAPHS[graph](fc, ours).sum().backward()
    _GRAPHS[graph](torch, theirs).sum().backward()
    assert ours.grad.stride() == theirs.grad.stride()
    np.testing.assert_allclose(_np(ours.grad), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)
    # A second backward accumulates into the same layout.
    _GRAPHS[graph](fc, ours).sum().backward()
    _GRAPHS[graph](torch, theirs).sum().backward()
    assert ours.grad.stride() == theirs.grad.stride()
    np.testing.assert_allclose(_np(ours.grad), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_create_graph_gives_a_channels_last_gradient_that_differentiates():
    ours, theirs = _leaf(fc, "channels_last"), _leaf(torch, "channels_last")
    (ours**3).sum().backward(create_graph=True)
    (theirs**3).sum().backward(create_graph=True)
    assert ours.grad.stride() == theirs.grad.stride()
    assert ours.grad.requires_grad and theirs.grad.requires_grad
    (ours_gg,) = flambeau_autograd.grad(ours.grad.sum(), ours)
    (theirs_gg,) = torch.autograd.grad(theirs.grad.sum(), theirs)
    np.testing.assert_allclose(_np(ours_gg), theirs_gg.numpy(), rtol=1e-5)


def test_a_root_gradient_of_the_wrong_shape_still_raises():
    ours, theirs = _leaf(fc, "channels_last"), _leaf(torch, "channels_last")
    with pytest.raises(RuntimeError, match="shape"):
        (theirs * 1.0).backward(torch.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"shape \(2, 3\)"):
        (ours * 1.0).backward(fc.ones(2, 3))


def _np(t):
    return np.array(t.detach().tolist(), dtype=np.float32)


# ---- Note [In-place on views]: a base laid out other than row-major (an elementwise result keeps its
# inputs' layout) ----


@pytest.mark.parametrize("layout", ["channels_last", "permuted"])
@pytest.mark.parametrize("where", ["slice", "select", "strided"])
def test_in_place_on_a_view_of_a_dense_non_contiguous_base_as_torch(layout, where):
    def run(lib, x, v):
        out = x * 1.5  # keeps x's layout, as torch's
        region = {"slice": lambda o: o[:, 1:3], "select": lambda o: o[1], "strided": lambda o: o[..., ::2]}[where]
        region(out).mul_(v.sum())
        alias = region(out)  # a view taken after the in-place op reads the new values
        return (out * x).sum() + (alias * alias).sum()

    ours, theirs = _leaf(fc, layout), _leaf(torch, layout)
    vo, vt = fc.tensor([0.5, -2.0], requires_grad=True), torch.tensor([0.5, -2.0], requires_grad=True)
    lo, lt = run(fc, ours, vo), run(torch, theirs, vt)
    assert (ours * 1.5).stride() == (theirs * 1.5).stride()
    np.testing.assert_allclose(lo.item(), lt.item(), rtol=1e-5)
    lo.backward()
    lt.backward()
    np.testing.assert_allclose(_np(ours.grad), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(vo.grad), vt.grad.numpy(), rtol=1e-5, atol=1e-5)
