"""Activations (and alpha dropout, which keeps SELU's statistics). Part of ``flambeau_nn.functional``.

The classic activations are one core op each with a fused backward kernel
(packages/core/src/cpu/activation.cpp); threshold, the shrinks, softmin, rrelu,
the alpha dropouts and gumbel_softmax are composed from core ops, as in
PyTorch, and differentiated through core's derivative table.
"""

from __future__ import annotations

import math
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor, _float_input, _shape, _softmax_dim, softmax

__all__ = [
    "gelu",
    "silu",
    "mish",
    "leaky_relu",
    "leaky_relu_",
    "elu",
    "elu_",
    "selu",
    "selu_",
    "celu",
    "celu_",
    "softplus",
    "hardtanh",
    "hardtanh_",
    "relu6",
    "hardswish",
    "hardsigmoid",
    "logsigmoid",
    "softsign",
    "prelu",
    "glu",
    "threshold",
    "threshold_",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    "softmin",
    "rrelu",
    "rrelu_",
    "alpha_dropout",
    "feature_alpha_dropout",
    "gumbel_softmax",
]


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    r"""``x * Phi(x)`` (``approximate='none'``) or its tanh approximation (``'tanh'``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 2) for v in F.gelu(x).tolist()]
        [-0.05, -0.15, 0.0, 0.84, 3.0]
    """
    return fc.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * sigmoid(x)``; complex inputs too (as PyTorch's), through the complex sigmoid.

    Example:
        >>> import flambeau_core as fc
        >>> round(silu(fc.tensor([1.0])).item(), 4)
        0.7311
    """
    _check_tensor(input, "silu")
    if input.dtype.is_complex:
        # core's fused kernel is real; the complex form is composed (differentiable, where PyTorch's is not)
        return input.mul_(fc.sigmoid(input)) if inplace else input * fc.sigmoid(input)
    return input.silu_() if inplace else fc.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * tanh(softplus(x))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.mish(x).tolist()]
        [-0.2525, -0.2207, 0.0, 0.8651, 2.9865]
    """
    _check_tensor(input, "mish")
    return input.mish_() if inplace else fc.mish(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    r"""``x`` where ``x > 0``, else ``negative_slope * x``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.leaky_relu(x, 0.1).tolist()]
        [-0.2, -0.05, 0.0, 1.0, 3.0]
    """
    _check_tensor(input, "leaky_relu")
    return input.leaky_relu_(negative_slope) if inplace else fc.leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place ``leaky_relu``: writes into ``input`` and returns it.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, 3.0])
        >>> F.leaky_relu_(x, 0.5) is x, x.tolist()
        (True, [-1.0, 3.0])
    """
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.elu(x).tolist()]
        [-0.8647, -0.3935, 0.0, 1.0, 3.0]
    """
    _check_tensor(input, "elu")
    return input.elu_(alpha) if inplace else fc.elu(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``elu``: writes into ``input`` and returns it.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-1.0, 2.0])
        >>> F.elu_(x) is x, [round(v, 4) for v in x.tolist()]
        (True, [-0.6321, 2.0])
    """
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``scale * elu(x, alpha)`` with the self-normalizing constants.

    Example:
        >>> import flambeau as fb
        >>> y = fb.nn.functional.selu(fb.tensor([-1.0, 0.0, 1.0]))
        >>> [round(v, 4) for v in y.tolist()]
        [-1.1113, 0.0, 1.0507]
    """
    _float_input(input, "selu")
    if inplace:
        return input.elu_(_SELU_ALPHA, _SELU_SCALE)
    return fc.elu(input, _SELU_ALPHA, _SELU_SCALE)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``: writes into ``input`` and returns it.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([0.0, 1.0])
        >>> selu_(x) is x, round(x[1].item(), 4)
        (True, 1.0507)
    """
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Example:
        >>> import flambeau as fb
        >>> y = fb.nn.functional.celu(fb.tensor([-1.0, 0.0, 2.0]), alpha=0.5)
        >>> [round(v, 4) for v in y.tolist()]
        [-0.4323, 0.0, 2.0]
    """
    _float_input(input, "celu")
    if alpha == 0:
        raise FlambeauError("[celu] ZeroDivisionError: alpha cannot be 0 for CELU")
    if inplace:
        return input.elu_(alpha, 1.0, 1.0 / alpha)
    return fc.elu(input, alpha, 1.0, 1.0 / alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``: writes into ``input`` and returns it.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([-100.0, 2.0])
        >>> celu_(x, 0.5) is x, x.tolist()
        (True, [-0.5, 2.0])
    """
    return celu(input, alpha, inplace=True)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    r"""``log(1 + exp(beta * x)) / beta``; ``x`` itself where ``beta * x > threshold``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.softplus(x).tolist()]
        [0.1269, 0.4741, 0.6931, 1.3133, 3.0486]
    """
    return fc.softplus(input, beta, threshold)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``x`` clamped to ``[min_val, max_val]``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.hardtanh(x).tolist()]
        [-1.0, -0.5, 0.0, 1.0, 1.0]
    """
    _check_tensor(input, "hardtanh")
    return input.hardtanh_(min_val, max_val) if inplace else fc.hardtanh(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place ``hardtanh``: clamps ``input`` to ``[min_val, max_val]`` in place and returns it.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-3.0, 0.5, 3.0])
        >>> F.hardtanh_(x) is x, x.tolist()
        (True, [-1.0, 0.5, 1.0])
    """
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``min(max(x, 0), 6)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.relu6(fc.tensor([-1.0, 3.0, 8.0])).tolist()
        [0.0, 3.0, 6.0]
    """
    _float_input(input, "relu6")
    return input.hardtanh_(0.0, 6.0) if inplace else fc.hardtanh(input, 0.0, 6.0)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * relu6(x + 3) / 6``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.hardswish(x).tolist()]
        [-0.3333, -0.2083, 0.0, 0.6667, 3.0]
    """
    _check_tensor(input, "hardswish")
    return input.hardswish_() if inplace else fc.hardswish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``relu6(x + 3) / 6``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.hardsigmoid(x).tolist()]
        [0.1667, 0.4167, 0.5, 0.6667, 1.0]
    """
    _check_tensor(input, "hardsigmoid")
    return input.hardsigmoid_() if inplace else fc.hardsigmoid(input)


def logsigmoid(input: Tensor) -> Tensor:
    r"""``log(sigmoid(x))``, stable for large ``|x|``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.logsigmoid(x).tolist()]
        [-2.1269, -0.9741, -0.6931, -0.3133, -0.0486]
    """
    _float_input(input, "logsigmoid")
    return fc.log_sigmoid(input)


def softsign(input: Tensor) -> Tensor:
    r"""``x / (1 + |x|)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.softsign(x).tolist()]
        [-0.6667, -0.3333, 0.0, 0.5, 0.75]
    """
    return fc.softsign(input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    r"""``x`` where ``x > 0``, else ``weight * x``; ``weight`` has one element or one per channel (dim 1).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.prelu(x, fc.tensor([0.25])).tolist()]
        [-0.5, -0.125, 0.0, 1.0, 3.0]
    """
    return fc.prelu(input, weight)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    r"""``a * sigmoid(b)`` where ``a`` and ``b`` are the two halves of ``input`` along ``dim``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.glu(fc.tensor([[1.0, 2.0, 0.0, 0.0]])).tolist()
        [[0.5, 1.0]]
    """
    return fc.glu(input, dim)


def _write_back(input: Tensor, out: Tensor) -> Tensor:
    # In place as PyTorch's ``_`` forms: the input's storage holds the result and
    # autograd records the copy (so backward goes through ``out``'s graph).
    return input.copy_(out)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    r"""``input`` where ``input > threshold``, else ``value``.

    Example:
        >>> import flambeau_core as fc
        >>> threshold(fc.tensor([-1.0, 0.5, 2.0]), 0.5, 9.0).tolist()
        [9.0, 9.0, 2.0]
    """
    return _threshold(input, threshold, value, inplace, "threshold")


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place ``threshold``: writes into ``input`` and returns it.

    Example:
        >>> import flambeau_core as fc
        >>> threshold_(fc.tensor([0.25, 2.0]), 0.5, -1.0).tolist()
        [-1.0, 2.0]
    """
    return _threshold(input, threshold, value, True, "threshold_")


def _threshold(input: Tensor, bound: float, value: float, inplace: bool, op: str) -> Tensor:
    _check_tensor(input, op)
    # ``x <= bound`` (not ``not x > bound``): a NaN stays NaN, as PyTorch.
    out = fc.where(input <= bound, fc.full((), value, dtype=input.dtype), input)
    return _write_back(input, out) if inplace else out


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    r"""``x`` where ``|x| > lambd``, else 0.

    Example:
        >>> import flambeau_core as fc
        >>> hardshrink(fc.tensor([-1.0, 0.2, 0.75])).tolist()
        [-1.0, 0.0, 0.75]
    """
    _float_input(input, "hardshrink")
    inside = (input >= -lambd).logical_and(input <= lambd)
    return fc.where(inside, fc.zeros((), dtype=input.dtype), input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    r"""``x - lambd`` where ``x > lambd``, ``x + lambd`` where ``x < -lambd``, else 0.

    Example:
        >>> import flambeau_core as fc
        >>> softshrink(fc.tensor([-1.0, 0.2, 1.5])).tolist()
        [-0.5, 0.0, 1.0]
    """
    _float_input(input, "softshrink")
    if lambd < 0:
        raise FlambeauError(f"[softshrink] lambda must be greater or equal to 0, but found to be {lambd}.")
    # ``x * 0`` in the middle keeps NaN, as PyTorch's kernel.
    return fc.where(input > lambd, input - lambd, fc.where(input < -lambd, input + lambd, input * 0))


def tanhshrink(input: Tensor) -> Tensor:
    r"""``x - tanh(x)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in F.tanhshrink(x).tolist()]
        [-1.036, -0.0379, 0.0, 0.2384, 2.0049]
    """
    _float_input(input, "tanhshrink")
    return input - fc.tanh(input)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    r"""``softmax(-input, dim)``: weights that favour the smallest entries.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in softmin(fc.tensor([0.0, 1.0]), dim=0).tolist()]
        [0.7311, 0.2689]
    """
    _check_tensor(input, "softmin")
    if dim is None:
        dim = _softmax_dim(input.dim(), "softmin", _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return softmax(-input, dim, dtype=None)


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    r"""Randomized leaky ReLU: ``x`` where ``x > 0``, else ``a * x``.

    In training ``a`` is drawn uniformly from ``[lower, upper]`` for each element
    (core's generator, so the draws differ from PyTorch's); otherwise
    ``a = (lower + upper) / 2``.

    Example:
        >>> import flambeau_core as fc
        >>> rrelu(fc.tensor([-2.0, 1.0]), 0.25, 0.25, training=True).tolist()
        [-0.5, 1.0]
    """
    _float_input(input, "rrelu")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    if lower > upper:
        raise FlambeauError(
            f"[rrelu] lower bound should be less than or equal to the upper bound, got {lower} > {upper}"
        )
    with fa.no_grad():
        slopes = fc.empty(_shape(input), dtype=input.dtype).uniform_(lower, upper)
        noise = fc.where(input <= 0, slopes, fc.ones((), dtype=input.dtype))
    out = input * noise
    return _write_back(input, out) if inplace else out


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place ``rrelu``: writes into ``input`` and returns it (out of training, negative values are
    scaled by ``(lower + upper) / 2``).

    Example:
        >>> import flambeau_core as fc
        >>> rrelu_(fc.tensor([-1.0, 2.0]), 0.25, 0.75).tolist()
        [-0.5, 2.0]
    """
    return rrelu(input, lower, upper, training, inplace=True)


# SELU's alpha * scale: the value an alpha-dropped unit is set to (before the affine fix-up) is -_ALPHA_PRIME.
_ALPHA_PRIME = 1.7580993408473766


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, feature: bool, op: str) -> Tensor:
    _check_tensor(input, op)
    if not 0.0 <= p <= 1.0:
        raise FlambeauError(f"[{op}] dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if feature and input.dim() < 2:
        raise FlambeauError(f"[{op}] Feature dropout requires at least 2 dimensions in the input, got {_shape(input)}")
    if p == 1.0:
        out = input * fc.zeros((), dtype=input.dtype)
        return _write_back(input, out) if inplace else out
    # Kept units become a * x + b_keep, dropped ones b_drop: the affine map that
    # keeps zero mean and unit variance for SELU activations.
    shape = _shape(input)[:2] + (1,) * (input.dim() - 2) if feature else _shape(input)
    a = 1.0 / math.sqrt((_ALPHA_PRIME * _ALPHA_PRIME * p + 1) * (1 - p))
    with fa.no_grad():
        keep = fc.empty(shape, dtype=input.dtype).bernoulli_(1 - p)
        shift = (keep - 1) * (_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p
    out = input * (keep * a) + shift
    return _write_back(input, out) if inplace else out


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    r"""Dropout for SELU networks: keeps the input's mean and variance (training only).

    Dropped units take SELU's negative saturation value, and an affine map
    restores the statistics. The mask comes from core's generator.

    Example:
        >>> import flambeau_core as fc
        >>> alpha_dropout(fc.ones(3), 0.5, training=False).tolist()
        [1.0, 1.0, 1.0]
    """
    return _alpha_dropout(input, p, training, inplace, False, "alpha_dropout")


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    r"""``alpha_dropout`` of whole channels (``input[n, c]``) of an input with at least 2 dims.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> fc.manual_seed(0)
        >>> y = F.feature_alpha_dropout(fc.zeros(2, 6, 4), p=0.5, training=True)
        >>> y.shape, bool((y.amax(dim=2) == y.amin(dim=2)).all())
        (flambeau.Size([2, 6, 4]), True)
        >>> F.feature_alpha_dropout(fc.ones(2, 3), p=0.5, training=False).tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    return _alpha_dropout(input, p, training, inplace, True, "feature_alpha_dropout")


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    r"""Samples from the Gumbel-softmax distribution: ``softmax((logits + g) / tau, dim)``, ``g ~ Gumbel(0, 1)``.

    ``hard=True`` returns one-hot vectors whose gradient is the soft sample's
    (straight-through). ``eps`` is unused, as in PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> y = gumbel_softmax(fc.zeros(2, 3), hard=True)
        >>> y.sum(1).tolist()
        [1.0, 1.0]
    """
    _float_input(logits, "gumbel_softmax")
    with fa.no_grad():
        # -log(Exp(1)) with Exp(1) = -log(U), U uniform in (0, 1].
        u = fc.empty(_shape(logits), dtype=logits.dtype).uniform_(0.0, 1.0)
        gumbels = -fc.log(-fc.log(1.0 - u))
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = fc.zeros(_shape(logits), dtype=logits.dtype).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
