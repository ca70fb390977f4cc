"""The DataLoader's batches in the profiler (Note [Observation] in core), named as PyTorch names them."""

from __future__ import annotations

import json
import os

import flambeau_core as fc
import pytest
import torch
from flambeau_core import _C
from flambeau_core.profiler import profile, record_function
from flambeau_core.testing import check_chrome_trace
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


class _Squares:
    """A map-style dataset whose samples are made by ops inside a range of its own."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        with record_function("make_sample"):
            return fc.full((2,), float(i)).mul(fc.full((2,), float(i)))


def test_work_in_worker_processes_is_recorded_under_their_pids(tmp_path):
    with profile(record_shapes=True) as prof:
        batches = [b for b in DataLoader(_Squares(), batch_size=2, num_workers=2)]
    assert [b[:, 0].tolist() for b in batches] == [[0.0, 1.0], [4.0, 9.0], [16.0, 25.0], [36.0, 49.0]]
    main = os.getpid()
    events = prof.events()
    fetches = [e for e in events if e.name == "DataLoader worker fetch"]
    assert len(fetches) == 4
    worker_pids = {e.pid for e in fetches}
    assert len(worker_pids) == 2 and main not in worker_pids
    for f in fetches:
        # The dataset's range inside the fetch, and in it the samples' ranges and their ops, in the worker.
        (gather,) = [c for c in f.cpu_children if c.name == "_Squares.__getitem__"]
        samples = [c for c in gather.cpu_children if c.name == "make_sample"]
        assert len(samples) == 2 and all(s.pid == f.pid for s in samples)
        assert all({"aten::fill_", "aten::mul"} <= {c.name for c in s.cpu_children} for s in samples)
        assert f.time_range.start <= gather.time_range.start <= gather.time_range.end <= f.time_range.end
    muls = [e for e in events if e.name == "aten::mul"]
    assert len(muls) == 8 and all(e.pid in worker_pids for e in muls)
    assert all(e.input_shapes == [[2], [2]] for e in muls)
    # The main process's batch ranges stay in the main process, and span the worker's fetch they waited for.
    nexts = [e for e in events if e.name == "enumerate(DataLoader)#_MultiProcessIterator.__next__"]
    assert len(nexts) == 5 and all(e.pid == main for e in nexts)
    counts = {a.key: a.count for a in prof.key_averages()}
    assert counts["make_sample"] == 8 and counts["DataLoader worker fetch"] == 4
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        trace = check_chrome_trace(json.load(f))
    processes = {e["pid"]: e["args"]["name"] for e in trace if e["ph"] == "M" and e["name"] == "process_name"}
    assert set(processes) == {main} | worker_pids
    assert all(processes[p].startswith("DataLoader worker") for p in worker_pids)
    assert {e["pid"] for e in trace if e["ph"] == "X" and e["name"] == "aten::mul"} == worker_pids


class _Recording:
    """Each sample says whether the profiler records in the process that made it."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return fc.tensor([float(_C._profiler_enabled())])


def test_workers_record_only_the_batches_of_a_profile():
    # Persistent workers started (forked, maybe) outside any profile, then used inside one and after it.
    loader = DataLoader(_Recording(), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.flatten().tolist() for b in loader] == [[0.0, 0.0], [0.0, 0.0]]
    with profile() as prof:
        assert [b.flatten().tolist() for b in loader] == [[1.0, 1.0], [1.0, 1.0]]
    assert len([e for e in prof.events() if e.name == "DataLoader worker fetch"]) == 2
    assert [b.flatten().tolist() for b in loader] == [[0.0, 0.0], [0.0, 0.0]]
    # A loader whose workers were forked while a profile recorded does not inherit the recording.
    with profile():
        inside = DataLoader(_Recording(), batch_size=4, num_workers=1, persistent_workers=True)
        assert next(iter(inside)).flatten().tolist() == [1.0] * 4
    assert next(iter(inside)).flatten().tolist() == [0.0] * 4


class _FailsAt3:
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise KeyError(f"no sample {i}")
        return fc.full((1,), float(i))


def test_a_batch_that_fails_in_a_worker_is_still_in_the_profile():
    with profile() as prof:
        with pytest.raises(KeyError, match="no sample 3"):
            for _ in DataLoader(_FailsAt3(), batch_size=2, num_workers=1):
                pass
    fetches = [e for e in prof.events() if e.name == "DataLoader worker fetch"]
    assert len(fetches) >= 2 and all(e.pid != os.getpid() for e in fetches)
    assert not _C._profiler_enabled()
