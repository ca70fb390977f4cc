"""The half-Cauchy distribution: ``|X|`` for ``X ~ Cauchy(0, scale)``."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb

from .cauchy import Cauchy
from .distribution import Distribution
from .half_normal import _Folded

__all__ = ["HalfCauchy"]


class HalfCauchy(_Folded):
    r"""A half-Cauchy distribution: ``|X|`` for ``X ~ Cauchy(0, scale)``.

    Args:
        scale (float or Tensor): the scale of the full Cauchy distribution, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import HalfCauchy
        >>> HalfCauchy(fb.tensor([1.0])).cdf(fb.tensor([1.0])).tolist()
        [0.5]
    """

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> HalfCauchy:
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def mean(self) -> fb.Tensor:
        return fb.full(tuple(self._extended_shape()), float("inf"), dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self) -> fb.Tensor:
        return self.base_dist.variance
