"""Datasets: the map-style and iterable-style protocols, and their combinators.

A map-style dataset has ``__getitem__(index)`` and ``__len__``; an
iterable-style dataset has ``__iter__``. These classes are conveniences: the
DataLoader accepts any object that follows either protocol, NumPy-backed ones
included.
"""

from __future__ import annotations

import array
import bisect
import itertools
import math
import pickle
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import flambeau_core as fc
from flambeau_core import FlambeauError

from flambeau_data import _random
from flambeau_data._convert import as_tensor, is_numpy_array

T_co = TypeVar("T_co", covariant=True)

__all__ = [
    "PackedList",
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, i):
        ...         return i * i
        >>> [Squares()[i] for i in range(4)]
        [0, 1, 4, 9]
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """An iterable-style dataset: subclasses define ``__iter__``.

    With worker processes, each worker iterates its own copy of the dataset;
    use :func:`flambeau_data.get_worker_info` inside ``__iter__`` to give each
    worker its share.

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(3))
        >>> list(Count())
        [0, 1, 2]
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset[T_co]:
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    """Samples are the rows of the given tensors: ``dataset[i] == (t0[i], t1[i], ...)``.

    NumPy arrays are accepted in place of tensors; they are viewed as flambeau
    tensors without copying (a non-contiguous array is made contiguous first).

    Example:
        >>> x = fc.zeros(5, 3)
        >>> y = fc.arange(5)
        >>> ds = TensorDataset(x, y)
        >>> len(ds), ds[1][0].shape
        (5, flambeau.Size([3]))
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise FlambeauError("[TensorDataset] needs at least one tensor")
        converted = []
        for i, t in enumerate(tensors):
            if not isinstance(t, fc.Tensor) and not is_numpy_array(t):
                raise TypeError(
                    f"[TensorDataset] argument {i} must be a flambeau Tensor or a NumPy array, got {type(t).__name__}"
                )
            t = as_tensor(t, "TensorDataset")
            if t.dim() == 0:
                raise FlambeauError(f"[TensorDataset] argument {i} is 0-dimensional; it has no rows to index")
            converted.append(t)
        n = converted[0].shape[0]
        for i, t in enumerate(converted[1:], start=1):
            if t.shape[0] != n:
                raise FlambeauError(
                    f"[TensorDataset] size mismatch between tensors: argument 0 has {n} rows, "
                    f"argument {i} has {t.shape[0]} (shapes {tuple(converted[0].shape)} and {tuple(t.shape)})"
                )
        self.tensors = tuple(converted)

    def __getitem__(self, index: int) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __getitems__(self, indices: list[int]) -> Any:
        """The samples at ``indices``, gathered with one indexed copy per tensor (Note [Batched fetch]).

        Returns a sequence of per-sample tuples that ``default_collate`` turns
        into the batch without stacking samples one by one.
        """
        try:
            packed = array.array("q", indices)
        except (TypeError, ValueError, OverflowError):
            return [self[i] for i in indices]  # not plain ints: sample by sample
        check_indices(indices, len(self), "TensorDataset")
        return GatheredBatch.rows(self.tensors, packed)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


def index_tensor(indices: Sequence[int]) -> fc.Tensor:
    """``indices`` (ints) as an int64 tensor, through an ``array`` (several times faster than ``tensor(list)``)."""
    packed = array.array("q", indices)
    if not packed:
        return fc.empty(0, dtype=fc.int64)
    return fc.frombuffer(packed, dtype=fc.int64)


def check_indices(indices: Sequence[int], n: int, what: str) -> None:
    """Raises IndexError naming the first of ``indices`` (ints) outside ``[-n, n)``."""
    if not len(indices) or (min(indices) >= -n and max(indices) < n):
        return
    bad = next(i for i in indices if not -n <= i < n)
    raise IndexError(f"[{what}] index {bad} is out of range for a dataset of length {n}")


class GatheredBatch(Sequence):
    """The samples of one batch, gathered column-wise: ``tensors[k]`` holds field ``k`` of every sample.

    Note [Batched fetch]: a map-style dataset may define
    ``__getitems__(indices)``; the DataLoader then fetches a whole batch with
    one call instead of one ``__getitem__`` per sample. ``TensorDataset``
    answers with a GatheredBatch: one vectorized gather (``t[index]``) per
    tensor. It behaves as the list of per-sample tuples a ``collate_fn``
    expects (``len``, indexing, iteration), and ``default_collate`` returns
    ``list(tensors)`` directly, which is exactly what stacking the samples
    would give.

    Example:
        >>> b = GatheredBatch((fc.arange(6).view(3, 2), fc.arange(3)))
        >>> len(b), b[1][1].item()
        (3, 1)
    """

    __slots__ = ("_tensors", "sources", "index")

    def __init__(self, tensors: tuple[fc.Tensor, ...]) -> None:
        self._tensors: tuple[fc.Tensor, ...] | None = tuple(tensors)
        self.sources: tuple[fc.Tensor, ...] | None = None
        self.index: array.array | None = None

    @classmethod
    def rows(cls, sources: tuple[fc.Tensor, ...], index: array.array) -> GatheredBatch:
        """The rows ``index`` (in-range ints) of each of ``sources``, gathered on first use.

        Deferred so that a DataLoader worker can gather them straight into
        shared memory (Note [Batch ring]) instead of gathering then copying.
        """
        out = cls.__new__(cls)
        out._tensors, out.sources, out.index = None, tuple(sources), index
        return out

    @property
    def tensors(self) -> tuple[fc.Tensor, ...]:
        if self._tensors is None:
            index = fc.frombuffer(self.index, dtype=fc.int64) if len(self.index) else fc.empty(0, dtype=fc.int64)
            self._tensors = tuple(t[index] for t in self.sources)  # type: ignore[union-attr]
        return self._tensors

    def __len__(self) -> int:
        return len(self.index) if self._tensors is None else self._tensors[0].shape[0]  # type: ignore[arg-type]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return tuple(t[i] for t in self.tensors)

    def __repr__(self) -> str:
        fields = len(self.sources if self._tensors is None else self._tensors)  # type: ignore[arg-type]
        return f"GatheredBatch({len(self)} samples of {fields} fields)"


class ConcatDataset(Dataset[T_co]):
    """The concatenation of several map-style datasets.

    Example:
        >>> ds = ConcatDataset([[1, 2], [3, 4, 5]])
        >>> len(ds), ds[2], ds[-1]
        (5, 3, 5)
    """

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> list[int]:
        """The running totals of the datasets' lengths: where each dataset ends in the concatenation.

        Example:
            >>> from flambeau.utils.data import ConcatDataset
            >>> ConcatDataset.cumsum([[1, 2], [3], [4, 5, 6]])
            [2, 3, 6]
        """
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets: Iterable[Dataset[T_co]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise FlambeauError("[ConcatDataset] datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("[ConcatDataset] does not support IterableDataset; use ChainDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise IndexError(f"[ConcatDataset] index {idx} is out of range for length {len(self)}")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"[ConcatDataset] index {idx} is out of range for length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class StackDataset(Dataset[Any]):
    """Several map-style datasets of one length side by side: sample ``i`` is the tuple (positional
    datasets) or dict (keyword datasets) of each one's sample ``i``.

    Example:
        >>> StackDataset([1, 2], ["a", "b"])[1]
        (2, 'b')
        >>> StackDataset(image=[1, 2], label=["a", "b"])[0]
        {'image': 1, 'label': 'a'}
    """

    datasets: tuple | dict

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError(
                "[StackDataset] give the datasets either positionally (samples are tuples) or by keyword "
                "(samples are dicts), not both"
            )
        if not args and not kwargs:
            raise ValueError("[StackDataset] at least one dataset should be passed")
        self.datasets = args if args else dict(kwargs)
        parts = list(self.datasets.items()) if kwargs else list(enumerate(args))
        lengths = [(name, len(d)) for name, d in parts]  # type: ignore[arg-type]
        self._length = lengths[0][1]
        if any(n != self._length for _, n in lengths):
            sizes = ", ".join(f"{name}: {n}" for name, n in lengths)
            raise ValueError(f"[StackDataset] size mismatch between datasets ({sizes})")

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list[int]) -> Any:
        """The samples at ``indices``, each part fetched in one call where it can be (PyTorch's batched sampling).

        A part with ``__getitems__`` answers for the whole batch (its answer must
        hold one sample per index: ValueError otherwise), any other part is
        indexed sample by sample. When every part is a tensor with rows
        (``StackDataset(images, labels)``), the batch is one indexed copy per
        tensor (Note [Batched fetch]), which ``default_collate`` turns into the
        batch without stacking samples one by one.
        """
        if isinstance(self.datasets, tuple) and all(type(d) is fc.Tensor and d.dim() > 0 for d in self.datasets):
            try:
                packed = array.array("q", indices)
            except (TypeError, ValueError, OverflowError):
                pass  # not plain ints: part by part below
            else:
                check_indices(indices, self._length, "StackDataset")
                return GatheredBatch.rows(self.datasets, packed)
        parts = self.datasets.items() if isinstance(self.datasets, dict) else enumerate(self.datasets)
        columns = {}
        for name, d in parts:
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError(
                        f"[StackDataset] dataset {name!r}.__getitems__ returned {len(items)} samples "
                        f"for {len(indices)} indices"
                    )
                columns[name] = items
            else:
                columns[name] = [d[i] for i in indices]
        if isinstance(self.datasets, dict):
            return [dict(zip(columns, sample, strict=True)) for sample in zip(*columns.values(), strict=True)]
        return list(zip(*columns.values(), strict=True))

    def __len__(self) -> int:
        return self._length


class ChainDataset(IterableDataset[T_co]):
    """The chaining of several iterable datasets, one after the other.

    Example:
        >>> list(ChainDataset([[1, 2], (3,)]))
        [1, 2, 3]
    """

    def __init__(self, datasets: Iterable[Iterable[T_co]]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator[T_co]:
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type]


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order.

    Example:
        >>> Subset([10, 11, 12, 13], [3, 0])[0]
        13
    """

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]  # type: ignore[index]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        # Lets a batched fetch reach the underlying dataset's own __getitems__.
        if all(type(i) is int for i in indices):
            check_indices(indices, len(self.indices), "Subset")
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])  # type: ignore[attr-defined]
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T_co], lengths: Sequence[int | float], generator: Any = None) -> list[Subset[T_co]]:
    """Splits ``dataset`` at random into non-overlapping subsets of the given lengths.

    ``lengths`` are counts that add up to ``len(dataset)``, or fractions that add
    up to 1 (each subset then gets ``floor(fraction * len)`` samples and the
    remainder is given out one by one, round-robin, as PyTorch does). The
    permutation comes from ``generator`` (core's default generator if None; a
    ``random.Random`` or an int seed also work): see Note [Data randomness].

    Example:
        >>> fc.manual_seed(0)
        >>> a, b = random_split(range(10), [0.7, 0.3])
        >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
        (7, 3, True)
    """
    n = len(dataset)  # type: ignore[arg-type]
    lengths = list(lengths)
    if all(isinstance(x, int) and not isinstance(x, bool) for x in lengths):
        counts = [int(x) for x in lengths]
    elif math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise FlambeauError(f"[random_split] fraction at index {i} is not between 0 and 1: {frac}")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(
                    f"[random_split] length of split at index {i} is 0; it will be an empty Subset", stacklevel=2
                )
    else:
        raise FlambeauError(
            f"[random_split] lengths must be ints that sum to len(dataset)={n} "
            f"or fractions that sum to 1, got {lengths}"
        )
    if any(c < 0 for c in counts):
        raise FlambeauError(f"[random_split] lengths must be non-negative, got {counts}")
    if sum(counts) != n:
        raise FlambeauError(
            f"[random_split] sum of input lengths ({sum(counts)}) does not equal the length of the input dataset ({n})"
        )
    perm = _random.randperm(n, generator)
    out, start = [], 0
    for c in counts:
        out.append(Subset(dataset, perm[start : start + c]))
        start += c
    return out


class PackedList(Sequence):
    """A read-only list of Python objects packed in one buffer, for datasets read by forked workers.

    Note [Copy-on-read] (dataloader.py): a worker that reads ``items[i]`` from a
    plain list writes to that object's reference count, so the page holding it
    stops being shared with the main process; over an epoch each worker ends up
    with a private copy of every object it read (PyTorch's "memory leak" with
    many workers). A PackedList keeps the objects pickled in one ``bytes``
    buffer with an ``array`` of offsets (two refcounted objects in all):
    ``packed[i]`` unpickles a fresh copy, so reading writes to no shared page.

    Args:
        items: any iterable of picklable objects.

    Example:
        >>> names = PackedList(f"img_{i}.png" for i in range(3))
        >>> len(names), names[1], names[-1]
        (3, 'img_1.png', 'img_2.png')
    """

    __slots__ = ("_data", "_offsets")

    def __init__(self, items: Iterable[Any]) -> None:
        parts = [pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL) for obj in items]
        self._offsets = array.array("q", itertools.accumulate((len(p) for p in parts), initial=0))
        self._data = b"".join(parts)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self._offsets) - 1
        if not -n <= i < n:
            raise IndexError(f"[PackedList] index {i} is out of range for length {n}")
        if i < 0:
            i += n
        with memoryview(self._data) as view:
            return pickle.loads(view[self._offsets[i] : self._offsets[i + 1]])

    def __reduce__(self) -> Any:
        return (_packed_from_parts, (self._data, self._offsets))

    def __repr__(self) -> str:
        return f"PackedList({len(self)} items, {len(self._data)} bytes)"


def _packed_from_parts(data: bytes, offsets: array.array) -> PackedList:
    out = PackedList.__new__(PackedList)
    out._data, out._offsets = data, offsets
    return out
