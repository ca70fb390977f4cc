#!/usr/bin/env python
"""Device machinery: dispatch, allocator and simulated-device overheads, flambeau vs PyTorch.

Both libraries run in this one process, in interleaved rounds, with 2 intra-op
threads. Cases with a PyTorch counterpart show torch / flambeau of the medians
(> 1: flambeau is faster); the sim-only cases compare the simulated device
with flambeau's own cpu path (the cost of a stream round trip and of the
stream-aware allocator), so their ratio is cpu / sim.

    python benchmarks/ops_device.py [--rounds 7] [--number 200] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import flambeau as fb
import torch

fb.utils.register_sim(num_devices=2)


def time_calls(fn, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=0.05)
    args = ap.parse_args()
    fb.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)

    fa, fbb = fb.ones(16), fb.ones(16)
    ta, tb = torch.ones(16), torch.ones(16)
    sa, sb = fa.to("sim"), fbb.to("sim")
    big = 1 << 20  # 4 MiB of float32
    side = fb.sim.Stream()

    def sim_alloc_side():
        with fb.sim.stream(side):
            fb.empty(big, device="sim")

    cases = [
        # name, flambeau fn, reference fn, reference label
        ("add 16 elements (dispatch)", lambda: fa + fbb, lambda: ta + tb, "torch"),
        ("empty 4 MiB + free (caching)", lambda: fb.empty(big), lambda: torch.empty(big), "torch"),
        ("sim: empty 4 MiB + free", lambda: fb.empty(big, device="sim"), lambda: fb.empty(big), "fb cpu"),
        ("sim: empty on a side stream", sim_alloc_side, lambda: fb.empty(big), "fb cpu"),
        ("sim: add 16 elements (fallback)", lambda: sa + sb, lambda: fa + fbb, "fb cpu"),
    ]
    print(f"{'case':34s} {'min us':>9s} {'median us':>10s} {'ref min':>9s} {'ref med':>9s}  ratio ref/fb")
    for name, f, ref, label in cases:
        mine, theirs = [], []
        for r in range(args.rounds):
            order = [(f, mine), (ref, theirs)] if r % 2 == 0 else [(ref, theirs), (f, mine)]
            for fn, sink in order:
                fn()
                sink.append(time_calls(fn, args.number))
                time.sleep(args.pause)
        m, t = statistics.median(mine), statistics.median(theirs)
        print(
            f"{name:34s} {min(mine) * 1e6:9.2f} {m * 1e6:10.2f} {min(theirs) * 1e6:9.2f} {t * 1e6:9.2f}"
            f"  {t / m:6.2f} ({label})"
        )
    fb.sim.synchronize()


if __name__ == "__main__":
    main()
