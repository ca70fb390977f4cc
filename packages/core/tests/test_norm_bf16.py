"""bfloat16 batch norm of 3+ dims (Note [Batch norm in bfloat16], norm_batch.cpp): the float32 loops on
values widened as they are loaded, each result rounded to bfloat16 once. Oracles: the float32 kernel on the same
(widened) values rounded once (the same arithmetic, so bit for bit), float64 computed from the same
bfloat16 values (within one bfloat16 rounding plus float32 accumulation), and PyTorch 2.13's bfloat16
batch norm (within bfloat16 tolerance). Training and evaluation, the backward, float32 and bfloat16
parameters, rows longer than one block, non-contiguous and channels-last inputs, empty inputs, errors."""

from __future__ import annotations

import json

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import from_torch, run_with_capability, to_numpy

pytestmark = pytest.mark.on_devices(types=("cpu",))

EPS, MOMENTUM = 1e-5, 0.1
SHAPES = [
    (4, 16, 8, 8),  # ResNet-8's blocks
    (2, 3, 50, 50),  # rows of 2500 elements: more than one block of 2048
    (3, 5, 7),  # (N, C, L)
    (2, 3, 2, 3, 4),  # 3-D batch norm
    (1, 4, 1, 1),  # one value per channel and image
    (2, 2, 128, 128),  # channels of 2^15 values
    (2, 2, 130, 130),  # rows of 16,900 values: eight blocks and a part
]


def bf16_values(shape, seed, scale=1.0, shift=0.0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.from_numpy((rng.standard_normal(shape) * scale + shift).astype(np.float32)).bfloat16()


def params(c: int, dtype: torch.dtype):
    rng = np.random.default_rng(100 + c)
    w = torch.from_numpy(rng.standard_normal(c).astype(np.float32)).to(dtype)
    b = torch.from_numpy(rng.standard_normal(c).astype(np.float32)).to(dtype)
    rm = torch.from_numpy(rng.standard_normal(c).astype(np.float32)).to(dtype)
    rv = torch.from_numpy((np.abs(rng.standard_normal(c)) + 0.5).astype(np.float32)).to(dtype)
    return w, b, rm, rv


def exact_forward(x: np.ndarray, w, b, rm, rv, training: bool) -> np.ndarray:
    """float64 batch norm of the given values (channels on axis 1)."""
    axes = (0,) + tuple(range(2, x.ndim))
    bshape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    else:
        mean, var = rm, rv
    y = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + EPS)
    return y * w.reshape(bshape) + b.reshape(bshape)


def f64(t: torch.Tensor) -> np.ndarray:
    return t.double().numpy()


def within_bf16(ours: fc.Tensor, exact: np.ndarray, scale: float) -> None:
    """ours is exact rounded once to bfloat16 (half an ulp, 2^-9 relative) up to float32 accumulation."""
    got = to_numpy(ours).astype(np.float64)
    np.testing.assert_allclose(got, exact, rtol=2**-8, atol=1e-5 * scale)


@pytest.mark.parametrize("pdtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_is_the_float32_kernel_rounded_once(shape, training, pdtype):
    c = shape[1]
    x = bf16_values(shape, 1, scale=2.0, shift=3.0)
    w, b, rm, rv = params(c, pdtype)
    ours_rm, ours_rv = from_torch(rm), from_torch(rv)
    out, mean, invstd = fc.native_batch_norm(
        from_torch(x), from_torch(w), from_torch(b), ours_rm, ours_rv, training, MOMENTUM, EPS
    )
    assert out.dtype == fc.bfloat16 and tuple(out.shape) == shape
    assert mean.dtype == invstd.dtype == (fc.bfloat16 if pdtype == torch.bfloat16 else fc.float32)
    # The float32 kernel on float32 copies of the same values, rounded once: the same bits.
    rm32, rv32 = from_torch(rm.float()), from_torch(rv.float())
    ref = fc.native_batch_norm(
        from_torch(x.float()), from_torch(w.float()), from_torch(b.float()), rm32, rv32, training, MOMENTUM, EPS
    )
    np.testing.assert_array_equal(to_numpy(out), to_numpy(ref[0].to(fc.bfloat16)))
    np.testing.assert_array_equal(to_numpy(mean), to_numpy(ref[1].to(mean.dtype)))
    np.testing.assert_array_equal(to_numpy(invstd), to_numpy(ref[2].to(invstd.dtype)))
    np.testing.assert_array_equal(to_numpy(ours_rm), to_numpy(rm32.to(ours_rm.dtype)))
    np.testing.assert_array_equal(to_numpy(ours_rv), to_numpy(rv32.to(ours_rv.dtype)))
    # float64 from the same bfloat16 values.
    exact = exact_forward(f64(x), f64(w), f64(b), f64(rm), f64(rv), training)
    within_bf16(out, exact, scale=float(np.abs(exact).max()))
    # PyTorch's bfloat16 batch norm (its running statistics updated in place too).
    want = torch.native_batch_norm(x, w, b, rm, rv, training, MOMENTUM, EPS)
    # With bfloat16 parameters PyTorch normalizes with the batch mean rounded to bfloat16 (half an ulp of
    # |mean|, times the channel's scale); flambeau keeps it float32 (the float64 check above holds it).
    atol = 2**-7
    stat_atol = 2**-6 if pdtype == torch.bfloat16 else 1e-6
    if pdtype == torch.bfloat16 and training:
        scale = np.abs(to_numpy(invstd) * to_numpy(from_torch(w))).max()
        atol += 2**-8 * float(np.abs(to_numpy(mean)).max() * scale)
    np.testing.assert_allclose(to_numpy(out), want[0].float().numpy(), rtol=2**-7, atol=atol)
    if training:
        np.testing.assert_allclose(to_numpy(mean), want[1].float().numpy(), rtol=2**-7, atol=stat_atol)
        np.testing.assert_allclose(to_numpy(invstd), want[2].float().numpy(), rtol=2**-7)
    else:
        assert tuple(mean.shape) == tuple(invstd.shape) == (0,)
    # bfloat16 running statistics: PyTorch updates them from its bfloat16-rounded batch statistics.
    np.testing.assert_allclose(to_numpy(ours_rm), rm.float().numpy(), rtol=2**-7, atol=stat_atol)
    np.testing.assert_allclose(to_numpy(ours_rv), rv.float().numpy(), rtol=2**-7, atol=stat_atol)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_backward_is_the_float32_kernel_rounded_once(shape, training):
    c = shape[1]
    x = bf16_values(shape, 2, scale=1.5, shift=-1.0)
    g = bf16_values(shape, 3)
    w, _, rm, rv = params(c, torch.float32)
    if training:
        _, mean, invstd = fc.native_batch_norm(from_torch(x), from_torch(w), None, None, None, True, MOMENTUM, EPS)
    else:
        mean, invstd = from_torch(rm), (from_torch(rv).to(fc.float64) + EPS).rsqrt().to(fc.float32)
    gi, gw, gb = fc._C._native_batch_norm_backward(
        from_torch(g), from_torch(x), from_torch(w), mean, invstd, training, True, True, True
    )
    assert gi.dtype == fc.bfloat16 and gw.dtype == gb.dtype == fc.float32
    ref = fc._C._native_batch_norm_backward(
        from_torch(g.float()), from_torch(x.float()), from_torch(w), mean, invstd, training, True, True, True
    )
    np.testing.assert_array_equal(to_numpy(gi), to_numpy(ref[0].to(fc.bfloat16)))
    np.testing.assert_array_equal(to_numpy(gw), to_numpy(ref[1]))
    np.testing.assert_array_equal(to_numpy(gb), to_numpy(ref[2]))
    # float64 from the same values, through torch's autograd of the float64 formula.
    xd = torch.from_numpy(f64(x)).requires_grad_()
    wd = torch.from_numpy(f64(w)).requires_grad_()
    bd = torch.zeros(c, dtype=torch.float64, requires_grad=True)
    if training:
        yd = torch.native_batch_norm(xd, wd, bd, None, None, True, 0.0, EPS)[0]
    else:
        yd = torch.native_batch_norm(xd, wd, bd, rm.double(), rv.double(), False, 0.0, EPS)[0]
    yd.backward(torch.from_numpy(f64(g)))
    # The terms of dx are of the size of dy * invstd * w before they cancel (to 0 with one value a channel).
    scale = float(np.abs(f64(g)).max() * np.abs(to_numpy(invstd) * to_numpy(from_torch(w))).max())
    within_bf16(gi, xd.grad.numpy(), scale=scale)
    np.testing.assert_allclose(to_numpy(gw), wd.grad.numpy(), rtol=1e-4, atol=1e-4 * np.sqrt(x.numel() / c))
    np.testing.assert_allclose(to_numpy(gb), bd.grad.numpy(), rtol=1e-4, atol=1e-4 * np.sqrt(x.numel() / c))
    # PyTorch's bfloat16 backward.
    tgi, tgw, tgb = torch.ops.aten.native_batch_norm_backward(
        g,
        x,
        w,
        None if training else rm,
        None if training else rv,
        torch.from_numpy(to_numpy(mean)) if training else None,
        torch.from_numpy(to_numpy(invstd)) if training else None,
        training,
        EPS,
        [True, True, True],
    )
    np.testing.assert_allclose(to_numpy(gi), tgi.float().numpy(), rtol=2**-7, atol=2**-7 * scale)
    np.testing.assert_allclose(to_numpy(gw), tgw.numpy(), rtol=2e-3, atol=2e-3 * np.sqrt(x.numel() / c))
    np.testing.assert_allclose(to_numpy(gb), tgb.numpy(), rtol=2e-3, atol=2e-3 * np.sqrt(x.numel() / c))


def test_only_the_gradients_asked_for():
    x = bf16_values((2, 3, 4, 4), 4)
    g = bf16_values((2, 3, 4, 4), 5)
    _, mean, invstd = fc.native_batch_norm(from_torch(x), None, None, None, None, True, MOMENTUM, EPS)
    full = fc._C._native_batch_norm_backward(from_torch(g), from_torch(x), None, mean, invstd, True, True, True, True)
    gi, gw, gb = fc._C._native_batch_norm_backward(
        from_torch(g), from_torch(x), None, mean, invstd, True, True, False, False
    )
    assert gw is None and gb is None
    np.testing.assert_array_equal(to_numpy(gi), to_numpy(full[0]))
    gi, gw, gb = fc._C._native_batch_norm_backward(
        from_torch(g), from_torch(x), None, mean, invstd, True, False, True, True
    )
    assert gi is None
    np.testing.assert_array_equal(to_numpy(gw), to_numpy(full[1]))
    np.testing.assert_array_equal(to_numpy(gb), to_numpy(full[2]))


@pytest.mark.parametrize("layout", ["channels_last", "strided"])
def test_non_contiguous_inputs(layout):
    x = bf16_values((2, 6, 5, 7), 6, shift=2.0)
    g = bf16_values((2, 6, 5, 7), 7)
    w, b, _, _ = params(6, torch.float32)
    if layout == "channels_last":
        xs, gs = from_torch(x.float()).to(fc.bfloat16), from_torch(g.float()).to(fc.bfloat16)
        xs = xs.contiguous(memory_format=fc.channels_last)
        gs = gs.contiguous(memory_format=fc.channels_last)
    else:  # every other column of a wider tensor
        wide = torch.zeros(2, 6, 5, 14, dtype=torch.bfloat16)
        wide[..., ::2] = x
        xs = from_torch(wide)[..., ::2]
        wide[..., ::2] = g
        gs = from_torch(wide)[..., ::2]
    assert not xs.is_contiguous()
    out, mean, invstd = fc.native_batch_norm(xs, from_torch(w), from_torch(b), None, None, True, MOMENTUM, EPS)
    ref = fc.native_batch_norm(from_torch(x), from_torch(w), from_torch(b), None, None, True, MOMENTUM, EPS)
    np.testing.assert_array_equal(to_numpy(out), to_numpy(ref[0]))
    np.testing.assert_array_equal(to_numpy(mean), to_numpy(ref[1]))
    got = fc._C._native_batch_norm_backward(gs, xs, from_torch(w), mean, invstd, True, True, True, True)
    want = fc._C._native_batch_norm_backward(
        from_torch(g), from_torch(x), from_torch(w), mean, invstd, True, True, True, True
    )
    for a, b_ in zip(got, want, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b_))


def test_empty_inputs():
    # No values: an empty output, NaN batch statistics (as 0 / 0) and untouched running statistics, as float32.
    x = fc.empty(0, 3, 4, 4, dtype=fc.bfloat16)
    rm, rv = fc.zeros(3), fc.ones(3)
    out, mean, invstd = fc.native_batch_norm(x, fc.ones(3), fc.zeros(3), rm, rv, True, MOMENTUM, EPS)
    assert tuple(out.shape) == (0, 3, 4, 4) and out.dtype == fc.bfloat16
    assert np.isnan(to_numpy(mean)).all() and np.isnan(to_numpy(invstd)).all()
    assert to_numpy(rm).tolist() == [0.0] * 3 and to_numpy(rv).tolist() == [1.0] * 3
    gi, gw, gb = fc._C._native_batch_norm_backward(
        fc.empty(0, 3, 4, 4, dtype=fc.bfloat16), x, fc.ones(3), mean, invstd, True, True, True, True
    )
    assert tuple(gi.shape) == (0, 3, 4, 4) and gi.dtype == fc.bfloat16
    # As the float32 kernel: no values sum to 0 (the bias's gradient), times the NaN invstd for the weight's.
    ref = fc._C._native_batch_norm_backward(
        fc.empty(0, 3, 4, 4), x.to(fc.float32), fc.ones(3), mean, invstd, True, True, True, True
    )
    np.testing.assert_array_equal(to_numpy(gw), to_numpy(ref[1]))
    assert to_numpy(gb).tolist() == [0.0] * 3
    # No channels.
    out, mean, _ = fc.native_batch_norm(fc.empty(2, 0, 3, dtype=fc.bfloat16), None, None, None, None, True, 0.1, EPS)
    assert tuple(out.shape) == (2, 0, 3) and tuple(mean.shape) == (0,)


def test_special_values():
    # A NaN or infinity in a channel makes that channel's statistics and outputs NaN, as in float32;
    # the other channels are unaffected.
    x = bf16_values((2, 3, 4, 4), 8)
    x[0, 1, 2, 2] = float("nan")
    x[1, 2, 0, 0] = float("inf")
    out, mean, _ = fc.native_batch_norm(from_torch(x), None, None, None, None, True, MOMENTUM, EPS)
    ref = fc.native_batch_norm(from_torch(x.float()), None, None, None, None, True, MOMENTUM, EPS)
    np.testing.assert_array_equal(to_numpy(out), to_numpy(ref[0].to(fc.bfloat16)))
    np.testing.assert_array_equal(to_numpy(mean), to_numpy(ref[1].to(mean.dtype)))
    assert not np.isfinite(to_numpy(mean)[1:]).any() and np.isfinite(to_numpy(mean)[0])


def test_errors():
    x = fc.ones(2, 3, 4, dtype=fc.bfloat16)
    with pytest.raises(ValueError, match=r"^\[batch_norm\] weight must have shape \(3,\)"):
        fc.native_batch_norm(x, fc.ones(4), None, None, None, True, MOMENTUM, EPS)
    with pytest.raises(TypeError, match=r"^\[batch_norm\] bias must be float32 .*got bfloat16"):
        fc.native_batch_norm(x, fc.ones(3), fc.ones(3, dtype=fc.bfloat16), None, None, True, MOMENTUM, EPS)
    out, mean, invstd = fc.native_batch_norm(x, None, None, None, None, True, MOMENTUM, EPS)
    with pytest.raises(ValueError, match="grad_out shape"):
        fc._C._native_batch_norm_backward(out[:1], x, None, mean, invstd, True, True, True, True)
    with pytest.raises(TypeError, match="grad_out dtype float32 does not match input dtype bfloat16"):
        fc._C._native_batch_norm_backward(fc.ones(2, 3, 4), x, None, mean, invstd, True, True, True, True)


# The cpu's kernels per ISA, in child processes: a test of the host.
def test_every_cpu_capability_gives_the_same_values():
    """The base, AVX2 and AVX-512 loops and conversions agree (each in a child, helpers.run_with_capability)."""
    script = (
        "import json, flambeau_core as fc, numpy as np\n"
        "r = np.random.default_rng(0)\n"
        "x = fc.tensor(r.standard_normal((3, 4, 45, 50)).astype(np.float32) * 3 + 1).to(fc.bfloat16)\n"
        "g = fc.tensor(r.standard_normal((3, 4, 45, 50)).astype(np.float32)).to(fc.bfloat16)\n"
        "y, m, i = fc.native_batch_norm(x, fc.ones(4), fc.zeros(4), None, None, True, 0.1, 1e-5)\n"
        "gi, gw, gb = fc._C._native_batch_norm_backward(g, x, fc.ones(4), m, i, True, True, True, True)\n"
        "v = np.concatenate([np.array(memoryview(t.to(fc.float32))).ravel() for t in (y, m, i, gi, gw, gb)])\n"
        "print(json.dumps(v.tolist())); print(fc._C._cpu_capability())\n"
    )
    results = {}
    for cap in ("base", "avx2", "avx512"):
        results[cap] = np.array(json.loads(run_with_capability(cap, script).splitlines()[-2]))
    ref = results["base"]
    for cap, v in results.items():
        # The float32 loops' partial sums differ by the vector width (Note [Normalization kernels]):
        # statistics and gradients agree to float32 rounding, outputs within one bfloat16 ulp.
        np.testing.assert_allclose(v, ref, rtol=2**-7, atol=1e-5, err_msg=cap)


def test_every_cpu_capability_rounds_as_its_float32_kernel():
    """Each capability's fused loops (NormBf16Fns: the float32 row loop rounding each result to bfloat16 as it
    computes it) give the bits of that capability's float32 kernel on the same values rounded once by
    ``.to(bfloat16)``: rows longer than one block and of odd lengths, NaN and infinite inputs, results that
    round up to infinity and float32 subnormal results (vcvtneps2bf16's own route skips those). A NaN is
    compared as NaN: which operand's sign an invalid operation (inf - inf) passes on depends on the order
    the compiler gives the operands in each loop, in float32 as well."""
    script = (
        "import flambeau_core as fc, numpy as np\n"
        "def bits(t):\n"
        "    v = np.array(memoryview(t.to(fc.float32).contiguous()))\n"
        "    return np.where(np.isnan(v), np.uint32(0x7FC00000), v.view(np.uint32))\n"
        "r = np.random.default_rng(5)\n"
        "for shape in ((3, 4, 45, 50), (2, 4, 7), (5, 4, 3, 3)):\n"
        "    xs = r.standard_normal(shape).astype(np.float32) * 3 + 1\n"
        "    xs[0, 3].flat[1] = np.nan\n"
        "    xs[1, 2].flat[0] = np.inf\n"
        "    x = fc.tensor(xs).to(fc.bfloat16)\n"
        "    g = fc.tensor(r.standard_normal(shape).astype(np.float32)).to(fc.bfloat16)\n"
        "    w = fc.tensor(np.array([1.5, 3e38, -2.0, 1e-39], dtype=np.float32))\n"
        "    b = fc.tensor(np.array([0.25, 0.0, 1.0, 0.0], dtype=np.float32))\n"
        "    rm = fc.tensor(np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32))\n"
        "    rv = fc.tensor(np.array([1.0, 4.0, 0.5, 2.0], dtype=np.float32))\n"
        "    x32, g32 = x.to(fc.float32), g.to(fc.float32)\n"
        "    for training in (True, False):\n"
        "        y, m, i = fc.native_batch_norm(x, w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5)\n"
        "        y32, m32, i32 = fc.native_batch_norm(x32, w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5)\n"
        "        assert (bits(y) == bits(y32.to(fc.bfloat16))).all(), (shape, training)\n"
        "        if not training:\n"
        "            m, i = rm, fc.rsqrt(rv + 1e-5)\n"
        "        gi, gw, gb = fc._C._native_batch_norm_backward(g, x, w, m, i, training, True, True, True)\n"
        "        ri, rw, rb = fc._C._native_batch_norm_backward(g32, x32, w, m, i, training, True, True, True)\n"
        "        assert (bits(gi) == bits(ri.to(fc.bfloat16))).all(), (shape, training)\n"
        "        assert (bits(gw) == bits(rw)).all() and (bits(gb) == bits(rb)).all(), (shape, training)\n"
        "    assert np.isinf(np.array(memoryview(y.to(fc.float32)))).any()\n"
        "print(fc._C._cpu_capability())\n"
    )
    for cap in ("base", "avx2", "avx512"):
        run_with_capability(cap, script)
