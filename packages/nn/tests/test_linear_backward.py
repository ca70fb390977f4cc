"""linear's backward through core's _linear_backward (linear_backward_grads in
packages/autograd/src/formula_helpers.h): gradients against PyTorch at the
MLP's shapes and odd ones, float32 and float64, 1-3 threads, each subset of
(input, weight, bias) requiring grad, broadcast biases, create_graph (the
composed, differentiable path), gradcheck/gradgradcheck in float64, and
three SGD steps of the benchmark MLP against PyTorch's."""

from __future__ import annotations

import itertools

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import flambeau_nn.optim as optim
import pytest
import torch
from flambeau_core.testing import kernel_trace
from nn_testing import assert_close, copy_params, from_torch


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    old = fc.get_num_threads()
    fc.set_num_threads(request.param)
    yield request.param
    fc.set_num_threads(old)


def _pair(shape, dtype, gen, requires_grad=True):
    t = torch.randn(shape, generator=gen, dtype=dtype)
    o = from_torch(t)
    if requires_grad:
        t.requires_grad_()
        o.requires_grad_()
    return t, o


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("in_shape, out_f", [((128, 784), 512), ((128, 512), 10), ((4, 33, 70), 129), ((70,), 300)])
@pytest.mark.parametrize("needs", [m for m in itertools.product([True, False], repeat=3) if any(m)])
def test_gradients_match_torch(threads, in_shape, out_f, needs, dtype):
    g = torch.Generator().manual_seed(0)
    x, ox = _pair(in_shape, dtype, g, needs[0])
    w, ow = _pair((out_f, in_shape[-1]), dtype, g, needs[1])
    b, ob = _pair((out_f,), dtype, g, needs[2])
    y, oy = torch.nn.functional.linear(x, w, b), F.linear(ox, ow, ob)
    gy = torch.randn(y.shape, generator=g, dtype=dtype)
    y.backward(gy)
    oy.backward(from_torch(gy))
    for asked, t, o in zip(needs, (x, w, b), (ox, ow, ob), strict=True):
        if asked:
            assert_close(o.grad, t.grad, **_tol(dtype))
        else:
            assert o.grad is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias_shape", [(1, 6), (4, 6), (), (1,)])
def test_broadcast_bias_gradient(bias_shape, dtype):
    g = torch.Generator().manual_seed(1)
    x, ox = _pair((4, 5), dtype, g)
    w, ow = _pair((6, 5), dtype, g)
    b, ob = _pair(bias_shape, dtype, g)
    y, oy = torch.nn.functional.linear(x, w, b), F.linear(ox, ow, ob)
    assert_close(oy, y, **_tol(dtype))
    gy = torch.randn(y.shape, generator=g, dtype=dtype)
    y.backward(gy)
    oy.backward(from_torch(gy))
    for t, o in ((x, ox), (w, ow), (b, ob)):
        assert tuple(o.grad.shape) == tuple(t.grad.shape)
        assert_close(o.grad, t.grad, **_tol(dtype))


def test_non_contiguous_input_and_grad(threads):
    g = torch.Generator().manual_seed(2)
    base = torch.randn(96, 80, generator=g, dtype=torch.float64)
    x, ox = base[::2, ::3].clone().requires_grad_(), from_torch(base)[::2, ::3].requires_grad_()
    w, ow = _pair((40, 27), torch.float64, g)
    b, ob = _pair((40,), torch.float64, g)
    y, oy = torch.nn.functional.linear(x.t().t(), w, b), F.linear(ox, ow, ob)
    gbase = torch.randn(40, 48, generator=g, dtype=torch.float64)
    y.backward(gbase.t())
    oy.backward(from_torch(gbase).t())  # a transposed grad_output
    for t, o in ((x, ox), (w, ow), (b, ob)):
        assert_close(o.grad, t.grad, **_tol(torch.float64))


def test_create_graph_second_derivative_matches_torch():
    # Under create_graph the composed (differentiable) formulas run: a gradient penalty's gradient.
    g = torch.Generator().manual_seed(3)
    x, ox = _pair((6, 5), torch.float64, g)
    w, ow = _pair((4, 5), torch.float64, g)
    b, ob = _pair((4,), torch.float64, g)
    (gx,) = torch.autograd.grad(torch.tanh(torch.nn.functional.linear(x, w, b)).sum(), (x,), create_graph=True)
    (ogx,) = fa.grad(fc.tanh(F.linear(ox, ow, ob)).sum(), (ox,), create_graph=True)
    assert_close(ogx, gx, **_tol(torch.float64))
    (gx * gx).sum().backward()
    (ogx * ogx).sum().backward()
    for t, o in ((x, ox), (w, ow), (b, ob)):
        assert_close(o.grad, t.grad, **_tol(torch.float64))


@pytest.mark.parametrize("bias", [True, False])
def test_gradcheck_and_gradgradcheck(bias):
    g = torch.Generator().manual_seed(4)
    x = from_torch(torch.randn(3, 7, 5, generator=g, dtype=torch.float64)).requires_grad_()
    w = from_torch(torch.randn(4, 5, generator=g, dtype=torch.float64)).requires_grad_()
    inputs = (x, w)
    if bias:
        inputs += (from_torch(torch.randn(4, generator=g, dtype=torch.float64)).requires_grad_(),)
    assert fa.gradcheck(F.linear, inputs)
    assert fa.gradgradcheck(F.linear, inputs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mlp_sgd_steps_match_torch(threads, dtype):
    # The benchmark MLP (784-512-512-10, ReLU, cross entropy, SGD with momentum), three steps.
    def build(lib):
        return lib.nn.Sequential(
            lib.nn.Linear(784, 512), lib.nn.ReLU(), lib.nn.Linear(512, 512), lib.nn.ReLU(), lib.nn.Linear(512, 10)
        )

    class _Lib:
        nn = nn

    tm = build(torch).to(dtype)
    om = build(_Lib)
    if dtype == torch.float64:
        om = om.double()
    copy_params(om, tm)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(128, 784, generator=g, dtype=dtype)
    y = torch.randint(0, 10, (128,), generator=g)
    ox, oy = from_torch(x), from_torch(y)
    topt = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
    oopt = optim.SGD(om.parameters(), lr=0.01, momentum=0.9)
    for _ in range(3):
        topt.zero_grad(set_to_none=True)
        oopt.zero_grad(set_to_none=True)
        tl = torch.nn.functional.cross_entropy(tm(x), y)
        ol = F.cross_entropy(om(ox), oy)
        assert_close(ol, tl, **_tol(dtype))
        tl.backward()
        ol.backward()
        topt.step()
        oopt.step()
    for (name, tp), op in zip(tm.named_parameters(), om.parameters(), strict=True):
        assert tuple(op.shape) == tuple(tp.shape), name
        assert_close(op, tp.detach(), **_tol(dtype))


def test_backward_uses_one_fused_call_per_linear():
    # Outside create_graph, float32 on the CPU: one _linear_backward per Linear, no mm/sum.

    m = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 3))
    loss = F.cross_entropy(m(fc.randn(8, 20)), fc.tensor([0, 1, 2, 0, 1, 2, 0, 1]))
    with kernel_trace() as rows:
        loss.backward()
    ops = [r[0] for r in rows]
    assert "_linear_backward" in ops
    assert "mm" not in ops and "sum" not in ops
