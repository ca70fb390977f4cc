"""The special functions of the elementwise list and their composites (lgamma, digamma, polygamma,
mvlgamma, i0/i0e/i1/i1e, erfcx, ndtr/ndtri/log_ndtr, entr, logit, xlogy/xlog1py, zeta): float64
against mpmath at 40 digits over wide ranges (negative non-integer arguments, large arguments,
the tails), float32 and the poles against PyTorch 2.13, and the errors.

(test_math_ops.py runs every op of the shared list against PyTorch over dtypes, shapes and layouts,
with its in-place and out= forms.)"""

from __future__ import annotations

import math
import zlib

import flambeau_core as fc
import mpmath
import numpy as np
import pytest
import torch
from helpers import run_with_capability, to_numpy

pytestmark = pytest.mark.on_devices

mpmath.mp.dps = 40


def fb(name):
    return getattr(fc, name)


def th(name):
    return getattr(torch, name) if hasattr(torch, name) else getattr(torch.special, name.removeprefix("special_"))


def max_rel_error(got: np.ndarray, want: np.ndarray) -> float:
    assert np.array_equal(np.isfinite(got), np.isfinite(want)), (got[np.isfinite(got) != np.isfinite(want)],)
    m = np.isfinite(want)
    return float(np.max(np.abs(got[m] - want[m]) / np.maximum(np.abs(want[m]), 1e-300), initial=0.0))


def mp_bessel_i(nu, scaled):
    def f(x):
        v = mpmath.besseli(nu, x)
        return v * mpmath.exp(-abs(x)) if scaled else v

    return f


def mp_erfcx(x):
    return mpmath.exp(x * x) * mpmath.erfc(x)


def ndtri_reference(p):
    # 2p - 1 next to -1 needs as many digits as p has leading zeros
    with mpmath.workdps(340):
        return mpmath.sqrt(2) * mpmath.erfinv(2 * p - 1)


rng = np.random.default_rng(20261128)
WIDE = np.concatenate(
    [rng.uniform(-30, 30, 400), rng.uniform(-3, 3, 200), 10 ** rng.uniform(-200, 3, 100), rng.uniform(20, 700, 50)]
)
NEG_NON_INTEGER = -rng.integers(0, 60, 200) - rng.uniform(1e-6, 1 - 1e-6, 200)

# (op, mpmath reference, inputs, max relative error in float64)
MP_CASES = [
    ("digamma", mpmath.digamma, np.concatenate([WIDE, NEG_NON_INTEGER, [1e-300, 1e300]]), 1e-13),
    ("i0", mp_bessel_i(0, False), np.concatenate([WIDE, -WIDE[:50]]), 1e-14),
    ("special_i0e", mp_bessel_i(0, True), np.concatenate([WIDE, -WIDE[:50], [1e6, 1e300]]), 1e-14),
    ("special_i1", mp_bessel_i(1, False), np.concatenate([WIDE, -WIDE[:50]]), 1e-14),
    ("special_i1e", mp_bessel_i(1, True), np.concatenate([WIDE, -WIDE[:50], [1e6, -1e300]]), 1e-14),
    (
        "special_erfcx",
        mp_erfcx,
        np.concatenate([WIDE[WIDE > -26], rng.uniform(-26, 0, 100), [1e5, 1e10, 1e150]]),
        1e-14,
    ),
    ("special_ndtr", mpmath.ncdf, np.concatenate([rng.uniform(-8, 8, 300), [0.0, 37.0]]), 1e-13),
    (
        "special_log_ndtr",
        lambda x: mpmath.log(mpmath.ncdf(x)),
        np.concatenate([rng.uniform(-40, 10, 300), [-1e4]]),
        3e-14,
    ),
    (
        "special_ndtri",
        ndtri_reference,
        np.concatenate([rng.uniform(0, 1, 300), 10 ** rng.uniform(-300, -1, 100), [0.5, 0.5 + 1e-10]]),
        1e-14,
    ),
]


@pytest.mark.parametrize("name,ref,x,tol", MP_CASES, ids=[c[0] for c in MP_CASES])
def test_float64_against_mpmath(name, ref, x, tol):
    got = to_numpy(fb(name)(fc.tensor(x, dtype=fc.float64)))
    want = np.array([float(ref(mpmath.mpf(float(v)))) for v in x])
    assert max_rel_error(got, want) < tol


def test_lgamma_against_mpmath():
    # away from its zeros at 1 and 2 (there lgamma's relative error is libm's absolute one)
    x = np.concatenate([WIDE[np.abs(WIDE - 1.5) > 0.6], NEG_NON_INTEGER, [1e300]])
    got = to_numpy(fc.lgamma(fc.tensor(x, dtype=fc.float64)))
    want = np.array([float(mpmath.loggamma(mpmath.mpf(float(v))).real) for v in x])
    assert max_rel_error(got, want) < 1e-12


def test_digamma_next_to_its_poles_is_accurate():
    # PyTorch 2.13 reflects with tan(pi (x - trunc x)), which loses digits next to the poles
    # (relative error 4e-10 here); the distance to the nearest integer keeps them
    x = -np.arange(1, 40) + rng.uniform(-1e-5, 1e-5, 39)
    got = to_numpy(fc.digamma(fc.tensor(x, dtype=fc.float64)))
    want = np.array([float(mpmath.digamma(mpmath.mpf(float(v)))) for v in x])
    assert max_rel_error(got, want) < 1e-14
    assert max_rel_error(torch.digamma(torch.tensor(x)).numpy(), want) > 1e-12


ALL_UNARY = ["lgamma", "digamma", "i0", "special_i0e", "special_i1", "special_i1e", "special_erfcx",
             "special_ndtr", "special_ndtri", "special_log_ndtr", "special_entr"]  # fmt: skip


@pytest.mark.parametrize("name", ALL_UNARY)
def test_float32_and_special_points_against_torch(name):
    x = np.concatenate([rng.uniform(-30, 30, 300), rng.uniform(-3, 3, 300), rng.uniform(0, 1, 100)])
    # the poles and ends: PyTorch's signs of the infinities and its NaNs
    edges = [0.0, -0.0, -1.0, -2.0, -7.0, 1.0, 2.0, 0.5, math.inf, -math.inf, math.nan, 1e-30, -1e-30, 80.0, 100.0]
    x = np.concatenate([x, edges])
    if name in ("i0", "special_i1"):
        x = x[np.abs(x) < 88]  # float32: PyTorch computes e^x in float32, so it overflows an ulp early
    if name == "digamma":
        # next to the poles PyTorch's float32 reflection loses digits (test_digamma_next_to_its_poles...)
        x = x[(x >= 0) | (np.abs(x - np.round(x)) > 0.05) | ~np.isfinite(x) | (x == np.round(x))]
    got = fb(name)(fc.tensor(x, dtype=fc.float32))
    assert got.dtype == fc.float32
    want = th(name)(torch.tensor(x, dtype=torch.float32)).numpy()
    got = to_numpy(got)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    # float32 results are correctly rounded doubles here, PyTorch's float32 paths an ulp or two off;
    # digamma near its zeros compares absolutely
    # (PyTorch's float32 ndtr flushes the left tail below 1e-7 or so to 0: absolute there)
    atol = {"digamma": 2e-6, "special_ndtr": 1e-7}.get(name, 1e-30)
    # (and computes log_ndtr's right tail, -ndtr(-x), from its float32 erfc: a few ulps there)
    rtol = 2e-5 if name == "special_log_ndtr" else 4e-6
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    # float64 at the same points, poles included
    got64 = to_numpy(fb(name)(fc.tensor(x, dtype=fc.float64)))
    want64 = th(name)(torch.tensor(x, dtype=torch.float64)).numpy()
    np.testing.assert_array_equal(got64[np.isinf(want64)], want64[np.isinf(want64)])
    np.testing.assert_allclose(got64, want64, rtol=1e-9, atol=1e-12, equal_nan=True)


def test_integer_inputs_give_float32():
    for name in ALL_UNARY:
        r = fb(name)(fc.tensor([1, 2, 3]))
        assert r.dtype == fc.float32
        np.testing.assert_allclose(to_numpy(r), th(name)(torch.tensor([1, 2, 3])).numpy(), rtol=4e-6)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 9])
def test_polygamma(n):
    x = np.concatenate([rng.uniform(0.05, 30, 100), rng.uniform(-6, -0.05, 60)])
    x = x[np.abs(x - np.round(x)) > 0.02]
    want = np.array([float(mpmath.polygamma(n, mpmath.mpf(float(v)))) for v in x])
    got = to_numpy(fc.polygamma(n, fc.tensor(x, dtype=fc.float64)))
    assert max_rel_error(got, want) < 1e-12
    assert max_rel_error(to_numpy(fc.tensor(x, dtype=fc.float64).polygamma(n)), want) < 1e-12
    # float32 against PyTorch (away from the poles, where its trigamma is noisy)
    got32 = fc.polygamma(n, fc.tensor(x, dtype=fc.float32))
    assert got32.dtype == fc.float32
    want32 = torch.polygamma(n, torch.tensor(x, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(to_numpy(got32), want32, rtol=1e-4, atol=1e-5)
    t = fc.tensor(x, dtype=fc.float64)
    t.polygamma_(n)
    assert max_rel_error(to_numpy(t), want) < 1e-12


def test_polygamma_poles_and_errors():
    # at the non-positive integers the derivatives of digamma have poles: inf with PyTorch's sign
    # (its float64 trigamma gives 1.6e32 at -2 from sin(-2 pi) != 0; flambeau gives the pole)
    x = fc.tensor([0.0, -3.0], dtype=fc.float64)
    for n in (1, 2, 3):
        got = to_numpy(fc.polygamma(n, x))
        assert np.all(np.isinf(got))
        assert np.sign(got[0]) == np.sign(torch.polygamma(n, torch.tensor([0.0], dtype=torch.float64)).item())
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, torch.ones(2))
    with pytest.raises(ValueError, match=r"\[polygamma\] polygamma\(n, x\) does not support negative n, got n=-1"):
        fc.polygamma(-1, fc.ones(2))


def test_zeta():
    s = np.concatenate([rng.uniform(1.01, 30, 150), rng.integers(2, 12, 100).astype(float)])
    q = np.concatenate([rng.uniform(0.01, 50, 150), rng.uniform(-20, 20, 100)])
    keep = np.abs(q - np.round(q)) > 1e-3
    s, q = s[keep], q[keep]
    want = np.array([float(mpmath.zeta(mpmath.mpf(float(a)), mpmath.mpf(float(b)))) for a, b in zip(s, q, strict=True)])
    got = to_numpy(fc.special_zeta(fc.tensor(s, dtype=fc.float64), fc.tensor(q, dtype=fc.float64)))
    # q < 0 sums terms of both signs (odd s): a few digits cancel where the result is small
    assert max_rel_error(got[q > 0], want[q > 0]) < 1e-11
    assert max_rel_error(got[q < 0], want[q < 0]) < 1e-10
    # PyTorch's special points: s = 1 and the poles give inf, s < 1 and non-integer s at q < 0 NaN
    a = [1.0, 0.5, 2.0, 2.0, 2.5, 2.0, math.nan, math.inf]
    b = [1.0, 1.0, 0.0, -3.0, -1.5, math.inf, 1.0, 2.0]
    for dt, tdt in ((fc.float64, torch.float64), (fc.float32, torch.float32)):
        got = to_numpy(fc.special_zeta(fc.tensor(a, dtype=dt), fc.tensor(b, dtype=dt)))
        want = torch.special.zeta(torch.tensor(a, dtype=tdt), torch.tensor(b, dtype=tdt)).numpy()
        np.testing.assert_array_equal(got, want)
    # numbers on either side, as torch.special.zeta takes them
    np.testing.assert_allclose(
        to_numpy(fc.special_zeta(2, fc.tensor([1.0, 2.0]))), [math.pi**2 / 6, math.pi**2 / 6 - 1]
    )
    np.testing.assert_allclose(to_numpy(fc.special_zeta(fc.tensor([2.0, 4.0]), 1.0)), [math.pi**2 / 6, math.pi**4 / 90])


@pytest.mark.parametrize("name", ["xlogy", "special_xlog1py"])
def test_xlogy_family(name):
    a = np.array([0.0, 0.0, 0.0, 2.0, -1.5, 3.0, math.nan, 0.0, 1.0])
    b = np.array([0.0, math.nan, -1.0, 0.5, 4.0, math.inf, 1.0, math.inf, -0.5])
    for dt, tdt in ((fc.float64, torch.float64), (fc.float32, torch.float32)):
        got = getattr(fc, name)(fc.tensor(a, dtype=dt), fc.tensor(b, dtype=dt))
        want = th(name)(torch.tensor(a, dtype=tdt), torch.tensor(b, dtype=tdt))
        assert got.dtype == dt
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-6, equal_nan=True)
    # numbers, broadcasting, integer inputs
    np.testing.assert_allclose(
        to_numpy(getattr(fc, name)(2.0, fc.tensor([1.0, 3.0]))), th(name)(2.0, torch.tensor([1.0, 3.0])).numpy()
    )
    np.testing.assert_allclose(
        to_numpy(getattr(fc, name)(fc.tensor([[1], [2]]), 3)), th(name)(torch.tensor([[1], [2]]), 3).numpy()
    )
    assert getattr(fc, name)(fc.tensor([1, 2]), fc.tensor([3, 4])).dtype == fc.float32


def test_xlogy_inplace_and_method():
    t = fc.tensor([0.0, 2.0, 3.0])
    r = t.xlogy_(fc.tensor([5.0, 4.0, 1.0]))
    assert r is t
    np.testing.assert_allclose(to_numpy(t), [0.0, 2 * math.log(4.0), 0.0])
    np.testing.assert_allclose(to_numpy(fc.tensor([2.0]).xlogy(3.0)), [2 * math.log(3.0)], rtol=1e-6)


def test_entr():
    x = np.array([0.0, -0.0, 0.5, 1.0, 3.0, -1.0, math.inf, -math.inf, math.nan])
    got = to_numpy(fc.special_entr(fc.tensor(x, dtype=fc.float64)))
    np.testing.assert_array_equal(got, torch.special.entr(torch.tensor(x)).numpy())


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_mvlgamma(p):
    x = rng.uniform((p - 1) / 2 + 0.01, 20, size=(4, 5))
    for dt, tdt in ((fc.float64, torch.float64), (fc.float32, torch.float32)):
        got = fc.mvlgamma(fc.tensor(x, dtype=dt), p)
        want = torch.mvlgamma(torch.tensor(x, dtype=tdt), p)
        assert got.dtype == dt and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-5 if dt == fc.float32 else 1e-12)
    t = fc.tensor(x, dtype=fc.float64)
    t.mvlgamma_(p)
    np.testing.assert_allclose(to_numpy(t), torch.tensor(x).mvlgamma(p).numpy(), rtol=1e-12)


def test_mvlgamma_errors():
    # outside the domain x > (p - 1)/2 PyTorch 2.13 no longer raises: a pole of lgamma gives inf
    x = [0.5, 2.0, -1.5, 1.0]
    # (finite values to an ulp: flambeau's float32 lgamma terms are correctly rounded, PyTorch's not always)
    np.testing.assert_allclose(
        to_numpy(fc.mvlgamma(fc.tensor(x), 2)), torch.mvlgamma(torch.tensor(x), 2).numpy(), rtol=1.2e-7
    )
    with pytest.raises(ValueError, match=r"\[mvlgamma\] p has to be greater than or equal to 1"):
        fc.mvlgamma(fc.tensor([3.0]), 0)
    with pytest.raises(TypeError, match=r"\[mvlgamma\] expected a floating point input, got int64"):
        fc.mvlgamma(fc.tensor([3, 4]), 1)


def test_logit():
    x = np.array([0.0, 1e-8, 0.1, 0.5, 0.9, 1.0, -0.5, 1.5, math.nan])
    for eps in (None, 1e-6, 0.2):
        for dt, tdt in ((fc.float64, torch.float64), (fc.float32, torch.float32)):
            got = fc.logit(fc.tensor(x, dtype=dt), eps)
            want = torch.logit(torch.tensor(x, dtype=tdt), eps)
            assert got.dtype == dt
            np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=2e-6, equal_nan=True)
    np.testing.assert_allclose(to_numpy(fc.tensor([0.25]).logit()), [math.log(1 / 3)], rtol=1e-6)
    t = fc.tensor([0.25, 0.0], dtype=fc.float64)
    t.logit_(eps=0.1)
    np.testing.assert_allclose(to_numpy(t), [math.log(1 / 3), math.log(1 / 9)])
    assert fc.logit(fc.tensor([0, 1])).dtype == fc.float32


# ---- the vectorised CPU loops (Note [Vectorised special functions] in src/cpu/elementwise/vec_special.inc) ----
# lgamma, digamma, erfcx, log_ndtr, i0e, xlogy and xlog1py run branch-free double formulas that the AVX2 and
# AVX-512 loops vectorise; float32 computes in double lanes and rounds once. Errors are counted in ulps of
# the dtype at the exact value, or where a formula subtracts terms (the reflection below 0) at the size of
# those terms: the error there is absolute, as it was for std::lgamma's float32 and PyTorch's digamma.


def vec_rng(key: str) -> np.random.Generator:
    """A generator of its own per test and op: the inputs do not depend on which tests ran before."""
    return np.random.default_rng(zlib.crc32(key.encode()))


def ulp_of(w, dtype) -> mpmath.mpf:
    """The spacing of ``dtype`` at the exact value ``w`` (that of the denormals at least)."""
    info = np.finfo(dtype)
    tiny = mpmath.mpf(float(info.smallest_subnormal))
    if w == 0:
        return tiny
    return max(mpmath.mpf(2) ** (int(mpmath.floor(mpmath.log(abs(w), 2))) - info.nmant), tiny)


def ulp_errors(got, x, ref, scale, dtype) -> np.ndarray:
    """|got - ref(x)| in ulps of ``dtype`` at scale(x, ref(x)); NaN and overflowing references are matched
    exactly (NaN, the signed infinity)."""
    big = mpmath.mpf(float(np.finfo(dtype).max))
    errors = []
    for g, v in zip(np.asarray(got, np.float64).tolist(), np.asarray(x, np.float64).tolist(), strict=True):
        w = ref(mpmath.mpf(v))
        if mpmath.isnan(w):
            assert math.isnan(g), (v, g)
        elif mpmath.isinf(w) or abs(w) > big:
            assert g == (math.inf if w > 0 else -math.inf), (v, g, w)
        else:
            assert math.isfinite(g), (v, g, w)
            errors.append(float(abs(mpmath.mpf(g) - w) / ulp_of(scale(mpmath.mpf(v), w), dtype)))
    return np.array(errors)


def mp_lgamma(x):
    if x <= 0 and x == mpmath.floor(x):
        return mpmath.inf
    return mpmath.loggamma(x).real


def mp_digamma(x):
    if x <= 0 and x == mpmath.floor(x):
        return mpmath.nan  # PyTorch's value at the negative integers (the zeros are special points below)
    return mpmath.digamma(x)


def mp_erfcx_wide(x):
    # past 1e50 the asymptotic series' first term, 1/(x sqrt(pi)), holds every digit
    return 1 / (x * mpmath.sqrt(mpmath.pi)) if x > 1e50 else mp_erfcx(x)


def mp_log_ndtr(x):
    if x < -1e6:  # log Phi(x) = -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + ...)
        return -x * x / 2 - mpmath.log(-x * mpmath.sqrt(2 * mpmath.pi))
    if x > 40:  # -Phi(-x): below the smallest double
        return -mpmath.exp(-x * x / 2) / (x * mpmath.sqrt(2 * mpmath.pi))
    return mpmath.log(mpmath.ncdf(x)) if x <= 0 else mpmath.log1p(-mpmath.ncdf(-x))


def mp_i0e(x):
    return 1 / mpmath.sqrt(2 * mpmath.pi * abs(x)) if abs(x) > 1e50 else mp_bessel_i(0, True)(x)


def relative(x, w):
    return w


def lgamma_scale(x, w):
    # below 0: lgamma(x) = -log(|sin(pi x)| / pi) - lgamma(1 - x)
    return abs(w) + abs(mp_lgamma(1 - x)) if x < 0 else w


def digamma_scale(x, w):
    # below 0: psi(x) = psi(1 - x) - pi cot(pi x)
    if x < 0:
        return abs(w) + abs(mpmath.digamma(1 - x)) + abs(mpmath.pi * mpmath.cot(mpmath.pi * x))
    return w


def _signed(v):
    return np.concatenate([v, -v])


def vec_inputs(name):
    u = vec_rng(name).uniform
    if name in ("lgamma", "digamma"):
        near_integers = np.repeat(np.arange(-20.0, 4.0), 4) + _signed(10 ** u(-12, -2, 48))
        return np.concatenate(
            [u(-12, 12, 300), _signed(10 ** u(-320, 305, 60)), _signed(10 ** u(0, 15, 30)), near_integers,
             [0.5, 1.5, 2.5, 9.999999999, 10.0, 10.000000001, -0.5, -2.5, 1e-320, 5e-324, 1.4616321449683622]]
        )  # fmt: skip
    if name == "special_erfcx":
        return np.concatenate([u(-26.5, 30, 300), 10 ** u(-320, 308, 60), -(10 ** u(-320, 1.42, 60)), [0.0, -26.6]])
    if name == "special_log_ndtr":
        return np.concatenate([u(-45, 45, 300), _signed(10 ** u(-320, 300, 60)), [0.0, -1.0, 38.5, 39.0]])
    return np.concatenate([u(-40, 40, 300), _signed(10 ** u(-320, 308, 60)), [0.0, 8.0, 8.000000001]])


# op -> (mpmath reference, the scale of float64 errors, of float32 errors, max ulps in float64). float64
# lgamma redoes the lanes where its reflection cancels with the C library's lgamma (relative errors);
# float32 computes them in double, whose error is an ulp of lgamma(1 - x).
VEC_CASES = {
    "lgamma": (mp_lgamma, relative, lgamma_scale, 5),
    "digamma": (mp_digamma, digamma_scale, digamma_scale, 4),
    "special_erfcx": (mp_erfcx_wide, relative, relative, 5),
    "special_log_ndtr": (mp_log_ndtr, relative, relative, 6),
    "special_i0e": (mp_i0e, relative, relative, 6),
}


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("name", list(VEC_CASES))
def test_vectorised_float64_ulps_against_mpmath(name):
    ref, scale, _, bound = VEC_CASES[name]
    x = vec_inputs(name)  # (+-0, where mpmath has no sign, are special points below)
    errors = ulp_errors(to_numpy(fb(name)(fc.tensor(x, dtype=fc.float64))), x, ref, scale, np.float64)
    assert errors.max() <= bound, (errors.max(), x[np.argmax(errors)])


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("name", list(VEC_CASES))
def test_vectorised_float32_is_correctly_rounded_and_no_worse_than_torch(name):
    ref, _, scale, _ = VEC_CASES[name]
    with np.errstate(over="ignore"):
        x = vec_inputs(name).astype(np.float32)
    x = np.concatenate([x, np.array([1e-45, -1e-45, 1e-39, -3e-39], np.float32)])  # float32 denormals
    x = x[x != 0]  # (+-0, where mpmath has no sign, are special points below)
    got = to_numpy(fb(name)(fc.tensor(x)))
    assert got.dtype == np.float32
    errors = ulp_errors(got, x, ref, scale, np.float32)
    # a double result rounded once: half an ulp, and the double's error (2^-37 for lgamma's float32 series)
    # far below the next thousandth
    assert errors.max() <= 0.501, (errors.max(), x[np.argmax(errors)])
    ours_positive = ulp_errors(got[x > 0], x[x > 0], ref, relative, np.float32)
    torch_positive = ulp_errors(th(name)(torch.tensor(x[x > 0])).numpy(), x[x > 0], ref, relative, np.float32)
    assert ours_positive.max() <= max(torch_positive.max(), 0.501)


@pytest.mark.on_devices(types=("cpu",))
def test_vectorised_float32_lgamma_mixed_signs():
    # both signs in every block (the reflection's path, and float32's own log, log_lite_f64, for every
    # log of the formula), and x near the poles and zeros below 0: half an ulp at lgamma_scale, as above,
    # and no worse than PyTorch's float32 lgamma (the C library's lgammaf)
    u = vec_rng("lgamma float32 mixed").uniform
    x = np.concatenate([u(-30, 30, 3000), np.repeat(np.arange(-30.0, 0.0), 8) + u(-1e-3, 1e-3, 240)])
    x = np.concatenate([x, [-2.4570247, -2.7476826, -3.1435463, -3.9552505, 1e-30, -1e-30, 7.0, -6.0 + 2**-20]])
    x = x.astype(np.float32)
    got = to_numpy(fc.lgamma(fc.tensor(x)))
    errors = ulp_errors(got, x, mp_lgamma, lgamma_scale, np.float32)
    assert errors.max() <= 0.501, (errors.max(), x[np.argmax(errors)])
    theirs = ulp_errors(torch.lgamma(torch.from_numpy(x)).numpy(), x, mp_lgamma, lgamma_scale, np.float32)
    assert errors.max() <= max(theirs.max(), 0.501)


VEC_SPECIAL_POINTS = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -100.0, -(2.0**52), -(2.0**52) - 2, -(2.0**53), 2.0**52 + 1,
                      0.5, -0.5, -2.5, 1e-300, -1e-300, 5e-324, -5e-324, 1e308, -1e308, 26.6, -26.6, 40.0, -40.0,
                      math.inf, -math.inf, math.nan]  # fmt: skip


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("name", list(VEC_CASES))
def test_vectorised_special_points_match_torch(name):
    # poles, signed zeros, infinities, NaN, integers past 2^52, denormals: PyTorch's values and signs
    for dtype, tdtype in ((fc.float64, torch.float64), (fc.float32, torch.float32)):
        x = np.array(VEC_SPECIAL_POINTS)
        got = to_numpy(fb(name)(fc.tensor(x, dtype=dtype)))
        want = th(name)(torch.tensor(x, dtype=tdtype)).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{name} {dtype}")
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)], err_msg=f"{name} {dtype}")
        # (PyTorch's float32 digamma(-0.5) is 7 ulp off: its reflection runs in float32)
        np.testing.assert_allclose(got, want, rtol=4e-6 if dtype == fc.float32 else 1e-13, atol=0, equal_nan=True)


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("name", [*VEC_CASES, "xlogy", "special_xlog1py"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vectorised_tails_and_layouts_give_the_lanes_values(name, dtype):
    # lengths around the vector widths (4 to 16 lanes), strided, transposed and broadcast operands: each
    # element is its value in one long contiguous call, bit for bit
    binary = name in ("xlogy", "special_xlog1py")
    dt = getattr(fc, dtype)
    rng = vec_rng(name + dtype)
    x = rng.uniform(-15, 15, 4096)
    y = rng.uniform(-0.99, 15, 4096)

    def f(*args):
        return to_numpy(fb(name)(*args))

    def whole(a, b=None):
        return f(fc.tensor(a, dtype=dt), fc.tensor(b, dtype=dt)) if binary else f(fc.tensor(a, dtype=dt))

    full = whole(x, y)
    # (lgamma: blocks of 256 with no negative lane skip the reflection, the same values)
    positive = np.abs(x[:600])
    mixed = whole(np.concatenate([[-0.5], positive]), np.concatenate([y[:1], y[:600]]))
    np.testing.assert_array_equal(whole(positive, y[:600]), mixed[1:])
    for n in (1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 1027):
        np.testing.assert_array_equal(whole(x[:n], y[:n]), full[:n], err_msg=str(n))
    xt, yt = fc.tensor(x, dtype=dt), fc.tensor(y, dtype=dt)
    np.testing.assert_array_equal(f(xt[::3], yt[::3]) if binary else f(xt[::3]), full[::3])
    t2 = fc.tensor(x[:4096].reshape(64, 64), dtype=dt).t()
    u2 = fc.tensor(y[:4096].reshape(64, 64), dtype=dt).t()
    np.testing.assert_array_equal(f(t2, u2) if binary else f(t2), full.reshape(64, 64).T)
    one = fc.tensor(x[5:6], dtype=dt).expand(37)
    np.testing.assert_array_equal(f(one, yt[:37]) if binary else f(one), np.repeat(full[5], 37) if not binary else
                                  whole(np.repeat(x[5], 37), y[:37]))  # fmt: skip


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("name", ["xlogy", "special_xlog1py"])
def test_vectorised_xlogy_family_ulps(name):
    log = mpmath.log if name == "xlogy" else mpmath.log1p
    lo = 0.0 if name == "xlogy" else -1.0
    rng = vec_rng(name)
    a = np.concatenate([rng.uniform(-5, 5, 400), _signed(10 ** rng.uniform(-300, 300, 50))])
    b = np.concatenate(
        [rng.uniform(lo, 10, 200), 10 ** rng.uniform(-320, 300, 150), lo + 10 ** rng.uniform(-16, -1, 50),
         _signed(10 ** rng.uniform(-320, -5, 50))]
    )  # fmt: skip
    b = b[rng.permutation(b.size)]

    def ref(i):
        x, y = mpmath.mpf(float(a[int(i)])), mpmath.mpf(float(b[int(i)]))
        if y < lo:
            return mpmath.nan
        return mpmath.mpf(0) if x == 0 else x * (log(y) if y > lo else -mpmath.inf)

    idx = np.arange(a.size, dtype=np.float64)
    for dtype in (np.float64, np.float32):
        with np.errstate(over="ignore"):
            ad, bd = a.astype(dtype), b.astype(dtype)
        got = to_numpy(fb(name)(fc.tensor(ad), fc.tensor(bd)))
        assert got.dtype == dtype
        a, b = ad.astype(np.float64), bd.astype(np.float64)  # the reference at the rounded inputs
        errors = ulp_errors(got, idx, ref, relative, dtype)
        # float64: log's ulp and the product's half; float32: a double rounded once
        assert errors.max() <= (1.5 if dtype == np.float64 else 0.5001), (dtype, errors.max())
    # the rules: 0 where x is 0 (y infinite or at the pole too), NaN where y is NaN, PyTorch's values
    x = np.array([0.0, -0.0, 0.0, 0.0, 0.0, 2.0, 2.0, math.nan, 1.0, 3.0, -2.0])
    y = np.array([math.inf, lo, lo - 1, math.nan, 0.5, lo, math.inf, 1.0, -math.inf, 1e-310, 5e-324])
    for dtype, tdtype in ((fc.float64, torch.float64), (fc.float32, torch.float32)):
        got = to_numpy(fb(name)(fc.tensor(x, dtype=dtype), fc.tensor(y, dtype=dtype)))
        want = th(name)(torch.tensor(x, dtype=tdtype), torch.tensor(y, dtype=tdtype)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
        np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


VEC_SCRIPT = """
import sys
sys.path.insert(0, {here!r})
import flambeau_core as fc
import test_special as t
for name in t.VEC_CASES:
    t.test_vectorised_float64_ulps_against_mpmath(name)
    t.test_vectorised_float32_is_correctly_rounded_and_no_worse_than_torch(name)
    t.test_vectorised_special_points_match_torch(name)
for name in [*t.VEC_CASES, "xlogy", "special_xlog1py"]:
    for dtype in ("float32", "float64"):
        t.test_vectorised_tails_and_layouts_give_the_lanes_values(name, dtype)
for name in ("xlogy", "special_xlog1py"):
    t.test_vectorised_xlogy_family_ulps(name)
print(fc._C._cpu_capability())
"""


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("cap", ["base", "avx2"])
def test_vectorised_special_functions_on_other_capabilities(cap):
    """The AVX2 and baseline builds of the loops meet the same bounds (the default run is the widest)."""
    run_with_capability(cap, VEC_SCRIPT)
