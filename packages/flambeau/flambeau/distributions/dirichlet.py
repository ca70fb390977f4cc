"""The Dirichlet distribution."""

from __future__ import annotations

from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    r"""A Dirichlet distribution on the simplex with concentrations ``concentration`` (the last dim):
    density :math:`\prod_i x_i^{\alpha_i - 1} \Gamma(\sum_i \alpha_i) / \prod_i \Gamma(\alpha_i)`.

    Samples are normalised gamma samples (core's ``_sample_dirichlet``); ``rsample`` is differentiable in
    the concentrations through them.

    Args:
        concentration (Tensor): the concentrations, positive, at least 1-D (the last dim is the event).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Dirichlet
        >>> Dirichlet(fb.tensor([1.0, 3.0])).mean.tolist()
        [0.25, 0.75]
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: fb.Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(concentration, fb.Tensor) or concentration.dim() < 1:
            raise fb.FlambeauError("[Dirichlet] `concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(fb.Size(shape[:-1]), fb.Size(shape[-1:]), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = fb.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self._event_shape))
        self._finish_expand(new, batch_shape, self._event_shape)
        return new

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        return fb._C._sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value: Any) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return fb.xlogy(c - 1.0, value).sum(-1) + fb.lgamma(c.sum(-1)) - fb.lgamma(c).sum(-1)

    @property
    def mean(self) -> fb.Tensor:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> fb.Tensor:
        c = self.concentration
        mode = (c - 1).clamp(min=0.0)
        mode = mode / mode.sum(-1, True)
        # every concentration below 1: the density is unbounded at each vertex; PyTorch returns the
        # vertex of the largest entry of the (all-NaN) interior formula, the first one
        below = (c < 1).all(-1, keepdim=True)
        first_vertex = (fb.arange(c.shape[-1], device=c.device) == 0).to(c.dtype).expand(tuple(c.shape))
        return fb.where(below, first_vertex, mode)

    @property
    def variance(self) -> fb.Tensor:
        c = self.concentration
        total = c.sum(-1, True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def entropy(self) -> fb.Tensor:
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return fb.lgamma(c).sum(-1) - fb.lgamma(a0) - (k - a0) * fb.digamma(a0) - ((c - 1.0) * fb.digamma(c)).sum(-1)

    @property
    def _natural_params(self) -> tuple[fb.Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: fb.Tensor) -> fb.Tensor:  # type: ignore[override]
        return fb.lgamma(x).sum(-1) - fb.lgamma(x.sum(-1))
