#!/usr/bin/env python
"""The everyday ops of PyTorch's vocabulary that optimizers, attention and sampling loops call, flambeau vs
PyTorch: addmm, baddbmm, multinomial, cdist, bincount, lgamma, and stft where flambeau has it.

Both libraries run in this one process, interleaved rounds (flambeau then torch, then the reverse order),
2 intra-op threads each, OMP_WAIT_POLICY=PASSIVE (see ops_actloss.py). Prints, per case, min and median per
call and the ratio torch/flambeau of the medians (> 1: flambeau is faster). Only ratios from one run count
(a shared, noisy machine).

    .nox/dev/bin/python benchmarks/ops_vocabulary.py [--rounds 7] [--only addmm]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import flambeau as fb  # noqa: E402
import numpy as np  # noqa: E402
import side_by_side  # noqa: E402  (benchmarks/side_by_side.py: the shared interleaved loop)
import torch  # noqa: E402


def cases():
    rng = np.random.default_rng(0)
    out = []

    def pair(a, dtype="float32"):
        return fb.tensor(a, dtype=getattr(fb, dtype)), torch.tensor(a).to(getattr(torch, dtype))

    bias, x, w = (
        pair(rng.standard_normal(256)),
        pair(rng.standard_normal((128, 512))),
        pair(rng.standard_normal((512, 256))),
    )
    out.append(
        (
            "addmm 128x512 @ 512x256 + bias",
            lambda: fb.addmm(bias[0], x[0], w[0]),
            lambda: torch.addmm(bias[1], x[1], w[1]),
        )
    )
    q, k, s = (
        pair(rng.standard_normal((32, 64, 64))),
        pair(rng.standard_normal((32, 64, 64))),
        pair(rng.standard_normal((32, 64, 64))),
    )
    out.append(
        (
            "baddbmm 32x(64x64 @ 64x64), beta=0.5",
            lambda: fb.baddbmm(s[0], q[0], k[0], beta=0.5),
            lambda: torch.baddbmm(s[1], q[1], k[1], beta=0.5),
        )
    )
    probs = pair(rng.random((64, 1000)))
    out.append(
        (
            "multinomial 64 rows x 1000, 1 draw",
            lambda: fb.multinomial(probs[0], 1),
            lambda: torch.multinomial(probs[1], 1),
        )
    )
    out.append(
        (
            "multinomial 64 x 1000, 32 no repl.",
            lambda: fb.multinomial(probs[0], 32),
            lambda: torch.multinomial(probs[1], 32),
        )
    )
    a, b = pair(rng.standard_normal((512, 64))), pair(rng.standard_normal((256, 64)))
    out.append(("cdist 512x64 vs 256x64, p=2", lambda: fb.cdist(a[0], b[0]), lambda: torch.cdist(a[1], b[1])))
    ints = pair(rng.integers(0, 1000, size=100_000), "int64")
    out.append(("bincount 100k ints < 1000", lambda: fb.bincount(ints[0]), lambda: torch.bincount(ints[1])))
    pos = pair(rng.random(1_000_000) * 10 + 0.1)
    out.append(("lgamma float32 1M", lambda: fb.lgamma(pos[0]), lambda: torch.lgamma(pos[1])))
    # the other vectorised special functions (Note [Vectorised special functions] in core's
    # vec_special.inc), float32 and float64, on inputs that take every branch of their formulas
    wide = rng.uniform(-30, 30, 1_000_000)
    special = [
        ("lgamma", wide, fb.lgamma, torch.lgamma),
        ("digamma", wide, fb.digamma, torch.digamma),
        ("erfcx", wide, fb.special.erfcx, torch.special.erfcx),
        ("log_ndtr", wide, fb.special.log_ndtr, torch.special.log_ndtr),
        ("i0e", wide, fb.special.i0e, torch.special.i0e),
    ]
    for dtype in ("float32", "float64"):
        for name, values, f, g in special:
            v = pair(values, dtype)
            out.append((f"{name} {dtype} 1M, -30..30", lambda f=f, v=v: f(v[0]), lambda g=g, v=v: g(v[1])))
        xs, ys = pair(rng.uniform(-5, 5, 1_000_000), dtype), pair(rng.uniform(-0.9, 10, 1_000_000), dtype)
        out.append(
            (
                f"xlog1py {dtype} 1M",
                lambda xs=xs, ys=ys: fb.special.xlog1py(xs[0], ys[0]),
                lambda xs=xs, ys=ys: torch.special.xlog1py(xs[1], ys[1]),
            )
        )
        out.append(
            (
                f"xlogy {dtype} 1M",
                lambda xs=xs, ys=ys: fb.xlogy(xs[0], ys[0]),
                lambda xs=xs, ys=ys: torch.xlogy(xs[1], ys[1]),
            )
        )
    if hasattr(fb, "stft"):
        sig = pair(rng.standard_normal((8, 16000)))
        wf, wt = fb.hann_window(400), torch.hann_window(400)
        out.append(
            (
                "stft 8x16000, n_fft 400, hop 160",
                lambda: fb.stft(sig[0], 400, 160, window=wf, return_complex=True),
                lambda: torch.stft(sig[1], 400, 160, window=wt, return_complex=True),
            )
        )
    return out


if __name__ == "__main__":
    side_by_side.main(cases, fb, torch, width=38)
