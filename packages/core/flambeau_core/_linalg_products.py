"""The products of flambeau.linalg and their torch.* spellings.

``linalg.matmul``, ``vecdot``, ``multi_dot`` (in the cheapest order of the chain), ``cross``, and ``outer``,
``tensordot`` and ``einsum`` (its equation parsed here, the operands contracted two at a time with batched
matmuls), with the top-level ``ger``, ``dot``, ``inner``, ``mv``, ``chain_matmul`` and ``cross`` (whose
``dim=None`` is the first dim of size 3). Composites of core ops, differentiated through the ops they
call. Re-exported by flambeau_core.linalg (and at the top level where torch has them).
"""

from __future__ import annotations

import collections
import math
import string
from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._linalg_common import _COMPLEX, _broadcast_shape, _check_tensor, _copy_out, _eye, _shape
from flambeau_core.amp.custom_functions import autocast_excluded

matmul = _C.matmul


def outer(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Outer product of two 1-D tensors (torch.outer).

    Example:
        >>> import flambeau as fb
        >>> fb.outer(fb.tensor([1, 2]), fb.tensor([3, 4])).tolist()
        [[3, 4], [6, 8]]
    """
    _check_tensor(input, "outer", "input")
    _check_tensor(vec2, "outer", "vec2")
    if input.dim() != 1 or vec2.dim() != 1:
        raise FlambeauError(f"outer: expected two 1-D tensors, got shapes {_shape(input)} and {_shape(vec2)}")
    return _copy_out(input.unsqueeze(-1) * vec2, out, "outer", exact=False)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """Dot product of vectors along `dim`, broadcasting the other dims (torch.linalg.vecdot).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])
        >>> fb.linalg.vecdot(x, fb.tensor([1.0, 1.0, 1.0]))
        tensor([6., 1.])
    """
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
    """Contraction of a's and b's dims `dims` (an int: the last/first `dims` dims; or two lists).

    Example:
        >>> import flambeau as fb
        >>> fb.tensordot(fb.ones(2, 3), fb.ones(3, 4), dims=1).shape
        flambeau.Size([2, 4])
    """
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
        # torch's rule: a contracted dim of size 1 on one side broadcasts against the other side's, which is
        # summed over (kept as size 1 so the dims stay numbered).
        if a.shape[i] == 1 and b.shape[j] != 1:
            b = b.sum(j, keepdim=True)
        elif b.shape[j] == 1 and a.shape[i] != 1:
            a = a.sum(i, keepdim=True)
        elif a.shape[i] != b.shape[j]:
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
    """Product of a chain of matrices in the cheapest order (first and last may be 1-D).

    Example:
        >>> import flambeau as fb
        >>> A, B, C = fb.ones(2, 3), fb.ones(3, 4), fb.ones(4)
        >>> fb.linalg.multi_dot([A, B, C])
        tensor([12., 12.])
    """
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

    Example:
        >>> import flambeau as fb
        >>> fb.einsum("ij,jk->ik", fb.tensor([[1, 2], [3, 4]]), fb.tensor([[1, 0], [0, 1]])).tolist()
        [[1, 2], [3, 4]]
        >>> fb.einsum("ii", fb.tensor([[1, 2], [3, 4]])).item()
        5
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


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """Cross product of 3-vectors along `dim`, other dims broadcast (torch.linalg.cross).

    Example:
        >>> import flambeau as fb
        >>> fb.linalg.cross(fb.tensor([1.0, 0.0, 0.0]), fb.tensor([0.0, 1.0, 0.0]))
        tensor([0., 0., 1.])
    """
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


def _top_cross(input: Tensor, other: Tensor, dim: int | None = None, *, out: Tensor | None = None) -> Tensor:
    """Cross product of 3-vectors (torch.cross): dim=None is the first dim of size 3 (PyTorch's deprecated default).

    Example:
        >>> import flambeau as fb
        >>> fb.cross(fb.tensor([1, 0, 0]), fb.tensor([0, 1, 0])).tolist()
        [0, 0, 1]
    """
    if dim is None:
        _check_tensor(input, "cross", "input")
        _check_tensor(other, "cross", "other")
        shape = _broadcast_shape(input.shape, other.shape, "cross")
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise FlambeauError(f"cross: no dimension of size 3 in input (shapes {_shape(input)} and {_shape(other)})")
    return cross(input, other, dim=dim, out=out)


def _top_ger(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """torch.ger: the outer product of two 1-D tensors (as outer).

    Example:
        >>> import flambeau as fb
        >>> fb.ger(fb.tensor([1, 2]), fb.tensor([3, 4])).tolist()
        [[3, 4], [6, 8]]
    """
    return _copy_out(outer(input, vec2), out, "ger", exact=False)


def _top_dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Dot product of two 1-D tensors of the same size (torch.dot).

    Example:
        >>> import flambeau as fb
        >>> fb.dot(fb.tensor([1, 2]), fb.tensor([3, 4])).item()
        11
    """
    _check_tensor(input, "dot", "input")
    _check_tensor(tensor, "dot", "tensor")
    # The shape/dtype checks (1-D, same size, same dtype, not bool) and the call run in one
    # C++ composite (_dot, src/composite/dot.cpp): done here they cost 2-3x a 16-element dot.
    return _copy_out(_C._dot(input, tensor), out, "dot")


def _top_inner(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inner product over the last dims (torch.inner); a scalar (0-d) operand multiplies.

    Example:
        >>> import flambeau as fb
        >>> fb.inner(fb.tensor([[1, 2], [3, 4]]), fb.tensor([1, 1])).tolist()
        [3, 7]
    """
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


@autocast_excluded
def _top_mv(input: Tensor, vec: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix-vector product (torch.mv).

    Example:
        >>> import flambeau as fb
        >>> fb.mv(fb.tensor([[1, 2], [3, 4]]), fb.tensor([1, 1])).tolist()
        [3, 7]
    """
    _check_tensor(input, "mv", "input")
    _check_tensor(vec, "mv", "vec")
    if input.dim() != 2 or vec.dim() != 1:
        raise FlambeauError(f"mv: expected a 2-D matrix and a 1-D vector, got shapes {_shape(input)} and {_shape(vec)}")
    if input.dtype == _C.bool and input.numel() and vec.numel():  # (Note [Bool products], meta/bool_products.h)
        raise TypeError("[mv] is not supported for bool tensors (PyTorch has no bool matrix product)")
    if input.shape[1] != vec.shape[0]:
        raise FlambeauError(f"mv: size mismatch, got input ({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    return _copy_out(_C.matmul(input, vec), out, "mv")


def _top_chain_matmul(*matrices: Tensor, out: Tensor | None = None) -> Tensor:
    """torch.chain_matmul: the product of 2-D matrices, multiplied in the cheapest order (multi_dot).

    Example:
        >>> import flambeau as fb
        >>> fb.chain_matmul(fb.ones(2, 3), fb.ones(3, 4), fb.ones(4, 1)).tolist()
        [[12.0], [12.0]]
    """
    # (as PyTorch: one matrix is copied into out= of any dtype it casts to; a product needs out's
    # dtype to be the result's)
    if len(matrices) == 1:
        return _copy_out(matrices[0], out, "chain_matmul", exact=False)
    return _copy_out(multi_dot(matrices), out, "chain_matmul")
