#!/usr/bin/env python
"""Recurrent layers and attention: flambeau vs PyTorch, same process, interleaved rounds.

    python benchmarks/ops_rnn.py [--rounds 7] [--threads 2]

Cases (forward + backward unless said otherwise):
  * lstm_layer: nn.LSTM(128, 256, num_layers=2) on (35, 20, 128), output summed;
  * lstm_lm: one training step of the LSTM language model (embedding 10,000 x 128,
    2-layer LSTM 256, linear 256 -> 10,000, sequence 35 x batch 20, cross-entropy
    over all tokens, SGD with momentum);
  * gru_layer: nn.GRU(128, 256, num_layers=2), same input;
  * sdpa: scaled_dot_product_attention on (32, 4, 64, 32) with a causal mask;
  * mha: nn.MultiheadAttention(128, 4) self-attention on (64, 32, 128), need_weights=False.

Each round times flambeau then torch (then the other order in the next round)
for `--number` calls and keeps the per-call time; the table shows min and median
over rounds and the ratio torch/flambeau of each (> 1: flambeau is faster).
Both libraries run with the same thread count. OMP_WAIT_POLICY=PASSIVE is set
before either is imported, so that one library's idle OpenMP workers do not spin
on the cores the other needs (benchmarks/run.py explains the effect).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import flambeau_core as fc  # noqa: E402
import flambeau_nn as nn  # noqa: E402
import flambeau_nn.functional as F  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402


def _fb(a: np.ndarray) -> fc.Tensor:
    return fc.tensor(a)


def _copy(ours, theirs) -> None:
    import flambeau_autograd as fa

    their = dict(theirs.named_parameters())
    with fa.no_grad():
        for n, p in ours.named_parameters():
            p.copy_(fc.tensor(their[n].detach().numpy().copy()))


def case_layer(kind: str):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((35, 20, 128)).astype(np.float32)
    theirs = getattr(torch.nn, kind)(128, 256, num_layers=2)
    ours = getattr(nn, kind)(128, 256, num_layers=2)
    _copy(ours, theirs)
    xo, xt = _fb(x), torch.from_numpy(x)

    def run_fb():
        y = ours(xo)[0]
        y.sum().backward()

    def run_torch():
        y = theirs(xt)[0]
        y.sum().backward()

    return run_fb, run_torch


def case_lm():
    V, E, Hd, T, B = 10_000, 128, 256, 35, 20
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, V, (T, B))
    targets = rng.integers(0, V, (T * B,))

    class TorchLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, E)
            self.lstm = torch.nn.LSTM(E, Hd, num_layers=2)
            self.out = torch.nn.Linear(Hd, V)

        def forward(self, x):
            y, _ = self.lstm(self.emb(x))
            return self.out(y.reshape(-1, Hd))

    class FbLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, E)
            self.lstm = nn.LSTM(E, Hd, num_layers=2)
            self.out = nn.Linear(Hd, V)

        def forward(self, x):
            y, _ = self.lstm(self.emb(x))
            return self.out(y.reshape([-1, Hd]))

    tm, fm = TorchLM(), FbLM()
    _copy(fm, tm)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    fopt = nn.optim.SGD(fm.parameters(), lr=0.1, momentum=0.9)
    xt, yt = torch.from_numpy(tokens), torch.from_numpy(targets)
    xf, yf = fc.tensor(tokens), fc.tensor(targets)

    def run_fb():
        fopt.zero_grad()
        loss = F.cross_entropy(fm(xf), yf)
        loss.backward()
        fopt.step()

    def run_torch():
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tm(xt), yt)
        loss.backward()
        topt.step()

    return run_fb, run_torch


def case_sdpa():
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal((32, 4, 64, 32)).astype(np.float32) for _ in range(3)]
    fo = [_fb(a).requires_grad_(True) for a in arrs]
    to = [torch.from_numpy(a).requires_grad_(True) for a in arrs]

    def run_fb():
        F.scaled_dot_product_attention(*fo, is_causal=True).sum().backward()

    def run_torch():
        torch.nn.functional.scaled_dot_product_attention(*to, is_causal=True).sum().backward()

    return run_fb, run_torch


def case_mha():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 32, 128)).astype(np.float32)
    theirs = torch.nn.MultiheadAttention(128, 4)
    ours = nn.MultiheadAttention(128, 4)
    _copy(ours, theirs)
    xo, xt = _fb(x), torch.from_numpy(x)

    def run_fb():
        ours(xo, xo, xo, need_weights=False)[0].sum().backward()

    def run_torch():
        theirs(xt, xt, xt, need_weights=False)[0].sum().backward()

    return run_fb, run_torch


CASES = {
    "lstm_layer": lambda: case_layer("LSTM"),
    "gru_layer": lambda: case_layer("GRU"),
    "lstm_lm": case_lm,
    "sdpa": case_sdpa,
    "mha": case_mha,
}


def _time(fn, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="*", choices=sorted(CASES))
    a = ap.parse_args()
    fc.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    print(f"threads={a.threads} rounds={a.rounds} number={a.number} torch={torch.__version__}")
    print(f"{'case':<12} {'flambeau min/median ms':>24} {'torch min/median ms':>22} {'torch/flambeau min, median':>28}")
    for name in a.only or CASES:
        run_fb, run_torch = CASES[name]()
        run_fb()
        run_torch()
        tf, tt = [], []
        for r in range(a.rounds):
            order = [(run_fb, tf), (run_torch, tt)]
            for fn, acc in order if r % 2 == 0 else order[::-1]:
                acc.append(_time(fn, a.number))
        fmin, fmed = min(tf) * 1e3, statistics.median(tf) * 1e3
        tmin, tmed = min(tt) * 1e3, statistics.median(tt) * 1e3
        print(
            f"{name:<12} {fmin:>11.2f} / {fmed:>9.2f} {tmin:>10.2f} / {tmed:>9.2f} "
            f"{tmin / fmin:>14.2f}, {tmed / fmed:.2f}"
        )


if __name__ == "__main__":
    main()
