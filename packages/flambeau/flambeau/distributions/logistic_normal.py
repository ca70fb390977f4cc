"""The logistic-normal distribution on the simplex."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    r"""A normal distribution pushed onto the simplex by :class:`StickBreakingTransform`: ``K`` parameters give
    points of the ``K+1``-simplex.

    Args:
        loc (float or Tensor): the mean of the base normal distribution.
        scale (float or Tensor): the standard deviation of the base normal distribution, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import LogisticNormal
        >>> m = LogisticNormal(fb.zeros(3), fb.ones(3))
        >>> m.event_shape, round(m.sample().sum().item(), 4)
        (flambeau.Size([4]), 1.0)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> LogisticNormal:
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def loc(self) -> fb.Tensor:
        """The mean of the base normal distribution."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> fb.Tensor:
        """The standard deviation of the base normal distribution."""
        return self.base_dist.base_dist.scale
