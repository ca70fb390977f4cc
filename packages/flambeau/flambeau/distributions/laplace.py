"""The Laplace distribution."""

from __future__ import annotations

import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    r"""A Laplace distribution with location ``loc`` and scale ``scale``.

    Args:
        loc (float or Tensor): the mean.
        scale (float or Tensor): the scale, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Laplace
        >>> Laplace(fb.tensor([0.0]), fb.tensor([1.0])).cdf(fb.tensor([0.0])).tolist()
        [0.5]
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

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Laplace:
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> fb.Tensor:
        return self.loc

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    @property
    def variance(self) -> fb.Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> fb.Tensor:
        return (2**0.5) * self.scale

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        eps = fb.finfo(self.loc.dtype).eps
        # u uniform on (-1, 1) excluding -1, so that log1p(-|u|) is finite.
        u = fb.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * fb.log1p(-u.abs())

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -fb.log(2 * self.scale) - fb.abs(value - self.loc) / self.scale

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * fb.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value: fb.Tensor) -> fb.Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * fb.log1p(-2 * term.abs())

    def entropy(self) -> fb.Tensor:
        return 1 + fb.log(2 * self.scale)
