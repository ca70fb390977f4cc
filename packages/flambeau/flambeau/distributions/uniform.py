"""The continuous uniform distribution on ``[low, high)``."""

from __future__ import annotations

import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    r"""A uniform distribution on the half-open interval ``[low, high)``.

    Args:
        low (float or Tensor): lower range (inclusive).
        high (float or Tensor): upper range (exclusive).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Uniform
        >>> Uniform(fb.tensor([0.0]), fb.tensor([4.0])).log_prob(fb.tensor([1.0])).exp().tolist()
        [0.25]
    """

    arg_constraints = {
        "low": constraints.dependent(is_discrete=False, event_dim=0),
        "high": constraints.dependent(is_discrete=False, event_dim=0),
    }
    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        batch_shape = (
            fb.Size() if isinstance(low, numbers.Number) and isinstance(high, numbers.Number) else self.low.shape
        )
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and not bool(fb.lt(self.low, self.high).all()):
            raise fb.FlambeauError("[Uniform] Uniform is not defined when low>= high")

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Uniform:
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> fb.Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> fb.Tensor:
        return float("nan") * self.high

    @property
    def stddev(self) -> fb.Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> fb.Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        rand = fb.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value) & (self.high > value)
        return inside.to(self.low.dtype).log() - (self.high - self.low).log()

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: fb.Tensor) -> fb.Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> fb.Tensor:
        return (self.high - self.low).log()
