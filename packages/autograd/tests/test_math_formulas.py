"""The formulas of the elementwise math ops (sin ... erfinv, rounding, clamp,
atan2, hypot, fmod, remainder, div with rounding_mode, lerp, nan_to_num):
against PyTorch 2.13 and finite differences (float64), and at edge points."""

from __future__ import annotations

import math

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, make_inputs, to_np, torch

pytestmark = pytest.mark.on_devices


def inside(lo, hi):
    """Inputs in (lo, hi), away from the ends (finite differences need room)."""
    return lambda shape, rng: rng.uniform(lo + 0.05, hi - 0.05, size=shape)


normal = lambda shape, rng: rng.standard_normal(shape)  # noqa: E731
positive = inside(0.0, 3.0)
away_from_integers = lambda shape, rng: rng.integers(-3, 3, size=shape) + rng.uniform(0.1, 0.9, size=shape)  # noqa: E731

# (name, domain)
UNARY = [
    ("sin", normal),
    ("cos", normal),
    ("tan", inside(-1.4, 1.4)),
    ("asin", inside(-1, 1)),
    ("acos", inside(-1, 1)),
    ("atan", normal),
    ("sinh", normal),
    ("cosh", normal),
    ("asinh", normal),
    ("acosh", inside(1, 4)),
    ("atanh", inside(-1, 1)),
    ("expm1", normal),
    ("log1p", inside(-1, 3)),
    ("log2", positive),
    ("log10", positive),
    ("exp2", normal),
    ("erf", normal),
    ("erfc", normal),
    ("erfinv", inside(-1, 1)),
    ("rsqrt", positive),
    ("reciprocal", positive),
    ("sinc", normal),
    ("lgamma", away_from_integers),
    ("digamma", away_from_integers),
    ("i0", lambda shape, rng: rng.uniform(-25, 25, size=shape)),
    ("square", normal),
    ("frac", away_from_integers),
    ("floor", away_from_integers),
    ("ceil", away_from_integers),
    ("trunc", away_from_integers),
    ("round", away_from_integers),
    ("sign", normal),
]


@pytest.mark.parametrize("name,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_formula(name, domain):
    rng = np.random.default_rng(len(name) * 7 + ord(name[0]))
    a = domain((3, 4), rng)
    compare_with_torch(lambda x: getattr(x, name)(), lambda x: getattr(x, name)(), [a])
    # the function form, a non-contiguous input, and the in-place form on a non-leaf
    compare_with_torch(lambda x: getattr(fc, name)(x.t()), lambda x: getattr(torch, name)(x.t()), [a])
    if name in ("asinh", "acosh", "atanh"):
        # PyTorch 2.13 has no derivative for these in place; ours equals the out-of-place one
        t = torch.tensor(a, requires_grad=True)
        with pytest.raises(NotImplementedError, match=f"inplace version of {name}"):
            getattr(t * 1.0, name + "_")().sum().backward()
        compare_with_torch(lambda x: getattr(x * 1.0, name + "_")() * x, lambda x: getattr(x, name)() * x, [a])
        return
    compare_with_torch(lambda x: getattr(x * 1.0, name + "_")() * x, lambda x: getattr(x * 1.0, name + "_")() * x, [a])


@pytest.mark.parametrize(
    "name,points",
    [
        ("asin", [1.0, -1.0, 0.0]),
        ("acos", [1.0, -1.0]),
        ("atanh", [1.0, -1.0]),
        ("acosh", [1.0]),
        ("erfinv", [1.0, -1.0, 0.0]),
        ("sinc", [0.0, -0.0, 1.0]),
        ("rsqrt", [0.0, -0.0]),
        ("reciprocal", [0.0, -0.0]),
        ("log2", [0.0]),
        ("log1p", [-1.0]),
        ("sign", [0.0]),
        ("round", [0.5, 1.5]),
        ("floor", [2.0]),
    ],
)
def test_unary_gradient_at_edge_points(name, points):
    a = np.array(points)
    compare_with_torch(lambda x: getattr(x, name)(), lambda x: getattr(x, name)(), [a], gradcheck=False)


def test_nan_to_num_gradient_is_zero_at_nonfinite():
    a = np.array([math.nan, math.inf, -math.inf, 1.5, -2.0])
    compare_with_torch(lambda x: x.nan_to_num(), lambda x: x.nan_to_num(), [a], gradcheck=False)
    compare_with_torch(
        lambda x: fc.nan_to_num(x, nan=1.0, posinf=2.0), lambda x: torch.nan_to_num(x, 1.0, 2.0), make_inputs([(3,)])
    )


def test_clamp_formulas():
    a = make_inputs([(3, 4)], seed=2)[0]
    for lo, hi in ((-0.5, 0.5), (None, 0.3), (-0.2, None)):
        compare_with_torch(lambda x, lo=lo, hi=hi: x.clamp(lo, hi), lambda x, lo=lo, hi=hi: x.clamp(lo, hi), [a])
    compare_with_torch(lambda x: x.clamp_min(0.1), lambda x: x.clamp_min(0.1), [a])
    compare_with_torch(lambda x: fc.clamp_max(x, 0.1), lambda x: torch.clamp_max(x, 0.1), [a])
    # the bounds themselves pass the gradient (PyTorch: min <= x <= max)
    # (at the kinks finite differences see half a step: no gradcheck there)
    compare_with_torch(
        lambda x: x.clamp(0.0, 1.0), lambda x: x.clamp(0.0, 1.0), [np.array([0.0, 1.0, 2.0])], gradcheck=False
    )
    # tensor bounds: the gradient goes to whichever of input, min, max was chosen
    a, lo, hi = make_inputs([(3, 4), (4,), (3, 1)], seed=3)
    compare_with_torch(
        lambda x, p, q: x.clamp(p - 0.5, q + 0.5), lambda x, p, q: x.clamp(p - 0.5, q + 0.5), [a, lo, hi]
    )


def test_binary_formulas():
    a, b = make_inputs([(2, 3), (3,)], seed=4)
    compare_with_torch(fc.atan2, torch.atan2, [a, b])
    compare_with_torch(fc.hypot, torch.hypot, [a, b])
    pa, pb = make_inputs([(2, 3), (3,)], seed=5, positive=True)
    for name in ("fmod", "remainder"):
        # away from the jumps (where the quotient is an integer)
        compare_with_torch(getattr(fc, name), getattr(torch, name), [pa * 3.1, -pb])
        compare_with_torch(lambda x, name=name: getattr(x, name)(0.7), lambda x, name=name: getattr(x, name)(0.7), [pa])
    for mode in (None, "trunc", "floor"):
        compare_with_torch(
            lambda x, y, m=mode: fc.div(x, y, rounding_mode=m),
            lambda x, y, m=mode: torch.div(x, y, rounding_mode=m),
            [pa, pb],
        )


def test_atan2_and_hypot_at_the_origin():
    z = np.zeros(2)
    compare_with_torch(fc.atan2, torch.atan2, [z, z], gradcheck=False)
    x = fb_tensor(z, requires_grad=True)
    fc.hypot(x, x).sum().backward()
    t = torch.tensor(z, requires_grad=True)
    torch.hypot(t, t).sum().backward()
    np.testing.assert_array_equal(np.isnan(to_np(x.grad)), np.isnan(t.grad.numpy()))


def test_lerp_formulas():
    s, e, w = make_inputs([(3, 4), (4,), (3, 1)], seed=6)
    compare_with_torch(fc.lerp, torch.lerp, [s, e, w * 0.4])  # |w| < 0.5 and >= 0.5 both
    compare_with_torch(lambda x, y: x.lerp(y, 0.75), lambda x, y: x.lerp(y, 0.75), [s, e])


def test_non_differentiable_results():
    x = fb_tensor(np.array([1.5, math.nan]), requires_grad=True)
    for r in (x.isnan(), x.isinf(), x.isfinite(), x.logical_not(), fc.logical_and(x, x)):
        assert not r.requires_grad


def test_second_order_through_the_new_formulas():
    a = make_inputs([(4,)], seed=8, positive=True)[0] * 0.4
    for name in ("sin", "tan", "asin", "atanh", "erf", "erfinv", "rsqrt", "log1p", "expm1"):
        assert ag.gradgradcheck(lambda x, name=name: getattr(x, name)(), [fb_tensor(a, requires_grad=True)], atol=1e-4)
    b = make_inputs([(4,)], seed=9)[0]
    assert ag.gradgradcheck(fc.atan2, [fb_tensor(a, requires_grad=True), fb_tensor(b, requires_grad=True)], atol=1e-4)


# torch.special's functions: function form only (PyTorch has no method), a non-contiguous input, and
# second derivatives (digamma's gradient is polygamma(1), itself differentiable through zeta).
SPECIAL_UNARY = [
    ("special_i0e", lambda shape, rng: rng.uniform(-25, 25, size=shape)),
    ("special_i1", lambda shape, rng: rng.uniform(-25, 25, size=shape)),
    ("special_i1e", lambda shape, rng: rng.uniform(-25, 25, size=shape)),
    ("special_erfcx", lambda shape, rng: rng.uniform(-4, 30, size=shape)),
    ("special_ndtr", lambda shape, rng: rng.uniform(-6, 6, size=shape)),
    ("special_ndtri", inside(0, 1)),
    ("special_log_ndtr", lambda shape, rng: rng.uniform(-30, 6, size=shape)),
    ("special_entr", positive),
]


@pytest.mark.parametrize("name,domain", SPECIAL_UNARY, ids=[u[0] for u in SPECIAL_UNARY])
def test_special_unary_formula(name, domain):
    rng = np.random.default_rng(len(name) * 11 + ord(name[-1]))
    a = domain((3, 4), rng)
    th_fn = getattr(torch.special, name.removeprefix("special_"))
    compare_with_torch(getattr(fc, name), th_fn, [a])
    compare_with_torch(lambda x: getattr(fc, name)(x.t()), lambda x: th_fn(x.t()), [a])
    assert ag.gradgradcheck(getattr(fc, name), [fb_tensor(a[0], requires_grad=True)], atol=1e-4)


@pytest.mark.parametrize("name", ["special_i1", "special_i1e"])
def test_bessel_i1_gradient_at_zero(name):
    th_fn = getattr(torch.special, name.removeprefix("special_"))
    compare_with_torch(getattr(fc, name), th_fn, [np.array([0.0, -0.0, 1.0])], gradcheck=False)


def test_lgamma_digamma_polygamma_second_order():
    a = np.array([0.3, 1.7, 4.2, -0.6, -2.3])
    for fn in (fc.lgamma, fc.digamma, lambda x: fc.polygamma(2, x), lambda x: x.polygamma(1)):
        assert ag.gradgradcheck(fn, [fb_tensor(a, requires_grad=True)], atol=1e-4)
    for n in (0, 1, 2, 4):
        compare_with_torch(lambda x, n=n: fc.polygamma(n, x), lambda x, n=n: torch.polygamma(n, x), [a])


def test_mvlgamma_and_logit_formulas():
    a = np.random.default_rng(3).uniform(1.6, 6, size=(3, 4))
    for p in (1, 3):
        compare_with_torch(lambda x, p=p: fc.mvlgamma(x, p), lambda x, p=p: torch.mvlgamma(x, p), [a])
        compare_with_torch(lambda x, p=p: x.mvlgamma(p), lambda x, p=p: x.mvlgamma(p), [a])
    u = np.random.default_rng(4).uniform(0.05, 0.95, size=(3, 4))
    compare_with_torch(fc.logit, torch.logit, [u])
    # eps: 0 outside [eps, 1 - eps], PyTorch's logit_backward (gradcheck away from the kinks)
    compare_with_torch(lambda x: fc.logit(x, 0.2), lambda x: torch.logit(x, 0.2), [np.array([0.1, 0.5, 0.7, 0.9])])
    compare_with_torch(lambda x: x.logit(eps=0.01), lambda x: x.logit(eps=0.01), [u])


def test_xlogy_family_formulas():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 3)), rng.uniform(0.1, 3, size=(3,))
    compare_with_torch(fc.xlogy, torch.xlogy, [a, b])
    compare_with_torch(fc.special_xlog1py, torch.special.xlog1py, [a, b - 0.5])
    # x = 0: the gradient in x is still log(y) (log1p(y)), but 0 where y <= 0 (y <= -1) there
    z = np.array([0.0, 1.0, 0.0, 0.0, 0.0])
    y = np.array([2.0, 3.0, 0.5, 0.0, -1.0])
    compare_with_torch(fc.xlogy, torch.xlogy, [z, y], gradcheck=False)
    compare_with_torch(fc.special_xlog1py, torch.special.xlog1py, [z, y], gradcheck=False)
    compare_with_torch(lambda x, y: (x * 1.0).xlogy_(y) * x, lambda x, y: (x * 1.0).xlogy_(y) * x, [a, b])
    assert ag.gradgradcheck(fc.xlogy, [fb_tensor(a, requires_grad=True), fb_tensor(b, requires_grad=True)], atol=1e-4)


def test_zeta_formula():
    rng = np.random.default_rng(6)
    s, q = rng.uniform(1.5, 5, size=(3,)), rng.uniform(0.2, 4, size=(2, 3))
    # PyTorch has no derivative in s: only q is differentiable
    fb_q = fb_tensor(q, requires_grad=True)
    th_q = torch.tensor(q, requires_grad=True)
    fc.special_zeta(fb_tensor(s), fb_q).sum().backward()
    torch.special.zeta(torch.tensor(s), th_q).sum().backward()
    np.testing.assert_allclose(to_np(fb_q.grad), th_q.grad.numpy(), rtol=1e-10)
    assert ag.gradcheck(lambda x: fc.special_zeta(fb_tensor(s), x), [fb_tensor(q, requires_grad=True)])
    with pytest.raises(RuntimeError, match="the derivative for 'zeta' is not implemented"):
        torch.special.zeta(torch.tensor(s, requires_grad=True), torch.tensor(q)).sum().backward()
    with pytest.raises(NotImplementedError, match=r"\[special_zeta\] the derivative for 'zeta' is not implemented"):
        fc.special_zeta(fb_tensor(s, requires_grad=True), fb_tensor(q)).sum().backward()


def test_reciprocal_and_reflected_division_gradients_bitwise():
    # torch: -grad * (result * result); (-grad * result) * result rounds differently (3 / -3: 1 ulp).
    a = np.array([0.5, 2.0, -3.0, 7.0, 1 / 3, 1e-3, 65504.0], dtype=np.float32)
    g = np.array([3.0, 0.7, 3.0, 1.1, 0.3, 2.0, 0.1], dtype=np.float32)
    for f in (lambda x: x.reciprocal(), lambda x: 0.7 / x, lambda x: 3 / x):
        t = torch.tensor(a, requires_grad=True)
        f(t).backward(torch.tensor(g))
        x = fc.tensor(a).requires_grad_()
        f(x).backward(fc.tensor(g))
        np.testing.assert_array_equal(to_np(x.grad), t.grad.numpy())


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_addcmul_lerp_gradients(dtype):
    # The fused kernel's product rule (derivatives.yaml) and lerp's two branches, against torch.
    rng = np.random.default_rng(8)
    vals = [rng.standard_normal((5, 3)), rng.standard_normal((3,)), rng.standard_normal((5, 1))]
    vals.append(rng.uniform(-0.5, 1.5, (5, 3)))
    tdt = getattr(torch, dtype)
    theirs = [torch.tensor(v, dtype=tdt, requires_grad=True) for v in vals]
    ours = [fc.tensor(v, dtype=getattr(fc, dtype), requires_grad=True) for v in vals]
    tol = 1e-12 if dtype == "float64" else 2e-2
    for fn in (
        lambda m, x: m.addcmul(x[0], x[1], x[2], value=-0.7),
        lambda m, x: m.lerp(x[0], x[1].expand(5, 3), x[3]),
        lambda m, x: m.lerp(x[0], x[2].expand(5, 3), 0.8),
    ):
        for t in theirs + ours:
            t.grad = None
        fn(torch, theirs).sum().backward()
        fn(fc, ours).sum().backward()
        for t, o in zip(theirs, ours, strict=True):
            if t.grad is None:
                assert o.grad is None
                continue
            np.testing.assert_allclose(to_np(o.grad.to(fc.float64)), t.grad.double().numpy(), rtol=tol, atol=tol)
