"""The relaxed one-hot categorical (Concrete / Gumbel-softmax) distribution and its log form."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .relaxed_bernoulli import _log_of
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    r"""The log of a :class:`RelaxedOneHotCategorical` sample: ``log_softmax((logits + G) / temperature)``, G Gumbel.

    Args:
        temperature (Tensor): the relaxation temperature.
        probs (Tensor): event probabilities.
        logits (Tensor): unnormalised log-probabilities.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.relaxed_categorical import ExpRelaxedCategorical
        >>> ExpRelaxedCategorical(fb.tensor(1.0), fb.tensor([0.5, 0.5])).rsample().exp().sum().item() > 0.99
        True
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        event_shape = fb.Size(self._categorical.param_shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> ExpRelaxedCategorical:
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = fb.Size(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        self._finish_expand(new, batch_shape, self.event_shape)
        return new

    @property
    def param_shape(self) -> fb.Size:
        """The shape of the parameter given.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions.relaxed_categorical import ExpRelaxedCategorical
            >>> ExpRelaxedCategorical(fb.tensor(1.0), fb.ones(3)).param_shape
            flambeau.Size([3])
        """
        return self._categorical.param_shape

    @property
    def logits(self) -> fb.Tensor:
        """Normalised log-probabilities."""
        return self._categorical.logits

    @property
    def probs(self) -> fb.Tensor:
        """Normalised probabilities."""
        return self._categorical.probs

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        uniforms = clamp_probs(fb.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # log Gamma(K) of the integer K is log((K-1)!): a Python float, not a tensor function.
        log_scale = math.lgamma(k) + (k - 1) * _log_of(self.temperature)
        score = logits - value * self.temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    r"""A relaxed one-hot categorical distribution (Concrete / Gumbel-softmax): samples on the simplex, reparameterised.

    Args:
        temperature (Tensor): the relaxation temperature.
        probs (Tensor): event probabilities.
        logits (Tensor): unnormalised log-probabilities.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import RelaxedOneHotCategorical
        >>> s = RelaxedOneHotCategorical(fb.tensor(2.2), fb.tensor([0.1, 0.2, 0.3, 0.4])).sample()
        >>> round(s.sum().item(), 4)
        1.0
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(
        self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> RelaxedOneHotCategorical:
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def temperature(self) -> Any:
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self) -> fb.Tensor:
        """Normalised log-probabilities."""
        return self.base_dist.logits

    @property
    def probs(self) -> fb.Tensor:
        """Normalised probabilities."""
        return self.base_dist.probs
