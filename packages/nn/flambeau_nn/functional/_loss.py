"""Losses and distances. Part of ``flambeau_nn.functional``, which re-exports it."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.amp.custom_functions import autocast_float32

from flambeau_nn.functional._base import _REDUCTIONS, _check_tensor, _float_input, _reduce, _shape

__all__ = [
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "margin_ranking_loss",
    "cosine_similarity",
    "pairwise_distance",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "cosine_embedding_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]

# The classic losses are one core op each with a fused backward kernel
# (packages/core/src/cpu/loss.cpp); the rest are composed from core ops, as in
# PyTorch, and differentiated through core's derivative table.

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

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> round(F.binary_cross_entropy(fc.tensor([0.9, 0.2, 0.6]), fc.tensor([1.0, 0.0, 1.0])).item(), 4)
        0.2798
    """
    _check_tensor(input, "binary_cross_entropy")
    _check_tensor(target, "binary_cross_entropy", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "binary_cross_entropy")
    # core's meta step checks the dtypes and that target has input's shape, naming the op.
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

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> logits, target = fc.tensor([2.0, -1.0, 0.5]), fc.tensor([1.0, 0.0, 1.0])
        >>> round(F.binary_cross_entropy_with_logits(logits, target).item(), 4)
        0.3048
    """
    _check_tensor(input, "binary_cross_entropy_with_logits")
    _check_tensor(target, "binary_cross_entropy_with_logits", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "binary_cross_entropy_with_logits")
    # core's meta step checks the dtypes and that target has input's shape, naming the op.
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

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> logp = fc.log_softmax(fc.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]]), 1)
        >>> round(F.nll_loss(logp, fc.tensor([2, 0]), weight=fc.tensor([1.0, 1.0, 2.0])).item(), 4)
        0.4556
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
    # core's meta step checks label_smoothing in [0, 1], the shapes and the dtypes, naming the op.
    return fc._C._cross_entropy(input, target, weight, red, ignore_index, float(label_smoothing))[0]


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``(input - target) ** 2``, reduced; shapes broadcast.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.mse_loss(fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5])).item()
        1.5
    """
    _check_tensor(input, "mse_loss")  # core's check step raises for a non-float32/64 input
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
    """``|input - target|``, reduced; shapes broadcast.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.l1_loss(fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5]), reduction="none").tolist()
        [0.5, 2.0, 0.5]
    """
    _check_tensor(input, "l1_loss")  # core's check step raises for a non-float32/64 input
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
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``), reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.smooth_l1_loss(fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5]), reduction="none").tolist()
        [0.125, 1.5, 0.125]
    """
    _check_tensor(input, "smooth_l1_loss")  # core's check step raises for a non-float32/64 input
    _check_tensor(target, "smooth_l1_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "smooth_l1_loss")
    if beta == 0.0:
        return fc.l1_loss(input, target, red)
    return fc.smooth_l1_loss(input, target, red, float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)`` (``d = input - target``), reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.huber_loss(fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5]), delta=0.5).item()
        0.375
    """
    _check_tensor(input, "huber_loss")  # core's check step raises for a non-float32/64 input
    _check_tensor(target, "huber_loss", "target")
    return fc.huber_loss(input, target, _reduction_enum(reduction, "huber_loss"), float(delta))


@autocast_float32
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

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> round(F.kl_div(fc.log(fc.tensor([0.5, 0.5])), fc.tensor([0.25, 0.75]), reduction="sum").item(), 4)
        0.1308
    """
    _float_input(input, "kl_div")
    _check_tensor(target, "kl_div", "target")
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size."
            "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
            "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
            stacklevel=2,
        )
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


@autocast_float32
def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""``max(0, -target * (input1 - input2) + margin)``, reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x1, x2, y = fc.tensor([1.0, 2.0]), fc.tensor([1.5, 0.0]), fc.tensor([1.0, 1.0])
        >>> F.margin_ranking_loss(x1, x2, y, margin=0.5).item()
        0.5
    """
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
    r"""``sum(x1 * x2, dim) / (max(||x1||, eps) * max(||x2||, eps))``; shapes broadcast.

    Example:
        >>> import flambeau as fb
        >>> a = fb.tensor([[1.0, 0.0], [1.0, 1.0]])
        >>> b = fb.tensor([[1.0, 0.0], [-1.0, -1.0]])
        >>> [round(v, 4) for v in fb.nn.functional.cosine_similarity(a, b).tolist()]
        [1.0, -1.0]
    """
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
    r"""The ``p``-norm of ``x1 - x2 + eps`` over the last dim, for any real ``p`` (``-inf``: the smallest |d|).

    Example:
        >>> import flambeau as fb
        >>> a, b = fb.tensor([[0.0, 0.0]]), fb.tensor([[3.0, 4.0]])
        >>> fb.nn.functional.pairwise_distance(a, b, eps=0.0).tolist()
        [5.0]
        >>> fb.nn.functional.pairwise_distance(a, b, p=1, eps=0.0).tolist()
        [7.0]
    """
    _float_input(x1, "pairwise_distance")
    _float_input(x2, "pairwise_distance")
    d = x1 - x2 + eps
    dim = max(x1.dim(), x2.dim()) - 1
    if dim < 0:  # two 0-d tensors: the norm of one element
        return fc.abs(d)
    a = fc.abs(d)
    if p == float("inf"):
        return a.max(dim, keepdim)[0]
    if p == float("-inf"):
        return a.min(dim, keepdim)[0]
    if p == 0:
        return (a != 0).to(d.dtype).sum(dim, keepdim=keepdim)
    if p == 1:
        return a.sum(dim, keepdim=keepdim)
    if p == 2:
        return fc.sqrt((d * d).sum(dim, keepdim=keepdim))
    # Negative p as well (PyTorch's norm computes it; an element at 0 makes the distance 0).
    # exp(log(s) / p), not pow(s, 1 / p): the exponent stays a float64 number in the gradient.
    return fc.exp(fc.log(fc.pow(a, p).sum(dim, keepdim=keepdim)) * (1.0 / p))


def _check_reduction(size_average: bool | None, reduce: bool | None, reduction: str, op: str) -> str:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _reduction_enum(reduction, op)
    return reduction


@autocast_float32
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""Negative log-likelihood of ``target ~ Poisson(rate)``: ``exp(input) - target * input`` (``log_input=True``,
    ``input = log(rate)``) or ``input - target * log(input + eps)``, reduced.

    ``full=True`` adds Stirling's approximation of ``log(target!)`` where ``target > 1``.

    Example:
        >>> import flambeau_core as fc
        >>> poisson_nll_loss(fc.tensor([0.0]), fc.tensor([1.0])).item()
        1.0
    """
    _float_input(input, "poisson_nll_loss")
    _check_tensor(target, "poisson_nll_loss", "target")
    reduction = _check_reduction(size_average, reduce, reduction, "poisson_nll_loss")
    if log_input:
        loss = fc.exp(input) - target * input
    else:
        loss = input - target * fc.log(input + eps)
    if full:
        stirling = target * fc.log(target) - target + 0.5 * fc.log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    r"""Negative log-likelihood of ``target ~ N(input, var)``: ``0.5 * (log(var) + (input - target)**2 / var)``.

    ``var`` has ``input``'s shape, that shape without its last dim, or one dim
    of size 1 (one variance shared along it); a float is one variance for all.
    ``var`` is clamped at ``eps`` (outside autograd, as PyTorch). ``full=True``
    adds the constant ``0.5 * log(2 pi)``.

    Example:
        >>> import flambeau_core as fc
        >>> gaussian_nll_loss(fc.tensor([1.0]), fc.tensor([1.0]), fc.tensor([1.0])).item()
        0.0
    """
    _float_input(input, "gaussian_nll_loss")
    _check_tensor(target, "gaussian_nll_loss", "target")
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise FlambeauError("[gaussian_nll_loss] var has negative entry/entries")
        var = fc.full(_shape(input), float(var), dtype=input.dtype)
    else:
        _check_tensor(var, "gaussian_nll_loss", "var")
        if bool((var < 0).any()):
            raise FlambeauError("[gaussian_nll_loss] var has negative entry/entries")
    ishape, vshape = _shape(input), _shape(var)
    if vshape != ishape:
        if ishape[:-1] == vshape:
            var = var.unsqueeze(-1)
        elif not (len(ishape) == len(vshape) and sum(v for i, v in zip(ishape, vshape, strict=True) if i != v) == 1):
            raise FlambeauError(
                f"[gaussian_nll_loss] var is of incorrect size: got {vshape} for input of shape {ishape}"
            )
    _reduction_enum(reduction, "gaussian_nll_loss")
    var = var.clone()
    # As PyTorch: the clamp is invisible to autograd (the gradient flows as if unclamped).
    with fa.no_grad():
        var.clamp_min_(eps)
    loss = 0.5 * (fc.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


@autocast_float32
def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``, reduced.

    Example:
        >>> import flambeau_core as fc
        >>> hinge_embedding_loss(fc.tensor([0.3, 0.3]), fc.tensor([1.0, -1.0]), reduction="sum").item()
        1.0
    """
    _float_input(input, "hinge_embedding_loss")
    _check_tensor(target, "hinge_embedding_loss", "target")
    reduction = _check_reduction(size_average, reduce, reduction, "hinge_embedding_loss")
    zero = fc.zeros((), dtype=input.dtype)
    # Two terms, as PyTorch: a target that is neither 1 nor -1 gets both.
    loss = fc.where(target != 1, fc.clamp_min(margin - input, 0), zero) + fc.where(target != -1, input, zero)
    return _reduce(loss, reduction, "hinge_embedding_loss")


@autocast_float32
def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""Two-class logistic loss ``log(1 + exp(-target * input))`` (targets 1 or -1), reduced.

    Example:
        >>> import flambeau_core as fc
        >>> round(soft_margin_loss(fc.tensor([0.0]), fc.tensor([1.0])).item(), 4)
        0.6931
    """
    _float_input(input, "soft_margin_loss")
    _check_tensor(target, "soft_margin_loss", "target")
    reduction = _check_reduction(size_average, reduce, reduction, "soft_margin_loss")
    return _reduce(fc.log1p(fc.exp(-target * input)), reduction, "soft_margin_loss")


_COSINE_EPS = 1e-12  # PyTorch's, added to each squared magnitude


@autocast_float32
def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``.

    ``input1``/``input2`` are ``(N, D)`` with a ``(N,)`` target, or ``(D,)`` with a 0-d target.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[1.0, 0.0]])
        >>> cosine_embedding_loss(x, x, fc.tensor([1.0])).item()
        0.0
    """
    _float_input(input1, "cosine_embedding_loss")
    _check_tensor(input2, "cosine_embedding_loss", "input2")
    _check_tensor(target, "cosine_embedding_loss", "target")
    reduction = _check_reduction(size_average, reduce, reduction, "cosine_embedding_loss")
    tdim = target.dim()
    if tdim > 1:
        raise FlambeauError(
            f"[cosine_embedding_loss] 0D or 1D target tensor expected, multi-target not supported, "
            f"got target of shape {_shape(target)}"
        )
    want = 2 if tdim == 1 else 1
    if input1.dim() != want or input2.dim() != want:
        raise FlambeauError(
            f"[cosine_embedding_loss] {tdim}D target tensor expects {want}D input tensors, but found inputs with "
            f"sizes {_shape(input1)} and {_shape(input2)}"
        )
    prod = (input1 * input2).sum(tdim)
    mag1 = (input1 * input1).sum(tdim) + _COSINE_EPS
    mag2 = (input2 * input2).sum(tdim) + _COSINE_EPS
    cos = prod / fc.sqrt(mag1 * mag2)
    zero = fc.zeros((), dtype=cos.dtype)
    loss = fc.where(target == 1, 1 - cos, zero) + fc.where(target == -1, fc.clamp_min(cos - margin, 0), zero)
    return _reduce(loss, reduction, "cosine_embedding_loss")


def _class_scores(input: Tensor, target: Tensor, op: str) -> tuple[Tensor, Tensor]:
    """``input`` as ``(N, C)`` and ``target`` as ``(N,)`` for the per-sample margin losses; checks the sizes."""
    if input.dim() > 2 or (input.dim() > 0 and input.shape[-1] == 0):
        raise FlambeauError(
            f"[{op}] Expected non-empty vector or matrix with optional 0-dim batch size, but got: {_shape(input)}"
        )
    rows = input.reshape(-1, input.shape[-1] if input.dim() > 0 else 1)
    if target.dim() > 1 or target.numel() != rows.shape[0]:
        raise FlambeauError(f"[{op}] inconsistent target size, expected {rows.shape[0]} but got {_shape(target)}")
    return rows, target.reshape(-1)


@autocast_float32
def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])**p / C`` per sample (``y = target``).

    ``weight`` (one per class) scales each sample's terms by ``weight[y]``.

    Example:
        >>> import flambeau_core as fc
        >>> round(multi_margin_loss(fc.tensor([[0.1, 0.2, 0.4, 0.8]]), fc.tensor([3])).item(), 4)
        0.325
    """
    _float_input(input, "multi_margin_loss")
    _check_tensor(target, "multi_margin_loss", "target")
    reduction = _check_reduction(size_average, reduce, reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise FlambeauError(f"[multi_margin_loss] only p == 1 and p == 2 supported, got p={p}")
    if weight is not None and weight.dim() != 1:
        raise FlambeauError(f"[multi_margin_loss] weight must be one-dimensional, got shape {_shape(weight)}")
    rows, tgt = _class_scores(input, target, "multi_margin_loss")
    n, c = rows.shape
    if weight is not None and weight.numel() != c:
        raise FlambeauError(f"[multi_margin_loss] inconsistent weight size, expected {c} but got {_shape(weight)}")
    if tgt.numel() and (bool((tgt < 0).any()) or bool((tgt >= c).any())):
        raise IndexError(f"[multi_margin_loss] target out of range: every class index must be in [0, {c})")
    picked = rows.gather(1, tgt.unsqueeze(1))
    z = fc.clamp_min(margin - picked + rows, 0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, tgt).unsqueeze(1)
    own = fc.one_hot(tgt, c).to(fc.bool)
    loss = fc.where(own, fc.zeros((), dtype=z.dtype), z).sum(1) / c
    if reduction == "none":
        return loss.reshape(_shape(target)) if input.dim() > 1 else loss.reshape(())
    return _reduce(loss, reduction, "multi_margin_loss")


@autocast_float32
def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""Multi-label hinge loss: ``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` over target classes ``y_j`` and
    non-target classes ``i``.

    ``target`` has ``input``'s shape and lists the target classes of each
    sample, ended by the first -1 (the rest is ignored).

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(multilabel_margin_loss(x, fc.tensor([[3, 0, -1, 1]])).item(), 4)
        0.85
    """
    _float_input(input, "multilabel_margin_loss")
    _check_tensor(target, "multilabel_margin_loss", "target")
    reduction = _check_reduction(size_average, reduce, reduction, "multilabel_margin_loss")
    if input.dim() > 2 or (input.dim() > 0 and input.shape[-1] == 0):
        raise FlambeauError(
            "[multilabel_margin_loss] Expected non-empty vector or matrix with optional 0-dim batch size, "
            f"but got: {_shape(input)}"
        )
    if _shape(target) != _shape(input):
        raise FlambeauError(
            f"[multilabel_margin_loss] inconsistent target size: {_shape(target)} for input of size {_shape(input)}"
        )
    c = input.shape[-1] if input.dim() > 0 else 1
    rows, tgt = input.reshape(-1, c), target.reshape(-1, c)
    if tgt.numel() and (bool((tgt < -1).any()) or bool((tgt >= c).any())):
        raise IndexError(f"[multilabel_margin_loss] target out of range: every entry must be in [-1, {c})")
    # The targets of a row are the entries before its first -1.
    valid = (tgt < 0).to(fc.int64).cumsum(1) == 0
    index = fc.where(valid, tgt, fc.zeros((), dtype=tgt.dtype))
    is_target = fc.zeros(_shape(rows), dtype=rows.dtype).scatter_add(1, index, valid.to(rows.dtype)) > 0
    # Only the positions up to the longest target list matter (each row's list is a prefix).
    longest = int(valid.sum(1).max().item()) if valid.numel() else 0
    valid, index = valid[:, :longest], index[:, :longest]
    picked = rows.gather(1, index)  # (N, J): x[y_j]
    others = is_target.logical_not().unsqueeze(1)
    zero = fc.zeros((), dtype=rows.dtype)
    # The (N, J, C) hinge terms, a block of target positions at a time so that at most ~4M live at once.
    step = max(1, (1 << 22) // max(1, rows.shape[0] * c))
    loss = fc.zeros((rows.shape[0],), dtype=rows.dtype)
    for j in range(0, longest, step):
        hinge = fc.clamp_min(1 - picked[:, j : j + step].unsqueeze(2) + rows.unsqueeze(1), 0)
        counted = valid[:, j : j + step].unsqueeze(2).logical_and(others)
        loss = loss + fc.where(counted, hinge, zero).sum((1, 2))
    loss = loss / c
    if reduction == "none":
        return loss if input.dim() > 1 else loss.reshape(())
    return _reduce(loss, reduction, "multilabel_margin_loss")


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""Multi-label one-versus-all logistic loss, averaged over the classes (the last dim), then reduced.

    Example:
        >>> import flambeau_core as fc
        >>> round(multilabel_soft_margin_loss(fc.zeros(1, 2), fc.tensor([[1.0, 0.0]])).item(), 4)
        0.6931
    """
    _float_input(input, "multilabel_soft_margin_loss")
    _check_tensor(target, "multilabel_soft_margin_loss", "target")
    reduction = _check_reduction(size_average, reduce, reduction, "multilabel_soft_margin_loss")
    loss = -(target * fc.log_sigmoid(input) + (1 - target) * fc.log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")


def _triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor, op: str) -> None:
    if not anchor.dim() == positive.dim() == negative.dim():
        raise FlambeauError(
            f"[{op}] The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
            f"{negative.dim()}D inputs"
        )


@autocast_float32
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""``max(0, margin + d(a, p) - d(a, n))`` with ``d = pairwise_distance(., ., p, eps)``, reduced.

    ``swap=True`` uses ``min(d(a, n), d(p, n))`` as the negative distance.

    Example:
        >>> import flambeau_core as fc
        >>> a = fc.tensor([[0.0, 0.0]])
        >>> round(triplet_margin_loss(a, a, fc.tensor([[3.0, 4.0]]), margin=6.0).item(), 4)
        1.0
    """
    _float_input(anchor, "triplet_margin_loss")
    _check_tensor(positive, "triplet_margin_loss", "positive")
    _check_tensor(negative, "triplet_margin_loss", "negative")
    reduction = _check_reduction(size_average, reduce, reduction, "triplet_margin_loss")
    if margin <= 0:
        raise FlambeauError(f"[triplet_margin_loss] margin must be greater than 0, got {margin}")
    _triplet_dims(anchor, positive, negative, "triplet_margin_loss")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = fc.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(fc.clamp_min(margin + d_pos - d_neg, 0), reduction, "triplet_margin_loss")


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    r"""``triplet_margin_loss`` with any distance (default ``pairwise_distance``).

    Example:
        >>> import flambeau_core as fc
        >>> a = fc.tensor([[0.0, 0.0]])
        >>> d = lambda x, y: (x - y).abs().sum(-1)
        >>> triplet_margin_with_distance_loss(a, a, fc.tensor([[3.0, 4.0]]), distance_function=d, margin=8.0).item()
        1.0
    """
    _check_tensor(anchor, "triplet_margin_with_distance_loss", "anchor")
    _check_tensor(positive, "triplet_margin_with_distance_loss", "positive")
    _check_tensor(negative, "triplet_margin_with_distance_loss", "negative")
    _reduction_enum(reduction, "triplet_margin_with_distance_loss")
    if margin <= 0:
        raise FlambeauError(f"[triplet_margin_with_distance_loss] margin must be greater than 0, got {margin}")
    _triplet_dims(anchor, positive, negative, "triplet_margin_with_distance_loss")
    distance = distance_function if distance_function is not None else pairwise_distance
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = fc.minimum(d_neg, distance(positive, negative))
    return _reduce(fc.clamp_min(margin + d_pos - d_neg, 0), reduction, "triplet_margin_with_distance_loss")
