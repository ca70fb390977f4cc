"""The functional forms of the view ops: PyTorch's ``*_copy`` and ``*_scatter`` functions.

``t_copy(x)`` is ``t(x)`` as a new contiguous tensor (a copy, never a view); ``slice_scatter(input, src,
...)`` is a copy of ``input`` with ``src`` written where ``input[...]`` would look. Both families are
made from one table each (name -> view op and its parameters), so a rule holds for all of them at once.

Note [Scatters through positions]: a scatter is ``clone()`` then ``view.copy_(src)`` (PyTorch's own
form), except where autograd records a gradient for ``src`` alone: flambeau's autograd cannot record an
in-place write into a view of a tensor that does not require grad, so there the scatter is written
out-of-place, as an ``index_copy`` into the flattened input at the positions the view would reach (the
view op applied to ``arange(numel)``), which differentiates by composition (at 3-10x the cost). ``as_strided``
addresses the storage rather than the tensor, so its positions are storage positions (PyTorch's
``as_strided_scatter`` copies the whole storage the same way). The result is laid out as input is, as
PyTorch's. ``as_strided_copy`` reads through the same positions where autograd records (the backward of
``as_strided`` itself covers only a contiguous input and a view without overlaps).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_tensor, is_int
from flambeau_core._copying import _no_grad
from flambeau_core._splits import split_with_sizes, unsafe_split
from flambeau_core.overrides import is_tensor_like

_P = inspect.Parameter
_REQUIRED = _P.empty


def _signature(*params: tuple, out: bool = True) -> inspect.Signature:
    """``("dim",), ("offset", 0), "*", ("implicit", False)``: torch's parameters after ``input``."""
    kind, built = _P.POSITIONAL_OR_KEYWORD, [_P("input", _P.POSITIONAL_OR_KEYWORD)]
    for p in params:
        if p == "*":
            kind = _P.KEYWORD_ONLY
            continue
        built.append(_P(p[0], kind, default=p[1] if len(p) > 1 else _REQUIRED))
    if out:
        built.append(_P("out", _P.KEYWORD_ONLY, default=None))
    return inspect.Signature(built)


def _bind(name: str, sig: inspect.Signature, args: tuple, kwargs: dict) -> dict:
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"[{name}] {e}; expected {name}{sig}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def _copy_outs(name: str, results: tuple, out: Any) -> None:
    """``out=`` of the ops that return a list of tensors: one out tensor per result, filled; torch returns None."""
    if not isinstance(out, (list, tuple)) or not all(isinstance(o, _C.Tensor) for o in out):
        raise TypeError(f"[{name}] out= must be a list or tuple of Tensors, got {type(out).__name__}")
    if len(out) != len(results):
        raise _C.FlambeauError(f"[{name}] expected an out= list of {len(results)} tensors, got {len(out)}")
    for r, o in zip(results, out, strict=True):
        _C._copy_to_out(name, r, o, True)


# ---- *_copy: a view op's result as a new contiguous tensor ----


@dataclass(frozen=True)
class _ViewCopy:
    name: str
    view: Callable  # the view op: view(input, *the parameters after input)
    params: tuple  # torch's parameters after input (_signature's form)
    example: str  # a call on x = arange(6).reshape(2, 3), and what it gives


def _view_dtype_or_size(x, size):
    if isinstance(size, _C.dtype):
        if size == x.dtype:
            return x
        # Reinterpreting bytes as another dtype needs a view(dtype) op in core, which flambeau lacks.
        raise NotImplementedError(
            f"[view] reinterpreting a {x.dtype.name} tensor's bytes as {size.name} (view(dtype)) is not supported"
        )
    return x.reshape(size)  # PyTorch's view_copy takes what view refuses for the strides: it copies anyway


def _as_strided_read(x, size, stride, storage_offset):
    """``x.as_strided(...)``; where autograd records, gathered from the storage positions instead (Note
    [Scatters through positions]): as_strided's backward covers only contiguous, non-overlapping cases."""
    if not (x.requires_grad and _C.is_grad_enabled()):
        return x.as_strided(size, stride, storage_offset)
    values, _, elements = _storage_values(x)
    offset = x.storage_offset() if storage_offset is None else storage_offset
    slot = _C.arange(elements, device=x.device).as_strided(size, stride, offset)
    return values.index_select(0, slot.reshape(-1)).view(tuple(slot.shape))


_COPIES = (
    _ViewCopy("alias_copy", lambda x: x, (), "alias_copy(x).tolist()\n    [[0, 1, 2], [3, 4, 5]]"),
    _ViewCopy(
        "as_strided_copy",
        _as_strided_read,
        (("size",), ("stride",), ("storage_offset", None)),
        "as_strided_copy(x, (2, 2), (1, 2)).tolist()\n    [[0, 2], [1, 3]]",
    ),
    _ViewCopy(
        "diagonal_copy",
        lambda x, offset, dim1, dim2: x.diagonal(offset, dim1, dim2),
        (("offset", 0), ("dim1", 0), ("dim2", 1)),
        "diagonal_copy(x, 1).tolist()\n    [1, 5]",
    ),
    _ViewCopy(
        "expand_copy",
        lambda x, size, implicit: x.expand(size),
        (("size",), "*", ("implicit", False)),
        "expand_copy(x[:1], (2, 3)).tolist()\n    [[0, 1, 2], [0, 1, 2]]",
    ),
    _ViewCopy(
        "narrow_copy",
        lambda x, dim, start, length: x.narrow(dim, start, length),
        (("dim",), ("start",), ("length",)),
        "narrow_copy(x, 1, 1, 2).tolist()\n    [[1, 2], [4, 5]]",
    ),
    _ViewCopy(
        "permute_copy",
        lambda x, dims: x.permute(dims),
        (("dims",),),
        "permute_copy(x, (1, 0)).is_contiguous()\n    True",
    ),
    _ViewCopy(
        "squeeze_copy",
        lambda x, dim: x.squeeze() if dim is None else x.squeeze(dim),
        (("dim", None),),
        "squeeze_copy(x[:1]).tolist()\n    [0, 1, 2]",
    ),
    _ViewCopy("t_copy", lambda x: x.t(), (), "t_copy(x).tolist()\n    [[0, 3], [1, 4], [2, 5]]"),
    _ViewCopy(
        "transpose_copy",
        lambda x, dim0, dim1: x.transpose(dim0, dim1),
        (("dim0",), ("dim1",)),
        "transpose_copy(x, 0, 1).stride()\n    (2, 1)",
    ),
    _ViewCopy(
        "unbind_copy",
        lambda x, dim: x.unbind(dim),
        (("dim", 0),),
        "[t.tolist() for t in unbind_copy(x)]\n    [[0, 1, 2], [3, 4, 5]]",
    ),
    _ViewCopy(
        "unfold_copy",
        lambda x, dimension, size, step: x.unfold(dimension, size, step),
        (("dimension",), ("size",), ("step",)),
        "unfold_copy(x, 1, 2, 1).tolist()\n    [[[0, 1], [1, 2]], [[3, 4], [4, 5]]]",
    ),
    _ViewCopy(
        "unsqueeze_copy",
        lambda x, dim: x.unsqueeze(dim),
        (("dim",),),
        "unsqueeze_copy(x, 0).shape\n    flambeau.Size([1, 2, 3])",
    ),
    _ViewCopy(
        "view_copy",
        _view_dtype_or_size,
        (("size",),),
        "view_copy(x.t(), (6,)).tolist()\n    [0, 3, 1, 4, 2, 5]",
    ),
    _ViewCopy(
        "select_copy",
        lambda x, dim, index: x.select(dim, index),
        (("dim",), ("index",)),
        "select_copy(x, 1, 2).tolist()\n    [2, 5]",
    ),
    _ViewCopy(
        "slice_copy",
        lambda x, dim, start, end, step: _slice(x, dim, start, end, step),
        (("dim", 0), ("start", None), ("end", None), ("step", 1)),
        "slice_copy(x, 1, 0, 3, 2).tolist()\n    [[0, 2], [3, 5]]",
    ),
    _ViewCopy(
        "view_as_real_copy",
        lambda x: _C.view_as_real(x),
        (),
        "view_as_real_copy(x.to(fc.complex64)[0, :1]).tolist()\n    [[0.0, 0.0]]",
    ),
    _ViewCopy(
        "view_as_complex_copy",
        lambda x: _C.view_as_complex(x),
        (),
        "view_as_complex_copy(x.float()[:, :2].contiguous()).tolist()\n    [1j, (3+4j)]",
    ),
    _ViewCopy(
        "split_with_sizes_copy",
        split_with_sizes,
        (("split_sizes",), ("dim", 0)),
        "[t.tolist() for t in split_with_sizes_copy(x, [1, 2], 1)]\n    [[[0], [3]], [[1, 2], [4, 5]]]",
    ),
    _ViewCopy(
        "split_copy",
        unsafe_split,  # split with an int split_size only, as PyTorch's split_copy
        (("split_size",), ("dim", 0)),
        "[t.shape for t in split_copy(x, 2, 1)]\n    [flambeau.Size([2, 2]), flambeau.Size([2, 1])]",
    ),
)


def _make_copy(spec: _ViewCopy) -> Callable:
    sig = _signature(*spec.params)
    name = spec.name

    def copy(*args: Any, **kwargs: Any) -> Any:
        a = _bind(name, sig, args, kwargs)
        x, out = a.pop("input"), a.pop("out")
        check_tensor(name, x)
        result = call_as(name, spec.view, x, **a)
        if is_tensor_like(result):  # a tensor-like's view (vmap's BatchedTensor) is one tensor too
            return _C._copy_to_out(name, result.clone(memory_format=_C.contiguous_format), out, True)
        results = tuple(r.clone(memory_format=_C.contiguous_format) for r in result)
        if out is None:
            return results
        _copy_outs(name, results, out)
        return None

    view_name = name.removesuffix("_copy")
    copy.__name__ = copy.__qualname__ = name
    copy.__signature__ = sig
    copy.__doc__ = (
        f"{name}{sig}\n\n"
        f"Performs the same operation as ``{view_name}``, but every result is a new contiguous tensor (a copy "
        "that shares no memory with ``input``), as PyTorch's view-copy functions.\n\n"
        "Example:\n"
        "    >>> import flambeau_core as fc\n"
        "    >>> from flambeau_core import " + name + "\n"
        "    >>> x = fc.arange(6).reshape(2, 3)\n"
        f"    >>> {spec.example}\n"
    )
    return copy


COPIES = {spec.name: _make_copy(spec) for spec in _COPIES}


def _narrow_copy_method(self, dim: int, start: int, length: int):
    """``narrow_copy(self, dim, start, length)``: a new contiguous tensor of the narrowed part.

    Example:
        >>> import flambeau_core as fc
        >>> fc.arange(6).narrow_copy(0, 2, 3).tolist()
        [2, 3, 4]
    """
    return COPIES["narrow_copy"](self, dim, start, length)


# ---- *_scatter: a copy of input with src written into a view of it (Note [Scatters through positions]) ----


@dataclass(frozen=True)
class _Scatter:
    name: str
    view: Callable  # the view op on a tensor of input's shape (positions)
    params: tuple
    what: str  # what the view is called in the shape error
    example: str  # a call on x = zeros(2, 3), and what it gives


def _has_zero_stride_overlap(x) -> bool:
    return any(n > 1 and s == 0 for n, s in zip(x.shape, x.stride(), strict=True))


def _storage_values(x) -> tuple[Any, Any, int]:
    """x's storage as a 1-D tensor differentiable in x's elements, x's storage positions (1-D, x's element
    order) and the storage's element count."""
    elements = x._storage_nbytes // x.element_size()
    positions = _C.arange(elements, device=x.device).as_strided(tuple(x.shape), x.stride(), x.storage_offset())
    with _no_grad():  # the elements x does not cover, as plain data
        storage = x.as_strided((elements,), (1,), 0).clone()
    flat = positions.reshape(-1)
    return storage.index_copy(0, flat, x.reshape(-1)), flat, elements


def _as_strided_scatter(name: str, x, src, size, stride, storage_offset):
    if _has_zero_stride_overlap(x):  # PyTorch clones such an input first: positions of the clone
        x = x.clone(memory_format=_C.contiguous_format)
    storage, positions, elements = _storage_values(x)
    offset = x.storage_offset() if storage_offset is None else storage_offset
    slot = call_as(name, _C.arange(elements, device=x.device).as_strided, size, stride, offset)
    _check_src(name, src, slot, "strided view")
    if _has_zero_stride_overlap(slot):
        raise _C.FlambeauError(
            f"[{name}] more than one element of the view (size {tuple(slot.shape)}, stride {slot.stride()}) "
            "refers to one memory location; clone() the input or use strides that do not overlap"
        )
    storage = storage.index_copy(0, slot.reshape(-1), src.to(x.dtype).reshape(-1))
    return storage.index_select(0, positions).view(tuple(x.shape))


def _with_layout_of(x, result):
    """result with x's order of strides, as PyTorch's scatters keep input's strides (the same strides for a
    dense input; an input with gaps gives dense strides in its order, one with overlaps contiguous ones)."""
    if x.is_contiguous() or _has_zero_stride_overlap(x):
        return result
    order = sorted(range(x.dim()), key=lambda d: (-x.stride(d), -x.shape[d]))  # outermost dim first
    inverse = [order.index(d) for d in range(x.dim())]
    return result.permute(order).contiguous().permute(inverse)


def _check_src(name: str, src, slot, what: str) -> None:
    if tuple(src.shape) != tuple(slot.shape):
        raise _C.FlambeauError(
            f"[{name}] expected src to have the shape of the {what} of input, {tuple(slot.shape)}, "
            f"got src of shape {tuple(src.shape)}"
        )


def _slice(x, dim, start, end, step):
    if is_int(step) and step <= 0:
        raise _C.FlambeauError(f"[slice] step must be positive, got {step}")
    x.size(dim)  # IndexError for a dim out of range
    return x[(slice(None),) * (dim % x.dim()) + (slice(start, end, step),)]


_SCATTERS = (
    _Scatter(
        "slice_scatter",
        _slice,
        (("dim", 0), ("start", None), ("end", None), ("step", 1)),
        "slice",
        "slice_scatter(x, fc.ones(2, 2), 1, 0, None, 2).tolist()\n    [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]]",
    ),
    _Scatter(
        "select_scatter",
        lambda x, dim, index: x.select(dim, index),
        (("dim",), ("index",)),
        "selection",
        "select_scatter(x, fc.ones(3), 0, 1).tolist()\n    [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]",
    ),
    _Scatter(
        "diagonal_scatter",
        lambda x, offset, dim1, dim2: x.diagonal(offset, dim1, dim2),
        (("offset", 0), ("dim1", 0), ("dim2", 1)),
        "diagonal",
        "diagonal_scatter(x, fc.ones(2), 1).tolist()\n    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]",
    ),
    _Scatter(
        "as_strided_scatter",
        None,  # storage positions: _as_strided_scatter
        (("size",), ("stride",), ("storage_offset", None)),
        "strided view",
        "as_strided_scatter(x, fc.ones(2), (2,), (4,)).tolist()\n    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]",
    ),
)


def _make_scatter(spec: _Scatter) -> Callable:
    sig = _signature(("src",), *spec.params)
    name = spec.name

    def scatter(*args: Any, **kwargs: Any) -> Any:
        a = _bind(name, sig, args, kwargs)
        x, src, out = a.pop("input"), a.pop("src"), a.pop("out")
        check_tensor(name, x)
        check_tensor(name, src, "src")
        if spec.view is None:
            result = _with_layout_of(x, _as_strided_scatter(name, x, src, **a))
        elif src.requires_grad and not x.requires_grad and _C.is_grad_enabled():
            positions = _C.arange(x.numel(), device=x.device).view(tuple(x.shape))
            slot = call_as(name, spec.view, positions, **a)
            _check_src(name, src, slot, spec.what)
            flat = x.reshape(-1).index_copy(0, slot.reshape(-1), src.to(x.dtype).reshape(-1))
            result = _with_layout_of(x, flat.view(tuple(x.shape)))
        else:  # the in-place form records every other case, at a fraction of the cost
            result = x.clone()
            slot = call_as(name, spec.view, result, **a)
            _check_src(name, src, slot, spec.what)
            slot.copy_(src)
        return _C._copy_to_out(name, result, out, True)

    scatter.__name__ = scatter.__qualname__ = name
    scatter.__signature__ = sig
    view_name = name.removesuffix("_scatter")
    scatter.__doc__ = (
        f"{name}{sig}\n\n"
        f"A copy of ``input`` with ``src`` written into ``input.{view_name}(...)`` (the {spec.what} the other "
        f"arguments select). ``src`` must have exactly the shape of that {spec.what}; it is cast to input's "
        "dtype. Differentiable in both ``input`` and ``src``; the result is a new tensor laid out as input is.\n\n"
        "Example:\n"
        "    >>> import flambeau_core as fc\n"
        "    >>> from flambeau_core import " + name + "\n"
        "    >>> x = fc.zeros(2, 3)\n"
        f"    >>> {spec.example}\n"
    )
    return scatter


SCATTERS = {spec.name: _make_scatter(spec) for spec in _SCATTERS}


def install() -> None:
    import flambeau_core

    for name, fn in (COPIES | SCATTERS).items():
        setattr(flambeau_core, name, fn)
    for name, fn in SCATTERS.items():  # Tensor methods too: x.slice_scatter(src, ...)
        setattr(_C.Tensor, name, fn)
    _C.Tensor.narrow_copy = _narrow_copy_method
