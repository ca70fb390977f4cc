#!/usr/bin/env python
"""Row ops and float32 elementwise/dot, flambeau vs PyTorch in one process
(side_by_side.py: interleaved rounds, 2 threads, min / median per call, ratio
torch/flambeau of the medians; > 1: flambeau faster).

- ``softmax`` / ``log_softmax`` along the last dim, forward (``fwd``) and
  forward + backward (``f+b``: ``y.backward(g)`` with a fixed upstream gradient),
  at the shapes of the benchmark models: 128x10 (the MLP's loss), 128x512,
  700x10000 (the LSTM language model's logits), 1024x1 and 20x35;
- ``cross_entropy`` forward + backward at 128x10 and 700x10000;
- float32 contiguous ``add`` / ``mul`` / ``relu`` / ``threshold_backward`` (ReLU's
  backward) / ``copy_`` at 1K, 64K, 256K, 512K, 1M and 4M elements (the range
  where a second thread starts to pay), plus ReLU's backward at 128x512 and 128x4096;
- ``dot`` of 16-element vectors (Python-side overhead).

Only ratios from one run count on a shared, noisy machine. Example:
    .nox/dev/bin/python benchmarks/ops_row_ops.py --rounds 9
    .nox/dev/bin/python benchmarks/ops_row_ops.py --only softmax
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flambeau as fb  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from side_by_side import main  # noqa: E402

ROW_SHAPES = [(128, 10), (128, 512), (700, 10000), (1024, 1), (20, 35)]
SIZES = [("1K", 1 << 10), ("64K", 1 << 16), ("256K", 1 << 18), ("512K", 1 << 19), ("1M", 1 << 20), ("4M", 1 << 22)]


def _pair(a, grad=False):
    f = fb.tensor(a)
    t = torch.from_numpy(a.copy())
    if grad:
        f.requires_grad_()
        t.requires_grad_()
    return f, t


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def row_cases():
    for name in ("softmax", "log_softmax"):
        for n, c in ROW_SHAPES:
            fx, tx = _pair(_rand(n, c))
            ff = getattr(fb.nn.functional, name)
            tf = getattr(torch.nn.functional, name)
            yield (f"{name} fwd {n}x{c}", lambda f=ff, x=fx: f(x, -1), lambda f=tf, x=tx: f(x, -1))
        for n, c in ROW_SHAPES:
            fx, tx = _pair(_rand(n, c), grad=True)
            fg, tg = _pair(_rand(n, c, seed=1))
            ff = getattr(fb.nn.functional, name)
            tf = getattr(torch.nn.functional, name)

            def fstep(f=ff, x=fx, g=fg):
                x.grad = None
                f(x, -1).backward(g)

            def tstep(f=tf, x=tx, g=tg):
                x.grad = None
                f(x, -1).backward(g)

            yield (f"{name} f+b {n}x{c}", fstep, tstep)
    for n, c in [(128, 10), (700, 10000)]:
        fx, tx = _pair(_rand(n, c), grad=True)
        tgt = np.random.default_rng(2).integers(0, c, n)
        ft, tt = fb.tensor(tgt), torch.from_numpy(tgt.copy())

        def fce(x=fx, t=ft):
            x.grad = None
            fb.nn.functional.cross_entropy(x, t).backward()

        def tce(x=tx, t=tt):
            x.grad = None
            torch.nn.functional.cross_entropy(x, t).backward()

        yield (f"cross_entropy f+b {n}x{c}", fce, tce)
        fx0, tx0 = _pair(_rand(n, c))
        yield (
            f"cross_entropy fwd {n}x{c}",
            lambda x=fx0, t=ft: fb.nn.functional.cross_entropy(x, t),
            lambda x=tx0, t=tt: torch.nn.functional.cross_entropy(x, t),
        )


def elementwise_cases():
    for label, n in SIZES:
        fa, ta = _pair(_rand(n))
        fb_, tb = _pair(_rand(n, seed=1))
        fo, to = _pair(np.zeros(n, np.float32))
        yield (f"add {label}", lambda a=fa, b=fb_: a + b, lambda a=ta, b=tb: a + b)
        yield (f"mul {label}", lambda a=fa, b=fb_: a * b, lambda a=ta, b=tb: a * b)
        yield (f"relu {label}", lambda a=fa: fb.relu(a), lambda a=ta: torch.relu(a))
        yield (
            f"threshold_backward {label}",
            lambda a=fa, b=fb_: fb.threshold_backward(b, a, 0.0),
            lambda a=ta, b=tb: torch.ops.aten.threshold_backward(b, a, 0.0),
        )
        yield (f"copy_ {label}", lambda a=fa, o=fo: o.copy_(a), lambda a=ta, o=to: o.copy_(a))
    for n, c in [(128, 512), (128, 4096)]:
        fa, ta = _pair(_rand(n, c))
        fg, tg = _pair(_rand(n, c, seed=1))
        yield (
            f"threshold_backward {n}x{c}",
            lambda a=fa, g=fg: fb.threshold_backward(g, a, 0.0),
            lambda a=ta, g=tg: torch.ops.aten.threshold_backward(g, a, 0.0),
        )


def dot_cases():
    fa, ta = _pair(_rand(16))
    fb_, tb = _pair(_rand(16, seed=1))
    yield ("dot 16", lambda a=fa, b=fb_: fb.dot(a, b), lambda a=ta, b=tb: torch.dot(a, b))
    yield ("Tensor.dot 16", lambda a=fa, b=fb_: a.dot(b), lambda a=ta, b=tb: a.dot(b))


def cases():
    yield from row_cases()
    yield from elementwise_cases()
    yield from dot_cases()


if __name__ == "__main__":
    main(cases, fb, torch)
