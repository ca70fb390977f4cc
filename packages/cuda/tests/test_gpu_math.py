"""flambeau-cuda on a GPU: the elementwise math of elementwise_math.cu, cat and
binary_cross_entropy_with_logits vs the same ops on the CPU (skipped with "no CUDA GPU" elsewhere).

Float32 and float64, odd shapes, non-contiguous inputs, broadcasting, integer dtypes where the op takes them.
"""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
from conftest import requires_gpu
from cuda_testing import assert_cuda_matches

pytestmark = requires_gpu

# name -> input range (lo, hi)
UNARY = {
    "sin": (-4, 4),
    "cos": (-4, 4),
    "tan": (-1.4, 1.4),
    "asin": (-0.99, 0.99),
    "acos": (-0.99, 0.99),
    "atan": (-4, 4),
    "sinh": (-4, 4),
    "cosh": (-4, 4),
    "asinh": (-4, 4),
    "acosh": (1.01, 5),
    "atanh": (-0.99, 0.99),
    "expm1": (-3, 3),
    "log1p": (-0.9, 5),
    "log2": (0.1, 5),
    "log10": (0.1, 5),
    "exp2": (-4, 4),
    "erf": (-3, 3),
    "erfc": (-3, 3),
    "erfinv": (-0.99, 0.99),
    "rsqrt": (0.1, 5),
    "reciprocal": (0.1, 5),
    "floor": (-5, 5),
    "ceil": (-5, 5),
    "trunc": (-5, 5),
    "round": (-5, 5),
    "frac": (-5, 5),
    "sign": (-5, 5),
    "isnan": (-5, 5),
    "isinf": (-5, 5),
    "isfinite": (-5, 5),
    "signbit": (-5, 5),
    "logical_not": (-2, 2),
}
ACTIVATIONS = {
    "gelu": {},
    "silu": {},
    "mish": {},
    "leaky_relu": {"negative_slope": 0.2},
    "elu": {"alpha": 1.3},
    "softplus": {"beta": 2.0, "threshold": 5.0},
    "hardtanh": {"min_val": -0.5, "max_val": 1.5},
    "hardswish": {},
    "hardsigmoid": {},
    "logsigmoid": {},
    "softsign": {},
}
BINARY = ["atan2", "hypot", "copysign", "logaddexp", "fmod", "remainder", "floor_divide", "nextafter"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]


def _rand(shape, dtype, lo=-3.0, hi=3.0, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    return fc.tensor(rng.uniform(lo, hi, shape).tolist(), dtype=dtype)


# Every op of core's shared list too (Note [Elementwise math list]): a new entry runs here with no edit.
SHARED_LIST = fc._C._elementwise_math_ops()


@pytest.mark.parametrize("name", sorted(set(UNARY) | {*SHARED_LIST["float_unary"], *SHARED_LIST["rounding"]}))
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_unary_math_vs_cpu(name, dtype):
    lo, hi = UNARY.get(name, (-4, 4))
    a = _rand((7, 5), dtype, lo, hi)
    fn = getattr(fc, name)
    assert_cuda_matches(fn(a.cuda()), fn(a))
    t = a.transpose(0, 1)[:, ::2]  # non-contiguous
    assert_cuda_matches(fn(t.cuda()), fn(t))


def test_unary_special_values_and_ints():
    x = fc.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 2.5, -2.5])
    for name in ("isnan", "isinf", "isfinite", "signbit", "sign", "round", "floor", "ceil", "trunc"):
        assert_cuda_matches(getattr(fc, name)(x.cuda()), getattr(fc, name)(x))
    i = fc.tensor([[3, -4, 0], [7, -1, 2]])
    for name in ("floor", "ceil", "trunc", "round", "sign", "isnan", "isfinite", "signbit", "sin", "exp2"):
        assert_cuda_matches(getattr(fc, name)(i.cuda()), getattr(fc, name)(i))
    assert_cuda_matches(fc.bitwise_not(i.cuda()), fc.bitwise_not(i))
    b = fc.tensor([True, False])
    assert_cuda_matches(fc.bitwise_not(b.cuda()), fc.bitwise_not(b))
    assert_cuda_matches(fc.sign(b.cuda()), fc.sign(b))
    assert_cuda_matches(fc.round(x.cuda(), decimals=2), fc.round(x, decimals=2))
    assert_cuda_matches(fc.round(x.cuda() * 123, decimals=-1), fc.round(x * 123, decimals=-1))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_activation_and_backward_vs_cpu(name, dtype):
    kw = ACTIVATIONS[name]
    a = _rand((9, 4), dtype, -6, 6).transpose(0, 1)
    fn = getattr(F, name)
    assert_cuda_matches(fn(a.cuda(), **kw), fn(a, **kw))
    x, xc = a.clone().requires_grad_(), a.cuda().requires_grad_()
    g = _rand((4, 9), dtype, seed=1)
    fn(x, **kw).backward(g)
    fn(xc, **kw).backward(g.cuda())
    assert_cuda_matches(xc.grad, x.grad)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_approximate(approximate):
    a = _rand((33,), fc.float64, -6, 6)
    x, xc = a.clone().requires_grad_(), a.cuda().requires_grad_()
    F.gelu(x, approximate=approximate).sum().backward()
    F.gelu(xc, approximate=approximate).sum().backward()
    assert_cuda_matches(xc.grad, x.grad)


@pytest.mark.parametrize("name", sorted(set(BINARY) | {name for name, _kind in SHARED_LIST["binary"]}))
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
@pytest.mark.parametrize(("sa", "sb"), [((3, 5), (3, 5)), ((4, 1, 3), (5, 1)), ((7,), ())])
def test_binary_math_vs_cpu(name, dtype, sa, sb):
    a, b = _rand(sa, dtype, -5, 5), _rand(sb, dtype, 0.5, 3, seed=3)
    fn = getattr(fc, name)
    assert_cuda_matches(fn(a.cuda(), b.cuda()), fn(a, b))


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide"])
def test_integer_division_ops(name):
    a, b = fc.tensor([7, -7, 7, -7, 0]), fc.tensor([2, 2, -2, -2, 3])
    fn = getattr(fc, name)
    assert_cuda_matches(fn(a.cuda(), b.cuda()), fn(a, b))
    assert_cuda_matches(fn(a.cuda(), 3), fn(a, 3))
    with pytest.raises(ValueError, match="ZeroDivisionError"):
        fn(a.cuda(), fc.tensor([1, 0, 1, 1, 1]).cuda())


def test_div_rounding_modes():
    a, b = _rand((5, 3), fc.float64, -9, 9), _rand((3,), fc.float64, 0.5, 2, seed=2)
    for mode in ("trunc", "floor"):
        assert_cuda_matches(fc.div(a.cuda(), b.cuda(), rounding_mode=mode), fc.div(a, b, rounding_mode=mode))
    i, j = fc.tensor([7, -7, 9]), fc.tensor([2, 2, -4])
    for mode in ("trunc", "floor"):
        assert_cuda_matches(fc.div(i.cuda(), j.cuda(), rounding_mode=mode), fc.div(i, j, rounding_mode=mode))


@pytest.mark.parametrize("name", LOGICAL)
def test_logical_ops(name):
    a, b = fc.tensor([[0.0, 1.5, -2.0]]), fc.tensor([[0], [3]])
    fn = getattr(fc, name)
    assert_cuda_matches(fn(a.cuda(), b.cuda()), fn(a, b))
    p, q = fc.tensor([True, False, True]), fc.tensor([True, True, False])
    assert_cuda_matches(fn(p.cuda(), q.cuda()), fn(p, q))


@pytest.mark.parametrize("name", BITWISE)
def test_bitwise_ops(name):
    a, b = fc.tensor([[5, -6, 1 << 40]]), fc.tensor([[3], [1]])
    fn = getattr(fc, name)
    assert_cuda_matches(fn(a.cuda(), b.cuda()), fn(a, b))
    if "shift" not in name:
        p, q = fc.tensor([True, False, True]), fc.tensor([True, True, False])
        assert_cuda_matches(fn(p.cuda(), q.cuda()), fn(p, q))


def test_math_errors_name_the_op():
    with pytest.raises(TypeError, match=r"\[gelu\]"):
        F.gelu(fc.tensor([1, 2]).cuda())
    with pytest.raises(TypeError, match=r"\[bitwise_and\]"):
        fc.bitwise_and(fc.ones(2).cuda(), fc.ones(2).cuda())
    with pytest.raises(ValueError, match=r"\[gelu\] approximate"):
        F.gelu(fc.ones(2).cuda(), approximate="fast")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_vs_cpu(dim):
    a, b = _rand((2, 3), fc.float32), _rand((2, 3), fc.float64, seed=4).transpose(0, 1).transpose(0, 1)
    c = _rand((3, 2), fc.float32, seed=5).transpose(0, 1)  # non-contiguous
    parts = [a, b, c]
    assert_cuda_matches(fc.cat([p.cuda() for p in parts], dim), fc.cat(parts, dim))
    assert_cuda_matches(fc.cat([a.cuda(), fc.empty(0).cuda()], dim), fc.cat([a, fc.empty(0)], dim))
    with pytest.raises(ValueError, match=r"\[cat\] sizes must match"):
        fc.cat([a.cuda(), fc.ones(3, 3).cuda()], 0 if dim else 1)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
@pytest.mark.parametrize("weights", [False, True])
def test_bce_with_logits_vs_cpu(reduction, dtype, weights):
    x = _rand((6, 5), dtype, -8, 8)
    t = _rand((6, 5), dtype, 0, 1, seed=6)
    kw, kwc = {}, {}
    if weights:
        w, pw = _rand((5,), dtype, 0.5, 2, seed=7), _rand((6, 1), dtype, 0.5, 3, seed=8)
        kw, kwc = {"weight": w, "pos_weight": pw}, {"weight": w.cuda(), "pos_weight": pw.cuda()}
    xr, xc = x.clone().requires_grad_(), x.cuda().requires_grad_()
    loss = F.binary_cross_entropy_with_logits(xr, t, reduction=reduction, **kw)
    lossc = F.binary_cross_entropy_with_logits(xc, t.cuda(), reduction=reduction, **kwc)
    assert_cuda_matches(lossc, loss)
    g = _rand(tuple(loss.shape), dtype, seed=9)
    loss.backward(g)
    lossc.backward(g.cuda())
    assert_cuda_matches(xc.grad, xr.grad)


def test_ncf_and_mlp_train_on_the_gpu_as_on_the_cpu():
    import copy

    import flambeau_nn as nn
    import flambeau_nn.optim as optim

    fc.manual_seed(0)

    class NCF(nn.Module):
        def __init__(self):
            super().__init__()
            self.u, self.i = nn.Embedding(50, 8), nn.Embedding(40, 8)
            self.mlp = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 1))

        def forward(self, users, items):
            return self.mlp(fc.cat([self.u(users), self.i(items)], dim=1)).flatten()

    users, items = fc.randint(0, 50, (32,)), fc.randint(0, 40, (32,))
    target = fc.randint(0, 2, (32,)).float()
    cpu = NCF()
    gpu = copy.deepcopy(cpu).cuda()
    opt_c = optim.SGD(cpu.parameters(), lr=0.1, momentum=0.9)
    opt_g = optim.SGD(gpu.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        for model, opt, dev in ((cpu, opt_c, "cpu"), (gpu, opt_g, "cuda")):
            opt.zero_grad(set_to_none=True)
            out = model(users.to(dev), items.to(dev))
            F.binary_cross_entropy_with_logits(out, target.to(dev)).backward()
            opt.step()
    for (name, p), (_, q) in zip(cpu.named_parameters(), gpu.named_parameters(), strict=True):
        assert name and assert_cuda_matches(q, p, tol=1e-4) is None


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_nan_to_num_and_sgn(dtype):
    x = fc.tensor([float("nan"), float("inf"), -float("inf"), -1.5, 0.0, 2.0], dtype=dtype)
    assert_cuda_matches(fc.nan_to_num(x.cuda()), fc.nan_to_num(x))
    assert_cuda_matches(
        fc.nan_to_num(x.cuda(), nan=1.0, posinf=2.0, neginf=-3.0), fc.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0)
    )
    assert_cuda_matches(fc.sgn(x.cuda()), fc.sgn(x))
    i = fc.tensor([3, -2, 0])
    assert_cuda_matches(fc.nan_to_num(i.cuda()), fc.nan_to_num(i))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_glu_vs_cpu(dim, dtype):
    a = _rand((4, 6, 2), dtype, seed=11)
    x, xc = a.clone().requires_grad_(), a.cuda().requires_grad_()
    out, outc = F.glu(x, dim), F.glu(xc, dim)
    assert_cuda_matches(outc, out)
    g = _rand(tuple(out.shape), dtype, seed=12)
    out.backward(g)
    outc.backward(g.cuda())
    assert_cuda_matches(xc.grad, x.grad)
    with pytest.raises(ValueError, match=r"\[glu\] halving dimension must be even"):
        F.glu(fc.ones(3, 5).cuda(), 1)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (5, 3), (7,)])
@pytest.mark.parametrize("shared", [False, True])
def test_prelu_vs_cpu(shape, shared):
    a = _rand(shape, fc.float64, seed=13)
    channels = 1 if shared or len(shape) < 2 else shape[1]
    w = _rand((channels,), fc.float64, 0.1, 0.5, seed=14)
    x, xc = a.clone().requires_grad_(), a.cuda().requires_grad_()
    wr, wc = w.clone().requires_grad_(), w.cuda().requires_grad_()
    out, outc = F.prelu(x, wr), F.prelu(xc, wc)
    assert_cuda_matches(outc, out)
    g = _rand(shape, fc.float64, seed=15)
    out.backward(g)
    outc.backward(g.cuda())
    assert_cuda_matches(xc.grad, x.grad)
    assert_cuda_matches(wc.grad, wr.grad)


@pytest.mark.parametrize(
    ("name", "kw"),
    [("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.7}), ("huber_loss", {"delta": 0.7}), ("binary_cross_entropy", {})],
)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_pointwise_losses_vs_cpu(name, kw, reduction, dtype):
    x = _rand((5, 4), dtype, 0.01, 0.99, seed=21)
    t = _rand((5, 4), dtype, 0, 1, seed=22)
    fn = getattr(F, name)
    xr, xc = x.clone().requires_grad_(), x.cuda().requires_grad_()
    loss = fn(xr, t, reduction=reduction, **kw)
    lossc = fn(xc, t.cuda(), reduction=reduction, **kw)
    assert_cuda_matches(lossc, loss)
    g = _rand(tuple(loss.shape), dtype, seed=23)
    loss.backward(g)
    lossc.backward(g.cuda())
    assert_cuda_matches(xc.grad, xr.grad)


def test_bce_rejects_out_of_range_inputs():
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(fc.tensor([0.5, 1.5]).cuda(), fc.tensor([0.0, 1.0]).cuda())


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64, fc.int64, fc.bool])
def test_masked_fill_vs_cpu(dtype):
    a = fc.tensor([[1, 0, 3], [4, 5, 0]]).to(dtype)
    mask = fc.tensor([True, False, True])
    value = True if dtype == fc.bool else 7
    assert_cuda_matches(a.cuda().masked_fill(mask.cuda(), value), a.masked_fill(mask, value))
    assert_cuda_matches(a.cuda().t().masked_fill(fc.tensor(True), value), a.t().masked_fill(fc.tensor(True), value))
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        a.cuda().masked_fill(mask.cuda().long(), value)


def test_zero_grad_without_set_to_none():
    import flambeau_nn as nn

    model = nn.Linear(3, 2).cuda()
    model(fc.ones(4, 3).cuda()).sum().backward()
    optimizer = __import__("flambeau_nn.optim", fromlist=["SGD"]).SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad(set_to_none=False)
    assert float(model.weight.grad.abs().sum()) == 0.0
