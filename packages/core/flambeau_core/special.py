"""flambeau.special: PyTorch's torch.special, with its names, signatures and semantics.

The functions are core ops of the shared elementwise list (``flambeau/elementwise_math.h``: lgamma,
digamma, i0, i0e, i1, i1e, erfcx, ndtr, ndtri, log_ndtr, entr, xlogy, xlog1py, zeta, and the Bessel
and Airy functions and orthogonal polynomials of ``flambeau/special_functions.h``), composites
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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flambeau_core import _C
from flambeau_core._C import Tensor
from flambeau_core.overrides import is_tensor_like

# ---- the wrappers of one core op each: made from one table (name -> op, docstring) ----

_NOT_DIFFERENTIABLE = "Not differentiable, as PyTorch's."
_DEGREE = (
    "Either argument may be a number; they broadcast and promote (integers give float32). The degree n\n"
    "is truncated to an integer; a negative one gives 0."
)
_POLYNOMIAL = f"{_DEGREE} {_NOT_DIFFERENTIABLE}"
_HERMITE = f"{_DEGREE} NaN above degree 128 in float32, 512 in float64, as\nPyTorch. {_NOT_DIFFERENTIABLE}"


def _unary(op: Any) -> Callable:
    def wrapper(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        return op(input, out=out)

    return wrapper


def _binary(op: Any) -> Callable:
    def wrapper(input: Tensor | float, other: Tensor | float, *, out: Tensor | None = None) -> Tensor:
        return op(input, other, out=out)

    return wrapper


def _polynomial(op: Any) -> Callable:
    def wrapper(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
        # PyTorch's overloads take a number for x or for n, not for both
        if not is_tensor_like(x) and not is_tensor_like(n):
            raise TypeError(
                f"[special.{wrapper.__name__}] expected a Tensor for x or n, got {type(x).__name__} and "
                f"{type(n).__name__}"
            )
        return op(x, n, out=out)

    return wrapper


@dataclass(frozen=True)
class _Wrapper:
    name: str
    op: str  # the core op it calls (flambeau_core._C.<op>)
    summary: str  # the docstring's first line
    example: str  # the example's lines after ``import flambeau_core as fc``
    note: str = ""  # a paragraph between the summary and the example
    shape: Callable = _unary  # the parameters: (input), _binary's (input, other) or _polynomial's (x, n)


_TABLE = (
    _Wrapper(
        "gammaln",
        "lgamma",
        "Natural logarithm of the absolute value of the gamma function (torch.special.gammaln, ``lgamma``).",
        ">>> fc.special.gammaln(fc.tensor([1.0, 2.0])).tolist()\n[0.0, 0.0]",
    ),
    _Wrapper(
        "digamma",
        "digamma",
        "The logarithmic derivative of the gamma function, psi(x) = Gamma'(x) / Gamma(x).",
        ">>> round(fc.special.digamma(fc.tensor([1.0], dtype=fc.float64)).item(), 10)\n-0.5772156649",
        note="-inf at +0, +inf at -0 and NaN at the negative integers, as PyTorch.",
    ),
    _Wrapper(
        "i0",
        "i0",
        "The modified Bessel function of the first kind of order 0.",
        ">>> round(fc.special.i0(fc.tensor([1.0], dtype=fc.float64)).item(), 10)\n1.2660658778",
    ),
    _Wrapper(
        "i0e",
        "special_i0e",
        "The exponentially scaled modified Bessel function of order 0, exp(-|x|) i0(x).",
        ">>> round(fc.special.i0e(fc.tensor([1000.0], dtype=fc.float64)).item(), 8)\n0.01261724",
    ),
    _Wrapper(
        "i1",
        "special_i1",
        "The modified Bessel function of the first kind of order 1.",
        ">>> round(fc.special.i1(fc.tensor([1.0], dtype=fc.float64)).item(), 10)\n0.565159104",
    ),
    _Wrapper(
        "i1e",
        "special_i1e",
        "The exponentially scaled modified Bessel function of order 1, exp(-|x|) i1(x).",
        ">>> round(fc.special.i1e(fc.tensor([-1.0], dtype=fc.float64)).item(), 10)\n-0.2079104153",
    ),
    _Wrapper(
        "bessel_j0",
        "special_bessel_j0",
        "The Bessel function of the first kind of order 0.",
        (
            ">>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.bessel_j0(x).tolist()]\n"
            "[0.765198, 0.223891]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "bessel_j1",
        "special_bessel_j1",
        "The Bessel function of the first kind of order 1.",
        (
            ">>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.bessel_j1(x).tolist()]\n"
            "[0.440051, 0.576725]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "bessel_y0",
        "special_bessel_y0",
        "The Bessel function of the second kind of order 0 (-inf at 0, NaN for negative input).",
        (
            ">>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.bessel_y0(x).tolist()]\n"
            "[0.088257, 0.510376]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "bessel_y1",
        "special_bessel_y1",
        "The Bessel function of the second kind of order 1 (-inf at 0, NaN for negative input).",
        (
            ">>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.bessel_y1(x).tolist()]\n"
            "[-0.781213, -0.107032]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "modified_bessel_k0",
        "special_modified_bessel_k0",
        "The modified Bessel function of the second kind of order 0 (inf at 0, NaN for negative input).",
        (
            ">>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.modified_bessel_k0(x).tolist()]\n"
            "[0.421024, 0.113894]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "modified_bessel_k1",
        "special_modified_bessel_k1",
        "The modified Bessel function of the second kind of order 1 (inf at 0, NaN for negative input).",
        (
            ">>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.modified_bessel_k1(x).tolist()]\n"
            "[0.601907, 0.139866]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "scaled_modified_bessel_k0",
        "special_scaled_modified_bessel_k0",
        "exp(x) K0(x), the exponentially scaled modified Bessel function of the second kind of order 0.",
        (
            ">>> x = fc.tensor([1.0, 700.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.scaled_modified_bessel_k0(x).tolist()]\n"
            "[1.144463, 0.047362]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "scaled_modified_bessel_k1",
        "special_scaled_modified_bessel_k1",
        "exp(x) K1(x), the exponentially scaled modified Bessel function of the second kind of order 1.",
        (
            ">>> x = fc.tensor([1.0, 700.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.scaled_modified_bessel_k1(x).tolist()]\n"
            "[1.636153, 0.047396]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "spherical_bessel_j0",
        "special_spherical_bessel_j0",
        "The spherical Bessel function of the first kind of order 0, sin(x) / x (1 at 0).",
        (
            ">>> x = fc.tensor([0.0, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.spherical_bessel_j0(x).tolist()]\n"
            "[1.0, 0.454649]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "airy_ai",
        "special_airy_ai",
        "The Airy function Ai.",
        (
            ">>> x = fc.tensor([-2.0, 1.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.airy_ai(x).tolist()]\n"
            "[0.227407, 0.135292]"
        ),
        note=_NOT_DIFFERENTIABLE,
    ),
    _Wrapper(
        "chebyshev_polynomial_t",
        "special_chebyshev_polynomial_t",
        "The Chebyshev polynomial of the first kind T_n(x).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.chebyshev_polynomial_t(x, 3).tolist()]\n"
            "[-0.6875, 26.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "chebyshev_polynomial_u",
        "special_chebyshev_polynomial_u",
        "The Chebyshev polynomial of the second kind U_n(x).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.chebyshev_polynomial_u(x, 3).tolist()]\n"
            "[-0.875, 56.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "chebyshev_polynomial_v",
        "special_chebyshev_polynomial_v",
        "The Chebyshev polynomial of the third kind V_n(x).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.chebyshev_polynomial_v(x, 3).tolist()]\n"
            "[-0.125, 41.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "chebyshev_polynomial_w",
        "special_chebyshev_polynomial_w",
        "The Chebyshev polynomial of the fourth kind W_n(x).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.chebyshev_polynomial_w(x, 3).tolist()]\n"
            "[-1.625, 71.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "shifted_chebyshev_polynomial_t",
        "special_shifted_chebyshev_polynomial_t",
        "The shifted Chebyshev polynomial of the first kind T*_n(x) = T_n(2x - 1).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.shifted_chebyshev_polynomial_t(x, 3).tolist()]\n"
            "[1.0, 99.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "shifted_chebyshev_polynomial_u",
        "special_shifted_chebyshev_polynomial_u",
        "The shifted Chebyshev polynomial of the second kind U*_n(x) = U_n(2x - 1).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.shifted_chebyshev_polynomial_u(x, 3).tolist()]\n"
            "[1.0, 204.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "shifted_chebyshev_polynomial_v",
        "special_shifted_chebyshev_polynomial_v",
        "The shifted Chebyshev polynomial of the third kind V*_n(x) = V_n(2x - 1).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.shifted_chebyshev_polynomial_v(x, 3).tolist()]\n"
            "[1.0, 169.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "shifted_chebyshev_polynomial_w",
        "special_shifted_chebyshev_polynomial_w",
        "The shifted Chebyshev polynomial of the fourth kind W*_n(x) = W_n(2x - 1).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.shifted_chebyshev_polynomial_w(x, 3).tolist()]\n"
            "[1.0, 239.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "hermite_polynomial_h",
        "special_hermite_polynomial_h",
        "The physicists' Hermite polynomial H_n(x).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.hermite_polynomial_h(x, 3).tolist()]\n"
            "[-2.875, 40.0]"
        ),
        note=_HERMITE,
        shape=_polynomial,
    ),
    _Wrapper(
        "hermite_polynomial_he",
        "special_hermite_polynomial_he",
        "The probabilists' Hermite polynomial He_n(x).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.hermite_polynomial_he(x, 3).tolist()]\n"
            "[-0.734375, 2.0]"
        ),
        note=_HERMITE,
        shape=_polynomial,
    ),
    _Wrapper(
        "laguerre_polynomial_l",
        "special_laguerre_polynomial_l",
        "The Laguerre polynomial L_n(x).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.laguerre_polynomial_l(x, 3).tolist()]\n"
            "[0.341146, -0.333333]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper(
        "legendre_polynomial_p",
        "special_legendre_polynomial_p",
        "The Legendre polynomial P_n(x).",
        (
            ">>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)\n"
            ">>> [round(v, 6) for v in fc.special.legendre_polynomial_p(x, 3).tolist()]\n"
            "[-0.335938, 17.0]"
        ),
        note=_POLYNOMIAL,
        shape=_polynomial,
    ),
    _Wrapper("erf", "erf", "The error function.", ">>> fc.special.erf(fc.tensor([0.0])).tolist()\n[0.0]"),
    _Wrapper(
        "erfc",
        "erfc",
        "The complementary error function 1 - erf(x).",
        ">>> fc.special.erfc(fc.tensor([0.0])).tolist()\n[1.0]",
    ),
    _Wrapper(
        "erfcx",
        "special_erfcx",
        "The scaled complementary error function exp(x^2) erfc(x), finite for large x.",
        ">>> round(fc.special.erfcx(fc.tensor([100.0], dtype=fc.float64)).item(), 10)\n0.0056416138",
    ),
    _Wrapper(
        "erfinv",
        "erfinv",
        "The inverse error function on (-1, 1).",
        ">>> fc.special.erfinv(fc.tensor([0.0])).tolist()\n[0.0]",
    ),
    _Wrapper(
        "ndtr",
        "special_ndtr",
        "The standard normal cumulative distribution function.",
        ">>> fc.special.ndtr(fc.tensor([0.0])).tolist()\n[0.5]",
    ),
    _Wrapper(
        "ndtri",
        "special_ndtri",
        "The standard normal quantile function, the inverse of ndtr (-inf at 0, inf at 1).",
        ">>> round(fc.special.ndtri(fc.tensor([0.975], dtype=fc.float64)).item(), 6)\n1.959964",
    ),
    _Wrapper(
        "log_ndtr",
        "special_log_ndtr",
        "log(ndtr(x)), accurate far into the left tail.",
        ">>> round(fc.special.log_ndtr(fc.tensor([-40.0], dtype=fc.float64)).item(), 4)\n-804.6084",
    ),
    _Wrapper(
        "entr",
        "special_entr",
        "The elementwise entropy -x log(x): 0 at 0, -inf for x < 0.",
        ">>> fc.special.entr(fc.tensor([0.0, 1.0, -1.0])).tolist()\n[0.0, -0.0, -inf]",
    ),
    _Wrapper(
        "xlogy",
        "xlogy",
        "input * log(other), 0 where input is 0 (unless other is NaN).",
        ">>> fc.special.xlogy(fc.tensor([0.0, 1.0]), fc.tensor([0.0, 1.0])).tolist()\n[0.0, 0.0]",
        shape=_binary,
    ),
    _Wrapper(
        "xlog1py",
        "special_xlog1py",
        "input * log1p(other), 0 where input is 0 (unless other is NaN).",
        ">>> fc.special.xlog1py(fc.tensor([0.0, 2.0]), fc.tensor([-1.0, 0.0])).tolist()\n[0.0, 0.0]",
        shape=_binary,
    ),
    _Wrapper(
        "zeta",
        "special_zeta",
        "The Hurwitz zeta function, sum over k >= 0 of (other + k) ** -input.",
        ">>> round(fc.special.zeta(fc.tensor([2.0], dtype=fc.float64), 1.0).item(), 10)\n1.6449340668",
        shape=_binary,
    ),
    _Wrapper(
        "expit",
        "sigmoid",
        "The logistic sigmoid 1 / (1 + exp(-x)).",
        ">>> fc.special.expit(fc.tensor([0.0])).tolist()\n[0.5]",
    ),
    _Wrapper("exp2", "exp2", "2 ** x.", ">>> fc.special.exp2(fc.tensor([3.0])).tolist()\n[8.0]"),
    _Wrapper(
        "expm1", "expm1", "exp(x) - 1, accurate for small x.", ">>> fc.special.expm1(fc.tensor([0.0])).tolist()\n[0.0]"
    ),
    _Wrapper(
        "log1p", "log1p", "log(1 + x), accurate for small x.", ">>> fc.special.log1p(fc.tensor([0.0])).tolist()\n[0.0]"
    ),
    _Wrapper(
        "sinc",
        "sinc",
        "The normalized sinc function sin(pi x) / (pi x), 1 at 0.",
        ">>> fc.special.sinc(fc.tensor([0.0])).tolist()\n[1.0]",
    ),
)


def _make(spec: _Wrapper) -> Callable:
    """The function of one table row: the core op under the row's name, with its docstring."""
    fn = spec.shape(getattr(_C, spec.op))
    fn.__name__ = fn.__qualname__ = spec.name
    example = "\n".join(
        ["Example:", "    >>> import flambeau_core as fc", *("    " + e for e in spec.example.split("\n"))]
    )
    lines = "\n\n".join(p for p in (spec.summary, spec.note, example) if p).split("\n")
    # indented as a docstring written under a def is (help() and the reference show both alike)
    fn.__doc__ = "\n".join([lines[0], *(f"    {line}" if line else "" for line in lines[1:]), "    "])
    return fn


_BY_NAME = {spec.name: _make(spec) for spec in _TABLE}
globals().update(_BY_NAME)
psi = _BY_NAME["digamma"]
modified_bessel_i0 = _BY_NAME["i0"]
modified_bessel_i1 = _BY_NAME["i1"]


# ---- the wrappers of another shape ----


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


def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """log(p / (1 - p)); with eps, p is first clamped to [eps, 1 - eps].

    Example:
        >>> import flambeau_core as fc
        >>> fc.special.logit(fc.tensor([0.5])).tolist()
        [0.0]
    """
    return _C.logit(input, eps, out=out)


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


__all__ = sorted(
    [
        *_BY_NAME,
        "psi",
        "modified_bessel_i0",
        "modified_bessel_i1",
        "polygamma",
        "multigammaln",
        "logit",
        "round",
        "logsumexp",
        "softmax",
        "log_softmax",
    ]
)
