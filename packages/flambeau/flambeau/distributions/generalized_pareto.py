"""The generalised Pareto distribution (tails of other distributions)."""

from __future__ import annotations

import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    r"""A generalised Pareto distribution: survival function :math:`(1 + \xi z)^{-1/\xi}` of
    :math:`z = (x - \text{loc}) / \text{scale}` (:math:`e^{-z}` at :math:`\xi = 0`).

    Args:
        loc (float or Tensor): the location (the support's lower bound).
        scale (float or Tensor): the scale, positive.
        concentration (float or Tensor): the shape :math:`\xi`; negative values bound the support above.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import GeneralizedPareto
        >>> GeneralizedPareto(fb.tensor([0.0]), fb.tensor([1.0]), fb.tensor([0.0])).cdf(fb.tensor([0.0])).tolist()
        [0.0]
    """

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        all_numbers = all(isinstance(v, numbers.Number) for v in (loc, scale, concentration))
        batch_shape = fb.Size() if all_numbers else fb.Size(self.loc.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> GeneralizedPareto:
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        upper = fb.where(
            self.concentration < 0, self.loc - self.scale / self.concentration, fb.full_like(self.loc, float("inf"))
        )
        return constraints.interval(self.loc, upper)

    def _safe_concentration(self) -> tuple[fb.Tensor, fb.Tensor]:
        """Whether the shape is 0 (within isclose's tolerances) and a shape that is 1 there, for the other branch."""
        is_zero = fb.isclose(self.concentration, fb.zeros_like(self.concentration))
        return is_zero, fb.where(is_zero, fb.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        return self.icdf(fb.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        is_zero, xi = self._safe_concentration()
        y = 1 / xi + fb.ones_like(z)
        nonzero = fb.where(y == 0, y, y * (xi * z).log1p())  # 0 * log(0) counts as 0 (xi = -1)
        return -self.scale.log() - fb.where(is_zero, z, nonzero)

    def log_survival_function(self, value: fb.Tensor) -> fb.Tensor:
        """``log(1 - cdf(value))``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import GeneralizedPareto
            >>> GeneralizedPareto(0.0, 1.0, 0.0).log_survival_function(fb.tensor([2.0])).tolist()
            [-2.0]
        """
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        is_zero, xi = self._safe_concentration()
        return fb.where(is_zero, -z, -(xi * z).log1p() / xi)

    def log_cdf(self, value: fb.Tensor) -> fb.Tensor:
        """``log(cdf(value))``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import GeneralizedPareto
            >>> round(GeneralizedPareto(0.0, 1.0, 0.0).log_cdf(fb.tensor([1.0])).item(), 4)
            -0.4587
        """
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: fb.Tensor) -> fb.Tensor:
        is_zero, xi = self._safe_concentration()
        log_survival = (-value).log1p()
        nonzero = self.loc + self.scale / xi * (-xi * log_survival).expm1()
        return fb.where(is_zero, self.loc - self.scale * log_survival, nonzero)

    @property
    def mean(self) -> fb.Tensor:
        finite = self.concentration < 1
        xi = fb.where(finite, self.concentration, fb.full_like(self.concentration, 0.5))
        return fb.where(finite, self.loc + self.scale / (1 - xi), fb.full_like(xi, float("nan")))

    @property
    def variance(self) -> fb.Tensor:
        finite = self.concentration < 0.5
        xi = fb.where(finite, self.concentration, fb.full_like(self.concentration, 0.25))
        result = self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi))
        return fb.where(finite, result, fb.full_like(result, float("nan")))

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    def entropy(self) -> fb.Tensor:
        return (self.scale.log() + self.concentration + 1).broadcast_to(tuple(self._batch_shape))
