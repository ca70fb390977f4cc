"""flambeau-data: datasets, samplers, collation and a multi-process DataLoader.

Depends on flambeau-core only. Works with NumPy datasets when NumPy is
installed, without requiring it. ``flambeau_data.multiprocessing`` is a drop-in
for the standard module whose queues move tensors through shared memory.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_data as data
    >>> ds = data.TensorDataset(fc.zeros(6, 2), fc.arange(6))
    >>> [y.tolist() for _, y in data.DataLoader(ds, batch_size=4)]
    [[0, 1, 2, 3], [4, 5]]
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError as _PNF  # noqa: E402
from importlib.metadata import version as _version

import flambeau_core as _core  # noqa: F401  (loads core first)

from flambeau_data import datasets, multiprocessing  # noqa: F401  (multiprocessing registers the tensor reduction)
from flambeau_data._worker import WorkerInfo, get_worker_info
from flambeau_data.collate import collate, default_collate, default_collate_fn_map, default_convert
from flambeau_data.dataloader import DataLoader, get_pin_memory_allocator, set_pin_memory_allocator
from flambeau_data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    PackedList,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from flambeau_data.sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

try:
    __version__ = _version("flambeau-data")
except _PNF:  # running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "PackedList",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "collate",
    "datasets",
    "default_collate",
    "default_collate_fn_map",
    "default_convert",
    "get_pin_memory_allocator",
    "get_worker_info",
    "multiprocessing",
    "random_split",
    "set_pin_memory_allocator",
]
