"""Collation: turning a list of samples into a batch, with PyTorch's semantics.

``default_collate`` recurses through the structure of the first sample:

* tensors are stacked along a new dim 0 (``flambeau_core.stack``);
* NumPy arrays become tensors and are stacked; NumPy scalars become a 1-D tensor;
* Python floats become a float64 tensor, ints an int64 tensor (bools a bool tensor);
* strings and bytes are left as a list;
* a mapping gives a mapping of the same type, key by key;
* a namedtuple gives the same namedtuple, field by field;
* another sequence is transposed and collated position by position: a tuple
  gives a list (as in PyTorch), a list gives a list.

Example:
    >>> import flambeau_core as fc
    >>> batch = default_collate([(fc.zeros(3), 1), (fc.ones(3), 2)])
    >>> batch[0].shape, batch[1].tolist()
    (flambeau.Size([2, 3]), [1, 2])
"""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError
from flambeau_core._C import _stack_sample_fields, _stack_samples

from flambeau_data._convert import is_numpy_array, is_numpy_scalar, numpy_to_tensor
from flambeau_data.dataset import GatheredBatch

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

# NumPy dtypes that cannot become tensors: strings, bytes, objects.
_NP_STR_OBJ = re.compile(r"[SaUO]")

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _collate_tensor(batch: list[Any], *, collate_fn_map: Any = None) -> fc.Tensor:
    # Note [Stacking samples] (core): same-shape contiguous cpu samples are copied straight into the batch,
    # one memcpy each; None for anything else (subclasses, grad, other devices, mixed shapes or dtypes).
    out = _stack_samples(batch)
    if out is not None:
        return out
    types = set(map(type, batch))
    if len(types) == 1 and fc.Tensor in types:
        try:
            # One cat into the batch, no view per sample (Note [Stack as cat], core's composite/shape.cpp);
            # stack checks the shapes itself: no Python loop per sample.
            return fc.stack(list(batch), 0)
        except RuntimeError:
            _check_equal_shapes(batch)  # PyTorch's message where the shapes differ
            raise
    _check_equal_shapes(batch)
    return fc.stack(list(batch), 0)


def _check_equal_shapes(batch: list[Any]) -> None:
    shape = batch[0].shape
    for t in batch:
        if not isinstance(t, fc.Tensor) or t.shape != shape:
            shapes = [tuple(b.shape) if isinstance(b, fc.Tensor) else type(b).__name__ for b in batch]
            raise FlambeauError(
                f"[default_collate] stack expects each tensor to be equal size, but got shapes {shapes} "
                "(one per sample of the batch, in order)"
            )


def _collate_numpy_array(batch: list[Any], *, collate_fn_map: Any = None) -> fc.Tensor:
    import numpy as np

    elem = batch[0]
    if _NP_STR_OBJ.search(elem.dtype.str) is not None:
        raise TypeError(_ERR.format(elem.dtype))
    shapes = [getattr(b, "shape", type(b).__name__) for b in batch]
    if len(set(shapes)) != 1:
        raise FlambeauError(
            f"[default_collate] stack expects each array to be equal size, but got shapes {shapes} "
            "(one per sample of the batch, in order)"
        )
    # One NumPy stack then one zero-copy view: cheaper than a tensor per sample.
    return numpy_to_tensor(np.stack(batch), "default_collate")


def _collate_numpy_scalar(batch: list[Any], *, collate_fn_map: Any = None) -> fc.Tensor:
    import numpy as np

    arr = np.array(batch)
    if _NP_STR_OBJ.search(arr.dtype.str) is not None:
        raise TypeError(_ERR.format(arr.dtype))
    return numpy_to_tensor(arr, "default_collate")


def _collate_float(batch: list[Any], *, collate_fn_map: Any = None) -> fc.Tensor:
    return fc.tensor(list(batch), dtype=fc.float64)


def _collate_int(batch: list[Any], *, collate_fn_map: Any = None) -> fc.Tensor:
    # bool is an int subclass: a batch of bools gives a bool tensor, as in PyTorch.
    if all(isinstance(b, bool) for b in batch):
        return fc.tensor(list(batch), dtype=fc.bool)
    return fc.tensor([int(b) for b in batch], dtype=fc.int64)


def _collate_str(batch: list[Any], *, collate_fn_map: Any = None) -> list[Any]:
    return batch  # as PyTorch: a list at the top level, a tuple inside a transposed sequence


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


# type -> collate function, tried in order (exact type first, then isinstance).
# NumPy entries are resolved lazily in `collate` so NumPy is never imported here.
default_collate_fn_map: dict[type | tuple[type, ...], Callable[..., Any]] = {
    fc.Tensor: _collate_tensor,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def _has_entry_for(elem: Any, collate_fn_map: dict[Any, Callable[..., Any]]) -> bool:
    """Whether an entry of ``collate_fn_map`` takes ``elem`` (``isinstance``), without a generator per call."""
    for collate_type in collate_fn_map:
        if isinstance(elem, collate_type):
            return True
    return False


def collate(batch: Any, *, collate_fn_map: dict[Any, Callable[..., Any]] | None = None) -> Any:
    """The general collate function: ``collate_fn_map`` maps element types to functions.

    Containers (mappings, namedtuples, sequences) are handled here, recursively;
    leaves are looked up in ``collate_fn_map`` (exact type first, then
    ``isinstance``). ``default_collate`` is ``collate`` with
    ``default_collate_fn_map`` plus NumPy arrays and scalars.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.data import collate, default_collate_fn_map
        >>> batch = [{"x": fb.tensor([1.0, 2.0]), "label": 0}, {"x": fb.tensor([3.0, 4.0]), "label": 1}]
        >>> out = collate(batch, collate_fn_map=default_collate_fn_map)
        >>> out["x"], out["label"]
        (tensor([[1., 2.],
                [3., 4.]]), tensor([0, 1]))
        >>> as_lists = {str: lambda batch, collate_fn_map=None: list(batch)}
        >>> collate([("a", "b"), ("c", "d")], collate_fn_map=as_lists)
        [['a', 'c'], ['b', 'd']]
    """
    if type(batch) is GatheredBatch:  # Note [Batched fetch]: already one tensor per field
        return list(batch.tensors)
    if not isinstance(batch, (list, tuple)):
        batch = list(batch)
    if not batch:
        raise FlambeauError("[collate] cannot collate an empty batch")
    elem = batch[0]
    elem_type = type(elem)

    if collate_fn_map is not None:
        if (
            elem_type is tuple
            and collate_fn_map.get(fc.Tensor) is _collate_tensor
            and not _has_entry_for(elem, collate_fn_map)
        ):
            # Note [Stacking samples] (core): the x[i], y[i] Dataset's tuples of tensors (the map has no
            # entry of its own for them), each position stacked straight from the tuples, as the
            # transposition below would; None (nothing made) for anything else, collated below.
            out = _stack_sample_fields(batch)
            if out is not None:
                return out
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        if is_numpy_array(elem):
            return _collate_numpy_array(batch)
        if is_numpy_scalar(elem):
            return _collate_numpy_scalar(batch)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
    if _is_namedtuple(elem):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch, strict=False)))
    if isinstance(elem, collections.abc.Sequence):
        if len(set(map(len, batch))) != 1:
            raise FlambeauError(
                f"[default_collate] each element in list of batch should be of equal size, got sizes "
                f"{sorted({len(e) for e in batch})}"
            )
        transposed = list(zip(*batch, strict=False))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))


def default_collate(batch: Any) -> Any:
    """Collates a list of samples into a batch (see the module docstring for the rules).

    Example:
        >>> out = default_collate([{"x": 1.0, "y": "a"}, {"x": 2.0, "y": "b"}])
        >>> out["x"].tolist(), out["y"]
        ([1.0, 2.0], ['a', 'b'])
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data: Any) -> Any:
    """Converts NumPy arrays inside ``data`` to tensors, keeping everything else.

    The loader uses it instead of ``default_collate`` when automatic batching is
    off (``batch_size=None``).

    Example:
        >>> default_convert([1, "a"])
        [1, 'a']
    """
    elem_type = type(data)
    if isinstance(data, fc.Tensor):
        return data
    if is_numpy_array(data) or is_numpy_scalar(data):
        import numpy as np

        arr = np.asarray(data)
        if _NP_STR_OBJ.search(arr.dtype.str) is not None:
            return data
        return numpy_to_tensor(arr, "default_convert")
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if _is_namedtuple(data):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _map_tensors(obj: Any, fn: Callable[[fc.Tensor], Any]) -> Any:
    """``obj`` with ``fn`` applied to every tensor inside (mappings, namedtuples, lists, tuples)."""
    if isinstance(obj, fc.Tensor):
        return fn(obj)
    if isinstance(obj, collections.abc.Mapping):
        try:
            return type(obj)({k: _map_tensors(v, fn) for k, v in obj.items()})
        except TypeError:
            return {k: _map_tensors(v, fn) for k, v in obj.items()}
    if _is_namedtuple(obj):
        return type(obj)(*(_map_tensors(v, fn) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(v, fn) for v in obj)
    return obj
