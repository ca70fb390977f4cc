#!/usr/bin/env python
"""Convolution layers of the benchmark models: flambeau vs PyTorch, one process, interleaved.

Each case is one convolution layer of LeNet-5 (batch 64), ResNet-8 (batch 32)
or the MobileNet-style net (batch 32) timed forward only and forward+backward
(the gradients a training step needs: weight, bias, and the input's except for
a model's first layer). Both libraries run with 2 threads in this process
(flambeau is imported first: its OMP_WAIT_POLICY=PASSIVE default then holds for
torch's OpenMP runtime too, so neither one's idle workers spin against the
other); rounds alternate which library goes first. The table shows min and
median milliseconds per call and the ratio torch/flambeau of the medians
(> 1: flambeau is faster).

    python benchmarks/ops_conv.py [--rounds 7] [--number 5] [--only resnet]
"""

from __future__ import annotations

import argparse
import statistics
import time

import flambeau_autograd  # noqa: F401  (gradients)
import flambeau_core as fc
import numpy as np
import torch

# (model, name, N, Cin, Cout, k, stride, pad, groups, H, bias, input_grad)
CASES = [
    ("lenet", "conv1 1->6 5x5 p2", 64, 1, 6, 5, 1, 2, 1, 28, True, False),
    ("lenet", "conv2 6->16 5x5", 64, 6, 16, 5, 1, 0, 1, 14, True, True),
    ("resnet", "stem 3->16 3x3", 32, 3, 16, 3, 1, 1, 1, 32, False, False),
    ("resnet", "16->16 3x3 @32", 32, 16, 16, 3, 1, 1, 1, 32, False, True),
    ("resnet", "16->32 3x3 s2 @32", 32, 16, 32, 3, 2, 1, 1, 32, False, True),
    ("resnet", "32->32 3x3 @16", 32, 32, 32, 3, 1, 1, 1, 16, False, True),
    ("resnet", "short 16->32 1x1 s2", 32, 16, 32, 1, 2, 0, 1, 32, False, True),
    ("resnet", "32->64 3x3 s2 @16", 32, 32, 64, 3, 2, 1, 1, 16, False, True),
    ("resnet", "64->64 3x3 @8", 32, 64, 64, 3, 1, 1, 1, 8, False, True),
    ("resnet", "short 32->64 1x1 s2", 32, 32, 64, 1, 2, 0, 1, 16, False, True),
    ("mobilenet", "stem 3->32 3x3", 32, 3, 32, 3, 1, 1, 1, 32, False, False),
    ("mobilenet", "dw32 3x3 @32", 32, 32, 32, 3, 1, 1, 32, 32, False, True),
    ("mobilenet", "pw 32->64 @32", 32, 32, 64, 1, 1, 0, 1, 32, False, True),
    ("mobilenet", "dw64 3x3 s2 @32", 32, 64, 64, 3, 2, 1, 64, 32, False, True),
    ("mobilenet", "pw 64->128 @16", 32, 64, 128, 1, 1, 0, 1, 16, False, True),
    ("mobilenet", "dw128 3x3 @16", 32, 128, 128, 3, 1, 1, 128, 16, False, True),
    ("mobilenet", "pw 128->128 @16", 32, 128, 128, 1, 1, 0, 1, 16, False, True),
    ("mobilenet", "dw128 3x3 s2 @16", 32, 128, 128, 3, 2, 1, 128, 16, False, True),
    ("mobilenet", "pw 128->256 @8", 32, 128, 256, 1, 1, 0, 1, 8, False, True),
    ("mobilenet", "dw256 3x3 @8", 32, 256, 256, 3, 1, 1, 256, 8, False, True),
    ("mobilenet", "pw 256->256 @8", 32, 256, 256, 1, 1, 0, 1, 8, False, True),
]


def make(lib, case, rng):
    _, _, n, cin, cout, k, s, p, g, h, bias, xgrad = case
    x = rng.standard_normal((n, cin, h, h)).astype(np.float32)
    w = rng.standard_normal((cout, cin // g, k, k)).astype(np.float32) * 0.1
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    ho = (h + 2 * p - k) // s + 1
    gy = rng.standard_normal((n, cout, ho, ho)).astype(np.float32)
    if lib == "torch":
        T = torch.from_numpy
        tx, tw = T(x).requires_grad_(xgrad), T(w).requires_grad_(True)
        tb = T(b).requires_grad_(True) if b is not None else None
        tg = T(gy)

        def fwd():
            with torch.no_grad():
                torch.nn.functional.conv2d(tx, tw, tb, s, p, 1, g)

        def train():
            tw.grad = None
            if tb is not None:
                tb.grad = None
            if xgrad:
                tx.grad = None
            torch.nn.functional.conv2d(tx, tw, tb, s, p, 1, g).backward(tg)

        return fwd, train
    fx, fw = fc.tensor(x), fc.tensor(w)
    fx.requires_grad_(xgrad)
    fw.requires_grad_(True)
    fb = fc.tensor(b) if b is not None else None
    if fb is not None:
        fb.requires_grad_(True)
    fg = fc.tensor(gy)

    def ffwd():
        with flambeau_autograd.no_grad():
            fc.conv2d(fx, fw, fb, s, p, 1, g)

    def ftrain():
        fw.grad = None
        if fb is not None:
            fb.grad = None
        if xgrad:
            fx.grad = None
        fc.conv2d(fx, fw, fb, s, p, 1, g).backward(fg)

    return ffwd, ftrain


def timeit(f, number):
    t0 = time.perf_counter()
    for _ in range(number):
        f()
    return (time.perf_counter() - t0) / number * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default=None, help="a model (lenet, resnet, mobilenet) or part of a case name")
    a = ap.parse_args()
    fc.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    cases = [c for c in CASES if a.only is None or a.only == c[0] or a.only in c[1]]
    print(f"threads={a.threads} rounds={a.rounds} number={a.number} torch {torch.__version__}")
    cols = ["fb min", "fb med", "th min", "th med"]
    hdr = f"{'model':10s} {'layer':22s} {'mode':6s} " + " ".join(f"{c:>8s}" for c in cols) + f" {'th/fb':>6s}"
    print(hdr)
    print("-" * len(hdr))
    totals = {"fwd": [0.0, 0.0], "train": [0.0, 0.0]}
    for case in cases:
        fns = {lib: make(lib, case, rng) for lib in ("flambeau", "torch")}
        for mode, idx in (("fwd", 0), ("train", 1)):
            times = {"flambeau": [], "torch": []}
            for lib in times:
                fns[lib][idx]()  # warm up
            for r in range(a.rounds):
                order = ("flambeau", "torch") if r % 2 == 0 else ("torch", "flambeau")
                for lib in order:
                    times[lib].append(timeit(fns[lib][idx], a.number))
            fmin, fmed = min(times["flambeau"]), statistics.median(times["flambeau"])
            tmin, tmed = min(times["torch"]), statistics.median(times["torch"])
            totals[mode][0] += fmed
            totals[mode][1] += tmed
            nums = " ".join(f"{v:8.3f}" for v in (fmin, fmed, tmin, tmed))
            print(f"{case[0]:10s} {case[1]:22s} {mode:6s} {nums} {tmed / fmed:6.2f}")
    for mode, (f, t) in totals.items():
        print(f"{'total':10s} {'(sum of medians)':22s} {mode:6s} {'':8s} {f:8.3f} {'':8s} {t:8.3f} {t / f:6.2f}")


if __name__ == "__main__":
    main()
