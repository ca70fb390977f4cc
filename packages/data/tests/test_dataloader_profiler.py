"""The DataLoader's batches in the profiler (Note [Observation] in core), named as PyTorch names them."""

from __future__ import annotations

import flambeau_core as fc
import torch
from flambeau_core.profiler import profile
from flambeau_data import DataLoader, TensorDataset


def _names(events):
    return [e.name for e in events if e.name.startswith("enumerate(DataLoader)")]


def test_each_batch_is_one_range_as_in_torch():
    data = fc.arange(10, dtype=fc.float32)
    with profile() as prof:
        batches = [b for (b,) in DataLoader(TensorDataset(data), batch_size=4)]
    tdata = torch.arange(10, dtype=torch.float32)
    with torch.profiler.profile() as tprof:
        tbatches = [b for (b,) in torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tdata), batch_size=4)]
    assert len(batches) == len(tbatches) == 3
    ours = _names(prof.events())
    # One range per batch and one for the call that ends the epoch.
    assert len(ours) == len(_names(tprof.events())) == 4
    assert set(ours) == {"enumerate(DataLoader)#_SingleProcessIterator.__next__"}
    # The ops that gather a batch run inside its range.
    ranges = [e for e in prof.events() if e.name in ours]
    assert all(any(c.name.startswith("aten::") for c in e.cpu_children) for e in ranges[:3])


def test_batches_from_workers_are_ranges_of_the_main_process():
    data = fc.arange(8, dtype=fc.float32)
    with profile() as prof:
        n = sum(1 for _ in DataLoader(TensorDataset(data), batch_size=2, num_workers=2))
    assert n == 4
    assert _names(prof.events()).count("enumerate(DataLoader)#_MultiProcessIterator.__next__") == 5
