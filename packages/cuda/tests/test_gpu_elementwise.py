"""flambeau-cuda on a GPU: the elementwise ops vs the same ops on the CPU (skipped with "no CUDA GPU" elsewhere).

Odd shapes, broadcasting, non-contiguous operands, wrapped numbers, type promotion and in-place forms.
"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import requires_gpu
from cuda_testing import assert_cuda_matches

pytestmark = requires_gpu

BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "eq", "ne", "lt", "le", "gt", "ge"]
UNARY = ["neg", "abs", "relu", "exp", "log", "sqrt", "tanh", "sigmoid"]


def _rand(shape, dtype, positive=False):
    rng = np.random.default_rng(sum(shape) + 7)
    a = rng.uniform(0.1, 3, shape) if positive else rng.standard_normal(shape) * 2
    return fc.tensor(a.tolist(), dtype=dtype)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
@pytest.mark.parametrize(("sa", "sb"), [((3, 5), (3, 5)), ((4, 1, 3), (5, 1)), ((7,), ()), ((1,), (2, 3))])
def test_binary_vs_cpu(name, dtype, sa, sb):
    a, b = _rand(sa, dtype, positive=name == "pow"), _rand(sb, dtype)
    fn = getattr(fc, name)
    assert_cuda_matches(fn(a.cuda(), b.cuda()), fn(a, b), 1e-6)
    assert_cuda_matches(fn(a.cuda(), 2.5), fn(a, 2.5), 1e-6)  # wrapped number: a host scalar passed by value


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_unary_vs_cpu_non_contiguous(name, dtype):
    a = _rand((6, 5), dtype, positive=name in ("log", "sqrt")).transpose(0, 1)
    fn = getattr(fc, name)
    assert_cuda_matches(fn(a.cuda()), fn(a), 1e-6)
    assert_cuda_matches(fn(a.cuda()[:, ::2]), fn(a[:, ::2]), 1e-6)


def test_promotion_and_int64():
    i = fc.tensor([[1, -2, 3]])
    f = fc.tensor([0.5, 1.5, -2.0])
    for x, y in [(i, f), (f, i), (i, i)]:
        assert_cuda_matches(x.cuda() + y.cuda(), x + y, 1e-6)
        assert_cuda_matches(x.cuda() * y.cuda(), x * y, 1e-6)
        assert_cuda_matches(x.cuda() / y.cuda(), x / y, 1e-6)  # true division: float
        assert_cuda_matches(x.cuda() < y.cuda(), x < y, 1e-6)
    assert_cuda_matches(i.cuda() + 1.5, i + 1.5, 1e-6)  # int tensor + float number -> default float dtype
    assert_cuda_matches(fc.exp(i.cuda()), fc.exp(i), 1e-6)


def test_inplace():
    x = _rand((4, 3), fc.float32)
    y = x.cuda()
    y.add_(fc.tensor([1.0, 2.0, 3.0]).cuda(), alpha=2)
    y.mul_(3)
    y.sub_(1.0)
    y.div_(fc.full((4, 1), 2.0, device="cuda"))
    x.add_(fc.tensor([1.0, 2.0, 3.0]), alpha=2)
    x.mul_(3)
    x.sub_(1.0)
    x.div_(fc.full((4, 1), 2.0))
    assert_cuda_matches(y, x, 1e-6)
    z = fc.arange(9.0).reshape(3, 3)
    w = z.cuda()
    w.add_(w.t())  # overlapping input: read before written
    assert_cuda_matches(w, z + z.t(), 1e-6)


def test_elementwise_errors():
    a = fc.ones(2, 3, device="cuda")
    with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
        a + fc.ones(2, 3)
    with pytest.raises(ValueError, match="add"):
        a + fc.ones(4, device="cuda")
    with pytest.raises(TypeError, match=r"can't be cast to the desired output type int64"):
        fc.ones(2, dtype=fc.int64, device="cuda").add_(1.5)
    with pytest.raises(TypeError, match="is not yet implemented on CUDA"):
        fc.ones(2, dtype=fc.int32, device="cuda") * fc.ones(2, dtype=fc.int32, device="cuda")


def test_relu_backward_threshold():
    g, x = _rand((5, 4), fc.float32), _rand((5, 4), fc.float32)
    assert_cuda_matches(fc.threshold_backward(g.cuda(), x.cuda(), 0.0), fc.threshold_backward(g, x, 0.0), 1e-6)


def test_where_vs_cpu():
    x = fc.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    cond = x > 0
    assert_cuda_matches(fc.where(cond.cuda(), x.cuda(), 0.0), fc.where(cond, x, 0.0), 1e-6)
    assert_cuda_matches(fc.where(cond.cuda(), x.cuda(), -x.cuda()), fc.where(cond, x, -x), 1e-6)
    i = fc.tensor([1, 2, 3])
    assert_cuda_matches(fc.where(cond.cuda(), i.cuda(), x.cuda()), fc.where(cond, i, x), 1e-6)  # promotes to float
    assert_cuda_matches(fc.where(cond[:, :1].cuda(), x.t().cuda().t(), 7), fc.where(cond[:, :1], x, 7), 1e-6)
    with pytest.raises(TypeError, match="bool"):
        fc.where(x.cuda(), x.cuda(), x.cuda())
