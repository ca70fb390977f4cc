"""flambeau.special: PyTorch's torch.special, with its names, signatures and semantics.

The functions are core ops of the shared elementwise list (``flambeau/elementwise_math.h``: lgamma,
digamma, i0, i0e, i1, i1e, erfcx, ndtr, ndtri, log_ndtr, entr, xlogy, xlog1py, zeta), composites
of them (polygamma, multigammaln, logit) and the core ops PyTorch also lists here (erf, expit,
softmax, ...), so every one runs on every device, takes ``out=`` where PyTorch does, and is
differentiable where PyTorch's is.

Example:
    >>> import flambeau_core as fc
    >>> x = fc.tensor([0.5, 1.0, 4.0], dtype=fc.float64)
    >>> [round(v, 6) for v in fc.special.gammaln(x).tolist()]
    [0.572365, 0.0, 1.791759]
    >>> [round(v, 6) for v in fc.special.ndtr(fc.tensor([0.0, 1.0])).tolist()]
    [0.5, 0.841345]
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core._C import Tensor

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "sinc",
    "softmax",
    "xlog1py",
    "xlogy",
    "zeta",
]


def gammaln(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Natural logarithm of the absolute value of the gamma function (torch.special.gammaln, ``lgamma``).

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.gammaln(fc.tensor([1.0, 2.0])).tolist()
        [0.0, 0.0]
    """
    return _C.lgamma(input, out=out)


def digamma(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The logarithmic derivative of the gamma function, psi(x) = Gamma'(x) / Gamma(x).

    -inf at +0, +inf at -0 and NaN at the negative integers, as PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.digamma(fc.tensor([1.0], dtype=fc.float64)).item(), 10)
        -0.5772156649
    """
    return _C.digamma(input, out=out)


psi = digamma


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, input) for n >= 1.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.polygamma(1, fc.tensor([1.0], dtype=fc.float64)).item(), 10)
        1.6449340668
    """
    return _C.polygamma(n, input, out=out)


def multigammaln(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:
    """The multivariate log-gamma function of dimension p (torch.special.multigammaln, ``mvlgamma``).

    Every element must exceed (p - 1) / 2.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.multigammaln(fc.tensor([2.5], dtype=fc.float64), 2).item(), 6)
        0.857048
    """
    return _C.mvlgamma(input, p, out=out)


def i0(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The modified Bessel function of the first kind of order 0.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.i0(fc.tensor([1.0], dtype=fc.float64)).item(), 10)
        1.2660658778
    """
    return _C.i0(input, out=out)


modified_bessel_i0 = i0


def i0e(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) i0(x).

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.i0e(fc.tensor([1000.0], dtype=fc.float64)).item(), 8)
        0.01261724
    """
    return _C.special_i0e(input, out=out)


def i1(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The modified Bessel function of the first kind of order 1.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.i1(fc.tensor([1.0], dtype=fc.float64)).item(), 10)
        0.565159104
    """
    return _C.special_i1(input, out=out)


modified_bessel_i1 = i1


def i1e(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) i1(x).

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.i1e(fc.tensor([-1.0], dtype=fc.float64)).item(), 10)
        -0.2079104153
    """
    return _C.special_i1e(input, out=out)


def erf(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The error function.

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.erf(fc.tensor([0.0])).tolist()
        [0.0]
    """
    return _C.erf(input, out=out)


def erfc(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The complementary error function 1 - erf(x).

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.erfc(fc.tensor([0.0])).tolist()
        [1.0]
    """
    return _C.erfc(input, out=out)


def erfcx(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The scaled complementary error function exp(x^2) erfc(x), finite for large x.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.erfcx(fc.tensor([100.0], dtype=fc.float64)).item(), 10)
        0.0056416138
    """
    return _C.special_erfcx(input, out=out)


def erfinv(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The inverse error function on (-1, 1).

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.erfinv(fc.tensor([0.0])).tolist()
        [0.0]
    """
    return _C.erfinv(input, out=out)


def ndtr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The standard normal cumulative distribution function.

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.ndtr(fc.tensor([0.0])).tolist()
        [0.5]
    """
    return _C.special_ndtr(input, out=out)


def ndtri(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The standard normal quantile function, the inverse of ndtr (-inf at 0, inf at 1).

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.ndtri(fc.tensor([0.975], dtype=fc.float64)).item(), 6)
        1.959964
    """
    return _C.special_ndtri(input, out=out)


def log_ndtr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """log(ndtr(x)), accurate far into the left tail.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.log_ndtr(fc.tensor([-40.0], dtype=fc.float64)).item(), 4)
        -804.6084
    """
    return _C.special_log_ndtr(input, out=out)


def entr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The elementwise entropy -x log(x): 0 at 0, -inf for x < 0.

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.entr(fc.tensor([0.0, 1.0, -1.0])).tolist()
        [0.0, -0.0, -inf]
    """
    return _C.special_entr(input, out=out)


def xlogy(input: Tensor | float, other: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """input * log(other), 0 where input is 0 (unless other is NaN).

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.xlogy(fc.tensor([0.0, 1.0]), fc.tensor([0.0, 1.0])).tolist()
        [0.0, 0.0]
    """
    return _C.xlogy(input, other, out=out)


def xlog1py(input: Tensor | float, other: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """input * log1p(other), 0 where input is 0 (unless other is NaN).

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.xlog1py(fc.tensor([0.0, 2.0]), fc.tensor([-1.0, 0.0])).tolist()
        [0.0, 0.0]
    """
    return _C.special_xlog1py(input, other, out=out)


def zeta(input: Tensor | float, other: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The Hurwitz zeta function, sum over k >= 0 of (other + k) ** -input.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.zeta(fc.tensor([2.0], dtype=fc.float64), 1.0).item(), 10)
        1.6449340668
    """
    return _C.special_zeta(input, other, out=out)


def expit(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The logistic sigmoid 1 / (1 + exp(-x)).

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.expit(fc.tensor([0.0])).tolist()
        [0.5]
    """
    return _C.sigmoid(input, out=out)


def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """log(p / (1 - p)); with eps, p is first clamped to [eps, 1 - eps].

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.logit(fc.tensor([0.5])).tolist()
        [0.0]
    """
    return _C.logit(input, eps, out=out)


def exp2(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """2 ** x.

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.exp2(fc.tensor([3.0])).tolist()
        [8.0]
    """
    return _C.exp2(input, out=out)


def expm1(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """exp(x) - 1, accurate for small x.

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.expm1(fc.tensor([0.0])).tolist()
        [0.0]
    """
    return _C.expm1(input, out=out)


def log1p(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """log(1 + x), accurate for small x.

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.log1p(fc.tensor([0.0])).tolist()
        [0.0]
    """
    return _C.log1p(input, out=out)


def sinc(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The normalized sinc function sin(pi x) / (pi x), 1 at 0.

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.sinc(fc.tensor([0.0])).tolist()
        [1.0]
    """
    return _C.sinc(input, out=out)


def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:  # noqa: A001
    """Rounds half to even, to ``decimals`` decimal places.

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.round(fc.tensor([0.5, 1.5, 2.25]), decimals=1).tolist()
        [0.5, 1.5, 2.200000047683716]
    """
    return _C.round(input, decimals=decimals, out=out)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """log(sum(exp(input), dim)) without overflow.

    Example:
        >>> import flambeau_core as fc
        >>> round(fc.special.logsumexp(fc.tensor([1000.0, 1000.0], dtype=fc.float64), 0).item(), 4)
        1000.6931
    """
    return _C.logsumexp(input, dim, keepdim, out=out)


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """softmax along dim (the input cast to dtype first, if given).

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.softmax(fc.tensor([0.0, 0.0]), 0).tolist()
        [0.5, 0.5]
    """
    return _C.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """log(softmax(input, dim)), computed stably (the input cast to dtype first, if given).

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.special.log_softmax(fc.tensor([0.0, 0.0]), 0).tolist()]
        [-0.6931, -0.6931]
    """
    return _C.log_softmax(input, dim, dtype)
