"""Parameter initialisation (``flambeau_nn.init``), PyTorch's formulas and names.

Every function fills its tensor in place under ``no_grad`` and returns it.
Random values come from core's generator (``flambeau_core.manual_seed``).

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_nn import init
    >>> init.constant_(fc.empty(2), 3.0).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import math

import flambeau_autograd as fa
from flambeau_core import FlambeauError, Tensor

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "zeros_",
    "ones_",
    "constant_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "xavier_uniform_",
    "xavier_normal_",
]


def _check(tensor: object, op: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"[{op}] expected a Tensor, got {type(tensor).__name__}")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise FlambeauError(f"[calculate_gain] negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise FlambeauError(f"[calculate_gain] Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor, op: str) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise FlambeauError(
            f"[{op}] Fan in and fan out can not be computed for tensor with fewer than 2 dimensions, "
            f"got shape {tuple(tensor.shape)}"
        )
    receptive = 1
    for s in tuple(tensor.shape)[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str, op: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise FlambeauError(f"[{op}] Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, op)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fills with values drawn uniformly from ``[a, b)``."""
    _check(tensor, "uniform_")
    if a > b:
        raise FlambeauError(f"[uniform_] expects a <= b, got a={a}, b={b}")
    with fa.no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fills with values drawn from ``N(mean, std**2)``."""
    _check(tensor, "normal_")
    if std < 0:
        raise FlambeauError(f"[normal_] expects std >= 0, got {std}")
    with fa.no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills with ``val``."""
    _check(tensor, "constant_")
    with fa.no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    r"""He initialisation: ``U(-bound, bound)`` with ``bound = gain * sqrt(3 / fan)``.

    ``Linear`` uses ``a=sqrt(5)``, which gives ``bound = 1 / sqrt(fan_in)``.
    """
    _check(tensor, "kaiming_uniform_")
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode, "kaiming_uniform_")
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """He initialisation with ``N(0, std**2)``, ``std = gain / sqrt(fan)``."""
    _check(tensor, "kaiming_normal_")
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode, "kaiming_normal_")
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    r"""Glorot initialisation: ``U(-a, a)``, ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot initialisation with ``N(0, std**2)``, ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))
