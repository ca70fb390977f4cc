"""``flambeau.onnx``: ONNX export (``torch.onnx``) is not built yet.

:func:`export` raises NotImplementedError. Meanwhile, export through PyTorch:
``flambeau.save(model.state_dict(), "model.pt")`` writes PyTorch's checkpoint
format, so the same architecture written with ``torch.nn`` loads it with
``torch.load`` + ``load_state_dict`` and ``torch.onnx.export`` writes the file.

Example:
    >>> import flambeau as fb
    >>> fb.onnx.is_in_onnx_export()
    False
"""

from __future__ import annotations

from typing import Any

__all__ = ["export", "is_in_onnx_export"]


def export(model: Any, args: Any = (), f: Any = None, *more: Any, **kwargs: Any) -> None:
    """Not built yet: raises NotImplementedError saying how to export through PyTorch meanwhile."""
    raise NotImplementedError(
        "[onnx.export] ONNX export is not built into flambeau yet. Meanwhile: save the weights with "
        "flambeau.save(model.state_dict(), 'model.pt') (PyTorch's checkpoint format), load them into the same "
        "architecture written with torch.nn (torch.load + load_state_dict) and call torch.onnx.export there"
    )


def is_in_onnx_export() -> bool:
    """False: flambeau never runs a model under ONNX export."""
    return False
