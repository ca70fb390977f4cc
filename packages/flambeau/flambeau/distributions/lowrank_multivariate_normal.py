"""The multivariate normal distribution with a low-rank-plus-diagonal covariance."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _solve_lower
from .utils import _require_tensor, _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_capacitance_tril(W: fb.Tensor, D: fb.Tensor) -> fb.Tensor:  # noqa: N803
    """The Cholesky factor of the capacitance matrix ``I + W^T D^-1 W``."""
    m = W.shape[-1]
    k = (W.mT / D.unsqueeze(-2)) @ W
    return fb.linalg.cholesky(k + fb.eye(m, dtype=W.dtype, device=W.device))


def _batch_lowrank_logdet(W: fb.Tensor, D: fb.Tensor, capacitance_tril: fb.Tensor) -> fb.Tensor:  # noqa: N803
    """``log det(W W^T + D)`` by the matrix determinant lemma: ``log det(C) + log det(D)``."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(
    W: fb.Tensor,  # noqa: N803
    D: fb.Tensor,  # noqa: N803
    x: fb.Tensor,
    capacitance_tril: fb.Tensor,
) -> fb.Tensor:
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity."""
    wt_dinv_x = ((W.mT / D.unsqueeze(-2)) @ x.unsqueeze(-1)).squeeze(-1)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    r"""A multivariate normal with covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``.

    Densities cost :math:`O(n m^2)` for an ``n x m`` factor (Woodbury identity and determinant lemma).

    Args:
        loc (Tensor): the mean, of shape ``batch_shape + (n,)``.
        cov_factor (Tensor): the low-rank factor, of shape ``batch_shape + (n, m)``.
        cov_diag (Tensor): the diagonal part, positive, of shape ``batch_shape + (n,)``.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import LowRankMultivariateNormal
        >>> m = LowRankMultivariateNormal(fb.zeros(2), fb.tensor([[1.0], [0.0]]), fb.ones(2))
        >>> m.covariance_matrix.tolist()
        [[2.0, 0.0], [0.0, 1.0]]
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self, loc: fb.Tensor, cov_factor: fb.Tensor, cov_diag: fb.Tensor, validate_args: bool | None = None
    ) -> None:
        for name, value in (("loc", loc), ("cov_factor", cov_factor), ("cov_diag", cov_diag)):
            _require_tensor("LowRankMultivariateNormal", name, value)
        if loc.dim() < 1:
            raise fb.FlambeauError("[LowRankMultivariateNormal] loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise fb.FlambeauError(
                "[LowRankMultivariateNormal] cov_factor must be at least two-dimensional, "
                "with optional leading batch dimensions"
            )
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise fb.FlambeauError(
                f"[LowRankMultivariateNormal] cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise fb.FlambeauError(
                f"[LowRankMultivariateNormal] cov_diag must be a batch of vectors with shape {fb.Size(event_shape)}"
            )
        try:
            loc_, self.cov_factor, cov_diag_ = fb.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
            )
        except RuntimeError as e:
            raise fb.FlambeauError(
                f"[LowRankMultivariateNormal] Incompatible batch shapes: loc {tuple(loc.shape)}, "
                f"cov_factor {tuple(cov_factor.shape)}, cov_diag {tuple(cov_diag.shape)}"
            ) from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = tuple(self.loc.shape[:-1])
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> LowRankMultivariateNormal:
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        shape = tuple(fb.Size(batch_shape))
        new.loc = self.loc.expand(shape + tuple(self._event_shape))
        new.cov_diag = self.cov_diag.expand(shape + tuple(self._event_shape))
        new.cov_factor = self.cov_factor.expand(shape + tuple(self.cov_factor.shape[-2:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        self._finish_expand(new, shape, self._event_shape)
        return new

    @property
    def mean(self) -> fb.Tensor:
        return self.loc

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> fb.Tensor:
        """The variances: the diagonal of the covariance.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import LowRankMultivariateNormal
            >>> m = LowRankMultivariateNormal(fb.zeros(2), fb.tensor([[3.0], [0.0]]), fb.tensor([7.0, 4.0]))
            >>> m.variance.tolist()
            [16.0, 4.0]
        """
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            tuple(self._batch_shape + self._event_shape)
        )

    @lazy_property
    def scale_tril(self) -> fb.Tensor:
        """The lower Cholesky factor of the covariance: ``sqrt(D) chol(I + D^-1/2 W W^T D^-1/2)``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import LowRankMultivariateNormal
            >>> m = LowRankMultivariateNormal(fb.zeros(2), fb.tensor([[3.0], [0.0]]), fb.tensor([7.0, 4.0]))
            >>> [[round(v, 4) for v in row] for row in m.scale_tril.tolist()]
            [[4.0, 0.0], [0.0, 2.0]]
        """
        n = self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / d_sqrt
        k = dinvsqrt_w @ dinvsqrt_w.mT + fb.eye(n, dtype=d_sqrt.dtype, device=d_sqrt.device)
        return (d_sqrt * fb.linalg.cholesky(k)).expand(tuple(self._batch_shape) + (n, n))

    @lazy_property
    def covariance_matrix(self) -> fb.Tensor:
        """The covariance ``W W^T + diag(D)``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import LowRankMultivariateNormal
            >>> m = LowRankMultivariateNormal(fb.zeros(2), fb.tensor([[3.0], [0.0]]), fb.tensor([7.0, 4.0]))
            >>> m.covariance_matrix.tolist()
            [[16.0, 0.0], [0.0, 4.0]]
        """
        w = self._unbroadcasted_cov_factor
        cov = w @ w.mT + fb.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(tuple(self._batch_shape + self._event_shape + self._event_shape))

    @lazy_property
    def precision_matrix(self) -> fb.Tensor:
        """The inverse covariance by the Woodbury identity.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import LowRankMultivariateNormal
            >>> m = LowRankMultivariateNormal(fb.zeros(2), fb.tensor([[3.0], [0.0]]), fb.tensor([7.0, 4.0]))
            >>> [[round(v, 4) for v in row] for row in m.precision_matrix.tolist()]
            [[0.0625, 0.0], [0.0, 0.25]]
        """
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = _solve_lower(self._capacitance_tril, w.mT / d.unsqueeze(-2))
        precision = fb.diag_embed(d.reciprocal()) - a.mT @ a
        return precision.expand(tuple(self._batch_shape + self._event_shape + self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        w_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        eps_w = _standard_normal(w_shape, self.loc.dtype, self.loc.device)
        eps_d = _standard_normal(shape, self.loc.dtype, self.loc.device)
        return (
            self.loc
            + (self._unbroadcasted_cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1)
            + self._unbroadcasted_cov_diag.sqrt() * eps_d
        )

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_lowrank_mahalanobis(
            self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, diff, self._capacitance_tril
        )
        log_det = _batch_lowrank_logdet(
            self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        )
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + m)

    def entropy(self) -> fb.Tensor:
        log_det = _batch_lowrank_logdet(
            self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        )
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return h.expand(tuple(self._batch_shape)) if len(self._batch_shape) else h
