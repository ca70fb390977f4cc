"""``functionalize`` and ``debug_unwrap`` (``torch.func``'s, from its eager transforms).

Note [functionalize in eager flambeau]
PyTorch's ``functionalize`` rewrites a program's in-place ops into out-of-place ones while tracing, for
backends that cannot mutate. flambeau runs eagerly and has no graph to rewrite, so ``functionalize(f)`` keeps
what a caller can observe of PyTorch's eager ``functionalize``: ``f`` runs on copies of its tensor inputs
(so every mutation inside ``f`` lands on a fresh tensor), then each input whose copy was mutated (its
version counter moved) gets the new values written back with ``copy_``. An output is never memory of a
mutated input. An unmutated input that ``f`` returns as it is comes back as the caller's tensor; an output
that is a view of an unmutated input is, with ``remove="mutations"``, the same view of the caller's tensor
(PyTorch re-creates such views on it) and, with ``remove="mutations_and_views"``, a view of the copy (PyTorch
replaces views by copies there). Autograd records the copies, the write-back and the views, so gradients flow
to the inputs as through ``f`` itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flambeau_core
from flambeau_core import FlambeauError, Tensor

from flambeau.func._pytree import tree_flatten, tree_unflatten
from flambeau.func._vmap import BatchedTensor

__all__ = ["functionalize", "debug_unwrap"]

_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    r"""functionalize(func, *, remove="mutations") -> Callable

    Returns a function with ``func``'s semantics that does not mutate through aliases: ``func`` runs on
    copies of its tensor inputs and any mutation it makes to an input is written back into that input
    afterwards, as ``torch.func.functionalize`` behaves when run eagerly.

    In flambeau there is no graph to rewrite (Note [functionalize in eager flambeau] in
    ``_eager_transforms.py``): the in-place ops still run, on the copies. Outputs never share memory with
    an input that ``func`` mutated. As in PyTorch, an unmutated input returned as it is comes back as the
    caller's tensor, and a view of an unmutated input is that view of the caller's tensor with
    ``remove="mutations"`` but memory of its own with ``remove="mutations_and_views"``.

    Args:
        func (Callable): a function of (pytrees of) tensors and other arguments.
        remove (str): ``"mutations"`` or ``"mutations_and_views"``.

    Returns:
        Callable: the functionalized ``func``, taking the same arguments.

    Raises:
        FlambeauError: ``remove`` is neither option (a ``RuntimeError``, as PyTorch's, and a ``ValueError``).

    Example:
        >>> import flambeau as fb
        >>> def f(x):
        ...     y = x * 2
        ...     y.add_(1)       # a mutation of an intermediate
        ...     x.mul_(10)      # a mutation of the input
        ...     return y
        >>> x = fb.tensor([1.0, 2.0])
        >>> fb.func.functionalize(f)(x).tolist(), x.tolist()
        ([3.0, 5.0], [10.0, 20.0])
    """
    if remove not in _REMOVE:
        raise FlambeauError(
            f"[func.functionalize] functionalize(f, remove='mutations'): received invalid argument for "
            f"remove={remove}. Valid options are: remove='mutations' (in-place and out= operators are replaced "
            "with their out-of-place equivalents) or remove='mutations_and_views' (views too)"
        )

    @functools.wraps(func)
    def functionalized(*args: Any, **kwargs: Any) -> Any:
        leaves, spec = tree_flatten((args, kwargs))
        inputs = [(i, x) for i, x in enumerate(leaves) if isinstance(x, Tensor)]
        copies = list(leaves)
        for i, x in inputs:
            copies[i] = x.clone()
        versions = {i: copies[i]._version for i, _ in inputs}
        call_args, call_kwargs = tree_unflatten(copies, spec)
        output = func(*call_args, **call_kwargs)

        untouched: dict[int, tuple[Tensor, Tensor]] = {}  # storage id of an unmutated copy -> (copy, input)
        for i, x in inputs:
            if copies[i]._version != versions[i]:
                x.copy_(copies[i])
            else:
                untouched[copies[i]._storage_id] = (copies[i], x)

        def on_caller_tensor(out: Any) -> Any:
            if not isinstance(out, Tensor) or out._storage_id not in untouched:
                return out
            copy, x = untouched[out._storage_id]
            if out is copy:
                return x
            # (a copy laid out unlike its input, a non-dense one, has views with no twin on the input)
            if remove == "mutations_and_views" or copy.stride() != x.stride():
                return out
            offset = x.storage_offset() + out.storage_offset() - copy.storage_offset()
            return flambeau_core.as_strided(x, tuple(out.shape), out.stride(), offset)

        out_leaves, out_spec = tree_flatten(output)
        return tree_unflatten([on_caller_tensor(o) for o in out_leaves], out_spec)

    return functionalized


def debug_unwrap(tensor: Any, *, recurse: bool = True) -> Any:
    r"""debug_unwrap(tensor, *, recurse=True) -> Tensor

    The tensor under a ``vmap``-batched value, for debugging (printing inside a transformed function).

    Inside ``vmap(f)``, ``f`` sees each batched input as one sample; ``debug_unwrap`` returns the whole
    batch as flambeau stores it, the batch dim in front (Note [vmap on __torch_function__] in
    ``_vmap.py``). With ``recurse`` (the default), nested ``vmap`` levels are all unwrapped, their batch dims
    in front from the outermost; with ``recurse=False``, only the innermost. Any other value (a plain tensor:
    ``grad`` does not wrap tensors in flambeau) is returned as is. Using the result in the computation of a
    transformed function is not supported, as in PyTorch.

    Args:
        tensor (Tensor): a value seen inside a transformed function.
        recurse (bool): unwrap every nested ``vmap`` level, not only the innermost.

    Returns:
        Tensor: the unwrapped tensor.

    Example:
        >>> import flambeau as fb
        >>> seen = []
        >>> _ = fb.func.vmap(lambda x: seen.append(fb.func.debug_unwrap(x)) or x)(fb.zeros(5, 3))
        >>> tuple(seen[0].shape)
        (5, 3)
    """
    if not isinstance(tensor, BatchedTensor):
        return tensor
    inner = tensor._value
    return debug_unwrap(inner) if recurse else inner
