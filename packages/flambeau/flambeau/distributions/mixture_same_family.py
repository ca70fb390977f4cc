"""Mixtures whose components are one distribution family, batched along the rightmost batch dimension."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb
import flambeau_nn.functional as F
from flambeau_autograd import no_grad

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    r"""A mixture whose components are the rightmost batch dimension of ``component_distribution``,
    weighted by ``mixture_distribution`` (a :class:`Categorical` over that dimension).

    Args:
        mixture_distribution (Categorical): the mixing weights, batch shape broadcastable to the components'.
        component_distribution (Distribution): the components, batch shape ``batch_shape + (k,)``.
        validate_args (bool, optional): whether to check values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Categorical, MixtureSameFamily, Normal
        >>> mix = Categorical(fb.ones(2))
        >>> gmm = MixtureSameFamily(mix, Normal(fb.tensor([-1.0, 1.0]), fb.ones(2)))
        >>> gmm.mean.item()
        0.0
    """

    arg_constraints: dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise fb.FlambeauError(
                "[MixtureSameFamily] The Mixture distribution needs to be an instance of "
                "flambeau.distributions.Categorical"
            )
        if not isinstance(component_distribution, Distribution):
            raise fb.FlambeauError(
                "[MixtureSameFamily] The Component distribution need to be an instance of "
                "flambeau.distributions.Distribution"
            )
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs), strict=False):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise fb.FlambeauError(
                    f"[MixtureSameFamily] `mixture_distribution.batch_shape` ({fb.Size(mdbs)}) is not compatible with "
                    f"`component_distribution.batch_shape`({fb.Size(cdbs)})"
                )
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise fb.FlambeauError(
                f"[MixtureSameFamily] `mixture_distribution component` ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> MixtureSameFamily:
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        batch_shape = fb.Size(batch_shape)
        new._component_distribution = self._component_distribution.expand(tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        self._finish_expand(new, batch_shape, new._component_distribution.event_shape)
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        """The mixing distribution."""
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        """The component distributions."""
        return self._component_distribution

    @property
    def mean(self) -> fb.Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> fb.Tensor:
        # Law of total variance: E[Var(X | k)] + Var(E[X | k]).
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        mean_cond_var = (probs * self.component_distribution.variance).sum(-1 - self._event_ndims)
        spread = (self.component_distribution.mean - self._pad(self.mean)).pow(2)
        var_cond_mean = (probs * spread).sum(-1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: fb.Tensor) -> fb.Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix_prob = F.log_softmax(self.mixture_distribution.logits, dim=-1)
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        sample_shape = fb.Size(sample_shape)
        with no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_shape + (1,) * (len(self.event_shape) + 1))
            index = index.expand(mix_shape + (1,) + tuple(self.event_shape))
            return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: fb.Tensor) -> fb.Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: fb.Tensor) -> fb.Tensor:
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(\n  {self.mixture_distribution},\n  {self.component_distribution})"
