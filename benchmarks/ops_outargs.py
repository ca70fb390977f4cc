#!/usr/bin/env python
"""out= forms of the ops that gained out=, flambeau vs PyTorch, and their
plain forms (whose bindings now parse one more keyword): per-call cost at the MLP's shapes
(batch 128 x 512 activations, 512 x 512 weights) and at tiny ones (call overhead).

Both libraries run in this one process, interleaved rounds (flambeau then torch, then the
reverse order), 2 intra-op threads each, OMP_WAIT_POLICY=PASSIVE (see ops_actloss.py).
Prints, per case, min and median per call and the ratio torch/flambeau of the medians
(> 1: flambeau is faster). Only ratios from one run count (a shared, noisy machine).

    .nox/dev/bin/python benchmarks/ops_outargs.py [--rounds 7] [--only sum]
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
    for shape, name in [((128, 512), "128x512"), ((4, 4), "4x4")]:
        a = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal((shape[1], shape[1])).astype(np.float32)
        fa, fw = fb.tensor(a), fb.tensor(w)
        ta, tw = torch.from_numpy(a.copy()), torch.from_numpy(w.copy())
        fo_mm, to_mm = fb.empty(shape), torch.empty(shape)
        fo_sum, to_sum = fb.empty(shape[1]), torch.empty(shape[1])
        fo_sm, to_sm = fb.empty(shape), torch.empty(shape)
        fo_z, to_z = fb.empty(shape), torch.empty(shape)
        fv, tv = fb.tensor(a[0]), torch.from_numpy(a[0].copy())
        fz, tz = fb.zeros(shape), torch.zeros(shape)
        fo_d, to_d = fb.empty(()), torch.empty(())
        out += [
            (f"sum(x, 0) {name}", lambda x=fa: fb.sum(x, 0), lambda x=ta: torch.sum(x, 0)),
            (
                f"sum(x, 0, out=) {name}",
                lambda x=fa, o=fo_sum: fb.sum(x, 0, out=o),
                lambda x=ta, o=to_sum: torch.sum(x, 0, out=o),
            ),
            (f"mm(x, w) {name}", lambda x=fa, y=fw: fb.mm(x, y), lambda x=ta, y=tw: torch.mm(x, y)),
            (
                f"mm(x, w, out=) {name}",
                lambda x=fa, y=fw, o=fo_mm: fb.mm(x, y, out=o),
                lambda x=ta, y=tw, o=to_mm: torch.mm(x, y, out=o),
            ),
            (
                f"matmul(x, w, out=) {name}",
                lambda x=fa, y=fw, o=fo_mm: fb.matmul(x, y, out=o),
                lambda x=ta, y=tw, o=to_mm: torch.matmul(x, y, out=o),
            ),
            (f"softmax(x, 1) {name}", lambda x=fa: fb.softmax(x, 1), lambda x=ta: torch.softmax(x, 1)),
            (
                f"softmax(x, 1, out=) {name}",
                lambda x=fa, o=fo_sm: fb.softmax(x, 1, out=o),
                lambda x=ta, o=to_sm: torch.softmax(x, 1, out=o),
            ),
            (
                f"where(x>0, x, z, out=) {name}",
                lambda x=fa, z=fz, o=fo_sm: fb.where(x > 0, x, z, out=o),
                lambda x=ta, z=tz, o=to_sm: torch.where(x > 0, x, z, out=o),
            ),
            (
                f"zeros(out=) {name}",
                lambda o=fo_z, s=shape: fb.zeros(*s, out=o),
                lambda o=to_z, s=shape: torch.zeros(*s, out=o),
            ),
            (f"zeros {name}", lambda s=shape: fb.zeros(*s), lambda s=shape: torch.zeros(*s)),
            (
                f"dot(v, v, out=) {name}",
                lambda v=fv, o=fo_d: fb.dot(v, v, out=o),
                lambda v=tv, o=to_d: torch.dot(v, v, out=o),
            ),
            (f"dot(v, v) {name}", lambda v=fv: fb.dot(v, v), lambda v=tv: torch.dot(v, v)),
        ]
    return out


if __name__ == "__main__":
    side_by_side.main(cases, fb, torch, width=36)
