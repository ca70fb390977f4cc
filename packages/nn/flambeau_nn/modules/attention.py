"""``MultiheadAttention`` with PyTorch's parameters, masks and results.

Parameters and ``state_dict`` keys are PyTorch's: ``in_proj_weight`` (3E, E)
and ``in_proj_bias`` (3E), or ``q_proj_weight``/``k_proj_weight``/``v_proj_weight``
when ``kdim``/``vdim`` differ from ``embed_dim``, and ``out_proj.weight``/``out_proj.bias``;
initialised as PyTorch does (xavier_uniform_ projections, zero biases).

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> mha = nn.MultiheadAttention(8, 2)
    >>> x = fc.randn(5, 3, 8)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    ((5, 3, 8), (3, 5, 5))
"""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.linear import Linear
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` under PyTorch's name for ``MultiheadAttention.out_proj``."""


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def _float_mask(mask: Tensor | None, name: str, dtype: Any) -> Tensor | None:
    """A bool mask (True = masked out) as an additive float mask; float masks pass through."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"[MultiheadAttention] {name} must be a Tensor, got {type(mask).__name__}")
    if mask.dtype == fc.bool:
        return fc.where(mask, float("-inf"), 0.0).to(dtype)
    if not mask.dtype.is_floating_point:
        raise TypeError(f"[MultiheadAttention] only bool and floating types of {name} are supported, got {mask.dtype}")
    return mask.to(dtype)


class MultiheadAttention(Module):
    r"""Attention over ``num_heads`` heads: ``concat(head_1..head_h) W_o``, ``head_i = sdpa(Q W_qi, K W_ki, V W_vi)``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(attn_output, attn_weights)``;
    ``attn_weights`` is None unless ``need_weights``. Bool masks mark the positions
    that are *not* allowed to attend (True), float masks are added to the scores.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for n, v in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise FlambeauError(f"[MultiheadAttention] {n} must be a positive int, got {v!r}")
        if add_bias_kv or add_zero_attn:
            raise FlambeauError("[MultiheadAttention] add_bias_kv and add_zero_attn are not supported: use False")
        if embed_dim % num_heads != 0:
            raise FlambeauError(
                f"[MultiheadAttention] embed_dim must be divisible by num_heads, got embed_dim={embed_dim} and "
                f"num_heads={num_heads}"
            )
        if not 0.0 <= dropout <= 1.0:
            raise FlambeauError(f"[MultiheadAttention] dropout must be between 0 and 1, got {dropout}")
        dtype = dtype if dtype is not None else fc.float32
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(fc.empty(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(fc.empty(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(fc.empty(embed_dim, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(fc.empty(3 * embed_dim, embed_dim, dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(fc.empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        op = "MultiheadAttention"
        for n, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor):
                raise TypeError(f"[{op}] {n} must be a Tensor, got {type(t).__name__}")
        if query.dim() not in (2, 3):
            raise FlambeauError(
                f"[{op}] query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D"
            )
        batched = query.dim() == 3
        for n, t in (("key", key), ("value", value)):
            if t.dim() != query.dim():
                raise FlambeauError(
                    f"[{op}] For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, expected `{n}` to be "
                    f"{query.dim()}-D but found {t.dim()}-D tensor instead"
                )
        dtype = query.dtype
        if not dtype.is_floating_point or key.dtype != dtype or value.dtype != dtype:
            raise TypeError(
                f"[{op}] expected query, key and value of one floating dtype, got {query.dtype}, "
                f"{key.dtype}, {value.dtype}"
            )
        same_qkv, same_kv = query is key and key is value, key is value
        if self.batch_first and batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not batched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        L, N, E = query.shape
        S = key.shape[0]
        Hn, hd = self.num_heads, self.head_dim
        if E != self.embed_dim:
            raise FlambeauError(f"[{op}] was expecting embedding dimension of {self.embed_dim}, but got {E}")
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise FlambeauError(
                f"[{op}] expected key (..., {self.kdim}) and value (..., {self.vdim}), got {_shape(key)} and "
                f"{_shape(value)}"
            )
        if key.shape[:2] != value.shape[:2] or key.shape[1] != N:
            raise FlambeauError(
                f"[{op}] key shape {_shape(key)} does not match value shape {_shape(value)} or the batch of query "
                f"{_shape(query)}"
            )
        if is_causal and attn_mask is None:
            raise FlambeauError(
                f"[{op}] Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                "method `generate_square_subsequent_mask` to create this mask."
            )
        # ---- projections ----
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:E], b[E : 2 * E], b[2 * E :])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            if same_qkv:
                qkv = F.linear(query, w, b)
                q, k, v = qkv[..., :E], qkv[..., E : 2 * E], qkv[..., 2 * E :]
            else:
                q = F.linear(query, w[:E], bq)
                if same_kv:
                    kv = F.linear(key, w[E:], None if b is None else b[E:])
                    k, v = kv[..., :E], kv[..., E:]
                else:
                    k = F.linear(key, w[E : 2 * E], bk)
                    v = F.linear(value, w[2 * E :], bv)
        else:
            q = F.linear(query, self.q_proj_weight, bq)
            k = F.linear(key, self.k_proj_weight, bk)
            v = F.linear(value, self.v_proj_weight, bv)
        # ---- masks: one additive (N*H | 1, L, S) float mask ----
        mask = _float_mask(attn_mask, "attn_mask", dtype)
        if mask is not None:
            if mask.dim() == 2:
                if _shape(mask) != (L, S):
                    raise FlambeauError(f"The shape of the 2D attn_mask is {_shape(mask)}, but should be {(L, S)}.")
                mask = mask.unsqueeze(0)
            elif mask.dim() == 3:
                if _shape(mask) != (N * Hn, L, S):
                    raise FlambeauError(
                        f"The shape of the 3D attn_mask is {_shape(mask)}, but should be {(N * Hn, L, S)}."
                    )
            else:
                raise FlambeauError(f"attn_mask's dimension {mask.dim()} is not supported")
        kpm = _float_mask(key_padding_mask, "key_padding_mask", dtype)
        if kpm is not None:
            if _shape(kpm) != (N, S):
                raise FlambeauError(
                    f"expecting key_padding_mask shape of {(N, S) if batched else (S,)}, but got "
                    f"{_shape(key_padding_mask) if batched else _shape(key_padding_mask)[1:]}"
                )
            kpm = kpm.reshape([N, 1, 1, S]).expand(N, Hn, 1, S).reshape([N * Hn, 1, S])
            mask = kpm if mask is None else mask + kpm
        # ---- attention over (N*H, L, hd) ----
        q = q.reshape([L, N * Hn, hd]).transpose(0, 1)
        k = k.reshape([S, N * Hn, hd]).transpose(0, 1)
        v = v.reshape([S, N * Hn, hd]).transpose(0, 1)
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = fc.matmul(q * (1.0 / (hd**0.5)), k.transpose(1, 2))
            if mask is not None:
                scores = scores + mask
            weights = fc.softmax(scores, -1)
            if p > 0.0:
                weights = F.dropout(weights, p, True)
            out = fc.matmul(weights, v)
        else:
            out = F.scaled_dot_product_attention(
                q.reshape([N, Hn, L, hd]),
                k.reshape([N, Hn, S, hd]),
                v.reshape([N, Hn, S, hd]),
                mask if mask is None or mask.shape[0] == 1 else mask.reshape([N, Hn, mask.shape[1], S]),
                p,
            ).reshape([N * Hn, L, hd])
            weights = None
        out = out.transpose(0, 1).reshape([L * N, E])
        out = self.out_proj(out).reshape([L, N, E])
        if weights is not None:
            weights = weights.reshape([N, Hn, L, S])
            if average_attn_weights:
                weights = weights.mean(1)
            if not batched:
                weights = weights.squeeze(0)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights
