"""The Array API standard's floating-point special cases, element by element.

The standard lists, per element-wise function, what it returns for signed
zeros, infinities, NaN and a few exact points (``atan2(+0, -0) = +pi``,
``pow(NaN, 0) = 1``, ``floor_divide(-0, 1) = -0``, ...). Those lists are the
IEEE 754 / C99 Annex F rules, which NumPy implements. Rather than copying a
few hundred lines of the standard into a table, every function runs on the
full cross product of the special inputs the standard's cases are written in
(both signed zeros, both infinities, NaN, +-1, +-0.5, +-2, exact halves for
rounding, pi/2, the smallest normal and subnormal, the largest finite, ...)
and every result must match NumPy's exactly in class: NaN against NaN, the same
infinity, the same signed zero; elsewhere to a few ulps. So every special case
the standard lists is exercised; ``DEVIATIONS`` names the few where NumPy
itself does not follow the standard, with the standard's answer, checked on
its own.
"""

from __future__ import annotations

import math

import flambeau_core as fc
import flambeau_core.array_api as xp
import numpy as np
import pytest

SPECIAL = [
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    1.5,
    -1.5,
    2.5,
    -2.5,
    2.0,
    -2.0,
    3.0,
    -3.0,
    math.pi / 2,
    -math.pi / 2,
    math.pi,
    1e-300,
    -1e-300,
    5e-324,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    0.7,
    -0.7,
    10.0,
    -10.0,
]

UNARY = [
    "abs acos acosh asin asinh atan atanh ceil cos cosh exp expm1 floor isfinite isinf isnan log log1p log2 log10",
    "negative positive round sign signbit sin sinh sqrt square tan tanh trunc",
]
UNARY = " ".join(UNARY).split()
NUMPY_UNARY = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan"}
NUMPY_UNARY |= {"atanh": "arctanh"}

BINARY = "add atan2 copysign divide equal floor_divide greater greater_equal hypot less less_equal logaddexp".split()
BINARY += "maximum minimum multiply not_equal pow remainder subtract".split()
NUMPY_BINARY = {"atan2": "arctan2", "pow": "power"}


# Where NumPy's answer is not the standard's: the standard's result, else None.
def deviation(name: str, x: float, y: float) -> float | None:
    # floor_divide: the standard gives +-infinity for an infinite x1 over a finite nonzero x2 and a
    # signed zero for a finite nonzero x1 over an infinite x2 (what x1 / x2 gives); NumPy gives
    # NaN and -1/0 there.
    if name == "floor_divide":
        if math.isinf(x) and math.isfinite(y) and y != 0:
            return math.copysign(math.inf, x) * math.copysign(1.0, y)
        if math.isfinite(x) and x != 0 and math.isinf(y):
            return math.copysign(0.0, x) * math.copysign(1.0, y)
    return None


def _same(a: np.ndarray, b: np.ndarray, dtype) -> np.ndarray:
    """Element-wise: the same class (NaN, signed zero, signed infinity) and, for finite values, within a few ulps."""
    a = a.astype(np.float64) if a.dtype != np.bool_ else a
    b = b.astype(np.float64) if b.dtype != np.bool_ else b
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        return a == b
    both_nan = np.isnan(a) & np.isnan(b)
    exact = (a == b) & (np.signbit(a) == np.signbit(b))
    tol = 4 * np.finfo(dtype).eps * np.maximum(np.abs(b), np.finfo(dtype).tiny)
    close = np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0) & (np.abs(a - b) <= tol)
    return both_nan | exact | close


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_cases_match_ieee(name, dtype):
    values = np.array(SPECIAL, dtype=dtype)
    with np.errstate(all="ignore"):
        expected = getattr(np, NUMPY_UNARY.get(name, name))(values)
    got = getattr(xp, name)(xp.asarray(values.tolist(), dtype=getattr(fc, np.dtype(dtype).name)))
    got = np.array(got.tolist(), dtype=expected.dtype)
    ok = _same(got, expected, dtype)
    bad = [(float(v), float(g), float(e)) for v, g, e, k in zip(values, got, expected, ok, strict=True) if not k]
    assert not bad, f"{name} ({np.dtype(dtype).name}): (input, flambeau, standard) {bad}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", BINARY)
def test_binary_special_cases_match_ieee(name, dtype):
    a, b = np.meshgrid(np.array(SPECIAL, dtype=dtype), np.array(SPECIAL, dtype=dtype), indexing="ij")
    a, b = a.ravel(), b.ravel()
    with np.errstate(all="ignore"):
        expected = getattr(np, NUMPY_BINARY.get(name, name))(a, b)
    fdt = getattr(fc, np.dtype(dtype).name)
    got = getattr(xp, name)(xp.asarray(a.tolist(), dtype=fdt), xp.asarray(b.tolist(), dtype=fdt))
    got = np.array(got.tolist(), dtype=expected.dtype)
    ok = _same(got, expected, dtype)
    bad = [
        (float(x), float(y), float(g), float(e))
        for x, y, g, e, k in zip(a, b, got, expected, ok, strict=True)
        if not k and deviation(name, float(x), float(y)) is None
    ]
    assert not bad, f"{name} ({np.dtype(dtype).name}): (x1, x2, flambeau, standard) {bad[:12]} ({len(bad)} in all)"


def test_round_is_half_to_even():
    x = xp.asarray([0.5, 1.5, 2.5, -0.5, -2.5, 3.5])
    assert xp.round(x).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 4.0]
    assert math.copysign(1.0, xp.round(xp.asarray([-0.5])).tolist()[0]) == -1.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", BINARY)
def test_deviations_from_numpy_follow_the_standard(name, dtype):
    a, b = np.meshgrid(np.array(SPECIAL, dtype=dtype), np.array(SPECIAL, dtype=dtype), indexing="ij")
    cases = [(float(x), float(y)) for x, y in zip(a.ravel(), b.ravel(), strict=True)]
    cases = [(x, y, deviation(name, x, y)) for x, y in cases if deviation(name, x, y) is not None]
    if not cases:
        return
    fdt = getattr(fc, np.dtype(dtype).name)
    xs, ys, expected = zip(*cases, strict=True)
    got = getattr(xp, name)(xp.asarray(list(xs), dtype=fdt), xp.asarray(list(ys), dtype=fdt)).tolist()
    bad = [
        c for c, g in zip(cases, got, strict=True) if not (g == c[2] and math.copysign(1, g) == math.copysign(1, c[2]))
    ]
    assert not bad, f"{name}: (x1, x2, the standard's result) {bad[:8]}, flambeau gave {got[:8]}"


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_tanh_at_infinity_follows_the_standard(dtype):
    # the standard: tanh(+infinity + bj), b > 0 finite, is 1 + 0j (its conjugate and odd images for the
    # other signs); NumPy (C99's ctanh) gives the zero the sign of sin(2b) (1 - 0j at b = 2). Elsewhere NumPy's.
    b = [2.0, -2.0, 1.0, -1.0, 0.0, -0.0, 1e300, 3.0]
    cases = [complex(a, y) for a in (math.inf, -math.inf) for y in b] + [complex(1, 2), complex(-0.5, 3)]
    got = xp.tanh(xp.asarray(cases, dtype=getattr(xp, dtype))).tolist()
    for z, g in zip(cases[:-2], got[:-2], strict=True):
        want = complex(math.copysign(1.0, z.real), math.copysign(0.0, z.imag))
        assert g == want and math.copysign(1, g.imag) == math.copysign(1, want.imag), (z, g)
    assert np.tanh(np.complex128(complex(math.inf, 2.0))).imag == 0 and np.signbit(np.tanh(complex(math.inf, 2.0)).imag)
    rtol = 1e-6 if dtype == "complex64" else 1e-14
    np.testing.assert_allclose(got[-2:], np.tanh(np.array(cases[-2:], dtype=dtype)), rtol=rtol)
    # real input: flambeau's tanh
    assert xp.tanh(xp.asarray([math.inf, -math.inf, -0.0])).tolist() == [1.0, -1.0, -0.0]
