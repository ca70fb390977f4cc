#!/usr/bin/env python
"""flambeau-cuda vs PyTorch on a GPU, at the shapes of the MLP and NCF benchmark models.

Both libraries run in this one process, in interleaved rounds; every timed
call is followed by a synchronize of its library, so the times are of the
work, not of the launch. Prints min and median per case and the ratio
torch / flambeau of the medians (> 1: flambeau is faster).

Needs a CUDA GPU, flambeau-cuda, cuBLAS (nvidia-cublas) and a CUDA build of
PyTorch; without them it says which is missing and exits 0 (no numbers are
measured on a machine without a GPU).

    python benchmarks/ops_cuda.py [--rounds 7] [--number 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import flambeau as fb


def _skip(reason: str) -> None:
    print(f"ops_cuda: skipped: {reason}")
    sys.exit(0)


def time_calls(fn, sync, number: int) -> float:
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return (time.perf_counter() - t0) / number


def cases(torch):
    """(name, flambeau fn, torch fn) at the MLP (batch 64, 784-512-512-10) and NCF (batch 256, 64-d) shapes."""
    fd, td = "cuda", "cuda"
    x = fb.randn(64, 784, device=fd)
    w = fb.randn(512, 784, device=fd)
    b = fb.randn(512, device=fd)
    tx, tw, tb = (torch.tensor(t.cpu().tolist(), device=td) for t in (x, w, b))
    h = fb.randn(64, 512, device=fd)
    th = torch.tensor(h.cpu().tolist(), device=td)
    logits = fb.randn(64, 10, device=fd)
    tlogits = torch.tensor(logits.cpu().tolist(), device=td)
    y = fb.randint(0, 10, (64,)).to(fd)
    ty = torch.tensor(y.cpu().tolist(), device=td)
    table = fb.randn(10_000, 64, device=fd)
    ttable = torch.tensor(table.cpu().tolist(), device=td)
    users = fb.randint(0, 10_000, (256,)).to(fd)
    tusers = torch.tensor(users.cpu().tolist(), device=td)
    big = fb.randn(1 << 20, device=fd)
    tbig = torch.tensor(big.cpu().tolist(), device=td)
    F, T = fb.nn.functional, torch.nn.functional
    return [
        ("linear 64x784 @ 784x512 + b", lambda: F.linear(x, w, b), lambda: T.linear(tx, tw, tb)),
        ("relu 64x512", lambda: F.relu(h), lambda: T.relu(th)),
        ("add 64x512 + 512", lambda: h + b, lambda: th + tb),
        ("cross_entropy 64x10", lambda: F.cross_entropy(logits, y), lambda: T.cross_entropy(tlogits, ty)),
        ("log_softmax 64x10", lambda: F.log_softmax(logits, 1), lambda: T.log_softmax(tlogits, 1)),
        ("embedding 256 of 10000x64", lambda: F.embedding(users, table), lambda: T.embedding(tusers, ttable)),
        ("sum 1M", lambda: big.sum(), lambda: tbig.sum()),
        ("sum 64x512 dim 0", lambda: h.sum(0), lambda: th.sum(0)),
        ("mul 1M", lambda: big * 2.0, lambda: tbig * 2.0),
        ("h2d copy 64x784", lambda: x.cpu(), lambda: tx.cpu()),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=50)
    args = ap.parse_args()
    if not fb.cuda.is_available():
        _skip("no CUDA GPU (flambeau.cuda.is_available() is False)")
    try:
        import torch
    except ImportError:
        _skip("PyTorch is not installed")
    if not torch.cuda.is_available():
        _skip("this PyTorch build has no CUDA (the oracle must run on the same GPU)")
    fsync, tsync = fb.cuda.synchronize, torch.cuda.synchronize
    rows = cases(torch)
    times = {name: ([], []) for name, _, _ in rows}
    for _ in range(args.rounds):
        for name, f, t in rows:
            times[name][0].append(time_calls(f, fsync, args.number))
            times[name][1].append(time_calls(t, tsync, args.number))
    print(f"{'case':32s} {'flambeau min/med (us)':>24s} {'torch min/med (us)':>22s} {'torch/flambeau':>15s}")
    for name, _, _ in rows:
        f, t = times[name]
        fm, tm = statistics.median(f), statistics.median(t)
        print(
            f"{name:32s} {min(f) * 1e6:10.1f} / {fm * 1e6:9.1f}   {min(t) * 1e6:9.1f} / {tm * 1e6:9.1f} {tm / fm:14.2f}"
        )


if __name__ == "__main__":
    main()
