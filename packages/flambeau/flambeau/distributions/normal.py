"""The normal (Gaussian) distribution."""

from __future__ import annotations

import math
import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _standard_normal, broadcast_all

__all__ = ["Normal"]


class Normal(ExponentialFamily):
    r"""A normal distribution with mean ``loc`` and standard deviation ``scale``.

    Args:
        loc (float or Tensor): the mean.
        scale (float or Tensor): the standard deviation (positive).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Normal
        >>> m = Normal(fb.tensor([0.0]), fb.tensor([1.0]))
        >>> m.sample().shape
        flambeau.Size([1])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = (
            fb.Size() if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number) else self.loc.shape
        )
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Normal:
        return self._expand_params(Normal, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> fb.Tensor:
        return self.loc

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    @property
    def stddev(self) -> fb.Tensor:
        return self.scale

    @property
    def variance(self) -> fb.Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(tuple(shape), self.loc.dtype, self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        log_scale = math.log(self.scale) if isinstance(self.scale, numbers.Real) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + fb.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value: fb.Tensor) -> fb.Tensor:
        return self.loc + self.scale * fb.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> fb.Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + fb.log(self.scale)

    @property
    def _natural_params(self) -> tuple[fb.Tensor, fb.Tensor]:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:  # type: ignore[override]
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()
