"""The inverse gamma distribution."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    r"""An inverse gamma distribution with shape ``concentration`` and scale ``rate``: ``1 / X`` for
    ``X ~ Gamma(concentration, rate)``, as PyTorch's.

    Args:
        concentration (float or Tensor): the shape, positive.
        rate (float or Tensor): the scale (the rate of the gamma it inverts), positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import InverseGamma
        >>> d = InverseGamma(fb.tensor([3.0]), fb.tensor([4.0]))
        >>> d.mean.item(), d.mode.item()
        (2.0, 1.0)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -fb.ones((), dtype=base_dist.rate.dtype, device=base_dist.rate.device)
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> InverseGamma:
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def concentration(self) -> fb.Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> fb.Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> fb.Tensor:
        result = self.rate / (self.concentration - 1)
        return fb.where(self.concentration > 1, result, math.inf)

    @property
    def mode(self) -> fb.Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> fb.Tensor:
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return fb.where(self.concentration > 2, result, math.inf)

    def entropy(self) -> fb.Tensor:
        k = self.concentration
        return k + fb.log(self.rate) + fb.lgamma(k) - (1 + k) * k.digamma()
