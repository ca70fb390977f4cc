"""``LinearCrossEntropyOptions``: how ``F.linear_cross_entropy`` splits the batch into chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flambeau_core import FlambeauError

__all__ = ["LinearCrossEntropyOptions"]

_AUTO_CHUNKING = "aspect_ratio:2"  # PyTorch's pick for a device/dtype it has no measurement for


@dataclass
class LinearCrossEntropyOptions:
    r"""Opts ``F.linear_cross_entropy`` into the chunked path: the batch is processed ``batch_chunk_size`` rows
    at a time and each chunk's logits are recomputed in the backward pass (activation checkpointing), so the
    full ``(num_batches, num_classes)`` logits never live at once.

    ``chunking_method`` picks the chunk size: ``"aspect_ratio[:N]"`` makes a
    chunk's logits about the size of the input (divided by ``N``); ``"auto"``
    is ``"aspect_ratio:2"``; ``None`` uses ``batch_chunk_size``.
    ``acc_policy``/``acc_dtype``/``allow_retain_graph`` are validated as in
    PyTorch; flambeau accumulates in the input's dtype and a second backward
    through a retained graph always works.

    Example:
        >>> LinearCrossEntropyOptions(batch_chunk_size=64, chunking_method=None).batch_chunk_size
        64
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise FlambeauError(f"[LinearCrossEntropyOptions] invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise FlambeauError(f"[LinearCrossEntropyOptions] invalid chunking_method: {self.chunking_method!r}")
        if not (
            self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)
        ):
            raise FlambeauError(
                "[LinearCrossEntropyOptions] batch_chunk_size must be positive int or None, got "
                f"{self.batch_chunk_size!r}"
            )

    def _chunk_size(self, num_batches: int, in_features: int, num_classes: int) -> int:
        """The rows per chunk for this call (PyTorch's rule)."""
        method = self.chunking_method
        if method == "auto":
            method = None if self.batch_chunk_size is not None else _AUTO_CHUNKING
        if method is None:
            return num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        target = -(-num_batches // -(-num_classes // in_features))
        size = min((1 << (target - 1).bit_length()) // factor, num_batches)
        if self.batch_chunk_size is not None and self.batch_chunk_size != size:
            raise FlambeauError(
                f"[LinearCrossEntropyOptions] batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                f"('{method}') give different chunk sizes ({self.batch_chunk_size} vs {size}); set one of them"
            )
        return max(size, 1)
