"""The Gumbel (type-I extreme value) distribution."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    r"""A Gumbel distribution with location ``loc`` and scale ``scale``: ``loc - scale * log(-log(U))``.

    Args:
        loc (float or Tensor): the location.
        scale (float or Tensor): the scale, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Gumbel
        >>> round(Gumbel(fb.tensor([1.0]), fb.tensor([2.0])).mean.item(), 4)
        2.1544
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        info = fb.finfo(self.loc.dtype)
        base_dist = Uniform(
            fb.full_like(self.loc, info.tiny), fb.full_like(self.loc, 1 - info.eps), validate_args=validate_args
        )
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0, scale=-fb.ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(loc=self.loc, scale=-self.scale),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> fb.Tensor:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    @property
    def stddev(self) -> fb.Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> fb.Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> fb.Tensor:
        return self.scale.log() + (1 + euler_constant)
