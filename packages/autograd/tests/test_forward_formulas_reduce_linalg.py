"""Forward formulas (derivatives.yaml `result:`) of the fills, indexing writes, reductions, scans, sorts
and linear algebra: gradcheck(check_forward_ad=True) against finite differences on float64 inputs where
the op is differentiable (distinct values, well-conditioned matrices), and the tangents against
torch.func.jvp (ties, complex inputs, gauges). Singular vectors and eigenvectors are defined up to sign
(phase): their tests differentiate functions that do not depend on it, as PyTorch's do."""

from __future__ import annotations

import math

import flambeau_autograd as ag
import flambeau_autograd.forward_ad as fwAD
import flambeau_core as fc
import numpy as np
import pytest
import torch
from conftest import fb_tensor, to_np

LA = fc.linalg
TLA = torch.linalg


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def crand(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def invertible(shape, seed=0):
    n = shape[-1]
    return rand(shape, seed) + 2 * np.sqrt(n) * np.eye(n)


def distinct(shape, seed=0):
    """Values at least 0.1 apart (a max, sort or cummax keeps its choice under finite differences)."""
    n = math.prod(shape)
    return np.random.default_rng(seed).permutation(np.arange(n) * 0.1 - 0.05 * n).reshape(shape)


def fb_any(a):
    """A flambeau tensor of a real (float64) or complex (complex128) NumPy array."""
    a = np.asarray(a)
    if np.iscomplexobj(a):
        return fc.complex(fb_tensor(a.real), fb_tensor(a.imag))
    return fb_tensor(a)


def np_any(t):
    if t.dtype == fc.complex128:
        return to_np(fc.real(t)) + 1j * to_np(fc.imag(t))
    return to_np(t)


def check(fn, *arrays):
    """Forward mode of fn against central differences (gradcheck's forward-mode Jacobian)."""
    inputs = tuple(fb_tensor(a, requires_grad=True) for a in arrays)
    assert ag.gradcheck(fn, inputs, check_forward_ad=True, check_backward_ad=False)


def fb_jvp(fn, primals, tangents):
    """fn's outputs and their tangents (None where an output has none) by flambeau's forward mode."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(fb_any(p), fb_any(t)) for p, t in zip(primals, tangents, strict=True)]
        outs = fn(*duals)
        outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
        unpacked = [fwAD.unpack_dual(o) for o in outs]
        return [np_any(u.primal) for u in unpacked], [
            None if u.tangent is None else np_any(u.tangent) for u in unpacked
        ]


def torch_jvp(fn, primals, tangents):
    outs, tans = torch.func.jvp(fn, tuple(map(torch.tensor, primals)), tuple(map(torch.tensor, tangents)))
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    tans = tuple(tans) if isinstance(tans, (tuple, list)) else (tans,)
    return [o.numpy() for o in outs], [t.numpy() for t in tans]


def assert_jvp_as_torch(fb_fn, th_fn, primals, tangents, atol=1e-10):
    mine_out, mine_tan = fb_jvp(fb_fn, primals, tangents)
    th_out, th_tan = torch_jvp(th_fn, primals, tangents)
    for i, (a, b) in enumerate(zip(mine_out, th_out, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10, err_msg=f"output {i}")
    for i, (a, b) in enumerate(zip(mine_tan, th_tan, strict=True)):
        assert a is not None, f"output {i} got no tangent"
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=atol, err_msg=f"tangent {i}")


# ---- fills and copies (in-place) ----


def assert_zero_tangent(tangent):
    """No tangent, or zeros (torch gives zeros): the value no longer depends on the input."""
    assert tangent is None or not to_np(tangent).any()


def test_copy_takes_src_tangent_broadcast_and_cast():
    def fn(a, src):
        out = a * 1.0
        out.copy_(src)
        return out

    check(fn, rand((3, 4)), rand((4,), 1))
    with fwAD.dual_level():
        dst = fwAD.make_dual(fc.zeros(2, 3, dtype=fc.float64), fc.ones(2, 3, dtype=fc.float64))
        src = fwAD.make_dual(fc.ones(3, dtype=fc.float32), fc.tensor([1.0, 2.0, 3.0]))
        dst.copy_(src)
        tangent = fwAD.unpack_dual(dst).tangent
        assert tangent.dtype == fc.float64 and tangent.shape == (2, 3)
        np.testing.assert_array_equal(to_np(tangent), [[1, 2, 3], [1, 2, 3]])


def test_copy_of_a_plain_src_into_a_dual_tensor_zeroes_its_tangent():
    with fwAD.dual_level():
        dst = fwAD.make_dual(fc.zeros(3, dtype=fc.float64), fc.ones(3, dtype=fc.float64))
        dst.copy_(fc.ones(3, dtype=fc.float64))
        assert_zero_tangent(fwAD.unpack_dual(dst).tangent)
        np.testing.assert_array_equal(to_np(dst), [1, 1, 1])


def test_copy_of_a_dual_tensor_into_an_integer_tensor_gives_it_no_tangent_as_torch():
    with fwAD.dual_level():
        src = fwAD.make_dual(fc.full((3,), 2.5, dtype=fc.float64), fc.ones(3, dtype=fc.float64))
        dst = fc.zeros(3, dtype=fc.int64)
        dst.copy_(src)
        assert fwAD.unpack_dual(dst).tangent is None
        np.testing.assert_array_equal(to_np(dst), [2, 2, 2])


@pytest.mark.parametrize(
    "fill",
    [lambda t: t.fill_(2.0), lambda t: t.uniform_(0.0, 1.0), lambda t: t.normal_(0.0, 1.0)],
    ids=["fill_", "uniform_", "normal_"],
)
def test_fills_and_random_draws_leave_a_zero_tangent(fill):
    with fwAD.dual_level():
        x = fwAD.make_dual(fc.zeros(4, dtype=fc.float64), fc.ones(4, dtype=fc.float64))
        y = x * 2.0
        fill(y)
        assert_zero_tangent(fwAD.unpack_dual(y).tangent)
        assert_zero_tangent(fwAD.unpack_dual(y * 3.0).tangent)
        fill(x)  # a view (make_dual's result) keeps a tangent slot: zeros
        assert_zero_tangent(fwAD.unpack_dual(x).tangent)


# ---- indexing writes ----


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_(accumulate):
    idx = fc.tensor([0, 2])

    def fn(a, v):
        out = a * 1.0
        out.index_put_((idx,), v, accumulate)
        return out

    check(fn, rand((3, 4)), rand((4,), 1))
    check(fn, rand((3, 4)), rand((2, 4), 2))


def test_index_fill_and_masked_fill_with_a_number():
    check(lambda a: a.index_fill(1, fc.tensor([0, 2]), 3.0), rand((3, 4)))
    mask = fc.tensor([[True, False, True, False]])
    check(lambda a: a.masked_fill(mask, -1.0), rand((3, 4)))
    assert_jvp_as_torch(
        lambda a: a.masked_fill(a > 0, 0.5), lambda a: a.masked_fill(a > 0, 0.5), [rand((3, 4))], [rand((3, 4), 1)]
    )


def test_index_fill_and_masked_fill_with_a_tensor_value():
    check(lambda a, v: a.index_fill(0, fc.tensor([1]), v), rand((3, 2)), rand(()))
    check(lambda a, v: a.masked_fill(fc.tensor([True, False, True]), v), rand((3,)), rand((), 1))


def test_scatter_and_scatter_value():
    idx = fc.tensor([[0, 1, 0, 2]])
    check(lambda a, s: fc.scatter(a, 0, idx, s), rand((3, 4)), rand((1, 4), 1))
    check(lambda a: fc.scatter(a, 0, idx, 2.0), rand((3, 4)))
    assert_jvp_as_torch(
        lambda a, s: a.scatter(1, fc.tensor([[2, 0]]), s),
        lambda a, s: a.scatter(1, torch.tensor([[2, 0]]), s),
        [rand((2, 3)), rand((2, 2), 1)],
        [rand((2, 3), 2), rand((2, 2), 3)],
    )


def test_scatter_with_reduce_has_no_forward_derivative():
    with fwAD.dual_level():
        x = fwAD.make_dual(fc.ones(3, dtype=fc.float64), fc.ones(3, dtype=fc.float64))
        with pytest.raises(RuntimeError, match=r"\[scatter\] derivative for scatter with reduce='add'"):
            fc.scatter(x, 0, fc.tensor([0, 1]), fc.ones(2, dtype=fc.float64), reduce="add")


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    idx = fc.tensor([0, 1, 0, 3, 1])
    check(lambda a, s: a.scatter_reduce(0, idx, s, reduce, include_self=include_self), rand(5), rand(5, 1))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_reads_only_the_leading_part_of_a_larger_src(reduce):
    idx = fc.tensor([[0, 1, 0], [2, 2, 1]])
    check(lambda a, s: a.scatter_reduce(0, idx, s, reduce), rand((3, 3)), rand((3, 4), 1))


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_with_zeros(include_self):
    # place 0: one zero among its factors; place 1: two (tangent 0); place 2 keeps self without include_self
    idx = fc.tensor([0, 0, 1, 1, 0])
    check(
        lambda a, s: a.scatter_reduce(0, idx, s, "prod", include_self=include_self),
        np.array([1.5, -0.7, 2.0]),
        np.array([0.0, 0.8, 0.0, 0.0, -1.3]),
    )


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_amax_amin_split_ties_evenly_as_torch(reduce):
    s, src = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 1.0, 0.5, 4.0])

    def fn(lib):
        return lambda a, b: a.scatter_reduce(0, lib.tensor([0, 1, 0, 0, 1]), b, reduce)

    assert_jvp_as_torch(fn(fc), fn(torch), [s, src], [rand(3), rand(5, 1)])


# ---- reductions ----


def test_max_and_min_of_all_elements():
    check(lambda a: a.max(), distinct((3, 4)))
    check(lambda a: a.min(), distinct((3, 4), 1))


def test_max_min_amax_amin_split_ties_evenly_as_torch():
    x, t = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 1.0]]), rand((2, 4))
    assert_jvp_as_torch(lambda a: a.max(), lambda a: a.max(), [x], [t])
    assert_jvp_as_torch(lambda a: a.min(), lambda a: a.min(), [-x], [t])
    assert_jvp_as_torch(lambda a: fc.amax(a, 1), lambda a: torch.amax(a, 1), [x], [t])
    assert_jvp_as_torch(lambda a: fc.amin(a, (0, 1)), lambda a: torch.amin(a, (0, 1)), [-x], [t])


@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_along_a_dim(keepdim):
    check(lambda a: a.max(1, keepdim=keepdim)[0], distinct((3, 4)))
    check(lambda a: a.min(0, keepdim=keepdim).values, distinct((3, 4), 1))
    check(lambda a: a.max(0)[0], np.array(1.5))  # 0-dim


@pytest.mark.parametrize("dim", [(), 1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_amin(dim, keepdim):
    check(lambda a: fc.amax(a, dim, keepdim), distinct((2, 3, 2)))
    check(lambda a: fc.amin(a, dim, keepdim), distinct((2, 3, 2), 1))


@pytest.mark.parametrize("keepdim", [False, True])
def test_prod_along_a_dim(keepdim):
    check(lambda a: a.prod(1, keepdim=keepdim), rand((3, 4)))
    # rows with no zero, one zero, two zeros
    x = np.array([[0.5, -1.2, 2.0], [0.7, 0.0, -1.5], [0.0, 3.0, 0.0]])
    check(lambda a: a.prod(1, keepdim=keepdim), x)
    check(lambda a: a.prod(0), x)


def test_prod_of_complex_values_as_torch():
    assert_jvp_as_torch(lambda a: a.prod(1), lambda a: a.prod(1), [crand((3, 4))], [crand((3, 4), 1)])


@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var(dim, correction):
    check(lambda a: a.var(dim, correction=correction), rand((3, 4, 2)))
    check(lambda a: a.var(dim, correction=correction, keepdim=True), rand((3, 4, 2), 1))


def test_var_of_complex_values_as_torch():
    assert_jvp_as_torch(lambda a: a.var(1), lambda a: a.var(1), [crand((3, 4))], [crand((3, 4), 1)])


# ---- scans ----


def test_cumprod():
    check(lambda a: a.cumprod(1), rand((3, 4)))
    x = np.array([[0.5, 0.0, -1.2, 2.0, 0.3], [0.0, 1.5, 0.0, 0.7, 2.0], [1.1, -0.9, 1.3, 0.8, 0.0]])
    check(lambda a: a.cumprod(1), x)
    check(lambda a: a.cumprod(0), x.T)
    check(lambda a: a.cumprod(0), np.array(0.7))
    assert_jvp_as_torch(lambda a: a.cumprod(1), lambda a: a.cumprod(1), [crand((2, 3))], [crand((2, 3), 1)])


def test_cummax_cummin():
    check(lambda a: fc.cummax(a, 1)[0], distinct((3, 4)))
    check(lambda a: fc.cummin(a, 0).values, distinct((3, 4), 1))
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0]])
    assert_jvp_as_torch(lambda a: fc.cummax(a, 1)[0], lambda a: torch.cummax(a, 1)[0], [x], [rand((1, 5))])
    assert_jvp_as_torch(lambda a: fc.cummin(a, 1)[0], lambda a: torch.cummin(a, 1)[0], [-x], [rand((1, 5))])


def test_logcumsumexp():
    check(lambda a: fc.logcumsumexp(a, 1), rand((3, 4)))
    check(lambda a: fc.logcumsumexp(a, 0), rand((3, 4), 1))
    assert_jvp_as_torch(
        lambda a: fc.logcumsumexp(a, -1), lambda a: torch.logcumsumexp(a, -1), [rand((2, 5))], [rand((2, 5), 1)]
    )


def test_logcumsumexp_tangent_does_not_underflow_across_a_wide_range():
    # out_0 = x_0, so d out_0 = t_0 whatever the later values (a shift by the row's max would lose it)
    _, (t,) = fb_jvp(lambda a: fc.logcumsumexp(a, 0), [np.array([-1000.0, 0.0, 3.0])], [np.array([1.0, -2.0, 0.5])])
    w = np.exp(np.array([0.0, 3.0]) - np.logaddexp(0.0, 3.0))
    np.testing.assert_allclose(t, [1.0, -2.0, w @ [-2.0, 0.5]], rtol=1e-12)


# ---- sorts and selections ----


@pytest.mark.parametrize("descending", [False, True])
def test_sort(descending):
    check(lambda a: fc.sort(a, 1, descending=descending)[0], distinct((3, 4)))
    check(lambda a: fc.sort(a, 0, descending=descending).values, distinct((3, 4), 1))


@pytest.mark.parametrize("largest", [True, False])
def test_topk(largest):
    check(lambda a: fc.topk(a, 2, 1, largest=largest)[0], distinct((3, 5)))
    check(lambda a: fc.topk(a, 1, 0, largest=largest, sorted=False).values, distinct((3, 5), 1))


def test_sort_and_topk_with_ties_as_torch():
    x = np.array([[2.0, 1.0, 2.0, 0.0]])
    assert_jvp_as_torch(lambda a: fc.sort(a, 1)[0], lambda a: torch.sort(a, 1)[0], [x], [rand((1, 4))])
    assert_jvp_as_torch(lambda a: fc.topk(a, 2)[0], lambda a: torch.topk(a, 2)[0], [x], [rand((1, 4), 1)])


@pytest.mark.parametrize("keepdim", [False, True])
def test_mode_as_torch(keepdim):
    # the mode is not differentiable by finite differences (a perturbation breaks the tie that makes it)
    x = np.array([[1.0, 2.0, 1.0, 3.0], [2.0, 2.0, 5.0, 4.0], [7.0, 6.0, 7.0, 6.0]])
    assert_jvp_as_torch(
        lambda a: fc.mode(a, 1, keepdim)[0], lambda a: torch.mode(a, 1, keepdim)[0], [x], [rand((3, 4))]
    )


def test_frexp_mantissa():
    check(lambda a: fc.frexp(a)[0], rand((3, 4)) * 10)
    _, tangents = fb_jvp(lambda a: fc.frexp(a), [np.array([3.0, -0.3])], [np.array([1.0, 1.0])])
    np.testing.assert_allclose(tangents[0], [0.25, 2.0])
    assert tangents[1] is None  # the int exponent


def test_angle():
    check(lambda a: fc.angle(a), rand(4))  # real: piecewise constant
    assert_jvp_as_torch(fc.angle, torch.angle, [crand(4)], [crand(4, 1)])


def test_ops_without_a_forward_formula_say_so():
    # geqrf and the LDL ops have no derivative in either mode (their backward raises too, as torch's)
    a = fb_tensor(invertible((3, 3)))
    ld, pivots = LA.ldl_factor(a + a.mT)
    with fwAD.dual_level():
        x = fwAD.make_dual(a, fb_tensor(rand((3, 3))))
        with pytest.raises(NotImplementedError, match=r"\[_geqrf\] forward-mode AD is not implemented"):
            fc.geqrf(x)
        with pytest.raises(NotImplementedError, match=r"\[_linalg_ldl_factor_ex\] forward-mode AD"):
            LA.ldl_factor(x + x.mT)
        with pytest.raises(NotImplementedError, match=r"\[_linalg_ldl_solve\] forward-mode AD"):
            LA.ldl_solve(ld, pivots, x)


# ---- linear algebra ----

BATCHES = [(), (2,)]


def spd_of(x):
    """A symmetric positive-definite function of any square x (works on both libraries)."""
    n = x.shape[-1]
    eye = fb_tensor(np.eye(n)) if isinstance(x, fc.Tensor) else torch.eye(n, dtype=x.dtype)
    return x @ x.transpose(-2, -1) + n * eye


def hermitian(a):
    return a + a.conj().swapaxes(-1, -2)


@pytest.mark.parametrize("batch", BATCHES)
def test_inv(batch):
    check(LA.inv, invertible((*batch, 3, 3)))


@pytest.mark.parametrize("batch", BATCHES)
def test_solve(batch):
    check(LA.solve, invertible((*batch, 3, 3)), rand((*batch, 3, 2), 1))
    check(lambda b: LA.solve(fb_tensor(invertible((3, 3), 2)), b), rand((3,), 3))  # only B dual


@pytest.mark.parametrize("batch", BATCHES)
def test_slogdet_and_det(batch):
    check(lambda a: LA.slogdet(a).logabsdet, invertible((*batch, 3, 3)))
    check(LA.det, invertible((*batch, 3, 3), 1) - 4 * np.eye(3))  # negative determinants too


def test_slogdet_complex_sign_and_logabsdet_as_torch():
    a = crand((3, 3)) + 3 * np.eye(3)
    assert_jvp_as_torch(lambda x: tuple(LA.slogdet(x)), lambda x: tuple(TLA.slogdet(x)), [a], [crand((3, 3), 1)])
    _, (sign_t, _) = fb_jvp(lambda x: tuple(LA.slogdet(x)), [a.real], [rand((3, 3), 1)])
    np.testing.assert_array_equal(sign_t, 0.0)  # a real determinant's sign is piecewise constant


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    check(lambda a: LA.cholesky(spd_of(a), upper=upper), rand((3, 3)))
    check(lambda a: LA.cholesky(spd_of(a), upper=upper), rand((2, 3, 3), 1))
    h = crand((3, 3)) @ crand((3, 3)).conj().T + 3 * np.eye(3)
    dh = hermitian(crand((3, 3), 1))
    assert_jvp_as_torch(lambda x: LA.cholesky(x, upper=upper), lambda x: TLA.cholesky(x, upper=upper), [h], [dh])


@pytest.mark.parametrize(
    ("shape", "mode"),
    [((4, 3), "reduced"), ((3, 3), "reduced"), ((3, 5), "reduced"), ((2, 4, 2), "reduced")]
    + [((3, 3), "complete"), ((3, 5), "complete")],  # complete with more rows than columns: see the errors
)
def test_qr(shape, mode):
    check(lambda a: tuple(LA.qr(a, mode=mode)), rand(shape))


@pytest.mark.parametrize("shape", [(4, 3), (3, 5)])
def test_qr_complex_as_torch(shape):
    assert_jvp_as_torch(lambda a: tuple(LA.qr(a)), lambda a: tuple(TLA.qr(a)), [crand(shape)], [crand(shape, 1)])


def test_qr_forward_mode_errors_as_torch():
    with fwAD.dual_level():
        x = fwAD.make_dual(fb_tensor(rand((4, 3))), fb_tensor(rand((4, 3), 1)))
        with pytest.raises(fc.FlambeauError, match="depends on Q, which is not computed when mode='r'"):
            LA.qr(x, mode="r")
        with pytest.raises(fc.FlambeauError, match="not differentiable when mode='complete' and nrows > ncols"):
            LA.qr(x, mode="complete")


def svd_invariants(full_matrices):
    """S, U S Vh and |U|, |Vh| over the first k vectors: unchanged by the vectors' signs."""

    def fn(a):
        U, S, Vh = LA.svd(a, full_matrices=full_matrices)
        k = S.shape[-1]
        U, Vh = U[..., :k], Vh[..., :k, :]
        return S, (U * S.unsqueeze(-2)) @ Vh, U.abs(), Vh.abs()

    return fn


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4), (2, 3, 2)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(shape, full_matrices):
    check(svd_invariants(full_matrices), rand(shape))


def test_svdvals_recomputes_the_vectors_it_needs():
    check(LA.svdvals, rand((4, 3)))
    check(LA.svdvals, rand((2, 5), 1))


def test_svd_full_matrices_extra_vectors_get_zero_tangents_as_torch():
    def extra(lib):
        def fn(a):
            U, _, Vh = lib.linalg.svd(a)
            return U[:, 2:], Vh[2:, :]

        return fn

    for a in (rand((4, 2)), rand((2, 4))):
        _, tangents = fb_jvp(extra(fc), [a], [rand(a.shape, 1)])
        _, th_tangents = torch_jvp(extra(torch), [a], [rand(a.shape, 1)])
        for mine, theirs in zip(tangents, th_tangents, strict=True):
            np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4)])
def test_svd_complex_as_torch(shape):
    def fn(lib):
        def f(a):
            U, S, Vh = lib.linalg.svd(a, full_matrices=False)
            return S, (U * S.unsqueeze(-2).to(U.dtype)) @ Vh, U.abs(), Vh.abs()

        return f

    assert_jvp_as_torch(fn(fc), fn(torch), [crand(shape)], [crand(shape, 1)])


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(batch, uplo):
    def fn(a):
        L, V = LA.eigh(a + a.mT, UPLO=uplo)
        return L, V.abs(), (V * L.unsqueeze(-2)) @ V.mT

    check(fn, rand((*batch, 3, 3)))
    check(lambda a: LA.eigvalsh(a + a.mT), rand((*batch, 3, 3), 1))


def test_eigh_complex_as_torch():
    h, dh = hermitian(crand((3, 3))), hermitian(crand((3, 3), 1))

    def fn(lib):
        def f(a):
            L, V = lib.linalg.eigh(a)
            return L, V.abs(), (V * L.unsqueeze(-2).to(V.dtype)) @ V.mT.conj()

        return f

    assert_jvp_as_torch(fn(fc), fn(torch), [h], [dh])
    assert_jvp_as_torch(LA.eigvalsh, TLA.eigvalsh, [h], [dh])


@pytest.mark.parametrize("batch", BATCHES)
def test_eig(batch):
    a = rand((*batch, 3, 3))
    check(lambda x: fc.view_as_real(LA.eig(x)[0]), a)
    check(lambda x: LA.eig(x)[1].abs(), a)  # unit norm; the phase is the gauge
    check(lambda x: fc.view_as_real(LA.eigvals(x)), a)


def test_eig_as_torch():
    for a, t in ((rand((3, 3)), rand((3, 3), 1)), (crand((3, 3)), crand((3, 3), 1))):
        assert_jvp_as_torch(lambda x: tuple(LA.eig(x)), lambda x: tuple(TLA.eig(x)), [a], [t])


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 3, 3)])
def test_lu_factor(shape):
    check(lambda a: LA.lu_factor(a)[0], rand(shape) + (2 * np.eye(*shape[-2:]) if shape[-1] == shape[-2] else 0))


def test_lu_factor_complex_as_torch():
    a = crand((3, 3)) + 3 * np.eye(3)
    assert_jvp_as_torch(lambda x: LA.lu_factor(x)[0], lambda x: TLA.lu_factor(x)[0], [a], [crand((3, 3), 1)])


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(left, adjoint):
    LU, piv = LA.lu_factor(fb_tensor(invertible((3, 3))))
    b = rand((3, 2) if left else (2, 3), 1)
    check(lambda lu, x: LA.lu_solve(lu, piv, x, left=left, adjoint=adjoint), to_np(LU), b)
    # through lu_factor: A -> X, as torch
    assert_jvp_as_torch(
        lambda a, x: LA.lu_solve(*LA.lu_factor(a), x, left=left, adjoint=adjoint),
        lambda a, x: TLA.lu_solve(*TLA.lu_factor(a), x, left=left, adjoint=adjoint),
        [invertible((3, 3), 2), b],
        [rand((3, 3), 3), rand(b.shape, 4)],
    )


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4), (2, 3, 2)])
def test_pinv(shape):
    check(LA.pinv, rand(shape))


def test_pinv_hermitian_and_complex_as_torch():
    check(lambda a: LA.pinv(a + a.mT, hermitian=True), rand((3, 3)))
    assert_jvp_as_torch(LA.pinv, TLA.pinv, [crand((4, 3))], [crand((4, 3), 1)])


def test_values_without_vectors_recompute_them_for_the_tangent():
    # the primitives called with compute_uv / compute_v False (what svdvals, eigvalsh, eigvals may do)
    check(lambda a: fc._C._linalg_svd(a, False, False)[1], rand((4, 3)))
    check(lambda a: fc._C._linalg_eigh(a + a.mT, "L", False)[0], rand((3, 3), 1))
    check(lambda a: fc.view_as_real(fc._C._linalg_eig(a, False)[0]), rand((3, 3), 2))
    with fwAD.dual_level():
        x = fwAD.make_dual(fb_tensor(rand((4, 3))), fb_tensor(rand((4, 3), 1)))
        u, s, vh = fc._C._linalg_svd(x, False, False)
        assert fwAD.unpack_dual(s).tangent is not None
        assert fwAD.unpack_dual(u).tangent is None and fwAD.unpack_dual(vh).tangent is None


REVERSE_OVER_FORWARD = {
    "prod": lambda a: a.prod(1),
    "cumprod": lambda a: a.cumprod(0),
    "logcumsumexp": lambda a: fc.logcumsumexp(a, 1),
    "var": lambda a: a.var(1),
    "scatter_reduce": lambda a: a.scatter_reduce(0, fc.tensor([[0, 1, 0], [2, 2, 1], [0, 2, 2]]), a * a, "prod"),
    "inv": LA.inv,
    "slogdet": lambda a: LA.slogdet(a)[1],
    "cholesky": lambda a: LA.cholesky(spd_of(a)),
    "qr": lambda a: LA.qr(a)[1],
    "svdvals": LA.svdvals,
    "eigvalsh": lambda a: LA.eigvalsh(a + a.mT),
    "pinv": LA.pinv,
}


@pytest.mark.parametrize("name", sorted(REVERSE_OVER_FORWARD))
def test_tangents_are_differentiable_reverse_over_forward(name):
    """The formulas are core ops: the tangent of a primal that requires grad records a graph, whose
    gradient (x -> J(x) t differentiated by reverse mode) matches finite differences."""
    fn, t = REVERSE_OVER_FORWARD[name], fb_tensor(rand((3, 3), 1))

    def tangent(x):
        with fwAD.dual_level():
            return fwAD.unpack_dual(fn(fwAD.make_dual(x, t))).tangent

    # tangent runs a dual level itself: no forward check of it (one level at a time).
    assert ag.gradcheck(tangent, (fb_tensor(invertible((3, 3)), requires_grad=True),), check_forward_ad=False)
