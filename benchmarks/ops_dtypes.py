#!/usr/bin/env python
"""float16 / bfloat16 / float32 elementwise ops (add, mul, exp, sin), flambeau vs PyTorch, and bytes/s per dtype.

Both libraries run in this one process, in interleaved rounds (flambeau then torch,
then the reverse order), each with 2 intra-op threads and OMP_WAIT_POLICY=PASSIVE
(set before either is imported). Per case it prints the min and median time per
call of each library, the ratio torch/flambeau of the medians (> 1: flambeau is
faster), and the bytes each moves per second (inputs read + output written, at the
median). The last column is the target: the half dtype's bytes/s over
float32's for the same op and size (>= 0.9 wanted).

Example:
    .nox/dev/bin/python benchmarks/ops_dtypes.py
    .nox/dev/bin/python benchmarks/ops_dtypes.py --sizes 1M --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import flambeau_core as fb  # noqa: E402
import torch  # noqa: E402

DTYPES = ["float32", "float16", "bfloat16"]
OPS = {
    "add": (2, lambda m, a, b: m.add(a, b)),
    "mul": (2, lambda m, a, b: m.mul(a, b)),
    "exp": (1, lambda m, a, b: m.exp(a)),
    "sin": (1, lambda m, a, b: m.sin(a)),
}


def timeit(f, reps: int) -> float:
    f()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sizes", default="1M,4M,16M")
    args = ap.parse_args()
    fb.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    sizes = [int(s.rstrip("M")) << 20 for s in args.sizes.split(",")]
    print(f"flambeau cpu capability: {fb._C._cpu_capability()}")
    header = (
        f"{'case':22} {'flambeau min/med (us)':>22} {'torch min/med (us)':>20} {'torch/fb':>9} "
        f"{'fb GB/s':>8} {'torch GB/s':>10} {'fb vs f32 B/s':>14}"
    )
    print(header)
    for n in sizes:
        for op, (nin, fn) in OPS.items():
            f32_rate = None
            for dt in DTYPES:
                tx = (torch.rand(n) * 4 - 2).to(getattr(torch, dt))
                ty = (torch.rand(n) * 4 - 2).to(getattr(torch, dt))
                fx = fb.tensor(tx.float().numpy()).to(getattr(fb, dt))
                fy = fb.tensor(ty.float().numpy()).to(getattr(fb, dt))
                reps = max(3, int(2e7 // n))
                ft, tt = [], []
                for r in range(args.rounds):
                    pair = [
                        ("fb", lambda fn=fn, x=fx, y=fy: fn(fb, x, y)),
                        ("torch", lambda fn=fn, x=tx, y=ty: fn(torch, x, y)),
                    ]
                    for name, f in pair if r % 2 == 0 else pair[::-1]:
                        (ft if name == "fb" else tt).append(timeit(f, reps))
                fmed, tmed = statistics.median(ft), statistics.median(tt)
                nbytes = (nin + 1) * n * tx.element_size()
                frate, trate = nbytes / fmed / 1e9, nbytes / tmed / 1e9
                if dt == "float32":
                    f32_rate = frate
                rel = frate / f32_rate
                print(
                    f"{op + ' ' + dt + ' ' + str(n >> 20) + 'M':22} {min(ft) * 1e6:10.0f}/{fmed * 1e6:<10.0f} "
                    f"{min(tt) * 1e6:9.0f}/{tmed * 1e6:<9.0f} {tmed / fmed:9.2f} {frate:8.2f} {trate:10.2f} "
                    f"{rel:14.2f}"
                )


if __name__ == "__main__":
    main()
