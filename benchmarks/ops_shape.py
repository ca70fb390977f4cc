#!/usr/bin/env python
"""Shape, indexing and creation ops, flambeau vs PyTorch, in one process.

Both libraries run in interleaved rounds (flambeau then torch, then the reverse
order), each with 2 intra-op threads and OMP_WAIT_POLICY=PASSIVE (set before
either is imported, so the idle workers of one OpenMP runtime do not steal the
cores of the other). Prints, per case, the min and median time per call of each
and the ratio torch/flambeau of the medians (> 1: flambeau is faster).

The headline case is the data loader's batch gather: 128 rows of a 60,000 x 784
float32 tensor (MNIST in memory) with an int64 index tensor, as ``x[idx]`` and
``index_select(x, 0, idx)``, a fresh random batch each call.

Example:
    .nox/dev/bin/python benchmarks/ops_shape.py
    .nox/dev/bin/python benchmarks/ops_shape.py --only gather --rounds 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402


def cases(fb, torch):
    rng = np.random.default_rng(0)
    out = []

    x = rng.standard_normal((60000, 784), dtype=np.float32)
    xf, xt = fb.tensor(x), torch.from_numpy(x)
    batches = [rng.permutation(60000)[:128].astype(np.int64) for _ in range(64)]
    bf = [fb.tensor(b) for b in batches]
    bt = [torch.from_numpy(b) for b in batches]
    state = {"i": 0}

    def nxt(lst):
        state["i"] = (state["i"] + 1) % len(lst)
        return lst[state["i"]]

    out.append(("x[idx] 128 of 60000x784", lambda: xf[nxt(bf)], lambda: xt[nxt(bt)]))
    out.append(
        (
            "index_select 128 of 60000x784",
            lambda: fb.index_select(xf, 0, nxt(bf)),
            lambda: torch.index_select(xt, 0, nxt(bt)),
        )
    )

    def pairs(*shapes, dtype=np.float32):
        arrs = [rng.standard_normal(s).astype(dtype) for s in shapes]
        return [fb.tensor(a) for a in arrs], [torch.from_numpy(a) for a in arrs]

    for shapes, dim, label in [
        (((128, 784), (128, 784)), 0, "cat dim0 2x(128,784)"),
        (((128, 784), (128, 784)), 1, "cat dim1 2x(128,784)"),
        (((32, 64, 16, 16), (32, 64, 16, 16)), 1, "cat dim1 2x(32,64,16,16)"),
        (((32, 16, 128), (32, 16, 128), (32, 16, 128)), 0, "cat dim0 3x(32,16,128)"),
        (((32, 128), (32, 256)), 1, "cat dim1 (32,128)+(32,256)"),
        (((35, 20, 200), (35, 20, 200)), 2, "cat dim2 2x(35,20,200)"),
    ]:
        f, t = pairs(*shapes)
        out.append((label, lambda f=f, d=dim: fb.cat(f, d), lambda t=t, d=dim: torch.cat(t, d)))

    (a,), (ta,) = pairs((256, 512))
    # Note [Transposed copy]: a transposed or permuted tensor made contiguous.
    (w,), (tw,) = pairs((512, 512))
    out.append(("t().contiguous() (512,512)", lambda: w.t().contiguous(), lambda: tw.t().contiguous()))
    wb = fb.tensor(rng.standard_normal((784, 512)).astype(np.float32)).bfloat16()
    twb = torch.from_numpy(np.array(memoryview(wb.float()))).bfloat16()
    out.append(("t().contiguous() bf16 (784,512)", lambda: wb.t().contiguous(), lambda: twb.t().contiguous()))
    (im,), (tim,) = pairs((32, 64, 16, 16))
    out.append(
        (
            "permute(0,2,3,1).contiguous() (32,64,16,16)",
            lambda: im.permute(0, 2, 3, 1).contiguous(),
            lambda: tim.permute(0, 2, 3, 1).contiguous(),
        )
    )
    out.append(("flip (256,512) dims (0,1)", lambda: fb.flip(a, (0, 1)), lambda: torch.flip(ta, (0, 1))))
    out.append(("roll (256,512) 3 dim 1", lambda: fb.roll(a, 3, 1), lambda: torch.roll(ta, 3, 1)))
    out.append(("repeat (256,512) (2,2)", lambda: a.repeat(2, 2), lambda: ta.repeat(2, 2)))
    out.append(("tril (256,512)", lambda: fb.tril(a), lambda: torch.tril(ta)))
    mask = rng.random((256, 512)) < 0.5
    mf, mt = fb.tensor(mask), torch.from_numpy(mask)
    out.append(("masked_fill (256,512)", lambda: a.masked_fill(mf, 0.0), lambda: ta.masked_fill(mt, 0.0)))
    out.append(("x[mask] (256,512)", lambda: a[mf], lambda: ta[mt]))
    gi = rng.integers(0, 512, size=(256, 64))
    gf, gt = fb.tensor(gi), torch.from_numpy(gi)
    out.append(("gather (256,512) dim1 k=64", lambda: a.gather(1, gf), lambda: ta.gather(1, gt)))
    (s,), (ts,) = pairs((256, 64))
    out.append(("scatter_add (256,512) dim1 k=64", lambda: a.scatter_add(1, gf, s), lambda: ta.scatter_add(1, gt, ts)))
    ii = rng.integers(0, 256, size=64)
    iif, iit = fb.tensor(ii), torch.from_numpy(ii)
    (src,), (tsrc,) = pairs((64, 512))
    out.append(("index_add (256,512) dim0 k=64", lambda: a.index_add(0, iif, src), lambda: ta.index_add(0, iit, tsrc)))
    out.append(("split (256,512) 64", lambda: a.split(64), lambda: ta.split(64)))
    out.append(("eye 256", lambda: fb.eye(256), lambda: torch.eye(256)))
    out.append(("linspace 10000", lambda: fb.linspace(0, 1, 10000), lambda: torch.linspace(0, 1, 10000)))
    return out


def timeit(fn, budget=0.05):
    fn()
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt > budget and n >= 5:
            return dt / n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--only", default="", help="run the cases whose name contains this")
    args = p.parse_args()
    import flambeau as fb
    import torch

    fb.set_num_threads(2)
    torch.set_num_threads(2)
    todo = [c for c in cases(fb, torch) if args.only in c[0]]
    print(f"{'case':36s} {'fb min':>9s} {'fb med':>9s} {'th min':>9s} {'th med':>9s} {'torch/fb':>9s}")
    for name, f_fb, f_th in todo:
        tf, tt = [], []
        for r in range(args.rounds):
            if r % 2 == 0:
                tf.append(timeit(f_fb))
                tt.append(timeit(f_th))
            else:
                tt.append(timeit(f_th))
                tf.append(timeit(f_fb))
        mf, mt = statistics.median(tf), statistics.median(tt)
        print(
            f"{name:36s} {min(tf) * 1e6:8.1f}u {mf * 1e6:8.1f}u {min(tt) * 1e6:8.1f}u {mt * 1e6:8.1f}u {mt / mf:8.2f}x"
        )


if __name__ == "__main__":
    main()
