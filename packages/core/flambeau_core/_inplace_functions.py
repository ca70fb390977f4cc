"""The in-place ops PyTorch also spells as functions: ``torch.sqrt_(x)`` is ``x.sqrt_()``, ``torch.clamp_(x,
min=0)`` is ``x.clamp_(min=0)``, and so on for every ``X_`` in the table below.

Each function is made from one table row (its name, torch's parameters after ``input`` for the docstring,
and the arguments of its example), so every one checks ``input`` and words its errors the same way. The
method is looked up on ``input`` at call time: a Tensor subclass's override is called, as PyTorch's
functions dispatch to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_tensor

# name -> (torch's parameters after input, an example call's arguments after x and what x then holds);
# x is tensor([0.25, 0.5]) unless the arguments say otherwise.
_UNARY = (
    "abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ atanh_ ceil_ "
    "conj_physical_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_ frac_ i0_ log10_ log1p_ log2_ "
    "log_ neg_ negative_ rad2deg_ reciprocal_ relu_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ "
    "trunc_"
).split()
_WITH_ARGUMENTS = {
    "addmv_": ("mat, vec, *, beta=1, alpha=1", "fc.ones(2, 3), fc.ones(3)", "[3.25, 3.5]"),
    "clamp_": ("min=None, max=None", "0.3, 0.4", "[0.30000001192092896, 0.4000000059604645]"),
    "clip_": ("min=None, max=None", "max=0.3", "[0.25, 0.30000001192092896]"),
    "clamp_max_": ("max", "0.3", "[0.25, 0.30000001192092896]"),
    "clamp_min_": ("min", "0.3", "[0.30000001192092896, 0.5]"),
    "fill_": ("value", "2", "[2.0, 2.0]"),
    "xlogy_": ("other", "1.0", "[0.0, 0.0]"),
    "ldexp_": ("other", "fc.tensor([2, 3])", "[1.0, 4.0]"),
    "logit_": ("eps=None", "", "[-1.0986123085021973, 0.0]"),
    "nan_to_num_": ("nan=0.0, posinf=None, neginf=None", "", "[0.25, 0.5]"),
    "round_": ("*, decimals=0", "decimals=1", "[0.20000000298023224, 0.5]"),
    "gcd_": ("other", "fc.tensor([4, 6])", "[2, 3]"),
    "lcm_": ("other", "fc.tensor([4, 6])", "[12, 18]"),
}
_INTEGER_EXAMPLE = {"gcd_", "lcm_"}


def _make(name: str, params: str, example: str) -> Callable:
    def inplace(input: _C.Tensor, *args: Any, **kwargs: Any) -> _C.Tensor:  # noqa: A002
        check_tensor(name, input)
        return call_as(name, getattr(input, name), *args, **kwargs)

    inplace.__name__ = inplace.__qualname__ = name
    signature = f"input, {params}" if params else "input"
    inplace.__doc__ = (
        f"{name}({signature}) -> Tensor\n\n"
        f"In-place version of :func:`{name[:-1]}`: ``input.{name}(...)``, which writes into ``input`` and "
        "returns it.\n\n"
        f"Example:\n    >>> import flambeau_core as fc\n{example}"
    )
    return inplace


def _example(name: str) -> str:
    if name in _UNARY:
        return f"    >>> x = fc.tensor([0.25, 0.5])\n    >>> fc.{name}(x) is x\n    True\n"
    _, args, holds = _WITH_ARGUMENTS[name]
    x = "fc.tensor([6, 9])" if name in _INTEGER_EXAMPLE else "fc.tensor([0.25, 0.5])"
    call = f"fc.{name}(x, {args})" if args else f"fc.{name}(x)"
    return f"    >>> x = {x}\n    >>> {call}.tolist()\n    {holds}\n"


FUNCTIONS = {name: _make(name, "", _example(name)) for name in _UNARY} | {
    name: _make(name, spec[0], _example(name)) for name, spec in _WITH_ARGUMENTS.items()
}


def install() -> None:
    import flambeau_core

    for name, fn in FUNCTIONS.items():
        setattr(flambeau_core, name, fn)
