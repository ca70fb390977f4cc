"""flambeau.func against torch.func on the same functions, in float64: grad, grad_and_value, vjp, jvp,
linearize, jacrev, jacfwd, hessian (nested, with pytrees, argnums and has_aux), functional_call and
stack_module_state on real modules, and the error paths."""

from __future__ import annotations

import flambeau as fb
import numpy as np
import pytest
import torch
from func_testing import close, pair

RNG = np.random.default_rng(25)


def _fb(t) -> fb.Tensor:
    return fb.tensor(np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t, dtype=np.float64))


def _pair(*shape):
    return pair(RNG, *shape)


_close = close


def lib(t):
    """torch for torch's tensors, flambeau otherwise (inside vmap, and so inside jacrev, an argument is a
    BatchedTensor, not an fb.Tensor)."""
    return torch if isinstance(t, torch.Tensor) else fb


# --- grad and grad_and_value ------------------------------------------------------------------


def loss_xy(x, y):
    return (lib(x).tanh(x @ y) ** 2).sum() + (y.exp() * y).sum()


def test_grad_argnums_and_has_aux_match_torch():
    (fx, tx), (fy, ty) = _pair(3, 2), _pair(2)
    for argnums in (0, 1, -1, (0, 1), (1, 0)):
        _close(fb.func.grad(loss_xy, argnums=argnums)(fx, fy), torch.func.grad(loss_xy, argnums=argnums)(tx, ty))

    def with_aux(x, y):
        return loss_xy(x, y), {"norm": (x * x).sum()}

    ours = fb.func.grad_and_value(with_aux, argnums=(0, 1), has_aux=True)(fx, fy)
    theirs = torch.func.grad_and_value(with_aux, argnums=(0, 1), has_aux=True)(tx, ty)
    (g, (value, aux)), (tg, (tvalue, taux)) = ours, theirs
    _close(g, tg)
    _close(value, tvalue)
    _close(aux["norm"], taux["norm"])
    g_aux, aux2 = fb.func.grad(with_aux, has_aux=True)(fx, fy)
    _close(g_aux, tg[0])
    assert not (g_aux.requires_grad or value.requires_grad or aux["norm"].requires_grad or aux2["norm"].requires_grad)


def test_grad_of_a_dict_of_parameters_and_kwargs():
    (fw, tw), (fb_, tb), (fx, tx) = _pair(4, 3), _pair(4), _pair(5, 3)

    def loss(params, x, *, scale):
        return (lib(x).sin(x @ params["w"].T + params["b"]) * scale).sum()

    ours = fb.func.grad(loss)({"w": fw, "b": fb_}, fx, scale=0.5)
    theirs = torch.func.grad(loss)({"w": tw, "b": tb}, tx, scale=0.5)
    _close(ours, theirs)


def test_nested_grad_matches_torch_and_keeps_levels_apart():
    fx, tx = _pair()
    for fn in (lambda x: x.sin() * x.exp(), lambda x: (x**5).tanh()):
        f1, t1 = fb.func.grad(fn), torch.func.grad(fn)
        _close(fb.func.grad(f1)(fx), torch.func.grad(t1)(tx))
        _close(fb.func.grad(fb.func.grad(f1))(fx), torch.func.grad(torch.func.grad(t1))(tx))

    # d/dx [ d/dy (x * y) at y = x ] = d/dx x = 1: the inner level must not differentiate the outer x
    def confusion(api):
        return api.grad(lambda x: api.grad(lambda y: (x * y).sum())(x).sum())

    _close(confusion(fb.func)(fx), confusion(torch.func)(tx))
    assert confusion(fb.func)(fx).item() == 1.0


def test_grad_of_a_tracked_input_stays_differentiable():
    x = fb.tensor([0.3, -1.1], requires_grad=True)
    tx = torch.tensor([0.3, -1.1], dtype=torch.float64, requires_grad=True)
    g = fb.func.grad(lambda t: (t**3).sum())(x.to(fb.float64))
    tg = torch.func.grad(lambda t: (t**3).sum())(tx)
    assert g.requires_grad
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def _compositions(api, f, x, w):
    """Transforms nested inside one another, differentiating each level's own inputs (closures included)."""
    return {
        "grad of a constant": lambda: api.grad(lambda t: (t * 0).sum() + 1.0)(x),
        "jacrev over a closure's grad": lambda: api.jacrev(lambda v: api.grad(lambda t: (v * t).sin().sum())(x))(w),
        "grad through jvp's tangent": lambda: api.grad(lambda t: api.jvp(f, (x,), (t,))[1].sum())(w),
        "grad through jvp's primal": lambda: api.grad(lambda p: api.jvp(f, (p,), (w,))[1].sum())(x),
        "grad through vjp": lambda: api.grad(lambda p: api.vjp(f, p)[1](w)[0].sum())(x),
        "grad through a cotangent": lambda: api.grad(lambda c: api.vjp(f, x)[1](c)[0].pow(2).sum())(w),
        "jacfwd of jacfwd": lambda: api.jacfwd(api.jacfwd(f))(x),
        "hessian with argnums": lambda: api.hessian(lambda a, b: (a * b.exp()).sum() ** 2, argnums=(0, 1))(x, w),
        "jacrev with chunk_size": lambda: api.jacrev(f, chunk_size=2)(x),
        "grad of grad of grad": lambda: api.grad(api.grad(api.grad(lambda t: (t**4).sum())))(x[0]),
    }


def _inside_vmap(api, f, xs, vs, w):
    """Transforms vmapped over a batch of samples (xs, vs: [4, 3]), with shared values (w: [3]) beside them."""

    def scalar(t):
        return f(t).sum()

    return {
        "vmap of jvp": lambda: api.vmap(lambda a, b: api.jvp(f, (a,), (b,)))(xs, vs),
        "vmap of jvp, shared tangent": lambda: api.vmap(lambda a: api.jvp(f, (a,), (w,))[1])(xs),
        "vmap of jvp, shared primal": lambda: api.vmap(lambda b: api.jvp(f, (w,), (b,))[1])(vs),
        "vmap of vjp": lambda: api.vmap(lambda a, c: api.vjp(f, a)[1](c)[0])(xs, vs),
        "vmap of vjp, shared cotangent": lambda: api.vmap(lambda a: api.vjp(f, a)[1](w)[0])(xs),
        "vmap of jacrev": lambda: api.vmap(api.jacrev(f))(xs),
        "vmap of jacfwd": lambda: api.vmap(api.jacfwd(f))(xs),
        "vmap of jacrev with argnums": lambda: api.vmap(api.jacrev(lambda a, b: f(a) * b, argnums=(0, 1)))(xs, vs),
        "vmap of hessian": lambda: api.vmap(api.hessian(scalar))(xs),
        "vmap of jacrev, a shared matrix": lambda: api.vmap(api.jacrev(lambda a: f(a) @ _outer(w)))(xs),
        "vmap of jvp, a shared matrix": lambda: api.vmap(lambda a, b: api.jvp(lambda t: t @ _outer(w), (a,), (b,)))(
            xs, vs
        ),
    }


def _outer(w):
    """A shared 3x3 matrix made from w (a product with it meets the shared-operand batching rules)."""
    return w.unsqueeze(0) * w.unsqueeze(1)


@pytest.mark.parametrize("case", list(_inside_vmap(fb.func, None, None, None, None)))
def test_transforms_inside_vmap_match_torch(case):
    rng = np.random.default_rng(31)
    (fx, tx), (fv, tv), (fw, tw) = pair(rng, 4, 3), pair(rng, 4, 3), pair(rng, 3)

    def f(x):
        return x.sin() * x.prod() + x

    close(_inside_vmap(fb.func, f, fx, fv, fw)[case](), _inside_vmap(torch.func, f, tx, tv, tw)[case]())


def _inside_nested_vmap(api, f, xs, vs, ws):
    """Transforms inside two and three levels of vmap (xs, vs: [2, 4, 3]; ws: [2, 3], batched at the outer
    level only), with values batched at one level and closures over the outer level's."""

    def scalar(t):
        return f(t).sum()

    vv = lambda g, **kw: api.vmap(api.vmap(g, **kw))  # noqa: E731
    return {
        "grad": lambda: vv(api.grad(scalar))(xs),
        "jacrev": lambda: vv(api.jacrev(f))(xs),
        "jacfwd": lambda: vv(api.jacfwd(f))(xs),
        "hessian": lambda: vv(api.hessian(scalar))(xs),
        "jvp": lambda: vv(lambda a, b: api.jvp(f, (a,), (b,)))(xs, vs),
        "vjp": lambda: vv(lambda a, c: api.vjp(f, a)[1](c)[0])(xs, vs),
        "grad of a value batched at the outer level only": lambda: api.vmap(
            lambda w, x: api.vmap(lambda b: api.grad(lambda p: (f(p) * b).sum())(w))(x)
        )(ws, xs),
        "grad over a closure of the outer level": lambda: api.vmap(
            lambda w, x: api.vmap(api.grad(lambda b: (f(b) * w).sum()))(x)
        )(ws, xs),
        "in_dims None at the inner level": lambda: api.vmap(
            api.vmap(api.grad(lambda a, w: (f(a) * w).sum()), in_dims=(0, None)), in_dims=(0, 0)
        )(xs, ws),
        "grad in three levels": lambda: api.vmap(vv(api.grad(scalar)))(xs.reshape(2, 2, 2, 3)),
    }


@pytest.mark.parametrize("case", list(_inside_nested_vmap(fb.func, None, None, None, None)))
def test_transforms_inside_nested_vmap_match_torch(case):
    rng = np.random.default_rng(37)
    (fx, tx), (fv, tv), (fw, tw) = pair(rng, 2, 4, 3), pair(rng, 2, 4, 3), pair(rng, 2, 3)

    def f(x):
        return x.sin() * x.prod() + x

    close(_inside_nested_vmap(fb.func, f, fx, fv, fw)[case](), _inside_nested_vmap(torch.func, f, tx, tv, tw)[case]())


@pytest.mark.parametrize("case", list(_compositions(fb.func, None, None, None)))
def test_compositions_match_torch(case):
    (fx, tx), (fw, tw) = _pair(3), _pair(3)

    def f(x):
        return x.sin() * x.prod()

    _close(_compositions(fb.func, f, fx, fw)[case](), _compositions(torch.func, f, tx, tw)[case]())


def test_transforms_run_under_no_grad():
    fx, tx = _pair(3)
    with fb.no_grad():
        ours = fb.func.grad(lambda x: (x**3).sum())(fx)
        hess = fb.func.hessian(lambda x: (x**3).sum())(fx)
    _close(ours, 3 * tx**2)
    _close(hess, torch.diag(6 * tx))
    assert not ours.requires_grad


# --- vjp, jvp, linearize ------------------------------------------------------------------------


def two_outputs(x, y):
    return {"prod": x @ y, "pair": ((x**2).sum(0), y.cos())}


def test_vjp_with_pytree_outputs_matches_torch():
    (fx, tx), (fy, ty) = _pair(3, 2), _pair(2)
    out, fn = fb.func.vjp(two_outputs, fx, fy)
    tout, tfn = torch.func.vjp(two_outputs, tx, ty)
    _close(out, tout)
    (c1, t1), (c2, t2), (c3, t3) = _pair(3), _pair(2), _pair(2)
    ct, tct = {"prod": c1, "pair": (c2, c3)}, {"prod": t1, "pair": (t2, t3)}
    _close(fn(ct), tfn(tct))
    _close(fn(ct), tfn(tct))  # vjp_fn can be called again
    out, fn, aux = fb.func.vjp(lambda x: (x.sin(), x.sum()), fx, has_aux=True)
    _close(fn(fb.ones(3, 2)), (torch.cos(tx),))
    _close(aux, tx.sum())


def test_jvp_and_linearize_match_torch():
    (fx, tx), (fy, ty), (fu, tu), (fv, tv) = _pair(3, 2), _pair(2), _pair(3, 2), _pair(2)
    _close(fb.func.jvp(two_outputs, (fx, fy), (fu, fv)), torch.func.jvp(two_outputs, (tx, ty), (tu, tv)))
    ours = fb.func.jvp(lambda x: (x.exp(), {"a": x.sum()}), (fx,), (fu,), has_aux=True)
    theirs = torch.func.jvp(lambda x: (x.exp(), {"a": x.sum()}), (tx,), (tu,), has_aux=True)
    _close(ours, theirs)
    out, jvp_fn = fb.func.linearize(two_outputs, fx, fy)
    tout, tjvp_fn = torch.func.linearize(two_outputs, tx, ty)
    _close(out, tout)
    _close(jvp_fn(fu, fv), tjvp_fn(tu, tv))
    _close(jvp_fn(fx, fy), tjvp_fn(tx, ty))


def test_jvp_of_grad_is_a_hessian_vector_product():
    (fx, tx), (fv, tv) = _pair(4), _pair(4)

    def f(x):
        return (x.sin() * x.roll(1, 0)).sum()

    _close(fb.func.jvp(fb.func.grad(f), (fx,), (fv,)), torch.func.jvp(torch.func.grad(f), (tx,), (tv,)))


class _SquareByForwardMode(fb.autograd.Function):
    """x * x whose backward must not run: jvp reaches it through dual tensors only."""

    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * x

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("backward ran")

    @staticmethod
    def jvp(ctx, t):
        return 2 * ctx.x * t


class _SquareByReverseMode(fb.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_jvp_is_one_forward_pass_on_dual_tensors():
    rng = np.random.default_rng(21)
    (fx, tx), (fv, tv) = pair(rng, 3), pair(rng, 3)
    ours = fb.func.jvp(lambda a: _SquareByForwardMode.apply(a).sin(), (fx,), (fv,))
    close(ours, torch.func.jvp(lambda a: (a * a).sin(), (tx,), (tv,)))


def test_jvp_falls_back_to_reverse_mode_with_a_warning_naming_what_lacks_forward_mode():
    rng = np.random.default_rng(22)
    (fx, tx), (fv, tv) = pair(rng, 2), pair(rng, 2)
    with pytest.warns(UserWarning, match=r"\[func.jvp\] \[_SquareByReverseMode\] a dual tensor .* defines no jvp"):
        ours = fb.func.jvp(_SquareByReverseMode.apply, (fx,), (fv,))
    close(ours, torch.func.jvp(lambda a: a * a, (tx,), (tv,)))


# --- jacrev, jacfwd, hessian ---------------------------------------------------------------------


def rk4_step(y, h=0.05):
    """One Runge-Kutta step of the Lorenz system."""
    t = lib(y)

    def rhs(s):
        x, yy, z = s[0], s[1], s[2]
        return t.stack([10.0 * (yy - x), x * (28.0 - z) - yy, x * yy - 8.0 / 3.0 * z])

    k1 = rhs(y)
    k2 = rhs(y + 0.5 * h * k1)
    k3 = rhs(y + 0.5 * h * k2)
    k4 = rhs(y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobian_of_an_ode_step_matches_torch(transform):
    fy, ty = fb.tensor([1.0, 2.0, 20.0], dtype=fb.float64), torch.tensor([1.0, 2.0, 20.0], dtype=torch.float64)
    jac = getattr(fb.func, transform)(rk4_step)(fy)
    _close(jac, getattr(torch.func, transform)(rk4_step)(ty))
    # and against the Jacobian of two steps by the chain rule
    two = getattr(fb.func, transform)(lambda y: rk4_step(rk4_step(y)))(fy)
    np.testing.assert_allclose(
        two.numpy(), fb.func.jacrev(rk4_step)(rk4_step(fy)).numpy() @ jac.numpy(), rtol=1e-10, atol=1e-10
    )


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobians_with_argnums_pytrees_and_aux_match_torch(transform):
    (fx, tx), (fy, ty) = _pair(3, 2), _pair(2)
    ours, theirs = getattr(fb.func, transform), getattr(torch.func, transform)
    for argnums in (0, 1, (0, 1)):
        _close(ours(two_outputs, argnums=argnums)(fx, fy), theirs(two_outputs, argnums=argnums)(tx, ty))
    params, tparams = {"a": fx, "b": [fy]}, {"a": tx, "b": [ty]}

    def f(p):
        return (p["a"] @ p["b"][0]).tanh(), p["b"][0].sum()

    _close(ours(f, has_aux=True)(params), theirs(f, has_aux=True)(tparams))


def test_nested_jacobians_match_torch():
    (fx, tx) = _pair(3)

    def f(x):
        return x.sin() * x.sum() + x.roll(1, 0) ** 3

    _close(fb.func.jacrev(fb.func.jacrev(f))(fx), torch.func.jacrev(torch.func.jacrev(f))(tx))
    _close(fb.func.jacfwd(fb.func.jacrev(f))(fx), torch.func.jacfwd(torch.func.jacrev(f))(tx))
    _close(fb.func.jacrev(fb.func.jacfwd(f))(fx), torch.func.jacrev(torch.func.jacfwd(f))(tx))
    _close(fb.func.jacfwd(fb.func.grad(lambda x: f(x).sum()))(fx), torch.func.hessian(lambda x: f(x).sum())(tx))


def mlp_pair(sizes, seed):
    """A flambeau and a torch MLP (Linear + tanh) with the same float64 weights."""
    torch.manual_seed(seed)
    layers, tlayers = [], []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=False)):
        t = torch.nn.Linear(a, b, dtype=torch.float64)
        f = fb.nn.Linear(a, b, dtype=fb.float64)
        f.load_state_dict({k: _fb(v) for k, v in t.state_dict().items()})
        layers.append(f)
        tlayers.append(t)
        if i < len(sizes) - 2:
            layers.append(fb.nn.Tanh())
            tlayers.append(torch.nn.Tanh())
    return fb.nn.Sequential(*layers), torch.nn.Sequential(*tlayers)


def test_hessian_of_a_small_network_matches_torch():
    model, tmodel = mlp_pair([3, 4, 1], seed=0)
    (fx, tx), (fy, ty) = _pair(5, 3), _pair(5, 1)
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}

    def loss(api, module):
        return lambda p, x, y: ((api.functional_call(module, p, (x,)) - y) ** 2).mean()

    ours = fb.func.hessian(loss(fb.func, model))(params, fx, fy)
    theirs = torch.func.hessian(loss(torch.func, tmodel))(tparams, tx, ty)
    _close(ours, theirs, rtol=1e-9)
    # the input Hessian of the network's output too (d^2 out / dx^2 for one sample)
    _close(
        fb.func.hessian(lambda x: model(x).sum())(fx[0]),
        torch.func.hessian(lambda x: tmodel(x).sum())(tx[0]),
        rtol=1e-9,
    )


def test_per_sample_gradients_of_an_mlp_match_torch_vmap():
    """Per-sample gradients without a Python loop over samples: the Jacobian of the vector of per-sample
    losses with respect to the parameters (torch: vmap of grad)."""
    model, tmodel = mlp_pair([6, 8, 3], seed=1)
    batch = 7
    (fx, tx) = _pair(batch, 6)
    labels = RNG.integers(0, 3, batch)
    fy, ty = fb.tensor(labels.tolist()), torch.tensor(labels)
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}

    def losses(p, x, y):
        return fb.nn.functional.cross_entropy(fb.func.functional_call(model, p, (x,)), y, reduction="none")

    ours = fb.func.jacrev(losses)(params, fx, fy)

    def tloss(p, x, y):
        out = torch.func.functional_call(tmodel, p, (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, y.unsqueeze(0))

    theirs = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tparams, tx, ty)
    _close(ours, theirs)
    # and the mean over samples is the ordinary gradient
    model.zero_grad()
    fb.nn.functional.cross_entropy(model(fx), fy).backward()
    for k, p in model.named_parameters():
        np.testing.assert_allclose(ours[k].numpy().mean(0), p.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_jacrev_of_a_linear_tanh_layer_matches_torch():
    (fw, tw), (fb_, tb), (fx, tx) = _pair(64, 48), _pair(64), _pair(48)

    def layer(x, w, b):
        return lib(x).tanh(w @ x + b)

    _close(fb.func.jacrev(layer)(fx, fw, fb_), torch.func.jacrev(layer)(tx, tw, tb))
    _close(fb.func.jacrev(layer, argnums=(1, 2))(fx, fw, fb_), torch.func.jacrev(layer, argnums=(1, 2))(tx, tw, tb))


# --- functional_call and stack_module_state ------------------------------------------------------


def batchnorm_pair():
    torch.manual_seed(3)
    t = torch.nn.Sequential(torch.nn.Linear(4, 3, dtype=torch.float64), torch.nn.BatchNorm1d(3, dtype=torch.float64))
    f = fb.nn.Sequential(fb.nn.Linear(4, 3, dtype=fb.float64), fb.nn.BatchNorm1d(3, dtype=fb.float64))
    f.load_state_dict({k: _fb(v) if v.is_floating_point() else fb.tensor(v.item()) for k, v in t.state_dict().items()})
    return f, t


@pytest.mark.parametrize("training", [True, False])
def test_functional_call_with_batchnorm_buffers_matches_torch(training):
    model, tmodel = batchnorm_pair()
    model.train(training)
    tmodel.train(training)
    (fx, tx) = _pair(6, 4)
    (fw, tw), (fm, tm) = _pair(3, 4), _pair(3)
    fvar, tvar = fb.tensor([0.5, 1.5, 2.0], dtype=fb.float64), torch.tensor([0.5, 1.5, 2.0], dtype=torch.float64)
    ours_state = {"0.weight": fw, "1.running_mean": fm.clone(), "1.running_var": fvar.clone()}
    theirs_state = {"0.weight": tw, "1.running_mean": tm.clone(), "1.running_var": tvar.clone()}
    own_weight, own_mean = model[0].weight, model[1].running_mean.clone()
    out = fb.func.functional_call(model, ours_state, (fx,))
    tout = torch.func.functional_call(tmodel, theirs_state, (tx,))
    _close(out, tout)
    # training updates the running statistics that were passed in, not the module's own
    _close(ours_state["1.running_mean"], theirs_state["1.running_mean"])
    _close(ours_state["1.running_var"], theirs_state["1.running_var"])
    assert model[0].weight is own_weight and model[1].running_mean.tolist() == own_mean.tolist()
    assert model[1].num_batches_tracked.item() == tmodel[1].num_batches_tracked.item()


def test_functional_call_restores_the_module_when_the_call_raises():
    model, _ = batchnorm_pair()
    own = dict(model.named_parameters())
    with pytest.raises(fb.FlambeauError):
        fb.func.functional_call(model, {"0.weight": fb.zeros(3, 4, dtype=fb.float64)}, (fb.zeros(6, 5),))
    assert all(p is own[k] for k, p in model.named_parameters())


def test_functional_call_tied_weights_strict_and_several_dicts():
    class Tied(fb.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = fb.nn.Linear(2, 2, bias=False)
            self.b = fb.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    w = fb.tensor([[2.0, 0.0], [0.0, 3.0]])
    x = fb.ones(1, 2)
    assert fb.func.functional_call(m, {"a.weight": w}, (x,)).tolist() == [[4.0, 9.0]]
    untied = fb.func.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
    np.testing.assert_allclose(untied.detach().numpy(), (x.numpy() @ w.numpy().T) @ m.b.weight.detach().numpy().T)
    with pytest.raises(
        fb.FlambeauError, match=r"^\[func.functional_call\] functional_call got multiple values for keys"
    ):
        fb.func.functional_call(m, {"a.weight": w, "b.weight": w.clone()}, (x,))
    with pytest.raises(fb.FlambeauError, match=r"Missing key\(s\): 'b.weight'"):
        fb.func.functional_call(m, {"a.weight": w}, (x,), tie_weights=False, strict=True)
    with pytest.raises(fb.FlambeauError, match=r"Unexpected key\(s\): 'c'"):
        fb.func.functional_call(m, {"a.weight": w, "c": w}, (x,), strict=True)
    lin = fb.nn.Linear(2, 1)
    out = fb.func.functional_call(lin, ({"weight": fb.ones(1, 2)}, {"bias": fb.tensor([1.0])}), x)
    assert out.tolist() == [[3.0]]
    with pytest.raises(fb.FlambeauError, match=r"\['weight'\] appeared in multiple dictionaries"):
        fb.func.functional_call(lin, ({"weight": fb.ones(1, 2)}, {"weight": fb.ones(1, 2)}), x)
    with pytest.raises(TypeError, match=r"Expected parameter_and_buffer_dicts to be a dict"):
        fb.func.functional_call(lin, 3, x)


def test_stack_module_state_of_eight_mlps_matches_torch():
    pairs = [mlp_pair([4, 5, 2], seed=s) for s in range(8)]
    params, buffers = fb.func.stack_module_state([p[0] for p in pairs])
    tparams, tbuffers = torch.func.stack_module_state([p[1] for p in pairs])
    _close(params, tparams)
    assert buffers == {} == tbuffers
    assert all(p.requires_grad and p.is_leaf for p in params.values())
    # the ensemble's predictions, model by model, against torch's vmap over the stacked state
    (fx, tx) = _pair(3, 4)
    base, tbase = pairs[0]
    ours = fb.stack([fb.func.functional_call(base, {k: v[i] for k, v in params.items()}, (fx,)) for i in range(8)])
    theirs = torch.func.vmap(lambda p: torch.func.functional_call(tbase, p, (tx,)))(tparams)
    _close(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    _close({k: v.grad for k, v in params.items()}, {k: v.grad for k, v in tparams.items()})


def test_stack_module_state_errors():
    with pytest.raises(fb.FlambeauError, match=r"Expected at least one model, got 0"):
        fb.func.stack_module_state([])
    with pytest.raises(fb.FlambeauError, match=r"Expected all models to be of the same class"):
        fb.func.stack_module_state([fb.nn.Linear(2, 2), fb.nn.Bilinear(2, 2, 2)])
    with pytest.raises(fb.FlambeauError, match=r"same training/eval mode"):
        fb.func.stack_module_state([fb.nn.Linear(2, 2), fb.nn.Linear(2, 2).eval()])
    frozen = fb.nn.Linear(2, 2)
    frozen.weight.requires_grad_(False)
    with pytest.raises(fb.FlambeauError, match=r"Expected weight from each model to have the same .requires_grad"):
        fb.func.stack_module_state([fb.nn.Linear(2, 2), frozen])


# --- errors --------------------------------------------------------------------------------------


def test_transform_errors_are_worded_as_torch():
    x = fb.tensor([1.0, 2.0])
    with pytest.raises(
        fb.FlambeauError,
        match=r"^\[func.grad\] grad_and_value\(f\)\(\*args\): Expected f\(\*args\) to return a scalar Tensor, got "
        r"tensor with 1 dims",
    ):
        fb.func.grad(lambda t: t * 2)(x)
    with pytest.raises(TypeError, match=r"Expected f\(\*args\) to return a Tensor, got tuple"):
        fb.func.grad(lambda t: (t.sum(), t))(x)
    with pytest.raises(
        fb.FlambeauError, match=r"output of function f should be a tuple: \(output, aux\) if has_aux is True"
    ):
        fb.func.grad(lambda t: t.sum(), has_aux=True)(x)
    with pytest.raises(
        fb.FlambeauError, match=r"^\[func.vjp\] vjp\(f, \*primals\): output of function f should be a tuple"
    ):
        fb.func.vjp(lambda t: t, x, has_aux=True)
    with pytest.raises(fb.FlambeauError, match=r"Got argnum=2, but only 1 positional inputs"):
        fb.func.grad(lambda t: t.sum(), argnums=2)(x)
    with pytest.raises(TypeError, match=r"argnums must be int or Tuple\[int, \.\.\.\], got: list"):
        fb.func.grad(lambda t: t.sum(), argnums=[0])(x)
    with pytest.raises(fb.FlambeauError, match=r"argnums elements must be unique"):
        fb.func.jacrev(lambda t, u: t, argnums=(0, -2))(x, x)
    with pytest.raises(TypeError, match=r"Thing passed to transform API must be Tensor, got float"):
        fb.func.grad(lambda t: t)(1.0)
    with pytest.raises(TypeError, match=r"only floating-point or complex Tensors can be differentiated"):
        fb.func.jacrev(lambda t: t)(fb.tensor([1, 2]))
    with pytest.raises(fb.FlambeauError, match=r"jacrev: `chunk_size` should be greater than 0"):
        fb.func.jacrev(lambda t: t, chunk_size=0)
    with pytest.raises(
        fb.FlambeauError, match=r"Only allowed values for randomness are 'error', 'different', or 'same'"
    ):
        fb.func.jacfwd(lambda t: t, randomness="sometimes")
    with pytest.raises(TypeError, match=r"expected f\(\*args\) to return only tensors, got unsupported type int"):
        fb.func.jacrev(lambda t: (t, 3))(x)
    _, fn = fb.func.vjp(lambda t: (t, t.sum()), x)
    with pytest.raises(fb.FlambeauError, match=r"Expected pytree structure of cotangents to be the same"):
        fn(fb.ones(2))
    with pytest.raises(fb.FlambeauError, match=r"Mismatch in shape: grad_output\[0\] has a shape of \(3,\)"):
        fn((fb.ones(3), fb.tensor(1.0)))
    with pytest.raises(TypeError, match=r"Expected primals to be a tuple"):
        fb.func.jvp(lambda t: t, x, x)
    with pytest.raises(fb.FlambeauError, match=r"Expected primals and tangents to have the same python structure"):
        fb.func.jvp(lambda t: t, (x,), (x, x))
    with pytest.raises(
        fb.FlambeauError, match=r"tangent:0 with shape \(3,\) in flattened pytree doesn't match the shape \(2,\)"
    ):
        fb.func.jvp(lambda t: t, (x,), (fb.ones(3),))
    _, jvp_fn = fb.func.linearize(lambda t: t.sin(), x)
    with pytest.raises(fb.FlambeauError, match=r"to have the same argspec as the primals"):
        jvp_fn(x, x)


def test_jacrev_runs_on_a_batch_and_falls_back_to_rows():
    """Note [jacrev by vmap]: one batched backward when every op batches; row by row otherwise (no warning)."""
    import warnings

    from flambeau.func import _transforms

    (fx, tx), (fy, ty) = _pair(4), _pair(3, 4)

    def f(x, y):
        return lib(x).tanh(y @ x), (x * x).sum()

    assert _transforms._jacrev_by_vmap(f, (fx, fy), (0, 1), False, None) is not None
    _close(fb.func.jacrev(f, argnums=(0, 1))(fx, fy), torch.func.jacrev(f, argnums=(0, 1))(tx, ty))
    _close(fb.func.jacrev(f, chunk_size=2)(fx, fy), torch.func.jacrev(f, chunk_size=2)(tx, ty))

    def g(v):  # a random op inside vmap raises (randomness='error'): the rows run one backward pass at a time
        return v * fb.bernoulli(fb.ones_like(v))  # the draw is always 1: the Jacobian is the identity

    fv = fb.tensor([1.0, 2.0, 3.0], dtype=fb.float64)
    assert _transforms._jacrev_by_vmap(g, (fv,), 0, False, None) is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = fb.func.jacrev(g)(fv)
    assert not [w for w in caught if "batching rule" in str(w.message)]
    _close(ours, torch.eye(3, dtype=torch.float64))


# --- autograd.functional's vectorize=True, batched by fb.func (Note [vectorized jacobian]) ----------------

F, TF = fb.autograd.functional, torch.autograd.functional


def _tuples(tree):
    """torch's forward-mode Jacobians come as lists where its reverse mode gives tuples: tuples both."""
    return tuple(_tuples(t) for t in tree) if isinstance(tree, (tuple, list)) else tree


def _one_out(x):
    return lib(x).tanh(x * x).sum(1)


def _two_in(x, y):
    return (x * y.exp()).sin().sum(0) + y


def _two_out(x):
    return x.sum(0) * x[0], (x**3).sum()


def _two_in_two_out(x, y):
    return x @ y, (x * x).sum() * y


@pytest.fixture
def backward_passes(monkeypatch):
    """How many backward passes autograd's engine runs (each ``_run_backward`` call is one)."""
    import flambeau_autograd

    count = [0]
    run = flambeau_autograd._C._run_backward

    def counted(*args, **kwargs):
        count[0] += 1
        return run(*args, **kwargs)

    monkeypatch.setattr(flambeau_autograd._C, "_run_backward", counted)
    return count


@pytest.mark.parametrize(
    "fn, shapes",
    [(_one_out, [(3, 2)]), (_two_in, [(3, 2), (2,)]), (_two_out, [(3, 2)]), (_two_in_two_out, [(3, 2), (2,)])],
)
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_functional_vectorized_jacobian_is_one_batched_pass_with_torch_s_values(backward_passes, fn, shapes, strategy):
    pairs = [_pair(*s) for s in shapes]
    fb_in = tuple(p[0] for p in pairs) if len(pairs) > 1 else pairs[0][0]
    t_in = tuple(p[1] for p in pairs) if len(pairs) > 1 else pairs[0][1]
    calls = []

    def counted(*args):
        calls.append(1)
        return fn(*args)

    ours = F.jacobian(counted, fb_in, vectorize=True, strategy=strategy)
    _close(ours, _tuples(TF.jacobian(fn, t_in, vectorize=True, strategy=strategy)))
    if strategy == "reverse-mode":
        assert backward_passes[0] == 1  # every row from one backward pass (row by row: one per output element)
    else:
        assert len(calls) == 1 and backward_passes[0] == 0  # every column from one pass on dual tensors


def test_functional_vectorized_jacobian_create_graph_is_differentiable_like_torch(backward_passes):
    (fx, tx), (fy, ty) = _pair(3, 2), _pair(2)
    for t in (fx, fy, tx, ty):
        t.requires_grad_()
    ours = F.jacobian(_two_in_two_out, (fx, fy), create_graph=True, vectorize=True)
    assert backward_passes[0] == 1 and all(b.requires_grad for row in ours for b in row)
    theirs = TF.jacobian(_two_in_two_out, (tx, ty), create_graph=True, vectorize=True)
    _close(ours, theirs)
    sum((b.sin().sum() for row in ours for b in row), fb.zeros((), dtype=fb.float64)).backward()
    sum((b.sin().sum() for row in theirs for b in row), torch.zeros((), dtype=torch.float64)).backward()
    _close(fx.grad, tx.grad)
    _close(fy.grad, ty.grad)
    assert not F.jacobian(_two_in_two_out, (fx, fy), vectorize=True)[0][0].requires_grad


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_functional_vectorized_hessian_matches_torch(backward_passes, strategy):
    (fx, tx), (fy, ty) = _pair(3, 2), _pair(2)

    def scalar(x, y):
        return (lib(x).tanh(x @ y) ** 2).sum() + (y.exp() * y).sum()

    ours = F.hessian(scalar, (fx, fy), vectorize=True, outer_jacobian_strategy=strategy)
    _close(ours, _tuples(TF.hessian(scalar, (tx, ty), vectorize=True, outer_jacobian_strategy=strategy)))
    # batched: a fixed number of backward passes (row by row runs one per input element, 8 here, plus one)
    assert backward_passes[0] <= 3
    one = F.hessian(lambda x: (x.exp() * x).sum(), fx, vectorize=True, outer_jacobian_strategy=strategy)
    _close(one, TF.hessian(lambda x: (x.exp() * x).sum(), tx, vectorize=True, outer_jacobian_strategy=strategy))


def test_functional_vectorized_hessian_create_graph_matches_torch():
    (fx, tx) = _pair(4)
    fx.requires_grad_()
    tx.requires_grad_()
    ours = F.hessian(lambda x: (x.sin() * x**2).sum(), fx, create_graph=True, vectorize=True)
    theirs = TF.hessian(lambda x: (x.sin() * x**2).sum(), tx, create_graph=True, vectorize=True)
    _close(ours, theirs)
    (ours**2).sum().backward()
    (theirs**2).sum().backward()
    _close(fx.grad, tx.grad)


def test_functional_vectorized_jacobian_falls_back_to_element_passes_where_vmap_cannot_batch(backward_passes):
    fv = fb.tensor([1.0, 2.0, 3.0], dtype=fb.float64)

    def g(v):  # a random op under vmap raises (randomness='error'): the rows run one backward pass each
        return v * fb.bernoulli(fb.ones_like(v))  # the draw is always 1: the Jacobian is the identity

    _close(F.jacobian(g, fv, vectorize=True), torch.eye(3, dtype=torch.float64))
    assert backward_passes[0] == 3
    _close(F.jacobian(g, fv, vectorize=True, strategy="forward-mode"), torch.eye(3, dtype=torch.float64))


def test_importing_flambeau_registers_the_batched_jacobian():
    from flambeau.func import _transforms

    previous = F._register_vectorized_jacobian(None)
    try:
        assert previous is _transforms._vectorized_jacobian
    finally:
        F._register_vectorized_jacobian(previous)
