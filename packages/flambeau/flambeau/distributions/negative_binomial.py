"""The negative binomial distribution."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb
import flambeau_nn.functional as F
from flambeau_autograd import no_grad

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import _BinaryProbsOrLogits, _probs_or_logits, broadcast_all, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_BinaryProbsOrLogits, Distribution):
    r"""A negative binomial distribution: the number of successes (each of probability ``probs``) before
    ``total_count`` failures.

    Sampled as a Poisson with a Gamma(``total_count``, ``exp(-logits)``) rate.

    Args:
        total_count (float or Tensor): the number of failures, non-negative (need not be an integer).
        probs (Tensor): the success probability, in [0, 1).
        logits (Tensor): its log-odds (give one of ``probs`` and ``logits``).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import NegativeBinomial
        >>> NegativeBinomial(4.0, fb.tensor([0.5])).mean.tolist()
        [4.0]
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self, total_count: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        _probs_or_logits("NegativeBinomial", probs, logits)
        name, given = ("probs", probs) if probs is not None else ("logits", logits)
        total, param = broadcast_all(total_count, given)
        self.total_count = total.to(param.dtype)
        setattr(self, name, param)
        self._param = param
        super().__init__(fb.Size(param.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> NegativeBinomial:
        return self._expand_params(NegativeBinomial, batch_shape, _instance, ("total_count", "probs", "logits"))

    @property
    def mean(self) -> fb.Tensor:
        return self.total_count * fb.exp(self.logits)

    @property
    def mode(self) -> fb.Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> fb.Tensor:
        return self.mean / fb.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self) -> Gamma:
        return Gamma(self.total_count, fb.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        with no_grad():
            return fb.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value: Any) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        unnormalized = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        normalization = -fb.lgamma(self.total_count + value) + fb.lgamma(1.0 + value) + fb.lgamma(self.total_count)
        # 0 failures and 0 successes: probability 1 (lgamma(0) would give inf - inf)
        normalization = normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return unnormalized - normalization
