"""The Fisher-Snedecor (F) distribution."""

from __future__ import annotations

import math
import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    r"""A Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom: the ratio of two
    gamma variables, as PyTorch's (``rsample`` differentiable through them).

    Args:
        df1 (float or Tensor): the numerator's degrees of freedom, positive.
        df2 (float or Tensor): the denominator's degrees of freedom, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import FisherSnedecor
        >>> FisherSnedecor(fb.tensor([4.0]), fb.tensor([6.0])).mean.tolist()
        [1.5]
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = (
            fb.Size() if isinstance(df1, numbers.Number) and isinstance(df2, numbers.Number) else self.df1.shape
        )
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> FisherSnedecor:
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = fb.Size(batch_shape)
        new.df1 = self.df1.expand(tuple(batch_shape))
        new.df2 = self.df2.expand(tuple(batch_shape))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        self._finish_expand(new, batch_shape, self._event_shape)
        return new

    @property
    def mean(self) -> fb.Tensor:
        return fb.where(self.df2 > 2, self.df2 / (self.df2 - 2), math.nan)

    @property
    def mode(self) -> fb.Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return fb.where(self.df1 > 2, mode, math.nan)

    @property
    def variance(self) -> fb.Tensor:
        df1, df2 = self.df1, self.df2
        variance = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return fb.where(df2 > 4, variance, math.nan)

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        tiny = fb.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Any) -> fb.Tensor:
        value = fb.as_tensor(value, dtype=self.df1.dtype, device=self.df1.device)
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * fb.log(value)
        t3 = (ct1 + ct2) * fb.log1p(ct3 * value)
        return t1 + t2 - t3
