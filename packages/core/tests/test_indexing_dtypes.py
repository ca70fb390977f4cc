"""gather (with its bounds checks), x[mask] through the compaction path, indexing/cat/index_put,
and the scatter/index/masked/sort kernels over every dtype, against PyTorch 2.13 (or refused as
PyTorch refuses them)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import assert_same_as_torch, from_torch, to_numpy, torch_numpy

pytestmark = pytest.mark.on_devices

HALF = ["float16", "bfloat16"]


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "int64", "float16", "bfloat16", "complex64", "complex128", "bool"]
)
def test_gather_dtypes_match_torch(dtype):
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((5, 7)) * 3).to(getattr(torch, dtype))
    idx = torch.tensor(rng.integers(0, 7, size=(5, 3)))
    assert_same_as_torch(from_torch(x).gather(1, fc.tensor(idx.numpy())), x.gather(1, idx))
    idx0 = torch.tensor(rng.integers(0, 5, size=(2, 7)))
    assert_same_as_torch(from_torch(x).gather(0, fc.tensor(idx0.numpy())), x.gather(0, idx0))


@pytest.mark.parametrize(
    "shape,ishape,dim",
    [((3, 4, 5), (2, 3, 5), 1), ((3, 4, 5), (3, 4, 2), 2), ((3, 4, 5), (1, 1, 1), 0), ((300, 9), (300, 40), 1)],
)
def test_gather_shapes_and_noncontiguous(shape, ishape, dim):
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal(shape).astype(np.float32))
    idx = torch.tensor(rng.integers(0, shape[dim], size=ishape))
    f = fc.tensor(x.numpy())
    assert_same_as_torch(f.gather(dim, fc.tensor(idx.numpy())), x.gather(dim, idx))
    # a transposed self and a transposed (non-contiguous) index
    xt = x.transpose(0, -1)
    base = rng.integers(0, xt.shape[dim], size=ishape[::-1])
    it = torch.tensor(base).transpose(0, -1)
    if all(it.shape[k] <= xt.shape[k] for k in range(xt.dim()) if k != dim):
        assert_same_as_torch(f.transpose(0, -1).gather(dim, fc.tensor(base).transpose(0, -1)), xt.gather(dim, it))


@pytest.mark.parametrize("bad", [7, -1, 2**40])
def test_gather_index_out_of_bounds_raises_index_error(bad):
    f = fc.zeros(4, 7)
    idx = np.zeros((4, 3), dtype=np.int64)
    idx[3, 2] = bad
    with pytest.raises(IndexError, match=rf"\[gather\] index {bad} is out of bounds for dimension 1 with size 7"):
        f.gather(1, fc.tensor(idx))


# ---- x[mask] ----


@pytest.mark.parametrize("shape,mdims", [((6, 7), 2), ((6, 7, 3), 2), ((6, 7, 3), 1), ((300, 700), 2), ((70000,), 1)])
@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
def test_index_by_bool_mask_matches_torch(shape, mdims, density):
    rng = np.random.default_rng(len(shape) + mdims)
    x = torch.tensor(rng.standard_normal(shape).astype(np.float32))
    m = torch.tensor(rng.random(shape[:mdims]) < density)
    assert_same_as_torch(fc.tensor(x.numpy())[fc.tensor(m.numpy())], x[m])


def test_index_by_bool_mask_noncontiguous_and_dtypes():
    rng = np.random.default_rng(5)
    x = torch.tensor(rng.standard_normal((9, 11)))
    m = torch.tensor(rng.random((11, 9)) < 0.5)
    assert_same_as_torch(fc.tensor(x.numpy()).t()[fc.tensor(m.numpy())], x.t()[m])
    assert_same_as_torch(fc.tensor(x.numpy()).t()[fc.tensor(m.numpy().T.copy()).t()], x.t()[m.t().contiguous().t()])
    for dt in ["complex128", "float16", "bfloat16", "int8", "bool"]:
        xd = x.to(getattr(torch, dt))
        assert_same_as_torch(from_torch(xd)[fc.tensor(m.t().contiguous().numpy())], xd[m.t().contiguous()])


def test_index_by_bool_mask_wrong_shape_raises():
    with pytest.raises(IndexError, match=r"\[index\] the shape \(5, 7\) of the mask"):
        fc.zeros(6, 7)[fc.zeros(5, 7, dtype=fc.bool)]


# ---- indexing and cat over every dtype ----


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float16", "bfloat16", "uint16", "uint32", "uint64"])
def test_index_select_cat_and_index_put_over_wide_dtypes(dtype):
    rng = np.random.default_rng(6)
    x = torch.tensor(rng.integers(0, 50, size=(4, 5))).to(getattr(torch, dtype))
    f = from_torch(x)
    i = torch.tensor([3, 0, 3])
    fi = fc.tensor(i.numpy())
    assert_same_as_torch(f[fi], x[i])
    assert_same_as_torch(f.index_select(1, fi), x.index_select(1, i))
    assert_same_as_torch(fc.cat([f, f[:2]], 0), torch.cat([x, x[:2]], 0))
    assert_same_as_torch(fc.cat([f, f], 1), torch.cat([x, x], 1))
    if dtype in ("complex64", "complex128", "float16", "bfloat16"):  # torch has no uint16..64 index_put
        v = x[:3]
        assert_same_as_torch(f.index_put((fi,), from_torch(v), accumulate=True), x.index_put((i,), v, accumulate=True))
        assert_same_as_torch(f.index_put((fi,), from_torch(v)), x.index_put((i,), v))


# ---- scatter/index/masked/sort kernels over the wide dtypes ----

WIDE = ["uint16", "uint32", "uint64", "float16", "bfloat16", "complex64", "complex128", "bool", "int32", "float64"]
XI = np.random.default_rng(7).integers(-5, 5, (3, 5))
IDX2 = np.random.default_rng(8).integers(0, 5, (3, 4))
I1 = np.array([0, 2, 2])
MASK2 = np.random.default_rng(9).random((3, 5)) < 0.5

WIDE_OPS = {
    "scatter_add": lambda a, ix, mk, i1: a.scatter_add(1, ix, a[:, :4].contiguous()),
    "scatter_reduce_sum": lambda a, ix, mk, i1: a.scatter_reduce(1, ix, a[:, :4].contiguous(), "sum"),
    "scatter_reduce_mean": lambda a, ix, mk, i1: a.scatter_reduce(
        1, ix, a[:, :4].contiguous(), "mean", include_self=False
    ),
    "scatter_reduce_amax": lambda a, ix, mk, i1: a.scatter_reduce(1, ix, a[:, :4].contiguous(), "amax"),
    "scatter_reduce_prod": lambda a, ix, mk, i1: a.scatter_reduce(1, ix, a[:, :4].contiguous(), "prod"),
    "masked_fill": lambda a, ix, mk, i1: a.masked_fill(mk, 1),
    "index_add": lambda a, ix, mk, i1: a.index_add(1, i1, a[:, :3].contiguous(), alpha=2),
    "index_fill": lambda a, ix, mk, i1: a.index_fill(1, i1, 3),
    "sort": lambda a, ix, mk, i1: a.sort(1)[1],
    "sort_desc": lambda a, ix, mk, i1: a.sort(1, descending=True)[0],
    "topk": lambda a, ix, mk, i1: a.topk(2)[0],
    "argsort": lambda a, ix, mk, i1: a.argsort(),
    "kthvalue": lambda a, ix, mk, i1: a.kthvalue(2)[0],
}
# flambeau accepted these before PyTorch was the reference for them; they stay.
KNOWN_EXTRA = {("scatter_reduce_mean", "bool"), ("topk", "bool"), ("kthvalue", "bool")}


@pytest.mark.parametrize("dtype", WIDE)
@pytest.mark.parametrize("name", list(WIDE_OPS))
def test_wide_dtype_kernels_match_torch_or_refuse_as_torch(name, dtype):
    fn = WIDE_OPS[name]
    xt = torch.tensor(XI).to(getattr(torch, dtype))
    targs = (torch.tensor(IDX2), torch.tensor(MASK2), torch.tensor(I1))
    fargs = tuple(fc.tensor(a.numpy()) for a in targs)
    try:
        theirs = fn(xt, *targs)
    except (RuntimeError, TypeError, NotImplementedError):
        theirs = None
    if theirs is None and (name, dtype) not in KNOWN_EXTRA:
        with pytest.raises(TypeError, match=rf"\[\w+\].*{dtype}"):
            fn(from_torch(xt), *fargs)
        return
    ours = fn(from_torch(xt), *fargs)
    if theirs is None:
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(to_numpy(ours), torch_numpy(theirs), rtol=1e-2 if dtype in HALF else 1e-6)


@pytest.mark.parametrize("dtype", HALF)
def test_half_sort_orders_nan_and_signed_zero_as_torch(dtype):
    x = torch.tensor([[1.5, float("nan"), -0.0, 0.0, -2.0, float("inf"), float("-inf"), 0.25]]).to(
        getattr(torch, dtype)
    )
    for desc in (False, True):
        fv, fi = from_torch(x).sort(1, descending=desc)
        tv, ti = torch.sort(x, dim=1, descending=desc, stable=True)
        assert_same_as_torch(fi, ti)
        np.testing.assert_array_equal(to_numpy(fv), torch_numpy(tv))
    assert_same_as_torch(from_torch(x).topk(3)[1], x.topk(3)[1])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "bool"])
def test_gather_last_dim_one_pass(dtype):
    """gather along a contiguous last dim checks each index in the copying pass: values vs torch,
    and an out-of-range index anywhere in a row (negative, n, huge) raises IndexError naming it."""
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((33, 50)) * 10).astype(dtype)
    idx = rng.integers(0, 50, size=(33, 17))
    ours = fc.tensor(a).gather(1, fc.tensor(idx))
    np.testing.assert_array_equal(to_numpy(ours), torch.from_numpy(a).gather(1, torch.from_numpy(idx)).numpy())
    for bad in (-1, 50, 2**62):
        for where in ((0, 0), (32, 16), (17, 8)):
            j = idx.copy()
            j[where] = bad
            with pytest.raises(IndexError, match=rf"gather.*index {bad} is out of bounds for dimension 1 with size 50"):
                fc.tensor(a).gather(1, fc.tensor(j))
