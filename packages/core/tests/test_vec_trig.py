"""float32 sin, cos and tan (the vectorised loops of src/cpu/elementwise/vec_trig.inc, Note [float32 sin/cos]):
error in ulps against the float64 result rounded nowhere (NumPy's float64 functions), over a
dense sample of every float32 in [-64, 64] at a stride, 2^20 random values of magnitudes up to
1e30, both sides of the two reduction bounds (2^17: float32 reduction, 2^22: double reduction,
beyond: the C library per lane), multiples of pi/2 near them; special values (signed zeros,
infinities, NaN, denormals); tails, misaligned starts, blocks mixing the routes; strided,
broadcast, out= and in-place calls; every capability the dispatcher can pick here (the avx2 and
base builds in a subprocess, FLAMBEAU_CPU_CAPABILITY); float64 sin, cos and tan (vectorised
too) against long double and mpmath; integer and half inputs still right."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import assert_unary_layouts, run_with_capability, to_numpy

OPS = ["sin", "cos", "tan"]
MAX_ULP = 2.0  # the contract; measured: sin 1.58, cos 1.57, tan 1.74 over every float32 below 2^22


def ulp_error(ours: np.ndarray, x: np.ndarray, op: str) -> np.ndarray:
    """|ours - f(x)| in units of the float32 ulp at f(x), f in float64; 0 where both are NaN."""
    with np.errstate(invalid="ignore"):
        ref = getattr(np, op)(x.astype(np.float64))
    _, e = np.frexp(np.abs(ref))
    ulp = np.ldexp(1.0, np.maximum(e - 24, -149))
    err = np.abs(ours.astype(np.float64) - ref) / ulp
    both_nan = np.isnan(ref) & np.isnan(ours)
    err[both_nan] = 0.0
    err[np.isnan(ref) != np.isnan(ours)] = np.inf
    return err


def dense_sample() -> np.ndarray:
    """Every 257th float32 in [0, 64] (by bit pattern), both signs: 8.6M values."""
    bits = np.arange(0, 0x42800001, 257, dtype=np.uint32)
    x = bits.view(np.float32)
    return np.concatenate([x, -x])


def random_sample(n: int = 1 << 20) -> np.ndarray:
    rng = np.random.default_rng(7)
    mag = np.exp2(rng.uniform(-40, np.log2(1e30), n))
    return (mag * rng.choice([-1.0, 1.0], n)).astype(np.float32)


def boundary_sample() -> np.ndarray:
    """Floats within 300 ulps of each reduction bound (2^17, 2^22), both signs, and the float32
    values nearest to multiples of pi/2 around the bounds and in between."""
    parts = []
    for b in (2.0**17, 2.0**22):
        c = np.array(b, np.float32).view(np.int32)
        parts.append(np.arange(c - 300, c + 300, dtype=np.int32).view(np.float32))
    ks = np.concatenate(
        [
            np.arange(1, 2000),
            np.arange(int(2**17 * 2 / np.pi) - 1000, int(2**17 * 2 / np.pi) + 1000),
            np.arange(int(2**22 * 2 / np.pi) - 1000, int(2**22 * 2 / np.pi) + 1000),
            np.random.default_rng(3).integers(1, int(2**23 * 2 / np.pi), 20000),
        ]
    )
    near = (ks * (np.pi / 2)).astype(np.float32)
    parts += [near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(0))]
    x = np.concatenate(parts)
    return np.concatenate([x, -x])


SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-40, -3e-39, 1.1754944e-38]
    + [3.4028235e38, -3.4028235e38],
    dtype=np.float32,
)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("sample", ["dense", "random", "boundary"])
def test_ulp_error(op, sample):
    x = {"dense": dense_sample, "random": random_sample, "boundary": boundary_sample}[sample]()
    err = ulp_error(to_numpy(getattr(fc, op)(fc.tensor(x))), x, op)
    worst = int(np.argmax(err))
    assert err[worst] <= MAX_ULP, f"{op}: {err[worst]:.3f} ulp at x={x[worst]!r} ({sample})"


@pytest.mark.parametrize("op", OPS)
def test_special_values(op):
    ours = to_numpy(getattr(fc, op)(fc.tensor(SPECIALS)))
    with np.errstate(invalid="ignore"):
        ref = getattr(np, op)(SPECIALS.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(ours[ok]), np.signbit(ref[ok]), err_msg=f"{op}: signs")
    np.testing.assert_allclose(ours[ok], ref[ok], rtol=2.5e-7, atol=0)
    # sin(+-0) and tan(+-0) keep the sign, cos(+-0) = 1, the infinities give NaN.
    z = to_numpy(getattr(fc, op)(fc.tensor(np.array([0.0, -0.0], np.float32))))
    if op == "cos":
        np.testing.assert_array_equal(z, [1.0, 1.0])
    else:
        np.testing.assert_array_equal(np.signbit(z), [False, True])
    assert np.isnan(to_numpy(getattr(fc, op)(fc.tensor(np.array([np.inf, -np.inf, np.nan], np.float32))))).all()
    # Denormal inputs: sin(x) = tan(x) = x, cos(x) = 1 exactly.
    d = np.array([1e-45, -1e-45, 5e-39, -1.1e-38], np.float32)
    got = to_numpy(getattr(fc, op)(fc.tensor(d)))
    np.testing.assert_array_equal(got, np.ones_like(d) if op == "cos" else d)


@pytest.mark.parametrize("op", OPS)
def test_matches_torch(op):
    """Within 2 ulps of PyTorch's float32 result too (theirs and ours are each within ~1.6 of the
    exact value), the same NaN positions."""
    x = np.concatenate([random_sample(1 << 16), SPECIALS, boundary_sample()[:5000]])
    ours = to_numpy(getattr(fc, op)(fc.tensor(x)))
    theirs = getattr(torch, op)(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    ok = ~np.isnan(theirs)
    a = ours[ok].view(np.int32).astype(np.int64)
    b = theirs[ok].view(np.int32).astype(np.int64)
    a = np.where(a < 0, -(a & 0x7FFFFFFF), a)
    b = np.where(b < 0, -(b & 0x7FFFFFFF), b)
    assert np.abs(a - b).max() <= 3


@pytest.mark.parametrize("op", OPS)
def test_lengths_offsets_and_mixed_routes(op):
    """Every tail length around the vector widths and the 2048-element chunk, misaligned
    starts, and blocks where one lane past a bound sends the block to another route."""
    rng = np.random.default_rng(5)
    base = rng.uniform(-100, 100, 5000).astype(np.float32)
    for n in [*range(1, 40), 63, 64, 65, 2047, 2048, 2049, 4097]:
        for off in (0, 1, 3):
            x = base[off : off + n]
            err = ulp_error(to_numpy(getattr(fc, op)(fc.tensor(x))), x, op)
            assert err.max() <= MAX_ULP, (n, off)
    for lane_val in (2.0**17 + 1, 2.0**22 * 1.5, 1e30, np.inf, np.nan):
        for pos in (0, 7, 16, 2047, 2048, 4999):
            x = base.copy()
            x[pos] = lane_val
            ours = to_numpy(getattr(fc, op)(fc.tensor(x)))
            err = ulp_error(ours, x, op)
            assert err.max() <= MAX_ULP, (lane_val, pos)


@pytest.mark.parametrize("op", OPS)
def test_layouts_out_and_inplace(op):
    rng = np.random.default_rng(9)
    a = rng.uniform(-30, 30, (37, 53)).astype(np.float32)
    a[3, 4], a[10, 11] = 3e7, -np.inf  # blocks taking the per-lane route
    f = getattr(fc, op)
    expect = to_numpy(f(fc.tensor(np.ascontiguousarray(a.T))))
    # transposed (strided) input
    t = fc.tensor(a).t()
    np.testing.assert_array_equal(to_numpy(f(t)), expect)
    # sliced with a step, both dims
    np.testing.assert_array_equal(to_numpy(f(fc.tensor(a)[::2, 1::3])), to_numpy(f(fc.tensor(a[::2, 1::3].copy()))))
    # broadcast (stride 0) input
    row = fc.tensor(a[5]).expand(7, 53)
    np.testing.assert_array_equal(to_numpy(f(row)), np.broadcast_to(to_numpy(f(fc.tensor(a[5]))), (7, 53)))
    # out= (contiguous and strided)
    out = fc.empty((53, 37))
    r = f(t, out=out)
    assert r is out
    np.testing.assert_array_equal(to_numpy(out), expect)
    out2 = fc.empty((37, 53)).t()
    f(t, out=out2)
    np.testing.assert_array_equal(to_numpy(out2), expect)
    # in place, contiguous and on a transposed view
    y = fc.tensor(np.ascontiguousarray(a.T))
    getattr(y, op + "_")()
    np.testing.assert_array_equal(to_numpy(y), expect)
    z = fc.tensor(a)
    getattr(z.t(), op + "_")()
    np.testing.assert_array_equal(to_numpy(z), expect.T)
    err = ulp_error(expect, np.ascontiguousarray(a.T), op)
    assert err.max() <= MAX_ULP


@pytest.mark.parametrize("op", OPS)
def test_other_dtypes_unchanged(op):
    """float64 stays within 1e-15 of NumPy's; integer inputs compute in float32; float16 and
    bfloat16 go through float32 (test_half_math.py checks sin/cos exhaustively)."""
    rng = np.random.default_rng(2)
    x64 = rng.uniform(-1e3, 1e3, 1000)
    np.testing.assert_allclose(to_numpy(getattr(fc, op)(fc.tensor(x64))), getattr(np, op)(x64), rtol=1e-15, atol=1e-15)
    xi = np.arange(-500, 500, dtype=np.int64)
    got = getattr(fc, op)(fc.tensor(xi))
    assert got.dtype == fc.float32
    err = ulp_error(to_numpy(got), xi.astype(np.float32), op)
    assert err.max() <= MAX_ULP
    xh = torch.from_numpy(rng.uniform(-50, 50, 999).astype(np.float32)).to(torch.bfloat16)
    ours = to_numpy(getattr(fc, op)(fc.tensor(xh.float().numpy()).to(fc.bfloat16)).float())
    theirs = getattr(torch, op)(xh).float().numpy()
    np.testing.assert_allclose(ours, theirs, rtol=2 * 2.0**-8, atol=1e-6)


# ---- float64 sin, cos, tan (Note [float64 sin/cos]: vectorised on the FMA capabilities) ----

F64_OPS = ["sin", "cos", "tan"]
MAX_ULP64 = 2.0  # the contract; measured: sin 0.78, cos 0.76, tan 1.13


def ulp_error64(ours: np.ndarray, x: np.ndarray, op: str) -> np.ndarray:
    """|ours - f(x)| in float64 ulps of f(x), f in long double (NumPy's sinl/cosl, 64-bit mantissa
    on x86-64); 0 where both are NaN."""
    with np.errstate(invalid="ignore"):
        ref = getattr(np, op)(x.astype(np.longdouble))
    _, e = np.frexp(np.abs(ref).astype(np.float64))
    ulp = np.ldexp(1.0, np.maximum(e - 53, -1074)).astype(np.longdouble)
    err = (np.abs(ours.astype(np.longdouble) - ref) / ulp).astype(np.float64)
    err[np.isnan(ref) & np.isnan(ours)] = 0.0
    err[np.isnan(ref) != np.isnan(ours)] = np.inf
    return err


def f64_sample() -> np.ndarray:
    rng = np.random.default_rng(13)
    mag = np.exp2(rng.uniform(-60, 80, 1 << 19))
    x = mag * rng.choice([-1.0, 1.0], mag.size)
    dense = rng.uniform(-64, 64, 1 << 19)
    b = np.array(2.0**20).view(np.int64)
    edge = np.arange(b - 200, b + 200).view(np.float64)
    # the doubles nearest to multiples of pi/2 (r ~ 2^-30 .. 2^-60 relative), and their neighbours
    ks = np.concatenate([np.arange(1, 3000), rng.integers(1, int(2**20 * 2 / np.pi), 20000)])
    near = ks * (np.pi / 2)
    return np.concatenate([x, dense, edge, -edge, near, np.nextafter(near, np.inf), -near])


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="needs an 80-bit long double reference")
@pytest.mark.parametrize("op", F64_OPS)
def test_float64_ulp_error(op):
    x = f64_sample()
    err = ulp_error64(to_numpy(getattr(fc, op)(fc.tensor(x))), x, op)
    worst = int(np.argmax(err))
    assert err[worst] <= MAX_ULP64, f"{op}: {err[worst]:.3f} ulp at x={x[worst]!r}"


@pytest.mark.parametrize("op", F64_OPS)
def test_float64_hard_cases_mpmath(op):
    """Next to multiples of pi/2 the reduced argument cancels most bits: checked against mpmath."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 200
    ks = np.concatenate([np.arange(1, 200), np.random.default_rng(4).integers(1, int(2**20 * 2 / np.pi), 300)])
    near = ks * (np.pi / 2)
    x = np.concatenate([near, np.nextafter(near, np.inf), np.nextafter(near, 0), -near])
    ours = to_numpy(getattr(fc, op)(fc.tensor(x)))
    fn = getattr(mpmath, op)
    for xi, yi in zip(x.tolist(), ours.tolist(), strict=True):
        ref = fn(mpmath.mpf(xi))
        ulp = 2.0 ** (int(mpmath.floor(mpmath.log(abs(ref), 2))) - 52)
        assert abs(mpmath.mpf(yi) - ref) <= MAX_ULP64 * ulp, (op, xi, yi, ref)


@pytest.mark.parametrize("op", F64_OPS)
def test_float64_special_values_and_layouts(op):
    f = getattr(fc, op)
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-310, 2.0**20, -(2.0**20), 1e300])
    got = to_numpy(f(fc.tensor(sp)))
    with np.errstate(invalid="ignore"):
        ref = getattr(np, op)(sp)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(ref[ok]))
    np.testing.assert_allclose(got[ok], ref[ok], rtol=6.7e-16, atol=0)
    if op != "cos":
        np.testing.assert_array_equal(got[[5, 6, 7]], sp[[5, 6, 7]])  # sin(x) = tan(x) = x for denormals
    rng = np.random.default_rng(8)
    a = rng.uniform(-40, 40, (29, 41))
    a[2, 3] = 1e9  # a block on the per-lane route
    assert_unary_layouts(f, a)
    for n in [*range(1, 20), 1023, 1024, 1025, 3000]:
        x = rng.uniform(-10, 10, n)
        np.testing.assert_allclose(to_numpy(f(fc.tensor(x))), getattr(np, op)(x), rtol=6.7e-16, atol=1e-300)


SCRIPT = """
import sys
sys.path.insert(0, {here!r})
import numpy as np, flambeau_core as fc
import test_vec_trig as t
for op in t.OPS:
    for sample in (t.dense_sample, t.random_sample, t.boundary_sample):
        x = sample()
        err = t.ulp_error(t.to_numpy(getattr(fc, op)(fc.tensor(x))), x, op)
        assert err.max() <= t.MAX_ULP, (op, sample.__name__, err.max(), x[np.argmax(err)])
    t.test_special_values(op)
    t.test_lengths_offsets_and_mixed_routes(op)
    t.test_layouts_out_and_inplace(op)
for op in t.F64_OPS:
    if np.finfo(np.longdouble).nmant >= 63:
        t.test_float64_ulp_error(op)
    t.test_float64_special_values_and_layouts(op)
print(fc._C._cpu_capability())
"""


@pytest.mark.parametrize("cap", ["base", "avx2"])
def test_other_capabilities(cap):
    """The avx2 build (float32 and double reductions with FMA) and the baseline build (double
    reduction only, no FMA) pass the same checks."""
    run_with_capability(cap, SCRIPT)
