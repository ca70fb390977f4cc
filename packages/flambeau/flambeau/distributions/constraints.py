"""Constraints: where a distribution's parameters and samples are valid, as ``torch.distributions.constraints``.

A :class:`Constraint` answers :meth:`Constraint.check` with a boolean tensor of the value's
batch shape (its ``event_dim`` rightmost dimensions are reduced).

Example:
    >>> import flambeau as fb
    >>> from flambeau.distributions import constraints
    >>> constraints.positive.check(fb.tensor([1.0, -1.0])).tolist()
    [True, False]
    >>> constraints.interval(0.0, 1.0)
    Interval(lower_bound=0.0, upper_bound=1.0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flambeau_core as fb

__all__ = [
    "Constraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "independent",
    "integer_interval",
    "interval",
    "half_open_interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "MixtureSameFamilyConstraint",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_semidefinite",
    "positive_definite",
    "positive_integer",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]


def _all_rightmost(ok: fb.Tensor, n: int) -> fb.Tensor:
    """Reduces the n rightmost dimensions of a boolean tensor with all()."""
    if n == 0:
        return ok
    return ok.reshape(tuple(ok.shape[: ok.dim() - n]) + (-1,)).all(-1)


class Constraint:
    """Abstract base class for constraints: a region over which a variable is valid.

    ``is_discrete`` says whether the region is discrete, ``event_dim`` how many rightmost
    dimensions together form one event; :meth:`check` returns a boolean tensor with
    ``sample_shape + batch_shape``.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.constraints import real
        >>> real.check(fb.tensor([0.0, float("nan")])).tolist()
        [True, False]
    """

    is_discrete = False
    event_dim = 0

    def check(self, value: fb.Tensor) -> fb.Tensor:
        """A boolean tensor: whether each event of ``value`` satisfies the constraint.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import constraints
            >>> constraints.unit_interval.check(fb.tensor([0.5, 2.0])).tolist()
            [True, False]
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for variables whose support depends on other variables; it cannot be checked."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> _Dependent:
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x: fb.Tensor) -> fb.Tensor:
        raise ValueError("[Dependent.check] cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a :data:`dependent` placeholder (which cannot be checked).

    Example:
        >>> from flambeau.distributions import constraints
        >>> constraints.is_dependent(constraints.dependent), constraints.is_dependent(constraints.real)
        (True, False)
    """
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose constraint depends on the instance (``support`` of Uniform, Binomial ...)."""

    def __init__(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        is_discrete: Any = NotImplemented,
        event_dim: Any = NotImplemented,
    ) -> None:
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """Reinterprets the ``reinterpreted_batch_ndims`` rightmost batch dimensions of a constraint as event ones."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"[independent] expected a Constraint, got {type(base_constraint).__name__}")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(
                "[independent] expected a non-negative int reinterpreted_batch_ndims, "
                f"got {reinterpreted_batch_ndims!r}"
            )
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: fb.Tensor) -> fb.Tensor:
        ok = self.base_constraint.check(value)
        if ok.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"[IndependentConstraint.check] Expected value.dim() >= {expected} but got {value.dim()}")
        return _all_rightmost(ok, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The support of :class:`MixtureSameFamily`: the component constraint, the mixture dimension added back.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import constraints
        >>> constraints.MixtureSameFamilyConstraint(constraints.positive).check(fb.tensor([1.0, -1.0])).tolist()
        [True, False]
    """

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError(
                f"[MixtureSameFamilyConstraint] expected a Constraint, got {type(base_constraint).__name__}"
            )
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: fb.Tensor) -> fb.Tensor:
        """Checks ``value`` (without the mixture dimension) against every component.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import constraints
            >>> constraints.MixtureSameFamilyConstraint(constraints.real).check(fb.tensor([0.0])).tolist()
            [True]
        """
        unsqueezed = value.unsqueeze(-1 - self.event_dim)
        ok = self.base_constraint.check(unsqueezed)
        ok = ok.reshape(tuple(ok.shape[: ok.dim() - 1]) + (-1,)).all(-1) if ok.dim() else ok
        return ok

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_constraint!r})"


def _is_integral(value: fb.Tensor) -> fb.Tensor:
    return value == value.floor()


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: fb.Tensor) -> fb.Tensor:
        is_boolean = ((value == 0) | (value == 1)).all(-1)
        is_normalized = value.sum(-1) == 1
        return is_boolean & is_normalized


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return _is_integral(value) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerLessThan(Constraint):
    is_discrete = True

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return _is_integral(value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return _is_integral(value) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value: fb.Tensor) -> fb.Tensor:
        return value == value  # NaN is the only value outside the extended real line


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative integer counts summing to at most ``upper_bound`` (PyTorch checks only the sum)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, x: fb.Tensor) -> fb.Tensor:
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: fb.Tensor) -> fb.Tensor:
        return _all_rightmost(value.tril() == value, 2)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: fb.Tensor) -> fb.Tensor:
        lower = _all_rightmost(value.tril() == value, 2)
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return lower & positive_diagonal


class _CorrCholesky(Constraint):
    event_dim = 2

    def check(self, value: fb.Tensor) -> fb.Tensor:
        tol = fb.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = fb.linalg.norm(value.detach(), dim=-1)
        unit_rows = ((row_norm - 1.0).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit_rows


class _Square(Constraint):
    event_dim = 2

    def check(self, value: fb.Tensor) -> fb.Tensor:
        n, m = value.shape[-2], value.shape[-1]
        return fb.full(tuple(value.shape[:-2]), n == m, dtype=fb.bool)


class _Symmetric(_Square):
    def check(self, value: fb.Tensor) -> fb.Tensor:
        square = super().check(value)
        if not bool(square.all()):
            return square
        return _all_rightmost((value - value.mT).abs() <= 1e-6 * (1 + value.abs()), 2)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: fb.Tensor) -> fb.Tensor:
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return (fb.linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value: fb.Tensor) -> fb.Tensor:
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return (fb.linalg.eigvalsh(value) > 0).all(-1)


class _Cat(Constraint):
    """Applies a sequence of constraints to consecutive slices of ``dim`` (``lengths`` long each)."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0, lengths: Sequence[int] | None = None) -> None:
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"[cat] got {len(self.cseq)} constraints but {len(self.lengths)} lengths")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: fb.Tensor) -> fb.Tensor:
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths, strict=True):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return fb.cat(checks, self.dim)


class _Stack(Constraint):
    """Applies a sequence of constraints to the slices of ``dim``, one each."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0) -> None:
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value: fb.Tensor) -> fb.Tensor:
        if value.shape[self.dim] != len(self.cseq):
            raise ValueError(
                f"[stack] value has {value.shape[self.dim]} slices along dim {self.dim}, expected {len(self.cseq)}"
            )
        return fb.stack([c.check(v) for c, v in zip(self.cseq, value.unbind(self.dim), strict=True)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
