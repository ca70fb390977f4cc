"""The Cauchy (Lorentz) distribution."""

from __future__ import annotations

import math
import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    r"""A Cauchy distribution: the ratio of independent normal variables, with median ``loc`` and half-width ``scale``.

    Args:
        loc (float or Tensor): the mode (median).
        scale (float or Tensor): the half width at half maximum, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Cauchy
        >>> Cauchy(fb.tensor([0.0]), fb.tensor([1.0])).cdf(fb.tensor([1.0])).tolist()
        [0.75]
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = (
            fb.Size() if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number) else self.loc.shape
        )
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Cauchy:
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> fb.Tensor:
        return fb.full(tuple(self._extended_shape()), float("nan"), dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    @property
    def variance(self) -> fb.Tensor:
        return fb.full(tuple(self._extended_shape()), float("inf"), dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = fb.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        eps = fb.tan(math.pi * (u - 0.5))  # a standard Cauchy by inversion
        return self.loc + eps * self.scale

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return fb.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: fb.Tensor) -> fb.Tensor:
        return fb.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> fb.Tensor:
        return math.log(4 * math.pi) + self.scale.log()
