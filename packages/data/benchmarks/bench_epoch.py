"""One DataLoader epoch: flambeau-data vs PyTorch, same data, same process.

60,000 in-memory samples (784 float32 features + an int64 label) in a
TensorDataset, batch 128, shuffle=True, num_workers 0 and 2. Best of
`--repeat` epochs (time.perf_counter), after one warm-up epoch.

    python packages/data/benchmarks/bench_epoch.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def epoch_time(loader, repeat: int) -> float:
    for _ in loader:  # warm-up (and worker start-up for non-persistent loaders is included below)
        break
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        n = 0
        for x, _ in loader:
            n += x.shape[0]
        best = min(best, time.perf_counter() - start)
        assert n == 60_000
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import flambeau_core as fc
    import flambeau_data as fdata
    import torch

    rng = np.random.default_rng(0)
    x = rng.standard_normal((60_000, 784), dtype=np.float32)
    y = rng.integers(0, 10, size=60_000, dtype=np.int64)

    fb_ds = fdata.TensorDataset(fc.frombuffer(x, dtype=fc.float32).view(60_000, 784), fc.frombuffer(y, dtype=fc.int64))
    th_ds = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))

    print(f"{'workers':>8} {'flambeau (s)':>13} {'torch (s)':>10} {'ratio':>6}")
    for workers in (0, 2):
        fb = epoch_time(fdata.DataLoader(fb_ds, batch_size=128, shuffle=True, num_workers=workers), args.repeat)
        th = epoch_time(
            torch.utils.data.DataLoader(th_ds, batch_size=128, shuffle=True, num_workers=workers), args.repeat
        )
        print(f"{workers:>8} {fb:>13.3f} {th:>10.3f} {fb / th:>6.2f}")


if __name__ == "__main__":
    main()
