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
    (flambeau.Size([5, 3, 8]), flambeau.Size([3, 5, 5]))
"""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

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


class MultiheadAttention(Module):
    r"""Attention over ``num_heads`` heads: ``concat(head_1..head_h) W_o``, ``head_i = sdpa(Q W_qi, K W_ki, V W_vi)``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(attn_output, attn_weights)``;
    ``attn_weights`` is None unless ``need_weights``. Bool masks mark the positions
    that are *not* allowed to attend (True), float masks are added to the scores.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> mha = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
        >>> x = fc.randn(3, 5, 8)
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        (flambeau.Size([3, 5, 8]), flambeau.Size([3, 5, 5]))
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
        if add_bias_kv:
            self.bias_k = Parameter(fc.empty(1, 1, embed_dim, dtype=dtype))
            self.bias_v = Parameter(fc.empty(1, 1, embed_dim, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
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
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

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
        """Attends from ``query`` ``(L, N, E)`` to ``key`` ``(S, N, E_k)`` / ``value`` ``(S, N, E_v)`` (``(N, *, E)``
        when ``batch_first``, no ``N`` unbatched) with ``num_heads`` heads, giving ``(attn_output, attn_weights)``.

        ``attn_output`` is ``(L, N, E)``; ``attn_weights`` is ``(N, L, S)`` averaged over the heads (``(N, num_heads,
        L, S)`` when ``average_attn_weights=False``), or None when ``need_weights=False``. ``key_padding_mask`` ``(N,
        S)`` and ``attn_mask`` ``(L, S)`` or ``(N*num_heads, L, S)`` are boolean (``True`` = not attended) or additive
        float masks.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> mha = nn.MultiheadAttention(8, 2)
            >>> q, kv = fc.randn(4, 3, 8), fc.randn(6, 3, 8)
            >>> out, w = mha(q, kv, kv, average_attn_weights=False)
            >>> out.shape, w.shape
            (flambeau.Size([4, 3, 8]), flambeau.Size([3, 2, 4, 6]))
            >>> round(w.sum(dim=-1).mean().item(), 4)
            1.0
        """
        op = "MultiheadAttention"
        for n, t in (("query", query), ("key", key), ("value", value)):
            if not is_tensor_like(t):
                raise TypeError(f"[{op}] {n} must be a Tensor, got {type(t).__name__}")
        batched = query.dim() == 3
        if self.batch_first and batched:
            # Keep self-attention's identities (one packed projection GEMM) through the transposes.
            q = query.transpose(0, 1)
            k = q if key is query else key.transpose(0, 1)
            v = k if value is key else value.transpose(0, 1)
            query, key, value = q, k, v
        for n, t, d in (("key", key, self.kdim), ("value", value, self.vdim)):
            if t.dim() >= 1 and t.shape[-1] != d:
                raise FlambeauError(f"[{op}] expected {n} (..., {d}), got {_shape(t)}")
        out, weights = F.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
        )
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        return out, weights
