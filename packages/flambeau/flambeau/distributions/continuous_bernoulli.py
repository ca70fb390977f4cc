"""The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, NeurIPS 2019)."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb
import flambeau_nn.functional as F
from flambeau_autograd import no_grad

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _BinaryProbsOrLogits, broadcast_all, clamp_probs, lazy_property, logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(_BinaryProbsOrLogits, ExponentialFamily):
    r"""A continuous Bernoulli distribution: density :math:`C(\lambda) \lambda^x (1-\lambda)^{1-x}` on ``[0, 1]``.

    Near :math:`\lambda = 1/2` (inside ``lims``) the normaliser, moments and cdf use Taylor expansions,
    where the closed forms divide by :math:`1 - 2\lambda`.

    Args:
        probs (Number, Tensor): the parameter :math:`\lambda` in (0, 1).
        logits (Number, Tensor): its log-odds.
        lims (tuple of float): the interval around 1/2 where the Taylor expansions are used.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import ContinuousBernoulli
        >>> round(ContinuousBernoulli(fb.tensor([0.3])).mean.item(), 4)
        0.4302
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(
        self,
        probs: Any = None,
        logits: Any = None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        batch_shape = self._set_probs_or_logits(probs, logits)
        if probs is not None:
            validate = self._validate_args if validate_args is None else validate_args
            if validate and not bool(constraints.unit_interval.check(self.probs).all()):
                raise fb.FlambeauError(f"[ContinuousBernoulli] The parameter probs has invalid values:\n{self.probs}")
            # Kept off 0 and 1, where the normaliser's logarithms are infinite.
            self.probs = clamp_probs(self.probs)
            self._param = self.probs
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> ContinuousBernoulli:
        new = self._expand_params(ContinuousBernoulli, batch_shape, _instance, ("probs", "logits"))
        new._lims = self._lims
        return new

    @lazy_property
    def probs(self) -> fb.Tensor:
        """The parameter :math:`\\lambda` (from ``logits`` when they were given, kept off 0 and 1).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import ContinuousBernoulli
            >>> ContinuousBernoulli(logits=fb.tensor([0.0])).probs.tolist()
            [0.5]
        """
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self) -> fb.Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> fb.Tensor:
        """``probs`` where the closed forms are stable, a stand-in elsewhere (whose results are not used)."""
        return fb.where(self._outside_unstable_region(), self.probs, fb.full_like(self.probs, self._lims[0]))

    def _log_odds_gap(self, cut: fb.Tensor) -> fb.Tensor:
        return (-cut).log1p() - cut.log()

    def _cont_bern_log_norm(self) -> fb.Tensor:
        """The log normaliser :math:`\\log|2\\,\\mathrm{atanh}(1-2\\lambda)| - \\log|1-2\\lambda|`."""
        cut = self._cut_probs()
        below = cut <= 0.5
        # log|1 - 2 cut| through log1p below 1/2 (accurate for small cut); each branch gets a harmless input.
        log_gap = fb.where(
            below,
            (-2.0 * fb.where(below, cut, fb.zeros_like(cut))).log1p(),
            (2.0 * fb.where(below, fb.ones_like(cut), cut) - 1.0).log(),
        )
        closed = self._log_odds_gap(cut).abs().log() - log_gap
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return fb.where(self._outside_unstable_region(), closed, taylor)

    @property
    def mean(self) -> fb.Tensor:
        cut = self._cut_probs()
        closed = cut / (2.0 * cut - 1.0) + 1.0 / self._log_odds_gap(cut)
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return fb.where(self._outside_unstable_region(), closed, taylor)

    @property
    def variance(self) -> fb.Tensor:
        cut = self._cut_probs()
        closed = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / self._log_odds_gap(cut).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return fb.where(self._outside_unstable_region(), closed, taylor)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        return self.icdf(fb.rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        closed = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = fb.where(self._outside_unstable_region(), closed, value)
        return fb.where(value <= 0.0, fb.zeros_like(inside), fb.where(value >= 1.0, fb.ones_like(inside), inside))

    def icdf(self, value: fb.Tensor) -> fb.Tensor:
        cut = self._cut_probs()
        closed = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / -self._log_odds_gap(cut)
        return fb.where(self._outside_unstable_region(), closed, value)

    def entropy(self) -> fb.Tensor:
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[fb.Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: fb.Tensor) -> fb.Tensor:  # type: ignore[override]
        """``log((e^x - 1) / x)``, by its Taylor expansion for ``x`` near 0 (within ``lims`` - 1/2)."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = fb.where(outside, x, fb.full_like(x, self._lims[0] - 0.5))
        closed = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return fb.where(outside, closed, taylor)
