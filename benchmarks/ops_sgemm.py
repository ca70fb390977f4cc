#!/usr/bin/env python
"""flambeau's own float32 GEMM (Note [Own sgemm]) against OpenBLAS's sgemm, both
called through flambeau in one process (side_by_side.py: interleaved rounds, 2
threads, min / median per call, ratio openblas/own of the medians; > 1: the own
kernel is faster). The setting ``backends.cpu.sgemm`` switches the backend before each call.

Rows: the benchmark MLP's GEMMs (linear forward, ``_linear_backward``), square
``mm``, the transposed forms, skinny and small products near the size limits
of own_sgemm_applies (sgemm.cpp), and the LSTM's input projection. Needs an
AVX-512 CPU (the own kernel's only target). Only ratios from one run count.
    python benchmarks/ops_sgemm.py --rounds 9
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flambeau as fb  # noqa: E402
import flambeau_core as fc  # noqa: E402
from side_by_side import main  # noqa: E402

F = fb.nn.functional


def backend(name: str) -> None:
    fc.backends.cpu.sgemm = name


def pair(call):
    """The call on the own kernel, and on OpenBLAS."""

    def own():
        backend("own")
        return call()

    def openblas():
        backend("openblas")
        return call()

    return own, openblas


def cases():
    mlp = {"L1": (784, 512), "L2": (512, 512), "L3": (512, 10)}
    for name, (i, o) in mlp.items():
        x, w, b = fb.randn(128, i), fb.randn(o, i), fb.randn(o)
        yield (f"mlp fwd {name} 128x{i}->{o}", *pair(lambda x=x, w=w, b=b: F.linear(x, w, b)))
    for name, (i, o) in mlp.items():
        x, w, g = fb.randn(128, i), fb.randn(o, i), fb.randn(128, o)
        need_x = name != "L1"
        yield (
            f"mlp bwd {name}",
            *pair(lambda x=x, w=w, g=g, n=need_x: fc._C._linear_backward(g, x, w, n, True, True)),
        )
    for n in (32, 64, 128, 256, 512, 1024):
        a, b = fb.randn(n, n), fb.randn(n, n)
        yield (f"mm {n}^3", *pair(lambda a=a, b=b: fb.mm(a, b)))
    a, b = fb.randn(384, 384), fb.randn(384, 384)
    yield ("mm 384^3 a^T b", *pair(lambda a=a, b=b: fb.mm(a.transpose(0, 1), b)))
    yield ("mm 384^3 a b^T", *pair(lambda a=a, b=b: fb.mm(a, b.transpose(0, 1))))
    yield ("mm 384^3 a^T b^T", *pair(lambda a=a, b=b: fb.mm(a.transpose(0, 1), b.transpose(0, 1))))
    for m, k, n in ((4, 512, 512), (16, 512, 512), (512, 512, 16), (512, 16, 512), (64, 64, 64), (700, 128, 1024)):
        a, b = fb.randn(m, k), fb.randn(k, n)
        yield (f"mm {m}x{k} @ {k}x{n}", *pair(lambda a=a, b=b: fb.mm(a, b)))


if __name__ == "__main__":
    if fc._C._cpu_capability() != "avx512":
        # Nothing to compare: every float32 GEMM runs on OpenBLAS here.
        print(f"ops_sgemm.py: the own sgemm needs an AVX-512 CPU; this one runs {fc._C._cpu_capability()!r} kernels")
    else:
        main(cases, fb, None, labels=("own", "openblas"))
