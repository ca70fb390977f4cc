"""Invertible transforms with log-determinant Jacobians, as ``torch.distributions.transforms``.

Example:
    >>> import flambeau as fb
    >>> from flambeau.distributions.transforms import AffineTransform, ExpTransform
    >>> t = ExpTransform()
    >>> t(fb.tensor([0.0])).tolist(), t.inv(fb.tensor([1.0])).tolist()
    ([1.0], [0.0])
"""

from __future__ import annotations

import math
import numbers
import operator
import weakref
from collections.abc import Sequence
from functools import reduce
from typing import Any

import flambeau_core as fb
import flambeau_nn.functional as F

from . import constraints
from .utils import _inherit_docstrings, _sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftplusTransform",
    "TanhTransform",
    "SoftmaxTransform",
    "StackTransform",
    "StickBreakingTransform",
    "Transform",
    "identity_transform",
]


class Transform:
    """Abstract class for invertible transforms with computable log-determinant Jacobians.

    ``t(x)`` applies the transform, ``t.inv(y)`` its inverse, ``t.log_abs_det_jacobian(x, y)``
    the log of the absolute Jacobian determinant. ``cache_size=1`` remembers the latest ``(x, y)``
    pair, so that inverting a sample returns the very tensor it came from.

    Args:
        cache_size: 0 (no cache) or 1.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import ExpTransform
        >>> ExpTransform().log_abs_det_jacobian(fb.tensor([2.0]), fb.tensor([7.389])).tolist()
        [2.0]
    """

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _inherit_docstrings(cls, Transform)

    def __init__(self, cache_size: int = 0) -> None:
        self._cache_size = cache_size
        self._inv: Any = None
        if cache_size == 0:
            pass
        elif cache_size == 1:
            self._cached_x_y: tuple[Any, Any] = (None, None)
        else:
            raise ValueError(f"[Transform] cache_size must be 0 or 1, got {cache_size}")
        super().__init__()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        """The number of dimensions one event of the transform acts on.

        Example:
            >>> from flambeau.distributions.transforms import SoftmaxTransform
            >>> SoftmaxTransform().event_dim
            1
        """
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("[Transform.event_dim] Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (``t.inv.inv is t``).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions.transforms import AffineTransform
            >>> AffineTransform(1.0, 2.0).inv(fb.tensor([3.0])).tolist()
            [1.0]
        """
        inv = None
        if self._inv is not None:
            inv = self._inv()
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self) -> int | fb.Tensor:
        """The sign of the Jacobian determinant, for bijective univariate transforms.

        Example:
            >>> from flambeau.distributions.transforms import ExpTransform
            >>> ExpTransform().sign
            1
        """
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with the given cache size.

        Example:
            >>> from flambeau.distributions.transforms import ExpTransform
            >>> ExpTransform().with_cache(1)._cache_size
            1
        """
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: fb.Tensor) -> fb.Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: fb.Tensor) -> fb.Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        raise NotImplementedError

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        """``log |dy/dx|`` given input and output.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions.transforms import AffineTransform
            >>> AffineTransform(0.0, 3.0).log_abs_det_jacobian(fb.tensor([1.0]), fb.tensor([3.0])).exp().tolist()
            [3.0]
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The output shape given an input shape.

        Example:
            >>> from flambeau.distributions.transforms import StickBreakingTransform
            >>> StickBreakingTransform().forward_shape((5, 3))
            (5, 4)
        """
        return tuple(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The input shape given an output shape.

        Example:
            >>> from flambeau.distributions.transforms import StickBreakingTransform
            >>> StickBreakingTransform().inverse_shape((5, 4))
            (5, 3)
        """
        return tuple(shape)


class _InverseTransform(Transform):
    """The inverse of a transform (built by ``Transform.inv``)."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    @property
    def sign(self) -> int | fb.Tensor:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x: fb.Tensor) -> fb.Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._inv.forward_shape(shape)


class _ParameterFreeTransform(Transform):
    """A transform without parameters: any two of its class are equal."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self))

    __hash__ = object.__hash__


class ComposeTransform(Transform):
    """Applies a chain of transforms, first to last.

    Args:
        parts: the transforms.
        cache_size: 0 or 1.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import AffineTransform, ComposeTransform, ExpTransform
        >>> t = ComposeTransform([AffineTransform(0.0, 2.0), ExpTransform()])
        >>> round(t(fb.tensor([0.5])).item(), 4)
        2.7183
    """

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # Later parts may act on more dimensions than the first one reads.
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> int | fb.Tensor:
        sign: Any = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        inv = None
        if self._inv is not None:
            inv = self._inv()
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: fb.Tensor) -> fb.Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        if not self.parts:
            return fb.zeros_like(x)
        # The intermediate values, cached by the parts when they were computed with a cache.
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, x_i, y_i in zip(self.parts, xs[:-1], xs[1:], strict=True):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(x_i, y_i), event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return reduce(operator.add, terms)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self) -> str:
        return self.__class__.__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """Treats ``reinterpreted_batch_ndims`` rightmost batch dimensions of a transform as event dimensions.

    Args:
        base_transform: the transform.
        reinterpreted_batch_ndims: how many dimensions become event dimensions.
        cache_size: 0 or 1.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import ExpTransform, IndependentTransform
        >>> x = fb.tensor([[0.0, 1.0]])
        >>> IndependentTransform(ExpTransform(), 1).log_abs_det_jacobian(x, x.exp()).tolist()
        [1.0]
    """

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> int | fb.Tensor:
        return self.base_transform.sign

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError(f"[IndependentTransform] input needs at least {self.domain.event_dim} dims, got {x.dim()}")
        return self.base_transform(x)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError(
                f"[IndependentTransform] input needs at least {self.codomain.event_dim} dims, got {y.dim()}"
            )
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshapes the rightmost part of a tensor from ``in_shape`` to ``out_shape`` (same number of elements).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import ReshapeTransform
        >>> ReshapeTransform((4,), (2, 2))(fb.zeros(3, 4)).shape
        flambeau.Size([3, 2, 2])
    """

    bijective = True

    def __init__(self, in_shape: Sequence[int], out_shape: Sequence[int], cache_size: int = 0) -> None:
        self.in_shape = fb.Size(in_shape)
        self.out_shape = fb.Size(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError(f"[ReshapeTransform] in_shape {self.in_shape}, out_shape {self.out_shape} differ in numel")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        batch_shape = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return fb.zeros(batch_shape, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        cut = len(shape) - len(self.in_shape)
        if cut < 0 or tuple(shape[cut:]) != tuple(self.in_shape):
            raise ValueError(f"[ReshapeTransform] shape {tuple(shape)} does not end in {tuple(self.in_shape)}")
        return tuple(shape[:cut]) + tuple(self.out_shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        cut = len(shape) - len(self.out_shape)
        if cut < 0 or tuple(shape[cut:]) != tuple(self.out_shape):
            raise ValueError(f"[ReshapeTransform] shape {tuple(shape)} does not end in {tuple(self.out_shape)}")
        return tuple(shape[:cut]) + tuple(self.in_shape)


class ExpTransform(_ParameterFreeTransform):
    r"""The transform :math:`y = \exp(x)`.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import ExpTransform
        >>> ExpTransform()(fb.tensor([0.0])).tolist()
        [1.0]
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = 1  # type: ignore[assignment]

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return x.exp()

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        return x


class PowerTransform(Transform):
    r"""The transform :math:`y = x^{\text{exponent}}` on positive numbers.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import PowerTransform
        >>> PowerTransform(fb.tensor(2.0))(fb.tensor([3.0])).tolist()
        [9.0]
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = _broadcast_params(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> fb.Tensor:
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(fb.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(fb.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))


def _broadcast_params(*values: Any) -> tuple[fb.Tensor, ...]:
    return tuple(v if isinstance(v, fb.Tensor) else fb.tensor(float(v)) for v in values)


def _clipped_sigmoid(x: fb.Tensor) -> fb.Tensor:
    info = fb.finfo(x.dtype)
    return fb.sigmoid(x).clamp(min=info.tiny, max=1.0 - info.eps)


class SigmoidTransform(_ParameterFreeTransform):
    r"""The transform :math:`y = 1 / (1 + e^{-x})` (kept strictly inside (0, 1)).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import SigmoidTransform
        >>> SigmoidTransform()(fb.tensor([0.0])).tolist()
        [0.5]
    """

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = 1  # type: ignore[assignment]

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        info = fb.finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(_ParameterFreeTransform):
    r"""The transform :math:`y = \log(1 + e^x)`.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import SoftplusTransform
        >>> round(SoftplusTransform()(fb.tensor([0.0])).item(), 4)
        0.6931
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = 1  # type: ignore[assignment]

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return F.softplus(x)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        return -F.softplus(-x)


class TanhTransform(_ParameterFreeTransform):
    r"""The transform :math:`y = \tanh(x)`; the log-Jacobian is :math:`2(\log 2 - x - \text{softplus}(-2x))`.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import TanhTransform
        >>> TanhTransform()(fb.tensor([0.0])).tolist()
        [0.0]
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = 1  # type: ignore[assignment]

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return x.tanh()

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        # Not clamped: a cache keeps y = tanh(x) exact for samples; outside (-1, 1) the inverse is inf/nan.
        return y.atanh()

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(_ParameterFreeTransform):
    """The transform ``y = |x|`` (not bijective; its inverse is the identity).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import AbsTransform
        >>> AbsTransform()(fb.tensor([-2.0])).tolist()
        [2.0]
    """

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return x.abs()

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return y


class AffineTransform(Transform):
    r"""The transform :math:`y = \text{loc} + \text{scale} \cdot x`.

    Args:
        loc: the offset (number or tensor).
        scale: the factor (number or tensor).
        event_dim: how many rightmost dimensions form one event (the Jacobian sums over them).
        cache_size: 0 or 1.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import AffineTransform
        >>> AffineTransform(1.0, 2.0)(fb.tensor([3.0])).tolist()
        [7.0]
    """

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for mine, theirs in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(mine, numbers.Number) and isinstance(theirs, numbers.Number):
                if mine != theirs:
                    return False
            elif not bool((fb.as_tensor(mine) == fb.as_tensor(theirs)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self) -> int | fb.Tensor:
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        shape = tuple(x.shape)
        scale = self.scale
        if isinstance(scale, numbers.Real):
            result = fb.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self.event_dim:
            result_size = tuple(result.shape[: result.dim() - self.event_dim]) + (-1,)
            result = result.reshape(result_size).sum(-1)
            shape = shape[: len(shape) - self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(
            fb.broadcast_shapes(
                tuple(shape), tuple(getattr(self.loc, "shape", ())), tuple(getattr(self.scale, "shape", ()))
            )
        )

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.forward_shape(shape)


class SoftmaxTransform(_ParameterFreeTransform):
    """From unconstrained space to the simplex by ``softmax(x)`` (not bijective; its inverse is ``log``).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import SoftmaxTransform
        >>> SoftmaxTransform()(fb.zeros(2)).tolist()
        [0.5, 0.5]
    """

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        logprobs = x
        probs = (logprobs - logprobs.max(-1, keepdim=True)[0]).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return y.log()

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError(f"[SoftmaxTransform] Too few dimensions on input: {tuple(shape)}")
        return tuple(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.forward_shape(shape)


class StickBreakingTransform(_ParameterFreeTransform):
    """From unconstrained space to the simplex of one more dimension by stick breaking (bijective).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import StickBreakingTransform
        >>> y = StickBreakingTransform()(fb.zeros(2))
        >>> [round(v, 4) for v in y.tolist()]
        [0.3333, 0.3333, 0.3333]
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _offset(self, k: int, like: fb.Tensor) -> fb.Tensor:
        return fb.arange(k, 0, -1, dtype=like.dtype, device=like.device).log()  # log(K - i) for i = 0..K-1

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        z = _clipped_sigmoid(x - self._offset(x.shape[-1], x))
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        y_crop = y[..., :-1]
        k = y_crop.shape[-1]
        info = fb.finfo(y.dtype)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=info.tiny)
        return y_crop.log() - sf.log() + self._offset(k, y)

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        x = x - self._offset(x.shape[-1], x)
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError(f"[StickBreakingTransform] Too few dimensions on input: {tuple(shape)}")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError(f"[StickBreakingTransform] Too few dimensions on input: {tuple(shape)}")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(_ParameterFreeTransform):
    """From unconstrained matrices to lower-triangular ones with a positive diagonal (``exp`` of the diagonal).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import LowerCholeskyTransform
        >>> LowerCholeskyTransform()(fb.zeros(2, 2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_ParameterFreeTransform):
    """From unconstrained matrices to positive-definite ones: ``L L^T`` for ``L = LowerCholeskyTransform()(x)``.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import PositiveDefiniteTransform
        >>> PositiveDefiniteTransform()(fb.zeros(2, 2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return LowerCholeskyTransform().inv(fb.linalg.cholesky(y))


class CorrCholeskyTransform(_ParameterFreeTransform):
    r"""From unconstrained vectors of length :math:`D(D-1)/2` to Cholesky factors of ``D x D`` correlation matrices.

    The vector fills the strict lower triangle row by row; each row goes through ``tanh`` and a signed
    stick-breaking step so that it has unit Euclidean norm with a positive diagonal entry.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import CorrCholeskyTransform
        >>> CorrCholeskyTransform()(fb.zeros(1)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        eps = fb.finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # Row i keeps sqrt(1 - sum of squares before each entry) of the stick: prod_{k<j} sqrt(1 - r_ik^2).
        remaining = (1 - r.pow(2)).sqrt().cumprod(-1)
        eye = fb.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return (r + eye) * F.pad(remaining[..., :-1], [1, 0], value=1)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        left = F.pad((1 - (y * y).cumsum(-1))[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2  # atanh, stable near the ends

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        left = 1 - (y * y).cumsum(-1)
        stick_breaking = 0.5 * tril_matrix_to_vec(left, diag=-2).log().sum(-1)
        tanh = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("[CorrCholeskyTransform] Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("[CorrCholeskyTransform] Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 2:
            raise ValueError("[CorrCholeskyTransform] Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("[CorrCholeskyTransform] A matrix must be square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class CatTransform(Transform):
    """Applies ``tseq[i]`` to the ``i``-th slice of ``dim`` (``lengths[i]`` long), as :func:`flambeau.cat` joins them.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import AffineTransform, CatTransform, ExpTransform
        >>> t = CatTransform([ExpTransform(), AffineTransform(1.0, 2.0)], dim=0, lengths=[1, 2])
        >>> t(fb.tensor([0.0, 1.0, 2.0])).tolist()
        [1.0, 3.0, 5.0]
    """

    def __init__(
        self, tseq: Sequence[Transform], dim: int = 0, lengths: Sequence[int] | None = None, cache_size: int = 0
    ) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("[CatTransform] tseq must be a sequence of Transforms")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"[CatTransform] got {len(self.transforms)} transforms but {len(self.lengths)} lengths")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        """The total length along ``dim``."""
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _slices(self, x: fb.Tensor) -> list[fb.Tensor]:
        if x.shape[self.dim] != self.length:
            raise ValueError(
                f"[CatTransform] expected size {self.length} along dim {self.dim}, got {x.shape[self.dim]}"
            )
        out, start = [], 0
        for length in self.lengths:
            out.append(x.narrow(self.dim, start, length))
            start += length
        return out

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return fb.cat([t(s) for t, s in zip(self.transforms, self._slices(x), strict=True)], self.dim)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return fb.cat([t.inv(s) for t, s in zip(self.transforms, self._slices(y), strict=True)], self.dim)

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        terms = []
        for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y), strict=True):
            terms.append(_sum_rightmost(t.log_abs_det_jacobian(xs, ys), self.event_dim - t.event_dim))
        # The slices' terms stand side by side when dim is a batch dimension, else they add up.
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return fb.cat(terms, dim) if dim < 0 else reduce(operator.add, terms)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies ``tseq[i]`` to the ``i``-th slice of ``dim``, as :func:`flambeau.stack` joins them.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.transforms import AffineTransform, ExpTransform, StackTransform
        >>> t = StackTransform([ExpTransform(), AffineTransform(1.0, 2.0)], dim=0)
        >>> t(fb.tensor([0.0, 1.0])).tolist()
        [1.0, 3.0]
    """

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("[StackTransform] tseq must be a sequence of Transforms")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z: fb.Tensor) -> tuple[fb.Tensor, ...]:
        if z.shape[self.dim] != len(self.transforms):
            raise ValueError(
                f"[StackTransform] expected {len(self.transforms)} slices along dim {self.dim}, got {z.shape[self.dim]}"
            )
        return z.unbind(self.dim)

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return fb.stack([t(s) for t, s in zip(self.transforms, self._slices(x), strict=True)], self.dim)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return fb.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y), strict=True)], self.dim)

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        pairs = zip(self.transforms, self._slices(x), self._slices(y), strict=True)
        return fb.stack([t.log_abs_det_jacobian(xs, ys) for t, xs, ys in pairs], self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """The transform ``y = distribution.cdf(x)`` of a univariate distribution (inverse: its ``icdf``).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Normal
        >>> from flambeau.distributions.transforms import CumulativeDistributionTransform
        >>> CumulativeDistributionTransform(Normal(0.0, 1.0))(fb.tensor([0.0])).tolist()
        [0.5]
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = 1  # type: ignore[assignment]

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)

    def _call(self, x: fb.Tensor) -> fb.Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: fb.Tensor) -> fb.Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        return self.distribution.log_prob(x)
