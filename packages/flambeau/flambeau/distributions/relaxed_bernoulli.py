"""The relaxed (concrete) Bernoulli distribution and its logit form."""

from __future__ import annotations

import math
import numbers
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import _BinaryProbsOrLogits, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


def _log_of(x: Any) -> Any:
    return math.log(x) if isinstance(x, numbers.Number) else x.log()


class LogitRelaxedBernoulli(_BinaryProbsOrLogits, Distribution):
    r"""The logit of a :class:`RelaxedBernoulli` sample: ``(logit(U) + logits) / temperature``.

    Args:
        temperature (Tensor): the relaxation temperature.
        probs (Number, Tensor): the probability of 1.
        logits (Number, Tensor): the log-odds of 1.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.relaxed_bernoulli import LogitRelaxedBernoulli
        >>> LogitRelaxedBernoulli(fb.tensor(0.5), probs=fb.tensor([0.3])).rsample().shape
        flambeau.Size([1])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    # PyTorch leaves has_rsample False here although rsample is defined (RelaxedBernoulli sets it).

    def __init__(
        self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        self.temperature = temperature
        batch_shape = self._set_probs_or_logits(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> LogitRelaxedBernoulli:
        new = self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance, ("probs", "logits"))
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(fb.rand(shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return _log_of(self.temperature) + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    r"""A relaxed Bernoulli distribution (binary Concrete / Gumbel-softmax): samples in (0, 1), reparameterised.

    Args:
        temperature (Tensor): the relaxation temperature.
        probs (Number, Tensor): the probability of 1.
        logits (Number, Tensor): the log-odds of 1.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import RelaxedBernoulli
        >>> s = RelaxedBernoulli(fb.tensor(2.2), fb.tensor([0.1, 0.2, 0.3, 0.99])).sample()
        >>> bool(((s > 0) & (s < 1)).all())
        True
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> RelaxedBernoulli:
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def temperature(self) -> Any:
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self) -> fb.Tensor:
        """The log-odds."""
        return self.base_dist.logits

    @property
    def probs(self) -> fb.Tensor:
        """The probability of 1."""
        return self.base_dist.probs
