"""PyTorch's in-place samplers of four more distributions (``Tensor.exponential_``, ``geometric_``,
``cauchy_``, ``log_normal_``), of whole numbers (``Tensor.random_``) and ``randint_like``.

Each sampler transforms the uniform or normal draws of flambeau's generator (``uniform_``/``normal_``,
so ``generator=`` and ``manual_seed`` work as for those): the inverse distribution function for the
exponential, geometric and Cauchy laws, ``exp`` of a normal draw for the log-normal one. The draws are
PyTorch's in distribution, not in value. Half-precision tensors are drawn in float32 and rounded once;
the geometric law is drawn in float64 for every dtype, so a tiny ``p`` keeps its long tail.
"""

from __future__ import annotations

import math
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_tensor
from flambeau_core._dtypes import finfo, iinfo
from flambeau_core.sparse import strided

_HALF = (_C.float16, _C.bfloat16)


def _check_floating(self: _C.Tensor, name: str, law: str) -> None:
    if not self.dtype.is_floating_point:
        raise TypeError(
            f"[{name}] the {law} distribution is continuous: expected a floating-point tensor, "
            f"got dtype {self.dtype.name}"
        )


def _check_positive(name: str, what: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"[{name}] expected a real number {what}, got {type(value).__name__}")
    if not value > 0:  # also refuses NaN
        raise _C.FlambeauError(f"[{name}] expects {what} > 0.0, but found {what}={value}")


def _uniform_scratch(self: _C.Tensor, dtype: Any, generator: Any) -> _C.Tensor:
    """Uniform draws on [0, 1) of self's shape: self itself when it has the dtype to draw in."""
    scratch = self if self.dtype == dtype else _C.empty(tuple(self.shape), dtype=dtype, device=self.device)
    return scratch.uniform_(0.0, 1.0, generator=generator)


def _write_back(self: _C.Tensor, values: _C.Tensor) -> _C.Tensor:
    return self if values is self else self.copy_(values)


def exponential_(self: _C.Tensor, lambd: float = 1.0, *, generator: Any = None) -> _C.Tensor:
    """exponential_(lambd=1, *, generator=None) -> Tensor

    Fills ``self`` with draws of the exponential distribution of rate ``lambd`` (mean ``1 / lambd``):
    ``-log(1 - u) / lambd`` for uniform ``u``. Returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.empty(1000).exponential_(2.0, generator=fc.Generator().manual_seed(0))
        >>> bool(x.min() >= 0), round(x.mean().item(), 1)
        (True, 0.5)
    """
    check_tensor("exponential_", self, "self")
    _check_floating(self, "exponential_", "exponential")
    _check_positive("exponential_", "lambda", lambd)
    u = _uniform_scratch(self, _C.float32 if self.dtype in _HALF else self.dtype, generator)
    # log1p(-u) <= 0 is finite for u in [0, 1); times -1/lambd keeps zeros positive (lambd = inf gives 0)
    return _write_back(self, u.neg_().log1p_().mul_(-1.0 / lambd))


def geometric_(self: _C.Tensor, p: float, *, generator: Any = None) -> _C.Tensor:
    """geometric_(p, *, generator=None) -> Tensor

    Fills ``self`` with draws of the geometric distribution: the number of Bernoulli(``p``) trials up to
    and including the first success, ``P(k) = (1 - p)**(k - 1) * p`` for ``k = 1, 2, ...``, ``p`` in
    (0, 1). Integer tensors too. Returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.empty(1000, dtype=fc.int64).geometric_(0.5, generator=fc.Generator().manual_seed(0))
        >>> x.min().item(), round(x.float().mean().item())
        (1, 2)
    """
    check_tensor("geometric_", self, "self")
    if self.dtype == _C.bool or self.dtype.is_complex:
        raise TypeError(f"[geometric_] expected a real floating-point or integer tensor, got dtype {self.dtype.name}")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"[geometric_] expected a real number p, got {type(p).__name__}")
    if not 0 < p < 1:
        raise _C.FlambeauError(f"[geometric_] expects p to be in (0, 1), but got p={p}")
    u = _uniform_scratch(self, _C.float64, generator)
    # 1 - u is in (0, 1]: log(1 - u) / log(1 - p) >= 0; its ceiling is the trial count (at least 1)
    trials = u.neg_().log1p_().div_(math.log1p(-p)).ceil_().clamp_min_(1.0)
    return _write_back(self, trials)


def cauchy_(self: _C.Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> _C.Tensor:
    """cauchy_(median=0, sigma=1, *, generator=None) -> Tensor

    Fills ``self`` with draws of the Cauchy distribution ``median + sigma * tan(pi * (u - 1/2))``
    (no mean; half of the draws lie within ``sigma`` of ``median``). Returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.empty(1000, dtype=fc.float64).cauchy_(5.0, generator=fc.Generator().manual_seed(0))
        >>> round(x.median().item())
        5
    """
    check_tensor("cauchy_", self, "self")
    _check_floating(self, "cauchy_", "Cauchy")
    _check_positive("cauchy_", "sigma", sigma)
    if isinstance(median, bool) or not isinstance(median, (int, float)):
        raise TypeError(f"[cauchy_] expected a real number median, got {type(median).__name__}")
    u = _uniform_scratch(self, _C.float32 if self.dtype in _HALF else self.dtype, generator)
    return _write_back(self, u.sub_(0.5).mul_(math.pi).tan_().mul_(sigma).add_(median))


def log_normal_(self: _C.Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> _C.Tensor:
    """log_normal_(mean=1, std=2, *, generator=None) -> Tensor

    Fills ``self`` with draws whose logarithm is normal with ``mean`` and ``std`` (the parameters of the
    underlying normal, not of the draws themselves). Returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.empty(1000, dtype=fc.float64).log_normal_(0.0, 0.5, generator=fc.Generator().manual_seed(0))
        >>> bool(x.min() > 0), round(x.log().mean().item(), 1)
        (True, 0.0)
    """
    check_tensor("log_normal_", self, "self")
    _check_floating(self, "log_normal_", "log-normal")
    _check_positive("log_normal_", "std", std)
    if isinstance(mean, bool) or not isinstance(mean, (int, float)):
        raise TypeError(f"[log_normal_] expected a real number mean, got {type(mean).__name__}")
    dtype = _C.float32 if self.dtype in _HALF else self.dtype
    scratch = self if self.dtype == dtype else _C.empty(tuple(self.shape), dtype=dtype, device=self.device)
    return _write_back(self, scratch.normal_(float(mean), float(std), generator=generator).exp_())


# random_'s default upper bound of a floating-point dtype: 2**digits, the largest power of two below which
# every integer is representable (PyTorch's choice).
_FLOAT_DIGITS = {_C.float16: 11, _C.bfloat16: 8, _C.float32: 24, _C.float64: 53}
_INT64_MAX = 2**63 - 1


def _random_bounds(self: _C.Tensor, args: tuple, kwargs: dict) -> tuple[int, int]:
    """random_'s ``[from, to - 1]`` as inclusive ints: ``random_()``, ``random_(to)``, ``random_(from, to)``
    with ``to=None`` meaning the dtype's largest value."""
    unknown = set(kwargs) - {"from", "to"}
    if unknown or len(args) > 2 or ("from" in kwargs and len(args) >= 1) or ("to" in kwargs and len(args) == 2):
        raise TypeError(
            "[random_] expected random_(*, generator=None), random_(to, *, generator=None) or "
            f"random_(from, to, *, generator=None), got {len(args)} positional and keywords {sorted(kwargs)}"
        )
    if "from" in kwargs and "to" not in kwargs:
        raise TypeError("[random_] expected 'to' with 'from': random_(from, to) (to=None for the dtype's maximum)")
    if len(args) == 1 and "to" not in kwargs:
        low, high = 0, args[0]
    else:
        given = dict(zip(("from", "to"), args, strict=False)) | kwargs
        low, high = given.get("from", 0), given.get("to")
    for what, value in (("from", low), ("to", high)):
        if not (value is None and what == "to") and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"[random_] expected an int '{what}', got {type(value).__name__}")
    dtype = self.dtype
    if dtype.is_complex:
        raise TypeError(f"[random_] expected a real floating-point, integer or bool tensor, got dtype {dtype.name}")
    if dtype == _C.bool:
        top = 1
    elif dtype.is_floating_point:
        top = 2 ** _FLOAT_DIGITS[dtype]
    else:
        top = min(iinfo(dtype).max, _INT64_MAX)
    if high is None:  # random_() or random_(from, None)
        if low > top:
            raise _C.FlambeauError(
                f"[random_] expects 'from' to be less than 'to', but got from={low} >= to={top + 1} "
                f"(the {dtype.name} maximum)"
            )
        return low, top
    if low >= high:
        raise _C.FlambeauError(f"[random_] expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype == _C.bool:
        lowest, highest = 0, 1
    elif dtype.is_floating_point:
        lowest, highest = -finfo(dtype).max, finfo(dtype).max
    else:
        lowest, highest = iinfo(dtype).min, iinfo(dtype).max
    if not lowest <= low <= highest:
        raise _C.FlambeauError(f"[random_] from is out of bounds for {dtype.name}: {low} not in [{lowest}, {highest}]")
    if not lowest <= high - 1 <= highest:
        raise _C.FlambeauError(
            f"[random_] to - 1 is out of bounds for {dtype.name}: {high - 1} not in [{lowest}, {highest}]"
        )
    return low, high - 1


def random_(self: _C.Tensor, *args: Any, generator: Any = None, **kwargs: Any) -> _C.Tensor:
    """random_(from=0, to=None, *, generator=None) -> Tensor

    Fills ``self`` with whole numbers drawn uniformly from ``[from, to - 1]``. ``random_(to)`` draws from
    ``[0, to - 1]``; without ``to`` the range ends at the dtype's largest value: ``2**mantissa_digits`` for
    a floating-point dtype (``2**24`` for float32, ``2**53`` for float64), so that every value drawn is
    exact, the integer dtype's maximum otherwise (1 for bool). ``from`` is a keyword too
    (``random_(**{"from": 2, "to": 5})``). Returns ``self``.

    The draws are PyTorch's in distribution, not in value. One corner differs: the whole int64 range
    (``from=-2**63`` with no ``to``) never draws ``2**63 - 1``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.empty(1000).random_(3, 7, generator=fc.Generator().manual_seed(0))
        >>> sorted(set(x.tolist()))
        [3.0, 4.0, 5.0, 6.0]
        >>> bool(fc.empty(1000, dtype=fc.uint8).random_().max() > 200)
        True
    """
    check_tensor("random_", self, "self")
    low, high = _random_bounds(self, args, kwargs)
    shape = tuple(self.shape)
    if high < _INT64_MAX:
        drawn = _C.randint(low, high + 1, shape, generator=generator, device=self.device)
    elif low > -(2**63):  # [low, 2**63 - 1]: shifted down by one to keep the exclusive bound in int64
        drawn = _C.randint(low - 1, high, shape, generator=generator, device=self.device).add_(1)
    else:
        drawn = _C.randint(low, high, shape, generator=generator, device=self.device)
    return self.copy_(drawn)


def randint_like(
    input: _C.Tensor,  # noqa: A002
    *bounds: Any,
    low: Any = None,
    high: Any = None,
    generator: Any = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> _C.Tensor:
    """randint_like(input, low=0, high, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor

    Integers drawn uniformly from ``[low, high)``, in a tensor of input's shape, dtype and device (unless
    ``dtype``/``device`` say otherwise). Called as ``randint_like(input, high)`` or
    ``randint_like(input, low, high)``; a bound may be a 0-dim tensor.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.randint_like(fc.zeros(2, 3), 3, 7)
        >>> x.shape, x.dtype, bool(((x >= 3) & (x < 7)).all())
        (flambeau.Size([2, 3]), flambeau.float32, True)
    """
    check_tensor("randint_like", input)
    if len(bounds) > 2 or (len(bounds) == 2 and (low is not None or high is not None)):
        raise TypeError("[randint_like] expected randint_like(input, high) or randint_like(input, low, high)")
    if len(bounds) == 2:
        low, high = bounds
    elif len(bounds) == 1:
        if high is not None:
            low = bounds[0]
        else:
            high = bounds[0]
    if high is None:
        raise TypeError("[randint_like] missing the upper bound 'high'")
    low = 0 if low is None else low
    bounds_int = []
    for what, value in (("low", low), ("high", high)):
        if isinstance(value, _C.Tensor):
            if value.dim() != 0 or value.dtype.is_floating_point or value.dtype.is_complex:
                raise TypeError(f"[randint_like] expected '{what}' as an int or a 0-dim integer tensor, got {value}")
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"[randint_like] expected '{what}' as an int, got {type(value).__name__}")
        bounds_int.append(value)
    if layout is not None and layout is not strided:
        raise _C.FlambeauError(f"[randint_like] is implemented for strided tensors only, got: {layout}")
    dtype = input.dtype if dtype is None else dtype
    device = input.device if device is None else device
    shape = tuple(input.shape)
    drawn = call_as("randint_like", _C.randint, *bounds_int, shape, generator=generator, dtype=dtype, device=device)
    preserve = memory_format is None or memory_format == _C.preserve_format
    if preserve and not input.is_contiguous():  # input's strides, as PyTorch's preserve_format
        drawn = _C.empty_like(input, dtype=dtype, device=device).copy_(drawn)
    elif memory_format is not None and memory_format != _C.preserve_format:
        drawn = drawn.contiguous(memory_format=memory_format)
    return drawn.requires_grad_() if requires_grad else drawn


def install() -> None:
    import flambeau_core

    flambeau_core.randint_like = randint_like
    for fn in (exponential_, geometric_, cauchy_, log_normal_, random_):
        setattr(_C.Tensor, fn.__name__, fn)
