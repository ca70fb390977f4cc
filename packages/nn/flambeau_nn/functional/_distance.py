"""``pdist``: pairwise distances between the rows of one matrix. Part of ``flambeau_nn.functional``."""

from __future__ import annotations

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor, _shape

__all__ = ["pdist"]


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    r"""The ``p``-norm distances between every pair of rows ``i < j`` of an ``(N, M)`` input, row-major.

    The result has ``N * (N - 1) / 2`` entries (``torch.pdist``'s order: (0,1), (0,2), ..., (1,2), ...).
    ``p=0`` counts differing coordinates, ``p=inf`` takes the largest absolute difference.

    Example:
        >>> import flambeau_core as fc
        >>> pdist(fc.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])).tolist()
        [5.0, 10.0, 5.0]
    """
    _check_tensor(input, "pdist")
    if input.dim() != 2:
        raise FlambeauError(f"[pdist] only supports 2D tensors, got shape {_shape(input)}")
    if input.dtype not in (fc.float32, fc.float64):
        raise TypeError(f"[pdist] only supports floating-point dtypes, got {input.dtype}")
    if not p >= 0:
        raise FlambeauError(f"[pdist] only supports non-negative p values, got {p}")
    n = input.shape[0]
    rows = fc.triu_indices(n, n, 1, device=input.device)
    diff = (input.index_select(0, rows[0]) - input.index_select(0, rows[1])).abs()
    if p == 0:
        # A count has zero gradient; the zero-weighted term keeps it in the graph, as PyTorch's result is.
        return (diff != 0).to(input.dtype).sum(-1) + (diff * 0.0).sum(-1)
    if p == float("inf"):
        return diff.amax(-1) if diff.shape[0] > 0 else diff.sum(-1)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        # sqrt at 0 has an infinite slope; PyTorch's gradient there is 0, so guard the sum.
        sq = (diff * diff).sum(-1)
        safe = fc.where(sq > 0, sq, fc.ones_like(sq))
        return fc.where(sq > 0, safe.sqrt(), sq)
    return diff.pow(p).sum(-1).pow(1.0 / p)
