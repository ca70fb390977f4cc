"""Samplers: the order in which a map-style dataset's indices are visited.

Random samplers draw their seed from flambeau-core's generator once per epoch
(Note [Data randomness] in ``_random.py``), so ``flambeau_core.manual_seed``
makes them reproducible.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

from flambeau_core import FlambeauError

from flambeau_data import _random

T_co = TypeVar("T_co", covariant=True)

__all__ = [
    "BatchSampler",
    "DistributedSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]


class Sampler(Generic[T_co]):
    """Base class: ``__iter__`` yields indices (or lists of indices for batch samplers).

    Example:
        >>> from flambeau.utils.data import Sampler
        >>> class EvenFirst(Sampler):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         return iter([*range(0, self.n, 2), *range(1, self.n, 2)])
        ...     def __len__(self):
        ...         return self.n
        >>> list(EvenFirst(5))
        [0, 2, 4, 1, 3]
    """

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """Indices ``0, 1, ..., len(data_source) - 1``.

    Example:
        >>> list(SequentialSampler("abc"))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Indices in random order (a permutation), or drawn with replacement.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw ``num_samples`` indices with replacement.
        num_samples: how many indices per epoch (default ``len(data_source)``;
            without replacement, more than one permutation is chained if needed).
        generator: None (core's default generator), a ``random.Random``, an int
            seed, or a core generator.

    Example:
        >>> import flambeau_core as fc
        >>> fc.manual_seed(0)
        >>> sorted(RandomSampler(range(5)))
        [0, 1, 2, 3, 4]
    """

    def __init__(
        self, data_source: Sized, replacement: bool = False, num_samples: int | None = None, generator: Any = None
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"[RandomSampler] replacement should be a boolean value, but got replacement={replacement!r}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise FlambeauError(
                "[RandomSampler] num_samples should be a positive integer value, "
                f"but got num_samples={self.num_samples!r}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.replacement:
            rng = _random.python_rng(self.generator)
            return iter([rng.randrange(n) for _ in range(self.num_samples)])
        return itertools.chain.from_iterable(self._permutation_chunks(n, self.num_samples))

    def _permutation_chunks(self, n: int, count: int) -> Iterator[list[int]]:
        # The permutation is drawn at the first index; it reaches Python in chunks, so the first
        # batch does not wait for the whole epoch's order to become a list (and chain walks them in C).
        while count > 0:
            yield from _random.randperm_chunks(n, self.generator, limit=count)
            count -= min(count, n)

    def __len__(self) -> int:
        return self.num_samples


_shuffled_iter = RandomSampler.__iter__  # BatchSampler slices its chunks while it is RandomSampler's iterator


def yields_int_batches(batch_sampler: Any) -> bool:
    """Whether every batch of ``batch_sampler`` is a list of plain ints: a BatchSampler over a RandomSampler or
    a SequentialSampler, none of their ``__iter__`` replaced (the DataLoader then packs its tasks, Note [Packed
    messages] in _pipe.py)."""
    if type(batch_sampler) is not BatchSampler or BatchSampler.__iter__ is not _batch_iter:
        return False
    inner = type(batch_sampler.sampler)
    return (inner is RandomSampler and RandomSampler.__iter__ is _shuffled_iter) or (
        inner is SequentialSampler and SequentialSampler.__iter__ is _sequential_iter
    )


class SubsetRandomSampler(Sampler[int]):
    """The given indices in random order.

    Example:
        >>> sorted(SubsetRandomSampler([7, 3, 5], generator=0))
        [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        return iter([self.indices[i] for i in _random.randperm(len(self.indices), self.generator)])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Example:
        >>> set(WeightedRandomSampler([0.0, 1.0], 5, generator=0))
        {1}
    """

    def __init__(
        self, weights: Sequence[float], num_samples: int, replacement: bool = True, generator: Any = None
    ) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise FlambeauError(
                "[WeightedRandomSampler] num_samples should be a positive integer value, "
                f"but got num_samples={num_samples!r}"
            )
        self.weights = [float(w) for w in (weights.tolist() if hasattr(weights, "tolist") else weights)]
        if any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
            raise FlambeauError("[WeightedRandomSampler] weights must be non-negative with a positive sum")
        if not replacement and num_samples > sum(1 for w in self.weights if w > 0):
            raise FlambeauError(
                "[WeightedRandomSampler] cannot draw more samples than non-zero weights without replacement"
            )
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rng = _random.python_rng(self.generator)
        population = range(len(self.weights))
        if self.replacement:
            return iter(rng.choices(population, weights=self.weights, k=self.num_samples))
        # Without replacement: each index gets an exponential key -log(u) / w and the num_samples
        # smallest keys, in order, are a sample of successive weighted draws (Efraimidis-Spirakis),
        # in O(n log k) instead of one weighted draw over n per sample.
        keyed = [(-math.log(1.0 - rng.random()) / w, i) for i, w in enumerate(self.weights) if w > 0]
        return iter([i for _, i in heapq.nsmallest(self.num_samples, keyed)])

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    Example:
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=True))
        [[0, 1], [2, 3]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise FlambeauError(
                f"[BatchSampler] batch_size should be a positive integer value, but got batch_size={batch_size!r}"
            )
        if not isinstance(drop_last, bool):
            raise FlambeauError(f"[BatchSampler] drop_last should be a boolean value, but got drop_last={drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        sampler = self.sampler
        if type(sampler) is RandomSampler and RandomSampler.__iter__ is _shuffled_iter and not sampler.replacement:
            # The shuffle's permutation reaches Python in lists (RandomSampler._permutation_chunks): the batches
            # are slices of them, the same indices in the same order as cutting the flattened iterator.
            yield from self._slices(sampler._permutation_chunks(len(sampler.data_source), sampler.num_samples))
            return
        # islice cuts the sampler's iterator in C: no per-index Python work.
        it = iter(sampler)
        size = self.batch_size
        while True:
            batch = list(itertools.islice(it, size))
            if len(batch) < size:
                if batch and not self.drop_last:
                    yield batch
                return
            yield batch

    def _slices(self, chunks: Iterator[list[int]]) -> Iterator[list[int]]:
        """Batches of ``batch_size`` indices cut from consecutive lists of indices (the last one shorter unless
        ``drop_last``)."""
        size = self.batch_size
        carry: list[int] = []
        for chunk in chunks:
            start = 0
            if carry:  # a batch begun in the last list
                start = size - len(carry)
                carry += chunk[:start]
                if len(carry) < size:
                    continue
                yield carry
                carry = []
            end = start + (len(chunk) - start) // size * size
            for i in range(start, end, size):
                yield chunk[i : i + size]
            carry = chunk[end:]
        if carry and not self.drop_last:
            yield carry

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size


_batch_iter = BatchSampler.__iter__  # yields_int_batches: the iterators whose batches are lists of ints
_sequential_iter = SequentialSampler.__iter__


class DistributedSampler(Sampler[int]):
    """The share of a dataset's indices that one of ``num_replicas`` processes visits, as PyTorch's.

    Every replica builds the same order (a permutation seeded with ``seed +
    epoch`` when ``shuffle``, else ``0 .. n-1``), pads it by repeating its
    start so that it divides evenly (or, with ``drop_last``, cuts its tail),
    and takes every ``num_replicas``-th index from ``rank``. Call
    :meth:`set_epoch` before each epoch to get a new order.

    Args:
        dataset: the dataset (only its length is used).
        num_replicas: the number of processes (default: the process group's
            world size, when flambeau's distributed package has one).
        rank: this process's rank (default: the process group's).
        shuffle: permute the indices (seeded, the same in every replica).
        seed: the base seed of the permutation.
        drop_last: drop the tail instead of padding.

    Example:
        >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
        [1, 3, 0]
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            world, me = _process_group()
            num_replicas = world if num_replicas is None else num_replicas
            rank = me if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise FlambeauError(f"[DistributedSampler] num_replicas should be a positive integer, got {num_replicas!r}")
        if not isinstance(rank, int) or rank >= num_replicas or rank < 0:
            raise FlambeauError(
                f"[DistributedSampler] Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = -(-(n - num_replicas) // num_replicas)
        else:
            self.num_samples = -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            import flambeau_core as fc

            g = fc.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = _random.randperm(n, g)
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad > 0 and indices:
                indices += (indices * -(-pad // len(indices)))[:pad]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch: with ``shuffle``, each epoch has its own order (the same in every replica).

        Example:
            >>> from flambeau.utils.data import DistributedSampler
            >>> sampler = DistributedSampler(range(8), num_replicas=2, rank=0, shuffle=True, seed=0)
            >>> sampler.set_epoch(0); first = list(sampler)
            >>> sampler.set_epoch(1); second = list(sampler)
            >>> len(first), first != second
            (4, True)
            >>> sampler.set_epoch(0); list(sampler) == first  # the same epoch, the same order
            True
        """
        self.epoch = epoch


# The default process group's (world size, rank), registered by flambeau-distributed when it is
# imported: data sits below distributed and never imports it.
_process_group_provider = None


def register_process_group_provider(fn) -> None:
    """Called by flambeau-distributed on import: ``fn()`` returns (world_size, rank) of the initialized
    default process group, or None when none is initialized."""
    global _process_group_provider
    _process_group_provider = fn


def _process_group() -> tuple[int, int]:
    group = _process_group_provider() if _process_group_provider is not None else None
    if group is None:
        raise RuntimeError(
            "[DistributedSampler] no process group is initialized (flambeau_distributed.init_process_group): "
            "pass num_replicas and rank"
        )
    return group
