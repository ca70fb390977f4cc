"""``F.linear_cross_entropy``: ``cross_entropy(linear(input, weight), target)``, optionally chunked over the
batch. Part of ``flambeau_nn.functional``."""

from __future__ import annotations

import warnings
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor
from flambeau_nn.functional._loss import cross_entropy

__all__ = ["linear_cross_entropy"]


def _logits(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    classes, out_features = weight.shape[0], tuple(weight.shape[1:-1])
    flat_w = weight.reshape(-1, weight.shape[-1])
    flat_b = bias.reshape(-1) if bias is not None else None
    logits = fc.linear(input, flat_w, flat_b)
    return logits.reshape(tuple(input.shape[:-1]) + (classes, *out_features)) if out_features else logits


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: Any = None,
) -> Tensor:
    r"""``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    ``linear_weight`` is ``(C, in_features)``, or ``(C, d1, ..., dK, in_features)``
    for a K-dimensional loss. With ``options`` (a ``LinearCrossEntropyOptions``)
    and class-index targets, ``reduction`` mean/sum/none and no label smoothing,
    the batch is processed in chunks whose logits are recomputed in backward, so
    the full logits never live at once; the result is the same.

    Example:
        >>> import flambeau_core as fc
        >>> x, w = fc.zeros(2, 3), fc.zeros(4, 3)
        >>> round(linear_cross_entropy(x, w, fc.tensor([0, 3])).item(), 4)  # log(4)
        1.3863
    """
    _check_tensor(input, "linear_cross_entropy")
    _check_tensor(linear_weight, "linear_cross_entropy", "linear_weight")
    _check_tensor(target, "linear_cross_entropy", "target")
    if not 1 <= input.dim() <= 2:
        raise FlambeauError(f"[linear_cross_entropy] expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise FlambeauError(
            f"[linear_cross_entropy] expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}"
        )
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise FlambeauError(
            "[linear_cross_entropy] expected equal input and linear_weight last dimensions (in_features), "
            f"got {in_features} and {linear_weight.shape[-1]}, respectively"
        )
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise FlambeauError(
            f"[linear_cross_entropy] expected linear_bias shape {(classes, *out_features)}, "
            f"got {tuple(linear_bias.shape)}"
        )
    if out_features and not batch:
        raise FlambeauError(
            f"[linear_cross_entropy] K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}"
        )
    probabilities = tuple(target.shape) == (*batch, classes, *out_features)
    if probabilities and ignore_index is not None:
        raise FlambeauError(
            "[linear_cross_entropy] ignore_index cannot be specified when target contains probabilities"
        )
    ignore = ignore_index if ignore_index is not None else -100
    chunkable = (
        reduction in ("mean", "sum", "none")
        and label_smoothing == 0.0
        and target.dtype == fc.int64
        and not out_features
    )
    if options is not None and not chunkable:
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
            f"label_smoothing == 0, target.dtype == int64, out_features == (). Got reduction={reduction!r}, "
            f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, out_features={out_features}",
            stacklevel=2,
        )
    chunk = options._chunk_size(batch[0], in_features, classes) if options is not None and chunkable and batch else 0
    if not chunk or chunk >= batch[0]:
        logits = _logits(input, linear_weight, linear_bias)
        return cross_entropy(
            logits, target, weight=weight, reduction=reduction, ignore_index=ignore, label_smoothing=label_smoothing
        )
    return _chunked(input, linear_weight, linear_bias, target, weight, reduction, ignore, chunk)


def _chunked(
    input: Tensor,
    linear_weight: Tensor,
    linear_bias: Tensor | None,
    target: Tensor,
    weight: Tensor | None,
    reduction: str,
    ignore: int,
    chunk: int,
) -> Tensor:
    from flambeau_nn.utils.checkpoint import checkpoint  # the utils import the modules, which import F

    part_reduction = "none" if reduction == "none" else "sum"

    def chunk_loss(x: Tensor, t: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        return cross_entropy(_logits(x, w, b), t, weight=weight, reduction=part_reduction, ignore_index=ignore)

    parts = [
        checkpoint(
            chunk_loss, input[s : s + chunk], target[s : s + chunk], linear_weight, linear_bias, use_reentrant=False
        )
        for s in range(0, input.shape[0], chunk)
    ]
    if reduction == "none":
        return fc.cat(parts)
    total = fc.stack(parts).sum()
    if reduction == "sum":
        return total
    kept = target != ignore
    if weight is None:
        return total / kept.sum().to(total.dtype)
    safe = fc.where(kept, target, 0)
    return total / fc.where(kept, weight.index_select(0, safe.reshape(-1)).reshape(tuple(target.shape)), 0.0).sum()
