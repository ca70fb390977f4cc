"""Note [Copy-on-read]: forked workers keep sharing the parent's Python objects.

Two ways a worker un-shares them, each measured with and without the fix: reading
(reference-count writes; fixed by PackedList) and garbage collection (header
writes; fixed by the gc.freeze() around the fork).

Measured as the worker's private memory (USS: pages only this process maps).
A forked child's RSS already counts every page it shares with its parent, so
un-sharing a page (copy-on-write) moves it from shared to private without
changing RSS; the private part is what grows per worker (PyTorch's "memory
leak" with many workers) and what the machine pays for.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import flambeau_data as data
import psutil
import pytest
from flambeau_core.testing import running_under_asan
from flambeau_data import DataLoader

N = 1_000_000
PER_BATCH = 100_000
NO_QUARANTINE = "quarantine_size_mb=0"


class Objects(data.Dataset):
    """A million distinct Python objects (ints outside the small-int cache), read by index."""

    def __init__(self, packed: bool):
        items = (10**9 + i for i in range(N))
        self.items = data.PackedList(items) if packed else list(items)

    def __len__(self):
        return N

    def __getitem__(self, i):
        return self.items[i] - 10**9


def _uss_after_each_batch(packed: bool) -> list[int]:
    if running_under_asan() and NO_QUARANTINE not in os.environ.get("ASAN_OPTIONS", ""):
        # nox -s sanitize: ASan's allocator keeps freed blocks in a quarantine (256 MiB) instead of
        # reusing them, so every batch's buffers grow the worker by ~20 MiB whatever it reads. The
        # same measurement, in a child whose allocator reuses memory as the usual one does.
        env = {**os.environ, "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":" + NO_QUARANTINE}
        code = f"import json, test_copy_on_read as t; print(json.dumps(t._uss_after_each_batch({packed})))"
        r = subprocess.run(
            [sys.executable, "-c", code], cwd=os.path.dirname(__file__), env=env, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.splitlines()[-1])

    def collate(samples):
        assert samples[0] + len(samples) - 1 == samples[-1]  # the values really were read
        return psutil.Process().memory_full_info().uss

    loader = DataLoader(
        Objects(packed), batch_size=PER_BATCH, num_workers=1, collate_fn=collate, multiprocessing_context="fork"
    )
    return list(loader)


@pytest.mark.parametrize("packed", [False, True])
def test_forked_worker_reading_a_million_objects(no_leaks, packed):
    uss = _uss_after_each_batch(packed)
    growth = uss[-1] - uss[0]  # after the first batch (imports, buffers) to after reading every object
    mib = 1 << 20
    if packed:
        # Nothing of the million objects becomes private (a generous margin for the allocator's arenas).
        assert growth < 4 * mib, f"the worker's private memory grew by {growth / mib:.1f} MiB"
    else:
        # The plain list: every int read is un-shared by its refcount write (~32 MiB of objects in all;
        # the first batch's tenth is before uss[0]). This documents the problem PackedList solves.
        assert growth > 16 * mib, f"expected copy-on-read growth, got {growth / mib:.1f} MiB"


class Tracked(data.Dataset):
    """Holds 300,000 small lists (containers the garbage collector tracks) that no sample reads."""

    def __init__(self):
        self.meta = [[i] for i in range(300_000)]

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i


@pytest.mark.parametrize("freeze", [True, False])
def test_workers_garbage_collection_leaves_the_parents_objects_shared(no_leaks, monkeypatch, freeze):
    from flambeau_data import dataloader

    if not freeze:
        monkeypatch.setattr(dataloader, "_freeze_gc", lambda: False)  # what happens without gc.freeze()

    def collate(samples):
        before = psutil.Process().memory_full_info().uss
        gc.collect()  # a full collection in the worker, as allocation-heavy loading triggers
        return psutil.Process().memory_full_info().uss - before

    ds = Tracked()
    gc.collect()  # the parent's own collections are done: the lists sit in the oldest generation
    (growth,) = list(DataLoader(ds, batch_size=4, num_workers=1, collate_fn=collate, multiprocessing_context="fork"))
    mib = 1 << 20
    if freeze:
        assert growth < 4 * mib, f"the worker's private memory grew by {growth / mib:.1f} MiB"
    else:
        # Traversing every list writes its header: their pages (~20 MiB) become private to the worker.
        assert growth > 8 * mib, f"expected the collector to un-share pages, got {growth / mib:.1f} MiB"
