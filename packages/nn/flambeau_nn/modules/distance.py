"""Distances between pairs of vectors: ``CosineSimilarity`` and ``PairwiseDistance``."""

from __future__ import annotations

from flambeau_core import Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Cosine similarity of ``x1`` and ``x2`` along ``dim`` (see ``F.cosine_similarity``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.CosineSimilarity(dim=1, eps=1e-6)(fc.randn(100, 128), fc.randn(100, 128)).shape
        flambeau.Size([100])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The cosine ``x1 . x2 / max(||x1|| * ||x2||, eps)`` of ``x1`` and ``x2`` along ``dim`` (broadcast together),
        giving their shape without ``dim``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x1, x2 = fc.tensor([[1.0, 0.0], [1.0, 1.0]]), fc.tensor([[0.0, 1.0], [2.0, 2.0]])
            >>> [round(v, 4) for v in nn.CosineSimilarity(dim=1)(x1, x2).tolist()]
            [0.0, 1.0]
        """
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim (see ``F.pairwise_distance``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.PairwiseDistance(p=1.0, keepdim=True)(fc.randn(100, 128), fc.randn(100, 128)).shape
        flambeau.Size([100, 1])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The ``p``-norm distance ``||x1 - x2 + eps||_p`` of the rows of ``x1`` and ``x2`` ``(N, D)`` or ``(D)``
        (broadcast together), giving ``(N)`` (``(N, 1)`` when ``keepdim``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x1, x2 = fc.tensor([[0.0, 0.0], [1.0, 1.0]]), fc.tensor([[3.0, 4.0], [1.0, 1.0]])
            >>> nn.PairwiseDistance(eps=0.0)(x1, x2).tolist()
            [5.0, 0.0]
        """
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
