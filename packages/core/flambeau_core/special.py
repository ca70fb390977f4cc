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

from typing import Any

from flambeau_core import _C
from flambeau_core._C import Tensor

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
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
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]


def _polynomial(op: Any, name: str, x: Tensor | float, n: Tensor | float, out: Tensor | None) -> Tensor:
    # PyTorch's overloads take a number for x or for n, not for both
    if not isinstance(x, Tensor) and not isinstance(n, Tensor):
        raise TypeError(f"[special.{name}] expected a Tensor for x or n, got {type(x).__name__} and {type(n).__name__}")
    return op(x, n, out=out)


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


def bessel_j0(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The Bessel function of the first kind of order 0.

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.bessel_j0(x).tolist()]
        [0.765198, 0.223891]
    """
    return _C.special_bessel_j0(input, out=out)


def bessel_j1(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The Bessel function of the first kind of order 1.

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.bessel_j1(x).tolist()]
        [0.440051, 0.576725]
    """
    return _C.special_bessel_j1(input, out=out)


def bessel_y0(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The Bessel function of the second kind of order 0 (-inf at 0, NaN for negative input).

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.bessel_y0(x).tolist()]
        [0.088257, 0.510376]
    """
    return _C.special_bessel_y0(input, out=out)


def bessel_y1(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The Bessel function of the second kind of order 1 (-inf at 0, NaN for negative input).

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.bessel_y1(x).tolist()]
        [-0.781213, -0.107032]
    """
    return _C.special_bessel_y1(input, out=out)


def modified_bessel_k0(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The modified Bessel function of the second kind of order 0 (inf at 0, NaN for negative input).

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.modified_bessel_k0(x).tolist()]
        [0.421024, 0.113894]
    """
    return _C.special_modified_bessel_k0(input, out=out)


def modified_bessel_k1(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The modified Bessel function of the second kind of order 1 (inf at 0, NaN for negative input).

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.modified_bessel_k1(x).tolist()]
        [0.601907, 0.139866]
    """
    return _C.special_modified_bessel_k1(input, out=out)


def scaled_modified_bessel_k0(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """exp(x) K0(x), the exponentially scaled modified Bessel function of the second kind of order 0.

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 700.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.scaled_modified_bessel_k0(x).tolist()]
        [1.144463, 0.047362]
    """
    return _C.special_scaled_modified_bessel_k0(input, out=out)


def scaled_modified_bessel_k1(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """exp(x) K1(x), the exponentially scaled modified Bessel function of the second kind of order 1.

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 700.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.scaled_modified_bessel_k1(x).tolist()]
        [1.636153, 0.047396]
    """
    return _C.special_scaled_modified_bessel_k1(input, out=out)


def spherical_bessel_j0(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, sin(x) / x (1 at 0).

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.0, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.spherical_bessel_j0(x).tolist()]
        [1.0, 0.454649]
    """
    return _C.special_spherical_bessel_j0(input, out=out)


def airy_ai(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The Airy function Ai.

    Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([-2.0, 1.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.airy_ai(x).tolist()]
        [0.227407, 0.135292]
    """
    return _C.special_airy_ai(input, out=out)


def chebyshev_polynomial_t(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The Chebyshev polynomial of the first kind T_n(x).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.chebyshev_polynomial_t(x, 3).tolist()]
        [-0.6875, 26.0]
    """
    return _polynomial(_C.special_chebyshev_polynomial_t, "chebyshev_polynomial_t", x, n, out)


def chebyshev_polynomial_u(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The Chebyshev polynomial of the second kind U_n(x).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.chebyshev_polynomial_u(x, 3).tolist()]
        [-0.875, 56.0]
    """
    return _polynomial(_C.special_chebyshev_polynomial_u, "chebyshev_polynomial_u", x, n, out)


def chebyshev_polynomial_v(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The Chebyshev polynomial of the third kind V_n(x).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.chebyshev_polynomial_v(x, 3).tolist()]
        [-0.125, 41.0]
    """
    return _polynomial(_C.special_chebyshev_polynomial_v, "chebyshev_polynomial_v", x, n, out)


def chebyshev_polynomial_w(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The Chebyshev polynomial of the fourth kind W_n(x).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.chebyshev_polynomial_w(x, 3).tolist()]
        [-1.625, 71.0]
    """
    return _polynomial(_C.special_chebyshev_polynomial_w, "chebyshev_polynomial_w", x, n, out)


def shifted_chebyshev_polynomial_t(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The shifted Chebyshev polynomial of the first kind T*_n(x) = T_n(2x - 1).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.shifted_chebyshev_polynomial_t(x, 3).tolist()]
        [1.0, 99.0]
    """
    return _polynomial(_C.special_shifted_chebyshev_polynomial_t, "shifted_chebyshev_polynomial_t", x, n, out)


def shifted_chebyshev_polynomial_u(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The shifted Chebyshev polynomial of the second kind U*_n(x) = U_n(2x - 1).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.shifted_chebyshev_polynomial_u(x, 3).tolist()]
        [1.0, 204.0]
    """
    return _polynomial(_C.special_shifted_chebyshev_polynomial_u, "shifted_chebyshev_polynomial_u", x, n, out)


def shifted_chebyshev_polynomial_v(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The shifted Chebyshev polynomial of the third kind V*_n(x) = V_n(2x - 1).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.shifted_chebyshev_polynomial_v(x, 3).tolist()]
        [1.0, 169.0]
    """
    return _polynomial(_C.special_shifted_chebyshev_polynomial_v, "shifted_chebyshev_polynomial_v", x, n, out)


def shifted_chebyshev_polynomial_w(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The shifted Chebyshev polynomial of the fourth kind W*_n(x) = W_n(2x - 1).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.shifted_chebyshev_polynomial_w(x, 3).tolist()]
        [1.0, 239.0]
    """
    return _polynomial(_C.special_shifted_chebyshev_polynomial_w, "shifted_chebyshev_polynomial_w", x, n, out)


def hermite_polynomial_h(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The physicists' Hermite polynomial H_n(x).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. NaN above degree 128 in float32, 512 in float64, as
    PyTorch. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.hermite_polynomial_h(x, 3).tolist()]
        [-2.875, 40.0]
    """
    return _polynomial(_C.special_hermite_polynomial_h, "hermite_polynomial_h", x, n, out)


def hermite_polynomial_he(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The probabilists' Hermite polynomial He_n(x).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. NaN above degree 128 in float32, 512 in float64, as
    PyTorch. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.hermite_polynomial_he(x, 3).tolist()]
        [-0.734375, 2.0]
    """
    return _polynomial(_C.special_hermite_polynomial_he, "hermite_polynomial_he", x, n, out)


def laguerre_polynomial_l(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The Laguerre polynomial L_n(x).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.laguerre_polynomial_l(x, 3).tolist()]
        [0.341146, -0.333333]
    """
    return _polynomial(_C.special_laguerre_polynomial_l, "laguerre_polynomial_l", x, n, out)


def legendre_polynomial_p(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """The Legendre polynomial P_n(x).

    Either argument may be a number; they broadcast and promote (integers give float32). The degree n
    is truncated to an integer; a negative one gives 0. Not differentiable, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.25, 2.0], dtype=fc.float64)
        >>> [round(v, 6) for v in fc.special.legendre_polynomial_p(x, 3).tolist()]
        [-0.335938, 17.0]
    """
    return _polynomial(_C.special_legendre_polynomial_p, "legendre_polynomial_p", x, n, out)


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
