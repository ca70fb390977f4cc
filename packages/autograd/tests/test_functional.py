"""flambeau_autograd.functional against torch.autograd.functional: values, the tuple/Tensor return
conventions, create_graph, strict mode and the errors."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch

F = ag.functional
TF = torch.autograd.functional


def assert_same(mine, theirs, rtol=1e-10, atol=1e-12):
    """Same nesting of tuples (a Tensor where torch returns a Tensor) and the same values.

    torch's forward-mode jacobian returns lists where its reverse mode returns tuples (an artefact of its
    vmap path); flambeau returns tuples for both strategies."""
    if isinstance(theirs, list):
        theirs = tuple(theirs)
    if isinstance(theirs, tuple):
        assert isinstance(mine, tuple) and len(mine) == len(theirs), (type(mine), len(theirs))
        for a, b in zip(mine, theirs, strict=True):
            assert_same(a, b, rtol, atol)
        return
    assert isinstance(mine, fc.Tensor), type(mine)
    assert tuple(mine.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(to_np(mine), theirs.detach().numpy(), rtol=rtol, atol=atol)


def both(*arrays):
    """The same float64 values as flambeau and torch tensors."""
    return tuple(fb_tensor(a) for a in arrays), tuple(torch.tensor(np.asarray(a), dtype=torch.float64) for a in arrays)


RNG = np.random.default_rng(7)
A, B = RNG.standard_normal((3, 2)), RNG.standard_normal(2)


def f_tt(x):  # tensor -> tensor
    return (x * x).tanh().sum(1)


def f_pair(x, y):  # tuple -> tensor
    return (x * y.exp()).sin().sum(0) + y


def f_two_out(x):  # tensor -> tuple
    return x.sum(0) * x[0], (x**3).sum()


def f_pair_two_out(x, y):  # tuple -> tuple
    return x @ y, (x * x).sum() * y


@pytest.mark.parametrize(
    "fn, args, as_tuple",
    [(f_tt, (A,), False), (f_pair, (A, B), True), (f_two_out, (A,), False), (f_pair_two_out, (A, B), True)],
    ids=["tensor-tensor", "tuple-tensor", "tensor-tuple", "tuple-tuple"],
)
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_matches_torch_and_its_return_convention(fn, args, as_tuple, strategy):
    (fb_args, t_args) = both(*args)
    fb_in, t_in = (fb_args, t_args) if as_tuple else (fb_args[0], t_args[0])
    vec = strategy == "forward-mode"
    assert_same(
        F.jacobian(fn, fb_in, strategy=strategy, vectorize=vec), TF.jacobian(fn, t_in, strategy=strategy, vectorize=vec)
    )


def rk4_step(y, h=0.1):
    """One Runge-Kutta step of a damped pendulum with a cubic spring."""

    def rhs(s):
        return (s.roll(-1, 0) * fc_or_torch(s).tensor([1.0, 0.0], dtype=s.dtype)) + (
            -(s.roll(1, 0).sin()) - 0.3 * s - 0.05 * s**3
        ) * fc_or_torch(s).tensor([0.0, 1.0], dtype=s.dtype)

    k1 = rhs(y)
    k2 = rhs(y + 0.5 * h * k1)
    k3 = rhs(y + 0.5 * h * k2)
    k4 = rhs(y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def fc_or_torch(t):
    return fc if isinstance(t, fc.Tensor) else torch


def test_jacobian_of_an_ode_step_matches_torch_and_finite_differences():
    y0 = np.array([0.8, -0.4])
    (fy,), (ty,) = both(y0)
    jac = F.jacobian(rk4_step, fy)
    assert_same(jac, TF.jacobian(rk4_step, ty))
    eps = 1e-6
    fd = np.stack(
        [
            (to_np(rk4_step(fb_tensor(y0 + eps * e))) - to_np(rk4_step(fb_tensor(y0 - eps * e)))) / (2 * eps)
            for e in np.eye(2)
        ],
        1,
    )
    np.testing.assert_allclose(to_np(jac), fd, rtol=1e-7)


def test_jacobian_create_graph_is_differentiable_like_torch():
    (fx,), (tx,) = both(A)
    fx.requires_grad_()
    tx.requires_grad_()
    jf = F.jacobian(f_tt, fx, create_graph=True)
    jt = TF.jacobian(f_tt, tx, create_graph=True)
    assert jf.requires_grad and not F.jacobian(f_tt, fx).requires_grad
    (jf * jf).sum().backward()
    (jt * jt).sum().backward()
    np.testing.assert_allclose(to_np(fx.grad), tx.grad.numpy(), rtol=1e-10)


def test_hessian_matches_torch():
    (fx, fy), (tx, ty) = both(A, B)

    def scalar(x, y):
        return ((x @ y).tanh() ** 2).sum() + (y.exp() * y).sum()

    assert_same(F.hessian(lambda x: (x.exp() * x).sum(), fx), TF.hessian(lambda x: (x.exp() * x).sum(), tx))
    assert_same(F.hessian(scalar, (fx, fy)), TF.hessian(scalar, (tx, ty)))
    assert to_np(F.hessian(lambda t: (t * 2.0).sum(), fx)).tolist() == np.zeros((3, 2, 3, 2)).tolist()
    xb = fb_tensor(B).requires_grad_()
    hc = F.hessian(lambda x: (x**4).sum(), xb, create_graph=True)
    assert hc.requires_grad and not F.hessian(lambda x: (x**4).sum(), xb).requires_grad
    (g,) = ag.grad(hc.sum(), xb)  # the trace-free sum of diag(12 x^2) differentiates to 24 x
    np.testing.assert_allclose(to_np(g), 24 * B)


def test_hessian_strategies_and_vectorize_give_torch_s_values():
    (fx, fy), (tx, ty) = both(A, B)

    def scalar(x, y):
        return (x.sin() @ y.exp()).sum() ** 2

    expected = TF.hessian(scalar, (tx, ty))
    assert_same(F.hessian(scalar, (fx, fy), vectorize=True), expected)
    assert_same(F.hessian(scalar, (fx, fy), vectorize=True, outer_jacobian_strategy="forward-mode"), expected)
    with pytest.raises(NotImplementedError, match=r"only implemented for `vectorize=True`"):
        F.hessian(scalar, (fx, fy), outer_jacobian_strategy="forward-mode")


@pytest.mark.parametrize("name", ["vjp", "jvp"])
def test_vjp_jvp_match_torch_with_tuples(name):
    (fx, fy), (tx, ty) = both(A, B)
    mine, theirs = getattr(F, name), getattr(TF, name)
    if name == "vjp":
        (fv1, fv2), (tv1, tv2) = both(RNG.standard_normal(3), RNG.standard_normal(2))
        assert_same(mine(f_pair_two_out, (fx, fy), (fv1, fv2)), theirs(f_pair_two_out, (tx, ty), (tv1, tv2)))
        assert_same(
            mine(f_tt, fx, fb_tensor(B.tolist() + [0.5])),
            theirs(f_tt, tx, torch.tensor(B.tolist() + [0.5], dtype=torch.float64)),
        )
    else:
        (fv1, fv2), (tv1, tv2) = both(RNG.standard_normal((3, 2)), RNG.standard_normal(2))
        assert_same(mine(f_pair_two_out, (fx, fy), (fv1, fv2)), theirs(f_pair_two_out, (tx, ty), (tv1, tv2)))
        assert_same(mine(f_tt, fx, fv1), theirs(f_tt, tx, tv1))
    out, g = (
        mine(lambda t: (t * t).sum(), fb_tensor([1.5])) if name == "vjp" else mine(lambda t: t * t, fb_tensor([1.5]))
    )
    assert to_np(g).tolist() == [3.0] and not out.requires_grad and not g.requires_grad


@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hvp_vhp_match_torch(name):
    (fx, fy, fv, fw), (tx, ty, tv, tw) = both(A, B, RNG.standard_normal((3, 2)), RNG.standard_normal(2))

    def scalar(x, y):
        return ((x @ y).sin() * (x**2).sum(1)).sum() + (y**3).sum()

    mine, theirs = getattr(F, name), getattr(TF, name)
    assert_same(mine(scalar, (fx, fy), (fv, fw)), theirs(scalar, (tx, ty), (tv, tw)))
    assert_same(mine(lambda x: (x**3).sum(), fx, fv), theirs(lambda x: (x**3).sum(), tx, tv))
    out, r = mine(lambda x: (x**3).sum(), fx.requires_grad_(), fv, create_graph=True)
    assert r.requires_grad
    (gx,) = ag.grad(r.sum(), fx)
    np.testing.assert_allclose(to_np(gx), 6 * to_np(fv))


def test_independent_inputs_give_zeros_or_raise_in_strict_mode():
    (fx, fy), (tx, ty) = both(A, B)

    def only_x(x, y):
        return x.sin()

    assert_same(F.jacobian(only_x, (fx, fy)), TF.jacobian(only_x, (tx, ty)))
    assert_same(F.vjp(only_x, (fx, fy), fc.ones(3, 2)), TF.vjp(only_x, (tx, ty), torch.ones(3, 2)))
    with pytest.raises(fc.FlambeauError, match=r"^\[autograd.functional.jacobian\] Output 0 .* independent of input 1"):
        F.jacobian(only_x, (fx, fy), strict=True)
    with pytest.raises(fc.FlambeauError, match=r"independent of input 1\. This is not allowed in strict mode"):
        F.vjp(only_x, (fx, fy), fc.ones(3, 2), strict=True)
    with pytest.raises(fc.FlambeauError, match=r"Output 0 of the user-provided function does not require gradients"):
        F.jacobian(lambda x: fc.ones(2), fx, strict=True)
    with pytest.raises(fc.FlambeauError, match=r"independent of input 1"):
        F.jvp(only_x, (fx, fy), (fx, fy), strict=True)


def test_errors_are_worded_as_torch():
    x = fb_tensor(A)
    with pytest.raises(fc.FlambeauError, match=r"^\[autograd.functional.vjp\] The vector v can only be None"):
        F.vjp(f_tt, x)
    with pytest.raises(fc.FlambeauError, match=r"^\[autograd.functional.jvp\] The vector v can only be None"):
        F.jvp(f_tt, x)
    with pytest.raises(fc.FlambeauError, match=r"v has invalid size: should be \(3,\) but got \(2,\)"):
        F.vjp(f_tt, x, fc.ones(2))
    with pytest.raises(fc.FlambeauError, match=r"v is a tuple of invalid length: should be 2 but got 1"):
        F.jvp(f_pair, (x, fb_tensor(B)), (x,))
    with pytest.raises(TypeError, match=r"The inputs given to jacobian must be either a Tensor or a tuple of Tensors"):
        F.jacobian(f_tt, [1.0, 2.0])
    with pytest.raises(TypeError, match=r"outputs of the user-provided function given to hessian"):
        F.hessian(lambda t: 3.0, x)
    with pytest.raises(fc.FlambeauError, match=r"The function given to hessian should return a single Tensor"):
        F.hessian(f_two_out, x)
    with pytest.raises(fc.FlambeauError, match=r"should contain a single element"):
        F.hvp(f_tt, x, x)
    with pytest.raises(fc.FlambeauError, match=r'Expected strategy to be either "forward-mode" or "reverse-mode"'):
        F.jacobian(f_tt, x, strategy="sideways")
    with pytest.raises(fc.FlambeauError, match=r"`strict=True` and `vectorized=True` are not supported together"):
        F.jacobian(f_tt, x, strict=True, vectorize=True)
    with pytest.raises(NotImplementedError, match=r"only implemented for `vectorize=True`"):
        F.jacobian(f_tt, x, strategy="forward-mode")


# --- vectorize=True: batched through flambeau.func when the meta-package registers it, else per element ------


@pytest.fixture
def unbatched():
    """vectorize=True as with flambeau-autograd alone: no batched Jacobian registered (the meta-package, when
    installed and imported, registers flambeau.func's)."""
    previous = F._register_vectorized_jacobian(None)
    yield
    F._register_vectorized_jacobian(previous)


@pytest.mark.parametrize(
    "fn, args, as_tuple",
    [(f_tt, (A,), False), (f_pair, (A, B), True), (f_two_out, (A,), False), (f_pair_two_out, (A, B), True)],
    ids=["tensor-tensor", "tuple-tensor", "tensor-tuple", "tuple-tuple"],
)
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_vectorized_jacobian_without_vmap_matches_torch_s_vectorized(unbatched, fn, args, as_tuple, strategy):
    (fb_args, t_args) = both(*args)
    fb_in, t_in = (fb_args, t_args) if as_tuple else (fb_args[0], t_args[0])
    assert_same(
        F.jacobian(fn, fb_in, vectorize=True, strategy=strategy),
        TF.jacobian(fn, t_in, vectorize=True, strategy=strategy),
    )


def test_forward_mode_jacobian_runs_one_pass_on_dual_tensors_per_input_element(unbatched, monkeypatch):
    made, calls = [], []
    make_dual = ag.forward_ad.make_dual
    monkeypatch.setattr(ag.forward_ad, "make_dual", lambda t, tangent, **kw: made.append(1) or make_dual(t, tangent))

    def counted(x, y):
        calls.append(1)
        return f_pair_two_out(x, y)

    (fx, fy), (tx, ty) = both(A, B)
    jac = F.jacobian(counted, (fx, fy), vectorize=True, strategy="forward-mode")
    assert_same(jac, TF.jacobian(f_pair_two_out, (tx, ty), vectorize=True, strategy="forward-mode"))
    assert len(made) == len(calls) == A.size + B.size  # one jvp per input element, no backward trick


def test_forward_mode_jacobian_inside_a_dual_level_still_matches_torch(unbatched):
    (fx, fy), (tx, ty) = both(A, B)
    with ag.forward_ad.dual_level():  # forward mode has one level: the Jacobian takes the double-backward trick
        jac = F.jacobian(f_pair, (fx, fy), vectorize=True, strategy="forward-mode")
    assert_same(jac, TF.jacobian(f_pair, (tx, ty), vectorize=True, strategy="forward-mode"))


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_vectorized_hessian_without_vmap_matches_torch(unbatched, strategy):
    (fx, fy), (tx, ty) = both(A, B)

    def scalar(x, y):
        return ((x @ y).tanh() ** 2).sum() + (y.exp() * y).sum()

    expected = TF.hessian(scalar, (tx, ty), vectorize=True, outer_jacobian_strategy=strategy)
    assert_same(F.hessian(scalar, (fx, fy), vectorize=True, outer_jacobian_strategy=strategy), expected)
    one = F.hessian(lambda x: (x.exp() * x).sum(), fx, vectorize=True, outer_jacobian_strategy=strategy)
    assert_same(one, TF.hessian(lambda x: (x.exp() * x).sum(), tx, vectorize=True, outer_jacobian_strategy=strategy))


def test_vectorized_create_graph_without_vmap_is_differentiable_like_torch(unbatched):
    (fx, fy), (tx, ty) = both(A, B)
    for t in (fx, fy, tx, ty):
        t.requires_grad_()
    jf = F.jacobian(f_pair_two_out, (fx, fy), create_graph=True, vectorize=True)
    jt = TF.jacobian(f_pair_two_out, (tx, ty), create_graph=True, vectorize=True)
    assert_same(jf, jt)
    sum(((a * a).sum() for row in jf for a in row), fc.zeros(())).backward()
    sum(((a * a).sum() for row in jt for a in row), torch.zeros((), dtype=torch.float64)).backward()
    np.testing.assert_allclose(to_np(fx.grad), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(to_np(fy.grad), ty.grad.numpy(), rtol=1e-10)


def test_forward_mode_hessian_errors_are_torch_s():
    x = fb_tensor(B)
    with pytest.raises(fc.FlambeauError, match=r"^\[autograd.functional.hessian\] `create_graph=True` and `strategy="):
        F.hessian(lambda t: (t**3).sum(), x, create_graph=True, vectorize=True, outer_jacobian_strategy="forward-mode")
    with pytest.raises(fc.FlambeauError, match=r"^\[autograd.functional.hessian\] `strict=True` and `strategy="):
        F.hessian(lambda t: (t**3).sum(), x, strict=True, vectorize=True, outer_jacobian_strategy="forward-mode")
