"""flambeau.linalg: linear algebra with PyTorch's names and semantics.

The factorizations run LAPACK (scipy-openblas32) through the primitives
``_linalg_inv``, ``_linalg_solve``, ``_linalg_slogdet``, ``_linalg_cholesky``,
``_linalg_qr``, ``_linalg_svd``, ``_linalg_eigh`` and ``_linalg_lstsq`` of core's
op table (src/cpu/linalg/lapack.cpp), which carry their own derivatives; everything
here is a composite of ops, so autograd differentiates it through the ops it
calls. Every function takes batches ``(*, m, n)`` of float32 or float64
matrices, and complex64/complex128 ones (inv, solve, det, slogdet,
logdet, cholesky, qr, svd, svdvals, eigh, eigvalsh, eig, eigvals, lstsq, pinv,
matrix_rank and the norms).

Example:
    >>> import flambeau_core as fc
    >>> A = fc.tensor([[4.0, 1.0], [1.0, 3.0]])
    >>> round(fc.linalg.det(A).item(), 4)
    11.0
"""

from __future__ import annotations

import collections
import math
import re
import string
from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor

__all__ = [
    "matmul",
    "tensordot",
    "vecdot",
    "outer",
    "einsum",
    "norm",
    "vector_norm",
    "matrix_norm",
    "det",
    "slogdet",
    "inv",
    "solve",
    "lstsq",
    "cholesky",
    "qr",
    "svd",
    "svdvals",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "pinv",
    "matrix_rank",
    "matrix_power",
    "cross",
    "multi_dot",
    "solve_triangular",
    "cholesky_ex",
    "inv_ex",
    "solve_ex",
    "matrix_exp",
    "cond",
    "vander",
    "diagonal",
    "tensorinv",
    "tensorsolve",
    "householder_product",
]

# The named tuples PyTorch returns (torch.return_types.*), with its field names.
SlogdetResult = collections.namedtuple("linalg_slogdet", ["sign", "logabsdet"])
QRResult = collections.namedtuple("linalg_qr", ["Q", "R"])
SVDResult = collections.namedtuple("linalg_svd", ["U", "S", "Vh"])
EighResult = collections.namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
EigResult = collections.namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
LstsqResult = collections.namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
SvdResultV = collections.namedtuple("svd", ["U", "S", "V"])

_FLOATS = (_C.float32, _C.float64)
_COMPLEX = (_C.complex64, _C.complex128)  # the ops widened to complex take these too


def _shape(t: Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _check_tensor(x: Any, op: str, what: str = "A") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor for {what}, got {type(x).__name__}")


def _check_float(x: Any, op: str, what: str = "A", complex_ok: bool = False) -> None:
    _check_tensor(x, op, what)
    if complex_ok and x.dtype in _COMPLEX:
        return
    if x.dtype not in _FLOATS:
        also = "; complex64 and complex128 are accepted too" if complex_ok else ""
        raise TypeError(
            f"{op}: expected a float32 or float64 tensor for {what}, got {x.dtype} (shape {_shape(x)}){also}"
        )


def _check_matrix(x: Any, op: str, what: str = "A", square: bool = False, complex_ok: bool = False) -> None:
    _check_float(x, op, what, complex_ok)
    if x.dim() < 2:
        raise FlambeauError(f"{op}: {what} must have at least 2 dimensions, got shape {_shape(x)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise FlambeauError(
            f"{op}: {what} must be batches of square matrices, but they are "
            f"{x.shape[-2]} by {x.shape[-1]} matrices (shape {_shape(x)})"
        )


def _mT(x: Tensor) -> Tensor:
    return x.transpose(-2, -1)


def _needs_grad(*ts: Tensor) -> bool:
    return _C.is_grad_enabled() and any(t.requires_grad for t in ts)


def _broadcast_shape(a: Sequence[int], b: Sequence[int], op: str) -> list[int]:
    n = max(len(a), len(b))
    out = []
    for i in range(n):
        x = a[len(a) - n + i] if len(a) - n + i >= 0 else 1
        y = b[len(b) - n + i] if len(b) - n + i >= 0 else 1
        if x != y and x != 1 and y != 1:
            raise FlambeauError(f"{op}: shapes {tuple(a)} and {tuple(b)} cannot be broadcast")
        out.append(y if x == 1 else x)
    return out


def _copy_out(result: Tensor, out: Tensor | None, op: str = "linalg", exact: bool = True) -> Tensor:
    """Writes result into out= as the generated bindings do (Note [out= dtypes] in gen_core.py): out's
    dtype must be the result's (exact, as PyTorch's linalg ops) or one it casts to; out of another
    shape is resized; RuntimeError when autograd would record (Note [out= and autograd])."""
    if out is None:
        return result
    return _C._copy_to_out(op, result, out, exact)


def _copy_outs(results: Sequence[Tensor], out: Any, op: str) -> tuple[Tensor, ...]:
    """out=(a, b, ...) for an op returning several tensors: each must have its result's dtype."""
    if not isinstance(out, (tuple, list)) or not all(isinstance(t, Tensor) for t in out):
        raise TypeError(f"[{op}] out= must be a tuple of {len(results)} tensors, got {type(out).__name__}")
    if len(out) != len(results):
        raise TypeError(f"[{op}] out= must be a tuple of {len(results)} tensors, got {len(out)}")
    for r, o in zip(results, out, strict=True):
        _C._check_out_autograd(op, r, o)
    return tuple(_C._copy_to_out(op, r, o, True) for r, o in zip(results, out, strict=True))


def _eye(n: int, like: Tensor) -> Tensor:
    r = _C.arange(n).unsqueeze(-1)
    return (r == _C.arange(n)).to(like.dtype)


# ---- products ----

matmul = _C.matmul


def outer(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Outer product of two 1-D tensors (torch.outer)."""
    _check_tensor(input, "outer", "input")
    _check_tensor(vec2, "outer", "vec2")
    if input.dim() != 1 or vec2.dim() != 1:
        raise FlambeauError(f"outer: expected two 1-D tensors, got shapes {_shape(input)} and {_shape(vec2)}")
    return _copy_out(input.unsqueeze(-1) * vec2, out, "outer", exact=False)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """Dot product of vectors along `dim`, broadcasting the other dims (torch.linalg.vecdot)."""
    _check_tensor(x, "linalg.vecdot", "x")
    _check_tensor(y, "linalg.vecdot", "y")
    nd = max(x.dim(), y.dim())
    d = dim + nd if dim < 0 else dim
    if not 0 <= d < nd:
        raise IndexError(f"linalg.vecdot: dim {dim} out of range for tensors of {nd} dimensions")
    ax = d - (nd - x.dim())
    ay = d - (nd - y.dim())
    if ax < 0 or ay < 0 or x.shape[ax] != y.shape[ay]:
        raise FlambeauError(
            f"linalg.vecdot: x and y must have the same size along dim {dim}, got shapes {_shape(x)} and {_shape(y)}"
        )
    return _copy_out(_C.sum((x.conj() if x.dtype in _COMPLEX else x) * y, dim), out, "linalg.vecdot")


def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Tensor | None = None) -> Tensor:
    """Contraction of a's and b's dims `dims` (an int: the last/first `dims` dims; or two lists)."""
    _check_tensor(a, "tensordot", "a")
    _check_tensor(b, "tensordot", "b")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise FlambeauError(f"tensordot: expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise FlambeauError(f"tensordot: dims={dims} exceeds the dimensions of a {_shape(a)} or b {_shape(b)}")
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    else:
        if len(dims) != 2:
            raise FlambeauError(f"tensordot: dims must be an int or a pair of lists, got {dims!r}")
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise FlambeauError(f"tensordot: both dimension lists should have same length, got {da} and {db}")

    def norm_dims(ds: list[int], t: Tensor, name: str) -> list[int]:
        res = []
        for d in ds:
            if not -t.dim() <= d < t.dim():
                raise IndexError(f"tensordot: dim {d} out of range for {name} of shape {_shape(t)}")
            res.append(d % t.dim())
        if len(set(res)) != len(res):
            raise FlambeauError(f"tensordot: repeated dim in {ds} for {name}")
        return res

    da = norm_dims(da, a, "a")
    db = norm_dims(db, b, "b")
    for i, j in zip(da, db, strict=True):
        if a.shape[i] != b.shape[j]:
            raise FlambeauError(
                f"tensordot: contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                f"and second has size {b.shape[j]} in dim {j} (shapes {_shape(a)} and {_shape(b)})"
            )
    free_a = [i for i in range(a.dim()) if i not in da]
    free_b = [j for j in range(b.dim()) if j not in db]
    k = math.prod(a.shape[i] for i in da)
    ma = math.prod(a.shape[i] for i in free_a)
    nb = math.prod(b.shape[j] for j in free_b)
    A = a.permute(*(free_a + da)).reshape(ma, k)
    B = b.permute(*(db + free_b)).reshape(k, nb)
    res = _C.mm(A, B).reshape(*([a.shape[i] for i in free_a] + [b.shape[j] for j in free_b]))
    return _copy_out(res, out, "tensordot")


def multi_dot(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Product of a chain of matrices in the cheapest order (first and last may be 1-D)."""
    ts = list(tensors)
    if len(ts) < 2:
        raise FlambeauError(f"linalg.multi_dot: expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        _check_tensor(t, "linalg.multi_dot", f"tensors[{i}]")
        want = (1, 2) if i in (0, len(ts) - 1) else (2,)
        if t.dim() not in want:
            raise FlambeauError(
                f"linalg.multi_dot: tensor {i} must be {' or '.join(f'{w}D' for w in want)} but got {t.dim()}D "
                f"(shape {_shape(t)})"
            )
    first_1d, last_1d = ts[0].dim() == 1, ts[-1].dim() == 1
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(len(ts) - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise FlambeauError(
                f"linalg.multi_dot: tensors {i} and {i + 1} with shapes {_shape(ts[i])} and {_shape(ts[i + 1])} "
                "cannot be multiplied"
            )
        if ts[i].dtype != ts[i + 1].dtype:
            raise TypeError(
                f"linalg.multi_dot: all tensors must have the same dtype, got {ts[i].dtype} and {ts[i + 1].dtype}"
            )
    n = len(ts)
    p = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    # Matrix-chain order by dynamic programming (cost in multiply-adds).
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = -1
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + p[i] * p[s + 1] * p[j + 1]
                if cost[i][j] < 0 or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def chain(i: int, j: int) -> Tensor:
        if i == j:
            return ts[i]
        s = split[i][j]
        return _C.mm(chain(i, s), chain(s + 1, j))

    res = chain(0, n - 1)
    if first_1d:
        res = res.squeeze(0)
    if last_1d:
        res = res.squeeze(-1)
    return _copy_out(res, out, "linalg.multi_dot")


def _parse_einsum(equation: str, operands: Sequence[Tensor]) -> tuple[list[list[str]], list[str]]:
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->", 1)
        explicit = True
    else:
        lhs, rhs, explicit = eq, "", False
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise FlambeauError(
            "[einsum] more operands were provided than specified in the equation"
            if len(operands) > len(terms)
            else "[einsum] fewer operands were provided than specified in the equation"
        )
    letters = set(string.ascii_letters)
    ell_dims = 0
    parsed: list[list[str]] = []
    for t, term in zip(operands, terms, strict=True):
        labels: list[str] = []
        i = 0
        has_ell = False
        while i < len(term):
            if term.startswith("...", i):
                if has_ell:
                    raise FlambeauError(f"[einsum] found more than one '...' in operand term '{term}'")
                has_ell = True
                labels.append("...")
                i += 3
            elif term[i] in letters:
                labels.append(term[i])
                i += 1
            else:
                raise FlambeauError(f"[einsum] invalid subscript given at index {i} in the equation string '{term}'")
        nlab = len(labels) - (1 if has_ell else 0)
        if (has_ell and t.dim() < nlab) or (not has_ell and t.dim() != nlab):
            raise FlambeauError(
                f"[einsum] the number of subscripts in the equation ({nlab}) does not match the number of "
                f"dimensions ({t.dim()}) for operand of shape {_shape(t)}"
                + (" and no ellipsis was given" if not has_ell else "")
            )
        if has_ell:
            k = t.dim() - nlab
            ell_dims = max(ell_dims, k)
            pos = labels.index("...")
            # Broadcast dims align from the right (as PyTorch/NumPy): named by their distance from the end.
            labels[pos : pos + 1] = [f"\x00{k - j}" for j in range(k)]
        parsed.append(labels)
    ell = [f"\x00{ell_dims - j}" for j in range(ell_dims)]
    if explicit:
        out: list[str] = []
        i = 0
        seen_ell = False
        while i < len(rhs):
            if rhs.startswith("...", i):
                if seen_ell:
                    raise FlambeauError("[einsum] found more than one '...' in the output")
                seen_ell = True
                out.extend(ell)
                i += 3
            elif rhs[i] in letters:
                if rhs[i] in out:
                    raise FlambeauError(f"[einsum] output subscript {rhs[i]} appears more than once in the output")
                if not any(rhs[i] in p for p in parsed):
                    raise FlambeauError(
                        f"[einsum] output subscript {rhs[i]} does not appear in the equation for any input operand"
                    )
                out.append(rhs[i])
                i += 1
            else:
                raise FlambeauError(f"[einsum] invalid subscript given at index {i} in the output '{rhs}'")
        if ell_dims and not seen_ell:
            # PyTorch: '...' dims of the inputs must appear in the output when given explicitly
            out = out  # summed over, as NumPy does
    else:
        counts = collections.Counter(lab for p in parsed for lab in p if not lab.startswith("\x00"))
        out = ell + sorted(lab for lab, c in counts.items() if c == 1)
    return parsed, out


def _diagonalize(t: Tensor, labels: list[str]) -> tuple[Tensor, list[str]]:
    """Takes the diagonal over repeated labels of one operand (x * eye, summed)."""
    while True:
        dup = next((lab for lab in labels if labels.count(lab) > 1), None)
        if dup is None:
            return t, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        if t.shape[i] != t.shape[j]:
            raise FlambeauError(
                f"[einsum] subscript {dup} is repeated for operand of shape {_shape(t)} but the sizes don't match, "
                f"{t.shape[i]} != {t.shape[j]}"
            )
        n = t.shape[i]
        shape = [1] * t.dim()
        shape[i] = shape[j] = n
        eye = _eye(n, t)
        if i > j:
            i, j = j, i
        eye = eye.reshape(*shape)
        t = _C.sum(t * eye, j)
        labels = labels[:j] + labels[j + 1 :]


def _sum_out(t: Tensor, labels: list[str], keep: set[str]) -> tuple[Tensor, list[str]]:
    drop = [i for i, lab in enumerate(labels) if lab not in keep]
    if drop:
        t = _C.sum(t, drop)
        labels = [lab for lab in labels if lab in keep]
    return t, labels


def _contract(a: Tensor, la: list[str], b: Tensor, lb: list[str], keep: set[str]) -> tuple[Tensor, list[str]]:
    """Contracts two operands over their shared labels not in `keep` with one batched matmul."""
    sizes: dict[str, int] = {}
    for t, ls in ((a, la), (b, lb)):
        for lab, s in zip(ls, t.shape, strict=True):
            if lab in sizes and sizes[lab] != s and s != 1 and sizes[lab] != 1:
                name = "..." if lab.startswith("\x00") else lab
                raise FlambeauError(
                    f"[einsum] operands do not broadcast with remapped shapes (original->remapped): subscript "
                    f"{name} has size {sizes[lab]} for one operand and {s} for another"
                )
            if lab not in sizes or sizes[lab] == 1:
                sizes[lab] = s
    batch = [lab for lab in la if lab in lb and lab in keep]
    contr = [lab for lab in la if lab in lb and lab not in keep]
    a_only = [lab for lab in la if lab not in lb]
    b_only = [lab for lab in lb if lab not in la]

    def arrange(t: Tensor, ls: list[str], order: list[str]) -> Tensor:
        t = t.permute(*[ls.index(lab) for lab in order])
        target = [sizes[lab] if lab in batch or lab in contr else t.shape[i] for i, lab in enumerate(order)]
        if list(t.shape) != target:
            t = t.expand(*target)
        return t

    A = arrange(a, la, batch + a_only + contr)
    B = arrange(b, lb, batch + contr + b_only)
    bs = [sizes[lab] for lab in batch]
    nb, m = math.prod(bs), math.prod(A.shape[len(batch) + i] for i in range(len(a_only)))
    k = math.prod(sizes[lab] for lab in contr)
    n = math.prod(B.shape[len(batch) + len(contr) + i] for i in range(len(b_only)))
    r = _C.matmul(A.reshape(nb, m, k), B.reshape(nb, k, n))
    out_shape = bs + list(A.shape[len(batch) : len(batch) + len(a_only)]) + list(B.shape[len(batch) + len(contr) :])
    return r.reshape(*out_shape), batch + a_only + b_only


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation (torch.einsum): explicit or implicit output, '...', repeated subscripts.

    Operands are contracted left to right, each pair with one batched matmul
    (permute/reshape/bmm), labels summed out as soon as no later operand or the
    output needs them.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"[einsum] the equation must be a str, got {type(equation).__name__}")
    if not operands:
        raise FlambeauError("[einsum] must provide at least one operand")
    for i, t in enumerate(operands):
        _check_tensor(t, "einsum", f"operand {i}")
    parsed, out = _parse_einsum(equation, operands)
    ts = list(operands)
    for i in range(len(ts)):
        ts[i], parsed[i] = _diagonalize(ts[i], parsed[i])
    out_set = set(out)

    def later(i: int) -> set[str]:
        s = set(out_set)
        for p in parsed[i + 1 :]:
            s.update(p)
        return s

    cur, cl = _sum_out(ts[0], parsed[0], later(0))
    for i in range(1, len(ts)):
        keep = later(i)
        b, lb = _sum_out(ts[i], parsed[i], keep | set(cl))
        cur, cl = _contract(cur, cl, b, lb, keep)
    cur, cl = _sum_out(cur, cl, out_set)
    # Labels of the output that are size-1 broadcast leftovers keep their size; order as requested.
    res = cur.permute(*[cl.index(lab) for lab in out]) if cl else cur
    return res


# ---- norms ----


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
    """The vector p-norm of x over `dim` (all elements when None), ord in R or +-inf (torch.linalg.vector_norm)."""
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
        r = _C.sum((a != 0).to(a.dtype), dims, keepdim) if dims else (a != 0).to(a.dtype)
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
    """Matrix norms: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2 over the two dims `dim` (torch.linalg.matrix_norm)."""
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
        elif ord == 2:
            r = _C.max(S, -1)[0]
        else:
            r = -_C.max(-S, -1)[0]
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    elif ord in (1, -1, math.inf, -math.inf):
        sum_dim, red_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = _C.sum(A.abs(), [sum_dim], True)
        r = _amax(s, [red_dim], True) if ord > 0 else -_amax(-s, [red_dim], True)
        if not keepdim:
            r = r.squeeze(max(dims)).squeeze(min(dims))
    else:
        raise FlambeauError(f"linalg.matrix_norm: Order {ord} not supported.")
    return _copy_out(r, out, "linalg.matrix_norm")


def norm(
    A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Tensor | None = None
) -> Tensor:
    """Vector or matrix norm (torch.linalg.norm): a matrix norm for a str ord or a 2-D dim, else a vector norm."""
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


# ---- factorizations and solvers ----


def slogdet(A: Tensor, *, out: Any = None) -> SlogdetResult:
    """Sign and log|det| of square matrices (torch.linalg.slogdet)."""
    _check_matrix(A, "linalg.slogdet", square=True, complex_ok=True)
    logabs, sign = _C._linalg_slogdet(A)
    if out is not None:
        return SlogdetResult(*_copy_outs((sign, logabs), out, "linalg.slogdet"))
    return SlogdetResult(sign, logabs)


def det(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Determinant of square matrices (torch.linalg.det), from the LU factorization."""
    _check_matrix(A, "linalg.det", square=True, complex_ok=True)
    logabs, sign = _C._linalg_slogdet(A)
    return _copy_out(sign * _C.exp(logabs), out, "linalg.det")


def logdet(A: Tensor) -> Tensor:
    """log(det(A)): NaN for a negative determinant, -inf for zero (torch.logdet).

    Complex A: the complex logarithm log|det| + i angle(det) (-inf where det is 0), as PyTorch's.
    """
    _check_matrix(A, "logdet", square=True, complex_ok=True)
    logabs, sign = _C._linalg_slogdet(A)
    if A.dtype in _COMPLEX:
        return _C.complex(logabs, _C.angle(sign))
    nan = _C.full([], math.nan, dtype=A.dtype)
    return _C.where(sign < 0, nan, logabs)


def inv(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inverse of square matrices (torch.linalg.inv); a singular matrix raises."""
    _check_matrix(A, "linalg.inv", square=True, complex_ok=True)
    return _copy_out(_C._linalg_inv(A), out, "linalg.inv")


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Tensor | None = None) -> Tensor:
    """X with A X = B (left) or X A = B, batch dims broadcast; B may be a (batch of) vector(s)."""
    _check_matrix(A, "linalg.solve", square=True, complex_ok=True)
    _check_float(B, "linalg.solve", "B", complex_ok=True)
    if A.dtype != B.dtype:
        raise TypeError(
            f"linalg.solve: Expected A and B to have the same dtype, but found A of type {A.dtype} "
            f"and B of type {B.dtype} instead"
        )
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        B = B.unsqueeze(-1)
    if B.dim() < 2:
        raise FlambeauError(f"linalg.solve: B must have at least 1 dimension, got shape {_shape(B)}")
    n = A.shape[-1]
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != n or (vector and not left):
        raise FlambeauError(
            f"linalg.solve: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
            f"({_shape(A)} and {_shape(B.squeeze(-1) if vector else B)})"
        )
    batch = _broadcast_shape(A.shape[:-2], B.shape[:-2], "linalg.solve")
    Ab = A.expand(*batch, n, n)
    Bb = B.expand(*batch, *B.shape[-2:])
    if left:
        X = _C._linalg_solve(Ab, Bb)
    else:
        X = _mT(_C._linalg_solve(_mT(Ab), _mT(Bb)))
    if vector:
        X = X.squeeze(-1)
    return _copy_out(X, out, "linalg.solve")


def cholesky(A: Tensor, *, upper: bool = False, out: Tensor | None = None) -> Tensor:
    """Cholesky factor L (A = L L^T) or U (upper=True, A = U^T U) of symmetric positive-definite matrices."""
    _check_matrix(A, "linalg.cholesky", square=True, complex_ok=True)
    return _copy_out(_C._linalg_cholesky(A, upper), out, "linalg.cholesky")


def qr(A: Tensor, mode: str = "reduced", *, out: Any = None) -> QRResult:
    """QR factorization (torch.linalg.qr): mode 'reduced' (default), 'complete' or 'r' (Q empty).

    Complex A: unitary Q and R with a real diagonal (LAPACK geqrf/ungqr), as PyTorch's."""
    _check_matrix(A, "linalg.qr", complex_ok=True)
    if mode not in ("reduced", "complete", "r"):
        raise FlambeauError(
            f"linalg.qr: qr received unrecognized mode '{mode}' "
            "but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    Q, R = _C._linalg_qr(A, mode)
    if out is not None:
        return QRResult(*_copy_outs((Q, R), out, "linalg.qr"))
    return QRResult(Q, R)


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None, out: Any = None) -> SVDResult:
    """A = U diag(S) Vh (torch.linalg.svd), S descending; LAPACK's gesdd. Complex A: S real, U and Vh complex."""
    _check_matrix(A, "linalg.svd", complex_ok=True)
    if driver is not None:
        raise FlambeauError("linalg.svd: keyword argument `driver=` is only supported on CUDA inputs.")
    U, S, Vh = _C._linalg_svd(A, full_matrices, True)
    if out is not None:
        return SVDResult(*_copy_outs((U, S, Vh), out, "linalg.svd"))
    return SVDResult(U, S, Vh)


def svdvals(A: Tensor, *, driver: str | None = None, out: Tensor | None = None) -> Tensor:
    """Singular values, descending (torch.linalg.svdvals); real for complex A."""
    _check_matrix(A, "linalg.svdvals", complex_ok=True)
    if driver is not None:
        raise FlambeauError("linalg.svdvals: keyword argument `driver=` is only supported on CUDA inputs.")
    # The derivative needs the singular vectors: compute them only then.
    S = _C._linalg_svd(A, False, _needs_grad(A))[1]
    return _copy_out(S, out, "linalg.svdvals")


def eigh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices from their UPLO triangle."""
    _check_matrix(A, "linalg.eigh", square=True, complex_ok=True)
    if UPLO not in ("L", "U", "l", "u"):
        raise FlambeauError(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    L, V = _C._linalg_eigh(A, UPLO, True)
    if out is not None:
        return EighResult(*_copy_outs((L, V), out, "linalg.eigh"))
    return EighResult(L, V)


def eigvalsh(A: Tensor, UPLO: str = "L", *, out: Tensor | None = None) -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices (torch.linalg.eigvalsh)."""
    _check_matrix(A, "linalg.eigvalsh", square=True, complex_ok=True)
    if UPLO not in ("L", "U", "l", "u"):
        raise FlambeauError(f"linalg.eigvalsh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return _copy_out(_C._linalg_eigh(A, UPLO, _needs_grad(A))[0], out, "linalg.eigvalsh")


def _check_eig_input(A: Any, op: str) -> None:
    _check_tensor(A, op)
    if A.dtype not in (*_FLOATS, _C.complex64, _C.complex128):
        raise TypeError(
            f"{op}: expected a float32, float64, complex64 or complex128 tensor for A, "
            f"got {A.dtype} (shape {_shape(A)})"
        )
    if A.dim() < 2:
        raise FlambeauError(f"{op}: A must have at least 2 dimensions, got shape {_shape(A)}")
    if A.shape[-1] != A.shape[-2]:
        raise FlambeauError(
            f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices "
            f"(shape {_shape(A)})"
        )


def eig(A: Tensor, *, out: Any = None) -> EigResult:
    """Eigenvalues and right eigenvectors of square matrices (torch.linalg.eig, LAPACK geev).

    Both are complex (float32 -> complex64, float64 -> complex128); each eigenvector has unit norm and its
    largest component real, as LAPACK returns them. Differentiable where the eigenvalues are distinct, for
    losses that do not depend on the eigenvectors' phases (else the backward raises, as PyTorch's).
    """
    _check_eig_input(A, "linalg.eig")
    L, V = _C._linalg_eig(A, True)
    if out is not None:
        return EigResult(*_copy_outs((L, V), out, "linalg.eig"))
    return EigResult(L, V)


def eigvals(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Eigenvalues (complex) of square matrices (torch.linalg.eigvals); differentiable, as eig."""
    _check_eig_input(A, "linalg.eigvals")
    return _copy_out(_C._linalg_eig(A, _needs_grad(A))[0], out, "linalg.eigvals")


def lstsq(
    A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None, out: Any = None
) -> LstsqResult:
    """Least-squares solution of A X = B (torch.linalg.lstsq), by LAPACK's gelsd (SVD).

    Every driver (None, the default, is 'gelsy' as PyTorch's on the CPU; 'gelsd', 'gelss', 'gels') runs
    gelsd, and reports what PyTorch's driver reports: residuals (the squared residual norms, when m > n and
    every matrix has full rank) for all but 'gelsy', rank for all but 'gels', singular values for 'gelsd'
    and 'gelss'; an output not reported is an empty tensor.
    """
    _check_matrix(A, "linalg.lstsq", complex_ok=True)
    _check_float(B, "linalg.lstsq", "B", complex_ok=True)
    if A.dtype != B.dtype:
        raise TypeError(f"linalg.lstsq: Expected A and B to have the same dtype, got {A.dtype} and {B.dtype}")
    if driver not in (None, "gelsd", "gelsy", "gelss", "gels"):
        raise FlambeauError(
            f"linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got {driver}"
        )
    vector = B.dim() == A.dim() - 1
    if vector:
        B = B.unsqueeze(-1)
    if B.dim() < 2 or B.shape[-2] != A.shape[-2]:
        raise FlambeauError(
            f"linalg.lstsq: input.size(-2) should match other.size(-2), got shapes {_shape(A)} and {_shape(B)}"
        )
    batch = _broadcast_shape(A.shape[:-2], B.shape[:-2], "linalg.lstsq")
    Ab = A.expand(*batch, *A.shape[-2:])
    Bb = B.expand(*batch, *B.shape[-2:])
    grad = _needs_grad(A, B)
    if grad:  # gelsd has no derivative: it runs untracked, the solution's graph comes from pinv below
        _C._set_grad_enabled(False)
    try:
        X, res, rank, sv = _C._linalg_lstsq(Ab, Bb, -1.0 if rcond is None else float(rcond))
    finally:
        if grad:
            _C._set_grad_enabled(True)
    if grad:
        X = _lstsq_differentiable(Ab, Bb, X)
        if res.numel():  # the squared residual norms, differentiable too (as PyTorch's)
            r = Ab @ X - Bb
            res = _C.sum(r.abs() ** 2 if r.dtype in _COMPLEX else r**2, [-2], False)
    if vector:
        X = X.squeeze(-1)
    # What each driver reports, as PyTorch's (its CPU default is gelsy): gels no rank, gels and gelsy no
    # singular values and gelsy no residuals; an output not reported is an empty 1-D tensor.
    driver = driver or "gelsy"
    if driver == "gelsy" and res.numel():
        res = res.new_empty(0)
    if driver == "gels":
        rank = rank.new_empty(0)
    if driver in ("gels", "gelsy"):
        sv = sv.new_empty(0)
    if out is not None:
        return LstsqResult(*_copy_outs((X, res, rank, sv), out, "linalg.lstsq"))
    return LstsqResult(X, res, rank, sv)


def _lstsq_differentiable(A: Tensor, B: Tensor, X: Tensor) -> Tensor:
    """gelsd's solution X with PyTorch's gradient: that of pinv(A) @ B (linalg_lstsq_backward), pinv's own
    derivative (pinv_backward) being defined for rank-deficient A too. The value stays gelsd's: the
    differentiable product enters as (P B) - detach(P B), zero up to rounding."""
    m, n = A.shape[-2], A.shape[-1]
    real = _C.float32 if A.dtype in (_C.float32, _C.complex64) else _C.float64
    rtol = _C.full([], _eps(A.dtype) * max(m, n), dtype=real)
    PB = _C._linalg_pinv(A, _C.zeros([], dtype=real), rtol, False) @ B
    return X + (PB - PB.detach())


def _eps(dtype: Any) -> float:
    return 1.1920928955078125e-07 if dtype in (_C.float32, _C.complex64) else 2.220446049250313e-16


def _tolerance(S: Tensor, A: Tensor, atol: Any, rtol: Any) -> Tensor:
    m, n = A.shape[-2], A.shape[-1]
    eps = _eps(A.dtype)
    if rtol is None:
        rtol = eps * max(m, n) if (atol is None or (not isinstance(atol, Tensor) and atol <= 0)) else 0.0
    smax = _C.max(S, -1, True)[0] if S.shape[-1] > 0 else _C.zeros(*S.shape[:-1], 1, dtype=S.dtype)
    tol = smax * rtol
    if atol is not None:
        tol = _C.maximum(tol, atol if isinstance(atol, Tensor) else _C.full([], float(atol), dtype=S.dtype))
    return tol


def pinv(
    A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False, out: Tensor | None = None
) -> Tensor:
    """Moore-Penrose pseudo-inverse by SVD (torch.linalg.pinv), float or complex.

    Singular values <= max(atol, rtol * s_max) are dropped; hermitian=True uses eigh instead. Differentiable
    with PyTorch's pinv_backward, also for rank-deficient A.
    """
    _check_matrix(A, "linalg.pinv", complex_ok=True)
    if hermitian and A.shape[-1] != A.shape[-2]:
        raise FlambeauError(
            f"linalg.pinv: hermitian=True needs batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices (shape {_shape(A)})"
        )
    m, n = A.shape[-2], A.shape[-1]
    real = _C.float32 if A.dtype in (_C.float32, _C.complex64) else _C.float64
    if rtol is None:
        default = atol is None or (not isinstance(atol, Tensor) and atol <= 0)
        rtol = _eps(A.dtype) * max(m, n) if default else 0.0
    at = atol.to(real) if isinstance(atol, Tensor) else _C.full([], 0.0 if atol is None else float(atol), dtype=real)
    rt = rtol.to(real) if isinstance(rtol, Tensor) else _C.full([], float(rtol), dtype=real)
    return _copy_out(_C._linalg_pinv(A, at, rt, hermitian), out, "linalg.pinv", exact=False)


def matrix_rank(
    A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False, out: Tensor | None = None
) -> Tensor:
    """Number of singular values above max(atol, rtol * s_max), int64 (torch.linalg.matrix_rank)."""
    _check_matrix(A, "linalg.matrix_rank", complex_ok=True)
    S = _C._linalg_eigh(A, "L", False)[0].abs() if hermitian else _C._linalg_svd(A, False, False)[1]
    tol = _tolerance(S, A, atol, rtol)
    return _copy_out(_C.sum((S > tol).to(_C.int64), -1), out, "linalg.matrix_rank", exact=False)


def matrix_power(A: Tensor, n: int, *, out: Tensor | None = None) -> Tensor:
    """A^n by repeated squaring; n < 0 raises the inverse (torch.linalg.matrix_power)."""
    _check_tensor(A, "linalg.matrix_power")
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise FlambeauError(f"linalg.matrix_power: A must be batches of square matrices, but got shape {_shape(A)}")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    if n == 0:
        return _copy_out(_eye(A.shape[-1], A).expand(*A.shape).contiguous(), out, "linalg.matrix_power")
    if n < 0:
        _check_float(A, "linalg.matrix_power")
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
    return _copy_out(result, out, "linalg.matrix_power")


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """Cross product of 3-vectors along `dim`, other dims broadcast (torch.linalg.cross)."""
    _check_tensor(input, "linalg.cross", "input")
    _check_tensor(other, "linalg.cross", "other")
    if input.dim() != other.dim():
        raise FlambeauError(
            "linalg.cross: inputs must have the same number of dimensions, "
            f"got shapes {_shape(input)} and {_shape(other)}"
        )
    nd = input.dim()
    if not -nd <= dim < nd:
        raise IndexError(
            f"linalg.cross: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})"
        )
    d = dim % nd
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise FlambeauError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and {other.shape[d]} "
            f"(shapes {_shape(input)} and {_shape(other)})"
        )
    shape = _broadcast_shape(input.shape, other.shape, "linalg.cross")
    a = input.expand(*shape)
    b = other.expand(*shape)
    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    r = _C.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)
    return _copy_out(r, out, "linalg.cross")


# ---- triangular and Cholesky solves, the _ex forms ----
# Core has no triangular-solve (trtrs/trsm) or LU-factor (getrf with its pivots) primitive: these are
# composites over _linalg_solve (getrf/getrs) applied to the triangular part, so autograd differentiates
# them through solve, and the gradient of A lands on its triangle as PyTorch's does.

TriangularSolveResult = collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
CholeskyExResult = collections.namedtuple("linalg_cholesky_ex", ["L", "info"])
InvExResult = collections.namedtuple("linalg_inv_ex", ["inverse", "info"])
SolveExResult = collections.namedtuple("linalg_solve_ex", ["result", "info"])


def _same_dtype(A: Tensor, B: Tensor, op: str, a: str = "A", b: str = "B") -> None:
    if A.dtype != B.dtype:
        raise TypeError(
            f"{op}: Expected {a} and {b} to have the same dtype, but found {a} of type {A.dtype} "
            f"and {b} of type {B.dtype} instead"
        )


def _check_flags(op: str, **flags: Any) -> None:
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{op}: {name} must be a bool, got {type(value).__name__}")


def _triangle(A: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The triangle of A that a triangular solve reads (the other entries are never looked at)."""
    if not unitriangular:
        return _C.triu(A) if upper else _C.tril(A)
    strict = _C.triu(A, 1) if upper else _C.tril(A, -1)
    return strict + _eye(A.shape[-1], A)


def solve_triangular(
    A: Tensor,
    B: Tensor,
    *,
    upper: bool,
    left: bool = True,
    unitriangular: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    r"""Solves A X = B (``left=True``) or X A = B for a triangular A (torch.linalg.solve_triangular).

    Only the upper (``upper=True``) or lower triangle of A is read; ``unitriangular=True`` takes its diagonal
    to be ones. Batch dims of A (*, n, n) and B (*, n, k) broadcast. float32/float64/complex.

    flambeau-core has no triangular-solve kernel: this solves with the LU solver on A's triangle; a
    triangle with a zero on its diagonal is solved by substitution row by row, giving inf/nan as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> A = fc.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> fc.linalg.solve_triangular(A, fc.tensor([[3.0], [4.0]]), upper=True).tolist()
        [[1.0], [1.0]]
    """
    op = "linalg.solve_triangular"
    _check_flags(op, upper=upper, left=left, unitriangular=unitriangular)
    _check_matrix(A, op, square=True, complex_ok=True)
    _check_float(B, op, "B", complex_ok=True)
    if B.dim() < 2:
        raise FlambeauError(f"{op}: The input tensor B must have at least 2 dimensions (got shape {_shape(B)}).")
    _same_dtype(A, B, op)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise FlambeauError(
            f"{op}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
            f"({_shape(A)} and {_shape(B)})"
        )
    batch = _broadcast_shape(A.shape[:-2], B.shape[:-2], op)
    T = _triangle(A, upper, unitriangular).expand(*batch, n, n)
    Bb = B.expand(*batch, *B.shape[-2:])
    if not left:  # X A = B is A^T X^T = B^T, triangular on the other side
        T, Bb, upper = _mT(T), _mT(Bb), not upper
    # LU's pivoting can turn an exact zero on the diagonal into a rounding residue and solve on: such a
    # triangle goes to substitution, which divides by the zero as PyTorch's trsm does.
    singular = not unitriangular and n > 0 and bool(_C.any(_C.diagonal(T, 0, -2, -1) == 0).item())
    X = _substitute(T, Bb, upper) if singular else _C._linalg_solve(T, Bb)
    return _copy_out(X if left else _mT(X), out, op)


def _substitute(T: Tensor, B: Tensor, upper: bool) -> Tensor:
    """Forward (or back) substitution, one row of X per step: only for a triangle with a zero on its
    diagonal, where PyTorch's trsm divides by zero, giving the inf/nan this gives."""
    n = T.shape[-1]
    rows: dict[int, Tensor] = {}
    for i in reversed(range(n)) if upper else range(n):
        acc = B.select(-2, i)
        done = sorted(rows)
        if done:
            known = _C.stack([rows[j] for j in done], -2)  # (*, m, k)
            coef = _C.stack([T.select(-1, j).select(-1, i) for j in done], -1)  # (*, m): T[i, j]
            acc = acc - _C.sum(coef.unsqueeze(-1) * known, [-2])
        rows[i] = acc / T.select(-1, i).select(-1, i).unsqueeze(-1)
    return _C.stack([rows[i] for i in range(n)], -2)


def _top_triangular_solve(
    input: Tensor,
    A: Tensor,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
    *,
    out: Any = None,
) -> TriangularSolveResult:
    r"""Solves A X = b (or A^T X = b with ``transpose=True``) for a triangular A (torch.triangular_solve).

    Returns ``(solution, cloned_coefficient)``, the second a copy of A. Note the argument order
    (b first) and the default ``upper=True``; :func:`flambeau.linalg.solve_triangular` is the newer form.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> fb.triangular_solve(fb.tensor([[3.0], [4.0]]), A).solution.tolist()
        [[1.0], [1.0]]
    """
    op = "triangular_solve"
    _check_flags(op, upper=upper, transpose=transpose, unitriangular=unitriangular)
    _check_float(input, op, "b", complex_ok=True)
    _check_float(A, op, "A", complex_ok=True)
    if input.dim() < 2 or A.dim() < 2:
        raise FlambeauError(
            f"{op}: b and A should have at least 2 dimensions, got shapes {_shape(input)} and {_shape(A)}"
        )
    _same_dtype(input, A, op, "b", "A")
    if A.shape[-1] != A.shape[-2] or input.shape[-2] != A.shape[-1]:
        raise FlambeauError(
            f"{op}: Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} by "
            f"{A.shape[-1]} but each b matrix is {input.shape[-2]} by {input.shape[-1]}"
        )
    # A^T is triangular on the other side; the solution of A^T X = b.
    T = _mT(A) if transpose else A
    X = solve_triangular(T, input, upper=upper != transpose, unitriangular=unitriangular)
    batch = X.shape[:-2]
    C = A.expand(*batch, *A.shape[-2:]).clone()
    if out is not None:
        return TriangularSolveResult(*_copy_outs((X, C), out, op))
    return TriangularSolveResult(X, C)


def _check_cholesky_factor(L: Any, op: str) -> None:
    _check_float(L, op, "A", complex_ok=True)
    if L.dim() < 2:
        raise FlambeauError(f"{op}: The input tensor A must have at least 2 dimensions (got shape {_shape(L)}).")
    if L.shape[-1] != L.shape[-2]:
        raise FlambeauError(
            f"{op}: A must be batches of square matrices, but they are {L.shape[-2]} by {L.shape[-1]} matrices"
        )


def _adjoint(x: Tensor) -> Tensor:
    return _C.conj(_mT(x)) if x.dtype in _COMPLEX else _mT(x)


def _top_cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    r"""Solves A X = B given the Cholesky factor of A = L L^H (or U^H U with ``upper=True``) (torch.cholesky_solve).

    ``input`` is B (*, n, k), ``input2`` the factor (*, n, n); batch dims broadcast. Two triangular solves.

    Example:
        >>> import flambeau as fb
        >>> L = fb.linalg.cholesky(fb.tensor([[4.0, 2.0], [2.0, 5.0]]))
        >>> fb.cholesky_solve(fb.tensor([[6.0], [7.0]]), L).tolist()
        [[1.0], [1.0]]
    """
    op = "cholesky_solve"
    _check_flags(op, upper=upper)
    _check_float(input, op, "B", complex_ok=True)
    _check_cholesky_factor(input2, op)
    if input.dim() < 2:
        raise FlambeauError(f"{op}: b should have at least 2 dimensions, but has {input.dim()} dimensions instead")
    _same_dtype(input, input2, op, "b", "A")
    n = input2.shape[-1]
    if input.shape[-2] != n:
        raise FlambeauError(
            f"{op}: Incompatible matrix sizes for cholesky_solve: each A matrix is {n} by {n} "
            f"but each b matrix is {input.shape[-2]} by {input.shape[-1]}"
        )
    # A = F^H F with F upper (U, or L^H): solve F^H Y = B, then F X = Y.
    F = input2 if upper else _adjoint(input2)
    Y = solve_triangular(_adjoint(F), input, upper=False)
    return _copy_out(solve_triangular(F, Y, upper=True), out, op)


def _top_cholesky_inverse(input: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    r"""Inverse of A = L L^H (or U^H U with ``upper=True``) from its Cholesky factor (torch.cholesky_inverse).

    Example:
        >>> import flambeau as fb
        >>> L = fb.linalg.cholesky(fb.tensor([[4.0, 0.0], [0.0, 16.0]]))
        >>> fb.cholesky_inverse(L).tolist()
        [[0.25, 0.0], [0.0, 0.0625]]
    """
    op = "cholesky_inverse"
    _check_flags(op, upper=upper)
    _check_cholesky_factor(input, op)
    n = input.shape[-1]
    F = input if upper else _adjoint(input)  # A = F^H F, A^-1 = F^-1 F^-H
    Finv = solve_triangular(F, _eye(n, input).expand(*input.shape), upper=True)
    return _copy_out(Finv @ _adjoint(Finv), out, op)


def _stated_info(message: str, pattern: str) -> int:
    # The kernels' messages state LAPACK's info ("The diagonal element 2 is zero", "the leading minor of
    # order 3"); the primitives return no info tensor of their own.
    m = re.search(pattern, message)
    return int(m.group(1)) if m else 1


def _lu_info(a: Tensor) -> int:
    """getrf's info for one square matrix: the first zero diagonal element of U (from 1), 0 if none."""
    try:
        _C._linalg_inv(a)
    except FlambeauError as e:
        return _stated_info(str(e), r"diagonal element (\d+)")
    return 0


def _cholesky_info(a: Tensor) -> int:
    """potrf's info for one matrix: the order of its first leading minor that is not positive-definite."""
    try:
        _C._linalg_cholesky(a, False)
    except FlambeauError as e:
        return _stated_info(str(e), r"leading minor of order (\d+)")
    return 0


def _infos(A: Tensor, info_of: Any) -> Tensor:
    """info_of each matrix of A (int32, A's batch shape): a loop over the batch, run only after the batched
    call failed, since the kernels stop at the first matrix that fails."""
    flat = A.reshape(-1, *A.shape[-2:])
    return _C.tensor([info_of(flat[i]) for i in range(flat.shape[0])], dtype=_C.int32).reshape(*A.shape[:-2])


def _on_good(A: Tensor, info: Tensor, compute: Any, vector: bool = False) -> Tensor:
    """compute(A) with each failed matrix (info > 0) replaced by I, and NaN in its result."""
    bad = (info > 0).unsqueeze(-1).unsqueeze(-1)
    X = compute(_C.where(bad, _eye(A.shape[-1], A), A))
    if vector:
        bad = bad.squeeze(-1)
    return _C.where(bad, _C.full([], math.nan, dtype=X.dtype), X)


def _ex_error(e: FlambeauError, kernel: str, op: str) -> FlambeauError:
    return FlambeauError(str(e).replace(kernel, op, 1))


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False, out: Any = None) -> CholeskyExResult:
    r"""Cholesky factor and LAPACK's info (torch.linalg.cholesky_ex): info (int32, A's batch shape) is 0 where
    the factorization succeeded, else the order of the leading minor that is not positive-definite.

    With ``check_errors=False`` a matrix that is not positive-definite does not raise; its factor is NaN
    (PyTorch leaves LAPACK's partial factor there). ``check_errors=True`` raises as linalg.cholesky does.

    Example:
        >>> import flambeau_core as fc
        >>> L, info = fc.linalg.cholesky_ex(fc.tensor([[4.0, 2.0], [2.0, 5.0]]))
        >>> L.tolist(), info.item()
        ([[2.0, 0.0], [1.0, 2.0]], 0)
    """
    op = "linalg.cholesky_ex"
    _check_flags(op, upper=upper, check_errors=check_errors)
    _check_matrix(A, op, square=True, complex_ok=True)
    try:
        L = _C._linalg_cholesky(A, upper)
        info = _C.zeros(*A.shape[:-2], dtype=_C.int32)
    except FlambeauError as e:
        if check_errors:
            raise _ex_error(e, "linalg.cholesky", op) from None
        # potrf reads one triangle: the info of the lower one of A (upper=False) or of A^T's
        info = _infos(_mT(A) if upper else A, _cholesky_info)
        L = _on_good(A, info, lambda a: _C._linalg_cholesky(a, upper))
    if out is not None:
        return CholeskyExResult(*_copy_outs((L, info), out, op))
    return CholeskyExResult(L, info)


def inv_ex(A: Tensor, *, check_errors: bool = False, out: Any = None) -> InvExResult:
    r"""Inverse and LAPACK's info (torch.linalg.inv_ex): info (int32, A's batch shape) is 0 where A is
    invertible, else the index (from 1) of the zero diagonal element of its LU factor.

    With ``check_errors=False`` a singular matrix does not raise; its inverse is NaN. ``check_errors=True``
    raises as linalg.inv does.

    Example:
        >>> import flambeau_core as fc
        >>> Ainv, info = fc.linalg.inv_ex(fc.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> Ainv.diagonal().tolist(), info.item()
        ([0.5, 0.25], 0)
    """
    op = "linalg.inv_ex"
    _check_flags(op, check_errors=check_errors)
    _check_matrix(A, op, square=True, complex_ok=True)
    try:
        X = _C._linalg_inv(A)
        info = _C.zeros(*A.shape[:-2], dtype=_C.int32)
    except FlambeauError as e:
        if check_errors:
            raise _ex_error(e, "linalg.inv", op) from None
        info = _infos(A, _lu_info)
        X = _on_good(A, info, _C._linalg_inv)
    if out is not None:
        return InvExResult(*_copy_outs((X, info), out, op))
    return InvExResult(X, info)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out: Any = None) -> SolveExResult:
    r"""linalg.solve and LAPACK's info (torch.linalg.solve_ex): info (int32, the broadcast batch shape) is 0
    where A is invertible, else the index (from 1) of the zero diagonal element of its LU factor.

    With ``check_errors=False`` a singular A does not raise; its solution is NaN. ``check_errors=True``
    raises as linalg.solve does.

    Example:
        >>> import flambeau_core as fc
        >>> X, info = fc.linalg.solve_ex(fc.tensor([[2.0, 0.0], [0.0, 4.0]]), fc.tensor([2.0, 4.0]))
        >>> X.tolist(), info.item()
        ([1.0, 1.0], 0)
    """
    op = "linalg.solve_ex"
    _check_flags(op, left=left, check_errors=check_errors)
    _check_tensor(A, op)
    _check_tensor(B, op, "B")
    try:
        X = solve(A, B, left=left)
        info = _C.zeros(*A.shape[:-2], dtype=_C.int32)  # one LU per matrix of A: A's batch shape
    except FlambeauError as e:
        if check_errors or "singular" not in str(e):
            raise _ex_error(e, "linalg.solve", op) from None
        info = _infos(A, _lu_info)
        # B, and X, are (batches of) vectors as solve decides
        vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
        X = _on_good(A, info, lambda a: solve(a, B, left=left), vector)
    if out is not None:
        return SolveExResult(*_copy_outs((X, info), out, op))
    return SolveExResult(X, info)


# ---- matrix functions and tensor forms ----

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


def tensorinv(A: Tensor, ind: int = 2, *, out: Tensor | None = None) -> Tensor:
    r"""The inverse of A for tensordot over ``ind`` dims (torch.linalg.tensorinv): A reshaped to a square
    (prod(A.shape[:ind]), prod(A.shape[ind:])) matrix, inverted, shaped A.shape[ind:] + A.shape[:ind].

    Example:
        >>> import flambeau_core as fc
        >>> A = fc.eye(6).reshape(6, 2, 3) * 2
        >>> tuple(fc.linalg.tensorinv(A, ind=1).shape)
        (2, 3, 6)
    """
    op = "linalg.tensorinv"
    _check_float(A, op, complex_ok=True)
    if not isinstance(ind, int) or isinstance(ind, bool) or ind <= 0:
        raise FlambeauError(f"{op}: Expected a strictly positive integer for 'ind', but got {ind}")
    rows = math.prod(A.shape[:ind])
    cols = math.prod(A.shape[ind:])
    if rows != cols:
        raise FlambeauError(
            f"{op}: Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), "
            f"but got {cols} != {rows} (shape {_shape(A)}, ind={ind})"
        )
    X = inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])
    return _copy_out(X, out, op)


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None, *, out: Tensor | None = None) -> Tensor:
    r"""X with tensordot(A, X, X.ndim) = B (torch.linalg.tensorsolve); X has shape A.shape[B.ndim:].

    ``dims`` moves those dims of A to the end first.

    Example:
        >>> import flambeau_core as fc
        >>> A = fc.eye(6).reshape(2, 3, 6) * 2
        >>> fc.linalg.tensorsolve(A, fc.ones(2, 3)).tolist()
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    """
    op = "linalg.tensorsolve"
    _check_float(A, op, complex_ok=True)
    _check_float(B, op, "B", complex_ok=True)
    _same_dtype(A, B, op)
    if dims is not None:
        nd = A.dim()
        ds = []
        for d in dims:
            if not -nd <= d < nd:
                raise IndexError(
                    f"{op}: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})"
                )
            ds.append(d % nd)
        A = A.permute(*[i for i in range(nd) if i not in ds], *ds)
    result_shape = list(A.shape[B.dim() :])
    rows = math.prod(A.shape[: B.dim()])
    cols = math.prod(result_shape)
    if rows != cols or B.numel() != rows:
        raise FlambeauError(
            f"{op}: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows} (shapes {_shape(A)} and {_shape(B)})"
        )
    X = solve(A.reshape(rows, cols), B.reshape(rows)).reshape(*result_shape)
    return _copy_out(X, out, op)


def householder_product(A: Tensor, tau: Tensor, *, out: Tensor | None = None) -> Tensor:
    r"""The first n columns of the product H_1 ... H_k of Householder reflectors H_i = I - tau_i v_i v_i^H
    (torch.linalg.householder_product, LAPACK's orgqr/ungqr): v_i is column i of A (*, m, n) below the
    diagonal with a 1 on it; tau (*, k), k <= n <= m. Applies one reflector per step, each over the whole
    batch; float32/float64/complex, differentiable through the products.

    Example:
        >>> import flambeau_core as fc
        >>> A = fc.tensor([[1.0], [1.0]])
        >>> fc.linalg.householder_product(A, fc.tensor([1.0])).tolist()
        [[0.0], [-1.0]]
    """
    op = "linalg.householder_product"
    _check_float(A, op, "input", complex_ok=True)
    _check_float(tau, op, "tau", complex_ok=True)
    if A.dim() < 2:
        raise FlambeauError(f"{op}: input must have at least 2 dimensions (got shape {_shape(A)}).")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise FlambeauError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise FlambeauError(
            f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
            f"{tau.dim()} and input.ndim is equal to {A.dim()}"
        )
    k = tau.shape[-1]
    if n < k:
        raise FlambeauError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise FlambeauError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got {list(tau.shape[:-1])}"
        )
    if tau.dtype != A.dtype:
        raise TypeError(f"{op}: tau dtype {tau.dtype} does not match input dtype {A.dtype}")
    rows = _C.arange(m).unsqueeze(-1)
    Q = (rows == _C.arange(n)).to(A.dtype).expand(*A.shape).contiguous()
    V = _C.tril(A.narrow(-1, 0, k), -1) + (rows == _C.arange(k)).to(A.dtype)
    if k == 0 and _needs_grad(A, tau):
        # no reflector: Q is the identity, still an output of A and tau (zero gradient) as PyTorch's; the
        # empty product and sum add exact zeros whatever A holds
        Q = Q + A.narrow(-1, 0, 0) @ _C.zeros(*A.shape[:-2], 0, n, dtype=A.dtype)
        Q = Q + _C.sum(tau, [-1], True).unsqueeze(-1)
    for i in reversed(range(k)):  # Q = H_i Q, the last reflector first
        v = V.narrow(-1, i, 1)
        vh = _C.conj(_mT(v)) if A.dtype in _COMPLEX else _mT(v)
        Q = Q - tau.narrow(-1, i, 1).unsqueeze(-1) * (v @ (vh @ Q))
    return _copy_out(Q, out, op)


# ---- torch.* spellings (exported at flambeau's top level by flambeau_core/__init__.py) ----

SlogdetTop = collections.namedtuple("slogdet", ["sign", "logabsdet"])
QRTop = collections.namedtuple("qr", ["Q", "R"])


def _top_slogdet(input: Tensor, *, out: Any = None) -> SlogdetTop:
    """torch.slogdet: (sign, logabsdet)."""
    s = slogdet(input)
    if out is not None:
        return SlogdetTop(*_copy_outs((s.sign, s.logabsdet), out, "slogdet"))
    return SlogdetTop(s.sign, s.logabsdet)


def _top_inverse(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """torch.inverse: linalg.inv."""
    return inv(input, out=out)


def _top_det(input: Tensor) -> Tensor:
    """torch.det: linalg.det."""
    return det(input)


def _top_cholesky(input: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    """torch.cholesky: linalg.cholesky."""
    return cholesky(input, upper=upper, out=out)


def _top_qr(input: Tensor, some: bool = True, *, out: Any = None) -> QRTop:
    """torch.qr: (Q, R), reduced unless some=False."""
    Q, R = qr(input, "reduced" if some else "complete")
    if out is not None:
        return QRTop(*_copy_outs((Q, R), out, "qr"))
    return QRTop(Q, R)


def _top_svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out: Any = None) -> SvdResultV:
    """torch.svd: (U, S, V) with V (not Vh); U and V are zeros when compute_uv=False."""
    r = _svd_v(input, some, compute_uv)
    if out is not None:
        return SvdResultV(*_copy_outs(tuple(r), out, "svd"))
    return r


def _svd_v(input: Tensor, some: bool, compute_uv: bool) -> SvdResultV:
    _check_matrix(input, "svd", "input", complex_ok=True)
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        U = _C.zeros(*input.shape[:-2], m, m if not some else min(m, n), dtype=input.dtype)
        V = _C.zeros(*input.shape[:-2], n, n if not some else min(m, n), dtype=input.dtype)
        return SvdResultV(U, S, V)
    U, S, Vh = svd(input, full_matrices=not some)
    V = _mT(Vh)
    return SvdResultV(U, S, _C.conj(V) if V.dtype in _COMPLEX else V)  # V = Vh^H


def _top_pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: linalg.pinv with rtol=rcond."""
    return pinv(input, rtol=rcond)


def _top_cross(input: Tensor, other: Tensor, dim: int | None = None, *, out: Tensor | None = None) -> Tensor:
    """torch.cross: dim=None is the first dim of size 3 (PyTorch's deprecated default)."""
    if dim is None:
        _check_tensor(input, "cross", "input")
        _check_tensor(other, "cross", "other")
        shape = _broadcast_shape(input.shape, other.shape, "cross")
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise FlambeauError(f"cross: no dimension of size 3 in input (shapes {_shape(input)} and {_shape(other)})")
    return cross(input, other, dim=dim, out=out)


def _top_matrix_power(input: Tensor, n: int, *, out: Tensor | None = None) -> Tensor:
    """torch.matrix_power: linalg.matrix_power."""
    return _copy_out(matrix_power(input, n), out, "matrix_power")


def _top_ger(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """torch.ger: outer."""
    return _copy_out(outer(input, vec2), out, "ger", exact=False)


def _top_dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Dot product of two 1-D tensors of the same size (torch.dot)."""
    _check_tensor(input, "dot", "input")
    _check_tensor(tensor, "dot", "tensor")
    # The shape/dtype checks (1-D, same size, same dtype, not bool) and the call run in one
    # C++ composite (_dot, src/composite/dot.cpp): done here they cost 2-3x a 16-element dot.
    return _copy_out(_C._dot(input, tensor), out, "dot")


def _top_inner(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inner product over the last dims (torch.inner); a scalar (0-d) operand multiplies."""
    return _copy_out(_inner(input, other), out, "inner")


def _inner(input: Tensor, other: Tensor) -> Tensor:
    _check_tensor(input, "inner", "input")
    _check_tensor(other, "inner", "other")
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise FlambeauError(
            "inner: expected the last dimension of both inputs to match, "
            f"got shapes {_shape(input)} and {_shape(other)}"
        )
    return tensordot(input, other, ([-1], [-1]))


def _top_mv(input: Tensor, vec: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix-vector product (torch.mv)."""
    _check_tensor(input, "mv", "input")
    _check_tensor(vec, "mv", "vec")
    if input.dim() != 2 or vec.dim() != 1:
        raise FlambeauError(f"mv: expected a 2-D matrix and a 1-D vector, got shapes {_shape(input)} and {_shape(vec)}")
    if input.shape[1] != vec.shape[0]:
        raise FlambeauError(f"mv: size mismatch, got input ({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    return _copy_out(_C.matmul(input, vec), out, "mv")


def _top_chain_matmul(*matrices: Tensor, out: Tensor | None = None) -> Tensor:
    """torch.chain_matmul: multi_dot of 2-D matrices."""
    # (as PyTorch: one matrix is copied into out= of any dtype it casts to; a product needs out's
    # dtype to be the result's)
    if len(matrices) == 1:
        return _copy_out(matrices[0], out, "chain_matmul", exact=False)
    return _copy_out(multi_dot(matrices), out, "chain_matmul")


# name at flambeau's top level -> function (flambeau_core/__init__.py binds these, and the Tensor methods).
TOP_LEVEL = {
    "det": _top_det,
    "logdet": logdet,
    "slogdet": _top_slogdet,
    "inverse": _top_inverse,
    "cholesky": _top_cholesky,
    "qr": _top_qr,
    "svd": _top_svd,
    "pinverse": _top_pinverse,
    "matrix_power": _top_matrix_power,
    "cross": _top_cross,
    "outer": outer,
    "ger": _top_ger,
    "dot": _top_dot,
    "inner": _top_inner,
    "mv": _top_mv,
    "einsum": einsum,
    "tensordot": tensordot,
    "chain_matmul": _top_chain_matmul,
    "triangular_solve": _top_triangular_solve,
    "cholesky_solve": _top_cholesky_solve,
    "cholesky_inverse": _top_cholesky_inverse,
    "matrix_exp": _top_matrix_exp,
}
# Tensor methods PyTorch has for them (x.det(), x.inverse(), ...).
METHODS = (
    "det logdet slogdet inverse cholesky qr svd pinverse matrix_power cross outer ger dot inner mv "
    "triangular_solve cholesky_solve cholesky_inverse matrix_exp"
).split()
for _name, _fn in TOP_LEVEL.items():
    if _fn.__name__.startswith("_top_"):
        _fn.__name__ = _fn.__qualname__ = _name
        _fn.__module__ = "flambeau"
del _name, _fn

# The LU, LDL and Householder-QR family lives in its own module.
from flambeau_core import _linalg_lu  # noqa: E402,I001
from flambeau_core._linalg_lu import ldl_factor, ldl_factor_ex, ldl_solve, lu, lu_factor, lu_factor_ex, lu_solve  # noqa: E402,F401,I001

__all__ += _linalg_lu.LINALG_ALL
TOP_LEVEL.update(_linalg_lu.TOP_LEVEL)
METHODS += _linalg_lu.METHODS
