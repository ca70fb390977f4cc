r"""``flambeau.distributions``: probability distributions and sampling, as ``torch.distributions``.

Each distribution has PyTorch's parameters, ``batch_shape``/``event_shape``, ``sample`` and (where
the distribution is reparameterisable) a differentiable ``rsample``, ``log_prob``, ``cdf``/``icdf``,
``entropy``, moments and ``expand``; with ``validate_args`` (on by default) parameters are checked
against ``arg_constraints`` and values against ``support`` with PyTorch's messages.
:func:`kl_divergence` looks up closed forms registered with :func:`register_kl`;
:mod:`~flambeau.distributions.transforms` and :mod:`~flambeau.distributions.constraints` with
:data:`biject_to`/:data:`transform_to` build constrained parametrisations.

The gamma family (Gamma, Chi2, Beta, Dirichlet, StudentT) samples with core's ``_standard_gamma``, whose
reparameterised gradient makes their ``rsample`` differentiable; Poisson, Binomial and NegativeBinomial
sample with core's ``poisson`` and ``binomial``.

Example:
    >>> import flambeau as fb
    >>> from flambeau.distributions import Normal
    >>> loc = fb.zeros(3, requires_grad=True)
    >>> x = Normal(loc, 1.0).rsample()
    >>> Normal(loc, 1.0).log_prob(x).sum().backward()
    >>> loc.grad.shape
    flambeau.Size([3])
"""

from __future__ import annotations

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "FisherSnedecor",
    "ExponentialFamily",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
    *_transforms_all,
]
