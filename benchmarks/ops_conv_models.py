#!/usr/bin/env python
"""ResNet-8 (and MobileNet / LeNet-5) convolution pieces and whole training / eval steps: flambeau vs PyTorch.

One process, both libraries with 2 threads, interleaved rounds (the order
alternates), so that the machine's noise hits both alike. flambeau is imported
first: its OMP_WAIT_POLICY=PASSIVE default then holds for torch's OpenMP
runtime too (benchmarks/ops_norm.py explains why both must wait passively
when they share a process).

Per convolution layer of ResNet-8 (batch 32) and LeNet-5's conv2 (batch 64):
- ``fwd``:   the no-grad forward;
- ``dx``:    the input gradient alone (flambeau: conv_transpose2d of the output
  gradient, what convolution_backward_input runs; torch:
  aten.convolution_backward with output_mask [True, False, False]);
- ``fwd+dw``: forward + backward with only the weight requiring grad.
Then the whole benchmark models (benchmarks/models.py TrainStep): a training
step, and ResNet-8's no-grad eval forward.

Prints min and median milliseconds and torch/flambeau of the medians (> 1:
flambeau is faster).

    python benchmarks/ops_conv_models.py [--rounds 7] [--only layers|models]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import flambeau  # noqa: F401,I001  (first: passive OpenMP waiting for both runtimes)
import flambeau_autograd  # noqa: F401
import flambeau_core as fc
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MODELS, TrainStep, framework  # noqa: E402

# (name, N, Cin, Cout, k, stride, pad, H)
LAYERS = [
    ("stem 3->16 @32", 32, 3, 16, 3, 1, 1, 32),
    ("16->16 @32", 32, 16, 16, 3, 1, 1, 32),
    ("16->32 s2 @32", 32, 16, 32, 3, 2, 1, 32),
    ("32->32 @16", 32, 32, 32, 3, 1, 1, 16),
    ("32->64 s2 @16", 32, 32, 64, 3, 2, 1, 16),
    ("64->64 @8", 32, 64, 64, 3, 1, 1, 8),
    ("short 16->32 1x1 s2", 32, 16, 32, 1, 2, 0, 32),
    ("short 32->64 1x1 s2", 32, 32, 64, 1, 2, 0, 16),
    ("lenet 6->16 5x5 @14", 64, 6, 16, 5, 1, 0, 14),
]


def layer_fns(case, rng):
    _, n, cin, cout, k, s, p, h = case
    x = rng.standard_normal((n, cin, h, h)).astype(np.float32)
    w = (rng.standard_normal((cout, cin, k, k)) * 0.1).astype(np.float32)
    ho = (h + 2 * p - k) // s + 1
    gy = rng.standard_normal((n, cout, ho, ho)).astype(np.float32)
    op = h - ((ho - 1) * s - 2 * p + k)
    fx, fw, fg = fc.tensor(x), fc.tensor(w), fc.tensor(gy)
    fwg = fc.tensor(w).requires_grad_(True)
    tx, tw, tg = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(gy)
    twg = torch.from_numpy(w.copy()).requires_grad_(True)

    def fb_dw():
        fwg.grad = None
        fc.conv2d(fx, fwg, None, s, p).backward(fg)

    def th_dw():
        twg.grad = None
        torch.nn.functional.conv2d(tx, twg, None, s, p).backward(tg)

    def th_dx():
        torch.ops.aten.convolution_backward(
            tg, tx, tw, None, [s, s], [p, p], [1, 1], False, [0, 0], 1, [True, False, False]
        )

    def th_fwd():
        with torch.no_grad():
            torch.nn.functional.conv2d(tx, tw, None, s, p)

    return {
        "fwd": (lambda: fc.conv2d(fx, fw, None, s, p), th_fwd),
        "dx": (lambda: fc.conv_transpose2d(fg, fw, None, s, p, op), th_dx),
        "fwd+dw": (fb_dw, th_dw),
    }


def time_pair(fb_fn, th_fn, rounds: int, number: int) -> tuple[list[float], list[float]]:
    fb_fn()
    th_fn()
    times: dict[str, list[float]] = {"fb": [], "th": []}
    for r in range(rounds):
        order = (("fb", fb_fn), ("th", th_fn)) if r % 2 == 0 else (("th", th_fn), ("fb", fb_fn))
        for name, fn in order:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - t0) / number * 1e3)
    return times["fb"], times["th"]


def row(label: str, mode: str, fb: list[float], th: list[float]) -> str:
    fmed, tmed = statistics.median(fb), statistics.median(th)
    return f"{label:22s} {mode:7s} {min(fb):8.3f} {fmed:8.3f} {min(th):8.3f} {tmed:8.3f} {tmed / fmed:6.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", choices=["layers", "models"], default=None)
    a = ap.parse_args()
    fc.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    print(f"threads={a.threads} rounds={a.rounds} torch {torch.__version__} load {os.getloadavg()}")
    hdr = f"{'case':22s} {'mode':7s} {'fb min':>8s} {'fb med':>8s} {'th min':>8s} {'th med':>8s} {'th/fb':>6s}"
    print(hdr)
    print("-" * len(hdr))
    if a.only in (None, "layers"):
        rng = np.random.default_rng(0)
        for case in LAYERS:
            for mode, (f, t) in layer_fns(case, rng).items():
                fb, th = time_pair(f, t, a.rounds, 5)
                print(row(case[0], mode, fb, th), flush=True)
    if a.only in (None, "models"):
        fws = {n: framework(n) for n in ("flambeau", "torch")}
        for fw in fws.values():
            fw.manual_seed(0)
        for name in ("resnet8", "mobilenet", "lenet5"):
            spec = MODELS[name]
            steps = {n: TrainStep(spec, fw) for n, fw in fws.items()}
            fb, th = time_pair(steps["flambeau"].step, steps["torch"].step, a.rounds, 5)
            print(row(f"{name} (batch {spec.batch})", "train", fb, th), flush=True)
            if spec.eval_benchmark:
                for s in steps.values():
                    s.model.eval()
                fb, th = time_pair(steps["flambeau"].infer, steps["torch"].infer, a.rounds, 20)
                print(row(f"{name} (batch {spec.batch})", "eval", fb, th), flush=True)


if __name__ == "__main__":
    main()
