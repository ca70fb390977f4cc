#!/usr/bin/env python
"""flambeau-core + flambeau-data without the rest: run in a fresh venv holding only those two.

Not a pytest test: the noxfile's isolation step runs it as a script; it exits
non-zero on the first failure. The DataLoader needs core only (no autograd, no
nn): worker processes hand batches over in shared memory.
"""

from __future__ import annotations

import importlib
import sys

import flambeau_core as fc
import flambeau_data as fd

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
def autograd_and_nn_are_absent():
    for name in ("flambeau_autograd", "flambeau_nn", "flambeau_alloc", "flambeau_interop", "flambeau"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        raise AssertionError(f"{name} is importable, but this venv should hold flambeau-core + flambeau-data only")


def _dataset(n: int = 23):
    x = fc.arange(n * 3, dtype=fc.float32).view(n, 3)
    y = fc.arange(n)
    return fd.TensorDataset(x, y), n


@check
def two_workers_yield_the_right_batches_in_order():
    ds, n = _dataset()
    loader = fd.DataLoader(ds, batch_size=4, shuffle=False, num_workers=2)
    batches = list(loader)
    assert len(batches) == len(loader) == 6, (len(batches), len(loader))
    for i, (xb, yb) in enumerate(batches):
        lo, hi = 4 * i, min(4 * i + 4, n)
        assert isinstance(xb, fc.Tensor) and isinstance(yb, fc.Tensor)
        assert xb.dtype == fc.float32 and yb.dtype == fc.int64
        assert xb.shape == (hi - lo, 3) and yb.shape == (hi - lo,)
        assert yb.tolist() == list(range(lo, hi))
        assert xb.tolist() == [[3.0 * k, 3.0 * k + 1, 3.0 * k + 2] for k in range(lo, hi)]


@check
def shuffled_epochs_are_permutations_and_differ():
    ds, n = _dataset()
    fc.manual_seed(0)
    loader = fd.DataLoader(ds, batch_size=5, shuffle=True, num_workers=2, drop_last=False)
    epochs = []
    for _ in range(2):
        seen = []
        for xb, yb in loader:
            labels = yb.tolist()
            assert xb.tolist() == [[3.0 * k, 3.0 * k + 1, 3.0 * k + 2] for k in labels], "x and y out of step"
            seen += labels
        assert sorted(seen) == list(range(n))
        epochs.append(seen)
    assert epochs[0] != epochs[1], "two shuffled epochs gave the same order"


@check
def drop_last_and_zero_workers_agree():
    ds, n = _dataset()
    a = [yb.tolist() for _, yb in fd.DataLoader(ds, batch_size=4, drop_last=True, num_workers=0)]
    b = [yb.tolist() for _, yb in fd.DataLoader(ds, batch_size=4, drop_last=True, num_workers=2)]
    assert a == b == [list(range(i, i + 4)) for i in range(0, 20, 4)]


@check
def worker_exception_reaches_the_main_process():
    class Broken(fd.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            if i == 3:
                raise KeyError(f"sample {i} is broken")
            return fc.tensor([float(i)])

    try:
        list(fd.DataLoader(Broken(), batch_size=2, num_workers=2))
    except KeyError as e:
        assert "sample 3 is broken" in str(e)
    else:
        raise AssertionError("the worker's KeyError was not re-raised")


def main() -> int:
    failed = 0
    for fn in CHECKS:
        try:
            fn()
        except Exception as e:  # report every check, then fail
            failed += 1
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")
        else:
            print(f"ok   {fn.__name__}")
    print(f"core_and_data: {len(CHECKS) - failed}/{len(CHECKS)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
