"""``bilinear``: the bilinear form beside ``linear``. Part of ``flambeau_nn.functional``, which re-exports it."""

from __future__ import annotations

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor, _shape

__all__ = ["bilinear"]


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    r"""``y[..., k] = input1 @ weight[k] @ input2 + bias[k]`` for ``weight (out, in1, in2)``.

    ``input1 (*, in1)`` and ``input2 (*, in2)`` share their leading dims. One matmul against the
    weight laid out as ``(in1, out * in2)``, then a product with ``input2`` summed over ``in2``.

    Example:
        >>> import flambeau_core as fc
        >>> bilinear(fc.ones(2, 3), fc.ones(2, 4), fc.ones(5, 3, 4)).shape
        (2, 5)
    """
    op = "bilinear"
    for t, what in ((input1, "input1"), (input2, "input2"), (weight, "weight")):
        _check_tensor(t, op, what)
    if bias is not None:
        _check_tensor(bias, op, "bias")
    if weight.dim() != 3:
        raise FlambeauError(f"[{op}] expected a 3-D weight (out, in1, in2), got shape {_shape(weight)}")
    out, in1, in2 = _shape(weight)
    if input1.dim() < 1 or _shape(input1)[:-1] != _shape(input2)[:-1] or input1.dim() != input2.dim():
        raise FlambeauError(
            f"[{op}] input1 {_shape(input1)} and input2 {_shape(input2)} must have the same leading dims"
        )
    if input1.shape[-1] != in1 or input2.shape[-1] != in2:
        raise FlambeauError(
            f"[{op}] input1 {_shape(input1)} and input2 {_shape(input2)} must end in {in1} and {in2} "
            f"for a weight of shape {_shape(weight)}"
        )
    if bias is not None and _shape(bias) != (out,):
        raise FlambeauError(f"[{op}] bias must have shape ({out},), got {_shape(bias)}")
    lead = _shape(input1)[:-1]
    left = fc.matmul(input1, weight.permute(1, 0, 2).reshape(in1, out * in2)).reshape(lead + (out, in2))
    y = (left * input2.unsqueeze(-2)).sum(-1)
    return y + bias if bias is not None else y
