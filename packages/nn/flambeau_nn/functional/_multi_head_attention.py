"""``multi_head_attention_forward``: ``nn.MultiheadAttention``'s computation as a function (PyTorch's signature).

Part of ``flambeau_nn.functional``, which re-exports it.
"""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._attention import scaled_dot_product_attention
from flambeau_nn.functional._base import _check_tensor, _shape
from flambeau_nn.functional._normalization import dropout

__all__ = ["multi_head_attention_forward"]

_OP = "multi_head_attention_forward"


def _float_mask(mask: Tensor | None, name: str, dtype: Any) -> Tensor | None:
    """A bool mask (True = masked out) as an additive float mask; float masks pass through."""
    if mask is None:
        return None
    _check_tensor(mask, _OP, name)
    if mask.dtype == fc.bool:
        return fc.where(mask, float("-inf"), 0.0).to(dtype)
    if not mask.dtype.is_floating_point:
        raise TypeError(f"[{_OP}] only bool and floating types of {name} are supported, got {mask.dtype}")
    return mask.to(dtype)


def _pad_last(t: Tensor | None) -> Tensor | None:
    """One more (unmasked) key position at the end of a mask."""
    return None if t is None else fc._C._pad_nd(t, [0, 1], "constant", 0.0)


def _project(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    use_separate_proj_weight: bool,
    q_proj_weight: Tensor | None,
    k_proj_weight: Tensor | None,
    v_proj_weight: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    from flambeau_nn.functional._base import linear

    e = query.shape[-1]
    b = in_proj_bias
    bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise FlambeauError(f"[{_OP}] use_separate_proj_weight is True but q/k/v_proj_weight is None")
        return linear(query, q_proj_weight, bq), linear(key, k_proj_weight, bk), linear(value, v_proj_weight, bv)
    if in_proj_weight is None:
        raise FlambeauError(f"[{_OP}] use_separate_proj_weight is False but in_proj_weight is None")
    w = in_proj_weight
    if query is key and key is value:  # self-attention: one GEMM for the three projections
        qkv = linear(query, w, b)
        return qkv[..., :e], qkv[..., e : 2 * e], qkv[..., 2 * e :]
    q = linear(query, w[:e], bq)
    if key is value:
        kv = linear(key, w[e:], None if b is None else b[e:])
        return q, kv[..., :e], kv[..., e:]
    return q, linear(key, w[e : 2 * e], bk), linear(value, w[2 * e :], bv)


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    r"""Multi-head attention of sequence-first ``query (L, N, E)``, ``key``/``value (S, N, E_k/E_v)``
    (or unbatched ``(L, E)``), as PyTorch's function of the same name.

    Returns ``(attn_output (L, N, E), attn_weights)``; the weights are ``(N, L, S)`` averaged over
    heads (``(N, H, L, S)`` with ``average_attn_weights=False``) or None unless ``need_weights``.
    ``bias_k``/``bias_v`` (``(1, 1, E)``) append a learned key/value, ``add_zero_attn`` a zero one;
    ``static_k``/``static_v`` (``(N*H, S, E/H)``) replace the projected keys/values. Bool masks mark
    the positions that may *not* be attended (True); float masks are added to the scores.

    Example:
        >>> import flambeau_core as fc
        >>> E = 4
        >>> x = fc.randn(3, 2, E)
        >>> out, w = multi_head_attention_forward(
        ...     x, x, x, E, 2, fc.randn(3 * E, E), fc.zeros(3 * E), None, None, False, 0.0,
        ...     fc.randn(E, E), fc.zeros(E))
        >>> out.shape, w.shape
        (flambeau.Size([3, 2, 4]), flambeau.Size([2, 3, 3]))
    """  # noqa: D205
    for n, t in (("query", query), ("key", key), ("value", value)):
        _check_tensor(t, _OP, n)
    if query.dim() not in (2, 3):
        raise FlambeauError(f"[{_OP}] query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D")
    batched = query.dim() == 3
    for n, t in (("key", key), ("value", value)):
        if t.dim() != query.dim():
            raise FlambeauError(
                f"[{_OP}] For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, expected `{n}` to be "
                f"{query.dim()}-D but found {t.dim()}-D tensor instead"
            )
    dtype = query.dtype
    if not dtype.is_floating_point or key.dtype != dtype or value.dtype != dtype:
        raise TypeError(
            f"[{_OP}] expected query, key and value of one floating dtype, got {query.dtype}, {key.dtype}, "
            f"{value.dtype}"
        )
    if not batched:
        same_qkv, same_kv = query is key and key is value, key is value
        query = query.unsqueeze(1)
        key = query if same_qkv else key.unsqueeze(1)
        value = key if same_kv else value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    H = num_heads
    if E != embed_dim_to_check:
        raise FlambeauError(f"[{_OP}] was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    if E % H != 0:
        raise FlambeauError(f"[{_OP}] embed_dim {E} not divisible by num_heads {H}")
    hd = E // H
    if key.shape[:2] != value.shape[:2] or key.shape[1] != N:
        raise FlambeauError(
            f"[{_OP}] key shape {_shape(key)} does not match value shape {_shape(value)} or the batch of query "
            f"{_shape(query)}"
        )
    if is_causal and attn_mask is None:
        raise FlambeauError(
            f"[{_OP}] Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask."
        )
    q, k, v = _project(
        query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight, q_proj_weight, k_proj_weight,
        v_proj_weight,
    )  # fmt: skip
    S = key.shape[0]
    mask = _float_mask(attn_mask, "attn_mask", dtype)
    if mask is not None:
        if mask.dim() == 2:
            if _shape(mask) != (L, S):
                raise FlambeauError(f"The shape of the 2D attn_mask is {_shape(mask)}, but should be {(L, S)}.")
            mask = mask.unsqueeze(0)
        elif mask.dim() == 3:
            if _shape(mask) != (N * H, L, S):
                raise FlambeauError(f"The shape of the 3D attn_mask is {_shape(mask)}, but should be {(N * H, L, S)}.")
        else:
            raise FlambeauError(f"attn_mask's dimension {mask.dim()} is not supported")
    kpm = _float_mask(key_padding_mask, "key_padding_mask", dtype)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise FlambeauError(f"[{_OP}] bias cannot be added to static key or value")
        k = fc.cat([k, bias_k.reshape(1, 1, E).expand(1, N, E)], 0)
        v = fc.cat([v, bias_v.reshape(1, 1, E).expand(1, N, E)], 0)
        mask, kpm = _pad_last(mask), _pad_last(kpm)
    elif (bias_k is None) != (bias_v is None):
        raise FlambeauError(f"[{_OP}] bias_k and bias_v must both be given or both be None")
    q = q.reshape([L, N * H, hd]).transpose(0, 1)
    heads: list[Tensor] = []
    for name, proj, static in (("static_k", k, static_k), ("static_v", v, static_v)):
        if static is None:
            heads.append(proj.reshape([proj.shape[0], N * H, hd]).transpose(0, 1))
        else:
            if static.dim() != 3 or static.shape[0] != N * H or static.shape[2] != hd:
                raise FlambeauError(f"[{_OP}] expecting {name} of shape ({N * H}, S, {hd}), but got {_shape(static)}")
            heads.append(static)
    k, v = heads
    if add_zero_attn:
        k = fc.cat([k, fc.zeros(N * H, 1, hd, dtype=dtype, device=k.device)], 1)
        v = fc.cat([v, fc.zeros(N * H, 1, hd, dtype=dtype, device=v.device)], 1)
        mask, kpm = _pad_last(mask), _pad_last(kpm)
    S = k.shape[1]
    if kpm is not None:
        if _shape(kpm) != (N, S):
            raise FlambeauError(f"[{_OP}] expecting key_padding_mask shape of {(N, S)}, but got {_shape(kpm)}")
        kpm = kpm.reshape([N, 1, 1, S]).expand(N, H, 1, S).reshape([N * H, 1, S])
        mask = kpm if mask is None else mask + kpm
    p = dropout_p if training else 0.0
    from flambeau_nn.functional._base import linear

    if need_weights:
        scores = fc.matmul(q * (1.0 / (hd**0.5)), k.transpose(1, 2))
        if mask is not None:
            scores = scores + mask
        weights = fc.softmax(scores, -1)
        if p > 0.0:
            weights = dropout(weights, p, True)
        out = fc.matmul(weights, v)
    else:
        if mask is not None:
            mask = mask.unsqueeze(0) if mask.shape[0] == 1 else mask.reshape([N, H, mask.shape[1], S])
        out = scaled_dot_product_attention(
            q.reshape([N, H, L, hd]), k.reshape([N, H, S, hd]), v.reshape([N, H, S, hd]), mask, p
        ).reshape([N * H, L, hd])
        weights = None
    out = linear(out.transpose(0, 1).reshape([L * N, E]), out_proj_weight, out_proj_bias).reshape([L, N, E])
    if weights is not None:
        weights = weights.reshape([N, H, L, S])
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
    if not batched:
        out = out.squeeze(1)
    return out, weights
