#!/usr/bin/env python
"""exp, tanh, sigmoid, sin, cos, tan on 1M elements against PyTorch and NumPy, 1 and 2 threads.

float32 and float64: exp_f32 and the float64 exp, tanh, sigmoid of src/cpu/elementwise/loops.h
(Note [float64 exp]), the float32 and float64 sin, cos, tan of src/cpu/elementwise/vec_trig.inc
(Notes [float32 sin/cos], [float64 sin/cos]); NumPy's sigmoid is ``1 / (1 + exp(-x))``.
All three libraries run in this one process, interleaved: each round times a block of calls of each (the order rotates
between rounds), so machine noise hits them alike. Prints min and median per
call and the ratio best_other_time / flambeau_time of the medians, where
best_other is the faster of torch and NumPy (> 1: flambeau is faster). NumPy is
single-threaded; torch and flambeau run with each of --threads (default: 1 and 2).

Then the accuracy of each library's float32 results: the largest error in ulps
against the float64 result over every 257th float32 in [-64, 64] and 2^18
random values of magnitudes up to 1e30 (the same measure as packages/core/tests/test_vec_trig.py).

flambeau is imported first: it sets OMP_WAIT_POLICY=PASSIVE before torch
loads, so the two OpenMP runtimes do not spin against each other
(benchmarks/ops_norm.py explains). The caching allocator is enabled as
``import flambeau`` does.

    python benchmarks/ops_transcendental.py [--threads 1 2] [--rounds 15] [--only sin] [--no-accuracy]
"""

from __future__ import annotations

import argparse
import statistics
import time

import flambeau_alloc  # noqa: I001  (first: see above)
import flambeau_core as fc
import numpy as np
import torch

OPS = ("exp", "tanh", "sigmoid", "sin", "cos", "tan")


def _np(op: str):
    """NumPy's function of that name (sigmoid as a NumPy user writes it)."""
    return (lambda a: 1 / (1 + np.exp(-a))) if op == "sigmoid" else getattr(np, op)


N = 1_000_000


def _cases():
    rng = np.random.default_rng(0)
    cases = {}
    for dt in (np.float32, np.float64):
        x = (rng.standard_normal(N) * 3).astype(dt)
        f, t = fc.tensor(x), torch.from_numpy(x.copy())
        for op in OPS:
            name = f"{op} (1M,) {np.dtype(dt).name}"
            cases[name] = (
                lambda f=f, op=op: getattr(fc, op)(f),
                lambda t=t, op=op: getattr(torch, op)(t),
                lambda x=x, op=op: _np(op)(x),
            )
    return cases


def time_block(fn, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def ulp_error(ours: np.ndarray, x: np.ndarray, op: str) -> float:
    with np.errstate(invalid="ignore", over="ignore"):
        ref = _np(op)(x.astype(np.float64))
    _, e = np.frexp(np.abs(ref))
    ulp = np.ldexp(1.0, np.maximum(e - 24, -149))
    ok = np.isfinite(ref) & np.isfinite(ours)
    return float((np.abs(ours[ok].astype(np.float64) - ref[ok]) / ulp[ok]).max())


def accuracy() -> None:
    dense = np.arange(0, 0x42800001, 257, dtype=np.uint32).view(np.float32)
    rng = np.random.default_rng(7)
    rnd = (np.exp2(rng.uniform(-40, np.log2(1e30), 1 << 18)) * rng.choice([-1.0, 1.0], 1 << 18)).astype(np.float32)
    x = np.concatenate([dense, -dense, rnd])
    print("\nfloat32 max error (ulp) vs float64, every 257th float32 in [-64, 64] + 2^18 random up to 1e30")
    print(f"{'op':5s} {'flambeau':>9s} {'torch':>9s} {'numpy':>9s}")
    for op in OPS:
        ours = np.array(memoryview(getattr(fc, op)(fc.tensor(x)).contiguous()))
        th = getattr(torch, op)(torch.from_numpy(x)).numpy()
        with np.errstate(invalid="ignore", over="ignore"):
            nu = _np(op)(x)
        print(f"{op:5s} {ulp_error(ours, x, op):9.3f} {ulp_error(th, x, op):9.3f} {ulp_error(nu, x, op):9.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--min-block", type=float, default=0.02, help="seconds per timed block (sets the calls per block)")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--no-accuracy", action="store_true", help="skip the accuracy table")
    a = ap.parse_args()
    flambeau_alloc.enable()  # the caching allocator, on by default under `import flambeau`
    cases = _cases()
    for threads in a.threads:
        fc.set_num_threads(threads)
        torch.set_num_threads(threads)
        print(
            f"\nthreads={threads} rounds={a.rounds} torch={torch.__version__} numpy={np.__version__} "
            f"cpu={fc._C._cpu_capability()} torch_cpu={torch.backends.cpu.get_cpu_capability()}"
        )
        head = f"{'case':22s} {'flambeau min/med (us)':>22s} {'torch min/med (us)':>20s} {'numpy min/med (us)':>20s}"
        print(head + f" {'best/flambeau':>14s}")
        for name, fns in cases.items():
            if a.only not in name:
                continue
            for fn in fns:  # warm up (allocator caches, first-touch pages)
                for _ in range(3):
                    fn()
            number = max(1, int(a.min_block / max(time_block(fns[0], 1), 1e-6)))
            times: list[list[float]] = [[], [], []]
            for r in range(a.rounds):
                for i in [(r + k) % 3 for k in range(3)]:
                    times[i].append(time_block(fns[i], number))
            mins = [min(t) * 1e6 for t in times]
            meds = [statistics.median(t) * 1e6 for t in times]
            ratio = min(meds[1], meds[2]) / meds[0]
            cells = " ".join(f"{mins[i]:9.1f} / {meds[i]:9.1f}" for i in range(3))
            print(f"{name:22s} {cells} {ratio:13.2f}x", flush=True)
    if not a.no_accuracy:
        accuracy()


if __name__ == "__main__":
    main()
