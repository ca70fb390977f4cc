"""``Transformer``, its encoder and decoder stacks and their layers, as PyTorch's.

Submodule names (``self_attn``, ``linear1``, ``norm1``, ...) and so ``state_dict``
keys are PyTorch's; a PyTorch checkpoint loads as is.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> nn.TransformerEncoder(layer, num_layers=2)(fc.randn(5, 3, 8)).shape
    flambeau.Size([5, 3, 8])
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.attention import MultiheadAttention
from flambeau_nn.modules.container import ModuleList
from flambeau_nn.modules.dropout import Dropout
from flambeau_nn.modules.linear import Linear
from flambeau_nn.modules.module import Module
from flambeau_nn.modules.normalization import LayerNorm

__all__ = [
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]


def _gelu(x: Tensor) -> Tensor:
    """Exact GELU, ``F.gelu`` where the activations area provides it, else ``x * Phi(x)`` from erf."""
    gelu = getattr(F, "gelu", None)
    if gelu is not None:
        return gelu(x)
    return x * (fc.erf(x * 0.7071067811865476) + 1.0) * 0.5


def _activation(activation: str | Callable[[Tensor], Tensor], cls: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return _gelu
    if callable(activation):
        return activation
    raise FlambeauError(f"[{cls}] activation should be relu/gelu, not {activation}")


def _layer_norm(d_model: int, eps: float, bias: bool, dtype: Any) -> Module:
    return LayerNorm(d_model, eps=eps, bias=bias, dtype=dtype)


class TransformerEncoderLayer(Module):
    r"""Self-attention then a feed-forward block, each with a residual connection and a LayerNorm.

    ``norm_first=False`` (post-norm): ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``;
    ``norm_first=True`` (pre-norm): ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)
        >>> layer(fc.randn(2, 7, 16)).shape
        flambeau.Size([2, 7, 16])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm2 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation, type(self).__name__)

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """Self-attention then the feed-forward block, each with a residual connection and ``LayerNorm`` (before each
        block when ``norm_first``, after it otherwise), on ``src`` ``(S, N, E)`` (``(N, S, E)`` when ``batch_first``,
        ``(S, E)`` unbatched); same shape out.

        ``src_mask`` ``(S, S)`` (or ``(N*nhead, S, S)``) and ``src_key_padding_mask`` ``(N, S)`` are boolean (``True``
        = not attended) or additive float masks; ``is_causal`` hints that ``src_mask`` is the causal mask.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
            >>> pad = fc.tensor([[False, False, True], [False, False, False]])
            >>> layer(fc.randn(3, 2, 8), src_key_padding_mask=pad).shape
            flambeau.Size([3, 2, 8])
        """
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x


def _clones(layer: Module, num_layers: int, cls: str) -> ModuleList:
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 0:
        raise FlambeauError(f"[{cls}] num_layers must be a non-negative int, got {num_layers!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


def _causal_hint(mask: Tensor | None, is_causal: bool | None) -> bool:
    """PyTorch's ``_detect_is_causal_mask``: an explicit hint, else whether ``mask`` is the causal mask."""
    if is_causal is not None:
        return bool(is_causal)
    if mask is None or mask.dim() != 2 or mask.shape[0] != mask.shape[1]:
        return False
    causal = Transformer.generate_square_subsequent_mask(mask.shape[0], device=mask.device, dtype=mask.dtype)
    return mask.dtype != fc.bool and bool(fc.all(mask == causal).item())


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer``, then ``norm`` if given.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
        >>> encoder = nn.TransformerEncoder(layer, num_layers=3, norm=nn.LayerNorm(8))
        >>> len(encoder.layers), encoder(fc.randn(4, 5, 8)).shape
        (3, flambeau.Size([4, 5, 8]))
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """Passes ``src`` ``(S, N, E)`` (``(N, S, E)`` when ``batch_first``) through every layer in turn, each with
        ``mask`` and ``src_key_padding_mask``, then the final ``norm`` if any; same shape out.

        ``is_causal=None`` detects whether ``mask`` is the causal mask.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), num_layers=2)
            >>> mask = nn.Transformer.generate_square_subsequent_mask(5)
            >>> encoder(fc.randn(5, 3, 8), mask=mask, is_causal=True).shape
            flambeau.Size([5, 3, 8])
        """
        output = src
        causal = _causal_hint(mask, is_causal)
        for mod in self.layers:
            output = mod(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoderLayer(Module):
    r"""Self-attention, attention over ``memory``, then a feed-forward block (residuals and LayerNorms).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> layer = nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
        >>> layer(fc.randn(4, 2, 8), fc.randn(6, 2, 8)).shape
        flambeau.Size([4, 2, 8])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, dtype=dtype
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, dtype=dtype
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm2 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm3 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, type(self).__name__)

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=False
        )[0]
        return self.dropout1(x)

    def _mha_block(
        self, x: Tensor, mem: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.multihead_attn(
            x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=False
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Self-attention on ``tgt`` ``(T, N, E)``, attention from it to ``memory`` ``(S, N, E)`` (``(N, *, E)`` when
        ``batch_first``), then the feed-forward block, each with a residual connection and ``LayerNorm``; gives
        ``tgt``'s shape.

        ``tgt_mask`` ``(T, T)`` and ``memory_mask`` ``(T, S)`` mask the two attentions, ``tgt_key_padding_mask`` ``(N,
        T)`` and ``memory_key_padding_mask`` ``(N, S)`` the padded positions.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> layer = nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
            >>> mask = nn.Transformer.generate_square_subsequent_mask(4)
            >>> layer(fc.randn(2, 4, 8), fc.randn(2, 6, 8), tgt_mask=mask, tgt_is_causal=True).shape
            flambeau.Size([2, 4, 8])
        """
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer``, then ``norm`` if given.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> layer = nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
        >>> nn.TransformerDecoder(layer, num_layers=2)(fc.randn(4, 3, 8), fc.randn(6, 3, 8)).shape
        flambeau.Size([4, 3, 8])
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Passes ``tgt`` ``(T, N, E)`` through every decoder layer in turn, each attending to ``memory`` ``(S, N,
        E)`` with the given masks, then the final ``norm`` if any; gives ``tgt``'s shape.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), num_layers=2)
            >>> decoder(fc.randn(4, 3, 8), fc.randn(6, 3, 8)).shape
            flambeau.Size([4, 3, 8])
        """
        output = tgt
        causal = _causal_hint(tgt_mask, tgt_is_causal)
        for mod in self.layers:
            output = mod(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=causal,
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    r"""The encoder-decoder Transformer of "Attention Is All You Need", as PyTorch's ``nn.Transformer``.

    ``encoder`` is a ``TransformerEncoder`` of ``num_encoder_layers`` layers with a final
    LayerNorm, ``decoder`` a ``TransformerDecoder`` likewise; every parameter with more than
    one dim is re-initialised with ``xavier_uniform_`` (so ``state_dict`` keys and init match
    PyTorch's). ``custom_encoder``/``custom_decoder`` replace the stacks.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
        ...                        dim_feedforward=16, batch_first=True)
        >>> mask = nn.Transformer.generate_square_subsequent_mask(4)
        >>> model(fc.randn(2, 5, 8), fc.randn(2, 4, 8), tgt_mask=mask).shape
        flambeau.Size([2, 4, 8])
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(
                d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias,
                dtype=dtype,
            )  # fmt: skip
            encoder_norm = _layer_norm(d_model, layer_norm_eps, bias, dtype)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(
                d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias,
                dtype=dtype,
            )  # fmt: skip
            decoder_norm = _layer_norm(d_model, layer_norm_eps, bias, dtype)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        r"""The ``(sz, sz)`` causal mask: ``-inf`` above the diagonal (a position may not attend ahead), 0 elsewhere.

        Example:
            >>> Transformer.generate_square_subsequent_mask(3).tolist()
            [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]
        """
        dtype = dtype if dtype is not None else fc.float32
        return fc.triu(fc.full((sz, sz), float("-inf"), dtype=dtype, device=device), 1)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Encodes ``src`` ``(S, N, E)`` and decodes ``tgt`` ``(T, N, E)`` against the encoding (``(N, *, E)`` when
        ``batch_first``), giving ``(T, N, E)``; the masks go to the encoder (``src_*``), the decoder's self-attention
        (``tgt_*``) and its attention to the memory (``memory_*``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> model = nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
            >>> tgt_mask = nn.Transformer.generate_square_subsequent_mask(4)
            >>> model(fc.randn(6, 2, 8), fc.randn(4, 2, 8), tgt_mask=tgt_mask).shape
            flambeau.Size([4, 2, 8])
        """
        for t, what in ((src, "src"), (tgt, "tgt")):
            if not is_tensor_like(t):
                raise TypeError(f"[Transformer] {what} must be a Tensor, got {type(t).__name__}")
        batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if batched and (tgt.dim() != 3 or src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise FlambeauError(
                f"[Transformer] the batch number of src and tgt must be equal, got src {tuple(src.shape)} and "
                f"tgt {tuple(tgt.shape)} (batch_first={self.batch_first})"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise FlambeauError(
                f"[Transformer] the feature number of src and tgt must be equal to d_model={self.d_model}, got "
                f"src {tuple(src.shape)} and tgt {tuple(tgt.shape)}"
            )
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )
