"""Sorting and searching (sort, argsort, msort, topk, kthvalue, searchsorted,
bucketize, unique, unique_consecutive, nonzero, argwhere, where(condition))
against PyTorch 2.13 (CPU): values, indices (stable order on ties), NaN and
signed zeros, odd shapes, non-contiguous layouts, dtypes and errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import make_tensor, to_numpy
from test_reduce_ops import LAYOUTS, SHAPES, arr, close, dims_of, pair

pytestmark = pytest.mark.on_devices(not_on_cuda="nonzero, unique, cummax/cummin: no flambeau-cuda kernel yet")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "int8", "uint8", "bool"])
@pytest.mark.parametrize("shape", SHAPES + [(2, 300), (1000,)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sort_is_stable_like_pytorch(dtype, shape, layout):
    f, t = pair(arr(shape, dtype, 1, ties=True), layout)
    for d in dims_of(len(shape)):
        for desc in (False, True):
            fv, fi = f.sort(d, desc)
            tv, ti = t.sort(dim=d, descending=desc, stable=True)
            close(fv, tv)
            close(fi, ti)
            close(f.argsort(d, descending=desc, stable=True), t.argsort(dim=d, descending=desc, stable=True))
            r = fc.sort(f, dim=d, descending=desc, stable=True)
            assert r._fields == ("values", "indices")
            close(r.indices, ti)
    close(fc.msort(f), torch.msort(t))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [9, 100, 5000])
def test_sort_nan_inf_and_signed_zero(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.choice(np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5], dtype=NP_F[dtype]), size=(3, n))
    a[1] = rng.standard_normal(n)
    f, t = pair(a)
    for desc in (False, True):
        fv, fi = f.sort(1, descending=desc)
        tv, ti = t.sort(dim=1, descending=desc, stable=True)
        close(fv, tv)
        close(fi, ti)
        # signed zeros keep their order and sign
        np.testing.assert_array_equal(np.signbit(to_numpy(fv)), np.signbit(tv.numpy()))


NP_F = {"float32": np.float32, "float64": np.float64}


def test_sort_large_and_int_extremes():
    a = np.random.default_rng(3).standard_normal(200_001).astype(np.float32)
    f, t = pair(a)
    close(f.sort()[0], t.sort(stable=True)[0])
    close(f.sort()[1], t.sort(stable=True)[1])
    b = np.array([np.iinfo(np.int64).min, -1, 0, 1, np.iinfo(np.int64).max] * 20, dtype=np.int64)
    f, t = pair(b)
    close(f.sort(descending=True)[1], t.sort(descending=True, stable=True)[1])
    z = fc.zeros(0, 3)
    assert z.sort(0)[0].shape == (0, 3)
    s = fc.tensor(2.5)
    assert s.sort()[0].item() == 2.5 and s.sort()[1].item() == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_topk_kthvalue(dtype, layout):
    f, t = pair(arr((4, 6, 9), dtype, 4), layout)
    for d in dims_of(3):
        n = t.shape[d]
        for k in (0, 1, 3, n):
            for largest in (True, False):
                fv, fi = f.topk(k, d, largest)
                tv, ti = t.topk(k, d, largest)
                close(fv, tv)
                if dtype != "int64":  # ties (int64 here) leave PyTorch's index order unspecified
                    close(fi, ti)
        for k in (1, 2, n):
            for keep in (False, True):
                fv, fi = fc.kthvalue(f, k, d, keep)
                tv, ti = torch.kthvalue(t, k, d, keep)
                close(fv, tv)
                if dtype != "int64":
                    close(fi, ti)
    r = f.topk(2)
    assert r._fields == ("values", "indices")
    with pytest.raises(RuntimeError, match="topk.*k"):
        f.topk(10)
    with pytest.raises(IndexError, match="kthvalue.*k"):
        f.kthvalue(0)


def test_topk_nan_is_largest():
    a = np.array([[1.0, np.nan, 3.0, -1.0]], dtype=np.float32)
    f, t = pair(a)
    close(f.topk(2).values, t.topk(2).values)
    close(f.topk(2).indices, t.topk(2).indices)
    close(f.topk(2, largest=False).indices, t.topk(2, largest=False).indices)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_searchsorted_bucketize(dtype):
    rng = np.random.default_rng(5)
    seq = np.sort(arr((17,), dtype, 6, ties=True))
    vals = arr((3, 5), dtype, 7, ties=True)
    fs, ts = pair(seq)
    fv, tv = pair(vals)
    for right in (False, True):
        close(fc.searchsorted(fs, fv, right=right), torch.searchsorted(ts, tv, right=right))
        close(fc.bucketize(fv, fs, right=right), torch.bucketize(tv, ts, right=right))
        close(
            fc.searchsorted(fs, fv, right=right, out_int32=True),
            torch.searchsorted(ts, tv, right=right, out_int32=True),
        )
    close(fc.searchsorted(fs, fv, side="right"), torch.searchsorted(ts, tv, side="right"))
    close(fc.searchsorted(fs, 1), torch.searchsorted(ts, 1))
    close(fc.bucketize(2, fs), torch.bucketize(2, ts))
    seq2 = np.sort(arr((3, 8), dtype, 8, ties=True), axis=1)
    f2, t2 = pair(seq2)
    close(fc.searchsorted(f2, fv), torch.searchsorted(t2, tv))
    unsorted = rng.permutation(seq)
    fu, tu = pair(unsorted)
    srt = np.argsort(unsorted, kind="stable")
    close(fc.searchsorted(fu, fv, sorter=fc.tensor(srt)), torch.searchsorted(tu, tv, sorter=torch.from_numpy(srt)))
    with pytest.raises(fc.FlambeauError, match="searchsorted.*side"):
        fc.searchsorted(fs, fv, side="left", right=True)
    with pytest.raises(fc.FlambeauError, match="searchsorted.*shape"):
        fc.searchsorted(fc.zeros(2, 3), fc.zeros(3, 3))
    with pytest.raises(fc.FlambeauError, match="bucketize.*1-D"):
        fc.bucketize(fv, f2)


def test_searchsorted_nan():
    s = np.array([1.0, 2.0, np.nan], dtype=np.float32)
    v = np.array([np.nan, 1.5, 3.0], dtype=np.float32)
    for right in (False, True):
        close(
            fc.searchsorted(*pair(s)[:1], pair(v)[0], right=right),
            torch.searchsorted(torch.from_numpy(s), torch.from_numpy(v), right=right),
        )


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "uint8"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unique(dtype, layout):
    f, t = pair(arr((4, 7), dtype, 9, ties=True), layout)
    close(fc.unique(f), torch.unique(t))
    close(f.unique(), t.unique())
    fv, fi, fcn = fc.unique(f, return_inverse=True, return_counts=True)
    tv, ti, tcn = torch.unique(t, return_inverse=True, return_counts=True)
    close(fv, tv)
    close(fi, ti)
    close(fcn, tcn)
    fv, fcn = f.unique(return_counts=True)
    close(fcn, torch.unique(t, return_counts=True)[1])
    for d in (0, 1, -1):
        for r in (fc.unique(f, dim=d, return_inverse=True, return_counts=True),):
            tr = torch.unique(t, dim=d, return_inverse=True, return_counts=True)
            for a, b in zip(r, tr, strict=True):
                close(a, b)
        for r in (fc.unique_consecutive(f, dim=d, return_inverse=True, return_counts=True),):
            tr = torch.unique_consecutive(t, dim=d, return_inverse=True, return_counts=True)
            for a, b in zip(r, tr, strict=True):
                close(a, b)
    r = fc.unique_consecutive(f, return_inverse=True, return_counts=True)
    tr = torch.unique_consecutive(t, return_inverse=True, return_counts=True)
    for a, b in zip(r, tr, strict=True):
        close(a, b)
    close(f.unique_consecutive(), t.unique_consecutive())
    close(fc.unique(fc.zeros(0)), torch.unique(torch.zeros(0)))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "int8"])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4), (2, 3, 5), (70_001,)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nonzero_argwhere_where(dtype, shape, layout):
    a = arr(shape, dtype, 10, ties=True)
    f, t = make_tensor(a, layout) if a.ndim else fc.tensor(a), torch.from_numpy(np.array(a))
    close(fc.nonzero(f), torch.nonzero(t))
    close(f.nonzero(), t.nonzero())
    close(fc.argwhere(f), torch.argwhere(t))
    close(f.argwhere(), t.argwhere())
    ft, tt = fc.nonzero(f, as_tuple=True), torch.nonzero(t, as_tuple=True)
    assert len(ft) == len(tt)
    for x, y in zip(ft, tt, strict=True):
        close(x, y)
    for x, y in zip(fc.where(f), torch.where(t), strict=True):  # a 0-d condition counts as 1-D
        close(x, y)
    for x, y in zip(f.nonzero(as_tuple=True), t.nonzero(as_tuple=True), strict=True):
        close(x, y)


def test_sort_of_unsupported_dtypes_is_a_type_error():
    # sort, unique and nonzero take float16 (as PyTorch) but sort and unique not complex; topk not uint32
    # (PyTorch refuses both)
    c = fc.empty(4, dtype=fc.complex64)
    u = fc.empty(4, dtype=fc.uint32)
    for name, call, dt in (
        ("sort", lambda: c.sort(), "complex64"),
        ("topk", lambda: u.topk(1), "uint32"),
        ("unique", lambda: fc.unique(c), "complex64"),
    ):
        with pytest.raises(TypeError, match=f"{name}.*{dt}"):
            call()


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.sort(2),
        lambda x: x.argsort(-3),
        lambda x: x.topk(1, 5),
        lambda x: x.kthvalue(1, 2),
        lambda x: fc.unique(x, dim=2),
        lambda x: fc.unique_consecutive(x, dim=-3),
    ],
)
def test_dim_out_of_range(call):
    with pytest.raises(IndexError, match="dim"):
        call(fc.zeros(2, 3))
