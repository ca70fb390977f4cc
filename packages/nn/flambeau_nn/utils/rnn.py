"""Packed variable-length sequences (``flambeau_nn.utils.rnn``, PyTorch's ``torch.nn.utils.rnn``).

A :class:`PackedSequence` holds the steps of a batch of sequences sorted by
decreasing length, step after step: ``data`` is ``(sum(lengths), *)`` and
``batch_sizes[t]`` says how many sequences are still running at step ``t``.
The recurrent layers (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``) take it as input and
skip the padding entirely.

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    >>> x = fc.arange(6.0).reshape(3, 2)  # (T=3, B=2)
    >>> p = pack_padded_sequence(x, [3, 1])
    >>> p.data.tolist(), p.batch_sizes.tolist()
    ([0.0, 1.0, 2.0, 4.0], [2, 1, 1])
    >>> pad_packed_sequence(p)[0].tolist()
    [[0.0, 1.0], [2.0, 0.0], [4.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]


class PackedSequence(NamedTuple):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)`` as PyTorch's.

    ``sorted_indices[i]`` is the original batch position of the ``i``-th longest
    sequence and ``unsorted_indices`` its inverse (both ``None`` when the batch
    was given sorted).
    """

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self._replace(data=self.data.to(*args, **kwargs))

    def float(self) -> PackedSequence:
        return self.to(fc.float32)

    def double(self) -> PackedSequence:
        return self.to(fc.float64)

    @property
    def is_cuda(self) -> bool:
        return False


def _lengths_list(lengths: Any, op: str) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise FlambeauError(f"[{op}] lengths must be a 1-D tensor, got shape {tuple(lengths.shape)}")
        return [int(v) for v in lengths.tolist()]
    try:
        return [int(v) for v in lengths]
    except TypeError:
        raise TypeError(
            f"[{op}] lengths must be a 1-D tensor or a list of ints, got {type(lengths).__name__}"
        ) from None


def _invert(perm: list[int]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _packed_rows(batch_sizes: list[int], batch: int) -> list[int]:
    """Rows of the (T * B) flattened padded tensor that a packed layout takes, in order."""
    return [t * batch + b for t, bs in enumerate(batch_sizes) for b in range(bs)]


def pack_padded_sequence(
    input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Packs a padded batch ``(T, B, *)`` (``(B, T, *)`` if batch_first) of sequences of ``lengths``.

    With ``enforce_sorted=True`` the lengths must be non-increasing; otherwise the
    batch is sorted here and the permutation kept in the result.
    """
    op = "pack_padded_sequence"
    if not isinstance(input, Tensor):
        raise TypeError(f"[{op}] input must be a Tensor, got {type(input).__name__}")
    lens = _lengths_list(lengths, op)
    if input.dim() < 2:
        raise FlambeauError(f"[{op}] input must have at least 2 dims (T, B, *), got shape {tuple(input.shape)}")
    batch_dim = 0 if batch_first else 1
    batch = input.shape[batch_dim]
    if len(lens) != batch:
        raise FlambeauError(
            f"[{op}] expected {batch} lengths (the batch size of input shape {tuple(input.shape)}), got {len(lens)}"
        )
    if batch == 0:
        raise FlambeauError(f"[{op}] cannot pack an empty batch")
    if min(lens) <= 0:
        raise FlambeauError(
            f"[{op}] Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    steps = input.shape[1 - batch_dim]
    if max(lens) > steps:
        raise FlambeauError(
            f"[{op}] a length of {max(lens)} exceeds the {steps} steps of input shape {tuple(input.shape)}"
        )
    if enforce_sorted:
        if any(lens[i] < lens[i + 1] for i in range(len(lens) - 1)):
            raise FlambeauError(
                f"[{op}] `lengths` array must be sorted in decreasing order when `enforce_sorted` is True, "
                f"got {lens}. You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                "to sidestep this requirement if you do not need ONNX exportability."
            )
        order = None
    else:
        order = sorted(range(batch), key=lambda i: -lens[i])
        lens = [lens[i] for i in order]
    x = input.transpose(0, 1) if batch_first else input
    if order is not None and order != list(range(batch)):
        x = x[:, fc.tensor(order, dtype=fc.int64)]
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    flat = x.reshape([steps * batch, *x.shape[2:]])
    data = flat[fc.tensor(_packed_rows(batch_sizes, batch), dtype=fc.int64)]
    sorted_t = unsorted_t = None
    if order is not None:
        sorted_t = fc.tensor(order, dtype=fc.int64)
        unsorted_t = fc.tensor(_invert(order), dtype=fc.int64)
    return PackedSequence(data, fc.tensor(batch_sizes, dtype=fc.int64), sorted_t, unsorted_t)


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor, Tensor]:
    """Inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``, the batch in its original order."""
    op = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"[{op}] expected a PackedSequence, got {type(sequence).__name__}")
    batch_sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise FlambeauError(
                f"[{op}] Expected total_length to be at least the length of the longest sequence in input, "
                f"but got total_length={total_length} and max sequence length being {steps}"
            )
        steps = total_length
    batch = batch_sizes[0] if batch_sizes else 0
    data = sequence.data
    trailing = list(data.shape[1:])
    out = fc.full([steps * batch, *trailing], padding_value, dtype=data.dtype)
    out[fc.tensor(_packed_rows(batch_sizes, batch), dtype=fc.int64)] = data
    out = out.reshape([steps, batch, *trailing])
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(batch)]
    if sequence.unsorted_indices is not None:
        out = out[:, sequence.unsorted_indices]
        lengths = [lengths[i] for i in sequence.unsorted_indices.tolist()]
    if batch_first:
        out = out.transpose(0, 1)
    return out, fc.tensor(lengths, dtype=fc.int64)


def pad_sequence(
    sequences: Sequence[Tensor] | Tensor,
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stacks tensors ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` if batch_first), padded."""
    op = "pad_sequence"
    if padding_side not in ("right", "left"):
        raise FlambeauError(f"[{op}] padding_side must be 'left' or 'right', got {padding_side!r}")
    seqs = list(sequences)
    if not seqs:
        raise FlambeauError(f"[{op}] received an empty list of sequences")
    for s in seqs:
        if not isinstance(s, Tensor):
            raise TypeError(f"[{op}] every sequence must be a Tensor, got {type(s).__name__}")
    trailing = tuple(seqs[0].shape[1:])
    for s in seqs:
        if s.dim() == 0 or tuple(s.shape[1:]) != trailing:
            raise FlambeauError(
                f"[{op}] every sequence must have shape (L, *{trailing}), got {tuple(s.shape)} and "
                f"{tuple(seqs[0].shape)}"
            )
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        missing = longest - s.shape[0]
        if missing:
            pad = fc.full([missing, *trailing], padding_value, dtype=s.dtype)
            s = fc.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return fc.stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of tensors ``(L_i, *)``: ``pack_padded_sequence(pad_sequence(seqs), lengths)``."""
    seqs = list(sequences)
    lengths = [s.shape[0] for s in seqs]
    return pack_padded_sequence(pad_sequence(seqs), lengths, enforce_sorted=enforce_sorted)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an int64 permutation vector (``None`` stays ``None``).

    Example:
        >>> import flambeau_core as fc
        >>> invert_permutation(fc.tensor([2, 0, 1])).tolist()
        [1, 2, 0]
    """
    if permutation is None:
        return None
    return fc.empty_like(permutation).scatter(0, permutation, fc.arange(permutation.numel(), dtype=permutation.dtype))


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list[Tensor]:
    """The inverse of ``pad_sequence``: the ``(L_i, *)`` tensors of a padded batch, given their lengths.

    Example:
        >>> import flambeau_core as fc
        >>> padded = pad_sequence([fc.ones(2), fc.ones(1)], batch_first=True)
        >>> [t.tolist() for t in unpad_sequence(padded, fc.tensor([2, 1]), batch_first=True)]
        [[1.0, 1.0], [1.0]]
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    sizes = _lengths_list(lengths, "unpad_sequence")
    if len(sizes) != padded_sequences.shape[0]:
        raise FlambeauError(
            f"[unpad_sequence] got {len(sizes)} lengths for a batch of {padded_sequences.shape[0]} sequences"
        )
    return [padded_sequences[i, :n] for i, n in enumerate(sizes)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of ``pack_sequence``: the list of ``(L_i, *)`` tensors, in their original order.

    Example:
        >>> import flambeau_core as fc
        >>> seqs = [fc.tensor([1.0, 2.0]), fc.tensor([3.0]), fc.tensor([4.0, 5.0, 6.0])]
        >>> [t.tolist() for t in unpack_sequence(pack_sequence(seqs, enforce_sorted=False))]
        [[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
