"""Losses a model's forward computes, as ONNX: cross_entropy, nll_loss, mse_loss, l1_loss, binary cross entropy."""

from __future__ import annotations

from typing import Any

import numpy as np
from flambeau_core._trace import OpCall

from flambeau.onnx._graph import _arguments, _Graph, _maps, _np_dtype, _unsupported

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction: Any) -> int:
    return _REDUCTIONS[reduction] if isinstance(reduction, str) else int(reduction)


def _reduce(g: _Graph, v: str, reduction: Any) -> list[str]:
    r = _reduction(reduction)
    if r == 0:
        return [v]
    return g.node("ReduceMean" if r == 1 else "ReduceSum", [v], keepdims=0)


def _number(g: _Graph, value: float, dtype: Any) -> str:
    return g.constant(np.asarray(value, _np_dtype(dtype)))


@_maps("mse_loss", "l1_loss")
def _pointwise_loss(g: _Graph, call: OpCall) -> list[str | None]:
    x, y, reduction = _arguments(call, ("input", None), ("target", None), ("reduction", 1))
    dtype = call.result.dtype
    d = g.node("Sub", [g.operand(x, dtype), g.operand(y, dtype)])[0]
    loss = g.node("Mul", [d, d])[0] if call.name == "mse_loss" else g.node("Abs", [d])[0]
    return _reduce(g, loss, reduction)


def _weighted(g: _Graph, loss: str, weight: Any, dtype: Any) -> str:
    return loss if weight is None else g.node("Mul", [loss, g.operand(weight, dtype)])[0]


@_maps("binary_cross_entropy")
def _binary_cross_entropy(g: _Graph, call: OpCall) -> list[str | None]:
    """-(y log p + (1 - y) log(1 - p)), each log clamped at -100 as PyTorch does."""
    p, y, weight, reduction = _arguments(call, ("input", None), ("target", None), ("weight", None), ("reduction", 1))
    dtype = call.result.dtype
    pv, yv = g.operand(p, dtype), g.operand(y, dtype)
    one, floor = _number(g, 1.0, dtype), _number(g, -100.0, dtype)
    log_p = g.node("Max", [g.node("Log", [pv])[0], floor])[0]
    log_q = g.node("Max", [g.node("Log", [g.node("Sub", [one, pv])[0]])[0], floor])[0]
    pos = g.node("Mul", [yv, log_p])[0]
    neg = g.node("Mul", [g.node("Sub", [one, yv])[0], log_q])[0]
    loss = g.node("Neg", [g.node("Add", [pos, neg])[0]])[0]
    return _reduce(g, _weighted(g, loss, weight, dtype), reduction)


@_maps("binary_cross_entropy_with_logits")
def _bce_with_logits(g: _Graph, call: OpCall) -> list[str | None]:
    """(1 - y) x + (1 + (pos_weight - 1) y) softplus(-x), softplus(-x) = max(-x, 0) + log(1 + exp(-|x|))."""
    x, y, weight, pos_weight, reduction = _arguments(
        call, ("input", None), ("target", None), ("weight", None), ("pos_weight", None), ("reduction", 1)
    )
    dtype = call.result.dtype
    xv, yv, one = g.operand(x, dtype), g.operand(y, dtype), _number(g, 1.0, dtype)
    neg_x = g.node("Neg", [xv])[0]
    log1p = g.node("Log", [g.node("Add", [one, g.node("Exp", [g.node("Neg", [g.node("Abs", [xv])[0]])[0]])[0]])[0]])[0]
    softplus = g.node("Add", [g.node("Relu", [neg_x])[0], log1p])[0]
    if pos_weight is not None:
        scale = g.node("Sub", [g.operand(pos_weight, dtype), one])[0]
        softplus = g.node("Mul", [g.node("Add", [one, g.node("Mul", [scale, yv])[0]])[0], softplus])[0]
    loss = g.node("Add", [g.node("Mul", [g.node("Sub", [one, yv])[0], xv])[0], softplus])[0]
    return _reduce(g, _weighted(g, loss, weight, dtype), reduction)


_ONNX_REDUCTIONS = ("none", "mean", "sum")


@_maps("nll_loss", "nll_loss_nd", "nll_loss2d")
def _nll_loss(g: _Graph, call: OpCall) -> list[str | None]:
    x, target, weight, reduction, ignore_index = _arguments(
        call, ("input", None), ("target", None), ("weight", None), ("reduction", 1), ("ignore_index", -100)
    )
    if x.dim() < 2:
        raise _unsupported(g, call, "an unbatched input (C,): give it a batch dim")
    inputs = [g.value(x), g.value(target)] + ([g.operand(weight, x.dtype)] if weight is not None else [])
    return g.node(
        "NegativeLogLikelihoodLoss", inputs, reduction=_ONNX_REDUCTIONS[_reduction(reduction)],
        ignore_index=int(ignore_index),
    )  # fmt: skip


@_maps("_cross_entropy", "cross_entropy")
def _cross_entropy(g: _Graph, call: OpCall) -> list[str | None]:
    """Class indices: SoftmaxCrossEntropyLoss, with label smoothing as PyTorch's
    (1 - eps) nll + eps / C * (-sum_c log p_c), the ignored targets left out of both terms and of the mean.
    Class probabilities: -sum_c w_c y_c log p_c, with the targets smoothed to (1 - eps) y + eps / C."""
    x, target, weight, reduction, ignore_index, smoothing = _arguments(
        call, ("input", None), ("target", None), ("weight", None), ("reduction", 1), ("ignore_index", -100),
        ("label_smoothing", 0.0),
    )  # fmt: skip
    if x.dim() < 2:
        raise _unsupported(g, call, "an unbatched input (C,): give it a batch dim")
    dtype, classes, r = x.dtype, x.shape[1], _reduction(reduction)
    xv = g.value(x)
    # The class weights broadcast over dim 1 of (N, C, d1, ...).
    w = None
    if weight is not None:
        w = g.node("Reshape", [g.operand(weight, dtype), g.ints([classes] + [1] * (x.dim() - 2))])[0]
    if target.dtype.is_floating_point:
        y = g.operand(target, dtype)
        if smoothing:
            y = g.node("Add", [g.node("Mul", [y, _number(g, 1.0 - smoothing, dtype)])[0],
                               _number(g, smoothing / classes, dtype)])[0]  # fmt: skip
        terms = g.node("Mul", [g.node("LogSoftmax", [xv], axis=1)[0], y])[0]
        if w is not None:
            terms = g.node("Mul", [terms, w])[0]
        loss = g.node("Neg", [g.node("ReduceSum", [terms, g.ints([1])], keepdims=0)[0]])[0]
        return _reduce(g, loss, r)
    labels = g.value(target)
    inputs = [xv, labels] + ([g.operand(weight, dtype)] if weight is not None else [])
    if not smoothing:
        return g.node("SoftmaxCrossEntropyLoss", inputs, reduction=_ONNX_REDUCTIONS[r], ignore_index=int(ignore_index))
    if weight is not None:
        raise _unsupported(g, call, "label_smoothing together with class weights")
    nll = g.node("SoftmaxCrossEntropyLoss", inputs, reduction="none", ignore_index=int(ignore_index))[0]
    kept = g.node("Not", [g.node("Equal", [labels, g.operand(int(ignore_index), target.dtype)])[0]])[0]
    log_p = g.node("LogSoftmax", [xv], axis=1)[0]
    smooth = g.node("Neg", [g.node("ReduceSum", [log_p, g.ints([1])], keepdims=0)[0]])[0]
    smooth = g.node("Where", [kept, smooth, _number(g, 0.0, dtype)])[0]
    loss = g.node("Add", [g.node("Mul", [nll, _number(g, 1.0 - smoothing, dtype)])[0],
                          g.node("Mul", [smooth, _number(g, smoothing / classes, dtype)])[0]])[0]  # fmt: skip
    if r == 1:  # the mean over the targets that are not ignored
        count = g.node("ReduceSum", [g.node("Cast", [kept], to=g._onnx_type(dtype))[0]], keepdims=0)[0]
        return g.node("Div", [g.node("ReduceSum", [loss], keepdims=0)[0], count])
    return _reduce(g, loss, r)
