"""Student's t distribution."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    r"""Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``.

    ``rsample`` is :math:`loc + scale \cdot X / \sqrt{Z / df}` with :math:`X` standard normal and
    :math:`Z` a :class:`Chi2` sample, differentiable in every parameter.

    Args:
        df (float or Tensor): the degrees of freedom, positive.
        loc (float or Tensor): the location.
        scale (float or Tensor): the scale, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import StudentT
        >>> StudentT(fb.tensor([3.0]), 1.0, 2.0).variance.tolist()
        [12.0]
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(fb.Size(self.df.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> StudentT:
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self) -> fb.Tensor:
        return fb.where(self.df > 1, self.loc, fb.full_like(self.loc, math.nan))

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    @property
    def variance(self) -> fb.Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2).clamp(min=1e-30)
        m = fb.where(df > 2, finite, fb.full_like(df, math.inf))
        return fb.where(df > 1, m, fb.full_like(df, math.nan))

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * fb.rsqrt(z / self.df)

    def log_prob(self, value: Any) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        half_df = 0.5 * self.df
        z = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + fb.lgamma(half_df)
            - fb.lgamma(half_df + 0.5)
        )
        return -0.5 * (self.df + 1.0) * fb.log1p(y**2.0 / self.df) - z

    def entropy(self) -> fb.Tensor:
        half_df = 0.5 * self.df
        lbeta = fb.lgamma(half_df) + math.lgamma(0.5) - fb.lgamma(half_df + 0.5)
        return (
            self.scale.log()
            + (half_df + 0.5) * (fb.digamma(half_df + 0.5) - fb.digamma(half_df))
            + 0.5 * self.df.log()
            + lbeta
        )
