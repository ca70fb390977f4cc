"""The two-parameter Weibull distribution."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all, euler_constant

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    r"""A Weibull distribution with scale ``scale`` (:math:`\lambda`) and shape ``concentration`` (:math:`k`):
    ``scale * E ** (1 / concentration)`` for ``E ~ Exponential(1)``, as PyTorch's.

    Args:
        scale (float or Tensor): the scale, positive.
        concentration (float or Tensor): the shape, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Weibull
        >>> d = Weibull(fb.tensor([2.0]), fb.tensor([1.0]))  # k = 1: an exponential of mean 2
        >>> round(d.mean.item(), 4), round(d.log_prob(fb.tensor([2.0])).item(), 4)
        (2.0, -1.6931)
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(fb.ones_like(self.scale), validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=self.concentration_reciprocal),
            AffineTransform(loc=0, scale=self.scale),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Weibull:
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [
            PowerTransform(exponent=new.concentration_reciprocal),
            AffineTransform(loc=0, scale=new.scale),
        ]
        TransformedDistribution.__init__(new, base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> fb.Tensor:
        return self.scale * fb.exp(fb.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> fb.Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self) -> fb.Tensor:
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (fb.exp(fb.lgamma(1 + 2 * r)) - fb.exp(2 * fb.lgamma(1 + r)))

    def entropy(self) -> fb.Tensor:
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + fb.log(self.scale * r) + 1
