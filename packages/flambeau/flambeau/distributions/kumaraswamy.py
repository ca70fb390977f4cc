"""The Kumaraswamy distribution on the unit interval."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a: fb.Tensor, b: fb.Tensor, n: int) -> fb.Tensor:
    """The n-th moment, b * B(1 + n / a, b), through lgamma."""
    arg1 = 1 + n / a
    return b * fb.exp(fb.lgamma(arg1) + fb.lgamma(b) - fb.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    r"""A Kumaraswamy distribution with concentrations ``concentration1`` (:math:`a`) and ``concentration0``
    (:math:`b`): density :math:`a b x^{a-1} (1 - x^a)^{b-1}` on :math:`(0, 1)`, sampled (with gradients) as
    ``(1 - U ** (1 / b)) ** (1 / a)`` for ``U ~ Uniform(0, 1)``, as PyTorch's.

    Args:
        concentration1 (float or Tensor): :math:`a`, positive.
        concentration0 (float or Tensor): :math:`b`, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Kumaraswamy
        >>> d = Kumaraswamy(fb.tensor([2.0]), fb.tensor([3.0]))
        >>> round(d.mean.item(), 4), round(d.log_prob(fb.tensor([0.5])).item(), 4)
        (0.4571, 0.5232)
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(
            fb.full_like(self.concentration0, 0),
            fb.full_like(self.concentration0, 1),
            validate_args=validate_args,
        )
        transforms = [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> fb.Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> fb.Tensor:
        # PyTorch's expression, in log space; NaN where a concentration is below 1.
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return fb.where((b < 1) | (a < 1), float("nan"), log_mode).exp()

    @property
    def variance(self) -> fb.Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> fb.Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = fb.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - fb.log(self.concentration1) - fb.log(self.concentration0)
