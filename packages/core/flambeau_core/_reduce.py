"""The sorting and searching functions whose result arity depends on a flag.

``unique``, ``unique_consecutive`` and ``nonzero`` return one tensor or a
tuple depending on ``return_inverse``/``return_counts``/``as_tuple``, as in
PyTorch; the op table's entries (``_unique2``, ``unique_dim``,
``_unique_consecutive``, ``_nonzero``) always compute every part, and these
wrappers pick what was asked for.
"""

from __future__ import annotations

from flambeau_core import _C


def _pick(result, return_inverse: bool, return_counts: bool):
    values, inverse, counts = result
    if not return_inverse and not return_counts:
        return values
    out = [values]
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(counts)
    return tuple(out)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The unique elements of input (slices along ``dim`` if given), in ascending order.

    With ``return_inverse`` also the index of each element's value in the result (input's shape, or
    (input.size(dim),)); with ``return_counts`` also how often each value occurs. NaNs are all distinct.

    >>> import flambeau_core as fc
    >>> fc.unique(fc.tensor([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    if dim is None:
        r = _C._unique2(input, sorted, return_inverse, return_counts)
    else:
        r = _C.unique_dim(input, dim, sorted, return_inverse, return_counts)
    return _pick(r, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """input with each run of equal consecutive elements (slices along ``dim``) collapsed to one.

    >>> import flambeau_core as fc
    >>> fc.unique_consecutive(fc.tensor([1, 1, 2, 1])).tolist()
    [1, 2, 1]
    """
    r = _C._unique_consecutive(input, return_inverse, return_counts, dim)
    return _pick(r, return_inverse, return_counts)


def nonzero(input, *, out=None, as_tuple=False):  # noqa: A002
    """The indices of the nonzero elements: an (n, input.dim()) int64 tensor in row-major order, or
    with ``as_tuple`` one 1-D tensor per dim (a 0-dim input counts as 1-D).

    >>> import flambeau_core as fc
    >>> fc.nonzero(fc.tensor([0, 3, 0, 4])).tolist()
    [[1], [3]]
    """
    if not as_tuple:
        r = _C._nonzero(input)
        return r if out is None else _C._copy_to_out("nonzero", r, out, True)
    if out is not None:
        raise TypeError("[nonzero] out= is not supported with as_tuple=True")
    x = input.reshape((1,)) if input.dim() == 0 else input
    return tuple(_C.where(x))


def _tensor_unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    return unique(self, sorted, return_inverse, return_counts, dim)


def _tensor_unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


def _tensor_nonzero(self, *, as_tuple=False):
    return nonzero(self, as_tuple=as_tuple)


_tensor_unique.__doc__ = unique.__doc__
_tensor_unique_consecutive.__doc__ = unique_consecutive.__doc__
_tensor_nonzero.__doc__ = nonzero.__doc__
_C.Tensor.unique = _tensor_unique
_C.Tensor.unique_consecutive = _tensor_unique_consecutive
_C.Tensor.nonzero = _tensor_nonzero
