"""The categorical distribution over ``{0, ..., K-1}``."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb
from flambeau_autograd import no_grad

from . import constraints
from .distribution import Distribution
from .utils import _probs_or_logits, _require_tensor, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    r"""A categorical distribution over ``{0, ..., K-1}`` given by (unnormalised) ``probs`` or ``logits``.

    The last dimension of the parameter indexes the categories; the others are batch dimensions.

    Args:
        probs (Tensor): event probabilities (non-negative, finite, nonzero sum; normalised here).
        logits (Tensor): event log-probabilities (unnormalised).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Categorical
        >>> m = Categorical(fb.tensor([0.25, 0.25, 0.5]))
        >>> m.log_prob(fb.tensor(2)).exp().item()
        0.5
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        _probs_or_logits(type(self).__name__, probs, logits)
        if probs is not None:
            _require_tensor(type(self).__name__, "probs", probs)
            if probs.dim() < 1:
                raise fb.FlambeauError(f"[{type(self).__name__}] `probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            _require_tensor(type(self).__name__, "logits", logits)
            if logits.dim() < 1:
                raise fb.FlambeauError(f"[{type(self).__name__}] `logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = fb.Size(self._param.shape[:-1]) if self._param.dim() > 1 else fb.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Categorical:
        new = self._expand_params(Categorical, batch_shape, _instance, ("probs", "logits"), event_dims=1)
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> fb.Tensor:
        """Normalised log-probabilities (computed from ``probs`` when they were given).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Categorical
            >>> Categorical(fb.tensor([1.0, 1.0])).logits.exp().tolist()
            [0.5, 0.5]
        """
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> fb.Tensor:
        """Normalised probabilities (computed from ``logits`` when they were given).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Categorical
            >>> Categorical(logits=fb.tensor([0.0, 0.0])).probs.tolist()
            [0.5, 0.5]
        """
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> fb.Size:
        """The shape of the parameter given (batch shape and the number of categories).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Categorical
            >>> Categorical(fb.ones(2, 3)).param_shape
            flambeau.Size([2, 3])
        """
        return fb.Size(self._param.shape)

    @property
    def mean(self) -> fb.Tensor:
        return fb.full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> fb.Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> fb.Tensor:
        return fb.full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        sample_shape = fb.Size(sample_shape)
        n = 1
        for size in sample_shape:
            n *= size
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = fb.multinomial(probs_2d, n, True).T
        return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = fb.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> fb.Tensor:
        # -inf logits (zero probabilities) would give 0 * -inf = nan.
        logits = self.logits.clamp(min=fb.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> fb.Tensor:
        values = fb.arange(self._num_events, dtype=fb.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((self._num_events,) + tuple(self._batch_shape))
        return values
