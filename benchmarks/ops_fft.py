#!/usr/bin/env python
"""flambeau.fft vs torch.fft: 1-D transforms of a batch of 256 signals of 4096
(complex fft/ifft, real rfft/irfft) and 2-D transforms of 256x256 (fft2,
rfft2), float32/complex64, and the 1-D ones in float64/complex128.

flambeau runs with flambeau_alloc's caching allocator on, as `import flambeau`
sets it up (--system-allocator: core's plain one, each result's pages faulted
in afresh). Both libraries run in this one process, in interleaved rounds (flambeau then
torch, then the reverse order), each with 2 intra-op threads and
OMP_WAIT_POLICY=PASSIVE (set before either is imported). Prints, per case, the
min and median time per call of each library and the ratio torch/flambeau of
the medians (> 1: flambeau is faster).

Example:
    .nox/dev/bin/python benchmarks/ops_fft.py
    .nox/dev/bin/python benchmarks/ops_fft.py --only rfft --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import flambeau_alloc  # noqa: E402
import flambeau_core as fb  # noqa: E402  (fb.fft is core's module; no autograd needed)
import numpy as np  # noqa: E402
import torch  # noqa: E402

# (name, call, input shape, complex input, dtype bits)
CASES = [
    ("fft 256x4096 c64", lambda L, x: L.fft.fft(x), (256, 4096), True, 32),
    ("ifft 256x4096 c64", lambda L, x: L.fft.ifft(x), (256, 4096), True, 32),
    ("rfft 256x4096 f32", lambda L, x: L.fft.rfft(x), (256, 4096), False, 32),
    ("irfft 256x2049 c64", lambda L, x: L.fft.irfft(x), (256, 2049), True, 32),
    ("fft 256x4096 c128", lambda L, x: L.fft.fft(x), (256, 4096), True, 64),
    ("rfft 256x4096 f64", lambda L, x: L.fft.rfft(x), (256, 4096), False, 64),
    ("fft dim0 4096x256 c64", lambda L, x: L.fft.fft(x, dim=0), (4096, 256), True, 32),
    ("fft2 256x256 c64", lambda L, x: L.fft.fft2(x), (256, 256), True, 32),
    ("rfft2 256x256 f32", lambda L, x: L.fft.rfft2(x), (256, 256), False, 32),
    ("irfft2 256x129 c64", lambda L, x: L.fft.irfft2(x), (256, 129), True, 32),
]


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


def inputs(shape, cplx: bool, bits: int):
    rng = np.random.default_rng(0)
    re = rng.standard_normal(shape).astype(np.float32 if bits == 32 else np.float64)
    if not cplx:
        return fb.tensor(re), torch.from_numpy(re)
    im = rng.standard_normal(shape).astype(re.dtype)
    return fb.complex(fb.tensor(re), fb.tensor(im)), torch.complex(torch.from_numpy(re), torch.from_numpy(im))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="substring of the case names to run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.2, help="seconds per library per round")
    ap.add_argument("--system-allocator", action="store_true", help="core's plain allocator, not flambeau_alloc's")
    args = ap.parse_args()
    if not args.system_allocator:
        flambeau_alloc.enable()  # as `import flambeau` does: the caching allocator (torch reuses freed memory too)
    fb.set_num_threads(2)
    torch.set_num_threads(2)
    print(f"{'case':24s} {'fb min':>10s} {'fb med':>10s} {'th min':>10s} {'th med':>10s} {'th/fb':>7s}")
    for case, call, shape, cplx, bits in CASES:
        if args.only and args.only not in case:
            continue
        fx, tx = inputs(shape, cplx, bits)
        f_t: list[float] = []
        t_t: list[float] = []
        for r in range(args.rounds):
            order = [("fb", fx), ("th", tx)]
            if r % 2:
                order.reverse()
            for lib, x in order:
                L = fb if lib == "fb" else torch
                ts = timeit(lambda L=L, x=x, call=call: call(L, x), args.budget)
                (f_t if lib == "fb" else t_t).extend(ts)
        fmed, tmed = statistics.median(f_t), statistics.median(t_t)
        print(
            f"{case:24s} {min(f_t) * 1e6:9.1f}u {fmed * 1e6:9.1f}u {min(t_t) * 1e6:9.1f}u "
            f"{tmed * 1e6:9.1f}u {tmed / fmed:7.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
