"""The one-hot categorical distribution (and its straight-through variant)."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb
import flambeau_nn.functional as F

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(Distribution):
    r"""A categorical distribution whose samples are one-hot vectors of length ``K``.

    Args:
        probs (Tensor): event probabilities (normalised here).
        logits (Tensor): event log-probabilities (unnormalised).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import OneHotCategorical
        >>> m = OneHotCategorical(fb.tensor([0.25, 0.75]))
        >>> m.log_prob(fb.tensor([0.0, 1.0])).exp().item()
        0.75
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = fb.Size(self._categorical.param_shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> OneHotCategorical:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = fb.Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        self._finish_expand(new, batch_shape, self.event_shape)
        return new

    @property
    def _param(self) -> fb.Tensor:
        return self._categorical._param

    @property
    def probs(self) -> fb.Tensor:
        """Normalised probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> fb.Tensor:
        """Normalised log-probabilities."""
        return self._categorical.logits

    @property
    def param_shape(self) -> fb.Size:
        """The shape of the parameter given.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import OneHotCategorical
            >>> OneHotCategorical(fb.ones(4)).param_shape
            flambeau.Size([4])
        """
        return self._categorical.param_shape

    @property
    def mean(self) -> fb.Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> fb.Tensor:
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> fb.Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> fb.Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> fb.Tensor:
        n = self.event_shape[0]
        values = fb.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    r"""A :class:`OneHotCategorical` whose :meth:`rsample` passes gradients straight through to the probabilities.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import OneHotCategoricalStraightThrough
        >>> p = fb.tensor([0.5, 0.5], requires_grad=True)
        >>> OneHotCategoricalStraightThrough(p).rsample().sum().backward()
        >>> p.grad.shape
        flambeau.Size([2])
    """

    has_rsample = True

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
