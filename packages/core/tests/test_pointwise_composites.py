"""The pointwise composites addcmul, addcdiv, rsub, float_power, fmax, fmin, heaviside, ldexp, logaddexp2,
gcd, lcm, deg2rad and rad2deg against PyTorch 2.13: values and dtypes over dtypes and broadcasting, special
values (NaN, inf, 0), the method, in-place and out= forms, and the errors for bad dtypes."""

from __future__ import annotations

import re

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import run_with_capability, to_numpy

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(11)
NAN, INF = float("nan"), float("inf")


def pair(values, dtype):
    return fc.tensor(values, dtype=getattr(fc, dtype)), torch.tensor(values, dtype=getattr(torch, dtype))


def assert_same(got, expected, rtol=1e-6):
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    if expected.dtype.is_floating_point:
        np.testing.assert_allclose(to_numpy(got, widen=True), expected.numpy(), rtol=rtol, atol=1e-6)
    else:
        np.testing.assert_array_equal(to_numpy(got), expected.numpy())


FLOATS = ["float32", "float64"]


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("value", [1, 0.5, -2])
def test_addcmul_addcdiv(name, dtype, value):
    a, b, c = RNG.standard_normal((3, 4)), RNG.standard_normal((4,)), RNG.uniform(0.5, 2, (3, 1))
    (fa, ta), (fb, tb), (fcc, tc) = pair(a, dtype), pair(b, dtype), pair(c, dtype)
    expected = getattr(torch, name)(ta, tb, tc, value=value)
    assert_same(getattr(fc, name)(fa, fb, fcc, value=value), expected)
    assert_same(getattr(fa, name)(fb, fcc, value=value), expected)
    target = fa.clone()
    assert getattr(target, name + "_")(fb, fcc, value=value) is target
    assert_same(target, expected)
    out = fc.empty(0, dtype=getattr(fc, dtype))
    getattr(fc, name)(fa, fb, fcc, value=value, out=out)
    assert_same(out, expected)


def bits(t):
    """A tensor's elements as integers of its width (torch or flambeau), for bit-for-bit comparison."""
    if not isinstance(t, torch.Tensor):
        t = torch.from_numpy(to_numpy(t, widen=True)).to(getattr(torch, str(t.dtype).split(".")[-1]))
    return t.detach().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]).numpy()


ROUNDING_DTYPES = ["float32", "float64", "float16", "bfloat16"]


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("dtype", ROUNDING_DTYPES)
def test_addcmul_addcdiv_lerp_round_as_torch(dtype):
    # PyTorch's CPU arithmetic (Note [Fused addcmul]): addcmul and lerp one fused multiply-add, addcdiv
    # self + (value * t1) / t2, float16/bfloat16 in float32 rounded once. Bit for bit on 20,000 elements,
    # contiguous, broadcast and strided.
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 100, 200)).astype(np.float32)
    c = rng.uniform(0.5, 2, (100, 200)).astype(np.float32)
    w = rng.uniform(-0.2, 1.2, (100, 200)).astype(np.float32)
    tdt = getattr(torch, dtype)
    ta, tb, tc, tw = (torch.from_numpy(x).to(tdt) for x in (a, b, c, w))
    fa, fb, fcc, fw = (fc.tensor(x.float().numpy()).to(getattr(fc, dtype)) for x in (ta, tb, tc, tw))
    cases = [
        (lambda m, x, y, z: m.addcmul(x, y, z, value=0.3), (0, 1, 2)),
        (lambda m, x, y, z: m.addcmul(x, y, z), (0, 1, 2)),
        (lambda m, x, y, z: m.addcmul(x, y[:1], z.T.contiguous().T, value=-1.5), (0, 1, 2)),
        (lambda m, x, y, z: m.addcdiv(x, y, z, value=0.3), (0, 1, 2)),
        (lambda m, x, y, z: m.addcdiv(x[:, ::2], y[:, 1::2], z[:, ::2], value=-2), (0, 1, 2)),
        (lambda m, x, y, z: m.lerp(x, y, 0.1), (0, 1, 2)),
        (lambda m, x, y, z: m.lerp(x, y, 0.9), (0, 1, 2)),
        (lambda m, x, y, z: m.lerp(x, y, -0.7), (0, 1, 2)),
        (lambda m, x, y, z: m.lerp(x, y, z), (0, 1, 3)),
        (lambda m, x, y, z: m.lerp(x[:, :1], y, z[0]), (0, 1, 3)),
    ]
    ours, theirs = (fa, fb, fcc, fw), (ta, tb, tc, tw)
    for k, (f, pick) in enumerate(cases):
        expected = f(torch, *(theirs[i] for i in pick))
        got = f(fc, *(ours[i] for i in pick))
        assert str(got.dtype).split(".")[-1] == dtype
        np.testing.assert_array_equal(bits(got), bits(expected), err_msg=f"case {k}")
    # In place: the optimizers' forms.
    in_place = [("addcmul_", (1, 2), {"value": 0.7}), ("addcdiv_", (1, 2), {"value": 0.7}), ("lerp_", (1, 3), {})]
    for name, args, kw in in_place:
        target, expected = ours[0].clone(), theirs[0].clone()
        getattr(target, name)(*(ours[i] for i in args), **kw)
        getattr(expected, name)(*(theirs[i] for i in args), **kw)
        np.testing.assert_array_equal(bits(target), bits(expected), err_msg=name)


@pytest.mark.on_devices(types=("cpu",))
def test_addcmul_fused_without_fma_instructions_gives_the_same_bits():
    # At the base capability the loop calls std::fma instead of the vfmadd it is compiled to on AVX2: a fused
    # multiply-add is exact either way, so the bits agree.
    script = """
import numpy as np, flambeau_core as fc
rng = np.random.default_rng(2)
a, b, c = (fc.tensor(rng.standard_normal(5000).astype(np.float32)) for _ in range(3))
r = fc._C._addcmul_fused(a, b, c, 0.3)
print(np.asarray(r.tolist(), dtype=np.float32).view(np.int32).sum(dtype=np.int64))
print(fc._C._cpu_capability())
"""
    here = run_with_capability("avx2", script).splitlines()[0]
    assert run_with_capability("base", script).splitlines()[0] == here


def test_addcmul_fused_refuses_integers():
    with pytest.raises(TypeError, match=r"_addcmul_fused"):
        fc._C._addcmul_fused(fc.tensor([1, 2]), fc.tensor([1, 2]), fc.tensor([1, 2]), 1)


def test_addcmul_fused_refuses_a_broadcast_shape_past_int64():
    huge = fc.empty(1).expand(2**62, 1)  # a view: nothing allocated
    with pytest.raises(RuntimeError, match=r"\[_addcmul_fused\] shape \(4611686018427387904, 4\) is too large"):
        fc._C._addcmul_fused(huge, fc.empty(1, 4), fc.empty(1), 1)


def test_addcmul_fused_meta_step():
    # Broadcast shape and promoted dtype without computing; the CPU kernel gives the same.
    meta = fc.empty(4, 1, 3, device="meta"), fc.empty(5, 1, device="meta", dtype=fc.float64)
    out = fc._C._addcmul_fused(*meta, fc.empty(3, device="meta"), 2)
    cpu = fc._C._addcmul_fused(fc.ones(4, 1, 3), fc.ones(5, 1, dtype=fc.float64), fc.ones(3), 2)
    assert out.is_meta and out.shape == cpu.shape == (4, 5, 3) and out.dtype == cpu.dtype == fc.float64
    assert to_numpy(cpu).tolist() == np.full((4, 5, 3), 3.0).tolist()
    with pytest.raises(RuntimeError, match=r"_addcmul_fused"):
        fc._C._addcmul_fused(fc.empty(4, device="meta"), fc.empty(3, device="meta"), fc.empty(4, device="meta"), 1)


def test_addcmul_promotes_and_addcdiv_refuses_integer_division():
    ours = fc.addcmul(fc.tensor([1, 2]), fc.tensor([1.5, 2.0]), fc.tensor([2, 2]))
    assert_same(ours, torch.addcmul(torch.tensor([1, 2]), torch.tensor([1.5, 2.0]), torch.tensor([2, 2])))
    assert_same(
        fc.addcmul(fc.tensor([1, 2]), fc.tensor([3, 4]), fc.tensor([2, 2]), value=3),
        torch.addcmul(torch.tensor([1, 2]), torch.tensor([3, 4]), torch.tensor([2, 2]), value=3),
    )
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        torch.addcdiv(torch.tensor([1.0]), torch.tensor([1]), torch.tensor([2]))
    with pytest.raises(TypeError, match=r"^\[addcdiv\] Integer division with addcdiv is no longer supported"):
        fc.addcdiv(fc.tensor([1.0]), fc.tensor([1]), fc.tensor([2]))


def test_rsub():
    fa, ta = pair([[1.0, 2.0], [3.0, 4.0]], "float32")
    fb, tb = pair([0.5, -1.0], "float32")
    assert_same(fc.rsub(fa, fb), torch.rsub(ta, tb))
    assert_same(fc.rsub(fa, fb, alpha=2), torch.rsub(ta, tb, alpha=2))
    assert_same(fc.rsub(fa, 5), torch.rsub(ta, 5))
    fi, ti = pair([1, 2], "int64")
    assert_same(fc.rsub(fi, 1.5), torch.rsub(ti, 1.5))
    assert_same(fc.rsub(fi, 3, alpha=2), torch.rsub(ti, 3, alpha=2))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_float_power(dtype):
    fa, ta = pair([[1, 2, 3], [4, 0, 2]], dtype)
    fb, tb = pair([2, 3, 1], "int64")
    assert_same(fc.float_power(fa, fb), torch.float_power(ta, tb))
    assert_same(fc.float_power(fa, 0.5), torch.float_power(ta, 0.5))
    assert_same(fc.float_power(2, fb), torch.float_power(2, tb))
    assert_same(fa.float_power(fb), ta.float_power(tb))
    out = fc.empty(0, dtype=fc.float64)
    fc.float_power(fa, fb, out=out)
    assert_same(out, torch.float_power(ta, tb))


def test_float_power_inplace_needs_float64():
    f64, t64 = pair([2.0, 3.0], "float64")
    assert f64.float_power_(2) is f64
    assert_same(f64, t64.float_power_(2))
    f32, t32 = pair([2.0, 3.0], "float32")
    with pytest.raises(RuntimeError, match="float_power_ has dtype Float but the operation's result requires"):
        t32.float_power_(2)
    with pytest.raises(TypeError, match=r"^\[float_power_\] the base given to float_power_ has dtype float32 but"):
        f32.float_power_(2)


def test_float_power_complex():
    fa = fc.tensor([1 + 1j, 2 - 1j], dtype=fc.complex64)
    ta = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex64)
    got, expected = fc.float_power(fa, 2), torch.float_power(ta, 2)
    assert str(got.dtype).endswith("complex128") and expected.dtype == torch.complex128
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["fmax", "fmin"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_fmax_fmin_nan(name, dtype):
    a = [1.0, NAN, NAN, -INF, 2.0, -0.0, 3.0]
    b = [NAN, 2.0, NAN, 1.0, 2.0, 0.0, INF]
    (fa, ta), (fb, tb) = pair(a, dtype), pair(b, dtype)
    assert_same(getattr(fc, name)(fa, fb), getattr(torch, name)(ta, tb))
    assert_same(getattr(fa, name)(fb), getattr(ta, name)(tb))


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_promote_and_broadcast(name):
    fa, ta = pair([[1, 5], [7, 2]], "int64")
    fb, tb = pair([3.0, NAN], "float32")
    assert_same(getattr(fc, name)(fa, fb), getattr(torch, name)(ta, tb))
    fi, ti = pair([1, 9, -3], "int32")
    fj, tj = pair([4, 2, -3], "int32")
    assert_same(getattr(fc, name)(fi, fj), getattr(torch, name)(ti, tj))
    out = fc.empty(0, dtype=fc.float32)
    getattr(fc, name)(fa, fb, out=out)
    assert_same(out, getattr(torch, name)(ta, tb))


def test_heaviside():
    for dtype in ["float32", "float64", "int64"]:
        fa, ta = pair([-2, 0, 3, 0], dtype)
        fv, tv = pair([5, 7, 9, 11], dtype)
        assert_same(fc.heaviside(fa, fv), torch.heaviside(ta, tv))
        assert_same(fa.heaviside(fv[:1]), ta.heaviside(tv[:1]))
    fa, ta = pair([-1.0, 0.0, NAN, INF], "float32")
    fv, tv = pair([0.5], "float32")
    assert_same(fc.heaviside(fa, fv), torch.heaviside(ta, tv))
    assert fa.heaviside_(fv) is fa
    assert_same(fa, ta.heaviside_(tv))
    with pytest.raises(RuntimeError, match="different dtypes"):
        torch.heaviside(torch.tensor([1.0]), torch.tensor([1]))
    with pytest.raises(TypeError, match=r"^\[heaviside\] is not yet implemented for tensors with different dtypes"):
        fc.heaviside(fc.tensor([1.0]), fc.tensor([1]))


def test_ldexp():
    for dtype in ["int64", "float32", "float64"]:
        fa, ta = pair([1, 3, -5, 0], dtype)
        fe, te = pair([3, -1, 10, 2], "int64")
        assert_same(fc.ldexp(fa, fe), torch.ldexp(ta, te))
        assert_same(fa.ldexp(fe), ta.ldexp(te))
    fa, ta = pair([1.5, 2.0], "float64")
    fe, te = pair([2.0, -3.0], "float64")
    assert fa.ldexp_(fe) is fa
    assert_same(fa, ta.ldexp_(te))


@pytest.mark.parametrize("dtype", FLOATS)
def test_logaddexp2(dtype):
    a = [1000.0, 3.0, -INF, INF, -INF, 0.0, -50.0, NAN]
    b = [1000.0, 1.0, -INF, INF, 2.0, 60.0, -50.5, 1.0]
    (fa, ta), (fb, tb) = pair(a, dtype), pair(b, dtype)
    assert_same(fc.logaddexp2(fa, fb), torch.logaddexp2(ta, tb))
    assert_same(fa.logaddexp2(fb), ta.logaddexp2(tb))
    # Integers compute in the default float dtype (as logaddexp here; PyTorch's CPU kernel refuses them).
    fi, ti = pair([1, 2], "int64")
    assert_same(fc.logaddexp2(fi, fi), torch.logaddexp2(ti.float(), ti.float()))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_gcd_lcm(dtype):
    # lcm stays within the dtype (PyTorch's kernel and this one overflow differently).
    hi = 11 if dtype in ("uint8", "int8") else 40
    lo = 0 if dtype == "uint8" else -hi
    a = RNG.integers(lo, hi, (4, 5)).tolist()
    b = RNG.integers(lo, hi, (5,)).tolist()
    a[0][:3] = [0, 0, 7]
    b[:3] = [0, 5, 0]
    (fa, ta), (fb, tb) = pair(a, dtype), pair(b, dtype)
    for name in ("gcd", "lcm"):
        assert_same(getattr(fc, name)(fa, fb), getattr(torch, name)(ta, tb))
        assert_same(getattr(fa, name)(fb), getattr(ta, name)(tb))
        target = fa.clone()
        assert getattr(target, name + "_")(fb) is target
        assert_same(target, getattr(ta.clone(), name + "_")(tb))


def test_gcd_of_large_int64_and_errors():
    fa, ta = pair([2**62, 3 * 2**40, 1_000_000_007 * 3], "int64")
    fb, tb = pair([2**31, 2**45, 1_000_000_007 * 5], "int64")
    assert_same(fc.gcd(fa, fb), torch.gcd(ta, tb))
    assert_same(fc.gcd(fa[:0], fb[:0]), torch.gcd(ta[:0], tb[:0]))
    with pytest.raises(RuntimeError):
        torch.gcd(torch.tensor([1.0]), torch.tensor([2.0]))
    for name in ("gcd", "lcm"):
        with pytest.raises(TypeError, match=rf"^\[{name}\] expected integer tensors, got float32 and int64"):
            getattr(fc, name)(fc.tensor([1.0]), fc.tensor([2]))


@pytest.mark.parametrize("name", ["deg2rad", "rad2deg"])
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_deg2rad_rad2deg(name, dtype):
    fa, ta = pair([[0, 90, -180], [360, 45, 1]], dtype)
    assert_same(getattr(fc, name)(fa), getattr(torch, name)(ta))
    assert_same(getattr(fa, name)(), getattr(ta, name)())
    if dtype != "int64":
        assert getattr(fa, name + "_")() is fa
        assert_same(fa, getattr(ta, name + "_")())


def test_deg2rad_refuses_complex():
    with pytest.raises(RuntimeError, match="not supported for complex"):
        torch.deg2rad(torch.tensor([1j]))
    with pytest.raises(TypeError, match=re.escape("[deg2rad] is not supported for complex tensors")):
        fc.deg2rad(fc.tensor([1j]))
