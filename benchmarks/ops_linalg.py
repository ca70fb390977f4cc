#!/usr/bin/env python
"""flambeau.linalg vs torch.linalg: matmul, solve, inv, svd, eigh, qr, cholesky, det, single and batched, float32.

Both libraries run in this one process, in interleaved rounds (flambeau then
torch, then the reverse order), each with 2 intra-op threads and
OMP_WAIT_POLICY=PASSIVE (set before either is imported, see ops_actloss.py).
Prints, per case, the min and median time per call of each library and the
ratio torch/flambeau of the medians (> 1: flambeau is faster).

Example:
    .nox/dev/bin/python benchmarks/ops_linalg.py
    .nox/dev/bin/python benchmarks/ops_linalg.py --only svd --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import flambeau_core as fb  # noqa: E402  (fb.linalg is core's module; no autograd needed)
import numpy as np  # noqa: E402
import torch  # noqa: E402

# (name, shape of A, shape of B or None)
SHAPES = [
    ("single 8", (8, 8)),
    ("single 64", (64, 64)),
    ("single 256", (256, 256)),
    ("single 512", (512, 512)),
    ("batch 256x8", (256, 8, 8)),
    ("batch 64x32", (64, 32, 32)),
    ("batch 16x128", (16, 128, 128)),
]


def spd(a: np.ndarray) -> np.ndarray:
    n = a.shape[-1]
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(np.float32)


OPS = {
    "matmul": (lambda L, A, B: L.matmul(A, B), lambda a: (a, a)),
    "solve": (lambda L, A, B: L.linalg.solve(A, B), lambda a: (spd(a), a)),
    "inv": (lambda L, A, B: L.linalg.inv(A), lambda a: (spd(a), None)),
    "det": (lambda L, A, B: L.linalg.det(A), lambda a: (spd(a), None)),
    "cholesky": (lambda L, A, B: L.linalg.cholesky(A), lambda a: (spd(a), None)),
    "qr": (lambda L, A, B: L.linalg.qr(A), lambda a: (a, None)),
    "svd": (lambda L, A, B: L.linalg.svd(A, full_matrices=False), lambda a: (a, None)),
    "eigh": (lambda L, A, B: L.linalg.eigh(A), lambda a: (spd(a), None)),
}


def timeit(fn, budget: float) -> list[float]:
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget and len(times) >= 3:
            return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated ops")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.15, help="seconds per library per round")
    args = ap.parse_args()
    fb.set_num_threads(2)
    torch.set_num_threads(2)
    ops = args.only.split(",") if args.only else list(OPS)
    print(f"{'op':10s} {'case':14s} {'fb min':>10s} {'fb med':>10s} {'th min':>10s} {'th med':>10s} {'th/fb':>7s}")
    for op in ops:
        call, make = OPS[op]
        for case, shape in SHAPES:
            a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
            A, B = make(a)
            fa, fbb = fb.tensor(A), (fb.tensor(B) if B is not None else None)
            ta, tb = torch.from_numpy(A), (torch.from_numpy(B) if B is not None else None)
            f_t: list[float] = []
            t_t: list[float] = []
            for r in range(args.rounds):
                order = [("fb", fa, fbb), ("th", ta, tb)]
                if r % 2:
                    order.reverse()
                for lib, x, y in order:
                    L = fb if lib == "fb" else torch
                    ts = timeit(lambda L=L, x=x, y=y, call=call: call(L, x, y), args.budget)
                    (f_t if lib == "fb" else t_t).extend(ts)
            fmed, tmed = statistics.median(f_t), statistics.median(t_t)
            print(
                f"{op:10s} {case:14s} {min(f_t) * 1e6:9.1f}u {fmed * 1e6:9.1f}u {min(t_t) * 1e6:9.1f}u "
                f"{tmed * 1e6:9.1f}u {tmed / fmed:7.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
