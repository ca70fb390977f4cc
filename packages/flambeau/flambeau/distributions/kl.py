"""KL divergences between distributions, with a registry of closed forms, as ``torch.distributions.kl``.

Example:
    >>> import flambeau as fb
    >>> from flambeau.distributions import Normal, kl_divergence
    >>> round(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item(), 4)
    0.5
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import total_ordering
from typing import Any

import flambeau_autograd
import flambeau_core as fb
import flambeau_nn.functional as F

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis,
)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis, _batch_trace_XXT, _solve_lower
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost, euler_constant

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable[[Any, Any], fb.Tensor]] = {}  # what was registered
_KL_MEMOIZE: dict[tuple[type, type], Any] = {}  # lookups of concrete type pairs


def register_kl(
    type_p: type, type_q: type
) -> Callable[[Callable[[Any, Any], fb.Tensor]], Callable[[Any, Any], fb.Tensor]]:
    """A decorator registering ``fun(p, q)`` as :func:`kl_divergence` for ``p`` of ``type_p`` and ``q`` of ``type_q``.

    Lookup picks the most specific registered pair by subclass; an ambiguous match warns
    (register the more specific pair to break the tie).

    Example:
        >>> from flambeau.distributions import Normal, kl_divergence, register_kl
        >>> class MyNormal(Normal):
        ...     pass
        >>> @register_kl(MyNormal, MyNormal)
        ... def _kl_mine(p, q):
        ...     return (p.loc - q.loc).abs()
        >>> kl_divergence(MyNormal(0.0, 1.0), MyNormal(3.0, 1.0)).item()
        3.0
    """
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"[register_kl] Expected {name} to be a Distribution subclass but got {t}")

    def decorator(fun: Callable[[Any, Any], fb.Tensor]) -> Callable[[Any, Any], fb.Tensor]:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new pair can change which match is the most specific
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered (type_p, type_q) pair ordered by specificity, left to right."""

    __slots__ = ["types"]

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types, strict=True):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    if left_fun is not _KL_REGISTRY[right_p, right_q]:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning,
            stacklevel=3,
        )
    return left_fun


def kl_divergence(p: Distribution, q: Distribution) -> fb.Tensor:
    r"""The Kullback-Leibler divergence :math:`KL(p \| q) = \int p(x) \log \frac{p(x)}{q(x)} dx`, batched.

    Raises:
        NotImplementedError: when no closed form is registered for the two types (see :func:`register_kl`).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Bernoulli, kl_divergence
        >>> kl_divergence(Bernoulli(fb.tensor([0.5])), Bernoulli(fb.tensor([0.5]))).tolist()
        [0.0]
    """
    key = (type(p), type(q))
    try:
        fun = _KL_MEMOIZE[key]
    except KeyError:
        fun = _dispatch_kl(*key)
        _KL_MEMOIZE[key] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type {q.__class__.__name__}"
        )
    return fun(p, q)


def _infinite_like(tensor: fb.Tensor) -> fb.Tensor:
    return fb.full_like(tensor, float("inf"))


def _inf_where(mask: fb.Tensor, value: fb.Tensor) -> fb.Tensor:
    return fb.where(mask, fb.full_like(value, float("inf")), value)


# Same family.


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> fb.Tensor:
    # p log(p/q) and (1-p) log((1-p)/(1-q)) through logits; 0 log 0 = 0 and x log(x/0) = inf.
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = fb.where(p.probs == 0, fb.zeros_like(t1), _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = fb.where(p.probs == 1, fb.zeros_like(t2), _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> fb.Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _inf_where((q.probs == 0).expand_as(t), t)
    t = fb.where((p.probs == 0).expand_as(t), fb.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> fb.Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> fb.Tensor:
    rate_ratio = q.rate / p.rate
    return rate_ratio - rate_ratio.log() - 1


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> fb.Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> fb.Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> fb.Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> fb.Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> fb.Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> fb.Tensor:
    # Closed form of Chyzak and Nielsen (2019).
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> fb.Tensor:
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError(
            "[kl_divergence] KL of TransformedDistributions needs the same transforms and event shapes"
        )
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> fb.Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(
            "[kl_divergence] KL of Independent distributions needs the same reinterpreted_batch_ndims"
        )
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


# Multivariate normals.


def _check_same_event_shape(p: Distribution, q: Distribution, what: str) -> None:
    if p.event_shape != q.event_shape:
        raise fb.FlambeauError(
            f"[kl_divergence] KL-divergence between two {what} with different event shapes cannot be computed"
        )


def _log_det_tril(lower: fb.Tensor) -> fb.Tensor:
    """``log det(L L^T) / 2`` for a lower Cholesky factor."""
    return lower.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _woodbury_factor(q: LowRankMultivariateNormal) -> fb.Tensor:
    """``A`` with ``q.cov^-1 = D^-1 - A^T A``."""
    w, d = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    return _solve_lower(q._capacitance_tril, w.mT / d.unsqueeze(-2))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal, q: MultivariateNormal) -> fb.Tensor:
    _check_same_event_shape(p, q, "Multivariate Normals")
    pl, ql = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    n = p.event_shape[0]
    batch = tuple(fb.broadcast_shapes(tuple(ql.shape[:-2]), tuple(pl.shape[:-2])))
    trace_term = _batch_trace_XXT(_solve_lower(ql.expand(batch + (n, n)), pl.expand(batch + (n, n))))
    mahalanobis = _batch_mahalanobis(ql, q.loc - p.loc)
    return _log_det_tril(ql) - _log_det_tril(pl) + 0.5 * (trace_term + mahalanobis - n)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(
    p: LowRankMultivariateNormal, q: LowRankMultivariateNormal
) -> fb.Tensor:
    _check_same_event_shape(p, q, "Low Rank Multivariate Normals")
    qw, qd = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    pw, pd = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    log_det = _batch_lowrank_logdet(qw, qd, q._capacitance_tril) - _batch_lowrank_logdet(pw, pd, p._capacitance_tril)
    mahalanobis = _batch_lowrank_mahalanobis(qw, qd, q.loc - p.loc, q._capacitance_tril)
    # tr(q.cov^-1 p.cov) with q.cov^-1 = D^-1 - A^T A and p.cov = pD + pW pW^T.
    a = _woodbury_factor(q)
    trace_term = (
        (pd / qd).sum(-1)
        + _batch_trace_XXT(pw * qd.rsqrt().unsqueeze(-1))
        - _batch_trace_XXT(a * pd.sqrt().unsqueeze(-2))
        - _batch_trace_XXT(a @ pw)
    )
    return 0.5 * (log_det + trace_term + mahalanobis - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p: MultivariateNormal, q: LowRankMultivariateNormal) -> fb.Tensor:
    _check_same_event_shape(p, q, "(Low Rank) Multivariate Normals")
    qw, qd = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    pl = p._unbroadcasted_scale_tril
    log_det = _batch_lowrank_logdet(qw, qd, q._capacitance_tril) - 2 * _log_det_tril(pl)
    mahalanobis = _batch_lowrank_mahalanobis(qw, qd, q.loc - p.loc, q._capacitance_tril)
    a = _woodbury_factor(q)
    trace_term = _batch_trace_XXT(pl * qd.rsqrt().unsqueeze(-1)) - _batch_trace_XXT(a @ pl)
    return 0.5 * (log_det + trace_term + mahalanobis - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p: LowRankMultivariateNormal, q: MultivariateNormal) -> fb.Tensor:
    _check_same_event_shape(p, q, "(Low Rank) Multivariate Normals")
    pw, pd = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    ql = q._unbroadcasted_scale_tril
    log_det = 2 * _log_det_tril(ql) - _batch_lowrank_logdet(pw, pd, p._capacitance_tril)
    mahalanobis = _batch_mahalanobis(ql, q.loc - p.loc)
    n = p.event_shape[0]
    batch = tuple(fb.broadcast_shapes(tuple(ql.shape[:-2]), tuple(pw.shape[:-2])))
    ql_b = ql.expand(batch + (n, n))
    trace_term = _batch_trace_XXT(_solve_lower(ql_b, pw.expand(batch + (n, pw.shape[-1])))) + _batch_trace_XXT(
        _solve_lower(ql_b, fb.diag_embed(pd.sqrt()).expand(batch + (n, n)))
    )
    return 0.5 * (log_det + trace_term + mahalanobis - n)


# Different families.


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> fb.Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.scale < q.scale, result)  # p has mass below q's support


@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Exponential, Pareto)
@register_kl(Exponential, Uniform)
def _kl_exponential_infinity(p: Exponential, q: Distribution) -> fb.Tensor:
    return _infinite_like(p.rate)


@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Pareto)
@register_kl(Laplace, Uniform)
@register_kl(Normal, ContinuousBernoulli)
@register_kl(Normal, Exponential)
@register_kl(Normal, Pareto)
@register_kl(Normal, Uniform)
def _kl_real_support_infinity(p: Any, q: Distribution) -> fb.Tensor:
    # p has mass on the whole real line, q does not.
    return _infinite_like(p.loc)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> fb.Tensor:
    scale_rate_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = scale_rate_prod.log() - 1
    t2 = loc_scale_ratio.exp() * scale_rate_prod / (scale_rate_prod + 1)
    return t1 - loc_scale_ratio + t2 + scale_rate_prod.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> fb.Tensor:
    var_normal = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi).log()
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + 0.5 * q.loc.pow(2)) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> fb.Tensor:
    param_ratio = p.scale / q.scale
    t1 = (param_ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * param_ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * euler_constant - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (euler_constant + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> fb.Tensor:
    var_normal = q.scale.pow(2)
    scale_sqr_var_ratio = p.scale.pow(2) / var_normal
    t1 = 0.5 * (2 * scale_sqr_var_ratio / math.pi).log()
    return -t1 + scale_sqr_var_ratio + 0.5 * (p.loc - q.loc).pow(2) / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> fb.Tensor:
    mean_scale_ratio = p.loc / q.scale
    var_scale_sqr_ratio = (p.scale / q.scale).pow(2)
    loc_scale_ratio = q.loc / q.scale
    t1 = var_scale_sqr_ratio.log() * 0.5
    t2 = mean_scale_ratio - loc_scale_ratio
    t3 = (-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio).exp()
    return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> fb.Tensor:
    loc_diff = p.loc - q.loc
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = (p.scale / q.scale).log()
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * loc_diff_scale_ratio.pow(2)).exp()
    t3 = loc_diff * fb.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> fb.Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _inf_where(p.low < 0, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> fb.Tensor:
    common_term = q.scale / (p.high - p.low)
    high_loc_diff = (p.high - q.loc) / q.scale
    low_loc_diff = (p.low - q.loc) / q.scale
    t1 = common_term.log() + 0.5 * (high_loc_diff + low_loc_diff)
    t2 = common_term * ((-high_loc_diff).exp() - (-low_loc_diff).exp())
    return t1 - t2


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> fb.Tensor:
    common_term = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
    t2 = common_term.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


def _x_log_x(x: fb.Tensor) -> fb.Tensor:
    return x * x.log()


@register_kl(Pareto, ContinuousBernoulli)
@register_kl(Pareto, Uniform)
def _kl_pareto_infinity(p: Pareto, q: Distribution) -> fb.Tensor:
    return _infinite_like(p.scale)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> fb.Tensor:
    scale_rate_prod = p.scale * q.rate
    t1 = (p.alpha / scale_rate_prod).log()
    t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
    return _inf_where(p.alpha <= 1, t1 - p.alpha.reciprocal() + t3 - 1)  # p's mean is infinite


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> fb.Tensor:
    var_normal = 2 * q.scale.pow(2)
    common_term = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common_term.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common_term - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / var_normal - 1
    return _inf_where(p.alpha <= 2, result)  # p's variance is infinite


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> fb.Tensor:
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(p.low < q.scale, t2 * (q.alpha + 1) - t1)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuousbernoulli_continuousbernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> fb.Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Pareto)
def _kl_continuousbernoulli_infinity(p: ContinuousBernoulli, q: Distribution) -> fb.Tensor:
    return _infinite_like(p.probs)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuousbernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> fb.Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuousbernoulli_normal(p: ContinuousBernoulli, q: Normal) -> fb.Tensor:
    # -H(p) - E_p[log q(x)], with E_p[x^2] = Var + mean^2.
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + q.scale.log()
    t3 = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuousbernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> fb.Tensor:
    # PyTorch's condition: infinite unless q's support strictly contains [0, 1] (also when it equals it).
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low >= 0) | (q.high <= 1), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuousbernoulli(p: Uniform, q: ContinuousBernoulli) -> fb.Tensor:
    result = -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()
    # PyTorch's condition: infinite unless p's support lies strictly inside (0, 1).
    return _inf_where((p.high >= 1) | (p.low <= 0), result)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> fb.Tensor:
    """The Bregman divergence of the log normaliser: ``F(q) - F(p) - <q - p, grad F(p)>`` in natural parameters."""
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot be computed "
            "using Bregman divergences"
        )
    p_params = [param.detach().requires_grad_() for param in p._natural_params]
    q_params = q._natural_params
    with flambeau_autograd.enable_grad():
        p_log_norm = p._log_normalizer(*p_params)
        grads = flambeau_autograd.grad(p_log_norm.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - p_log_norm
    for p_param, q_param, grad in zip(p_params, q_params, grads, strict=True):
        result = result - _sum_rightmost((q_param - p_param) * grad, len(q.event_shape))
    return result


# ---- the gamma family (Beta, Gamma, Dirichlet) and the counts (Poisson, Binomial) ----


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> fb.Tensor:
    p1, p0, q1, q0 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    p_sum, q_sum = p1 + p0, q1 + q0
    log_beta_ratio = fb.lgamma(q1) + fb.lgamma(q0) + fb.lgamma(p_sum) - fb.lgamma(p1) - fb.lgamma(p0) - fb.lgamma(q_sum)
    return (
        log_beta_ratio + (p1 - q1) * fb.digamma(p1) + (p0 - q0) * fb.digamma(p0) + (q_sum - p_sum) * fb.digamma(p_sum)
    )


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> fb.Tensor:
    return (
        q.concentration * fb.log(p.rate / q.rate)
        + fb.lgamma(q.concentration)
        - fb.lgamma(p.concentration)
        + (p.concentration - q.concentration) * fb.digamma(p.concentration)
        + (q.rate - p.rate) * (p.concentration / p.rate)
    )


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> fb.Tensor:
    # E_p[log x] = -log(rate_p) - euler_constant
    ratio = q.rate / p.rate
    return (
        -q.concentration * fb.log(ratio)
        + ratio
        + fb.lgamma(q.concentration)
        + q.concentration * euler_constant
        - (1 + euler_constant)
    )


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> fb.Tensor:
    return -p.entropy() - fb.log(q.rate) + q.rate * (p.concentration / p.rate)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> fb.Tensor:
    pc, qc = p.concentration, q.concentration
    p_sum, q_sum = pc.sum(-1), qc.sum(-1)
    t1 = fb.lgamma(p_sum) - fb.lgamma(q_sum) - (fb.lgamma(pc) - fb.lgamma(qc)).sum(-1)
    return t1 + ((pc - qc) * (fb.digamma(pc) - fb.digamma(p_sum).unsqueeze(-1))).sum(-1)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> fb.Tensor:
    return p.rate * (fb.log(p.rate) - fb.log(q.rate)) - (p.rate - q.rate)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> fb.Tensor:
    # only defined when q has at least p's trials: fewer is infinite (support not covered)
    if bool((p.total_count < q.total_count).any().item()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + fb.log1p(-p.probs) - fb.log1p(-q.probs))
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> fb.Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> fb.Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> fb.Tensor:
    # E_p[log x] = digamma(a) - digamma(a + b)
    e_log_x = fb.digamma(p.concentration1) - fb.digamma(p.concentration1 + p.concentration0)
    return (
        -p.entropy()
        + fb.lgamma(q.concentration)
        - q.concentration * q.rate.log()
        - (q.concentration - 1) * e_log_x
        + q.rate * p.mean
    )


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> fb.Tensor:
    mean = p.mean
    var_normal = q.scale.pow(2)
    second_moment = mean * (1 - mean) / (p.concentration1 + p.concentration0 + 1) + mean.pow(2)
    return (
        -p.entropy()
        + 0.5 * (var_normal * 2 * math.pi).log()
        + (0.5 * second_moment - q.loc * mean + 0.5 * q.loc.pow(2)) / var_normal
    )


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> fb.Tensor:
    c, r = p.concentration, p.rate
    var_normal = q.scale.pow(2)
    rate_sqr = r.pow(2)
    t1 = 0.5 * fb.log(rate_sqr * var_normal * 2 * math.pi) - c - fb.lgamma(c)
    t2 = 0.5 * (c.pow(2) + c) / rate_sqr
    t3 = q.loc * c / r
    t4 = 0.5 * q.loc.pow(2)
    return t1 + (c - 1) * fb.digamma(c) + (t2 - t3 + t4) / var_normal


# Supports that do not cover p's: infinite.
for _p, _q in (
    (Beta, Pareto),
    (Exponential, Beta),
    (Gamma, Beta),
    (Gamma, ContinuousBernoulli),
    (Gamma, Pareto),
    (Gamma, Uniform),
    (Gumbel, Beta),
    (Gumbel, Gamma),
    (Laplace, Beta),
    (Laplace, Gamma),
    (Normal, Beta),
    (Normal, Gamma),
    (Pareto, Beta),
    (Poisson, Bernoulli),
    (Poisson, Binomial),
):
    register_kl(_p, _q)(lambda p, q: _infinite_like(_first_parameter(p)))


def _first_parameter(p: Distribution) -> fb.Tensor:
    """p's first parameter (of its batch shape in each family above), for the infinite KLs."""
    return getattr(p, next(iter(p.arg_constraints)))
