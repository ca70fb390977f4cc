#!/usr/bin/env python
"""mode and frexp, flambeau vs PyTorch.

Both libraries run in this one process, interleaved rounds (flambeau then torch, then the
reverse order), 2 intra-op threads each, OMP_WAIT_POLICY=PASSIVE (see ops_actloss.py).
Prints, per case, min and median per call and the ratio torch/flambeau of the medians
(> 1: flambeau is faster). Only ratios from one run count (a shared, noisy machine).

    .nox/dev/bin/python benchmarks/ops_mode_frexp.py [--rounds 7] [--only mode]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import flambeau as fb  # noqa: E402
import numpy as np  # noqa: E402
import side_by_side  # noqa: E402  (benchmarks/side_by_side.py: the shared interleaved loop)
import torch  # noqa: E402


def cases():
    rng = np.random.default_rng(0)
    ints = rng.integers(0, 50, size=(1000, 1000))
    floats = rng.standard_normal((1000, 1000)).astype(np.float32)
    out = []

    def add(name, fn, a, fdt, tdt):
        fa, ta = fb.tensor(a, dtype=fdt), torch.tensor(a).to(tdt)
        out.append((name, lambda: fn(fb, fa), lambda: fn(torch, ta)))

    add("mode int64 1000x1000 dim=1", lambda L, a: L.mode(a, 1), ints, fb.int64, torch.int64)
    add("mode int64 1000x1000 dim=0", lambda L, a: L.mode(a, 0), ints, fb.int64, torch.int64)
    add("mode float32 1000x1000 dim=1", lambda L, a: L.mode(a, 1), floats, fb.float32, torch.float32)
    add("frexp float32 1000x1000", lambda L, a: L.frexp(a), floats, fb.float32, torch.float32)
    add("frexp float64 1000x1000", lambda L, a: L.frexp(a), floats, fb.float64, torch.float64)
    add("frexp float16 1000x1000", lambda L, a: L.frexp(a), floats, fb.float16, torch.float16)
    return out


if __name__ == "__main__":
    side_by_side.main(cases, fb, torch, width=34)
