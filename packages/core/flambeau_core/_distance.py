"""``torch.cdist``: the p-norm distance between each row of one batch of row vectors and each of another.

Composed of a broadcast difference and ``linalg.vector_norm`` (whose gradient is
0 where a distance is 0, as PyTorch's cdist's), so autograd differentiates it. The
p = 2 form by a matrix product runs as one CPU kernel (``_C._cdist_euclidean``)
when no gradient is recorded.
"""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core._linalg_common import _needs_grad
from flambeau_core.amp.custom_functions import autocast_float32
from flambeau_core.overrides import is_tensor_like

COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


@autocast_float32
def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """Distances ``(*batch, P, R)`` between the rows of ``x1`` ``(*batch, P, M)`` and ``x2`` ``(*batch, R, M)``.

    ``p`` in [0, inf] (0 counts the differing coordinates). The batch dims
    broadcast. ``compute_mode`` as PyTorch's: for p=2, the default computes with a
    matrix product when either input has more than 25 rows (faster, and it rounds
    differently from the direct differences), ``"use_mm_for_euclid_dist"`` always,
    ``"donot_use_mm_for_euclid_dist"`` never.

    Example:
        >>> import flambeau_core as fc
        >>> fc.cdist(fc.tensor([[0.0, 0.0], [3.0, 4.0]]), fc.tensor([[0.0, 0.0]])).tolist()
        [[0.0], [5.0]]
    """
    for name, x in (("x1", x1), ("x2", x2)):
        if not is_tensor_like(x):
            raise TypeError(f"[cdist] expected a Tensor as '{name}', got {type(x).__name__}")
        if not x.dtype.is_floating_point:
            raise TypeError(f"[cdist] expected floating-point tensors, got {name} of dtype {x.dtype}")
        if x.dim() < 2:
            raise _C.FlambeauError(f"[cdist] expected tensors of at least 2 dims, got {name} of shape {tuple(x.shape)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise _C.FlambeauError(
            f"[cdist] expected x1 and x2 with the same number of columns, got shapes {tuple(x1.shape)} and "
            f"{tuple(x2.shape)}"
        )
    if not p >= 0:  # also refuses NaN
        raise _C.FlambeauError(f"[cdist] expected a non-negative p, got {p}")
    if compute_mode not in COMPUTE_MODES:
        raise _C.FlambeauError(f"[cdist] expected compute_mode one of {', '.join(COMPUTE_MODES)}; got {compute_mode!r}")
    rows = max(x1.shape[-2], x2.shape[-2])
    if p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (compute_mode == COMPUTE_MODES[0] and rows > 25)):
        return _euclidean_by_matmul(x1, x2)
    from flambeau_core import linalg

    return linalg.vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), ord=p, dim=-1)


def _euclidean_by_matmul(x1, x2):
    """PyTorch's form for many rows: |a - b|^2 = |a|^2 - 2 a.b + |b|^2, one matrix product instead of a
    (P, R, M) difference. Where rounding makes the square 0 or negative the distance is 0, with a 0
    gradient (the inner where keeps sqrt's infinite slope at 0 out of the graph); a NaN square (a NaN
    coordinate, or inf - inf from infinite ones) stays NaN. On the CPU, with no gradient recorded, one
    kernel computes it (the product and one pass over the result, src/cpu/linalg/cdist.cpp)."""
    if (
        x1.device.type == "cpu"
        and x2.device.type == "cpu"
        and x1.dtype == x2.dtype
        and x1.dtype in (_C.float32, _C.float64)
        and type(x1) is _C.Tensor
        and type(x2) is _C.Tensor
        and not _needs_grad(x1, x2)
    ):
        return _fused_euclidean(x1, x2)
    squared = (
        (x1 * x1).sum(-1, keepdim=True) - 2 * _C.matmul(x1, x2.transpose(-2, -1)) + (x2 * x2).sum(-1).unsqueeze(-2)
    )
    # NaN (a NaN or an infinity in the rows: inf - inf) stays NaN, as PyTorch's clamp_min and the kernel's
    keep = (squared > 0) | _C.isnan(squared)
    return _C.where(keep, _C.where(keep, squared, 1.0).sqrt(), 0.0)


def _fused_euclidean(x1, x2):
    batch1, batch2 = tuple(x1.shape[:-2]), tuple(x2.shape[:-2])
    if batch1 != batch2:  # broadcast the batch dims (their mismatch raises as the composite form's would)
        batch1 = tuple(_C.broadcast_shapes(batch1, batch2))
        x1, x2 = x1.expand(*batch1, *x1.shape[-2:]), x2.expand(*batch1, *x2.shape[-2:])
    p, r, m = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    count = 1
    for d in batch1:
        count *= d
    out = _C._cdist_euclidean(x1.reshape(count, p, m), x2.reshape(count, r, m))
    return out.reshape(*batch1, p, r)


def dist(input, other, p: float = 2):  # noqa: A002
    """dist(input, other, p=2) -> Tensor

    The p-norm of ``input - other`` (broadcast together) over all elements: a 0-dim tensor of their
    promoted dtype (the real dtype for complex ones). ``p`` is any real: 0 counts the differing
    elements, ``inf``/``-inf`` give the largest/smallest absolute difference.

    Example:
        >>> import flambeau_core as fc
        >>> fc.dist(fc.tensor([3.0, 0.0]), fc.tensor([0.0, 4.0])).item()
        5.0
    """
    for name, x in (("input", input), ("other", other)):
        if not is_tensor_like(x):  # a tensor-like (flambeau.overrides) runs through, its ops overridden
            raise TypeError(f"[dist] expected a Tensor as '{name}', got {type(x).__name__}")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"[dist] expected a real number p, got {type(p).__name__}")
    dtype = _C.result_type(input, other)
    if not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(
            f"[dist] expected floating-point or complex tensors, got dtypes {input.dtype.name} and {other.dtype.name}"
        )
    # vector_norm takes float32/float64 (and complex): half precision is computed in float32, as PyTorch accumulates
    wide = _C.float32 if dtype in (_C.float16, _C.bfloat16) else dtype
    try:
        difference = input.to(wide) - other.to(wide)
    except (RuntimeError, ValueError) as e:
        raise _C.FlambeauError(
            f"[dist] input of shape {tuple(input.shape)} and other of shape {tuple(other.shape)} do not broadcast"
        ) from e
    from flambeau_core import linalg

    norm = linalg.vector_norm(difference, ord=p)
    return norm if wide == dtype else norm.to(dtype)


def install() -> None:
    import flambeau_core

    flambeau_core.cdist = cdist
    flambeau_core.dist = dist
    _C.Tensor.dist = dist
