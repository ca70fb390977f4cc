"""flambeau.distributions.transforms, constraints and the constraint registry against torch's: forward,
inverse, log-determinant Jacobians (also against autograd's Jacobian), shapes, caching, checks and reprs."""

import flambeau as fb
import flambeau.distributions as D
import numpy as np
import pytest
import torch
import torch.distributions as T
from distributions_testing import close, fbt, tht, to_np

rng = np.random.default_rng(5)

A, B = rng.normal(size=3), rng.uniform(0.5, 2.0, size=3)
E = rng.uniform(0.5, 2.0, size=3)

# name -> (builder(M, t), input in the domain, shape (2, 3))
TRANSFORMS = {
    "exp": (lambda M, t: M.transforms.ExpTransform(), rng.normal(size=(2, 3))),
    "affine": (lambda M, t: M.transforms.AffineTransform(t(A), t(B)), rng.normal(size=(2, 3))),
    "affine_scalar_negative": (lambda M, t: M.transforms.AffineTransform(1.5, -2.0), rng.normal(size=(2, 3))),
    "affine_event": (lambda M, t: M.transforms.AffineTransform(t(A), t(B), event_dim=1), rng.normal(size=(2, 3))),
    "power": (lambda M, t: M.transforms.PowerTransform(t(E)), rng.uniform(0.2, 3.0, size=(2, 3))),
    "sigmoid": (lambda M, t: M.transforms.SigmoidTransform(), rng.normal(size=(2, 3)) * 3),
    "softplus": (lambda M, t: M.transforms.SoftplusTransform(), rng.normal(size=(2, 3)) * 3),
    "tanh": (lambda M, t: M.transforms.TanhTransform(), rng.normal(size=(2, 3))),
    "stick_breaking": (lambda M, t: M.transforms.StickBreakingTransform(), rng.normal(size=(2, 3))),
    "lower_cholesky": (lambda M, t: M.transforms.LowerCholeskyTransform(), rng.normal(size=(2, 3, 3))),
    "compose": (
        lambda M, t: M.transforms.ComposeTransform(
            [M.transforms.AffineTransform(t(A), t(B)), M.transforms.SigmoidTransform()]
        ),
        rng.normal(size=(2, 3)),
    ),
    "independent": (
        lambda M, t: M.transforms.IndependentTransform(M.transforms.ExpTransform(), 1),
        rng.normal(size=(2, 3)),
    ),
    "reshape": (lambda M, t: M.transforms.ReshapeTransform((3,), (3, 1)), rng.normal(size=(2, 3))),
    "inverse_exp": (lambda M, t: M.transforms.ExpTransform().inv, rng.uniform(0.2, 3.0, size=(2, 3))),
    "cdf": (
        lambda M, t: M.transforms.CumulativeDistributionTransform(M.Normal(t(A), t(B))),
        rng.normal(size=(2, 3)),
    ),
    "positive_definite": (lambda M, t: M.transforms.PositiveDefiniteTransform(), rng.normal(size=(2, 3, 3))),
    "corr_cholesky": (lambda M, t: M.transforms.CorrCholeskyTransform(), rng.normal(size=(2, 6))),
    "cat": (
        lambda M, t: M.transforms.CatTransform(
            [M.transforms.ExpTransform(), M.transforms.AffineTransform(t(A[:2]), t(B[:2]))], dim=-1, lengths=[1, 2]
        ),
        rng.normal(size=(2, 3)),
    ),
    "cat_event": (
        lambda M, t: M.transforms.CatTransform(
            [M.transforms.AffineTransform(t(A[:2]), t(B[:2]), event_dim=1), M.transforms.ExpTransform()],
            dim=-1,
            lengths=[2, 1],
        ),
        rng.normal(size=(2, 3)),
    ),
    "stack": (
        lambda M, t: M.transforms.StackTransform([M.transforms.ExpTransform(), M.transforms.TanhTransform()], dim=0),
        rng.normal(size=(2, 3)),
    ),
}
BIJECTIVE_JACOBIAN = ["exp", "affine", "power", "sigmoid", "softplus", "tanh", "compose", "inverse_exp", "cdf"]


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_matches_torch(name):
    make, x = TRANSFORMS[name]
    t, tt = make(D, fbt), make(T, tht)
    y, ty = t(fbt(x)), tt(tht(x))
    close(y, ty)
    close(t.inv(y), tt.inv(ty))
    assert t.bijective == tt.bijective
    assert repr(t.domain) == repr(tt.domain) and repr(t.codomain) == repr(tt.codomain)
    assert t.forward_shape(x.shape) == tuple(tt.forward_shape(x.shape))
    assert t.inverse_shape(tuple(ty.shape)) == tuple(tt.inverse_shape(ty.shape))
    if name in ("exp", "sigmoid", "softplus", "tanh", "stick_breaking", "lower_cholesky", "inverse_exp"):
        assert repr(t) == repr(tt)
    if tt.bijective or name in ("sigmoid",):
        close(t.log_abs_det_jacobian(fbt(x), y), tt.log_abs_det_jacobian(tht(x), ty))
    if name in ("exp", "affine", "affine_scalar_negative", "sigmoid", "tanh", "softplus", "compose", "cdf"):
        close(np.asarray(to_np(t.sign) if isinstance(t.sign, fb.Tensor) else t.sign, dtype=np.float64), to_np(tt.sign))


@pytest.mark.parametrize("name", BIJECTIVE_JACOBIAN)
def test_log_abs_det_jacobian_is_autograds(name):
    """Elementwise transforms: log|dy/dx| from autograd, element by element (the Jacobian is diagonal)."""
    make, x = TRANSFORMS[name]
    t = make(D, fbt)
    xs = fbt(x, requires_grad=True)
    y = t(xs)
    (grad,) = fb.autograd.grad(y.sum(), xs)
    close(t.log_abs_det_jacobian(xs.detach(), y.detach()), np.log(np.abs(to_np(grad))), rtol=1e-8, atol=1e-9)


def test_stick_breaking_jacobian_is_autograds():
    """StickBreaking maps R^K onto the simplex in R^(K+1): the determinant of the Jacobian of its first K outputs."""
    x = rng.normal(size=3)
    t = D.transforms.StickBreakingTransform()
    jac = torch.autograd.functional.jacobian(lambda v: T.transforms.StickBreakingTransform()(v)[:-1], tht(x))
    expected = np.log(abs(np.linalg.det(jac.numpy())))
    close(t.log_abs_det_jacobian(fbt(x), t(fbt(x))), expected, rtol=1e-8)


def test_cache_returns_the_tensor_it_came_from():
    t = D.transforms.ExpTransform(cache_size=1)
    x = fbt(rng.normal(size=3))
    y = t(x)
    assert t.inv(y) is x
    assert t(x) is y
    assert D.transforms.ExpTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        D.transforms.ExpTransform(cache_size=2)


def test_transform_equality_and_inverse_of_inverse():
    t = D.transforms.ExpTransform()
    assert t.inv.inv is t
    assert D.transforms.ExpTransform() == D.transforms.ExpTransform()
    assert D.transforms.ExpTransform() != D.transforms.SigmoidTransform()
    assert D.transforms.AffineTransform(1.0, 2.0) == D.transforms.AffineTransform(1.0, 2.0)
    assert D.transforms.AffineTransform(1.0, 2.0) != D.transforms.AffineTransform(1.0, 3.0)
    assert t.inv == D.transforms.ExpTransform().inv


CONSTRAINTS = {
    "real": (lambda C: C.real, np.array([0.0, -np.inf, np.nan, 3.0])),
    "positive": (lambda C: C.positive, np.array([0.0, 1.0, -1.0])),
    "nonnegative": (lambda C: C.nonnegative, np.array([0.0, 1.0, -1.0])),
    "greater_than": (lambda C: C.greater_than(1.0), np.array([0.0, 1.0, 2.0])),
    "greater_than_eq": (lambda C: C.greater_than_eq(1.0), np.array([0.0, 1.0, 2.0])),
    "less_than": (lambda C: C.less_than(1.0), np.array([0.0, 1.0, 2.0])),
    "interval": (lambda C: C.interval(0.0, 2.0), np.array([-0.1, 0.0, 2.0, 2.1])),
    "half_open_interval": (lambda C: C.half_open_interval(0.0, 2.0), np.array([-0.1, 0.0, 2.0])),
    "unit_interval": (lambda C: C.unit_interval, np.array([0.0, 0.5, 1.0, 1.5])),
    "boolean": (lambda C: C.boolean, np.array([0.0, 1.0, 0.5])),
    "nonnegative_integer": (lambda C: C.nonnegative_integer, np.array([0.0, 2.0, 2.5, -1.0])),
    "positive_integer": (lambda C: C.positive_integer, np.array([0.0, 2.0, 2.5])),
    "integer_interval": (lambda C: C.integer_interval(0, 3), np.array([0.0, 3.0, 4.0, 1.5])),
    "simplex": (lambda C: C.simplex, np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]])),
    "one_hot": (lambda C: C.one_hot, np.array([[0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])),
    "real_vector": (lambda C: C.real_vector, np.array([[0.0, 1.0], [np.nan, 0.0]])),
    "multinomial": (lambda C: C.multinomial(3), np.array([[1.0, 2.0], [2.0, 2.0], [-1.0, 1.0]])),
    "lower_triangular": (lambda C: C.lower_triangular, np.array([[[1.0, 0.0], [2.0, -1.0]], [[1.0, 1.0], [0.0, 1.0]]])),
    "lower_cholesky": (lambda C: C.lower_cholesky, np.array([[[1.0, 0.0], [2.0, 1.0]], [[1.0, 0.0], [2.0, -1.0]]])),
    "positive_definite": (
        lambda C: C.positive_definite,
        np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ),
    "positive_semidefinite": (
        lambda C: C.positive_semidefinite,
        np.array([[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ),
    "symmetric": (lambda C: C.symmetric, np.array([[[1.0, 2.0], [2.0, 1.0]], [[1.0, 2.0], [0.0, 1.0]]])),
    "square": (lambda C: C.square, np.zeros((2, 3, 3))),
    "independent": (lambda C: C.independent(C.positive, 1), np.array([[1.0, 2.0], [1.0, -2.0]])),
    "cat": (lambda C: C.cat([C.positive, C.real], 0, [1, 2]), np.array([-1.0, -1.0, 2.0])),
    "stack": (lambda C: C.stack([C.positive, C.real], 0), np.array([[-1.0, 1.0], [-1.0, np.nan]])),
    "mixture": (lambda C: C.MixtureSameFamilyConstraint(C.positive), np.array([1.0, -1.0])),
}


@pytest.mark.parametrize("name", list(CONSTRAINTS))
def test_constraint_matches_torch(name):
    make, value = CONSTRAINTS[name]
    c, tc = make(D.constraints), make(T.constraints)
    np.testing.assert_array_equal(to_np(c.check(fbt(value))), tc.check(tht(value)).numpy().astype(np.float64))
    assert repr(c) == repr(tc)
    assert c.is_discrete == tc.is_discrete and c.event_dim == tc.event_dim


def test_dependent_constraints():
    C = D.constraints
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="cannot determine validity of dependent constraint"):
        C.dependent.check(fbt([1.0]))
    with pytest.raises(NotImplementedError, match="cannot be determined statically"):
        C.dependent.event_dim  # noqa: B018
    assert C.dependent(is_discrete=True, event_dim=1).event_dim == 1
    assert isinstance(D.Uniform.support, C.dependent_property)
    assert repr(D.Uniform(fbt([0.0]), fbt([2.0])).support).startswith("Interval(lower_bound=tensor([0.")


REGISTRY_CASES = [
    ("real", lambda C: C.real, 0),
    ("positive", lambda C: C.positive, 0),
    ("nonnegative", lambda C: C.nonnegative, 0),
    ("greater_than", lambda C: C.greater_than(1.5), 0),
    ("greater_than_eq", lambda C: C.greater_than_eq(-1.0), 0),
    ("less_than", lambda C: C.less_than(2.0), 0),
    ("unit_interval", lambda C: C.unit_interval, 0),
    ("interval", lambda C: C.interval(-1.0, 3.0), 0),
    ("half_open_interval", lambda C: C.half_open_interval(-1.0, 3.0), 0),
    ("simplex", lambda C: C.simplex, 1),
    ("independent", lambda C: C.independent(C.positive, 1), 1),
    ("lower_cholesky", lambda C: C.lower_cholesky, 2),
    ("positive_definite", lambda C: C.positive_definite, 2),
    ("corr_cholesky", lambda C: C.corr_cholesky, 1),
    ("cat", lambda C: C.cat([C.positive, C.unit_interval], -1, [1, 2]), 0),
    ("stack", lambda C: C.stack([C.positive, C.real], 0), 0),
]


@pytest.mark.parametrize(("name", "make", "event_dim"), REGISTRY_CASES)
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_matches_torch(name, make, event_dim, registry):
    c, tc = make(D.constraints), make(T.constraints)
    try:
        texpected = getattr(T, registry)(tc)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            getattr(D, registry)(c)
        return
    t = getattr(D, registry)(c)
    shape = (2, 3) if event_dim < 2 else (2, 3, 3)
    x = rng.normal(size=shape)
    y, ty = t(fbt(x)), texpected(tht(x))
    close(y, ty)
    assert bool(c.check(y).all())
    if texpected.bijective:
        close(t.inv(y), tht(x).numpy())
        close(t.log_abs_det_jacobian(fbt(x), y), texpected.log_abs_det_jacobian(tht(x), ty))


def test_constraint_registry_register_and_errors():
    registry = D.constraint_registry.ConstraintRegistry()
    with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
        registry(D.constraints.real)
    registry.register(D.constraints.real, lambda c: D.transforms.ExpTransform())
    assert registry(D.constraints.real) == D.transforms.ExpTransform()
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        registry.register(3, lambda c: c)
