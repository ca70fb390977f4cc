"""The LKJ distribution over Cholesky factors of correlation matrices (after NumPyro's and PyTorch's)."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    r"""The LKJ distribution of the lower Cholesky factor :math:`L` of a ``dim`` x ``dim`` correlation matrix:
    :math:`M = L L^\top` has density proportional to :math:`\det(M)^{\eta - 1}` for ``concentration``
    :math:`\eta` (uniform over correlation matrices at :math:`\eta = 1`). Sampled by the onion method
    (Lewandowski, Kurowicka and Joe, 2009, section 3), without gradients, as PyTorch's.

    Args:
        dim (int): the size of the matrices, at least 2.
        concentration (float or Tensor): :math:`\eta`, positive (default 1).
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import LKJCholesky
        >>> d = LKJCholesky(3, 0.5)
        >>> L = d.sample()
        >>> tuple(L.shape), fb.allclose((L @ L.T).diagonal(), fb.ones(3), atol=1e-5)
        ((3, 3), True)
        >>> round(d.log_prob(fb.eye(3)).item(), 4)
        -2.531
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.shape
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = fb.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = fb.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, fb.Size((dim, dim)), validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = fb.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        """A Cholesky factor per sample and batch element, by the onion method.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import LKJCholesky
            >>> LKJCholesky(4, fb.tensor([1.0, 2.0])).sample((5,)).shape
            flambeau.Size([5, 2, 4, 4])
        """
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = fb.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
        u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        u_hypersphere[..., 0, :].fill_(0.0)  # the first row is all zeros (0 / 0 above)
        w = fb.sqrt(y) * u_hypersphere
        eps = fb.finfo(w.dtype).tiny
        diag_elems = fb.clamp(1 - fb.sum(w**2, dim=-1), min=eps).sqrt()
        return w + fb.diag_embed(diag_elems)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = fb.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = fb.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = fb.lgamma(alpha) * dm1
        numerator = fb.mvlgamma(alpha - 0.5, dm1)
        normalize_term = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized_log_pdf - normalize_term
