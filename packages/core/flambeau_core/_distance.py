"""``torch.cdist``: the p-norm distance between each row of one batch of row vectors and each of another.

Composed of a broadcast difference and ``linalg.vector_norm`` (whose gradient is
0 where a distance is 0, as PyTorch's cdist's), so autograd differentiates it.
"""

from __future__ import annotations

from flambeau_core import _C

COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """Distances ``(*batch, P, R)`` between the rows of ``x1`` ``(*batch, P, M)`` and ``x2`` ``(*batch, R, M)``.

    ``p`` in [0, inf] (0 counts the differing coordinates). The batch dims
    broadcast. ``compute_mode`` is accepted for PyTorch's signature: every mode
    computes the differences directly (PyTorch's matrix-product form for p=2
    differs from it only in rounding).

    Example:
        >>> import flambeau_core as fc
        >>> fc.cdist(fc.tensor([[0.0, 0.0], [3.0, 4.0]]), fc.tensor([[0.0, 0.0]])).tolist()
        [[0.0], [5.0]]
    """
    for name, x in (("x1", x1), ("x2", x2)):
        if not isinstance(x, _C.Tensor):
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
    from flambeau_core import linalg

    return linalg.vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), ord=p, dim=-1)


def install() -> None:
    import flambeau_core

    flambeau_core.cdist = cdist
