"""The geometric distribution: the number of failures before the first success."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb
import flambeau_nn.functional as F
from flambeau_autograd import no_grad

from . import constraints
from .distribution import Distribution
from .utils import _BinaryProbsOrLogits, broadcast_all

__all__ = ["Geometric"]


class Geometric(_BinaryProbsOrLogits, Distribution):
    r"""A geometric distribution: :math:`P(X = k) = (1 - p)^k p` for :math:`k = 0, 1, \ldots`.

    Args:
        probs (Number, Tensor): the probability of success in each trial, in (0, 1].
        logits (Number, Tensor): the log-odds of success.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Geometric
        >>> Geometric(fb.tensor([0.5])).log_prob(fb.tensor([1.0])).exp().tolist()
        [0.25]
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        batch_shape = self._set_probs_or_logits(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            if not bool((value > 0).all()):
                raise fb.FlambeauError(
                    f"[Geometric] Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} to be positive but found invalid values:\n{value[~(value > 0)]}"
                )

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Geometric:
        return self._expand_params(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self) -> fb.Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> fb.Tensor:
        return fb.zeros_like(self.probs)

    @property
    def variance(self) -> fb.Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            tiny = fb.finfo(self.probs.dtype).tiny
            u = fb.rand(shape, dtype=self.probs.dtype, device=self.probs.device).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # P(X = 0) = 1 when p = 1: 0 * log(0) must count as 0.
        probs = fb.where((probs == 1) & (value == 0), fb.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> fb.Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
