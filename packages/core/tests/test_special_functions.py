"""torch.special's Bessel and Airy functions and orthogonal polynomials (flambeau/special_functions.h):
float64 against mpmath at 40 digits (the Bessel and Airy functions follow Cephes, where PyTorch's port
is 1e-9..1e-6 off), float32, float64 and the special points (poles, infinities, NaN, negative and
non-integer degrees) against PyTorch 2.13, integer and number arguments, broadcasting, 0-d tensors,
out= and the errors.

(test_math_ops.py runs the unary ones against PyTorch over dtypes, shapes and layouts too.)"""

from __future__ import annotations

import math

import flambeau_core as fc
import mpmath
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

mpmath.mp.dps = 40

rng = np.random.default_rng(20261129)

UNARY = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
         "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"]  # fmt: skip
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
               "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]  # fmt: skip
# PyTorch's port of these drops the implicit leading 1 of Cephes' denominators
CEPHES_DENOMINATORS = {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai"}


def fb(name):
    return getattr(fc, "special_" + name)


def th(name):
    return getattr(torch.special, name)


def oscillating_envelope(x):
    # the size of the oscillating Bessel and Airy functions: their absolute error is relative to it
    return np.minimum(1.0, np.abs(x) ** -0.5)


# name -> (mpmath reference, inputs, the scale errors are relative to, or None: relative to the value)
def _positive():
    return np.concatenate([rng.uniform(0, 30, 300), 10 ** rng.uniform(-8, 2.8, 150), [1e-300, 2.0, 5.0, 5.0001]])


def _real():
    x = np.concatenate([rng.uniform(-30, 30, 300), rng.uniform(-6, 6, 200), 10 ** rng.uniform(-8, 4, 100)])
    return np.concatenate([x, -x[:100]])


MP_CASES = {
    "bessel_j0": (lambda x: mpmath.besselj(0, x), _real(), oscillating_envelope),
    "bessel_j1": (lambda x: mpmath.besselj(1, x), _real(), oscillating_envelope),
    "bessel_y0": (lambda x: mpmath.bessely(0, x), _positive(), oscillating_envelope),
    "bessel_y1": (lambda x: mpmath.bessely(1, x), _positive(), oscillating_envelope),
    "modified_bessel_k0": (lambda x: mpmath.besselk(0, x), _positive()[:-50], None),
    "modified_bessel_k1": (lambda x: mpmath.besselk(1, x), _positive()[:-50], None),
    "scaled_modified_bessel_k0": (
        lambda x: mpmath.besselk(0, x) * mpmath.exp(x),
        np.concatenate([_positive(), [1e5, 1e10]]),
        None,
    ),
    "scaled_modified_bessel_k1": (
        lambda x: mpmath.besselk(1, x) * mpmath.exp(x),
        np.concatenate([_positive(), [1e5, 1e10]]),
        None,
    ),
    "spherical_bessel_j0": (lambda x: mpmath.sin(x) / x if x else mpmath.mpf(1), _real(), oscillating_envelope),
    "airy_ai": (
        mpmath.airyai,
        np.concatenate([rng.uniform(-40, 2.09, 300), rng.uniform(-3, 3, 100), rng.uniform(2.09, 103, 100)]),
        lambda x: np.where(x < 0, np.abs(x) ** -0.25, np.inf),  # x > 0: relative (Ai decays)
    ),
}


def scaled_error(got, want, x, scale):
    assert np.array_equal(np.isfinite(got), np.isfinite(want))
    m = np.isfinite(want)
    s = np.abs(want[m]) if scale is None else np.maximum(np.abs(want[m]), np.minimum(scale(x[m]), 1e300))
    s = np.where(np.isinf(s), np.abs(want[m]), s)
    return float(np.max(np.abs(got[m] - want[m]) / np.maximum(s, 1e-300), initial=0.0))


@pytest.mark.parametrize("name", UNARY)
def test_float64_against_mpmath(name):
    ref, x, scale = MP_CASES[name]
    got = to_numpy(fb(name)(fc.tensor(x, dtype=fc.float64)))
    want = np.array([float(ref(mpmath.mpf(float(v)))) for v in x])
    # (x - pi/4 rounds: the phase of the Hankel form is ~1e-16 x off, as Cephes' and PyTorch's)
    tol = 1e-12 if name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1") else 1e-13
    assert scaled_error(got, want, x, scale) < tol


def test_pytorch_cephes_port_is_less_accurate_where_flambeau_follows_cephes():
    # between 2 and 10 (and below -2.09 for Ai) PyTorch loses the denominators' leading term: who is
    # right where the two disagree
    x = np.array([2.5, 4.0, 6.0, 9.0, -3.0, -5.0])
    refs = {"bessel_j0": lambda v: mpmath.besselj(0, v), "bessel_y1": lambda v: mpmath.bessely(1, v),
            "airy_ai": mpmath.airyai}  # fmt: skip
    for name, ref in refs.items():
        pts = x if name == "airy_ai" else x[x > 0]
        want = np.array([float(ref(mpmath.mpf(float(v)))) for v in pts])
        ours = np.max(np.abs(to_numpy(fb(name)(fc.tensor(pts, dtype=fc.float64))) / want - 1))
        theirs = np.max(np.abs(th(name)(torch.tensor(pts)).numpy() / want - 1))
        assert ours < 1e-14 and theirs > 1e-10, (name, ours, theirs)


UNARY_EDGES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 2.09, -2.09, 5.0, -5.0, 8.3203353, 103.892, 104.0, 700.0, 1e-6,
               -1e-6, 1e-30, 1e4, -1e4, 1e300, math.inf, -math.inf, math.nan]  # fmt: skip


@pytest.mark.parametrize("name", UNARY)
def test_unary_against_torch(name):
    x = np.concatenate([rng.uniform(-30, 30, 200), rng.uniform(-3, 3, 100), rng.uniform(0, 200, 50), UNARY_EDGES])
    for dt, tdt in ((fc.float32, torch.float32), (fc.float64, torch.float64)):
        got = fb(name)(fc.tensor(x, dtype=dt))
        assert got.dtype == dt
        got = to_numpy(got)
        want = th(name)(torch.tensor(x, dtype=tdt)).numpy()
        # NaN, the infinities and their signs exactly as PyTorch
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
        if dt == fc.float64:
            rtol, atol = (2e-5, 1e-6) if name in CEPHES_DENOMINATORS else (1e-12, 1e-300)
            atol = np.full(x.shape, atol)
        else:
            # float32 is computed in double and rounded once: the float64 values at the same points
            with np.errstate(over="ignore"):  # 1e300 is inf in float32
                x32 = x.astype(np.float32).astype(np.float64)
            once = to_numpy(fb(name)(fc.tensor(x32, dtype=fc.float64))).astype(np.float32)
            np.testing.assert_allclose(got, once, rtol=2e-7, atol=1e-37, equal_nan=True)
            # PyTorch computes in float32: its phase (x - pi/4, Ai's 2 |x|^1.5 / 3) is off by an ulp
            # of it for large |x|
            phase = np.abs(np.nan_to_num(x32, posinf=0.0, neginf=0.0)) ** (1.5 if name == "airy_ai" else 1.0)
            rtol, atol = 2e-5, 1e-6 + 2e-7 * phase
        m = np.isfinite(want)
        bad = np.abs(got[m] - want[m]) > atol[m] + rtol * np.abs(want[m])
        assert not bad.any(), (x[m][bad], got[m][bad], want[m][bad])


def test_unary_integer_zero_dim_out_and_errors():
    for name in UNARY:
        r = fb(name)(fc.tensor([1, 2, 3]))
        assert r.dtype == fc.float32
        np.testing.assert_allclose(to_numpy(r), th(name)(torch.tensor([1, 2, 3])).numpy(), rtol=2e-5)
        assert fb(name)(fc.tensor([True, False])).dtype == fc.float32
        s = fb(name)(fc.tensor(1.5, dtype=fc.float64))
        assert s.shape == () and s.dtype == fc.float64
        assert s.item() == pytest.approx(th(name)(torch.tensor(1.5, dtype=torch.float64)).item(), rel=2e-5)
        out = fc.empty(0, dtype=fc.float64)
        x = fc.tensor([[0.5, 3.0], [7.0, 40.0]], dtype=fc.float64)
        assert fb(name)(x, out=out) is out and tuple(out.shape) == (2, 2)
        np.testing.assert_array_equal(to_numpy(out), to_numpy(fb(name)(x)))
        # float32 input into a float64 out=, as PyTorch
        out64 = fc.empty(2, dtype=fc.float64)
        fb(name)(fc.tensor([0.5, 3.0]), out=out64)
        want = torch.empty(2, dtype=torch.float64)
        th(name)(torch.tensor([0.5, 3.0]), out=want)
        np.testing.assert_allclose(to_numpy(out64), want.numpy(), rtol=2e-5)
        with pytest.raises(TypeError, match=rf"\[special_{name}\]"):
            fb(name)(fc.tensor([1.0 + 1.0j]))


def test_flambeau_special_module_functions():
    # the module's names are the ops, under torch.special's names
    x = fc.tensor([0.5, 2.0, 9.0], dtype=fc.float64)
    for name in UNARY:
        np.testing.assert_array_equal(to_numpy(getattr(fc.special, name)(x)), to_numpy(fb(name)(x)))
    for name in POLYNOMIALS:
        np.testing.assert_array_equal(to_numpy(getattr(fc.special, name)(x, 3)), to_numpy(fb(name)(x, 3)))
        np.testing.assert_array_equal(
            to_numpy(getattr(fc.special, name)(x=x, n=fc.tensor(2))), to_numpy(fb(name)(x, 2))
        )


# ---- the polynomials ----

X_GRID = np.array([-2.5, -1.5, -1.0, -0.999, -0.7, -0.5, -0.25, -0.0, 0.0, 1e-20, 0.1, 0.25, 0.3, 0.5, 0.7, 0.75,
                   0.999, 1.0, 1.0 - 2**-53, 1.5, 2.0, 3.0, 40.0, math.inf, -math.inf, math.nan])  # fmt: skip
N_GRID = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.9, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.5, 20.0,
                   50.0, 127.0, 129.0, 200.0, 511.0, 513.0, 1000.0, math.nan, math.inf, -math.inf, 1e300])  # fmt: skip


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_against_torch(name):
    # the grid broadcasts x against n: ends, the trigonometric forms' thresholds, the Hermite limits,
    # negative, non-integer, NaN and infinite degrees, and overflow (inf, or NaN once inf - inf)
    x = X_GRID[:, None]
    for dt, tdt in ((fc.float64, torch.float64), (fc.float32, torch.float32)):
        got = fb(name)(fc.tensor(x, dtype=dt), fc.tensor(N_GRID, dtype=dt))
        assert got.dtype == dt and tuple(got.shape) == (len(X_GRID), len(N_GRID))
        got = to_numpy(got)
        want = th(name)(torch.tensor(x, dtype=tdt), torch.tensor(N_GRID, dtype=tdt)).numpy()
        if dt == fc.float64:
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
            # the same recurrences in the same type; the trigonometric forms are libm's in both
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
        else:
            # float32 recurrences that overflow: an ulp of difference (a fused multiply-add) moves
            # the step that reaches inf, and the next one gives NaN (inf - inf); both overflow.
            # Hermite's recurrence cancels: float32 rounding grows to ~1e-4 there.
            np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
            m = np.isfinite(want)
            np.testing.assert_allclose(got[m], want[m], rtol=2e-4, atol=1e-5)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_random_points(name):
    lo = 0.0 if name.startswith("shifted") else -1.0
    x = np.concatenate([rng.uniform(lo, 1.0, 200), rng.uniform(-4, 4, 100)])
    n = rng.integers(-2, 40, x.size).astype(np.float64)
    got = to_numpy(fb(name)(fc.tensor(x, dtype=fc.float64), fc.tensor(n, dtype=fc.float64)))
    want = th(name)(torch.tensor(x), torch.tensor(n)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11, equal_nan=True)


MP_POLYNOMIALS = {
    "chebyshev_polynomial_t": mpmath.chebyt,
    "chebyshev_polynomial_u": mpmath.chebyu,
    "hermite_polynomial_h": mpmath.hermite,
    "laguerre_polynomial_l": lambda n, x: mpmath.laguerre(n, 0, x),
    "legendre_polynomial_p": mpmath.legendre,
    "shifted_chebyshev_polynomial_t": lambda n, x: mpmath.chebyt(n, 2 * x - 1),
}


@pytest.mark.parametrize("name", sorted(MP_POLYNOMIALS))
def test_polynomials_against_mpmath(name):
    x = rng.uniform(0.0, 1.0, 60) if name.startswith("shifted") else rng.uniform(-1, 1, 60)
    for n in (0, 1, 2, 5, 9, 30):
        got = to_numpy(fb(name)(fc.tensor(x, dtype=fc.float64), n))
        want = np.array([float(MP_POLYNOMIALS[name](n, mpmath.mpf(float(v)))) for v in x])
        # absolute: near the zeros a polynomial of degree n has n * eps of rounding
        scale = max(1.0, float(np.max(np.abs(want))))
        assert np.max(np.abs(got - want)) < 1e-13 * scale * max(n, 1), (n,)


def test_polynomial_arguments_promote_like_torch():
    xs = [0.3, -0.6, 2.0]
    # (x, n): a number, or (values, dtype) made into a tensor of each library
    cases = [
        (([1, 2, 3], "int64"), ([2, 3, 4], "int64")),
        ((xs, "float32"), 3),
        ((xs, "float32"), 2.7),
        (0.5, ([2, 3, 4], "int64")),
        ((xs, "float32"), ([3.0], "float64")),
        ((xs, "float64"), (4, "int64")),
        ((0.25, "float64"), (5.0, "float64")),
        (([[0.1], [0.9]], "float32"), ([1, 2, 3], "int32")),
        (([True, False], "bool"), ([1, 2], "int64")),
    ]

    def make(lib, spec):
        return spec if not isinstance(spec, tuple) else lib.tensor(spec[0], dtype=getattr(lib, spec[1]))

    for name in POLYNOMIALS:
        for xspec, nspec in cases:
            got = fb(name)(make(fc, xspec), make(fc, nspec))
            want = th(name)(make(torch, xspec), make(torch, nspec))
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (name, got.dtype, want.dtype)
            assert tuple(got.shape) == tuple(want.shape)
            np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-6, atol=1e-6)


def test_polynomial_out_and_errors():
    x, n = fc.tensor([0.2, 0.4], dtype=fc.float64), fc.tensor([[1.0], [4.0]], dtype=fc.float64)
    for name in POLYNOMIALS:
        out = fc.empty(0, dtype=fc.float64)
        assert fb(name)(x, n, out=out) is out and tuple(out.shape) == (2, 2)
        np.testing.assert_array_equal(to_numpy(out), to_numpy(fb(name)(x, n)))
        with pytest.raises(TypeError, match=rf"\[special_{name}\]"):
            fb(name)(fc.tensor([1.0 + 1.0j]), 2)
        with pytest.raises(TypeError, match=rf"\[special_{name}\]"):
            fb(name)(fc.tensor([0.5]), fc.tensor([1.0 + 1.0j]))
    # numbers on both sides: PyTorch has no such overload
    with pytest.raises(TypeError):
        torch.special.chebyshev_polynomial_t(0.5, 2)
    with pytest.raises(TypeError, match=r"\[special.chebyshev_polynomial_t\] expected a Tensor for x or n"):
        fc.special.chebyshev_polynomial_t(0.5, 2)
