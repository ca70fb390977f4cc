"""Indexing ops of the "shape" area (index_select/add/copy/fill, masked_fill/select/scatter, scatter with
src, value and reduce, scatter_reduce, gather, take, take_along_dim, put, boolean-mask get and set) against
PyTorch over several dtypes, empty and non-contiguous inputs; out-of-range indices (IndexError naming
the op, the index and the size, never a read or write outside the storage, fuzzed near the int64 limits)
and wrong index dtypes (TypeError)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_shape_ops import DTYPES, LAYOUTS, check, pair

pytestmark = pytest.mark.on_devices

I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
NEAR_LIMITS = st.one_of(
    st.integers(-(2**63), -(2**63) + 4),
    st.integers(2**63 - 5, 2**63 - 1),
    st.integers(-10, 10),
    st.sampled_from([2**31, -(2**31) - 1, 2**32, 2**62]),
)


def idx(values, dtype="int64"):
    return fc.tensor(values, dtype=getattr(fc, dtype)), torch.tensor(values, dtype=getattr(torch, dtype))


# ---------------------------------------------------------------- index_select


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_index_select(dtype, layout, dim, index_dtype):
    f, t = pair((4, 5, 6), dtype, layout)
    fi, ti = idx([3, 0, 0, 2], index_dtype)
    check(fc.index_select(f, dim, fi), torch.index_select(t, dim, ti))
    check(f.index_select(dim, fi), t.index_select(dim, ti))
    fe, te = idx([], index_dtype)
    check(f.index_select(dim, fe), t.index_select(dim, te))
    out = fc.empty(*torch.index_select(t, dim, ti).shape, dtype=f.dtype)
    assert fc.index_select(f, dim, fi, out=out) is out
    check(out, torch.index_select(t, dim, ti))


def test_index_select_scalar_index_and_errors():
    f, t = pair((4, 3))
    check(f.index_select(0, fc.tensor(2)), t.index_select(0, torch.tensor(2)))
    with pytest.raises(IndexError, match=r"\[index_select\] index 4 is out of range for dimension 0 with size 4"):
        f.index_select(0, fc.tensor([0, 4]))
    with pytest.raises(IndexError, match=r"\[index_select\] index -1"):
        f.index_select(0, fc.tensor([-1]))
    with pytest.raises(TypeError, match=r"\[index_select\].*float32"):
        f.index_select(0, fc.tensor([0.0]))
    with pytest.raises(fc.FlambeauError, match=r"\[index_select\].*1-d"):
        f.index_select(0, fc.tensor([[0]]))
    with pytest.raises(IndexError):
        f.index_select(2, fc.tensor([0]))


def test_index_select_of_a_0_d_input_takes_one_index():
    f, t = fc.tensor(3.5), torch.tensor(3.5)
    for index in ([0], 0):
        check(f.index_select(0, fc.tensor(index)), t.index_select(0, torch.tensor(index)))
    check(fc.index_select(f, -1, fc.tensor([0])), torch.index_select(t, -1, torch.tensor([0])))
    with pytest.raises(fc.FlambeauError, match=r"\[index_select\] a 0-d input takes exactly one index, got 2"):
        f.index_select(0, fc.tensor([0, 0]))


def test_getitem_gathers_rows_like_index_select():
    f, t = pair((600, 78), "float32")
    fi, ti = idx(list(np.random.default_rng(0).integers(0, 600, 128)))
    check(f[fi], t[ti])
    check(fc.index_select(f, 0, fi), t[ti])


# ---------------------------------------------------------------- index_add / index_copy / index_fill


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_copy_fill(dtype, layout, dim):
    f, t = pair((4, 5, 6), dtype, layout)
    fi, ti = idx([3, 0, 3])
    ishape = list(t.shape)
    ishape[dim] = 3
    s, ts = pair(tuple(ishape), dtype, layout, seed=5)
    check(fc.index_add(f, dim, fi, s), torch.index_add(t, dim, ti, ts))
    if dtype != "bool":
        check(f.index_add(dim, fi, s, alpha=2), t.index_add(dim, ti, ts, alpha=2))
    fu, tu = idx([3, 0, 1])  # index_copy: unique indices (PyTorch leaves duplicates unspecified)
    check(f.index_copy(dim, fu, s), t.index_copy(dim, tu, ts))
    value = True if dtype == "bool" else 7
    check(f.index_fill(dim, fi, value), t.index_fill(dim, ti, value))
    g = f.contiguous().clone()
    assert g.index_add_(dim, fi, s) is g
    check(g, torch.index_add(t, dim, ti, ts))
    g = f.clone()
    g.index_fill_(dim, fi, value)
    check(g, t.index_fill(dim, ti, value))
    g = f.clone()
    g.index_copy_(dim, fu, s)
    check(g, t.index_copy(dim, tu, ts))


def test_index_add_errors():
    f = fc.zeros(4, 3)
    with pytest.raises(IndexError, match=r"\[index_add\] index 4 is out of range for dimension 0 with size 4"):
        f.index_add(0, fc.tensor([4]), fc.ones(1, 3))
    with pytest.raises(fc.FlambeauError, match=r"\[index_add\] source of shape \(2, 3\)"):
        f.index_add(0, fc.tensor([0]), fc.ones(2, 3))
    with pytest.raises(TypeError, match=r"\[index_add\].*float64"):
        f.index_add(0, fc.tensor([0]), fc.ones(1, 3, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[index_copy\] index"):
        f.index_copy(0, fc.tensor([0.5]), fc.ones(1, 3))
    with pytest.raises(IndexError, match=r"^\[index_fill\] index -4 is out of range for dimension 1 with size 3$"):
        f.index_fill(1, fc.tensor([0, -4]), 1.0)
    with pytest.raises(IndexError, match=r"^\[index_fill\] index 3 is out of range for dimension 1 with size 3$"):
        f.index_fill(1, fc.tensor([3]), 1.0)
    with pytest.raises(IndexError, match=r"^\[index_add\] index -1 is out of range"):  # torch refuses it too
        f.index_add(0, fc.tensor([-1]), fc.ones(1, 3))


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_index_fill_counts_a_negative_index_from_the_end_as_torch(dtype):
    """index_fill wraps an index in [-size, 0) (index_add and index_copy refuse it, as torch); the index tensor
    itself is left as it was."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    index = np.array([-1, 0, -4, 2], dtype=dtype)
    fi = fc.tensor(index)
    ours = fc.tensor(x).index_fill(1, fi, -7.0)
    theirs = torch.from_numpy(x).index_fill(1, torch.from_numpy(index).long(), -7.0)
    np.testing.assert_array_equal(np.array(ours.tolist()), theirs.numpy())
    np.testing.assert_array_equal(np.array(fi.tolist()), index)
    y = fc.tensor(x)
    y.index_fill_(0, fc.tensor([-3]), 1.5)
    np.testing.assert_array_equal(
        np.array(y.tolist()), torch.from_numpy(x).index_fill(0, torch.tensor([-3]), 1.5).numpy()
    )


# ---------------------------------------------------------------- masked ops


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_fill_select_scatter(dtype, layout):
    f, t = pair((3, 4, 5), dtype, layout)
    m, tm = pair((4, 5), "bool", seed=3)
    value = False if dtype == "bool" else 3
    check(f.masked_fill(m, value), t.masked_fill(tm, value))
    check(fc.masked_fill(f, m, value), torch.masked_fill(t, tm, value))
    check(fc.masked_select(f, m), torch.masked_select(t, tm))
    check(f.masked_select(m[0]), t.masked_select(tm[0]))
    src, tsrc = pair((70,), dtype, seed=4)
    check(f.masked_scatter(m, src), t.masked_scatter(tm, tsrc))
    g = f.clone()
    g.masked_fill_(m, value)
    check(g, t.masked_fill(tm, value))
    g = f.clone()
    g.masked_scatter_(m, src)
    check(g, t.masked_scatter(tm, tsrc))
    # __getitem__ / __setitem__ with masks
    check(f[m.expand(3, 4, 5)], t[tm.expand(3, 4, 5)])
    check(f[:, m[:, 0]], t[:, tm[:, 0]])
    g = f.clone()
    tg = t.clone()
    g[m.expand(3, 4, 5)] = value
    tg[tm.expand(3, 4, 5)] = value
    check(g, tg)


def test_masked_scatter_broadcasts_self_and_mask():
    # out of place, self and mask broadcast together (a (5,) self under a (5, 5) mask gives (5, 5))
    f, t = pair((5,), "float32", seed=1)
    m, tm = pair((5, 5), "bool", seed=2)
    src, tsrc = pair((5, 5), "float32", seed=3)
    check(fc.masked_scatter(f, m, src), torch.masked_scatter(t, tm, tsrc))
    # and a (5,) mask over a (5, 5) self
    f2, t2 = pair((5, 5), "float32", seed=4)
    check(f2.masked_scatter(m[0], src), t2.masked_scatter(tm[0], tsrc))
    # in place the result must keep self's shape, as torch's masked_scatter_
    with pytest.raises(fc.FlambeauError):
        f.clone().masked_scatter_(m, src)
    with pytest.raises(RuntimeError):
        t.clone().masked_scatter_(tm, tsrc)


@pytest.mark.parametrize("mask", [True, False])
def test_masked_select_zero_dim(mask):
    x, tx = fc.tensor(3.5), torch.tensor(3.5)
    check(fc.masked_select(x, fc.tensor(mask)), torch.masked_select(tx, torch.tensor(mask)))
    # a 0-d mask broadcast over a tensor, and a 0-d tensor under a mask
    f, t = pair((2, 3), "float32", seed=5)
    check(fc.masked_select(f, fc.tensor(mask)), torch.masked_select(t, torch.tensor(mask)))
    m, tm = pair((2, 3), "bool", seed=6)
    check(fc.masked_select(x, m), torch.masked_select(tx, tm))


def test_masked_errors():
    f = fc.zeros(3, 4)
    with pytest.raises(TypeError, match=r"\[masked_fill\] mask must be a bool tensor"):
        f.masked_fill(fc.zeros(3, 4, dtype=fc.int64), 1.0)
    with pytest.raises(fc.FlambeauError, match=r"\[masked_fill\] mask of shape \(5,\)"):
        f.masked_fill(fc.zeros(5, dtype=fc.bool), 1.0)
    with pytest.raises(
        fc.FlambeauError, match=r"\[masked_scatter\] the mask has 9 True elements but source of shape \(2,\)"
    ):
        f.masked_scatter(fc.tensor([True, True, True, False]), fc.zeros(2))
    with pytest.raises(TypeError, match=r"masked_select"):
        f.masked_select(fc.zeros(3, 4))


# ---------------------------------------------------------------- gather / scatter / scatter_reduce


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_scatter(dtype, layout, dim):
    f, t = pair((4, 5, 6), dtype, layout)
    rng = np.random.default_rng(1)
    ishape = (3, 4, 5)
    ivals = rng.integers(0, t.shape[dim], size=ishape)
    fi, ti = fc.tensor(ivals), torch.tensor(ivals)
    s, ts = pair((4, 5, 6), dtype, "transposed", seed=2)
    check(fc.gather(f, dim, fi), torch.gather(t, dim, ti))
    check(fc.scatter_add(f, dim, fi, s), torch.scatter_add(t, dim, ti, ts))
    # scatter with duplicates is unspecified in PyTorch: use a permutation along dim
    perm = np.argsort(rng.random((4, 5, 6)), axis=dim)
    pf, pt = fc.tensor(perm), torch.tensor(perm)
    check(fc.scatter(f, dim, pf, s), torch.scatter(t, dim, pt, ts))
    check(f.scatter(dim, fi, 5), t.scatter(dim, ti, 5))
    check(f.scatter(dim, fi, s, reduce="add"), t.scatter(dim, ti, ts, reduce="add"))
    if dtype in ("float32", "float64"):
        check(f.scatter(dim, fi, s, reduce="multiply"), t.scatter(dim, ti, ts, reduce="multiply"))
    for reduce in ["sum", "prod", "mean", "amax", "amin"]:
        if reduce == "prod" and dtype not in ("float32", "float64"):
            continue
        for include_self in (True, False):
            check(
                f.scatter_reduce(dim, fi, s, reduce, include_self=include_self),
                t.scatter_reduce(dim, ti, ts, reduce, include_self=include_self),
            )
    g = f.clone()
    assert g.scatter_(dim, pf, s) is g
    check(g, torch.scatter(t, dim, pt, ts))
    g = f.clone()
    g.scatter_add_(dim, fi, s)
    check(g, torch.scatter_add(t, dim, ti, ts))
    g = f.clone()
    g.scatter_reduce_(dim, fi, s, "amax")
    check(g, t.scatter_reduce(dim, ti, ts, "amax"))


def test_scatter_errors():
    f = fc.zeros(3, 4)
    i = fc.tensor([[0, 3]])
    with pytest.raises(IndexError, match=r"\[scatter\] index 3 is out of bounds for dimension 0 with size 3"):
        f.scatter(0, i, fc.ones(1, 2))
    with pytest.raises(IndexError, match=r"\[gather\] index -1"):
        f.gather(1, fc.tensor([[-1]]))
    with pytest.raises(TypeError, match=r"\[scatter\] index must be an int64 or int32 tensor, got dtype float32"):
        f.scatter(0, fc.tensor([[0.0]]), fc.ones(1, 1))
    with pytest.raises(TypeError, match=r"\[scatter\] src dtype float64"):
        f.scatter(0, fc.tensor([[0]]), fc.ones(1, 1, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"\[scatter_reduce\] reduce must be one of"):
        f.scatter_reduce(0, fc.tensor([[0]]), fc.ones(1, 1), "max")
    with pytest.raises(fc.FlambeauError, match=r"\[scatter\] reduce must be 'add' or 'multiply'"):
        f.scatter(0, fc.tensor([[0]]), fc.ones(1, 1), reduce="sum")
    with pytest.raises(fc.FlambeauError, match=r"\[scatter\] index shape \(4, 1\) is larger"):
        f.scatter(1, fc.zeros(4, 1, dtype=fc.int64), fc.ones(4, 1))


@pytest.mark.parametrize("index_dtype", ["uint8", "bool", "float32", "int16", "int32", "int64"])
@pytest.mark.parametrize("ishape", [(0,), (0, 4), (0, 9), (2, 0, 5)])
def test_empty_index_of_any_dtype_gathers_and_scatters_nothing(index_dtype, ishape):
    # As torch: an empty index is not checked (dtype, rank, sizes); gather's result has its shape.
    f, t = pair((3, 4), "float32", "contiguous")
    fi, ti = fc.empty(ishape, dtype=getattr(fc, index_dtype)), torch.empty(ishape, dtype=getattr(torch, index_dtype))
    check(fc.gather(f, 0, fi), torch.gather(t, 0, ti))
    check(f.gather(1, fi), t.gather(1, ti))
    src, tsrc = pair((2, 4), "float32", "contiguous", seed=3)
    check(fc.scatter(f, 0, fi, src), torch.scatter(t, 0, ti, tsrc))
    check(fc.scatter(f, 0, fi, 2.5), torch.scatter(t, 0, ti, 2.5))
    check(fc.scatter_add(f, 0, fi, src), torch.scatter_add(t, 0, ti, tsrc))
    check(fc.scatter_reduce(f, 0, fi, src, "amax"), torch.scatter_reduce(t, 0, ti, tsrc, "amax"))
    # take_along_dim without dim is gather on the flattened tensors: an empty index of any dtype too
    check(fc.take_along_dim(f, fi), torch.take_along_dim(t, ti))


def test_gather_on_a_0_d_self_takes_a_1_d_index():
    # As torch: a 0-d self counts as 1-d (dim 0 or -1), so a 1-d (or 0-d) index repeats its one element.
    f, t = fc.tensor(5.0), torch.tensor(5.0)
    for values in ([0, 0], [0], 0):
        fi, ti = idx(values)
        for dim in (0, -1):
            check(fc.gather(f, dim, fi), torch.gather(t, dim, ti))
    fi, ti = idx([], "int64")
    check(fc.gather(f, 0, fi), torch.gather(t, 0, ti))
    fi, ti = idx([0, 0, 0])
    fs, ts = fc.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    check(fc.scatter_add(f, 0, fi, fs), torch.scatter_add(t, 0, ti, ts))
    check(fc.scatter_reduce(f, 0, fi, fs, "sum"), torch.scatter_reduce(t, 0, ti, ts, "sum"))
    check(fc.take_along_dim(f, fi), torch.take_along_dim(t, ti))
    check(fc.take_along_dim(f, fc.tensor(0)), torch.take_along_dim(t, torch.tensor(0)))
    # torch's errors, of the same kind: an index out of range, a 2-d index, a dim beyond the one.
    with pytest.raises(IndexError, match=r"^\[gather\] index 1 is out of bounds for dimension 0 with size 1"):
        fc.gather(f, 0, fc.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"^\[gather\] index must have as many dims as self"):
        fc.gather(f, 0, fc.zeros(1, 1, dtype=fc.int64))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions"):
        torch.gather(t, 0, torch.zeros(1, 1, dtype=torch.int64))
    with pytest.raises(IndexError, match=r"^\[gather\] dimension 1 out of range"):
        fc.gather(f, 1, fc.tensor([0]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.gather(t, 1, torch.tensor([0]))
    # a non-empty index must still be int64 or int32
    with pytest.raises(TypeError, match=r"^\[gather\] index must be an int64 or int32 tensor, got dtype uint8"):
        fc.gather(f, 0, fc.zeros(1, dtype=fc.uint8))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        torch.gather(t, 0, torch.zeros(1, dtype=torch.uint8))


def test_take_along_dim_edge_cases_match_torch():
    f, t = pair((3, 4), "float32", "contiguous")
    # without dim: gather on the flattened tensors, so an int32 index is taken
    fi, ti = idx([1, 11], "int32")
    check(fc.take_along_dim(f, fi), torch.take_along_dim(t, ti))
    # with dim: int64 indices only (torch: RuntimeError; flambeau: TypeError, its dtype errors' kind)
    with pytest.raises(RuntimeError, match="dtype of indices should be Long"):
        torch.take_along_dim(t, torch.zeros(1, 1, dtype=torch.int32), 0)
    with pytest.raises(TypeError, match=r"^\[take_along_dim\] indices must be an int64 tensor, got dtype int32"):
        fc.take_along_dim(f, fc.zeros(1, 1, dtype=fc.int32), 0)
    # a 0-d input has no dim to take along: torch's IndexError
    with pytest.raises(IndexError):
        torch.take_along_dim(torch.tensor(1.0), torch.tensor(0), 0)
    with pytest.raises(IndexError, match=r"^\[take_along_dim\] dim 0 given but the input is 0-d"):
        fc.take_along_dim(fc.tensor(1.0), fc.tensor(0), 0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        torch.take_along_dim(torch.tensor(1.0), torch.tensor([0]), 0)
    with pytest.raises(RuntimeError, match=r"^\[take_along_dim\] input and indices must have the same number"):
        fc.take_along_dim(fc.tensor(1.0), fc.tensor([0]), 0)


# ---------------------------------------------------------------- take, take_along_dim, put


@pytest.mark.parametrize("layout", LAYOUTS)
def test_take_put(layout):
    f, t = pair((3, 4), "float64", layout)
    fi, ti = idx([[0, -1], [5, 11]])
    check(fc.take(f, fi), torch.take(t, ti))
    check(f.take(fi), t.take(ti))
    s, ts = pair((2, 2), "float64", seed=3)
    fu, tu = idx([[0, -1], [5, 7]])
    check(f.put(fu, s), t.put(tu, ts))
    check(f.put(fi, s, accumulate=True), t.put(ti, ts, accumulate=True))
    g = f.clone()
    g.put_(fu, s)
    check(g, t.put(tu, ts))
    with pytest.raises(IndexError):
        f.take(fc.tensor([12]))
    with pytest.raises(TypeError, match=r"\[take\]"):
        f.take(fc.tensor([0.0]))
    with pytest.raises(fc.FlambeauError, match=r"\[put\].*same number"):
        f.put(fc.tensor([0, 1]), fc.ones(3, dtype=fc.float64))


def test_take_along_dim():
    f, t = pair((3, 4, 5), "float32", "sliced")
    a = torch.argsort(t, dim=1)
    check(fc.take_along_dim(f, fc.tensor(a.numpy()), 1), torch.take_along_dim(t, a, 1))
    b = torch.argsort(t[:, :, :1], dim=0)
    check(fc.take_along_dim(f, fc.tensor(b.numpy()), dim=0), torch.take_along_dim(t, b, dim=0))
    fl = torch.tensor([0, 7, 59])
    check(fc.take_along_dim(f, fc.tensor(fl.numpy())), torch.take_along_dim(t, fl))
    with pytest.raises(fc.FlambeauError, match="take_along_dim"):
        fc.take_along_dim(f, fc.tensor([[0]]), 1)


def test_take_along_dim_wraps_indices_along_dim():
    # torch takes the indices along dim modulo its size: -1 is the last, -5 the first of 5 (and 7 is 2)
    f, t = pair((5, 5), "float64", "sliced")
    neg = torch.tensor([[-1, -5, 0, 4, 2], [-2, -3, -4, 1, 3]])
    check(fc.take_along_dim(f, fc.tensor(neg.numpy()), 0), torch.take_along_dim(t, neg, 0))
    check(fc.take_along_dim(f, fc.tensor(neg.t().numpy()), 1), torch.take_along_dim(t, neg.t(), 1))
    far = torch.tensor([[7, -8, 12]])
    check(fc.take_along_dim(f, fc.tensor(far.numpy()), 1), torch.take_along_dim(t, far, 1))
    # without dim (the flattened input) it does not wrap, in torch as here
    with pytest.raises(IndexError, match="out of bounds"):
        fc.take_along_dim(f, fc.tensor([-1]))
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.take_along_dim(t, torch.tensor([-1]))


# ---------------------------------------------------------------- fuzz: out-of-range indices never touch memory


@settings(max_examples=150, deadline=None)
@given(v=NEAR_LIMITS, n=st.integers(0, 5), dim=st.integers(0, 1))
def test_fuzz_index_paths(v, n, dim):
    x = (
        fc.arange(n * 3, dtype=fc.float32).reshape(n, 3)
        if dim == 0
        else fc.arange(3 * n, dtype=fc.float32).reshape(3, n)
    )
    size = n
    index = fc.tensor([v])
    in_range = 0 <= v < size
    wrapped = -size <= v < size

    def expect(ok, fn, err=IndexError):
        if ok:
            fn()
        else:
            with pytest.raises(err):
                fn()

    expect(in_range, lambda: x.index_select(dim, index))
    src_shape = (1, 3) if dim == 0 else (3, 1)
    expect(in_range, lambda: x.index_add(dim, index, fc.ones(*src_shape)))
    expect(in_range, lambda: x.index_copy(dim, index, fc.ones(*src_shape)))
    expect(wrapped, lambda: x.index_fill(dim, index, 1.0))  # torch's index_fill counts a negative from the end
    g_index = fc.full(src_shape, v, dtype=fc.int64)
    if x.numel():
        expect(in_range, lambda: x.gather(dim, g_index))
        expect(in_range, lambda: x.scatter(dim, g_index, fc.ones(*src_shape)))
        expect(in_range, lambda: x.scatter(dim, g_index, 2.0))
        expect(in_range, lambda: x.scatter_add(dim, g_index, fc.ones(*src_shape)))
        expect(in_range, lambda: x.scatter_reduce(dim, g_index, fc.ones(*src_shape), "amax"))
    sel = (index,) if dim == 0 else (slice(None), index)
    expect(wrapped, lambda: x[sel])

    def setitem():
        x[sel] = 1.0

    expect(wrapped, setitem)
    flat_ok = -x.numel() <= v < x.numel()
    expect(flat_ok, lambda: x.take(index))
    expect(flat_ok, lambda: x.put(index, fc.ones(1)))


@settings(max_examples=60, deadline=None)
@given(k=NEAR_LIMITS, shifts=NEAR_LIMITS, reps=st.integers(0, 3))
def test_fuzz_sizes_near_limits(k, shifts, reps):
    x = fc.arange(12, dtype=fc.int64).reshape(3, 4)
    t = torch.arange(12).reshape(3, 4)
    kk = max(min(k, 10), -10)  # PyTorch itself fails near the int64 limits; same triangle for a 3x4
    check(fc.tril(x, k), torch.tril(t, kk))
    check(fc.triu(x, k), torch.triu(t, kk))
    check(fc.roll(x, shifts, 1), torch.roll(t, shifts % 4, 1))
    check(x.repeat(reps, 1), t.repeat(reps, 1))
    check(fc.diagonal(x, max(min(k, 10), -10)), torch.diagonal(t, max(min(k, 10), -10)))


def test_huge_sizes_raise_instead_of_allocating():
    x = fc.zeros(2, 3)
    with pytest.raises((RuntimeError, MemoryError)):
        x.repeat(2**62, 2**62)
    with pytest.raises((RuntimeError, MemoryError)):
        fc.eye(2**40, 2**40)
    with pytest.raises((RuntimeError, MemoryError)):
        fc.repeat_interleave(fc.tensor([2**62, 2**62]))
    with pytest.raises((RuntimeError, MemoryError)):
        fc.empty_strided((2**62, 4), (4, 2**62))


# ---------------------------------------------------------------- the class of an index out of range

# (op, call on (lib, self (2, 3), index 5 along dim 1)): PyTorch raises RuntimeError for these; flambeau's
# IndexOutOfBoundsError is both an IndexError and a RuntimeError, so either `except` catches it.
TORCH_RUNTIME_ERROR = {
    "gather": lambda m, x, i: m.gather(x, 1, i.view(1, 1)),
    "scatter": lambda m, x, i: x.clone().scatter_(1, i.view(1, 1), 1.0),
    "scatter_add": lambda m, x, i: x.clone().scatter_add(1, i.view(1, 1), x[:1, :1]),
    "scatter_reduce": lambda m, x, i: x.clone().scatter_reduce(1, i.view(1, 1), x[:1, :1], "sum"),
    "index_select": lambda m, x, i: m.index_select(x, 1, i),
    "index_add": lambda m, x, i: x.clone().index_add_(1, i, m.ones(2, 1)),
}
# ... and IndexError for these: flambeau's is a plain IndexError.
TORCH_INDEX_ERROR = {
    "index_copy": lambda m, x, i: x.clone().index_copy_(1, i, m.ones(2, 1)),
    "index_fill": lambda m, x, i: x.clone().index_fill_(1, i, 1.0),
    "take": lambda m, x, i: m.take(x, i + 1),
    "put_": lambda m, x, i: x.clone().put_(i + 1, m.tensor([1.0])),
}


@pytest.mark.parametrize("op", list(TORCH_RUNTIME_ERROR))
@pytest.mark.parametrize("value", [5, -1])
def test_index_out_of_range_is_a_runtime_error_where_torch_raises_one(op, value):
    (f_i, t_i), call = idx([value]), TORCH_RUNTIME_ERROR[op]
    with pytest.raises(RuntimeError) as theirs:
        call(torch, torch.arange(6.0).reshape(2, 3), t_i)
    assert not isinstance(theirs.value, IndexError)
    with pytest.raises(fc.IndexOutOfBoundsError) as ours:
        call(fc, fc.arange(6.0).reshape(2, 3), f_i)
    assert isinstance(ours.value, RuntimeError) and isinstance(ours.value, IndexError)
    assert not isinstance(ours.value, ValueError)
    assert str(ours.value).startswith(f"[{op}] index {value} is out of ")
    assert str(ours.value).endswith("for dimension 1 with size 3")
    assert f"index {value} is out of bounds for dimension 1 with size 3" in str(theirs.value) or op == "index_select"


@pytest.mark.parametrize("op", list(TORCH_INDEX_ERROR))
def test_index_out_of_range_stays_an_index_error_where_torch_raises_one(op):
    (f_i, t_i), call = idx([5]), TORCH_INDEX_ERROR[op]
    with pytest.raises(IndexError):
        call(torch, torch.arange(6.0).reshape(2, 3), t_i)
    with pytest.raises(IndexError) as ours:
        call(fc, fc.arange(6.0).reshape(2, 3), f_i)
    assert type(ours.value) is IndexError and "out of" in str(ours.value)


def test_index_out_of_bounds_error_class():
    assert issubclass(fc.IndexOutOfBoundsError, IndexError) and issubclass(fc.IndexOutOfBoundsError, RuntimeError)
    assert fc.IndexOutOfBoundsError.__module__ == "flambeau_core"
    # Both except forms catch it; nothing was written into self before the check failed.
    x = fc.zeros(2, 3)
    for cls in (RuntimeError, IndexError):
        try:
            x.scatter_(1, fc.tensor([[0, 7]]), 1.0)
        except cls:
            pass
    assert x.tolist() == [[0.0] * 3] * 2
