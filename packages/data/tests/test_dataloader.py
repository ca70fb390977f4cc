"""DataLoader against a plain-Python oracle, in the main process and with workers."""

from __future__ import annotations

import random

import flambeau_core as fc
import flambeau_data as data
import numpy as np
import pytest
from conftest import make_xy, to_py
from flambeau_data import DataLoader, IterableDataset, TensorDataset


def oracle_batches(xs, ys, order, batch_size, drop_last):
    """The batches a loader must yield, as plain lists."""
    out = []
    for i in range(0, len(order), batch_size):
        idx = order[i : i + batch_size]
        if drop_last and len(idx) < batch_size:
            break
        out.append(([xs[j] for j in idx], [ys[j] for j in idx]))
    return out


def as_lists(loader):
    return [(x.tolist(), y.tolist()) for x, y in loader]


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("n,batch_size,drop_last", [(23, 5, False), (23, 5, True), (20, 5, True), (3, 8, False)])
def test_sequential_batches_match_oracle(no_leaks, num_workers, n, batch_size, drop_last):
    xs, ys, x, y = make_xy(n)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last, num_workers=num_workers)
    expected = oracle_batches(xs, ys, list(range(n)), batch_size, drop_last)
    assert len(loader) == len(expected)
    assert as_lists(loader) == expected


def test_shuffle_same_batches_with_0_and_2_workers_and_reproducible(no_leaks):
    xs, ys, x, y = make_xy(50)
    ds = TensorDataset(x, y)
    results = []
    for workers in (0, 2, 0):
        fc.manual_seed(42)
        results.append(as_lists(DataLoader(ds, batch_size=8, shuffle=True, num_workers=workers)))
    assert results[0] == results[1] == results[2]
    # The order is a permutation, and it is the one the sampler would produce.
    order = [i for _, yb in results[0] for i in yb]
    assert sorted(order) == list(range(50)) and order != list(range(50))
    # Two epochs of one loader differ.
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    assert as_lists(loader) != as_lists(loader)


def test_order_kept_when_workers_finish_out_of_order(no_leaks):
    import time

    class Slow(data.Dataset):
        def __len__(self):
            return 12

        def __getitem__(self, i):
            # Worker 0 gets batches 0, 2, 4: make them slow so that worker 1's finish first.
            if (i // 2) % 2 == 0:
                time.sleep(0.02)
            return i

    batches = [b.tolist() for b in DataLoader(Slow(), batch_size=2, num_workers=2)]
    assert batches == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]


def test_collate_structures_through_workers(no_leaks):
    class Structured(data.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return {
                "x": fc.tensor([float(i), float(-i)]),
                "label": i,
                "name": f"s{i}",
                "pair": (i * 0.5, [True, i % 2 == 0]),
            }

    ds = Structured()
    main = [to_py(b) for b in DataLoader(ds, batch_size=4)]
    workers = [to_py(b) for b in DataLoader(ds, batch_size=4, num_workers=2)]
    assert main == workers
    assert main[0]["name"] == ("list", ["s0", "s1", "s2", "s3"])
    assert main[1]["label"][3] == [4, 5]


def test_batches_from_workers_live_in_shared_memory(no_leaks):
    _, _, x, y = make_xy(16)
    ds = TensorDataset(x, y)
    for xb, yb in DataLoader(ds, batch_size=4, num_workers=2):
        assert xb._allocator is None and yb._allocator is None  # external memory: the mapped segment
    for xb, _ in DataLoader(ds, batch_size=4):
        assert xb._allocator is not None  # made by an allocator in this process


def test_batch_outlives_loader_and_segment_name(no_leaks):
    _, _, x, y = make_xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=5, num_workers=2)
    kept = list(loader)
    del loader
    import gc

    gc.collect()
    from conftest import shm_names

    assert not shm_names()  # names are unlinked at receipt; the memory stays mapped
    assert kept[1][1].tolist() == [5, 6, 7, 8, 9]
    kept[1][0].fill_(1.0)  # writable
    assert kept[1][0].tolist()[0] == [1.0, 1.0, 1.0]


def test_numpy_dataset_through_workers(no_leaks):
    class NumpyDS(data.Dataset):
        def __init__(self):
            self.x = np.arange(30, dtype=np.float32).reshape(10, 3)
            self.y = np.arange(10, dtype=np.int64)

        def __len__(self):
            return 10

        def __getitem__(self, i):
            return self.x[i], self.y[i]

    for workers in (0, 2):
        batches = list(DataLoader(NumpyDS(), batch_size=4, num_workers=workers))
        assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        assert batches[0][0].tolist()[1] == [3.0, 4.0, 5.0]
        assert isinstance(batches[0][0], fc.Tensor)
    xb, yb = next(iter(DataLoader(TensorDataset(np.ones((4, 2), np.float64), np.zeros(4, np.int64)), batch_size=4)))
    assert xb.tolist() == [[1.0, 1.0]] * 4 and yb.tolist() == [0, 0, 0, 0]


def test_no_auto_batching_and_batch_sampler(no_leaks):
    xs, ys, x, y = make_xy(5)
    ds = TensorDataset(x, y)
    for workers in (0, 2):
        items = list(DataLoader(ds, batch_size=None, num_workers=workers))
        assert [it[1].item() for it in items] == ys
        sampler = [[4, 0], [2], [1, 3]]
        got = [yb.tolist() for _, yb in DataLoader(ds, batch_sampler=sampler, num_workers=workers)]
        assert got == sampler


class Shards(IterableDataset):
    """Each worker yields its share: the range split by worker id."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = data.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_iterable_dataset_with_workers(no_leaks):
    single = [b.tolist() for b in DataLoader(Shards(10), batch_size=3)]
    assert single == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    multi = [b.tolist() for b in DataLoader(Shards(10), batch_size=3, num_workers=2)]
    # Round-robin over workers, as PyTorch: w0 [0,2,4], w1 [1,3,5], w0 [6,8], w1 [7,9].
    assert multi == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
    dropped = [b.tolist() for b in DataLoader(Shards(10), batch_size=3, num_workers=2, drop_last=True)]
    assert dropped == [[0, 2, 4], [1, 3, 5]]
    assert len(DataLoader(Shards(10), batch_size=3)) == 4 if hasattr(Shards, "__len__") else True


def test_plain_generator_is_an_iterable_dataset(no_leaks):
    gen = (np.full(2, i, dtype=np.int64) for i in range(5))
    assert [b.tolist() for b in DataLoader(gen, batch_size=2)] == [[[0, 0], [1, 1]], [[2, 2], [3, 3]], [[4, 4]]]


def test_worker_info_and_init_fn(no_leaks):
    class WhoAmI(data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            info = data.get_worker_info()
            return (
                info.id,
                info.num_workers,
                info.seed,
                fc.get_num_threads(),
                _INIT.get("called", -1),
                random.random(),
            )

    fc.manual_seed(0)
    batches = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=_init))
    ids = [b[0].tolist() for b in batches]
    assert ids == [[0, 0], [1, 1], [0, 0], [1, 1]]
    assert all(b[1].tolist() == [2, 2] for b in batches)
    seeds = {b[0].tolist()[0]: b[2].tolist()[0] for b in batches}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker_id
    assert all(b[3].tolist() == [1, 1] for b in batches)  # workers run single-threaded
    assert all(b[4].tolist() == [b[0].tolist()[0]] * 2 for b in batches)  # worker_init_fn(worker_id) ran
    # Python's random is seeded per worker: reproducible with manual_seed.
    fc.manual_seed(0)
    again = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=_init))
    assert [b[5].tolist() for b in batches] == [b[5].tolist() for b in again]
    assert data.get_worker_info() is None


class _Threads(data.Dataset):
    """Per sample: the intra-op thread count and the number of threads of the process that read it."""

    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 4

    def __getitem__(self, i):
        import os

        mod = fc if self.lib == "fb" else __import__("torch")
        return mod.get_num_threads(), len(os.listdir("/proc/self/task"))


@pytest.mark.parametrize("parent_threads", [1, 2])
def test_workers_run_one_thread_as_torchs(no_leaks, parent_threads):
    import torch

    before, torch_before = fc.get_num_threads(), torch.get_num_threads()
    fc.set_num_threads(parent_threads)
    torch.set_num_threads(parent_threads)
    fc.randn(64, 64) @ fc.randn(64, 64)  # the parent's BLAS has run (and started its threads, if any)
    try:
        ours = list(DataLoader(_Threads("fb"), batch_size=2, num_workers=2))
        theirs = list(torch.utils.data.DataLoader(_Threads("torch"), batch_size=2, num_workers=2))
    finally:
        fc.set_num_threads(before)
        torch.set_num_threads(torch_before)
    assert [b[0].tolist() for b in ours] == [b[0].tolist() for b in theirs] == [[1, 1], [1, 1]]
    # Nothing in the worker started a thread pool (OpenBLAS's, which a fork stops, restarts on any count it
    # is set to: core's set_num_threads leaves it at the 1 the fork gave it).
    assert [b[1].tolist() for b in ours] == [[1, 1], [1, 1]]


_INIT: dict = {}


def _init(worker_id):
    _INIT["called"] = worker_id


def test_persistent_workers_reuse_processes(no_leaks):
    import os

    class Pid(data.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return os.getpid()

    loader = DataLoader(Pid(), batch_size=2, num_workers=2, persistent_workers=True)
    first = sorted({p for b in loader for p in b.tolist()})
    second = sorted({p for b in loader for p in b.tolist()})
    assert first == second and len(first) == 2
    # An abandoned epoch: the next one still starts from the beginning, in order.
    it = iter(loader)
    next(it)
    assert len(list(loader)) == 3
    plain = DataLoader(Pid(), batch_size=2, num_workers=2)
    assert sorted({p for b in plain for p in b.tolist()}) != sorted({p for b in plain for p in b.tolist()})
    del loader, it


def test_prefetch_bounds_outstanding_tasks(no_leaks):
    _, _, x, y = make_xy(40)
    loader = DataLoader(TensorDataset(x, y), batch_size=2, num_workers=2, prefetch_factor=3)
    it = iter(loader)
    assert len(it._task_worker) == 6  # prefetch_factor * num_workers
    next(it)
    assert len(it._task_worker) == 6
    assert len(list(it)) == 19
    assert DataLoader(TensorDataset(x, y), num_workers=2).prefetch_factor == 2
    assert DataLoader(TensorDataset(x, y)).prefetch_factor is None


def test_pin_memory_is_accepted(no_leaks):
    xs, ys, x, y = make_xy(6)
    got = as_lists(DataLoader(TensorDataset(x, y), batch_size=3, pin_memory=True))
    assert got == oracle_batches(xs, ys, list(range(6)), 3, False)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_context(no_leaks, method):
    xs, ys, x, y = make_xy(6)
    loader = DataLoader(TensorDataset(x, y), batch_size=3, num_workers=1, multiprocessing_context=method)
    assert as_lists(loader) == oracle_batches(xs, ys, list(range(6)), 3, False)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(shuffle=True, sampler=[0, 1]), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
        (dict(batch_size=0), "batch_size should be a positive integer value"),
    ],
)
def test_argument_errors(kwargs, message):
    _, _, x, _ = make_xy(4)
    with pytest.raises(ValueError, match=message):
        DataLoader(TensorDataset(x), **kwargs)


def test_iterable_argument_errors():
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Shards(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Shards(3), sampler=[0])


def test_shuffle_with_a_core_generator_ignores_the_global_seed(no_leaks):
    def epoch(seed, global_seed, workers):
        g = fc.Generator()
        g.manual_seed(seed)
        fc.manual_seed(global_seed)
        return [
            b.tolist()
            for b in DataLoader(list(range(20)), batch_size=6, shuffle=True, generator=g, num_workers=workers)
        ]

    assert epoch(1, 0, 0) == epoch(1, 99, 0) == epoch(1, 5, 2)
    assert epoch(1, 0, 0) != epoch(2, 0, 0)


class _Compute(data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        x = fc.full((128, 128), float(i))
        return (x.matmul(x) + 1).sum(dim=0)


def test_fork_after_the_parent_used_its_thread_pools(no_leaks):
    # The parent enters OpenMP and OpenBLAS parallel regions first; forked workers
    # (single-threaded) must still run GEMMs and elementwise ops without hanging.
    a = fc.rand(512, 512)
    (a.matmul(a) + a.exp()).sum()
    (fc.rand(1 << 21) * 2).sum()
    batches = list(DataLoader(_Compute(), batch_size=4, num_workers=2, timeout=30))
    expected = [[128 * (i * i * 128.0 + 1)] * 128 for i in range(16)]
    assert [row for b in batches for row in b.tolist()] == expected


class SampleDataset:
    """The usual map-style Dataset: ``__getitem__`` returns views of the dataset's tensors, one sample at a time."""

    def __init__(self, x, y, form="tuple"):
        self.x, self.y, self.form = x, y, form

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.form == "dict":
            return {"image": self.x[i], "label": self.y[i]}
        return self.x[i], self.y[i]


def _sample_datasets(form):
    """The same SampleDataset over flambeau tensors and over torch tensors (1x4x4 float32 images, int64 labels)."""
    import torch

    rng = np.random.default_rng(5)
    x = rng.standard_normal((37, 1, 4, 4)).astype(np.float32)
    y = rng.integers(0, 10, size=37).astype(np.int64)
    return SampleDataset(fc.tensor(x), fc.tensor(y), form), SampleDataset(torch.tensor(x), torch.tensor(y), form)


@pytest.mark.parametrize("form", ["tuple", "dict"])
@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_sample_by_sample_dataset_matches_torch_dataloader(no_leaks, form, workers, persistent):
    import torch

    ours_ds, torch_ds = _sample_datasets(form)
    order = list(np.random.default_rng(9).permutation(37))  # one shuffled order given to both as the sampler
    kwargs = dict(batch_size=8, sampler=order, num_workers=workers, persistent_workers=persistent)
    ours = DataLoader(ours_ds, **kwargs)
    theirs = torch.utils.data.DataLoader(torch_ds, **kwargs)
    for _ in range(2 if persistent else 1):
        got = [to_py(b) for b in ours]
        want = [to_py(b) for b in theirs]
        assert got == want
    assert type(next(iter(ours))) is (list if form == "tuple" else dict)


def test_sample_by_sample_batches_do_not_alias_the_dataset(no_leaks):
    ours_ds, _ = _sample_datasets("tuple")
    before = ours_ds.x.tolist()
    for workers in (0, 2):
        for xb, yb in DataLoader(ours_ds, batch_size=8, num_workers=workers):
            assert xb._storage_id != ours_ds.x._storage_id and yb._storage_id != ours_ds.y._storage_id
            xb.fill_(0)
    assert ours_ds.x.tolist() == before


def test_sample_by_sample_batches_pinned(no_leaks):
    from test_pin_memory_threads import Pinned

    ours_ds, torch_ds = _sample_datasets("tuple")
    pinned = Pinned()
    data.set_pin_memory_allocator(pinned)
    try:
        got = [
            (xb._allocator, yb._allocator, to_py([xb, yb]))
            for xb, yb in DataLoader(ours_ds, batch_size=8, pin_memory=True)
        ]
    finally:
        data.set_pin_memory_allocator(None)
    import torch

    want = [to_py(b) for b in torch.utils.data.DataLoader(torch_ds, batch_size=8)]
    assert [g[2] for g in got] == want
    assert {g[0] for g in got} == {g[1] for g in got} == {"Pinned"}


Pair = __import__("collections").namedtuple("Pair", ["image", "label"])


class FormsDataset(SampleDataset):
    """Samples in other forms: a namedtuple, fresh tensors (not views), a tensor with a number and a string."""

    def __getitem__(self, i):
        if self.form == "namedtuple":
            return Pair(self.x[i], self.y[i])
        if self.form == "copies":
            return self.x[i] * 1, self.y[i] + 0
        if self.form == "mixed":
            return self.x[i], int(self.y[i]), f"s{i}"
        return super().__getitem__(i)


def _as_list(batch):
    """A collate_fn returning a plain list of the default batch's leaves (the workers' list-of-tensors path)."""
    return list(default_collate_for(batch))


def default_collate_for(batch):
    from flambeau_data import default_collate

    if type(batch[0][0]).__module__.startswith("torch"):
        import torch

        return torch.utils.data.default_collate(batch)
    return default_collate(batch)


def _twice_and_tag(batch):
    """A list holding one tensor twice and a string: the workers' general path (a pickled structure)."""
    xb, yb = default_collate_for(batch)
    return [xb, yb, xb, "tag"]


@pytest.mark.parametrize("form", ["namedtuple", "copies", "mixed"])
@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_sample_forms_match_torch_dataloader(no_leaks, form, workers, persistent):
    import torch

    ours_ds, torch_ds = _sample_datasets("tuple")
    ours_ds, torch_ds = FormsDataset(ours_ds.x, ours_ds.y, form), FormsDataset(torch_ds.x, torch_ds.y, form)
    order = list(np.random.default_rng(3).permutation(37))
    kwargs = dict(batch_size=8, sampler=order, num_workers=workers, persistent_workers=persistent)
    ours, theirs = DataLoader(ours_ds, **kwargs), torch.utils.data.DataLoader(torch_ds, **kwargs)
    for _ in range(2 if persistent else 1):
        assert [to_py(b) for b in ours] == [to_py(b) for b in theirs]


@pytest.mark.parametrize("collate_fn", [_as_list, _twice_and_tag])
@pytest.mark.parametrize("workers", [0, 2])
def test_list_batches_from_a_collate_fn_match_torch_dataloader(no_leaks, collate_fn, workers):
    import torch

    ours_ds, torch_ds = _sample_datasets("tuple")
    kwargs = dict(batch_size=8, num_workers=workers, collate_fn=collate_fn, drop_last=False)
    got = [to_py(b) for b in DataLoader(ours_ds, **kwargs)]
    want = [to_py(b) for b in torch.utils.data.DataLoader(torch_ds, **kwargs)]
    assert got == want and len(got) == 5


@pytest.mark.parametrize("workers", [0, 2])
def test_samples_of_different_shapes_raise_as_torch(no_leaks, workers):
    import torch

    class Ragged(SampleDataset):
        def __getitem__(self, i):
            return self.x[i][..., : 1 + i % 3], self.y[i]

    ours_ds, torch_ds = _sample_datasets("tuple")
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size") as want:
        list(torch.utils.data.DataLoader(Ragged(torch_ds.x, torch_ds.y), batch_size=4, num_workers=workers))
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size") as got:
        list(DataLoader(Ragged(ours_ds.x, ours_ds.y), batch_size=4, num_workers=workers))
    if workers:  # the worker's traceback comes along, as torch's
        assert "Caught RuntimeError in DataLoader worker process 0" in str(want.value)
        assert "Caught FlambeauError in DataLoader worker process 0" in str(got.value)
        assert "Traceback (most recent call last)" in str(got.value)
