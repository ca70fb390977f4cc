"""The half-normal distribution: ``|X|`` for ``X ~ Normal(0, scale)``."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal"]


class _Folded(TransformedDistribution):
    """``|X|`` for ``X`` from a distribution symmetric about 0: the density doubles on ``[0, inf)``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, base_dist: Distribution, validate_args: bool | None = None) -> None:
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self) -> fb.Tensor:
        """The scale of the distribution folded."""
        return self.base_dist.scale

    @property
    def mode(self) -> fb.Tensor:
        return fb.zeros_like(self.scale)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return fb.where(value >= 0, log_prob, fb.full_like(log_prob, float("-inf")))

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: fb.Tensor) -> fb.Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> fb.Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    r"""A half-normal distribution: ``|X|`` for ``X ~ Normal(0, scale)``.

    Args:
        scale (float or Tensor): the scale of the full normal distribution, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import HalfNormal
        >>> round(HalfNormal(fb.tensor([1.0])).mean.item(), 4)
        0.7979
    """

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(Normal(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> HalfNormal:
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def mean(self) -> fb.Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> fb.Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)
