"""Attention (``scaled_dot_product_attention``). Part of ``flambeau_nn.functional``, which re-exports it."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor, _shape
from flambeau_nn.functional._normalization import dropout

__all__ = [
    "scaled_dot_product_attention",
]


def _causal_mask(L: int, S: int) -> Tensor:
    """Bool (L, S): position i may attend to j <= i (PyTorch's tril(ones(L, S)))."""
    return fc.arange(L).unsqueeze(1) >= fc.arange(S).unsqueeze(0)


def _attn_bias(attn_mask: Tensor | None, is_causal: bool, L: int, S: int, dtype: Any, op: str) -> Tensor | None:
    """The mask as an additive float bias (-inf where a bool mask is False), or None."""
    if is_causal:
        if attn_mask is not None:
            raise FlambeauError(f"[{op}] Explicit attn_mask should not be set when is_causal=True")
        attn_mask = _causal_mask(L, S)
    if attn_mask is None:
        return None
    _check_tensor(attn_mask, op, "attn_mask")
    if attn_mask.dtype == fc.bool:
        return fc.where(attn_mask, 0.0, float("-inf")).to(dtype)
    if not attn_mask.dtype.is_floating_point:
        raise TypeError(f"[{op}] attn_mask must be bool or floating point, got dtype {attn_mask.dtype}")
    if attn_mask.dtype != dtype:
        raise TypeError(f"[{op}] expected attn_mask dtype to be bool or {dtype} (the query's), got {attn_mask.dtype}")
    return attn_mask


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    r"""``softmax(query @ key^T * scale + mask) @ value`` over the last two dims.

    query ``(..., L, E)``, key ``(..., S, E)``, value ``(..., S, Ev)``; the leading
    dims broadcast. ``attn_mask`` broadcasts to ``(..., L, S)``: a bool mask says
    which positions take part (True) and a float mask is added to the scores.
    ``is_causal`` masks the upper triangle; ``scale`` defaults to ``1/sqrt(E)``;
    ``dropout_p`` drops attention weights (always applied when given, as in PyTorch).

    Example:
        >>> import flambeau_core as fc
        >>> scaled_dot_product_attention(fc.ones(2, 3, 4), fc.ones(2, 5, 4), fc.ones(2, 5, 6)).shape
        flambeau.Size([2, 3, 6])
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        _check_tensor(t, op, name)
        if t.dim() < 2:
            raise FlambeauError(f"[{op}] {name} must have at least 2 dims (..., L, E), got shape {_shape(t)}")
    if not query.dtype.is_floating_point or key.dtype != query.dtype or value.dtype != query.dtype:
        raise TypeError(
            f"[{op}] Expected query, key, and value to have the same floating point dtype, but got "
            f"query.dtype: {query.dtype}, key.dtype: {key.dtype}, and value.dtype: {value.dtype} instead."
        )
    if query.shape[-1] != key.shape[-1]:
        raise FlambeauError(
            f"[{op}] query and key must have the same embedding size, got query {_shape(query)} and key {_shape(key)}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise FlambeauError(
            f"[{op}] key and value must have the same sequence length, got key {_shape(key)} and value {_shape(value)}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise FlambeauError(f"[{op}] dropout_p must be between 0 and 1, got {dropout_p}")
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    bias = _attn_bias(attn_mask, is_causal, L, S, query.dtype, op)
    if bias is not None:
        try:
            fc.broadcast_shapes(_shape(bias), (*query.shape[:-1], S))
        except Exception:
            raise FlambeauError(
                f"[{op}] attn_mask of shape {_shape(bias)} does not broadcast to the attention weights' shape "
                f"{(*query.shape[:-1], S)}"
            ) from None
    scale_factor = 1.0 / math.sqrt(E) if scale is None else scale
    scores = fc.matmul(query * scale_factor, key.transpose(-2, -1))
    if bias is not None:
        scores = scores + bias
    weights = fc.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return fc.matmul(weights, value)
