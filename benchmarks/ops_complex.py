#!/usr/bin/env python
"""Complex ops widened to complex, flambeau vs PyTorch: mm/bmm (OpenBLAS cgemm/zgemm vs
torch's MKL/OpenBLAS), cat, prod, cumsum, var, sgn, kron, linalg.inv/solve/det, and
linalg.svd/svdvals/qr/pinv.

Both libraries run in this one process, interleaved rounds (flambeau then torch, then the
reverse order), 2 intra-op threads each, OMP_WAIT_POLICY=PASSIVE (see ops_actloss.py).
Prints, per case, min and median per call and the ratio torch/flambeau of the medians
(> 1: flambeau is faster). Only ratios from one run count (a shared, noisy machine).

    .nox/dev/bin/python benchmarks/ops_complex.py [--rounds 7] [--only mm]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import flambeau as fb  # noqa: E402
import numpy as np  # noqa: E402
import side_by_side  # noqa: E402  (benchmarks/side_by_side.py: the shared interleaved loop)
import torch  # noqa: E402


def carr(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def cases():
    out = []

    def add(name, dt, fn, arrays):
        fdt = fb.complex64 if dt == "c64" else fb.complex128
        tdt = torch.complex64 if dt == "c64" else torch.complex128
        fa = [fb.tensor(a, dtype=fdt) for a in arrays]
        ta = [torch.tensor(a, dtype=tdt) for a in arrays]
        out.append(
            (f"{name} {dt} {'x'.join(str(s) for s in arrays[0].shape)}", lambda: fn(fb, *fa), lambda: fn(torch, *ta))
        )

    eye = 4 * np.eye(64)
    for dt in ("c64", "c128"):
        add("mm", dt, lambda L, a, b: L.mm(a, b), [carr((256, 256), 1), carr((256, 256), 2)])
        add("mm.mH", dt, lambda L, a, b: L.mm(a.mH, b), [carr((256, 256), 1), carr((256, 256), 2)])
        add("bmm", dt, lambda L, a, b: L.bmm(a, b), [carr((32, 64, 64), 3), carr((32, 64, 64), 4)])
        add("cat", dt, lambda L, a, b: L.cat([a, b], 1), [carr((256, 512), 5), carr((256, 512), 6)])
        add("prod", dt, lambda L, a: a.prod(1), [carr((256, 512), 7) * 0.1])
        add("cumsum", dt, lambda L, a: a.cumsum(1), [carr((256, 512), 8)])
        add("var", dt, lambda L, a: a.var(1), [carr((256, 512), 9)])
        add("sgn", dt, lambda L, a: L.sgn(a), [carr((256, 512), 10)])
        add("kron", dt, lambda L, a, b: L.kron(a, b), [carr((32, 32), 11), carr((16, 16), 12)])
        add("linalg.inv", dt, lambda L, a: L.linalg.inv(a), [carr((16, 64, 64), 13) + eye])
        add(
            "linalg.solve",
            dt,
            lambda L, a, b: L.linalg.solve(a, b),
            [carr((16, 64, 64), 14) + eye, carr((16, 64, 8), 15)],
        )
        add("linalg.det", dt, lambda L, a: L.linalg.det(a), [carr((16, 64, 64), 16) + eye])
        # complex svd and qr (LAPACK gesdd, geqrf/ungqr on both sides)
        add("linalg.svd", dt, lambda L, a: L.linalg.svd(a, full_matrices=False), [carr((16, 64, 48), 17)])
        add("linalg.svd", dt, lambda L, a: L.linalg.svd(a, full_matrices=False), [carr((256, 128), 18)])
        add("linalg.svdvals", dt, lambda L, a: L.linalg.svdvals(a), [carr((16, 64, 48), 19)])
        add("linalg.qr", dt, lambda L, a: L.linalg.qr(a), [carr((16, 64, 48), 20)])
        add("linalg.qr", dt, lambda L, a: L.linalg.qr(a), [carr((256, 128), 21)])
        add("linalg.pinv", dt, lambda L, a: L.linalg.pinv(a), [carr((16, 48, 32), 22)])
    return out


if __name__ == "__main__":
    side_by_side.main(cases, fb, torch, width=34)
