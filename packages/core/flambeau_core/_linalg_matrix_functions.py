"""The norms and matrix functions of flambeau.linalg.

``linalg.vector_norm``, ``matrix_norm``, ``norm``, ``cond``, ``matrix_power`` (by repeated squaring),
``matrix_exp`` (Note [matrix_exp by Pade 13]), ``vander`` and ``diagonal``, with the top-level
``matrix_power`` and ``matrix_exp``: composites of core ops, differentiated through the ops they call.
Re-exported by flambeau_core.linalg (and at the top level where torch has them).
"""

from __future__ import annotations

import math
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._linalg_common import (
    _COMPLEX,
    _FLOATS,
    _check_float,
    _check_matrix,
    _check_tensor,
    _copy_out,
    _eye,
    _shape,
)
from flambeau_core._linalg_decompositions import svdvals
from flambeau_core._linalg_solvers import inv, inv_ex


def _norm_dims(x: Tensor, dim: Any, op: str) -> list[int]:
    if dim is None:
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    res = []
    for d in dims:
        if not -max(x.dim(), 1) <= d < max(x.dim(), 1):
            raise IndexError(
                f"{op}: Dimension out of range (expected to be in range of [{-max(x.dim(), 1)}, "
                f"{max(x.dim(), 1) - 1}], but got {d})"
            )
        res.append(d % max(x.dim(), 1))
    if len(set(res)) != len(res):
        raise FlambeauError(f"{op}: dim {dims} appears multiple times in the list of dims")
    return res


def _amax(x: Tensor, dims: list[int], keepdim: bool) -> Tensor:
    """max over several dims (amax: a gradient split evenly between tied maxima, as PyTorch's inf-norms)."""
    if x.dim() == 0:
        return x
    return _C.amax(x, dims, keepdim)


def vector_norm(
    x: Tensor, ord: float = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Tensor | None = None
) -> Tensor:
    """The vector p-norm of x over `dim` (all elements when None), ord in R or +-inf (torch.linalg.vector_norm).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[3.0, -4.0], [1.0, 0.0]])
        >>> fb.linalg.vector_norm(x)
        tensor(5.0990)
        >>> fb.linalg.vector_norm(x, ord=float("inf"), dim=1)
        tensor([4., 1.])
    """
    if dtype is None and isinstance(x, Tensor) and x.dtype in (_C.float16, _C.bfloat16):
        # The float32 norm rounded once: PyTorch's CPU kernel accumulates a 16-bit input in float32.
        r = vector_norm(x.float(), ord, dim, keepdim).to(x.dtype)
        return _copy_out(r, out, "linalg.vector_norm")
    _check_float(x, "linalg.vector_norm", "x", complex_ok=True)
    if dtype is not None:
        x = x.to(dtype)
    dims = _norm_dims(x, dim, "linalg.vector_norm")
    if x.dim() == 0:
        dims = []
    if isinstance(ord, Tensor):
        ord = ord.item()
    if x.numel() == 0 and (ord == math.inf or ord < 0):
        raise FlambeauError(
            f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the operation does not "
            "have an identity"
        )
    a = x.abs()
    if ord == math.inf:
        r = _amax(a, dims, keepdim) if dims else a
    elif ord == -math.inf:
        r = -_amax(-a, dims, keepdim) if dims else a
    elif ord == 0:
        # The count of nonzeros, with |x| itself where x == 0: the result stays connected to x, with the
        # zero gradient PyTorch gives, instead of not requiring grad.
        nz = _C.where(a != 0, 1.0, a)
        r = _C.sum(nz, dims, keepdim) if dims else nz
    elif ord == 1:
        r = _C.sum(a, dims, keepdim) if dims else a
    elif ord == 2:
        sq = a * a if x.dtype.is_complex else x * x  # |z|^2: real results for complex x
        r = _root(_C.sum(sq, dims, keepdim), 2) if dims else a
    else:
        p = _masked_pow(a, ord) if 0 < ord < 1 else _C.pow(a, ord)
        r = _root(_C.sum(p, dims, keepdim), ord) if dims else a
    return _copy_out(r, out, "linalg.vector_norm")


def _masked_pow(a: Tensor, p: float) -> Tensor:
    """a ** p with a zero gradient where a == 0 (p < 1: its derivative p * a ** (p - 1) is inf there), as PyTorch."""
    nz = a != 0
    return _C.where(nz, _C.pow(_C.where(nz, a, 1.0), p), 0.0)


def _root(s: Tensor, p: float) -> Tensor:
    """s ** (1 / p) with a zero gradient where s == 0 (PyTorch's norm_backward: the norm of a zero vector
    has gradient 0, not the NaN of inf * 0). NaN stays NaN (NaN != 0)."""
    nz = s != 0
    safe = _C.where(nz, s, 1.0)
    return _C.where(nz, _C.sqrt(safe) if p == 2 else _C.pow(safe, 1.0 / p), 0.0)


def matrix_norm(
    A: Tensor,
    ord: Any = "fro",
    dim: tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,
    out: Tensor | None = None,
) -> Tensor:
    """Matrix norms: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2 over the two dims `dim` (torch.linalg.matrix_norm).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[1.0, -2.0], [3.0, 4.0]])
        >>> fb.linalg.matrix_norm(A).round(decimals=4)  # Frobenius
        tensor(5.4772)
        >>> fb.linalg.matrix_norm(A, ord=1), fb.linalg.matrix_norm(A, ord=float("inf"))
        (tensor(6.), tensor(7.))
    """
    _check_matrix(A, "linalg.matrix_norm", complex_ok=True)
    if dtype is not None:
        A = A.to(dtype)
    dims = _norm_dims(A, dim, "linalg.matrix_norm")
    if len(dims) != 2:
        raise FlambeauError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = dims
    if ord == "fro":
        r = vector_norm(A, 2, (d0, d1), keepdim)
    elif ord == "nuc" or ord in (2, -2):
        B = A.permute(*[i for i in range(A.dim()) if i not in dims], d0, d1)
        S = svdvals(B)
        if ord == "nuc":
            r = _C.sum(S, -1)
        elif S.shape[-1] == 0:  # an empty matrix: norm 0, and no smallest singular value (as PyTorch)
            if ord == -2:
                raise IndexError("linalg.matrix_norm: amin(): Expected reduction dim -1 to have non-zero size.")
            r = _C.zeros(list(S.shape[:-1]), dtype=S.dtype)
        elif ord == 2:
            r = _C.max(S, -1)[0]
        else:
            r = -_C.max(-S, -1)[0]
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    elif ord in (1, -1, math.inf, -math.inf):
        sum_dim, red_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = _C.sum(A.abs(), [sum_dim], True)
        if s.shape[red_dim] == 0:  # an empty matrix: norm 0, and no smallest sum (as PyTorch)
            if ord < 0:
                d = red_dim - 1 if sum_dim < red_dim and not keepdim else red_dim  # the dim PyTorch's amin names
                raise IndexError(f"linalg.matrix_norm: amin(): Expected reduction dim {d} to have non-zero size.")
            r = _C.zeros([1 if i == red_dim else n for i, n in enumerate(s.shape)], dtype=s.dtype)
        else:
            r = _amax(s, [red_dim], True) if ord > 0 else -_amax(-s, [red_dim], True)
        if not keepdim:
            r = r.squeeze(max(dims)).squeeze(min(dims))
    else:
        raise FlambeauError(f"linalg.matrix_norm: Order {ord} not supported.")
    return _copy_out(r, out, "linalg.matrix_norm")


def norm(
    A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Tensor | None = None
) -> Tensor:
    """Vector or matrix norm (torch.linalg.norm): a matrix norm for a str ord or a 2-D dim, else a vector norm.

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([3.0, -4.0])
        >>> fb.linalg.norm(x), fb.linalg.norm(x, ord=1)
        (tensor(5.), tensor(7.))
        >>> fb.linalg.norm(fb.tensor([[1.0, 2.0], [2.0, 4.0]]), ord="nuc").round(decimals=4)
        tensor(5.)
    """
    _check_float(A, "linalg.norm", complex_ok=True)
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
    if (
        isinstance(ord, str)
        or (isinstance(dim, tuple) and len(dim) == 2)
        or (dim is None and ord is not None and A.dim() == 2)
    ):
        if dim is None:
            if A.dim() != 2:
                raise FlambeauError(
                    f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.dim()}D."
                )
            dim = (-2, -1)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if ord is not None and dim is None and A.dim() != 1:
        raise FlambeauError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.dim()}D."
        )
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


def matrix_power(A: Tensor, n: int, *, out: Tensor | None = None) -> Tensor:
    """A^n by repeated squaring; n < 0 raises the inverse (torch.linalg.matrix_power).

    Any dtype matmul takes for n >= 0; float32, float64, complex64 or complex128 for n < 0.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[1.0, 1.0], [0.0, 1.0]])
        >>> fb.linalg.matrix_power(A, 3)
        tensor([[1., 3.],
                [0., 1.]])
        >>> fb.linalg.matrix_power(A, -1)
        tensor([[ 1., -1.],
                [ 0.,  1.]])
    """
    _check_tensor(A, "linalg.matrix_power")
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise FlambeauError(f"linalg.matrix_power: A must be batches of square matrices, but got shape {_shape(A)}")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    if n == 0:
        # The identity written over a copy of A (PyTorch's): a gradient of A exists, and is zero.
        ident = A.clone(memory_format=_C.contiguous_format).copy_(_eye(A.shape[-1], A).expand(*A.shape))
        return _copy_out(ident, out, "linalg.matrix_power")
    if A.dtype == _C.bool and n >= 2 and A.numel() > 0:
        # PyTorch's products have no bool kernel ("addmm_impl_cpu_" not implemented for 'Bool'); n = 0 and
        # n = 1 (no product) and empty matrices go through there as here.
        raise NotImplementedError("linalg.matrix_power: not implemented for bool tensors when n >= 2 (as PyTorch's)")
    if n < 0:
        # inv's dtype check (float or complex, as PyTorch's linalg.inv) names the op that refuses
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else _C.matmul(result, base)
        n >>= 1
        if n:
            base = _C.matmul(base, base)
    if result is A:  # n = 1: a new tensor, as PyTorch's (A.clone(contiguous)), never A itself
        result = A.clone(memory_format=_C.contiguous_format)
    return _copy_out(result, out, "linalg.matrix_power")


# Note [matrix_exp by Pade 13]: Higham's scaling and squaring ("The scaling and squaring method for the
# matrix exponential revisited", 2005): A is scaled by 2^-s until its 1-norm is at most theta_13, the
# [13/13] Pade approximant is evaluated with six products and one solve, and the result is squared s times.
# Matrices of a batch get their own s; the batch is squared max(s) times, each matrix only while it needs it.
_PADE13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)


_THETA13 = 5.371920351148152


def matrix_exp(A: Tensor) -> Tensor:
    r"""The matrix exponential e^A of square matrices (*, n, n) (torch.linalg.matrix_exp).

    Scaling and squaring with a [13/13] Pade approximant (Note [matrix_exp by Pade 13]); float32, float64 and
    complex, batched; differentiable through the products and the solve it is made of.

    Example:
        >>> import flambeau_core as fc
        >>> E = fc.linalg.matrix_exp(fc.tensor([[0.0, 0.0], [0.0, 1.0]], dtype=fc.float64))
        >>> [round(v, 6) for v in E.diagonal().tolist()]
        [1.0, 2.718282]
    """
    op = "linalg.matrix_exp"
    _check_tensor(A, op)
    if A.dtype not in (*_FLOATS, *_COMPLEX):
        raise TypeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype}")
    if A.dim() < 2:
        raise FlambeauError(f"{op}: The input tensor A must have at least 2 dimensions (got shape {_shape(A)}).")
    _check_matrix(A, op, square=True, complex_ok=True)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    if A.dtype in (_C.float32, _C.complex64):
        # Squaring multiplies rounding errors by the result's norm: the small entries of a large e^A lose
        # every digit in single precision, so the single-precision types are computed in double.
        wide = _C.float64 if A.dtype == _C.float32 else _C.complex128
        return matrix_exp(A.to(wide)).to(A.dtype)
    # the 1-norm (the largest column sum) only picks s: no gradient flows through it
    norm1 = _C.sum((A.detach() if A.requires_grad else A).abs(), [-2]).amax(-1)
    s = _C.ceil(_C.log2(norm1 / _THETA13)).clamp(min=0)
    s = _C.where(_C.isfinite(s), s, _C.zeros_like(s)).to(_C.int64)
    scale = _C.pow(_C.full([], 2.0, dtype=norm1.dtype), -s.to(norm1.dtype)).to(A.dtype)
    X = A * scale.unsqueeze(-1).unsqueeze(-1)
    b = _PADE13
    eye = _eye(n, A)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 + b[0] * eye
    R = _C._linalg_solve(V - U, (V + U).contiguous())
    steps = int(s.max().item())
    for k in range(steps):
        keep = (s > k).unsqueeze(-1).unsqueeze(-1)
        R = _C.where(keep, R @ R, R)
    return R


def _top_matrix_exp(input: Tensor) -> Tensor:
    """torch.matrix_exp: linalg.matrix_exp.

    Example:
        >>> import flambeau as fb
        >>> fb.matrix_exp(fb.zeros(2, 2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return matrix_exp(input)


def cond(A: Tensor, p: Any = None, *, out: Tensor | None = None) -> Tensor:
    r"""Condition number of matrices in the norm ``p`` (torch.linalg.cond); a real tensor of A's batch shape.

    ``p`` None or 2 (the default: s_max / s_min), -2 (s_min / s_max) take any (*, m, n); 'fro', 'nuc', inf,
    -inf, 1 and -1 (``norm(A) * norm(inv(A))``) take square matrices and give inf where LU finds A singular
    (PyTorch gives nan for ``p='nuc'`` of a zero matrix).

    Example:
        >>> import flambeau_core as fc
        >>> fc.linalg.cond(fc.tensor([[1.0, 0.0], [0.0, 4.0]])).item()
        4.0
    """
    op = "linalg.cond"
    _check_matrix(A, op, complex_ok=True)
    if p is None or p in (2, -2):
        S = svdvals(A)
        if S.shape[-1] == 0:
            r = _C.zeros(*A.shape[:-2], dtype=S.dtype)
        else:
            r = S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
        return _copy_out(r, out, op)
    if p not in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        raise FlambeauError(f"{op} got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise FlambeauError(
            f"{op}(ord={p}): A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )
    if A.numel() == 0:
        real = _C.float32 if A.dtype in (_C.float32, _C.complex64) else _C.float64
        return _copy_out(_C.zeros(*A.shape[:-2], dtype=real), out, op)
    Ainv, info = inv_ex(A)
    singular = (info > 0).unsqueeze(-1).unsqueeze(-1)
    r = matrix_norm(A, p) * matrix_norm(_C.where(singular, _C.zeros_like(Ainv), Ainv), p)
    inf = _C.full([], math.inf, dtype=r.dtype)
    return _copy_out(_C.where(info > 0, inf, r), out, op)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    r"""Vandermonde matrix with increasing powers x^0, x^1, ..., x^(N-1) in the last dim (torch.linalg.vander).

    x (*, n) gives (*, n, N) (a 0-d x is one point: (1, N)); N defaults to n and must be greater than 1.
    Integer x gives int64.

    Example:
        >>> import flambeau_core as fc
        >>> fc.linalg.vander(fc.tensor([1, 2, 3])).tolist()
        [[1, 1, 1], [1, 2, 4], [1, 3, 9]]
    """
    op = "linalg.vander"
    _check_tensor(x, op, "x")
    if x.dtype in (_C.bool, _C.float16, _C.bfloat16):
        raise TypeError(f"{op}: supports floating point, complex, and integer tensors, but got {x.dtype}")
    if x.dim() == 0:
        x = x.reshape(1)  # a 0-d x is one point, as PyTorch's
    if N is None:
        N = x.shape[-1]
    if not isinstance(N, int) or isinstance(N, bool):
        raise TypeError(f"{op}: N must be an int, got {type(N).__name__}")
    if N <= 1:
        raise FlambeauError(f"{op}: N must be greater than 1, got N={N}")
    if N > 2**62:
        raise FlambeauError(f"{op}: N={N} columns cannot be allocated")
    col = x.unsqueeze(-1)
    if x.dtype not in (*_FLOATS, *_COMPLEX):
        col = col.to(_C.int64)  # integers widen to int64, as PyTorch's (its cumprod's promotion)
    powers = _C.cumprod(col.expand(*x.shape, N - 1), -1)
    return _C.cat([_C.ones_like(col), powers], -1)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    r"""A view of the diagonals of A over ``dim1`` and ``dim2`` (torch.linalg.diagonal: torch.diagonal with the
    matrix dims last by default).

    Example:
        >>> import flambeau_core as fc
        >>> fc.linalg.diagonal(fc.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [1.0, 4.0]
    """
    _check_tensor(A, "linalg.diagonal")
    nd = A.dim()
    for d in (dim1, dim2):
        if not -nd <= d < nd:
            raise IndexError(
                f"linalg.diagonal: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})"
            )
    return _C.diagonal(A, offset, dim1, dim2)


def _top_matrix_power(input: Tensor, n: int, *, out: Tensor | None = None) -> Tensor:
    """torch.matrix_power: the n-th power of square matrices (n < 0 inverts; as linalg.matrix_power).

    Example:
        >>> import flambeau as fb
        >>> fb.tensor([[1, 1], [0, 1]]).matrix_power(3).tolist()
        [[1, 3], [0, 1]]
    """
    return _copy_out(matrix_power(input, n), out, "matrix_power")
