"""The multivariate normal distribution, parametrised by a covariance, a precision or a Cholesky factor."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb

from . import constraints
from .distribution import Distribution
from .utils import _require_tensor, _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _solve_lower(lower: fb.Tensor, rhs: fb.Tensor) -> fb.Tensor:
    """``lower^-1 @ rhs`` for lower-triangular ``lower``, batch dimensions broadcast.

    Only the lower triangle is read (so the upper one gets no gradient), as a triangular solve would.
    """
    return fb.linalg.solve(lower.tril(), rhs)


def _batch_mahalanobis(bL: fb.Tensor, bx: fb.Tensor) -> fb.Tensor:  # noqa: N803
    """The squared Mahalanobis distance ``x^T (L L^T)^-1 x``, batch dimensions of ``L`` and ``x`` broadcast.

    When ``x``'s batch shape ends with ``L``'s (samples of a batch of distributions), the leading
    dimensions of ``x`` become right-hand-side columns: one solve per matrix, not one per sample.
    """
    n = bx.shape[-1]
    l_batch, x_batch = tuple(bL.shape[:-2]), tuple(bx.shape[:-1])
    lead = len(x_batch) - len(l_batch)
    if lead >= 0 and x_batch[lead:] == l_batch:
        columns = bx.reshape((-1,) + l_batch + (n,)).movedim(0, -1)  # (l_batch..., n, samples)
        squared = _solve_lower(bL, columns).pow(2).sum(-2)  # (l_batch..., samples)
        return squared.movedim(-1, 0).reshape(x_batch)
    return _solve_lower(bL, bx.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _batch_trace_XXT(bmat: fb.Tensor) -> fb.Tensor:  # noqa: N802
    """The trace of ``X @ X^T`` for a batch of matrices: the sum of squares of their entries."""
    return bmat.pow(2).reshape(tuple(bmat.shape[:-2]) + (-1,)).sum(-1)


def _precision_to_scale_tril(precision: fb.Tensor) -> fb.Tensor:
    """The lower Cholesky factor of ``precision^-1`` without inverting ``precision`` first.

    With ``flip`` reversing rows and columns, ``flip(P) = Lf Lf^T`` gives ``P = U U^T`` for the
    upper-triangular ``U = flip(Lf)``, so ``P^-1 = (U^-1)^T U^-1`` where ``(U^-1)^T`` is lower.
    """
    lf = fb.linalg.cholesky(precision.flip((-2, -1)))
    l_inv = lf.flip((-2, -1)).mT
    eye = fb.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return _solve_lower(l_inv, eye.expand(tuple(l_inv.shape)))


class MultivariateNormal(Distribution):
    r"""A multivariate normal distribution with mean ``loc``, given one of ``covariance_matrix``,
    ``precision_matrix`` (positive definite) or ``scale_tril`` (lower triangular with a positive diagonal).

    Args:
        loc (Tensor): the mean, of shape ``batch_shape + (n,)``.
        covariance_matrix (Tensor): the covariance.
        precision_matrix (Tensor): the inverse covariance.
        scale_tril (Tensor): the lower Cholesky factor of the covariance.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import MultivariateNormal
        >>> m = MultivariateNormal(fb.zeros(2), fb.eye(2))
        >>> round(m.log_prob(fb.zeros(2)).item(), 4)
        -1.8379
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: fb.Tensor,
        covariance_matrix: fb.Tensor | None = None,
        precision_matrix: fb.Tensor | None = None,
        scale_tril: fb.Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        _require_tensor("MultivariateNormal", "loc", loc)
        for name, matrix in (
            ("covariance_matrix", covariance_matrix),
            ("precision_matrix", precision_matrix),
            ("scale_tril", scale_tril),
        ):
            if matrix is not None:
                _require_tensor("MultivariateNormal", name, matrix)
        if loc.dim() < 1:
            raise fb.FlambeauError("[MultivariateNormal] loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise fb.FlambeauError(
                "[MultivariateNormal] Exactly one of covariance_matrix or precision_matrix or scale_tril "
                "may be specified."
            )
        matrix = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        name = (
            "scale_tril"
            if scale_tril is not None
            else "covariance_matrix"
            if covariance_matrix is not None
            else "precision_matrix"
        )
        if matrix.dim() < 2:
            raise fb.FlambeauError(
                f"[MultivariateNormal] {name} matrix must be at least two-dimensional, "
                "with optional leading batch dimensions"
            )
        batch_shape = fb.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        event_shape = tuple(self.loc.shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = fb.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        shape = tuple(fb.Size(batch_shape))
        n = self._event_shape[0]
        new.loc = self.loc.expand(shape + (n,))
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape + (n, n)))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        self._finish_expand(new, shape, self._event_shape)
        return new

    @lazy_property
    def scale_tril(self) -> fb.Tensor:
        """The lower Cholesky factor of the covariance.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import MultivariateNormal
            >>> m = MultivariateNormal(fb.zeros(2), covariance_matrix=fb.tensor([[4.0, 0.0], [0.0, 1.0]]))
            >>> m.scale_tril.tolist()
            [[2.0, 0.0], [0.0, 1.0]]
        """
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape + self._event_shape + self._event_shape))

    @lazy_property
    def covariance_matrix(self) -> fb.Tensor:
        """The covariance matrix.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import MultivariateNormal
            >>> m = MultivariateNormal(fb.zeros(2), scale_tril=fb.tensor([[4.0, 0.0], [0.0, 1.0]]))
            >>> m.covariance_matrix.tolist()
            [[16.0, 0.0], [0.0, 1.0]]
        """
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(tuple(self._batch_shape + self._event_shape + self._event_shape))

    @lazy_property
    def precision_matrix(self) -> fb.Tensor:
        """The inverse of the covariance matrix.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import MultivariateNormal
            >>> m = MultivariateNormal(fb.zeros(2), covariance_matrix=fb.tensor([[4.0, 0.0], [0.0, 1.0]]))
            >>> m.precision_matrix.tolist()
            [[0.25, 0.0], [0.0, 1.0]]
        """
        lower = self._unbroadcasted_scale_tril
        eye = fb.eye(lower.shape[-1], dtype=lower.dtype, device=lower.device)
        lower_inv = _solve_lower(lower, eye.expand(tuple(lower.shape)))
        return (lower_inv.mT @ lower_inv).expand(tuple(self._batch_shape + self._event_shape + self._event_shape))

    @property
    def mean(self) -> fb.Tensor:
        return self.loc

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    @property
    def variance(self) -> fb.Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        eps = _standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self) -> fb.Tensor:
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h.expand(tuple(self._batch_shape)) if len(self._batch_shape) else h
