"""``renorm`` (function, method and in-place form) composed in Python: each slice along ``dim`` whose
p-norm exceeds ``maxnorm`` is scaled down to norm ``maxnorm``.

The scale is PyTorch's, ``maxnorm / (norm + 1e-7)``, so results agree to the last bits; autograd
differentiates through the norm (PyTorch's derivative too).
"""

from __future__ import annotations

import numbers

from flambeau_core import _C
from flambeau_core._composing import check_tensor, is_int


def renorm(input: _C.Tensor, p: float, dim: int, maxnorm: float) -> _C.Tensor:  # noqa: A002
    """renorm(input, p, dim, maxnorm) -> Tensor

    ``input`` with every sub-tensor along ``dim`` (``input.select(dim, i)``) whose ``p``-norm is above
    ``maxnorm`` rescaled to have norm ``maxnorm``; the others unchanged. ``input`` needs at least 2 dims
    and a floating dtype; ``p > 0`` (``inf`` too), ``maxnorm >= 0``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.renorm(fc.tensor([[3.0, 4.0], [0.3, 0.4]]), p=2, dim=0, maxnorm=1.0).tolist()
        [[0.6000000238418579, 0.800000011920929], [0.30000001192092896, 0.4000000059604645]]
    """
    check_tensor("renorm", input)
    for what, value in (("p", p), ("maxnorm", maxnorm)):
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise TypeError(f"[renorm] expected a number '{what}', got {type(value).__name__}")
    if not is_int(dim):
        raise TypeError(f"[renorm] expected an int 'dim', got {type(dim).__name__}")
    if not (input.is_floating_point() or input.is_complex()):
        raise TypeError(f"[renorm] expected a floating point or complex input, got {input.dtype}")
    if p <= 0:
        raise _C.FlambeauError(f"[renorm] non-positive-norm not supported: p={p}")
    if maxnorm < 0:
        raise _C.FlambeauError(f"[renorm] expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() < 2:
        raise _C.FlambeauError(f"[renorm] input needs at least 2 dimensions, got {input.dim()} dimensions")
    if not -input.dim() <= dim < input.dim():
        raise IndexError(
            f"[renorm] Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
            f"but got {dim})"
        )
    dim %= input.dim()
    if input.dtype in (_C.float16, _C.bfloat16):  # the norms in float32, as PyTorch accumulates them
        return _scaled(input.float(), p, dim, maxnorm).to(input.dtype)
    return _scaled(input, p, dim, maxnorm)


def _scaled(input: _C.Tensor, p: float, dim: int, maxnorm: float) -> _C.Tensor:  # noqa: A002
    others = [d for d in range(input.dim()) if d != dim]
    from flambeau_core import linalg  # imported after this module by flambeau_core's __init__

    norms = linalg.vector_norm(input, p, dim=others, keepdim=True)
    scale = _C.where(norms > maxnorm, maxnorm / (norms + 1e-7), _C.ones_like(norms))
    return input * scale


def renorm_(self: _C.Tensor, p: float, dim: int, maxnorm: float) -> _C.Tensor:
    """renorm_(p, dim, maxnorm) -> Tensor

    In-place :func:`renorm`.

    Example:
        >>> import flambeau_core as fc
        >>> fc.tensor([[3.0, 4.0], [0.3, 0.4]]).renorm_(2, 0, 10.0).tolist()
        [[3.0, 4.0], [0.30000001192092896, 0.4000000059604645]]
    """
    return self.copy_(renorm(self, p, dim, maxnorm))


def install() -> None:
    import flambeau_core

    flambeau_core.renorm = renorm
    _C.Tensor.renorm = renorm
    _C.Tensor.renorm_ = renorm_
