"""Stateless functions behind the layers and losses (``flambeau_nn.functional``, PyTorch's ``F``).

Everything here is composed from core ops, so autograd differentiates it
through core's derivative table: no function here has a backward of its own.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn.functional as F
    >>> F.relu(fc.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

__all__ = [
    "linear",
    "relu",
    "tanh",
    "sigmoid",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "dropout",
]

_REDUCTIONS = ("mean", "sum", "none")


def _check_tensor(x: object, op: str, what: str = "input") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] {what} must be a Tensor, got {type(x).__name__}")


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


# ``input @ weight.T + bias`` as ONE core op (a GEMM with the bias in its
# epilogue, and one autograd node): F.linear is core's ``linear`` itself, so a
# call costs no Python frame. It checks its arguments in C++: TypeError for a
# non-tensor or mismatched dtypes, ValueError naming the shapes otherwise.
linear = fc.linear


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)`` elementwise."""
    _check_tensor(input, "relu")
    return fc.relu(input)


def tanh(input: Tensor) -> Tensor:
    _check_tensor(input, "tanh")
    return fc.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    _check_tensor(input, "sigmoid")
    return fc.sigmoid(input)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably by core's log_softmax kernel; ``dtype`` casts the input first."""
    _check_tensor(input, "log_softmax")
    return fc.log_softmax(input, dim, dtype=dtype)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(input) / exp(input).sum(dim)``, stably (``exp(log_softmax)``); ``dtype`` casts the input first."""
    _check_tensor(input, "softmax")
    return fc.softmax(input, dim, dtype=dtype)


def _reduce(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise FlambeauError(f"[{op}] {reduction!r} is not a valid value for reduction: use one of {_REDUCTIONS}")


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    r"""Negative log-likelihood: ``-input[n, target[n]]``, averaged (or summed) over n.

    ``input`` holds log-probabilities of shape ``(N, C)``, ``(C,)`` or
    ``(N, C, d1, ...)``; ``target`` holds int64 class indices of shape ``(N,)``,
    ``()`` or ``(N, d1, ...)``. With ``weight`` (one per class) the mean is
    weighted, as in PyTorch; targets equal to ``ignore_index`` contribute nothing.
    """
    _check_tensor(input, "nll_loss")
    _check_tensor(target, "nll_loss", "target")
    if reduction not in _REDUCTIONS:
        raise FlambeauError(f"[nll_loss] {reduction!r} is not a valid value for reduction: use one of {_REDUCTIONS}")
    if target.dtype != fc.int64:
        raise TypeError(f"[nll_loss] target must hold int64 class indices, got {target.dtype}")
    if input.dim() == 0:
        raise FlambeauError("[nll_loss] input must have at least 1 dim (C,) or (N, C, ...), got a 0-d tensor")
    unbatched = input.dim() == 1
    if unbatched:
        input = input.unsqueeze(0)
        target = target.unsqueeze(0)
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if _shape(target) != expected:
        raise FlambeauError(
            f"[nll_loss] input shape {_shape(input)} needs target shape {expected}, got {_shape(target)}"
        )
    num_classes = input.shape[1]
    if weight is not None and _shape(weight) != (num_classes,):
        raise FlambeauError(f"[nll_loss] weight must have shape ({num_classes},), got {_shape(weight)}")
    keep = target != ignore_index
    safe_target = fc.where(keep, target, 0)
    try:  # gather checks the indices in its kernel, without a separate pass here
        picked = fc.gather(input, 1, safe_target.unsqueeze(1)).squeeze(1)
    except IndexError as e:
        raise IndexError(
            f"[nll_loss] a target is out of bounds for {num_classes} classes (valid: 0..{num_classes - 1} "
            f"or ignore_index={ignore_index}): {e}"
        ) from None
    # Per-sample weight: the class weight, zero where ignored.
    w = keep.to(input.dtype)
    if weight is not None:
        w = w * fc.gather(weight, 0, safe_target.reshape(-1)).reshape(_shape(safe_target))
    loss = -(picked * w)
    if unbatched and reduction == "none":
        return loss.squeeze(0)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction, "nll_loss")


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    r"""``nll_loss(log_softmax(input, 1), target)`` for int64 class-index targets.

    A floating-point ``target`` of the same shape as ``input`` is read as class
    probabilities: ``-(target * log_softmax(input)).sum(1)``.

    Example:
        >>> import flambeau_core as fc
        >>> logits = fc.tensor([[2.0, 0.0], [0.0, 2.0]])
        >>> round(cross_entropy(logits, fc.tensor([0, 1])).item(), 4)
        0.1269
    """
    _check_tensor(input, "cross_entropy")
    _check_tensor(target, "cross_entropy", "target")
    if not 0.0 <= label_smoothing <= 1.0:
        raise FlambeauError(f"[cross_entropy] label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if input.dim() == 0:
        raise FlambeauError("[cross_entropy] input must have at least 1 dim (C,) or (N, C, ...), got a 0-d tensor")
    class_dim = 0 if input.dim() == 1 else 1
    logp = fc.log_softmax(input, class_dim)
    if target.is_floating_point():
        if _shape(target) != _shape(input):
            raise TypeError(
                f"[cross_entropy] target must hold int64 class indices, or class probabilities of the input's "
                f"shape {_shape(input)}; got a {target.dtype} target of shape {_shape(target)}"
            )
        if reduction not in _REDUCTIONS:
            raise FlambeauError(f"[cross_entropy] {reduction!r} is not a valid value for reduction")
        num_classes = input.shape[class_dim]
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / num_classes
        per_class = logp * target
        if weight is not None:
            per_class = per_class * (weight if class_dim == 0 else _per_class_view(weight, input))
        loss = -per_class.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // num_classes) if input.dim() > 1 else loss
        return _reduce(loss, reduction, "cross_entropy")
    loss = nll_loss(logp, target, weight=weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return loss
    # PyTorch: (1 - eps) * nll + eps * (mean over classes of -logp), both reduced alike.
    num_classes = input.shape[class_dim]
    keep = (target != ignore_index).to(input.dtype)
    if input.dim() == 1:
        smooth_all = -(logp * weight).sum() if weight is not None else -logp.sum()
        smooth = smooth_all * keep
    else:
        lp = logp * _per_class_view(weight, input) if weight is not None else logp
        smooth = -lp.sum(class_dim) * keep
    if reduction == "mean":
        if weight is not None:
            safe = fc.where(target != ignore_index, target, 0)
            denom = (fc.gather(weight, 0, safe.reshape(-1)).reshape(_shape(safe)) * keep).sum()
        else:
            denom = keep.sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / num_classes)


def _per_class_view(weight: Tensor, input: Tensor) -> Tensor:
    # (C,) -> (C, 1, ..., 1) so it broadcasts along dim 1 of an (N, C, d1, ...) input.
    return weight.reshape((input.shape[1],) + (1,) * (input.dim() - 2))


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean (or sum) of ``(input - target) ** 2``; shapes broadcast."""
    _check_tensor(input, "mse_loss")
    _check_tensor(target, "mse_loss", "target")
    if reduction not in _REDUCTIONS:
        raise FlambeauError(f"[mse_loss] {reduction!r} is not a valid value for reduction: use one of {_REDUCTIONS}")
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    r"""Zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)`` (training only).

    The mask comes from core's ``rand`` (seeded by ``flambeau_core.manual_seed``),
    so the zeroed positions differ from PyTorch's for the same seed.
    """
    _check_tensor(input, "dropout")
    if not 0.0 <= p <= 1.0:
        raise FlambeauError(f"[dropout] dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        mask = fc.zeros_like(input)
    else:
        mask = (fc.rand_like(input) >= p).to(input.dtype) * (1.0 / (1.0 - p))
    if inplace:
        return input.mul_(mask)
    return input * mask


# ---- convolution and im2col ----


# ---- pooling, padding, resampling ----


# ---- normalization, embedding, dropout ----


# ---- activations and losses ----


# ---- recurrent cells and attention ----
