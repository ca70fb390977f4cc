"""Forward-mode AD (flambeau_autograd.forward_ad) against torch.autograd.forward_ad and finite differences:
dual levels, make_dual/unpack_dual, the auto_element_wise and auto_linear formulas, in-place ops, custom
Functions with jvp, reverse over forward, and the errors."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_autograd.forward_ad as fwAD
import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfwAD
from conftest import fb_tensor, to_np

RNG = np.random.default_rng(11)


def jvp_both(fn_fb, fn_th, primals, tangents):
    """fn's output and its tangent, by flambeau's forward mode and by torch's, on the same float64 values."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(fb_tensor(p), fb_tensor(t)) for p, t in zip(primals, tangents, strict=True)]
        out = fwAD.unpack_dual(fn_fb(*duals))
        mine = (to_np(out.primal), None if out.tangent is None else to_np(out.tangent))
    with tfwAD.dual_level():
        duals = [
            tfwAD.make_dual(torch.tensor(p, dtype=torch.float64), torch.tensor(t, dtype=torch.float64))
            for p, t in zip(primals, tangents, strict=True)
        ]
        out = tfwAD.unpack_dual(fn_th(*duals))
        theirs = (out.primal.numpy(), None if out.tangent is None else out.tangent.numpy())
    return mine, theirs


def assert_jvp_matches(fn_fb, fn_th, shapes, positive=False):
    primals = [RNG.uniform(0.5, 1.5, s) if positive else RNG.standard_normal(s) for s in shapes]
    tangents = [RNG.standard_normal(s) for s in shapes]
    (p, t), (tp, tt) = jvp_both(fn_fb, fn_th, primals, tangents)
    np.testing.assert_allclose(p, tp, rtol=1e-12, atol=1e-12)
    assert t is not None and tt is not None
    np.testing.assert_allclose(t, tt, rtol=1e-10, atol=1e-12)


# ---- levels, make_dual, unpack_dual ----


def test_a_dual_tensor_carries_its_tangent_through_exp_as_torch():
    assert_jvp_matches(lambda x: x.exp(), lambda x: x.exp(), [(3, 2)])


def test_unpack_dual_of_a_plain_tensor_gives_it_back_with_no_tangent():
    x = fc.ones(2)
    with fwAD.dual_level():
        primal, tangent = fwAD.unpack_dual(x)
    assert primal is x and tangent is None


def test_exiting_the_level_forgets_every_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.ones(3), fc.full((3,), 2.0))
        y = d * 3
        assert fwAD.unpack_dual(y).tangent.tolist() == [6.0, 6.0, 6.0]
    assert fwAD.unpack_dual(d).tangent is None
    assert fwAD.unpack_dual(y).tangent is None
    assert not d.requires_grad  # a dual tensor is an ordinary tensor otherwise
    assert (d * 2).tolist() == [2.0, 2.0, 2.0]


def test_the_primal_of_unpack_dual_has_no_tangent_and_shares_memory():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.zeros(2), fc.ones(2))
        primal = fwAD.unpack_dual(d).primal
        assert fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(primal * 2).tangent is None
        d.data[0] = 5.0
        assert primal.tolist() == [5.0, 0.0]


def test_enter_and_exit_dual_level_by_number_as_torch():
    level = fwAD.enter_dual_level()
    assert level == 0
    try:
        d = fwAD.make_dual(fc.ones(1), fc.ones(1), level=level)
        assert fwAD.unpack_dual(d, level=level).tangent.tolist() == [1.0]
    finally:
        fwAD.exit_dual_level(level=level)


def test_nested_dual_levels_raise_as_torch():
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="nested forward-mode AD is not supported"):
            fwAD.enter_dual_level()
    with fwAD.dual_level():  # the failed enter left the level usable and exitable
        pass


def test_make_dual_outside_a_level_raises():
    with pytest.raises(RuntimeError, match=r"\[forward_ad.make_dual\] no dual level is active"):
        fwAD.make_dual(fc.ones(2), fc.ones(2))


def test_exit_of_a_level_that_is_not_active_raises():
    with pytest.raises(RuntimeError, match="is not the active dual level"):
        fwAD.exit_dual_level(level=0)
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="level 3 is not the active dual level"):
        fwAD.make_dual(fc.ones(1), fc.ones(1), level=3)


def test_make_dual_checks_the_tangent_against_the_primal():
    with fwAD.dual_level():
        shape_error = r"\[forward_ad.make_dual\] the tangent has shape \(3,\) but the primal has shape \(2,\)"
        with pytest.raises(ValueError, match=shape_error):
            fwAD.make_dual(fc.ones(2), fc.ones(3))
        with pytest.raises(TypeError, match="the tangent has dtype float64 but the primal has dtype float32"):
            fwAD.make_dual(fc.ones(2), fc.ones(2, dtype=fc.float64))
        with pytest.raises(TypeError, match="expected a floating point or complex primal, got dtype int64"):
            fwAD.make_dual(fc.ones(2, dtype=fc.int64), fc.ones(2, dtype=fc.int64))
        with pytest.raises(TypeError, match="expected tensor and tangent to be Tensors, got list"):
            fwAD.make_dual([1.0], fc.ones(1))


def test_make_dual_keeps_the_primal_s_reverse_mode_history():
    x = fc.tensor([1.0, 2.0], dtype=fc.float64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, fc.ones(2, dtype=fc.float64))
        (d * d).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


# ---- the derived formulas, against torch and finite differences ----

ELEMENT_WISE = {
    "exp": (lambda x: x.exp(), [(4,)], False),
    "log": (lambda x: x.log(), [(4,)], True),
    "tanh": (lambda x: x.tanh(), [(2, 3)], False),
    "sigmoid": (lambda x: x.sigmoid(), [(2, 3)], False),
    "sqrt": (lambda x: x.sqrt(), [(4,)], True),
    "sin": (lambda x: x.sin(), [(4,)], False),
    "erf": (lambda x: x.erf(), [(4,)], False),
    "abs": (lambda x: x.abs(), [(4,)], False),
    "reciprocal": (lambda x: x.reciprocal(), [(4,)], True),
    "add broadcast": (lambda x, y: x + 2.0 * y, [(2, 3), (3,)], False),
    "sub": (lambda x, y: x - y, [(3, 1), (1, 4)], False),
    "mul broadcast": (lambda x, y: x * y, [(2, 3), (2, 1)], False),
    "div": (lambda x, y: x / y, [(3,), (3,)], True),
    "pow": (lambda x, y: x**y, [(3,), (3,)], True),
    "pow scalar": (lambda x: x**3, [(3,)], False),
    "maximum": (lambda x, y: fc.maximum(x, y), [(5,), (5,)], False),
    "atan2": (lambda x, y: fc.atan2(x, y), [(3,), (3,)], True),
    "where": (lambda x, y: fc.where(x > 0, x, y), [(2, 3), (3,)], False),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), [(6,)], False),
    "relu": (lambda x: x.relu(), [(6,)], False),
}


@pytest.mark.parametrize("name", list(ELEMENT_WISE))
def test_element_wise_tangents_match_finite_differences(name):
    fn, shapes, positive = ELEMENT_WISE[name]
    rng = np.random.default_rng(3)
    xs = [fb_tensor(rng.uniform(0.5, 1.5, s) if positive else rng.standard_normal(s), True) for s in shapes]
    assert ag.gradcheck(fn, xs, check_forward_ad=True, check_backward_ad=False)


LINEAR = {
    "view": (lambda x: x.view(6), [(2, 3)]),
    "transpose": (lambda x: x.transpose(0, 1), [(2, 3)]),
    "permute": (lambda x: x.permute(2, 0, 1), [(2, 3, 2)]),
    "expand": (lambda x: x.expand(3, 4), [(1, 4)]),
    "slice and select": (lambda x: x[1:, 0], [(3, 2)]),
    "sum over a dim": (lambda x: x.sum(1), [(2, 3)]),
    "cat": (lambda x, y: fc.cat([x, y], 0), [(2, 3), (1, 3)]),
    "stack": (lambda x, y: fc.stack([x, y], 1), [(2, 3), (2, 3)]),
    "gather": (lambda x: x.gather(1, fc.tensor([[2, 0], [1, 1]])), [(2, 3)]),
    "advanced index": (lambda x: x[fc.tensor([2, 0, 2])], [(3, 2)]),
    "index_select": (lambda x: x.index_select(0, fc.tensor([1, 1])), [(2, 3)]),
    "flip": (lambda x: x.flip(0), [(3, 2)]),
    "cumsum": (lambda x: x.cumsum(0), [(4, 2)]),
    "tril": (lambda x: x.tril(), [(3, 3)]),
    "clone": (lambda x: x.clone(), [(3,)]),
}


@pytest.mark.parametrize("name", list(LINEAR))
def test_linear_op_tangents_match_finite_differences(name):
    fn, shapes = LINEAR[name]
    rng = np.random.default_rng(5)
    xs = [fb_tensor(rng.standard_normal(s), True) for s in shapes]
    assert ag.gradcheck(fn, xs, check_forward_ad=True, check_backward_ad=False)


def test_a_cast_casts_the_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.ones(2, dtype=fc.float64), fc.tensor([0.5, 1.0 + 2.0**-30], dtype=fc.float64))
        tangent = fwAD.unpack_dual(d.to(fc.float32)).tangent
    assert tangent.dtype == fc.float32 and tangent.tolist() == [0.5, 1.0]


def test_a_chain_of_ops_matches_torch_s_forward_mode():
    def f(x, y):
        return ((x * y).tanh() + x.exp() / (1 + y * y)).sum(0) + x[0] * 2

    assert_jvp_matches(f, f, [(3, 4), (3, 4)])


def test_mixed_dtypes_give_the_tangent_the_result_s_dtype():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.ones(3, dtype=fc.float32), fc.ones(3, dtype=fc.float32))
        y = d * fc.full((3,), 2.0, dtype=fc.float64)
        tangent = fwAD.unpack_dual(y).tangent
    assert y.dtype == fc.float64 and tangent.dtype == fc.float64
    assert tangent.tolist() == [2.0, 2.0, 2.0]


def test_an_input_without_a_tangent_contributes_nothing():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.tensor([1.0, 2.0]), fc.tensor([1.0, 1.0]))
        y = d * fc.tensor([3.0, 4.0])
        assert fwAD.unpack_dual(y).tangent.tolist() == [3.0, 4.0]
        assert fwAD.unpack_dual(fc.tensor([3.0]) * 2).tangent is None


def test_integer_results_carry_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.tensor([1.0, 3.0, 2.0]), fc.ones(3))
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d > 1).tangent is None


def test_complex_tangents_match_torch():
    z = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    v = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    for fb_fn, th_fn in [
        (lambda a: a.exp() * a, lambda a: a.exp() * a),
        (lambda a: a.abs(), lambda a: a.abs()),
        (lambda a: a.sgn(), lambda a: a.sgn()),
    ]:
        with fwAD.dual_level():
            d = fwAD.make_dual(fc.tensor(z.tolist(), dtype=fc.complex128), fc.tensor(v.tolist(), dtype=fc.complex128))
            mine = np.asarray(fwAD.unpack_dual(fb_fn(d)).tangent.tolist())
        with tfwAD.dual_level():
            d = tfwAD.make_dual(torch.tensor(z), torch.tensor(v))
            theirs = tfwAD.unpack_dual(th_fn(d)).tangent.numpy()
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)


# ---- grad mode ----


def test_tangents_are_computed_under_no_grad_without_recording_a_graph_as_torch():
    w = RNG.standard_normal(3)

    def f(lib):
        weight = (fc.tensor(w) if lib is fc else torch.tensor(w)).requires_grad_()

        def g(x):
            with ag.no_grad() if lib is fc else torch.no_grad():
                y = (x.sin() * weight).sum()
            assert not y.requires_grad and y.grad_fn is None
            return y

        return g

    assert_jvp_matches(f(fc), f(torch), [(3,)])


def test_set_grad_enabled_false_keeps_tangents_and_enable_grad_inside_records_again():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.tensor([1.0, 2.0]), fc.tensor([1.0, 1.0]))
        w = fc.tensor([3.0, 4.0], requires_grad=True)
        with ag.set_grad_enabled(False):
            y = d * w
            with ag.enable_grad():
                z = d * w
        assert y.grad_fn is None and fwAD.unpack_dual(y).tangent.tolist() == [3.0, 4.0]
        assert z.grad_fn is not None and fwAD.unpack_dual(z).tangent.tolist() == [3.0, 4.0]


def test_an_in_place_op_on_a_leaf_under_no_grad_gives_it_the_operand_s_tangent_as_torch():
    # An optimizer-style update of a parameter by a dual value: no "leaf in-place" error, the tangent flows.
    with fwAD.dual_level():
        p = fc.zeros(3, dtype=fc.float64, requires_grad=True)
        with ag.no_grad():
            p.add_(fwAD.make_dual(fc.ones(3, dtype=fc.float64), fc.full((3,), 2.0, dtype=fc.float64)))
        assert p.grad_fn is None and fwAD.unpack_dual(p).tangent.tolist() == [2.0, 2.0, 2.0]
    with tfwAD.dual_level():
        q = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        with torch.no_grad():
            q.add_(tfwAD.make_dual(torch.ones(3, dtype=torch.float64), torch.full((3,), 2.0, dtype=torch.float64)))
        assert tfwAD.unpack_dual(q).tangent.tolist() == [2.0, 2.0, 2.0]


def test_a_custom_function_s_forward_computes_no_tangents_of_its_own():
    # Inside forward the ops run below the Autograd layer: the output's tangent is the one jvp gives.
    seen = []

    class Double(ag.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            seen.append(fwAD.unpack_dual(y).tangent)
            return y

        @staticmethod
        def jvp(ctx, t):
            return t * 5  # deliberately not 2: shows whose tangent the output gets

    with fwAD.dual_level():
        d = fwAD.make_dual(fc.ones(2), fc.ones(2))
        with ag.no_grad():
            out = Double.apply(d)
        assert seen == [None] and fwAD.unpack_dual(out).tangent.tolist() == [5.0, 5.0]


# ---- in-place ops ----


def test_in_place_ops_update_the_tangent_as_torch():
    def f(x, y):
        z = x.clone()
        z.mul_(y)
        z.add_(x, alpha=2.0)
        z.div_(y * y + 1)
        return z

    assert_jvp_matches(f, f, [(2, 3), (2, 3)])


def test_an_in_place_op_gives_a_plain_tensor_the_tangent_of_its_operand():
    with fwAD.dual_level():
        z = fc.zeros(2)
        z.add_(fwAD.make_dual(fc.ones(2), fc.full((2,), 3.0)))
        assert fwAD.unpack_dual(z).tangent.tolist() == [3.0, 3.0]


def test_an_in_place_op_on_a_view_updates_the_base_s_tangent_as_torch():
    def f(x, y):
        z = x.clone()
        z[0].mul_(y[0])
        z.diagonal().copy_(y.sum(0))
        z[1:, 2].add_(y[1:, 0].exp())
        return z

    assert_jvp_matches(f, f, [(3, 3), (3, 3)])


def test_writing_a_dual_into_a_view_of_a_plain_tensor_gives_the_tensor_a_tangent_as_torch():
    def f(x, y):
        out = x.new_zeros((3, 4)) if isinstance(x, torch.Tensor) else fc.zeros(3, 4, dtype=fc.float64)
        out[1] = x[0] * y[0]  # __setitem__: a copy into a view of out
        out[:, 2].mul_(y[:, 1])  # an in-place op on a view of out, which now has a tangent
        out.diagonal().add_(x[:, 0].exp())
        return out

    assert_jvp_matches(f, f, [(3, 4), (3, 4)])


def test_the_scatter_composites_of_a_plain_tensor_and_a_dual_source_match_torch():
    for fb_fn, th_fn in [
        (
            lambda s: fc.zeros(4, 3, dtype=fc.float64).slice_scatter(s, 0, 1, 3),
            lambda s: torch.zeros(4, 3, dtype=torch.float64).slice_scatter(s, 0, 1, 3),
        ),
        (
            lambda s: fc.zeros(3, 3, dtype=fc.float64).diagonal_scatter(s[0]),
            lambda s: torch.zeros(3, 3, dtype=torch.float64).diagonal_scatter(s[0]),
        ),
        (
            lambda s: fc.zeros(2, 3, dtype=fc.float64).select_scatter(s[1], 0, 1),
            lambda s: torch.zeros(2, 3, dtype=torch.float64).select_scatter(s[1], 0, 1),
        ),
    ]:
        assert_jvp_matches(fb_fn, th_fn, [(2, 3)])


def test_an_in_place_op_on_a_view_made_outside_the_level_raises_instead_of_losing_the_tangent():
    base = fc.zeros(2, 3)
    row = base[0]
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.ones(3), fc.ones(3))
        with pytest.raises(
            NotImplementedError, match=r"\[mul_\] forward-mode AD of an in-place op on a view .* made outside"
        ):
            row.mul_(d)
        assert base.tolist() == [[0.0] * 3] * 2  # refused before writing


def test_make_dual_lays_the_tangent_out_as_the_primal_so_as_strided_reads_it_alike():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.arange(10.0, dtype=fc.float64)[2:8], fc.arange(6.0, dtype=fc.float64) * 10)
        primal, tangent = fwAD.unpack_dual(fc.as_strided(d, (2, 2), (1, 2), 1))
    with tfwAD.dual_level():
        d = tfwAD.make_dual(torch.arange(10.0, dtype=torch.float64)[2:8], torch.arange(6.0, dtype=torch.float64) * 10)
        expected = tfwAD.unpack_dual(torch.as_strided(d, (2, 2), (1, 2), 1))
    assert primal.tolist() == expected.primal.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert tangent.tolist() == expected.tangent.tolist()


# ---- custom Functions ----


class Cube(ag.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        return g * 3 * ctx.x * ctx.x

    @staticmethod
    def jvp(ctx, t):
        return 3 * ctx.x * ctx.x * t


class NoJvp(ag.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_a_custom_function_s_jvp_gives_its_output_s_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.tensor([1.0, 2.0]), fc.tensor([1.0, 0.5]))
        assert fwAD.unpack_dual(Cube.apply(d)).tangent.tolist() == [3.0, 6.0]


class ScaleBy(ag.Function):
    """x * s, whose jvp records which tangents it was given."""

    seen: list = []

    @staticmethod
    def forward(ctx, x, s):
        ctx.set_materialize_grads(False)
        ctx.x, ctx.s = x, s
        return x * s

    @staticmethod
    def jvp(ctx, tx, ts):
        ScaleBy.seen.append((tx is None, ts is None))
        return sum(t for t in (None if tx is None else tx * ctx.s, None if ts is None else ctx.x * ts) if t is not None)


def test_a_custom_function_that_does_not_materialize_gets_none_for_an_input_without_a_tangent():
    ScaleBy.seen.clear()
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.tensor([1.0, 2.0]), fc.tensor([1.0, 1.0]))
        y = ScaleBy.apply(d, fc.tensor([3.0, 4.0]))
        assert fwAD.unpack_dual(y).tangent.tolist() == [3.0, 4.0]
    assert ScaleBy.seen == [(False, True)]


def test_a_custom_function_without_jvp_names_itself():
    with fwAD.dual_level():
        d = fwAD.make_dual(fc.ones(2), fc.ones(2))
        with pytest.raises(NotImplementedError, match=r"\[NoJvp\] a dual tensor .* defines no jvp"):
            NoJvp.apply(d)
        assert NoJvp.apply(fc.ones(2)).tolist() == [2.0, 2.0]  # plain inputs never ask for jvp


# ---- reverse over forward ----


def test_the_gradient_of_a_tangent_is_a_hessian_vector_product_as_torch():
    x0, v0 = RNG.standard_normal(4), RNG.standard_normal(4)

    def f(x):
        return (x.sin() * x.exp()).sum()

    x = fb_tensor(x0, requires_grad=True)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, fb_tensor(v0)))).tangent
        (hvp,) = ag.grad(tangent, x)
    xt = torch.tensor(x0, requires_grad=True)
    with tfwAD.dual_level():
        tt = tfwAD.unpack_dual(f(tfwAD.make_dual(xt, torch.tensor(v0)))).tangent
        (expected,) = torch.autograd.grad(tt, xt)
    np.testing.assert_allclose(to_np(hvp), expected.numpy(), rtol=1e-10)


def test_the_tangent_of_a_gradient_is_a_hessian_vector_product_as_torch():
    x0, v0 = RNG.standard_normal(4), RNG.standard_normal(4)

    def f(x):
        return (x.exp() * x.tanh() + x.sigmoid()).sum()

    with fwAD.dual_level():
        x = fwAD.make_dual(fb_tensor(x0), fb_tensor(v0)).requires_grad_()
        (g,) = ag.grad(f(x), x, create_graph=True)
        hvp = fwAD.unpack_dual(g).tangent
    with tfwAD.dual_level():
        xt = tfwAD.make_dual(torch.tensor(x0), torch.tensor(v0)).requires_grad_()
        (gt,) = torch.autograd.grad(f(xt), xt, create_graph=True)
        expected = tfwAD.unpack_dual(gt).tangent
    np.testing.assert_allclose(to_np(hvp), expected.detach().numpy(), rtol=1e-10)


def test_gradcheck_in_forward_mode_of_a_function_that_differentiates_inside():
    def gradient_of_cube_sum(t):
        (g,) = ag.grad((t**3).sin().sum(), t, create_graph=True)
        return g

    x = fb_tensor(RNG.standard_normal(3), requires_grad=True)
    assert ag.gradcheck(gradient_of_cube_sum, (x,), check_forward_ad=True)
