"""``Embedding`` and ``EmbeddingBag``."""

from __future__ import annotations

from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _check_sizes(layer: str, num_embeddings: object, embedding_dim: object) -> None:
    for name, v in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise FlambeauError(f"[{layer}] {name} must be a non-negative int, got {v!r}")


def _padding(layer: str, padding_idx: int | None, num_embeddings: int) -> int | None:
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int):
        raise TypeError(f"[{layer}] padding_idx must be an int or None, got {type(padding_idx).__name__}")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise FlambeauError(
            f"[{layer}] Padding_idx must be within num_embeddings: got padding_idx={padding_idx} for "
            f"num_embeddings={num_embeddings}"
        )
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _initial_weight(layer: str, weight: Tensor | None, num: int, dim: int, freeze: bool, dtype: Any) -> Parameter:
    if weight is None:
        return Parameter(fc.empty(num, dim, dtype=dtype if dtype is not None else fc.float32), requires_grad=not freeze)
    if tuple(weight.shape) != (num, dim):
        raise FlambeauError(
            f"[{layer}] Shape of weight {tuple(weight.shape)} does not match num_embeddings and embedding_dim "
            f"({num}, {dim})"
        )
    return Parameter(weight, requires_grad=not freeze)


class Embedding(Module):
    r"""A lookup table: ``weight[input]`` for integer ``input``.

    ``weight`` is ``(num_embeddings, embedding_dim)``, initialised from
    ``N(0, 1)`` with row ``padding_idx`` (negative counts from the end) zeroed;
    that row gets no gradient.

    Example:
        >>> import flambeau_core as fc
        >>> Embedding(10, 3)(fc.tensor([[1, 2], [4, 5]])).shape
        flambeau.Size([2, 2, 3])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        _check_sizes("Embedding", num_embeddings, embedding_dim)
        if sparse:
            raise NotImplementedError("[Embedding] sparse=True (sparse gradients) is not supported")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding("Embedding", padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        self.weight = _initial_weight("Embedding", _weight, num_embeddings, embedding_dim, _freeze, dtype)
        if _weight is None:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws ``weight`` from ``N(0, 1)`` in place and zeroes the ``padding_idx`` row, if any.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.Embedding(5, 3, padding_idx=0)
            >>> m.reset_parameters()
            >>> m.weight[0].tolist()
            [0.0, 0.0, 0.0]
        """
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with fa.no_grad():
                self.weight[self.padding_idx].zero_()

    def forward(self, input: Tensor) -> Tensor:
        """Looks up the rows of ``weight`` at the integer indices ``input`` (any shape ``(*)``), giving ``(*,
        embedding_dim)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Embedding(10, 3)(fc.tensor([[1, 2, 4], [4, 3, 9]])).shape
            flambeau.Size([2, 3, 3])
        """
        # The weight straight from _parameters (as Linear): self.weight would go through
        # Module.__getattr__, a Python-level miss; reparametrized (parametrize, weight_norm),
        # the weight is an attribute instead.
        weight = self._parameters.get("weight")
        if weight is None:
            weight = self.weight
        return F.embedding(
            input, weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse
        )

    def extra_repr(self) -> str:
        """The table's size and the options that differ from the defaults, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Embedding(10, 3).extra_repr()
            '10, 3'
        """
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (2-D); ``freeze`` turns its gradient off.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> emb = nn.Embedding.from_pretrained(fc.tensor([[1.0, 2.0], [3.0, 4.0]]))
            >>> emb(fc.tensor([1])).tolist()
            [[3.0, 4.0]]
            >>> emb.weight.requires_grad
            False
        """
        if not isinstance(embeddings, Tensor) or embeddings.dim() != 2:
            raise FlambeauError("[Embedding.from_pretrained] Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=embeddings,
            _freeze=freeze,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
        )


class EmbeddingBag(Module):
    r"""Sums, means or maxima of bags of embeddings, without building the gathered rows.

    ``weight`` is ``(num_embeddings, embedding_dim)`` from ``N(0, 1)`` (row
    ``padding_idx`` zeroed; those indices are left out of their bag).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> bag = nn.EmbeddingBag.from_pretrained(fc.tensor([[1.0], [2.0], [3.0], [4.0]]), mode="sum")
        >>> bag(fc.tensor([0, 1, 2, 3]), fc.tensor([0, 2])).tolist()
        [[3.0], [7.0]]
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        _check_sizes("EmbeddingBag", num_embeddings, embedding_dim)
        if sparse:
            raise NotImplementedError("[EmbeddingBag] sparse=True (sparse gradients) is not supported")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _padding("EmbeddingBag", padding_idx, num_embeddings)
        self.weight = _initial_weight("EmbeddingBag", _weight, num_embeddings, embedding_dim, False, dtype)
        if _weight is None:
            self.reset_parameters()
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        """Re-draws ``weight`` from ``N(0, 1)`` in place and zeroes the ``padding_idx`` row, if any.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.EmbeddingBag(5, 2, padding_idx=1)
            >>> m.reset_parameters()
            >>> m.weight[1].tolist()
            [0.0, 0.0]
        """
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with fa.no_grad():
                self.weight[self.padding_idx].zero_()

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None) -> Tensor:
        """Reduces (``mode``: sum, mean or max) the embeddings of each bag: ``input`` is 2-D ``(B, L)`` (one bag a
        row) or 1-D with ``offsets`` ``(B,)`` marking where each bag starts; gives ``(B, embedding_dim)``.

        ``per_sample_weights`` (same shape as ``input``, ``mode="sum"`` only) scales each embedding first.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> bag = nn.EmbeddingBag(10, 3, mode="max")
            >>> bag(fc.tensor([[1, 2], [3, 4], [5, 6]])).shape
            flambeau.Size([3, 3])
        """
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        """The table's size, the reduction ``mode`` and any option that differs from the defaults, as shown inside
        ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.EmbeddingBag(10, 3).extra_repr()
            "10, 3, mode='mean'"
        """
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag whose weight is ``embeddings`` (2-D); ``freeze`` turns its gradient off.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> bag = nn.EmbeddingBag.from_pretrained(fc.tensor([[1.0, 1.0], [3.0, 5.0]]))
            >>> bag(fc.tensor([[0, 1]])).tolist()
            [[2.0, 3.0]]
        """
        if not isinstance(embeddings, Tensor) or embeddings.dim() != 2:
            raise FlambeauError("[EmbeddingBag.from_pretrained] Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=embeddings,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag
