"""Move model weights between PyTorch and flambeau (the migration bridge).

A PyTorch ``state_dict`` becomes a dict of flambeau tensors and back, sharing
memory through DLPack (no copy) unless ``copy=True``. Non-tensor entries (for
example a module's ``_extra_state``) are passed through unchanged, and the
order of the entries is kept. torch is imported only when these functions
run, so flambeau-interop does not depend on it.

Example:
    >>> import torch
    >>> from flambeau_interop.torch_bridge import state_dict_from_torch, state_dict_to_torch
    >>> linear = torch.nn.Linear(3, 2)
    >>> fb_state = state_dict_from_torch(linear.state_dict())
    >>> fb_state["weight"].shape
    flambeau.Size([2, 3])
    >>> linear.load_state_dict(state_dict_to_torch(fb_state))
    <All keys matched successfully>
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import flambeau_core

from flambeau_interop._C import from_dlpack

if TYPE_CHECKING:
    import torch

__all__ = ["state_dict_from_torch", "state_dict_to_torch"]


def _entries(state_dict: Any, op: str) -> Mapping[str, Any]:
    # A module is accepted in place of its state_dict (both libraries name it so).
    if not isinstance(state_dict, Mapping) and callable(getattr(state_dict, "state_dict", None)):
        state_dict = state_dict.state_dict()
    if not isinstance(state_dict, Mapping):
        kind = type(state_dict).__name__
        raise TypeError(f"[{op}] expected a state_dict (a mapping of names to tensors), got {kind}")
    return state_dict


def state_dict_from_torch(state_dict: Mapping[str, Any], *, copy: bool = False) -> dict[str, Any]:
    """Converts a PyTorch ``state_dict`` into a dict of flambeau tensors.

    Each tensor is detached and, if it is on a GPU, copied to the cpu first;
    a cpu tensor shares its memory with the flambeau tensor (writes through
    one are seen by the other) unless ``copy=True``. The PyTorch memory stays
    alive as long as the flambeau tensor needs it.

    Raises TypeError for a dtype flambeau lacks (complex32, quantized, ...) or a
    tensor that is not strided (sparse).

    Example:
        >>> sd = state_dict_from_torch(torch.nn.Linear(3, 2).state_dict())
        >>> sorted(sd)
        ['bias', 'weight']
    """
    import torch

    op = "state_dict_from_torch"
    out: dict[str, Any] = {}
    for name, value in _entries(state_dict, op).items():
        if not isinstance(value, torch.Tensor):
            out[name] = value
            continue
        if value.layout != torch.strided:
            raise TypeError(f"[{op}] entry {name!r} has layout {value.layout}; only dense (strided) tensors convert")
        if value.is_quantized:  # complex converts (its conj bit resolved below)
            raise TypeError(f"[{op}] entry {name!r} has dtype {value.dtype}, which flambeau does not support")
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.resolve_conj().resolve_neg()
        if copy:
            t = t.clone()
        try:
            out[name] = from_dlpack(t)
        except (TypeError, ValueError, BufferError) as e:
            raise type(e)(f"[{op}] entry {name!r}: {e}") from e
    return out


def state_dict_to_torch(state_dict: Mapping[str, Any], *, copy: bool = False) -> dict[str, torch.Tensor]:
    """Converts a dict of flambeau tensors (e.g. ``Module.state_dict()``) into PyTorch tensors.

    The PyTorch tensors share memory with the flambeau ones unless
    ``copy=True``; gradients are not carried over (tensors are detached).

    Example:
        >>> import flambeau_core as fc
        >>> state_dict_to_torch({"w": fc.ones(2)})["w"]
        tensor([1., 1.])
    """
    import torch

    op = "state_dict_to_torch"
    out: dict[str, Any] = {}
    for name, value in _entries(state_dict, op).items():
        if not isinstance(value, flambeau_core.Tensor):
            out[name] = value
            continue
        if value.requires_grad:
            # A new tensor object sharing the storage, with no autograd metadata.
            value = flambeau_core.Tensor(value)
        t = torch.from_dlpack(value)
        out[name] = t.clone() if copy else t
    return out
