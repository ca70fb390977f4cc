"""The Bernoulli distribution."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb
import flambeau_nn.functional as F
from flambeau_autograd import no_grad

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _BinaryProbsOrLogits, broadcast_all

__all__ = ["Bernoulli"]


class Bernoulli(_BinaryProbsOrLogits, ExponentialFamily):
    r"""A Bernoulli distribution: 1 with probability ``probs``, 0 otherwise.

    Args:
        probs (Number, Tensor): the probability of sampling 1.
        logits (Number, Tensor): the log-odds of sampling 1 (give one of ``probs`` and ``logits``).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Bernoulli
        >>> Bernoulli(fb.tensor([0.3])).log_prob(fb.tensor([1.0])).exp().tolist()
        [0.30000001192092896]
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        batch_shape = self._set_probs_or_logits(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Bernoulli:
        new = self._expand_params(Bernoulli, batch_shape, _instance, ("probs", "logits"))
        return new

    @property
    def mean(self) -> fb.Tensor:
        return self.probs

    @property
    def mode(self) -> fb.Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return fb.where(self.probs == 0.5, fb.full_like(mode, float("nan")), mode)

    @property
    def variance(self) -> fb.Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            return fb.bernoulli(self.probs.expand(shape))

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> fb.Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> fb.Tensor:
        values = fb.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((2,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self) -> tuple[fb.Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: fb.Tensor) -> fb.Tensor:  # type: ignore[override]
        return x.exp().log1p()
