"""The exponential-family base class: entropy and KL from the log normaliser by automatic differentiation."""

from __future__ import annotations

import flambeau_autograd
import flambeau_core as fb

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    r"""Base class of exponential-family distributions, with densities
    :math:`p(x; \theta) = \exp(\langle t(x), \theta \rangle - F(\theta) + k(x))`.

    A subclass gives the natural parameters :math:`\theta` (``_natural_params``), the log normaliser
    :math:`F` (``_log_normalizer``) and the expected carrier measure :math:`E[k(x)]`
    (``_mean_carrier_measure``); :meth:`entropy` and the Bregman-divergence KL between two members of
    one family then follow from :math:`\nabla F`, computed by autograd.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import ExponentialFamily, Normal
        >>> d = Normal(fb.tensor([0.0]), fb.tensor([1.0]))
        >>> isinstance(d, ExponentialFamily), round(ExponentialFamily.entropy(d).item(), 4)
        (True, 1.4189)
    """

    @property
    def _natural_params(self) -> tuple[fb.Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: fb.Tensor) -> fb.Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> fb.Tensor:
        """The entropy :math:`F(\\theta) - \\langle \\theta, \\nabla F(\\theta) \\rangle - E[k(x)]`, batched.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Exponential, ExponentialFamily
            >>> ExponentialFamily.entropy(Exponential(fb.tensor([1.0]))).tolist()
            [1.0]
        """
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with flambeau_autograd.enable_grad():
            log_norm = self._log_normalizer(*params)
            grads = flambeau_autograd.grad(log_norm.sum(), params, create_graph=True)
        result = log_norm - self._mean_carrier_measure
        for param, grad in zip(params, grads, strict=True):
            result = result - (param * grad).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
