#!/usr/bin/env python
"""fb.func's transforms vs torch.func in one process (side_by_side.py: interleaved rounds, 2 threads,
min / median per call, ratio torch/flambeau of the medians; > 1: flambeau faster).

- ``jacrev 512->512 linear+tanh``: the Jacobian of ``tanh(W x + b)`` with respect to ``x``; flambeau runs
  one backward pass per output row over the graph recorded once, torch vmaps one batched backward;
- ``jacfwd 512->512 linear+tanh``: the same Jacobian by forward mode: one pass on dual tensors whose
  tangents are the input basis, batched by vmap, in both;
- ``hessian mlp 8-16-1 params``: the Hessian of a small network's squared loss with respect to its
  first layer's weight (flambeau: reverse over reverse; torch: forward over reverse);
- ``jvp mlp``: the Jacobian-vector product of the benchmark MLP's outputs along a tangent of its input
  batch (128x784, float32): one forward pass on dual tensors in both;
- ``hvp mlp``: a Hessian-vector product of the MLP's mean cross-entropy with respect to its parameters,
  ``jvp(grad(loss))`` (forward over reverse) in both;
- ``per-sample grads mlp``: the gradient of each sample's cross-entropy loss with respect to every
  parameter of the benchmark MLP (784-512-512-10, float32, batch 128), by ``vmap(grad(loss))`` and by a
  Python loop of ``grad(loss)`` over the samples (the figure vmap must beat, read from the same run).

Only ratios from one run count on a shared, noisy machine. Example:
    python benchmarks/ops_func.py --rounds 7
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flambeau as fb  # noqa: E402
import models  # noqa: E402
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
        ours = fb.func.jacfwd(lambda v, fw=fw, fbias=fbias: fb.tanh(fw @ v + fbias))
        theirs = torch.func.jacfwd(lambda v, tw=tw, tbias=tbias: torch.tanh(tw @ v + tbias))
        yield f"jacfwd 512->512 linear+tanh {str(tdt)[6:]}", lambda f=ours, v=fx: f(v), lambda f=theirs, v=tx: f(v)
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
    yield from per_sample_gradients(rng)
    yield from forward_mode(rng)


def forward_mode(rng):
    fm, tm = models.mlp(models.framework("flambeau")), models.mlp(models.framework("torch"))
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in fm.state_dict().items()})
    x, v = (rng.standard_normal((128, 784)).astype(np.float32) for _ in range(2))
    y = rng.integers(0, 10, 128)
    fx, fv, fy, tx, tv, ty = fb.tensor(x), fb.tensor(v), fb.tensor(y), torch.tensor(x), torch.tensor(v), torch.tensor(y)
    yield (
        "jvp mlp b128 along the input",
        lambda: fb.func.jvp(fm, (fx,), (fv,)),
        lambda: torch.func.jvp(tm, (tx,), (tv,)),
    )
    fp = {k: p.detach() for k, p in fm.named_parameters()}
    tp = {k: p.detach() for k, p in tm.named_parameters()}
    fdir = {k: fb.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)) for k, p in fp.items()}
    tdir = {k: torch.tensor(d.numpy()) for k, d in fdir.items()}

    def floss(p):
        return fb.nn.functional.cross_entropy(fb.func.functional_call(fm, p, (fx,)), fy)

    def tloss(p):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(tm, p, (tx,)), ty)

    yield (
        "hvp mlp b128 jvp(grad(loss)) params",
        lambda: fb.func.jvp(fb.func.grad(floss), (fp,), (fdir,)),
        lambda: torch.func.jvp(torch.func.grad(tloss), (tp,), (tdir,)),
    )


def per_sample_gradients(rng):
    fm, tm = models.mlp(models.framework("flambeau")), models.mlp(models.framework("torch"))
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in fm.state_dict().items()})
    x, y = rng.standard_normal((128, 784)).astype(np.float32), rng.integers(0, 10, 128)
    fx, fy, tx, ty = fb.tensor(x), fb.tensor(y), torch.tensor(x), torch.tensor(y)
    fp = {k: v.detach() for k, v in fm.named_parameters()}
    tp = {k: v.detach() for k, v in tm.named_parameters()}

    def floss(p, xi, yi):
        return fb.nn.functional.cross_entropy(fb.func.functional_call(fm, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    def tloss(p, xi, yi):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(tm, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    fvmap = fb.func.vmap(fb.func.grad(floss), in_dims=(None, 0, 0))
    tvmap = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
    fgrad, tgrad = fb.func.grad(floss), torch.func.grad(tloss)
    yield "per-sample grads mlp b128 vmap(grad)", lambda: fvmap(fp, fx, fy), lambda: tvmap(tp, tx, ty)
    yield (
        "per-sample grads mlp b128 Python loop",
        lambda: [fgrad(fp, fx[i], fy[i]) for i in range(128)],
        lambda: [tgrad(tp, tx[i], ty[i]) for i in range(128)],
    )


if __name__ == "__main__":
    main(cases, fb, torch)
