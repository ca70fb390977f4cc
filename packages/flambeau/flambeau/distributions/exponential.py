"""The exponential distribution."""

from __future__ import annotations

import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    r"""An exponential distribution with rate ``rate``: density :math:`\lambda e^{-\lambda x}` on :math:`x \ge 0`.

    Args:
        rate (float or Tensor): the rate (inverse scale), positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Exponential
        >>> Exponential(fb.tensor([2.0])).mean.tolist()
        [0.5]
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = fb.Size() if isinstance(rate, numbers.Number) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Exponential:
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> fb.Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> fb.Tensor:
        return fb.zeros_like(self.rate)

    @property
    def stddev(self) -> fb.Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> fb.Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = fb.rand(shape, dtype=self.rate.dtype, device=self.rate.device)
        return -(-u).log1p() / self.rate  # u in [0, 1): a standard exponential by inversion, finite

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - fb.exp(-self.rate * value)

    def icdf(self, value: fb.Tensor) -> fb.Tensor:
        return -fb.log1p(-value) / self.rate

    def entropy(self) -> fb.Tensor:
        return 1.0 - fb.log(self.rate)

    @property
    def _natural_params(self) -> tuple[fb.Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: fb.Tensor) -> fb.Tensor:  # type: ignore[override]
        return -(-x).log()
