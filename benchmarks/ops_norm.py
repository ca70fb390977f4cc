#!/usr/bin/env python
"""batch_norm, embedding and dropout (training: forward + backward) against PyTorch, at the benchmark models' shapes.

Both libraries run in this one process, interleaved: each round times a block
of calls of one, then of the other (the order alternates between rounds), so
machine noise hits both alike. Prints min and median per call and the ratio
torch_time / flambeau_time of the medians (> 1: flambeau is faster).

Two OpenMP runtimes share the process (torch bundles its own libgomp): with
torch's default spin-waiting, its idle workers keep spinning after each torch
op and steal the 2 cores from flambeau's, and the other way round, which
inflates both sides by 10-100x here (benchmarks/run.py notes the same). So
flambeau is imported first: it sets OMP_WAIT_POLICY=PASSIVE (its own default)
before torch loads, and both runtimes wait passively. Set
FLAMBEAU_BENCH_TORCH_FIRST=1 to import torch first instead (torch's defaults).

    python benchmarks/ops_norm.py [--threads 2] [--rounds 15] [--only batch_norm]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time

if os.environ.get("FLAMBEAU_BENCH_TORCH_FIRST") == "1":
    importlib.import_module("torch")
import flambeau as fb  # noqa: I001  (the meta-package: autograd and the caching allocator on, as in the models)
import torch
import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np


def _fb(a: np.ndarray, requires_grad: bool = False) -> fc.Tensor:
    t = fc.tensor(a)
    return t.requires_grad_(True) if requires_grad else t


def _th(a: np.ndarray, requires_grad: bool = False) -> torch.Tensor:
    return torch.from_numpy(a.copy()).requires_grad_(requires_grad)


def batch_norm_case(n: int, c: int, h: int, w: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    g = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt, bs = np.ones(c, np.float32), np.zeros(c, np.float32)

    xf, wf, bf, gf = _fb(x, True), _fb(wt, True), _fb(bs, True), _fb(g)
    rmf, rvf = fc.zeros(c), fc.ones(c)
    xt, wtt, btt, gt = _th(x, True), _th(wt, True), _th(bs, True), _th(g)
    rmt, rvt = torch.zeros(c), torch.ones(c)

    def run_fb():
        y = F.batch_norm(xf, rmf, rvf, wf, bf, training=True)
        fa.grad(y, [xf, wf, bf], gf)

    def run_th():
        y = torch.nn.functional.batch_norm(xt, rmt, rvt, wtt, btt, training=True)
        torch.autograd.grad(y, [xt, wtt, btt], gt)

    return run_fb, run_th


def embedding_case(num: int, dim: int, idx_shape: tuple[int, ...]):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((num, dim)).astype(np.float32)
    idx = rng.integers(0, num, size=idx_shape)
    g = rng.standard_normal(idx_shape + (dim,)).astype(np.float32)
    wf, idf, gf = _fb(w, True), fc.tensor(idx), _fb(g)
    wt, idt, gt = _th(w, True), torch.from_numpy(idx), _th(g)

    def run_fb():
        y = F.embedding(idf, wf)
        fa.grad(y, [wf], gf)

    def run_th():
        y = torch.nn.functional.embedding(idt, wt)
        torch.autograd.grad(y, [wt], gt)

    return run_fb, run_th


def dropout_case(shape: tuple[int, ...], p: float = 0.5):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    xf, gf = _fb(x, True), _fb(g)
    xt, gt = _th(x, True), _th(g)

    def run_fb():
        y = F.dropout(xf, p, training=True)
        fa.grad(y, [xf], gf)

    def run_th():
        y = torch.nn.functional.dropout(xt, p, training=True)
        torch.autograd.grad(y, [xt], gt)

    return run_fb, run_th


CASES = {
    # ResNet-8 (CIFAR): the three stages.
    "batch_norm 32x16x32x32": ("batch_norm", lambda: batch_norm_case(32, 16, 32, 32)),
    "batch_norm 32x32x16x16": ("batch_norm", lambda: batch_norm_case(32, 32, 16, 16)),
    "batch_norm 32x64x8x8": ("batch_norm", lambda: batch_norm_case(32, 64, 8, 8)),
    # MobileNet-style (CIFAR): 32..256 channels at 32, 16 and 8 pixels.
    "batch_norm 32x32x32x32": ("batch_norm", lambda: batch_norm_case(32, 32, 32, 32)),
    "batch_norm 32x64x16x16": ("batch_norm", lambda: batch_norm_case(32, 64, 16, 16)),
    "batch_norm 32x128x16x16": ("batch_norm", lambda: batch_norm_case(32, 128, 16, 16)),
    "batch_norm 32x128x8x8": ("batch_norm", lambda: batch_norm_case(32, 128, 8, 8)),
    "batch_norm 32x256x8x8": ("batch_norm", lambda: batch_norm_case(32, 256, 8, 8)),
    # LSTM language model: 10,000 x 128 table, 35 x 20 tokens.
    "embedding 10000x128[35x20]": ("embedding", lambda: embedding_case(10000, 128, (35, 20))),
    # NCF: user and item tables, 1,024 ids per batch (backward is the hot part).
    "embedding 10000x64[1024]": ("embedding", lambda: embedding_case(10000, 64, (1024,))),
    "embedding 5000x64[1024]": ("embedding", lambda: embedding_case(5000, 64, (1024,))),
    # LSTM LM dropout on the (35, 20, 256) activations.
    "dropout 35x20x256": ("dropout", lambda: dropout_case((35, 20, 256))),
}


def time_block(fn, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--min-block", type=float, default=0.02, help="seconds per timed block (sets the calls per block)")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    a = ap.parse_args()
    fb.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    print(f"threads={a.threads} rounds={a.rounds} torch={torch.__version__} cpu={fc._C._cpu_capability()}")
    print(f"{'case':30s} {'flambeau min/median (us)':>26s} {'torch min/median (us)':>24s} {'torch/flambeau':>15s}")
    for name, (_, make) in CASES.items():
        if a.only not in name:
            continue
        run_fb, run_th = make()
        for fn in (run_fb, run_th):  # warm up (allocator caches, first-touch pages)
            for _ in range(3):
                fn()
        t1 = time_block(run_fb, 1)
        number = max(1, int(a.min_block / max(t1, 1e-6)))
        fb_times: list[float] = []
        th_times: list[float] = []
        for r in range(a.rounds):
            order = [(run_fb, fb_times), (run_th, th_times)]
            if r % 2:
                order.reverse()
            for fn, out in order:
                out.append(time_block(fn, number))
        fmin, fmed = min(fb_times) * 1e6, statistics.median(fb_times) * 1e6
        tmin, tmed = min(th_times) * 1e6, statistics.median(th_times) * 1e6
        print(f"{name:30s} {fmin:11.1f} / {fmed:11.1f} {tmin:11.1f} / {tmed:11.1f} {tmed / fmed:14.2f}x")


if __name__ == "__main__":
    main()
