"""The binomial distribution."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb
from flambeau_autograd import no_grad

from . import constraints
from .distribution import Distribution
from .utils import _BinaryProbsOrLogits, _probs_or_logits, broadcast_all

__all__ = ["Binomial"]


def _clamp_by_zero(x: fb.Tensor) -> fb.Tensor:
    # max(x, 0) with the gradient 1/2 at 0, as PyTorch's
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_BinaryProbsOrLogits, Distribution):
    r"""A binomial distribution: the number of successes in ``total_count`` trials of success probability
    ``probs`` (or log-odds ``logits``); ``total_count`` broadcasts with them.

    Samples come from core's ``binomial`` sampler.

    Args:
        total_count (int or Tensor): the number of trials, a non-negative integer.
        probs (Tensor): the success probability of each trial.
        logits (Tensor): its log-odds (give one of ``probs`` and ``logits``).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Binomial
        >>> Binomial(10, fb.tensor([0.25])).mean.tolist()
        [2.5]
    """

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self, total_count: Any = 1, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        _probs_or_logits("Binomial", probs, logits)
        name, given = ("probs", probs) if probs is not None else ("logits", logits)
        total, param = broadcast_all(total_count, given)
        self.total_count = total.to(param.dtype)
        setattr(self, name, param)
        self._param = param
        super().__init__(fb.Size(param.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Binomial:
        return self._expand_params(Binomial, batch_shape, _instance, ("total_count", "probs", "logits"))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> fb.Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> fb.Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> fb.Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            return fb.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Any) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = fb.lgamma(n + 1)
        log_factorial_k = fb.lgamma(value + 1)
        log_factorial_nmk = fb.lgamma(n - value + 1)
        # n log(1 + e^logits) without overflow: n max(logits, 0) + n log1p(e^-|logits|)
        normalize = n * _clamp_by_zero(self.logits) + n * fb.log1p(fb.exp(-fb.abs(self.logits))) - log_factorial_n
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize

    def _homogeneous_count(self, what: str) -> int:
        count = int(self.total_count.max().item())
        if not bool((self.total_count.min() == count).item()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return count

    def entropy(self) -> fb.Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(fb.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> fb.Tensor:
        count = self._homogeneous_count("enumerate_support")
        values = fb.arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
