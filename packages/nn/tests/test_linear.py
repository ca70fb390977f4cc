"""The fused linear op (one GEMM with the bias in its epilogue) and nn.Linear, against PyTorch."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import pytest
import torch
from nn_testing import assert_close, copy_params, from_torch

SHAPES = [((5, 3), 4), ((1, 10), 10), ((3,), 2), ((2, 3, 7), 5), ((2, 1, 3, 4), 1), ((0, 3), 2), ((4, 0), 3)]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("in_shape, out_f", SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_values_and_gradients_match_torch(in_shape, out_f, bias, dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(in_shape, generator=g, dtype=dtype, requires_grad=True)
    w = torch.randn(out_f, in_shape[-1], generator=g, dtype=dtype, requires_grad=True)
    b = torch.randn(out_f, generator=g, dtype=dtype, requires_grad=True) if bias else None
    ox, ow = from_torch(x).requires_grad_(), from_torch(w).requires_grad_()
    ob = from_torch(b).requires_grad_() if bias else None
    y = torch.nn.functional.linear(x, w, b)
    oy = F.linear(ox, ow, ob)
    assert_close(oy, y, **_tol(dtype))
    gy = torch.randn(y.shape, generator=g, dtype=dtype)
    y.backward(gy)
    oy.backward(from_torch(gy))
    assert_close(ox.grad, x.grad, **_tol(dtype))
    assert_close(ow.grad, w.grad, **_tol(dtype))
    if bias:
        assert_close(ob.grad, b.grad, **_tol(dtype))


# (base shape, view) pairs applied identically to a torch tensor and its flambeau copy.
LAYOUTS = {
    "transposed_weight": dict(w=((8, 5), lambda t: t.transpose(0, 1))),
    "sliced_input": dict(x=((12, 16), lambda t: t[::2, ::2])),
    "permuted_input": dict(x=((8, 3, 4), lambda t: t.permute(1, 2, 0))),
    "strided_bias": dict(b=((10,), lambda t: t[::2])),
    "sliced_weight": dict(w=((10, 16), lambda t: t[::2, ::2])),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_linear_non_contiguous_operands(layout):
    g = torch.Generator().manual_seed(1)
    shapes = {"x": ((6, 8), lambda t: t), "w": ((5, 8), lambda t: t), "b": ((5,), lambda t: t), **LAYOUTS[layout]}
    ts, os = {}, {}
    for name, (shape, view) in shapes.items():
        base = torch.randn(shape, generator=g, dtype=torch.float64)
        ts[name] = view(base)
        os[name] = view(from_torch(base))
    assert not all(os[k].is_contiguous() for k in os)
    tx, tw, tb = (ts[k].detach().requires_grad_() for k in "xwb")
    ox, ow, ob = (os[k].detach().requires_grad_() for k in "xwb")
    y = torch.nn.functional.linear(tx, tw, tb)
    oy = fc.linear(ox, ow, ob)
    assert_close(oy, y, rtol=1e-12, atol=1e-12)
    y.sum().backward()
    oy.sum().backward()
    for o, t in ((ox, tx), (ow, tw), (ob, tb)):
        assert_close(o.grad, t.grad, rtol=1e-12, atol=1e-12)


def test_linear_gradcheck_and_gradgradcheck():
    g = torch.Generator().manual_seed(2)
    x = from_torch(torch.randn(3, 4, generator=g, dtype=torch.float64)).requires_grad_()
    w = from_torch(torch.randn(2, 4, generator=g, dtype=torch.float64)).requires_grad_()
    b = from_torch(torch.randn(2, generator=g, dtype=torch.float64)).requires_grad_()
    assert fa.gradcheck(lambda x, w, b: fc.linear(x, w, b), (x, w, b))
    x3 = from_torch(torch.randn(2, 3, 4, generator=g, dtype=torch.float64)).requires_grad_()
    assert fa.gradcheck(lambda x, w: fc.linear(x, w), (x3, w))
    if hasattr(fa, "gradgradcheck"):
        assert fa.gradgradcheck(lambda x, w, b: fc.linear(x, w, b), (x, w, b))


def test_linear_one_sample_and_broadcast_bias_and_integers():
    x = torch.randn(1, 10)
    lin_t = torch.nn.Linear(10, 10)
    lin_o = nn.Linear(10, 10)
    copy_params(lin_o, lin_t)
    assert_close(lin_o(from_torch(x)), lin_t(x))
    assert lin_o(from_torch(x)).grad_fn.name() == "LinearBackward0"
    # A bias that only broadcasts (shape (1,)) takes the composed path, as PyTorch allows.
    w = torch.randn(3, 4)
    assert_close(
        fc.linear(from_torch(x[:, :4]), from_torch(w), fc.ones(1)),
        torch.nn.functional.linear(x[:, :4], w, torch.ones(1)),
    )
    xi = fc.ones(2, 3, dtype=fc.int64)
    wi = fc.ones(4, 3, dtype=fc.int64)
    assert fc.linear(xi, wi, fc.ones(4, dtype=fc.int64)).tolist() == [[4] * 4] * 2


def test_linear_bad_input():
    with pytest.raises(
        ValueError, match=r"\[linear\] weight must be 2-D \(out_features, in_features\), got shape \(3,\)"
    ):
        fc.linear(fc.ones(2, 3), fc.ones(3))
    with pytest.raises(ValueError, match=r"\[linear\] input shape \(2, 4\) does not match weight shape \(5, 3\)"):
        fc.linear(fc.ones(2, 4), fc.ones(5, 3))
    with pytest.raises(ValueError, match=r"input shape \(\) does not match"):
        fc.linear(fc.ones(()), fc.ones(5, 3))
    with pytest.raises(
        TypeError, match=r"\[linear\] input and weight must have the same dtype, got float32 and float64"
    ):
        fc.linear(fc.ones(2, 3), fc.ones(5, 3, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[linear\] bias must have the dtype"):
        fc.linear(fc.ones(2, 3), fc.ones(5, 3), fc.ones(5, dtype=fc.float64))
    with pytest.raises(TypeError):
        F.linear([1.0], fc.ones(5, 3))
    with pytest.raises(ValueError):
        fc.linear(fc.ones(2, 3), fc.ones(5, 3), fc.ones(4))
