"""The multinomial distribution: counts of ``total_count`` categorical draws."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb
from flambeau_autograd import no_grad

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


def _log_factorial(counts: fb.Tensor, largest: int) -> fb.Tensor:
    """``log(n!)`` for integer counts ``n <= largest``, from a cumulative sum of ``log(1..largest)``."""
    logs = fb.arange(1, largest + 1, dtype=counts.dtype, device=counts.device).log()
    table = fb.cat([fb.zeros(1, dtype=counts.dtype, device=counts.device), logs.cumsum(0)])
    index = counts.long().reshape(-1)
    return table.index_select(0, index).reshape(tuple(counts.shape))


class Multinomial(Distribution):
    r"""A multinomial distribution: the category counts of ``total_count`` independent categorical draws.

    ``log_prob`` takes integer counts (the log-factorials are exact sums of logarithms); :meth:`entropy`
    is not available yet (PyTorch's goes through the binomial distribution).

    Args:
        total_count (int): the number of trials.
        probs (Tensor): event probabilities (normalised here).
        logits (Tensor): event log-probabilities (unnormalised).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Multinomial
        >>> m = Multinomial(4, fb.tensor([0.25, 0.25, 0.25, 0.25]))
        >>> m.sample().sum().item()
        4.0
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(
        self, total_count: int = 1, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        if not isinstance(total_count, int) or isinstance(total_count, bool):
            raise NotImplementedError("[Multinomial] inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        batch_shape = self._categorical.batch_shape
        event_shape = fb.Size(self._categorical.param_shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Multinomial:
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = fb.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        self._finish_expand(new, batch_shape, self.event_shape)
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> fb.Tensor:
        """Normalised log-probabilities."""
        return self._categorical.logits

    @property
    def probs(self) -> fb.Tensor:
        """Normalised probabilities."""
        return self._categorical.probs

    @property
    def param_shape(self) -> fb.Size:
        """The shape of the parameter given.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Multinomial
            >>> Multinomial(3, fb.ones(2, 4)).param_shape
            flambeau.Size([2, 4])
        """
        return self._categorical.param_shape

    @property
    def mean(self) -> fb.Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> fb.Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        sample_shape = fb.Size(sample_shape)
        with no_grad():
            draws = self._categorical.sample(fb.Size((self.total_count,)) + sample_shape)
            draws = draws.movedim(0, -1)  # (sample, batch, total_count)
            counts = fb.zeros(tuple(self._extended_shape(sample_shape)), dtype=fb.int64, device=draws.device)
            counts.scatter_add_(-1, draws, fb.ones_like(draws))
            return counts.to(self.probs.dtype)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        largest = max(self.total_count, int(value.max().item()) if value.numel() else 0)
        log_factorial_n = _log_factorial(value.sum(-1), largest)
        log_factorial_xs = _log_factorial(value, largest).sum(-1)
        # A category of zero probability drawn zero times contributes 0, not 0 * -inf.
        logits = fb.where((value == 0) & (logits == float("-inf")), fb.zeros_like(logits), logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
