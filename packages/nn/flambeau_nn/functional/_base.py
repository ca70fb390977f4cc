"""The basics of ``flambeau_nn.functional``: linear, relu, softmax and the argument checks every part shares."""

from __future__ import annotations

import warnings
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

__all__ = [
    "linear",
    "relu",
    "tanh",
    "sigmoid",
    "softmax",
    "log_softmax",
    "relu_",
]

_REDUCTIONS = ("mean", "sum", "none")


def _check_tensor(x: object, op: str, what: str = "input") -> None:
    # A tensor-like (flambeau.overrides) runs through the function, its ops overridden one by one.
    if not isinstance(x, Tensor) and not is_tensor_like(x):
        raise TypeError(f"[{op}] {what} must be a Tensor, got {type(x).__name__}")


def _float_input(input: object, op: str) -> None:
    _check_tensor(input, op)
    if not input.is_floating_point():
        raise TypeError(f"[{op}] input must be a floating point tensor, got dtype {input.dtype}")


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


# ``input @ weight.T + bias`` as ONE core op (a GEMM with the bias in its
# epilogue, and one autograd node): F.linear is core's ``linear`` itself, so a
# call costs no Python frame. It checks its arguments in C++: TypeError for a
# non-tensor or mismatched dtypes, ValueError naming the shapes otherwise.
linear = fc.linear


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)`` elementwise (in place with ``inplace=True``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.relu(x).tolist()]
        [0.0, 0.0, 0.0, 1.0, 3.0]
    """
    _check_tensor(input, "relu")
    return input.relu_() if inplace else fc.relu(input)


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-1.0, 2.0])
        >>> F.relu_(x) is x, x.tolist()
        (True, [0.0, 2.0])
    """
    _check_tensor(input, "relu_")
    return input.relu_()


def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent of ``input``, elementwise (``fb.tanh``), in ``(-1, 1)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> [round(v, 4) for v in F.tanh(fc.tensor([-2.0, 0.0, 1.0])).tolist()]
        [-0.964, 0.0, 0.7616]
    """
    _check_tensor(input, "tanh")
    return fc.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    """The logistic sigmoid ``1 / (1 + exp(-input))``, elementwise (``fb.sigmoid``), in ``(0, 1)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> [round(v, 4) for v in F.sigmoid(fc.tensor([-2.0, 0.0, 1.0])).tolist()]
        [0.1192, 0.5, 0.7311]
    """
    _check_tensor(input, "sigmoid")
    return fc.sigmoid(input)


def _softmax_dim(ndim: int, name: str, stacklevel: int) -> int:
    """PyTorch's implicit dim (0 for 0-, 1- and 3-d inputs, else 1), with its deprecation warning."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably by core's log_softmax kernel; ``dtype`` casts the input first.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> [round(v, 4) for v in F.log_softmax(fc.tensor([1.0, 2.0, 3.0]), dim=0).tolist()]
        [-2.4076, -1.4076, -0.4076]
    """
    _check_tensor(input, "log_softmax")
    if dim is None:
        dim = _softmax_dim(input.dim(), "log_softmax", _stacklevel)
    return fc.log_softmax(input, dim, dtype=dtype)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``exp(input) / exp(input).sum(dim)``, stably (``exp(log_softmax)``); ``dtype`` casts the input first.

    ``dim=None`` picks PyTorch's implicit dim (deprecated there too: it warns).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> [round(v, 4) for v in F.softmax(fc.tensor([[1.0, 2.0, 3.0]]), dim=1)[0].tolist()]
        [0.09, 0.2447, 0.6652]
    """
    _check_tensor(input, "softmax")
    if dim is None:
        dim = _softmax_dim(input.dim(), "softmax", _stacklevel)
    return fc.softmax(input, dim, dtype=dtype)


def _reduce(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise FlambeauError(f"[{op}] {reduction!r} is not a valid value for reduction: use one of {_REDUCTIONS}")
