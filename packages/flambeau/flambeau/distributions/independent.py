"""Reinterpreting batch dimensions of a distribution as event dimensions."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .utils import _sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    r"""Reinterprets the ``reinterpreted_batch_ndims`` rightmost batch dimensions of a distribution as event dimensions.

    ``log_prob`` then sums over them (a diagonal normal over vectors from a batch of univariate normals).

    Args:
        base_distribution (Distribution): the base distribution.
        reinterpreted_batch_ndims (int): how many batch dimensions become event dimensions.
        validate_args (bool, optional): whether to check values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Independent, Normal
        >>> d = Independent(Normal(fb.zeros(3), fb.ones(3)), 1)
        >>> d.batch_shape, d.event_shape
        (flambeau.Size([]), flambeau.Size([3]))
    """

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(
        self, base_distribution: Distribution, reinterpreted_batch_ndims: int, validate_args: bool | None = None
    ) -> None:
        if not isinstance(base_distribution, Distribution):
            raise TypeError(
                f"[Independent] base_distribution must be a Distribution, got {type(base_distribution).__name__}"
            )
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise fb.FlambeauError(
                "[Independent] Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}"
            )
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        cut = len(shape) - event_dim
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Independent:
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = fb.Size(batch_shape)
        new.base_dist = self.base_dist.expand(
            tuple(batch_shape) + tuple(self.event_shape[: self.reinterpreted_batch_ndims])
        )
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        self._finish_expand(new, batch_shape, self.event_shape)
        return new

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        if self.reinterpreted_batch_ndims > 0:
            return False
        return self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self) -> fb.Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> fb.Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> fb.Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> fb.Tensor:
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> fb.Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("[Independent] Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
