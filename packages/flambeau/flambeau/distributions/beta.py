"""The beta distribution."""

from __future__ import annotations

import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    r"""A beta distribution on (0, 1) with concentrations ``concentration1`` (:math:`\alpha`) and
    ``concentration0`` (:math:`\beta`): density :math:`x^{\alpha-1} (1-x)^{\beta-1} / B(\alpha, \beta)`.

    A two-component :class:`Dirichlet` underneath (its first coordinate), so ``rsample`` is differentiable.

    Args:
        concentration1 (float or Tensor): :math:`\alpha`, positive.
        concentration0 (float or Tensor): :math:`\beta`, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Beta
        >>> Beta(fb.tensor([1.0]), fb.tensor([3.0])).mean.tolist()
        [0.25]
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        if isinstance(concentration1, numbers.Number) and isinstance(concentration0, numbers.Number):
            pair = fb.tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            pair = fb.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Beta:
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = fb.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        self._finish_expand(new, batch_shape, self._event_shape)
        return new

    @property
    def concentration1(self) -> fb.Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> fb.Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> fb.Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> fb.Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> fb.Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Any) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(fb.stack([value, 1.0 - value], -1))

    def entropy(self) -> fb.Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple[fb.Tensor, fb.Tensor]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:  # type: ignore[override]
        return fb.lgamma(x) + fb.lgamma(y) - fb.lgamma(x + y)
