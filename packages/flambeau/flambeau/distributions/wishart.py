"""The Wishart distribution over positive-definite matrices."""

from __future__ import annotations

import math
import warnings
from typing import Any

import flambeau_core as fb

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x: fb.Tensor, p: int) -> fb.Tensor:
    """The multivariate digamma function of dimension ``p`` (the derivative of ``mvlgamma``)."""
    if not x.gt((p - 1) / 2).all():
        raise ValueError("[Wishart] wrong domain for the multivariate digamma function: expected x > (p - 1) / 2")
    steps = fb.arange(p, dtype=x.dtype, device=x.device).div(2).expand(tuple(x.shape) + (-1,))
    return fb.digamma(x.unsqueeze(-1) - steps).sum(-1)


class Wishart(ExponentialFamily):
    r"""A Wishart distribution with ``df`` degrees of freedom :math:`\nu` and scale matrix :math:`\Sigma`,
    given as one of ``covariance_matrix``, ``precision_matrix`` (:math:`\Sigma^{-1}`) or ``scale_tril`` (its
    lower Cholesky factor): the distribution of :math:`\sum_i x_i x_i^\top` for :math:`\nu` draws of
    :math:`N(0, \Sigma)`. Sampled with gradients by the Bartlett decomposition; a singular sample is drawn
    again (``max_try_correction`` times), as PyTorch's.

    Args:
        df (float or Tensor): :math:`\nu`, greater than the matrix size minus 1.
        covariance_matrix (Tensor): :math:`\Sigma`, positive definite.
        precision_matrix (Tensor): :math:`\Sigma^{-1}`, positive definite.
        scale_tril (Tensor): the lower Cholesky factor of :math:`\Sigma`.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Wishart
        >>> d = Wishart(fb.tensor(4.0), covariance_matrix=fb.eye(2))
        >>> d.mean.tolist(), tuple(d.rsample((3,)).shape)
        ([[4.0, 0.0], [0.0, 4.0]], (3, 2, 2))
        >>> round(d.log_prob(fb.eye(2) * 3).item(), 4)
        -5.1256
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Any,
        covariance_matrix: fb.Tensor | None = None,
        precision_matrix: fb.Tensor | None = None,
        scale_tril: fb.Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = [p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, (int, float)):
            batch_shape = fb.Size(param.shape[:-2])
            self.df = fb.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = fb.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(tuple(batch_shape))
        event_shape = param.shape[-2:]
        if self.df.le(event_shape[-1] - 1).any():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        full = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(full)
        else:
            self.precision_matrix = param.expand(full)
        if self.df.lt(event_shape[-1]).any():
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = fb.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(batch_shape)

    def _bartlett_chi2(self, batch_shape: Any) -> Chi2:
        """The chi-squared draws on the diagonal of the Bartlett factor: df - i degrees of freedom in row i."""
        tril = self._unbroadcasted_scale_tril
        rows = fb.arange(self._event_shape[-1], dtype=tril.dtype, device=tril.device)
        return Chi2(df=self.df.unsqueeze(-1) - rows.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = fb.Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> fb.Tensor:
        """The lower Cholesky factor of the scale matrix, expanded to ``batch_shape + event_shape``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Wishart
            >>> Wishart(3.0, covariance_matrix=4 * fb.eye(2)).scale_tril.tolist()
            [[2.0, 0.0], [0.0, 2.0]]
        """
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self) -> fb.Tensor:
        """The scale matrix, expanded to ``batch_shape + event_shape``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Wishart
            >>> Wishart(3.0, scale_tril=2 * fb.eye(2)).covariance_matrix.tolist()
            [[4.0, 0.0], [0.0, 4.0]]
        """
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.transpose(-2, -1)).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def precision_matrix(self) -> fb.Tensor:
        """The inverse of the scale matrix, expanded to ``batch_shape + event_shape``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Wishart
            >>> Wishart(3.0, covariance_matrix=4 * fb.eye(2)).precision_matrix.tolist()
            [[0.25, 0.0], [0.0, 0.25]]
        """
        tril = self._unbroadcasted_scale_tril
        identity = fb.eye(self._event_shape[-1], device=tril.device, dtype=tril.dtype)
        return fb.cholesky_solve(identity, tril).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @property
    def mean(self) -> fb.Tensor:
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self) -> fb.Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = fb.where(factor <= 0, float("nan"), factor)
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> fb.Tensor:
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * (
            cov.pow(2) + fb.einsum("...i,...j->...ij", diag, diag)
        )

    def _bartlett_sampling(self, sample_shape: Any = ()) -> fb.Tensor:
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        noise = chi.clamp(min=fb.finfo(chi.dtype).eps).diag_embed(dim1=-2, dim2=-1)
        i, j = fb.tril_indices(p, p, offset=-1)
        noise[..., i, j] = fb.randn(
            tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,), dtype=noise.dtype, device=noise.device
        )
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape: Any = (), max_try_correction: int | None = None) -> fb.Tensor:
        """Draws by the Bartlett decomposition, with gradients; a sample that is singular (not positive
        definite, for ``df`` near the matrix size) is drawn again, up to ``max_try_correction`` (10) times,
        with a warning. One may still be singular after that: its ``log_prob`` is then ``-inf``. Differs
        from PyTorch 2.13, which warns "Singular sample detected." on every call (its test is inverted).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Wishart
            >>> df = fb.tensor(5.0, requires_grad=True)
            >>> x = Wishart(df, scale_tril=fb.eye(3)).rsample((2,))
            >>> tuple(x.shape), x.requires_grad
            ((2, 3, 3), True)
        """
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = tuple(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        # PyTorch's correction for singular samples, kept for numerical stability. PyTorch 2.13 starts from
        # support.check(sample), True for a positive-definite sample, so it warns "Singular sample detected."
        # on every call and draws every sample twice; here only a singular sample warns and is drawn again.
        is_singular = ~self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if is_singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(tuple(is_singular[is_singular].shape))
                sample[is_singular] = sample_new
                is_singular_new = ~self.support.check(sample_new)
                if self._batch_shape:
                    is_singular_new = is_singular_new.amax(self._batch_dims)
                is_singular[is_singular.clone()] = is_singular_new
                if not is_singular.any():
                    break
        return sample

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        log_det_scale = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (
            -nu * (p * _log_2 / 2 + log_det_scale)
            - fb.mvlgamma(nu / 2, p=p)
            + (nu - p - 1) / 2 * fb.linalg.slogdet(value).logabsdet
            - fb.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2
        )

    def entropy(self) -> fb.Tensor:
        nu = self.df
        p = self._event_shape[-1]
        log_det_scale = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (
            (p + 1) * (p * _log_2 / 2 + log_det_scale)
            + fb.mvlgamma(nu / 2, p=p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
            + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple[fb.Tensor, fb.Tensor]:
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-fb.linalg.slogdet(-2 * x).logabsdet + _log_2 * p) + fb.mvlgamma(
            y + (p + 1) / 2, p=p
        )
