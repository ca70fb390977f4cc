"""``igamma`` / ``igammac`` (``special.gammainc`` / ``gammaincc``): the regularized incomplete gamma functions.

Note [Incomplete gamma by series and continued fraction]: P(a, x) = gamma(a, x) / Gamma(a) comes from its
power series, sum_n x^n / ((a + 1) ... (a + n)) times x^a e^-x / Gamma(a + 1), where x <= max(a, 1): the terms
shrink from the first; Q(a, x) = 1 - P comes from its continued fraction (Legendre's, evaluated by the
modified Lentz method) where x > max(a, 1), where it converges fast. Each side is computed over the whole
tensor in float64 (placeholder values stand in for the elements of the other side), a block of iterations at a
time, until every element's last update is below float64's resolution: the number of blocks grows like sqrt(a)
near x = a, not with the number of elements. PyTorch (Cephes) switches to Temme's uniform asymptotic expansion
there for a > 20, which is off by about 2e-9 relative (against mpmath); this agrees with mpmath to 1e-13 for a
< 200 and 2e-11 at a = 1e4 (the prefactor exp(a log x - x - lgamma(a)) loses about a * 1e-16 to rounding).
Where P is near 1 (a < 0.5, x <= 1.1), Q has a series of its own with log Gamma(1 + a) by its Taylor series at
small a, so Q keeps its digits for tiny a (PyTorch's loses some). Autograd differentiates the composition: in
x as PyTorch's formula, in a too (which PyTorch does not implement).
"""

from __future__ import annotations

from flambeau_core import _C, _shape
from flambeau_core._composing import check_tensor

_BLOCK = 16  # iterations between convergence checks (each check syncs: .item())
_MAX_ITERATIONS = 100_000  # ~ 300 sqrt(a) for a = 1e5: a safety bound, never reached for finite inputs
_EPS = 2.0**-53
_TINY = 1e-300


def _operands(name: str, input: _C.Tensor, other: _C.Tensor) -> tuple[_C.Tensor, _C.Tensor, _C.dtype]:  # noqa: A002
    check_tensor(name, input)
    check_tensor(name, other, "other")
    dtype = _C.result_type(input, other)
    if not dtype.is_floating_point:
        raise TypeError(f"[{name}] expected floating point inputs, got {input.dtype} and {other.dtype}")
    if input.device != other.device:
        raise _C.FlambeauError(f"[{name}] expected both inputs on one device, got {input.device} and {other.device}")
    try:
        a, x = _shape.broadcast_tensors(input.to(_C.float64), other.to(_C.float64))
    except RuntimeError:
        raise _C.FlambeauError(
            f"[{name}] shapes {tuple(input.shape)} and {tuple(other.shape)} cannot be broadcast together"
        ) from None
    return a, x, dtype


def _lower_series(a: _C.Tensor, x: _C.Tensor) -> _C.Tensor:
    """P(a, x) by its power series (every element: x <= max(a, 1), a > 0, x > 0)."""
    term = _C.ones_like(x)
    total = _C.ones_like(x)
    n = 0
    while n < _MAX_ITERATIONS:
        for _ in range(_BLOCK):
            n += 1
            term = term * x / (a + n)
            total = total + term
        if not bool((term > total * _EPS).any()):
            break
    log_prefactor = a * _C.log(x) - x - _C.lgamma(a + 1)
    return _C.exp(log_prefactor) * total


def _log_gamma_1p(a: _C.Tensor) -> _C.Tensor:
    """log Gamma(1 + a) to full relative precision for small a too (lgamma(1 + a) rounds 1 + a)."""
    from flambeau_core import special

    # Taylor series at 1: -euler * a + sum_k (-1)^k zeta(k) / k * a^k, for |a| < 0.01 exact in 10 terms.
    ks = _C.arange(2, 12, dtype=_C.float64, device=a.device)
    coefficients = special.zeta(ks, _C.ones_like(ks)) / ks * _C.where(ks % 2 == 0, 1.0, -1.0)
    small = a.abs() < 0.01
    s = _C.where(small, a, _C.zeros_like(a))
    series = _C.zeros_like(a)
    for k in range(11, 1, -1):  # Horner, from the highest power
        series = (series + coefficients[k - 2]) * s
    series = (series - 0.57721566490153286061) * s
    return _C.where(small, series, _C.lgamma(1 + a))


def _upper_small_x(a: _C.Tensor, x: _C.Tensor) -> _C.Tensor:
    """Q(a, x) for x <= 1.1 without forming 1 - P (which loses Q's digits when a is small and P near 1).

    P = x^a / Gamma(a + 1) * (1 + a * sum_{n>=1} (-x)^n / (n! (a + n))), so
    Q = -expm1(a log x - log Gamma(1 + a)) - x^a / Gamma(a + 1) * a * sum; 25 terms reach x^25 / 25! < 1e-25.
    """
    log_prefactor = a * _C.log(x) - _log_gamma_1p(a)
    term = _C.ones_like(x)
    total = _C.zeros_like(x)
    for n in range(1, 26):
        term = term * (-x) / n
        total = total + term / (a + n)
    return -_C.expm1(log_prefactor) - _C.exp(log_prefactor) * a * total


def _upper_fraction(a: _C.Tensor, x: _C.Tensor) -> _C.Tensor:
    """Q(a, x) by its continued fraction (every element: x > max(a, 1))."""
    b = x + 1 - a
    c = _C.full_like(x, 1 / _TINY)
    d = 1 / b
    h = d
    n = 0
    while n < _MAX_ITERATIONS:
        for _ in range(_BLOCK):
            n += 1
            an = -n * (n - a)
            b = b + 2
            d = an * d + b
            d = _C.where(d.abs() < _TINY, _C.full_like(d, _TINY), d)
            c = b + an / c
            c = _C.where(c.abs() < _TINY, _C.full_like(c, _TINY), c)
            d = 1 / d
            step = d * c
            h = h * step
        if not bool(((step - 1).abs() > 4 * _EPS).any()):
            break
    log_prefactor = a * _C.log(x) - x - _C.lgamma(a)
    return _C.exp(log_prefactor) * h


def _regularized(a: _C.Tensor, x: _C.Tensor, upper: bool) -> _C.Tensor:
    """P(a, x) (or Q with ``upper``) in float64, with PyTorch's values at the edges of the domain."""
    nan = float("nan")
    finite = (a > 0) & (x > 0) & _C.isfinite(a) & _C.isfinite(x)
    by_series = finite & ((x <= 1) | (x <= a))
    by_fraction = finite & ~by_series
    series = _C.zeros_like(x)  # P where by_series
    fraction = _C.zeros_like(x)  # Q where by_fraction
    if bool(by_series.any()):
        series = _lower_series(_C.where(by_series, a, _C.ones_like(a)), _C.where(by_series, x, _C.full_like(x, 0.5)))
    if bool(by_fraction.any()):
        fraction = _upper_fraction(
            _C.where(by_fraction, a, _C.ones_like(a)), _C.where(by_fraction, x, _C.full_like(x, 2.0))
        )
    # Each side's own function directly: 1 - (1 - Q) would lose Q's small values.
    result = _C.where(by_series, 1 - series, fraction) if upper else _C.where(by_series, series, 1 - fraction)
    near_one = by_series & (x <= 1.1) & (a < 0.5)  # P near 1: Q by its own series
    if upper and bool(near_one.any()):
        q = _upper_small_x(_C.where(near_one, a, _C.full_like(a, 0.25)), _C.where(near_one, x, _C.full_like(x, 0.5)))
        result = _C.where(near_one, q, result)
    # Edges (Cephes'): P = 1 where x = inf or (a = 0 < x); P = 0 where x = 0 < a or (a = inf, x finite);
    # NaN for negative or NaN arguments, a = x = 0 and a = x = inf.
    one_p = (_C.isinf(x) & (a < float("inf"))) | ((a == 0) & (x > 0))
    zero_p = ((x == 0) & (a > 0)) | (_C.isinf(a) & (x < float("inf")))
    undefined = (a < 0) | (x < 0) | _C.isnan(a) | _C.isnan(x) | ((a == 0) & (x == 0)) | (_C.isinf(a) & _C.isinf(x))
    at_one, at_zero = (0.0, 1.0) if upper else (1.0, 0.0)
    result = _C.where(one_p & ~undefined, _C.full_like(result, at_one), result)
    result = _C.where(zero_p & ~undefined, _C.full_like(result, at_zero), result)
    return _C.where(undefined, _C.full_like(result, nan), result)


def igamma(input: _C.Tensor, other: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """igamma(input, other, *, out=None) -> Tensor

    The regularized lower incomplete gamma function ``P(a, x) = 1 / Gamma(a) * integral_0^x t^(a-1) e^-t dt``
    with ``a = input`` and ``x = other`` (broadcast; floating point, the promoted dtype), also
    ``special.gammainc``. ``NaN`` where ``a`` or ``x`` is negative. Differentiable in both (PyTorch: in ``x`` only).

    Example:
        >>> import flambeau_core as fc
        >>> p = fc.igamma(fc.tensor([1.0, 2.0]), fc.tensor([1.0, 3.0], dtype=fc.float64))
        >>> [round(v, 12) for v in p.tolist()]
        [0.632120558829, 0.800851726529]
    """
    a, x, dtype = _operands("igamma", input, other)
    return _finish("igamma", _regularized(a, x, upper=False).to(dtype), out)


def igammac(input: _C.Tensor, other: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """igammac(input, other, *, out=None) -> Tensor

    The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)`` (see :func:`igamma`) with
    ``a = input`` and ``x = other``, also ``special.gammaincc``; computed directly where it is small, not as
    ``1 - P``. Differentiable in both (PyTorch: in ``x`` only).

    Example:
        >>> import flambeau_core as fc
        >>> q = fc.igammac(fc.tensor([1.0, 2.0]), fc.tensor([1.0, 30.0], dtype=fc.float64))
        >>> [f"{v:.6e}" for v in q.tolist()]  # Q(2, 30) = 31 e^-30, kept to all its digits
        ['3.678794e-01', '2.900863e-12']
    """
    a, x, dtype = _operands("igammac", input, other)
    return _finish("igammac", _regularized(a, x, upper=True).to(dtype), out)


def _finish(name: str, result: _C.Tensor, out: _C.Tensor | None) -> _C.Tensor:
    if out is None:
        return result
    check_tensor(name, out, "out")
    return _C._copy_to_out(name, result, out, True)


def _igamma_(self: _C.Tensor, other: _C.Tensor) -> _C.Tensor:
    return self.copy_(igamma(self, other))


def _igammac_(self: _C.Tensor, other: _C.Tensor) -> _C.Tensor:
    return self.copy_(igammac(self, other))


_igamma_.__doc__ = "igamma_(other) -> Tensor\n\nIn-place :func:`igamma`.\n\nExample:\n    >>> import flambeau_core as fc\n    >>> fc.tensor([1.0]).igamma_(fc.tensor([0.0])).tolist()\n    [0.0]\n"  # noqa: E501
_igammac_.__doc__ = "igammac_(other) -> Tensor\n\nIn-place :func:`igammac`.\n\nExample:\n    >>> import flambeau_core as fc\n    >>> fc.tensor([1.0]).igammac_(fc.tensor([0.0])).tolist()\n    [1.0]\n"  # noqa: E501


def install() -> None:
    import flambeau_core
    from flambeau_core import special

    special.gammainc, special.gammaincc = igamma, igammac  # torch.special's names
    special.__all__ += ["gammainc", "gammaincc"]

    flambeau_core.igamma = igamma
    flambeau_core.igammac = igammac
    _C.Tensor.igamma = igamma
    _C.Tensor.igammac = igammac
    _C.Tensor.igamma_ = _igamma_
    _C.Tensor.igammac_ = _igammac_
