"""Gradients of the "shape" area's ops against PyTorch, and gradcheck in float64: flip, roll, rot90,
repeat, tile, repeat_interleave, split/chunk, movedim, diagonal, diag_embed, diag, tril/triu, cat on
any dim, index_select/add/copy/fill, masked_fill/select/scatter, gather, scatter (src, value),
scatter_reduce (sum, mean, amax, amin, prod), take, take_along_dim, put."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import numpy as np
import pytest
import torch
from nn_testing import assert_close, from_torch

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(0)
IDX = torch.tensor([2, 0, 2])
GIDX = torch.tensor(RNG.integers(0, 3, size=(3, 4)))
MASK = torch.tensor(RNG.random((3, 4)) < 0.5)
PERM = torch.tensor(np.argsort(RNG.random((3, 4)), axis=0))


def fidx(t):
    return fc.tensor(t.numpy())


# (name, function of the inputs in each library, shapes of the float inputs)
CASES = [
    ("flip", lambda m, x: m.flip(x, [0, 1]), [(3, 4)]),
    ("roll", lambda m, x: m.roll(x, (1, -2), (0, 1)), [(3, 4)]),
    ("rot90", lambda m, x: m.rot90(x, 1, (0, 1)), [(3, 4)]),
    ("repeat", lambda m, x: x.repeat(2, 1, 3), [(3, 4)]),
    ("tile", lambda m, x: m.tile(x, (2,)), [(3, 4)]),
    ("repeat_interleave", lambda m, x: m.repeat_interleave(x, 2, dim=1), [(3, 4)]),
    ("split", lambda m, x: m.split(x, [1, 3], 1)[1] * 2 + m.split(x, [1, 3], 1)[0], [(3, 4)]),
    ("chunk", lambda m, x: m.chunk(x, 2, 0)[0].sum(0) + m.chunk(x, 2, 0)[1].sum(0), [(3, 4)]),
    ("movedim", lambda m, x: m.movedim(x, 0, 2), [(2, 3, 4)]),
    ("diagonal", lambda m, x: m.diagonal(x, 1, 0, 2), [(3, 2, 4)]),
    ("diag_embed", lambda m, x: m.diag_embed(x, -1), [(2, 3)]),
    ("diag", lambda m, x: m.diag(x, 1), [(3, 4)]),
    ("tril", lambda m, x: m.tril(x, -1), [(3, 4)]),
    ("triu", lambda m, x: m.triu(x, 1), [(2, 3, 4)]),
    ("cat1", lambda m, x, y: m.cat([x, y], -1), [(3, 4), (3, 2)]),
    ("hstack", lambda m, x, y: m.hstack([x, y]), [(3, 4), (3, 2)]),
    ("index_select", lambda m, x: m.index_select(x, 0, ix(m)), [(3, 4)]),
    ("index_add", lambda m, x, s: m.index_add(x, 0, ix(m), s, alpha=2.0), [(3, 4), (3, 4)]),
    ("index_copy", lambda m, x, s: m.index_copy(x, 1, ix(m)[:2] + 1, s), [(3, 4), (3, 2)]),
    ("index_fill", lambda m, x: m.index_fill(x, 1, ix(m), 2.0), [(3, 4)]),
    ("masked_fill", lambda m, x: m.masked_fill(x, mk(m), 2.0), [(3, 4)]),
    ("masked_select", lambda m, x: m.masked_select(x, mk(m)), [(3, 4)]),
    ("masked_scatter", lambda m, x, s: x.masked_scatter(mk(m), s), [(3, 4), (12,)]),
    ("gather", lambda m, x: m.gather(x, 1, gx(m)), [(3, 4)]),
    ("scatter", lambda m, x, s: m.scatter(x, 0, px(m), s), [(3, 4), (3, 4)]),
    ("scatter_value", lambda m, x: m.scatter(x, 1, gx(m), 1.5), [(3, 4)]),
    ("scatter_add", lambda m, x, s: m.scatter_add(x, 1, gx(m), s), [(3, 4), (3, 4)]),
    ("take", lambda m, x: m.take(x, ix(m)), [(3, 4)]),
    ("take_along_dim", lambda m, x: m.take_along_dim(x, gx(m), 1), [(3, 4)]),
    ("put", lambda m, x, s: x.put(ix(m)[:2], s, accumulate=True), [(3, 4), (2,)]),
]
for _reduce in ["sum", "mean", "amax", "amin", "prod"]:
    for _inc in (True, False):
        CASES.append(
            (
                f"scatter_reduce_{_reduce}_{_inc}",
                lambda m, x, s, r=_reduce, inc=_inc: m.scatter_reduce(x, 1, gx(m), s, r, include_self=inc),
                [(3, 4), (3, 4)],
            )
        )


def ix(m):
    return IDX if m is torch else fidx(IDX)


def gx(m):
    return GIDX if m is torch else fidx(GIDX)


def px(m):
    return PERM if m is torch else fidx(PERM)


def mk(m):
    return MASK if m is torch else fidx(MASK)


def inputs(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    # Distinct values away from 0 (amax/amin ties and prod's division are then well defined).
    # Input i is offset by i / 8, so no value of one input equals a value of another.
    arrays = [
        (rng.permutation(int(np.prod(s))).reshape(s) + 1.0 + i / 8) * rng.choice([-0.5, 0.5], size=s)
        for i, s in enumerate(shapes)
    ]
    ours = [fc.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    return ours, theirs


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_and_gradients_match_torch(name, fn, shapes, dtype):
    ours, theirs = inputs(shapes, dtype)
    out_f, out_t = fn(fc, *ours), fn(torch, *theirs)
    assert_close(out_f, out_t)
    w = torch.tensor(np.random.default_rng(1).standard_normal(tuple(out_t.shape)).astype(dtype))
    (out_t * w).sum().backward()
    (out_f * from_torch(w)).sum().backward()
    for a, b in zip(ours, theirs, strict=True):
        assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_gradcheck_float64(name, fn, shapes):
    ours, _ = inputs(shapes, np.float64)
    assert fa.gradcheck(lambda *xs: fn(fc, *xs), tuple(ours))


def test_noncontiguous_inputs_backward():
    base = torch.randn(4, 6, dtype=torch.float64)
    t = base.t().clone().requires_grad_(True)
    f = fc.tensor(base.numpy().copy()).t().detach().requires_grad_(True)
    # permuted (non-contiguous) leaf views
    for fn in (
        lambda m, x: m.flip(x, [0]),
        lambda m, x: m.tril(x),
        lambda m, x: m.index_select(x, 1, ix(m)),
        lambda m, x: m.gather(x, 0, gx(m)),
    ):
        t.grad = None
        f.grad = None
        fn(torch, t).sum().backward()
        fn(fc, f).sum().backward()
        assert_close(f.grad, t.grad)
