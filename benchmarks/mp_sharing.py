"""Tensors through a multiprocessing Pipe: flambeau.multiprocessing against torch.multiprocessing.

A child receives a tensor and answers with its sum of one element (so the tensor
is really mapped); the parent sends the same tensor `rounds` times. Both share
memory (file_descriptor strategy): the cost is per message, not per byte. Rounds
of flambeau and torch alternate; min and median per message are reported, and
torch_time / flambeau_time.

    python benchmarks/mp_sharing.py
"""

from __future__ import annotations

import statistics
import time


def _child(conn):
    while True:
        t = conn.recv()
        if t is None:
            return
        conn.send(float(t[0].item()))


def _round(ctx, conn, t, n):
    start = time.perf_counter()
    for _ in range(n):
        conn.send(t)
        conn.recv()
    return (time.perf_counter() - start) / n


def main(rounds: int = 7, per_round: int = 200) -> None:
    import flambeau as fb
    import torch
    import torch.multiprocessing as tmp

    fmp = fb.multiprocessing
    for size in (1 << 10, 1 << 20, 1 << 24):  # floats
        times = {"flambeau": [], "torch": []}
        setups = {}
        for name, mp, t in (
            ("flambeau", fmp, fb.ones(size)),
            ("torch", tmp, torch.ones(size)),
        ):
            ctx = mp.get_context("fork")
            a, b = ctx.Pipe()
            p = ctx.Process(target=_child, args=(b,))
            p.start()
            _round(ctx, a, t, 5)  # warm-up: the first send shares the tensor
            setups[name] = (ctx, a, p, t)
        for _ in range(rounds):
            for name, (ctx, a, _, t) in setups.items():
                times[name].append(_round(ctx, a, t, per_round))
        for _ctx, a, p, _ in setups.values():
            a.send(None)
            p.join()
        f, tt = times["flambeau"], times["torch"]
        med_f = statistics.median(f)
        print(
            f"{size * 4 / 2**20:8.3f} MiB  flambeau min {min(f) * 1e6:7.1f} us median {med_f * 1e6:7.1f} us"
            f" | torch min {min(tt) * 1e6:7.1f} us median {statistics.median(tt) * 1e6:7.1f} us"
            f" | torch/flambeau (median) {statistics.median(tt) / statistics.median(f):.2f}"
        )


if __name__ == "__main__":
    main()
