#!/usr/bin/env python
"""nn benchmarks: Linear(10, 10) on one sample, the MLP training step, the SGD step alone.

flambeau and PyTorch are timed in interleaved rounds: each round runs every
case for flambeau, then for torch (the order flips every round), so machine
noise hits both alike. Each (round, library) runs in a child process that
imports only its own library: in ONE process, the two OpenMP runtimes (and
OpenBLAS's thread pool) keep spinning after each op and steal the cores from
each other (measured here: torch's Linear(10, 10) went from 5 to 23 us and
flambeau's 784x512 GEMM from 1.4 to 26 ms with both in one process; see also
benchmarks/README.md). ``--same-process`` runs both in this process anyway.
Both libraries use 2 threads (``--threads`` to change).

Printed per case: min and median time per call over all repeats of all
rounds, and the ratio torch_time / flambeau_time of the medians (> 1:
flambeau is faster).

    .nox/dev/bin/python benchmarks/ops_nn.py [--rounds 6] [--only linear1] [--same-process]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit

CASES = {
    "linear1": "nn.Linear(10, 10) on one sample (1, 10), with grad",
    "linear1_nograd": "nn.Linear(10, 10) on one sample, no_grad",
    "linear128": "nn.Linear(784, 512) on (128, 784), with grad (forward only)",
    "mlp_step": "MLP 784-512-512-10 train step (batch 128, CE, SGD momentum 0.9)",
    "mlp_forward_backward": "MLP forward + CE + backward only",
    "sgd_step": "SGD(momentum=0.9).step() over the MLP's 6 params (669,706 floats)",
    "zero_grad_zeros": "optimizer.zero_grad(set_to_none=False) over the MLP's grads",
    "zero_grad_none": "optimizer.zero_grad() (set_to_none) + re-attaching the 6 grads",
}


THREADS = int(os.environ.get("OPS_NN_THREADS", "2"))


def _libs(lib: str):
    import numpy as np

    if lib == "flambeau":
        import flambeau_autograd as fa
        import flambeau_core as fb
        import flambeau_nn as fnn

        fb.set_num_threads(THREADS)
        return np, (lambda a: fb.tensor(a)), fnn, fnn.optim, fa.no_grad
    import torch

    torch.set_num_threads(THREADS)
    return np, torch.from_numpy, torch.nn, torch.optim, torch.no_grad


def setup(case: str, lib: str):
    np, to, nn_, optim, no_grad = _libs(lib)
    rng = np.random.default_rng(0)
    if case in ("linear1", "linear1_nograd"):
        lin = nn_.Linear(10, 10)
        x = to(rng.standard_normal((1, 10), dtype=np.float32))
        if case == "linear1":
            return (lambda: lin(x)), 2000

        def run():
            with no_grad():
                return lin(x)

        return run, 2000
    if case == "linear128":
        lin = nn_.Linear(784, 512)
        x = to(rng.standard_normal((128, 784), dtype=np.float32))
        return (lambda: lin(x)), 50
    x = to(rng.standard_normal((128, 784), dtype=np.float32))
    y = to(rng.integers(0, 10, size=128).astype(np.int64))
    model = nn_.Sequential(nn_.Linear(784, 512), nn_.ReLU(), nn_.Linear(512, 512), nn_.ReLU(), nn_.Linear(512, 10))
    loss_fn = nn_.CrossEntropyLoss()
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step() -> None:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    step()
    if case == "mlp_step":
        return step, 10
    if case == "mlp_forward_backward":
        return (lambda: loss_fn(model(x), y).backward()), 10
    if case == "sgd_step":
        return opt.step, 50
    if case == "zero_grad_zeros":
        return (lambda: opt.zero_grad(set_to_none=False)), 200
    if case == "zero_grad_none":
        params = list(model.parameters())
        grads = [p.grad for p in params]

        def zero_none():
            opt.zero_grad()
            for p, g in zip(params, grads, strict=False):
                p.grad = g

        return zero_none, 500
    raise ValueError(case)


def run_cases(lib: str, cases: list[str], repeats: int) -> dict[str, list[float]]:
    out = {}
    for c in cases:
        fn, number = setup(c, lib)
        fn()  # warm
        out[c] = [t / number for t in timeit.repeat(fn, number=number, repeat=repeats)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", action="append")
    ap.add_argument("--same-process", action="store_true")
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads of both libraries (default 2)")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    cases = args.only or list(CASES)
    global THREADS
    THREADS = args.threads
    if args._child:
        print(json.dumps(run_cases(args._child, cases, args.repeats)))
        return 0
    if args.same_process:
        import flambeau_core  # noqa: F401  (first: sets OMP_WAIT_POLICY=PASSIVE before torch's runtime loads)
    where = "one process" if args.same_process else "a child process per (round, library)"
    print(f"threads: {args.threads} each; {where}; load average {os.getloadavg()[0]:.2f}")
    times: dict[tuple[str, str], list[float]] = {(c, lib): [] for c in cases for lib in ("flambeau", "torch")}
    for r in range(args.rounds):
        for lib in ("flambeau", "torch") if r % 2 == 0 else ("torch", "flambeau"):
            if args.same_process:
                res = run_cases(lib, cases, args.repeats)
            else:
                cmd = [sys.executable, __file__, "--_child", lib, "--repeats", str(args.repeats)]
                cmd += ["--threads", str(args.threads)]
                for c in cases:
                    cmd += ["--only", c]
                res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            for c in cases:
                times[(c, lib)] += res[c]

    def fmt(s: float) -> str:
        return f"{s * 1e6:9.1f} us" if s < 1e-3 else f"{s * 1e3:9.3f} ms"

    print(f"{'case':<22} {'flambeau min':>13} {'median':>12} {'torch min':>12} {'median':>12}  torch/flambeau")
    for c in cases:
        f, t = times[(c, "flambeau")], times[(c, "torch")]
        fmed, tmed = statistics.median(f), statistics.median(t)
        print(f"{c:<22} {fmt(min(f))} {fmt(fmed)} {fmt(min(t))} {fmt(tmed)}  {tmed / fmed:6.2f}x")
    for c in cases:
        print(f"  {c}: {CASES[c]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
