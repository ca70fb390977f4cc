"""Reductions of the reduce section (min/max forms, argmin, amin/amax/aminmax,
prod, var/std and their mean forms, norm, logsumexp, count_nonzero, nansum,
nanmean, median/nanmedian, quantile/nanquantile) and the scans (cumsum,
cumprod, cummax, cummin, logcumsumexp) against PyTorch 2.13 (CPU): values,
indices, dtypes, odd shapes, non-contiguous layouts, NaN, ties and errors."""

from __future__ import annotations

import math

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import make_tensor, to_numpy

pytestmark = pytest.mark.on_devices

FLOATS = ["float32", "float64"]
NP = {
    "float32": np.float32,
    "float64": np.float64,
    "int64": np.int64,
    "int32": np.int32,
    "bool": np.bool_,
    "uint8": np.uint8,
    "int8": np.int8,
    "int16": np.int16,
}
SHAPES = [(7,), (3, 4), (2, 3, 5), (4, 1, 6), (1, 37)]
LAYOUTS = ["contiguous", "transposed", "sliced"]


def arr(shape, dtype, seed=0, *, ties=False, nan=False):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if "int" in dtype:
        lo = 0 if dtype == "uint8" else -4
        return rng.integers(lo, 4 if ties else 100, size=shape).astype(NP[dtype])
    a = rng.integers(-3, 4, size=shape).astype(np.float64) if ties else rng.standard_normal(shape)
    a = a.astype(NP[dtype])
    if nan and a.size:
        flat = a.reshape(-1)
        flat[rng.integers(0, a.size, size=max(1, a.size // 6))] = np.nan
    return a


# Not helpers.assert_matches: against a torch result (detached), ints exact, float rtol = atol by dtype.
def close(f, t, *, rtol=None, exact=False):
    t = t.detach()
    a, b = to_numpy(f), t.numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    if exact or a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
    else:
        r = rtol or (2e-5 if a.dtype == np.float32 else 1e-10)
        np.testing.assert_allclose(a, b, rtol=r, atol=r, equal_nan=True)


def pair(a, layout="contiguous"):
    return make_tensor(a, layout), torch.from_numpy(np.array(a))


def dims_of(ndim):
    return [d for d in range(-ndim, ndim)]


# ---- min / max / argmin / argmax ----


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_min_max_dim_values_and_first_index_on_ties(dtype, shape, layout):
    f, t = pair(arr(shape, dtype, 1, ties=True), layout)
    close(f.min(), t.min())
    close(f.max(), t.max())
    for d in dims_of(len(shape)):
        for keep in (False, True):
            for name in ("min", "max"):
                fv, fi = getattr(f, name)(d, keep)
                tv, ti = getattr(t, name)(d, keep)
                close(fv, tv)
                close(fi, ti)
            if dtype != "bool":
                close(f.argmin(d, keepdim=keep), t.argmin(d, keepdim=keep))
                close(f.argmax(dim=d, keepdim=keep), t.argmax(dim=d, keepdim=keep))
    if dtype != "bool":
        close(fc.argmin(f), torch.argmin(t))


@pytest.mark.parametrize("dtype", FLOATS)
def test_min_max_propagate_nan_with_its_index(dtype):
    a = arr((6, 9), dtype, 2, nan=True)
    f, t = pair(a)
    close(f.min(), t.min())
    close(f.max(), t.max())
    for d in (0, 1):
        for name in ("min", "max"):
            fv, fi = getattr(f, name)(d)
            tv, ti = getattr(t, name)(d)
            close(fv, tv)
            close(fi, ti)
        close(f.argmin(d), t.argmin(d))
        close(fc.amin(f, d), torch.amin(t, d))
        close(fc.amax(f, d), torch.amax(t, d))


def test_min_max_other_named_tuple_and_long_rows():
    f, t = pair(arr((3, 100_003), "float32", 3))
    r = f.min(dim=1)
    assert type(r).__name__ == "min" and r._fields == ("values", "indices")
    close(r.values, t.min(dim=1).values)
    close(r.indices, t.min(dim=1).indices)
    close(f.max(1).indices, t.max(1).indices)
    g, u = pair(arr((3, 100_003), "float32", 4))
    close(f.min(g), t.min(u))
    close(fc.min(f, g), torch.min(t, u))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_amin_amax_aminmax(dtype, layout):
    f, t = pair(arr((3, 4, 5), dtype, 5, ties=True), layout)
    for dim in ((), 0, -1, (0, 2), (2, 0, 1), (1,)):
        for keep in (False, True):
            close(fc.amax(f, dim, keep), torch.amax(t, dim, keep))
            close(f.amin(dim, keepdim=keep), t.amin(dim, keepdim=keep))
    for dim in (None, 0, 2):
        fm, fM = fc.aminmax(f, dim=dim, keepdim=True)
        tm, tM = torch.aminmax(t, dim=dim, keepdim=True)
        close(fm, tm)
        close(fM, tM)
    r = fc.aminmax(f)
    assert r._fields == ("min", "max")


# ---- prod ----


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_prod(dtype, layout):
    a = arr((3, 4, 5), dtype, 6, ties=True)
    if "float" in dtype:
        a = (a * 0 + np.random.default_rng(0).uniform(0.5, 1.5, a.shape)).astype(a.dtype)
    f, t = pair(a, layout)
    close(f.prod(), t.prod())
    for d in dims_of(3):
        close(f.prod(d), t.prod(d))
        close(fc.prod(f, d, keepdim=True), torch.prod(t, d, keepdim=True))
    close(f.prod(1, dtype=fc.float64), t.prod(1, dtype=torch.float64))
    close(fc.prod(fc.zeros(0, 3)), torch.prod(torch.zeros(0, 3)))
    close(fc.prod(fc.zeros(0, 3), 0), torch.prod(torch.zeros(0, 3), 0))


def test_prod_out():
    f, t = pair(arr((3, 4), "float64", 7))
    o = fc.empty(3, dtype=fc.float64)
    fc.prod(f, 1, out=o)
    close(o, t.prod(1))


# ---- var / std ----


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_var_std_forms(dtype, layout):
    f, t = pair(arr((4, 5, 6), dtype, 8), layout)
    for name in ("var", "std"):
        close(getattr(f, name)(), getattr(t, name)())
        close(getattr(f, name)(False), getattr(t, name)(False))
        close(getattr(fc, name)(f, unbiased=False), getattr(torch, name)(t, unbiased=False))
        for dim in (0, -1, (0, 2), (1, 2, 0), None):
            for keep in (False, True):
                close(getattr(f, name)(dim, keepdim=keep), getattr(t, name)(dim, keepdim=keep))
                close(getattr(f, name)(dim, True, keep), getattr(t, name)(dim, True, keep))
                for c in (0, 1, 2, 0.5):
                    close(
                        getattr(f, name)(dim, correction=c, keepdim=keep),
                        getattr(t, name)(dim, correction=c, keepdim=keep),
                    )
        for fn in ("var_mean", "std_mean"):
            for kwargs in ({}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}, {"dim": 1, "correction": 0}):
                fa, fb_ = getattr(fc, fn)(f, **kwargs)
                ta, tb = getattr(torch, fn)(t, **kwargs)
                close(fa, ta)
                close(fb_, tb)
            fa, fb_ = getattr(fc, fn)(f, 1, False)
            ta, tb = getattr(torch, fn)(t, 1, False)
            close(fa, ta)


def test_var_accuracy_far_from_zero_and_edge_cases():
    a = (np.random.default_rng(1).standard_normal((3, 1000)) + 1e4).astype(np.float32)
    f, t = pair(a)
    close(f.var(1), t.var(1), rtol=1e-3)
    close(fc.var(fc.tensor([1.0])), torch.var(torch.tensor([1.0])))  # N - 1 = 0: nan
    close(fc.var(fc.tensor([1.0, 2.0]), correction=3), torch.var(torch.tensor([1.0, 2.0]), correction=3))
    close(fc.var(fc.zeros(0, 3), 0), torch.var(torch.zeros(0, 3), 0))
    close(fc.var(fc.zeros(2, 0), 0), torch.var(torch.zeros(2, 0), 0))
    o = fc.empty(2)
    fc.var(fc.tensor([[1.0, 2.0], [3.0, 5.0]]), 1, out=o)
    close(o, torch.tensor([[1.0, 2.0], [3.0, 5.0]]).var(1))


def test_var_of_integers_is_a_type_error():
    with pytest.raises(TypeError, match=r"var.*int64"):
        fc.tensor([1, 2, 3]).var()


# ---- norm, logsumexp, count_nonzero, nansum, nanmean ----


@pytest.mark.parametrize("dtype", FLOATS)
def test_norm(dtype):
    f, t = pair(arr((3, 4, 5), dtype, 9))
    for p in (2, 1, 3, 0.5, 0, math.inf, -math.inf, "fro"):
        close(fc.norm(f, p), torch.norm(t, p))
        for dim in (1, (0, 2)):
            for keep in (False, True):
                close(f.norm(p, dim, keep), t.norm(p, dim, keep))
    close(f.norm(), t.norm())
    close(fc.norm(f, dtype=fc.float64), torch.norm(t, dtype=torch.float64))


@pytest.mark.parametrize("dtype", FLOATS)
def test_norm_nuclear(dtype):
    # torch.norm(x, 'nuc'): the sum of the singular values over two dims (those of a 2-D x by default)
    f, t = pair(arr((3, 4, 5), dtype, 11))
    close(fc.norm(f[0], "nuc"), torch.norm(t[0], "nuc"))
    close(f[0].t().norm("nuc"), t[0].t().norm("nuc"))
    for dim in ((0, 2), (2, 1), (-1, 0)):
        for keep in (False, True):
            close(fc.norm(f, "nuc", dim, keep), torch.norm(t, "nuc", dim, keep))
    close(fc.norm(f[0], "nuc", dtype=fc.float64), torch.norm(t[0], "nuc", dtype=torch.float64))
    with pytest.raises(
        fc.FlambeauError, match=r"\[norm\] p='nuc' without dim needs a 2-D input, got shape \(3, 4, 5\)"
    ):
        fc.norm(f, "nuc")
    with pytest.raises(RuntimeError, match="2-tuple"):
        torch.norm(t, "nuc")
    with pytest.raises(fc.FlambeauError, match=r"p='nuc' needs dim to hold two dims, got 1"):
        fc.norm(f, "nuc", [1])
    with pytest.raises(fc.FlambeauError, match=r"p='abc' is not a norm"):
        fc.norm(f, "abc")


@pytest.mark.parametrize("dtype", FLOATS)
def test_logsumexp_count_nonzero_nansum_nanmean(dtype):
    a = arr((3, 4, 5), dtype, 10) * 30
    f, t = pair(a)
    for dim in (0, -1, (0, 2)):
        for keep in (False, True):
            close(f.logsumexp(dim, keep), t.logsumexp(dim, keep))
    inf = pair(np.array([[-np.inf, -np.inf], [np.inf, 1.0]], dtype=NP[dtype]))
    close(fc.logsumexp(inf[0], 1), torch.logsumexp(inf[1], 1))
    close(fc.logsumexp(fc.tensor([1, 2, 3]), 0), torch.logsumexp(torch.tensor([1, 2, 3]), 0))
    z, zt = pair(arr((4, 5), "int64", 11, ties=True))
    close(fc.count_nonzero(z), torch.count_nonzero(zt))
    close(fc.count_nonzero(z, 1), torch.count_nonzero(zt, 1))
    close(z.count_nonzero((0, 1)), zt.count_nonzero((0, 1)))
    n, nt = pair(arr((4, 6), dtype, 12, nan=True))
    for dim in (None, 0, 1):
        close(fc.nansum(n, dim), torch.nansum(nt, dim))
        close(n.nanmean(dim, keepdim=True), nt.nanmean(dim, keepdim=True))
    close(fc.nansum(z), torch.nansum(zt))


# ---- median / quantile ----


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_median_values_and_indices(dtype, layout):
    a = arr((5, 6, 7), dtype, 13)
    f, t = pair(a, layout)
    close(f.median(), t.median())
    for d in dims_of(3):
        for keep in (False, True):
            fv, fi = f.median(d, keep)
            tv, ti = t.median(d, keep)
            close(fv, tv)
            if dtype == "int64":  # ties: PyTorch's index is one of them; check it holds the value
                got = np.take_along_axis(a, np.expand_dims(to_numpy(fi), d) if not keep else to_numpy(fi), d)
                np.testing.assert_array_equal(got.reshape(to_numpy(fv).shape), to_numpy(fv))
            else:
                close(fi, ti)
            fv, fi = fc.nanmedian(f, d, keepdim=keep)
            tv, _ = torch.nanmedian(t, d, keepdim=keep)
            close(fv, tv)


@pytest.mark.parametrize("dtype", FLOATS)
def test_median_nan(dtype):
    a = arr((6, 9), dtype, 14, nan=True)
    a[2] = np.nan
    f, t = pair(a)
    close(f.median(), t.median())
    close(f.nanmedian(), t.nanmedian())
    for d in (0, 1):
        fv, fi = f.median(d)
        tv, ti = t.median(d)
        close(fv, tv)
        close(fi, ti)
        fv, fi = f.nanmedian(d)
        tv, ti = t.nanmedian(d)
        close(fv, tv)
        ok = ~np.isnan(to_numpy(fv))
        np.testing.assert_array_equal(
            np.take_along_axis(a, np.expand_dims(to_numpy(fi), d), d).squeeze(d)[ok], to_numpy(fv)[ok]
        )
    close(fc.median(fc.zeros(0)), torch.median(torch.zeros(0)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(dtype, interpolation):
    a = arr((4, 5, 6), dtype, 15)
    f, t = pair(a)
    qs = [0.0, 0.25, 0.5, 0.7, 1.0]
    fq, tq = fc.tensor(qs, dtype=f.dtype), torch.tensor(qs, dtype=t.dtype)
    for dim in (None, 0, 1, -1):
        for keep in (False, True):
            kw = {"dim": dim, "keepdim": keep, "interpolation": interpolation}
            close(fc.quantile(f, fq, **kw), torch.quantile(t, tq, **kw))
            close(f.quantile(0.3, **kw), t.quantile(0.3, **kw))
            close(fc.quantile(f, fq[1], **kw), torch.quantile(t, tq[1], **kw))
    n, nt = pair(arr((5, 7), dtype, 16, nan=True))
    for dim in (None, 0, 1):
        kw = {"dim": dim, "interpolation": interpolation}
        close(fc.quantile(n, fq, **kw), torch.quantile(nt, tq, **kw))
        close(fc.nanquantile(n, fq, **kw), torch.nanquantile(nt, tq, **kw))
        close(n.nanquantile(0.4, **kw), nt.nanquantile(0.4, **kw))


def test_quantile_errors():
    x = fc.tensor([1.0, 2.0])
    with pytest.raises(fc.FlambeauError, match=r"quantile.*\[0, 1\]"):
        fc.quantile(x, 1.5)
    with pytest.raises(fc.FlambeauError, match="interpolation"):
        fc.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(TypeError, match="quantile.*int64"):
        fc.quantile(fc.tensor([1, 2]), 0.5)


# ---- scans ----


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cumsum_cumprod(dtype, shape, layout):
    a = arr(shape, dtype, 17, ties=True)
    f, t = pair(a, layout)
    for d in dims_of(len(shape)):
        close(f.cumsum(d), t.cumsum(d))
        close(fc.cumprod(f, d), torch.cumprod(t, d))
        close(f.cumsum(dim=d, dtype=fc.float64), t.cumsum(dim=d, dtype=torch.float64))


def test_cumsum_long_rows_inplace_out_and_zero_dim():
    a = np.random.default_rng(18).standard_normal(1_000_003).astype(np.float32)
    f = fc.tensor(a)
    np.testing.assert_allclose(to_numpy(f.cumsum(0)), np.cumsum(a.astype(np.float64)), rtol=1e-5, atol=2e-3)
    b = np.random.default_rng(19).standard_normal((3, 400_001))
    np.testing.assert_allclose(to_numpy(fc.tensor(b).cumsum(1)), np.cumsum(b, 1), rtol=1e-9, atol=1e-9)
    g = fc.tensor([1.0, 2.0, 3.0])
    g.cumsum_(0)
    assert g.tolist() == [1.0, 3.0, 6.0]
    o = fc.empty(2)
    fc.cumsum(fc.tensor([1.0, 1.0]), 0, out=o)
    assert o.tolist() == [1.0, 2.0]
    close(fc.tensor(5).cumsum(0), torch.tensor(5).cumsum(0))
    close(fc.zeros(0, 3).cumsum(0), torch.zeros(0, 3).cumsum(0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cummax_cummin(dtype, layout):
    a = arr((4, 5, 6), dtype, 20, ties=True, nan="float" in dtype)
    f, t = pair(a, layout)
    for d in dims_of(3):
        for name in ("cummax", "cummin"):
            fv, fi = getattr(f, name)(d)
            tv, ti = getattr(torch, name)(t, d)
            close(fv, tv)
            close(fi, ti)
    assert fc.cummax(f, 0)._fields == ("values", "indices")


@pytest.mark.parametrize("dtype", FLOATS)
def test_logcumsumexp(dtype):
    a = arr((4, 7), dtype, 21) * 40
    a[1, 2] = -np.inf
    a[2, :] = -np.inf
    a[3, 3] = np.inf
    f, t = pair(a)
    for d in (0, 1, -1):
        close(f.logcumsumexp(d), t.logcumsumexp(d))
    with pytest.raises(TypeError, match="logcumsumexp.*int64"):
        fc.tensor([1, 2]).logcumsumexp(0)


# ---- errors and empty tensors ----


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.min(3),
        lambda x: x.max(-4),
        lambda x: x.argmin(5),
        lambda x: fc.amax(x, (0, 7)),
        lambda x: x.prod(3),
        lambda x: x.var(4),
        lambda x: x.cumsum(3),
        lambda x: x.cummax(-5),
        lambda x: x.median(3),
        lambda x: x.logsumexp(9),
        lambda x: x.norm(2, 3),
        lambda x: x.quantile(0.5, dim=3),
    ],
)
def test_dim_out_of_range_is_an_index_error(call):
    with pytest.raises(IndexError, match=r"dim"):
        call(fc.zeros(2, 3, 4))


def test_dim_error_names_the_op_and_ndim():
    with pytest.raises(IndexError) as e:
        fc.zeros(2, 3).cumsum(2)
    assert "cumsum" in str(e.value) and "2" in str(e.value)


def test_empty_reductions_as_pytorch():
    e = fc.zeros(0, 3)
    with pytest.raises(RuntimeError, match="min"):
        e.min()
    with pytest.raises(RuntimeError, match="max"):
        e.max()
    with pytest.raises(IndexError, match="min"):
        e.min(0)
    with pytest.raises(IndexError, match="amax"):
        fc.amax(e, 0)
    assert fc.amax(e, 1).shape == (0,)
    assert e.min(1).values.shape == (0,)
    assert e.sum().item() == 0
    assert e.prod().item() == 1
    assert math.isnan(e.mean().item())
    assert fc.logsumexp(e, (0, 1)).item() == -math.inf
    assert fc.count_nonzero(e).item() == 0


def test_unsupported_dtype_is_a_type_error_naming_the_op():
    # min/amax take float16 (as PyTorch, and cumsum: test_structured_reductions.py) but not
    # uint32 (PyTorch refuses it too)
    u = fc.empty(3, dtype=fc.uint32)
    for name, call, dt in (
        ("min", lambda: u.min(), "uint32"),
        ("amax", lambda: fc.amax(u), "uint32"),
    ):
        with pytest.raises(TypeError, match=f"{name}.*{dt}"):
            call()


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
def test_all_any_over_several_dims(dtype):
    a = arr((3, 4, 5), dtype, 22, ties=True)
    f, t = pair(a)
    for dim in (None, 0, (0, 2), (2, 1, 0)):
        for keep in (False, True):
            kw = {} if dim is None else {"dim": dim, "keepdim": keep}
            close(fc.all(f, **kw), torch.all(t, **kw))
            close(f.any(**kw), t.any(**kw))


@pytest.mark.parametrize("dtype", FLOATS)
def test_min_max_first_index_on_long_rows_with_ties_and_nan(dtype):
    # rows longer than the kernels' vector blocks: ties fall in different lanes and blocks
    a = arr((6, 1000), dtype, 23, ties=True)
    a[1, 700] = np.nan
    a[2, 5] = a[2, 999] = np.nan
    a[3, :] = 1.0
    f, t = pair(a)
    for name in ("max", "min"):
        for d in (0, 1):
            fv, fi = getattr(f, name)(d)
            tv, ti = getattr(t, name)(d)
            close(fv, tv)
            close(fi, ti)
    close(f.argmax(1), t.argmax(1))
    close(f.argmin(), t.argmin())
