#!/usr/bin/env python
"""fb.func's transforms vs torch.func in one process (side_by_side.py: interleaved rounds, 2 threads,
min / median per call, ratio torch/flambeau of the medians; > 1: flambeau faster).

- ``jacrev 512->512 linear+tanh``: the Jacobian of ``tanh(W x + b)`` with respect to ``x``; flambeau runs
  one backward pass per output row over the graph recorded once, torch vmaps one batched backward;
- ``hessian mlp 8-16-1 params``: the Hessian of a small network's squared loss with respect to its
  first layer's weight (flambeau: reverse over reverse; torch: forward over reverse).

Only ratios from one run count on a shared, noisy machine. Example:
    python benchmarks/ops_func.py --rounds 7
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flambeau as fb  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from side_by_side import main  # noqa: E402


def cases():
    rng = np.random.default_rng(0)
    for fdt, tdt in ((fb.float32, torch.float32), (fb.float64, torch.float64)):
        w, b, x = rng.standard_normal((512, 512)) / 20, rng.standard_normal(512), rng.standard_normal(512)
        fw, fbias, fx = (fb.tensor(a, dtype=fdt) for a in (w, b, x))
        tw, tbias, tx = (torch.tensor(a, dtype=tdt) for a in (w, b, x))
        ours = fb.func.jacrev(lambda v, fw=fw, fbias=fbias: fb.tanh(fw @ v + fbias))
        theirs = torch.func.jacrev(lambda v, tw=tw, tbias=tbias: torch.tanh(tw @ v + tbias))
        yield f"jacrev 512->512 linear+tanh {str(tdt)[6:]}", lambda f=ours, v=fx: f(v), lambda f=theirs, v=tx: f(v)
    w1, w2, x, y = (
        rng.standard_normal((16, 8)),
        rng.standard_normal((1, 16)),
        rng.standard_normal((32, 8)),
        rng.standard_normal((32, 1)),
    )
    fa = [fb.tensor(a, dtype=fb.float64) for a in (w1, w2, x, y)]
    ta = [torch.tensor(a, dtype=torch.float64) for a in (w1, w2, x, y)]

    def loss(w1, w2, x, y):
        return (((x @ w1.T).tanh() @ w2.T - y) ** 2).mean()

    yield (
        "hessian mlp 8-16-1 w.r.t. W1 (128x128)",
        lambda: fb.func.hessian(loss)(*fa),
        lambda: torch.func.hessian(loss)(*ta),
    )


if __name__ == "__main__":
    main(cases, fb, torch)
