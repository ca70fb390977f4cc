#!/usr/bin/env python
"""In-place and out= forms of elementwise ops, flambeau vs PyTorch (Note [Structured kernels]: they
write straight into the destination instead of computing out of place and copying).

Both libraries run in this one process, interleaved rounds (flambeau then torch, then the
reverse order), 2 intra-op threads each, OMP_WAIT_POLICY=PASSIVE (see ops_actloss.py).
Prints, per case, min and median per call and the ratio torch/flambeau of the medians
(> 1: flambeau is faster). Only ratios from one run count (a shared, noisy machine).
Shapes: the MLP's activations (batch 128 x 512) and a 1M-element float32 tensor.

    .nox/dev/bin/python benchmarks/ops_inplace.py [--rounds 7] [--only relu_]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import flambeau_core as fb  # noqa: E402
import numpy as np  # noqa: E402
import side_by_side  # noqa: E402  (benchmarks/side_by_side.py: the shared interleaved loop)
import torch  # noqa: E402


def cases():
    rng = np.random.default_rng(0)
    out = []
    for shape in [(128, 512), (1024, 1024)]:
        a = rng.standard_normal(shape).astype(np.float32)
        b = np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)  # mul_ by +-1 stays bounded
        fa, fb_, fo = fb.tensor(a), fb.tensor(b), fb.empty(shape)
        ta, tb, to = torch.from_numpy(a.copy()), torch.from_numpy(b.copy()), torch.empty(shape)
        s = "x".join(map(str, shape))
        out += [
            (f"relu_ {s}", lambda x=fa: x.relu_(), lambda x=ta: x.relu_()),
            (f"relu (out of place) {s}", lambda x=fa: fb.relu(x), lambda x=ta: torch.relu(x)),
            (f"sigmoid_ {s}", lambda x=fo: x.sigmoid_(), lambda x=to: x.sigmoid_()),
            (f"add_ {s}", lambda x=fa, y=fb_: x.add_(y), lambda x=ta, y=tb: x.add_(y)),
            (f"mul_ {s}", lambda x=fa, y=fb_: x.mul_(y), lambda x=ta, y=tb: x.mul_(y)),
            (f"sigmoid (out of place) {s}", lambda x=fa: fb.sigmoid(x), lambda x=ta: torch.sigmoid(x)),
            (
                f"add out= {s}",
                lambda x=fa, y=fb_, o=fo: fb.add(x, y, out=o),
                lambda x=ta, y=tb, o=to: torch.add(x, y, out=o),
            ),
            (
                f"mul out= {s}",
                lambda x=fa, y=fb_, o=fo: fb.mul(x, y, out=o),
                lambda x=ta, y=tb, o=to: torch.mul(x, y, out=o),
            ),
            (f"sigmoid out= {s}", lambda x=fa, o=fo: fb.sigmoid(x, out=o), lambda x=ta, o=to: torch.sigmoid(x, out=o)),
        ]
        fo.copy_(fa)
        to.copy_(ta)
    return out


if __name__ == "__main__":
    side_by_side.main(cases, fb, torch, width=30)
