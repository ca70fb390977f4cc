#!/usr/bin/env python
"""The pieces of the benchmark MLP's training step (784-512-512-10, ReLU, batch 128),
flambeau vs PyTorch in one process (side_by_side.py: interleaved rounds, 2 threads,
min / median per call, ratio torch/flambeau of the medians; > 1: flambeau faster).

- ``fwd L1/L2/L3``: each layer's ``linear`` (bias included);
- ``bwd L1/L2/L3``: each layer's three gradients as the training step needs them
  (L1: weight and bias only, its input needs none): flambeau's one ``_linear_backward``
  call (Note [Linear backward]) vs torch's ``mm``/``mm``/``sum`` (what its LinearBackward
  computes);
- ``mlp train step`` / ``mlp eval forward``: the whole step of benchmarks/train_models.py
  and the no-grad eval forward.

Only ratios from one run count on a shared, noisy machine. Example:
    python benchmarks/ops_mlp_training_step.py --rounds 9
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flambeau as fb  # noqa: E402
import flambeau_core as fc  # noqa: E402
import torch  # noqa: E402
from models import MODELS, TrainStep, framework  # noqa: E402
from side_by_side import main  # noqa: E402

LAYERS = {"L1": (784, 512), "L2": (512, 512), "L3": (512, 10)}
BATCH = 128


def cases():
    for name, (i, o) in LAYERS.items():
        x, w, b = fb.randn(BATCH, i), fb.randn(o, i), fb.randn(o)
        tx, tw, tb = torch.randn(BATCH, i), torch.randn(o, i), torch.randn(o)
        yield (
            f"fwd {name} ({BATCH}x{i} -> {o})",
            lambda x=x, w=w, b=b: fb.nn.functional.linear(x, w, b),
            lambda x=tx, w=tw, b=tb: torch.nn.functional.linear(x, w, b),
        )
    for name, (i, o) in LAYERS.items():
        x, w, g = fb.randn(BATCH, i), fb.randn(o, i), fb.randn(BATCH, o)
        tx, tw, tg = torch.randn(BATCH, i), torch.randn(o, i), torch.randn(BATCH, o)
        need_x = name != "L1"
        yield (
            f"bwd {name} ({'dX, ' if need_x else ''}dW, db)",
            lambda x=x, w=w, g=g, n=need_x: fc._C._linear_backward(g, x, w, n, True, True),
            (
                (lambda x=tx, w=tw, g=tg: (g @ w, g.t() @ x, g.sum(0)))
                if need_x
                else (lambda x=tx, g=tg: (g.t() @ x, g.sum(0)))
            ),
        )
    steps = {}
    for lib in ("flambeau", "torch"):
        fw = framework(lib)
        fw.manual_seed(0)
        steps[lib] = TrainStep(MODELS["mlp"], fw)
        steps[lib].step()
    yield "mlp train step", steps["flambeau"].step, steps["torch"].step
    evals = {}
    for lib in ("flambeau", "torch"):
        fw = framework(lib)
        fw.manual_seed(0)
        evals[lib] = TrainStep(MODELS["mlp"], fw)
        evals[lib].model.eval()
    yield "mlp eval forward", evals["flambeau"].infer, evals["torch"].infer


if __name__ == "__main__":
    main(cases, fb, torch)
