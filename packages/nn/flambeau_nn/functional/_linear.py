"""``bilinear`` and ``grouped_mm``: the products beside ``linear``. Part of ``flambeau_nn.functional``."""

from __future__ import annotations

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor, _shape

__all__ = ["bilinear", "grouped_mm"]


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    r"""``y[..., k] = input1 @ weight[k] @ input2 + bias[k]`` for ``weight (out, in1, in2)``.

    ``input1 (*, in1)`` and ``input2 (*, in2)`` share their leading dims. One matmul against the
    weight laid out as ``(in1, out * in2)``, then a product with ``input2`` summed over ``in2``.

    Example:
        >>> import flambeau_core as fc
        >>> bilinear(fc.ones(2, 3), fc.ones(2, 4), fc.ones(5, 3, 4)).shape
        flambeau.Size([2, 5])
    """
    op = "bilinear"
    for t, what in ((input1, "input1"), (input2, "input2"), (weight, "weight")):
        _check_tensor(t, op, what)
    if bias is not None:
        _check_tensor(bias, op, "bias")
    if weight.dim() != 3:
        raise FlambeauError(f"[{op}] expected a 3-D weight (out, in1, in2), got shape {_shape(weight)}")
    out, in1, in2 = _shape(weight)
    if input1.dim() < 1 or _shape(input1)[:-1] != _shape(input2)[:-1] or input1.dim() != input2.dim():
        raise FlambeauError(
            f"[{op}] input1 {_shape(input1)} and input2 {_shape(input2)} must have the same leading dims"
        )
    if input1.shape[-1] != in1 or input2.shape[-1] != in2:
        raise FlambeauError(
            f"[{op}] input1 {_shape(input1)} and input2 {_shape(input2)} must end in {in1} and {in2} "
            f"for a weight of shape {_shape(weight)}"
        )
    if bias is not None and _shape(bias) != (out,):
        raise FlambeauError(f"[{op}] bias must have shape ({out},), got {_shape(bias)}")
    lead = _shape(input1)[:-1]
    left = fc.matmul(input1, weight.permute(1, 0, 2).reshape(in1, out * in2)).reshape(lead + (out, in2))
    y = (left * input2.unsqueeze(-2)).sum(-1)
    return y + bias if bias is not None else y


def _group_bounds(offs: Tensor, length: int, what: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` of each group from PyTorch's cumulative ``offs`` along a dim of ``length``."""
    _check_tensor(offs, "grouped_mm", "offs")
    if offs.dim() != 1 or offs.dtype not in (fc.int32, fc.int64):
        raise TypeError(f"[grouped_mm] offs must be a 1-D int32 tensor, got {offs.dtype} of shape {_shape(offs)}")
    ends = [int(v) for v in offs.tolist()]  # one host read: the group sizes shape the output
    starts = [0, *ends[:-1]]
    if any(e < s for s, e in zip(starts, ends, strict=True)) or (ends and ends[-1] > length):
        raise FlambeauError(f"[grouped_mm] offs {ends} must be non-decreasing and at most {length} (the {what})")
    return list(zip(starts, ends, strict=True))


def grouped_mm(
    mat_a: Tensor,
    mat_b: Tensor,
    *,
    offs: Tensor | None = None,
    bias: Tensor | None = None,
    out_dtype: object = None,
) -> Tensor:
    r"""Grouped matrix products (Mixture-of-Experts GEMMs), as PyTorch's ``F.grouped_mm``.

    - ``mat_a (M, K)``, ``mat_b (G, K, N)``, ``offs (G,)``: rows ``offs[g-1]:offs[g]`` of ``mat_a``
      times ``mat_b[g]``, giving ``(M, N)``;
    - ``mat_a (G, M, K)``, ``mat_b (G, K, N)``: a batched product ``(G, M, N)`` (no ``offs``);
    - ``mat_a (M, K)``, ``mat_b (K, N)``, ``offs``: ``K`` split into groups, giving ``(G, M, N)``;
    - ``mat_a (G, M, K)``, ``mat_b (K, N)``, ``offs``: ``N`` split into groups, giving ``(M, N)``.

    One ``matmul`` per group (a loop over the ``G`` groups, not over data), so it is
    differentiable; rows or columns past ``offs[-1]`` are zero. ``bias`` is not supported
    (PyTorch's CPU kernel refuses it too).

    Example:
        >>> import flambeau_core as fc
        >>> a, b = fc.ones(5, 2), fc.ones(2, 2, 3)
        >>> grouped_mm(a, b, offs=fc.tensor([2, 5], dtype=fc.int32)).shape
        flambeau.Size([5, 3])
    """
    op = "grouped_mm"
    _check_tensor(mat_a, op, "mat_a")
    _check_tensor(mat_b, op, "mat_b")
    if bias is not None:
        raise NotImplementedError(f"[{op}] bias is not supported")
    if mat_a.dim() not in (2, 3) or mat_b.dim() not in (2, 3):
        raise FlambeauError(f"[{op}] mat_a and mat_b must be 2-D or 3-D, got {_shape(mat_a)} and {_shape(mat_b)}")
    if mat_a.dtype != mat_b.dtype:
        raise TypeError(f"[{op}] mat_a and mat_b must have the same dtype, got {mat_a.dtype} and {mat_b.dtype}")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise FlambeauError(
            f"[{op}] contraction dims differ: mat_a {_shape(mat_a)} and mat_b {_shape(mat_b)} ({mat_a.shape[-1]} != "
            f"{mat_b.shape[-2]})"
        )
    if (mat_a.dim() == 3 and mat_b.dim() == 3) != (offs is None):
        raise FlambeauError(f"[{op}] offs must be given exactly when mat_a or mat_b is 2-D")
    if mat_a.dim() == 3 and mat_b.dim() == 3:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise FlambeauError(f"[{op}] group counts differ: mat_a {_shape(mat_a)} and mat_b {_shape(mat_b)}")
        out = fc.matmul(mat_a, mat_b)
    elif mat_a.dim() == 2 and mat_b.dim() == 3:
        groups = _group_bounds(offs, mat_a.shape[0], "rows of mat_a")
        if len(groups) != mat_b.shape[0]:
            raise FlambeauError(f"[{op}] offs has {len(groups)} groups but mat_b {_shape(mat_b)} has {mat_b.shape[0]}")
        parts = [fc.matmul(mat_a[s:e], mat_b[g]) for g, (s, e) in enumerate(groups)]
        rest = mat_a.shape[0] - (groups[-1][1] if groups else 0)
        if rest:
            parts.append(fc.zeros(rest, mat_b.shape[2], dtype=mat_a.dtype, device=mat_a.device))
        out = fc.cat(parts, 0)
    elif mat_a.dim() == 2:
        groups = _group_bounds(offs, mat_a.shape[1], "columns of mat_a")
        out = fc.stack([fc.matmul(mat_a[:, s:e], mat_b[s:e]) for s, e in groups], 0)
    else:
        groups = _group_bounds(offs, mat_b.shape[1], "columns of mat_b")
        if len(groups) != mat_a.shape[0]:
            raise FlambeauError(f"[{op}] offs has {len(groups)} groups but mat_a {_shape(mat_a)} has {mat_a.shape[0]}")
        parts = [fc.matmul(mat_a[g], mat_b[:, s:e]) for g, (s, e) in enumerate(groups)]
        rest = mat_b.shape[1] - (groups[-1][1] if groups else 0)
        if rest:
            parts.append(fc.zeros(mat_a.shape[1], rest, dtype=mat_a.dtype, device=mat_a.device))
        out = fc.cat(parts, 1)
    return out.to(out_dtype) if out_dtype is not None else out
