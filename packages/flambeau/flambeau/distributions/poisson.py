"""The Poisson distribution."""

from __future__ import annotations

import numbers
from typing import Any

import flambeau_core as fb
from flambeau_autograd import no_grad

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    r"""A Poisson distribution with rate ``rate``: :math:`P(k) = \lambda^k e^{-\lambda} / k!`.

    Samples come from core's ``poisson`` sampler.

    Args:
        rate (float or Tensor): the rate, non-negative.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Poisson
        >>> round(Poisson(fb.tensor([2.0])).log_prob(fb.tensor([0.0])).item(), 4)
        -2.0
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = fb.Size() if isinstance(rate, numbers.Number) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Poisson:
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> fb.Tensor:
        return self.rate

    @property
    def mode(self) -> fb.Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> fb.Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            return fb.poisson(self.rate.expand(shape))

    def log_prob(self, value: Any) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return fb.xlogy(value, rate) - rate - fb.lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple[fb.Tensor]:
        return (self.rate.log(),)

    def _log_normalizer(self, x: fb.Tensor) -> fb.Tensor:  # type: ignore[override]
        return fb.exp(x)
