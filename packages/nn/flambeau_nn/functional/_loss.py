"""Activations and losses. Part of ``flambeau_nn.functional``, which re-exports it."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _REDUCTIONS, _check_tensor, _reduce, _shape

__all__ = [
    "cross_entropy",
    "nll_loss",
    "mse_loss",
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
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "margin_ranking_loss",
    "cosine_similarity",
    "pairwise_distance",
]

# Each activation and loss here is one core op with a fused backward kernel
# (packages/core/src/cpu/activation.cpp, loss.cpp); kl_div,
# margin_ranking_loss, cosine_similarity and pairwise_distance are composed
# from core ops, as in PyTorch.

_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(reduction: str, op: str) -> int:
    try:
        return _REDUCTION_ENUM[reduction]
    except (KeyError, TypeError):
        raise FlambeauError(
            f"[{op}] {reduction!r} is not a valid value for reduction: use one of {_REDUCTIONS}"
        ) from None


def _legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """PyTorch's mapping of the deprecated ``size_average``/``reduce`` arguments to ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _float_input(input: object, op: str) -> None:
    _check_tensor(input, op)
    if not input.is_floating_point():
        raise TypeError(f"[{op}] input must be a floating point tensor, got dtype {input.dtype}")


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    r"""``x * Phi(x)`` (``approximate='none'``) or its tanh approximation (``'tanh'``)."""
    _float_input(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise FlambeauError(f"[gelu] approximate argument must be either 'none' or 'tanh', got {approximate!r}")
    return fc.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * sigmoid(x)``."""
    _float_input(input, "silu")
    return input.silu_() if inplace else fc.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * tanh(softplus(x))``."""
    _float_input(input, "mish")
    return input.mish_() if inplace else fc.mish(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    r"""``x`` where ``x > 0``, else ``negative_slope * x``."""
    _float_input(input, "leaky_relu")
    return input.leaky_relu_(negative_slope) if inplace else fc.leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    _float_input(input, "elu")
    return input.elu_(alpha) if inplace else fc.elu(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``scale * elu(x, alpha)`` with the self-normalizing constants."""
    _float_input(input, "selu")
    if inplace:
        return input.elu_(_SELU_ALPHA, _SELU_SCALE)
    return fc.elu(input, _SELU_ALPHA, _SELU_SCALE)


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    _float_input(input, "celu")
    if alpha == 0:
        raise FlambeauError("[celu] ZeroDivisionError: alpha cannot be 0 for CELU")
    if inplace:
        return input.elu_(alpha, 1.0, 1.0 / alpha)
    return fc.elu(input, alpha, 1.0, 1.0 / alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    r"""``log(1 + exp(beta * x)) / beta``; ``x`` itself where ``beta * x > threshold``."""
    _float_input(input, "softplus")
    return fc.softplus(input, beta, threshold)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``x`` clamped to ``[min_val, max_val]``."""
    _float_input(input, "hardtanh")
    return input.hardtanh_(min_val, max_val) if inplace else fc.hardtanh(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``min(max(x, 0), 6)``."""
    _float_input(input, "relu6")
    return input.hardtanh_(0.0, 6.0) if inplace else fc.hardtanh(input, 0.0, 6.0)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * relu6(x + 3) / 6``."""
    _float_input(input, "hardswish")
    return input.hardswish_() if inplace else fc.hardswish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``relu6(x + 3) / 6``."""
    _float_input(input, "hardsigmoid")
    return input.hardsigmoid_() if inplace else fc.hardsigmoid(input)


def logsigmoid(input: Tensor) -> Tensor:
    r"""``log(sigmoid(x))``, stable for large ``|x|``."""
    _float_input(input, "logsigmoid")
    return fc.log_sigmoid(input)


def softsign(input: Tensor) -> Tensor:
    r"""``x / (1 + |x|)``."""
    _float_input(input, "softsign")
    return fc.softsign(input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    r"""``x`` where ``x > 0``, else ``weight * x``; ``weight`` has one element or one per channel (dim 1)."""
    _float_input(input, "prelu")
    _check_tensor(weight, "prelu", "weight")
    return fc.prelu(input, weight)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    r"""``a * sigmoid(b)`` where ``a`` and ``b`` are the two halves of ``input`` along ``dim``."""
    _float_input(input, "glu")
    return fc.glu(input, dim)


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""``-weight * (target * log(x) + (1 - target) * log(1 - x))``; each log is clamped at -100.

    ``input`` holds probabilities in ``[0, 1]`` (FlambeauError otherwise) and
    ``target`` must have its shape.
    """
    _check_tensor(input, "binary_cross_entropy")
    _check_tensor(target, "binary_cross_entropy", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "binary_cross_entropy")
    if _shape(target) != _shape(input):
        raise FlambeauError(
            f"[binary_cross_entropy] target shape {_shape(target)} must be the same as input shape {_shape(input)}"
        )
    return fc.binary_cross_entropy(input, target, weight, red)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    r"""``binary_cross_entropy(sigmoid(input), target)``, computed stably from the logits.

    ``pos_weight`` weighs the positive term (broadcast along the last dim), ``weight`` each element.
    """
    _check_tensor(input, "binary_cross_entropy_with_logits")
    _check_tensor(target, "binary_cross_entropy_with_logits", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "binary_cross_entropy_with_logits")
    if _shape(target) != _shape(input):
        raise FlambeauError(
            f"[binary_cross_entropy_with_logits] target shape {_shape(target)} must be the same as "
            f"input shape {_shape(input)}"
        )
    return fc.binary_cross_entropy_with_logits(input, target, weight, pos_weight, red)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""Negative log-likelihood: ``-weight[t] * input[n, t]`` with ``t = target[n]``, reduced.

    ``input`` holds log-probabilities of shape ``(N, C)``, ``(C,)`` or
    ``(N, C, d1, ...)``; ``target`` holds int64 class indices of shape ``(N,)``,
    ``()`` or ``(N, d1, ...)``. The mean is weighted by the class weights, as in
    PyTorch; targets equal to ``ignore_index`` contribute nothing. A target out
    of ``[0, C)`` raises IndexError.
    """
    _check_tensor(input, "nll_loss")
    _check_tensor(target, "nll_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "nll_loss")
    return fc.nll_loss_nd(input, target, weight, red, ignore_index)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    r"""``nll_loss(log_softmax(input, 1), target)`` in one fused kernel (forward and backward).

    ``target`` holds int64 class indices (shape ``(N,)``, ``()`` or ``(N, d1, ...)``)
    or, with a floating dtype and the input's shape, class probabilities.
    ``weight`` (one per class), ``ignore_index`` and ``label_smoothing`` follow PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> logits = fc.tensor([[2.0, 0.0], [0.0, 2.0]])
        >>> round(cross_entropy(logits, fc.tensor([0, 1])).item(), 4)
        0.1269
    """
    _check_tensor(input, "cross_entropy")
    _check_tensor(target, "cross_entropy", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise FlambeauError(f"[cross_entropy] label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    return fc._C._cross_entropy(input, target, weight, red, ignore_index, float(label_smoothing))[0]


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``(input - target) ** 2``, reduced; shapes broadcast."""
    _float_input(input, "mse_loss")
    _check_tensor(target, "mse_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return fc.mse_loss(input, target, _reduction_enum(reduction, "mse_loss"))


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``|input - target|``, reduced; shapes broadcast."""
    _float_input(input, "l1_loss")
    _check_tensor(target, "l1_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return fc.l1_loss(input, target, _reduction_enum(reduction, "l1_loss"))


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``), reduced."""
    _float_input(input, "smooth_l1_loss")
    _check_tensor(target, "smooth_l1_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "smooth_l1_loss")
    if beta == 0.0:
        return fc.l1_loss(input, target, red)
    return fc.smooth_l1_loss(input, target, red, float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)`` (``d = input - target``), reduced."""
    _float_input(input, "huber_loss")
    _check_tensor(target, "huber_loss", "target")
    return fc.huber_loss(input, target, _reduction_enum(reduction, "huber_loss"), float(delta))


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    r"""Kullback-Leibler divergence ``target * (log(target) - input)`` for log-probabilities ``input``.

    ``log_target=True`` reads ``target`` as log-probabilities too. ``reduction='batchmean'``
    divides the sum by the batch size (the mathematically correct KL mean).
    """
    _float_input(input, "kl_div")
    _check_tensor(target, "kl_div", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise FlambeauError(
            f"[kl_div] {reduction!r} is not a valid value for reduction: "
            "use one of ('mean', 'batchmean', 'sum', 'none')"
        )
    if log_target:
        loss = fc.exp(target) * (target - input)
    else:
        positive = target > 0
        safe = fc.where(positive, target, 1.0)
        loss = target * fc.log(safe) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() != 0 else total
    return _reduce(loss, reduction, "kl_div")


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""``max(0, -target * (input1 - input2) + margin)``, reduced."""
    _float_input(input1, "margin_ranking_loss")
    _check_tensor(input2, "margin_ranking_loss", "input2")
    _check_tensor(target, "margin_ranking_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _reduction_enum(reduction, "margin_ranking_loss")
    if not (input1.dim() == input2.dim() == target.dim()):
        raise FlambeauError(
            "[margin_ranking_loss] all input tensors should have the same number of dims, got shapes: "
            f"input1: {_shape(input1)}, input2: {_shape(input2)}, target: {_shape(target)}"
        )
    loss = fc.clamp_min(-target * (input1 - input2) + margin, 0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    r"""``sum(x1 * x2, dim) / (max(||x1||, eps) * max(||x2||, eps))``; shapes broadcast."""
    _float_input(x1, "cosine_similarity")
    _float_input(x2, "cosine_similarity")
    try:
        shape = fc.broadcast_shapes(_shape(x1), _shape(x2))
    except (FlambeauError, ValueError):
        raise FlambeauError(
            f"[cosine_similarity] x1 shape {_shape(x1)} and x2 shape {_shape(x2)} do not broadcast"
        ) from None
    a, b = x1.expand(shape), x2.expand(shape)
    n1 = fc.sqrt((a * a).sum(dim, keepdim=True)).clone()
    n2 = fc.sqrt((b * b).sum(dim, keepdim=True)).clone()
    # As PyTorch: the norms are clamped at eps outside autograd (the gradient flows as if unclamped).
    with fa.no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((a / n1) * (b / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    r"""The ``p``-norm of ``x1 - x2 + eps`` over the last dim."""
    _float_input(x1, "pairwise_distance")
    _float_input(x2, "pairwise_distance")
    d = x1 - x2 + eps
    dim = max(x1.dim(), x2.dim()) - 1
    if dim < 0:  # two 0-d tensors: the norm of one element
        return fc.abs(d)
    a = fc.abs(d)
    if p == float("inf"):
        return a.max(dim, keepdim)[0]
    if p == 0:
        return (a != 0).to(d.dtype).sum(dim, keepdim=keepdim)
    if p == 1:
        return a.sum(dim, keepdim=keepdim)
    if p == 2:
        return fc.sqrt((d * d).sum(dim, keepdim=keepdim))
    if p < 0:
        raise FlambeauError(f"[pairwise_distance] p must be non-negative, got {p}")
    # exp(log(s) / p), not pow(s, 1 / p): the exponent stays a float64 number in the gradient.
    return fc.exp(fc.log(fc.pow(a, p).sum(dim, keepdim=keepdim)) * (1.0 / p))
