"""The opsperf area against PyTorch 2.13: max/min/argmax/argmin/amax/amin widened to float16 and
bfloat16 (uint16/32/64 and complex stay refused, as in PyTorch), the one-pass float arg-extremum
(first index of ties, first NaN), gather with its bounds checks, x[mask] through the compaction
path, indexing/cat/index_put over every dtype, linspace's CPU fill, out= resizing, and the
FlambeauError of a shape whose bytes overflow int64."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import to_host

pytestmark = pytest.mark.on_devices

HALF = ["float16", "bfloat16"]


def to_numpy(t: fc.Tensor) -> np.ndarray:
    if t.dtype == fc.bfloat16:
        t = t.float()
    return np.array(memoryview(to_host(t).contiguous()))


def from_torch(x: torch.Tensor) -> fc.Tensor:
    if x.dtype == torch.bfloat16:
        return fc.tensor(x.float().numpy()).to(fc.bfloat16)
    return fc.tensor(x.numpy())


def torch_numpy(x: torch.Tensor) -> np.ndarray:
    return (x.float() if x.dtype == torch.bfloat16 else x).numpy()


def same(ours: fc.Tensor, theirs: torch.Tensor) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).removeprefix("flambeau.") == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(to_numpy(ours), torch_numpy(theirs))


# ---- max / min / argmax / argmin / amax / amin ----


def ties_and_nans(shape, dtype, rng, nan=True):
    x = torch.tensor(rng.integers(-3, 4, size=shape).astype(np.float32)).to(getattr(torch, dtype))
    if nan and x.numel() > 4:
        flat = x.view(-1)
        flat[rng.integers(0, x.numel(), size=2)] = float("nan")
    return x


@pytest.mark.parametrize("dtype", HALF + ["float32", "float64"])
@pytest.mark.parametrize("shape,dim", [((7, 5), 1), ((7, 5), 0), ((3, 130), 1), ((2, 3, 1001), -1), ((129,), 0)])
@pytest.mark.parametrize("nan", [False, True])
def test_extrema_with_dim_match_torch(dtype, shape, dim, nan):
    rng = np.random.default_rng(sum(shape) + dim)
    x = ties_and_nans(shape, dtype, rng, nan)
    f = from_torch(x)
    for name in ("max", "min"):
        fv, fi = getattr(f, name)(dim)
        tv, ti = getattr(x, name)(dim)
        same(fv, tv)
        same(fi, ti)
        same(getattr(f, "arg" + name)(dim), getattr(x, "arg" + name)(dim))
        same(getattr(f, "a" + name)(dim), getattr(x, "a" + name)(dim))
        same(getattr(f, name)(), getattr(x, name)())
        same(getattr(f, "arg" + name)(), getattr(x, "arg" + name)())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 127, 128, 129, 255, 1000, 4097])
def test_float_arg_extremum_first_tie_and_first_nan(dtype, n):
    rng = np.random.default_rng(n)
    x = torch.tensor(rng.integers(0, 4, size=(6, n))).to(getattr(torch, dtype))
    if n > 3:
        x[1, n - 1] = 9  # the maximum in the tail
        x[2, [n // 2, n - 2]] = float("nan")
        x[3, 0] = float("nan")
        x[4, :] = 1  # all ties
    f = from_torch(x)
    for name in ("max", "min"):
        fv, fi = getattr(f, name)(1)
        tv, ti = getattr(x, name)(1)
        same(fi, ti)
        same(fv, tv)


def test_extrema_noncontiguous_half():
    x = torch.randn(6, 8).to(torch.float16)
    f = from_torch(x)
    same(f.t().max(1)[0], x.t().max(1)[0])
    same(f.t().argmin(1), x.t().argmin(1))
    same(f[:, ::2].amax(0), x[:, ::2].amax(0))


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64", "complex64", "complex128"])
@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "amax", "amin"])
def test_extrema_refuse_the_dtypes_torch_refuses(dtype, op):
    t = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    with pytest.raises((TypeError, RuntimeError, NotImplementedError)):
        getattr(t, op)(1)
    f = fc.zeros(2, 3, dtype=getattr(fc, dtype))
    with pytest.raises(TypeError, match=rf"\[{op}\].*{dtype}"):
        getattr(f, op)(1)


# ---- gather ----


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "int64", "float16", "bfloat16", "complex64", "complex128", "bool"]
)
def test_gather_dtypes_match_torch(dtype):
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((5, 7)) * 3).to(getattr(torch, dtype))
    idx = torch.tensor(rng.integers(0, 7, size=(5, 3)))
    same(from_torch(x).gather(1, fc.tensor(idx.numpy())), x.gather(1, idx))
    idx0 = torch.tensor(rng.integers(0, 5, size=(2, 7)))
    same(from_torch(x).gather(0, fc.tensor(idx0.numpy())), x.gather(0, idx0))


@pytest.mark.parametrize(
    "shape,ishape,dim",
    [((3, 4, 5), (2, 3, 5), 1), ((3, 4, 5), (3, 4, 2), 2), ((3, 4, 5), (1, 1, 1), 0), ((300, 9), (300, 40), 1)],
)
def test_gather_shapes_and_noncontiguous(shape, ishape, dim):
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal(shape).astype(np.float32))
    idx = torch.tensor(rng.integers(0, shape[dim], size=ishape))
    f = fc.tensor(x.numpy())
    same(f.gather(dim, fc.tensor(idx.numpy())), x.gather(dim, idx))
    # a transposed self and a transposed (non-contiguous) index
    xt = x.transpose(0, -1)
    base = rng.integers(0, xt.shape[dim], size=ishape[::-1])
    it = torch.tensor(base).transpose(0, -1)
    if all(it.shape[k] <= xt.shape[k] for k in range(xt.dim()) if k != dim):
        same(f.transpose(0, -1).gather(dim, fc.tensor(base).transpose(0, -1)), xt.gather(dim, it))


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
    same(fc.tensor(x.numpy())[fc.tensor(m.numpy())], x[m])


def test_index_by_bool_mask_noncontiguous_and_dtypes():
    rng = np.random.default_rng(5)
    x = torch.tensor(rng.standard_normal((9, 11)))
    m = torch.tensor(rng.random((11, 9)) < 0.5)
    same(fc.tensor(x.numpy()).t()[fc.tensor(m.numpy())], x.t()[m])
    same(fc.tensor(x.numpy()).t()[fc.tensor(m.numpy().T.copy()).t()], x.t()[m.t().contiguous().t()])
    for dt in ["complex128", "float16", "bfloat16", "int8", "bool"]:
        xd = x.to(getattr(torch, dt))
        same(from_torch(xd)[fc.tensor(m.t().contiguous().numpy())], xd[m.t().contiguous()])


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
    same(f[fi], x[i])
    same(f.index_select(1, fi), x.index_select(1, i))
    same(fc.cat([f, f[:2]], 0), torch.cat([x, x[:2]], 0))
    same(fc.cat([f, f], 1), torch.cat([x, x], 1))
    if dtype in ("complex64", "complex128", "float16", "bfloat16"):  # torch has no uint16..64 index_put
        v = x[:3]
        same(f.index_put((fi,), from_torch(v), accumulate=True), x.index_put((i,), v, accumulate=True))
        same(f.index_put((fi,), from_torch(v)), x.index_put((i,), v))


# ---- linspace ----


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "start,end,steps",
    [(0, 1, 0), (0, 1, 1), (0, 1, 2), (0, 1, 5), (-3, 7, 10001), (0.1, 1.7, 1001), (5, -5, 11), (2, 2, 4)],
)
def test_linspace_matches_torch(dtype, start, end, steps):
    ours = fc.linspace(start, end, steps, dtype=getattr(fc, dtype))
    theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == getattr(fc, dtype)
    np.testing.assert_allclose(
        to_numpy(ours),
        theirs.numpy(),
        rtol=2e-7 if dtype == "float32" else 1e-15,
        atol=1e-6 if dtype == "float32" else 1e-14,
    )
    if steps >= 2:
        assert to_numpy(ours)[0] == theirs.numpy()[0] and to_numpy(ours)[-1] == theirs.numpy()[-1]


def test_linspace_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[linspace\] number of steps must be non-negative"):
        fc.linspace(0, 1, -1)


# ---- out= ----


def test_out_empty_is_resized_silently():
    o = fc.empty(0)
    ident = id(o)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = fc.add(fc.ones(2, 3), fc.ones(2, 3), out=o)
    assert r is o and id(o) == ident
    assert tuple(o.shape) == (2, 3) and o.is_contiguous()
    np.testing.assert_array_equal(to_numpy(o), np.full((2, 3), 2.0, np.float32))


@pytest.mark.parametrize("shape", [(5,), (2, 2), (7, 7)])
def test_out_nonempty_mismatch_is_resized_with_a_warning_as_torch(shape):
    ours, theirs = fc.empty(shape), torch.empty(shape)
    with pytest.warns(UserWarning, match="resized"):
        torch.mul(torch.ones(3), 2.0, out=theirs)
    with pytest.warns(UserWarning, match=r"\[mul\] An output with one or more elements was resized since it had shape"):
        fc.mul(fc.ones(3), 2.0, out=ours)
    assert tuple(ours.shape) == tuple(theirs.shape) == (3,)
    np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())


def test_out_matching_shape_is_written_in_place():
    o = fc.zeros(4, 3).t()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fc.add(fc.ones(3, 4), fc.ones(3, 4), out=o)
    assert tuple(o.shape) == (3, 4) and not o.is_contiguous()
    np.testing.assert_array_equal(to_numpy(o), np.full((3, 4), 2.0, np.float32))


def test_out_dtype_that_cannot_hold_the_result_raises():
    with pytest.raises(TypeError, match=r"\[add\] result type float32 can't be cast to the desired output type int64"):
        fc.add(fc.ones(3), fc.ones(3), out=fc.empty(0, dtype=fc.int64))


# ---- size overflow ----


@pytest.mark.parametrize("shape", [(2**40, 2**40), (2**62, 4)])
def test_shape_bytes_overflow_is_a_flambeau_error(shape):
    with pytest.raises(fc.FlambeauError, match=r"\[(empty|zeros)\] shape \(.*\) (of dtype float32 )?is too large"):
        fc.zeros(shape)


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
        same(fi, ti)
        np.testing.assert_array_equal(to_numpy(fv), torch_numpy(tv))
    same(from_torch(x).topk(3)[1], x.topk(3)[1])


# ---- out=(a, b) of the ops returning several tensors ----

TUPLE_OUT = {
    "max": (lambda m, x, out: m.max(x, 1, out=out), ("float32", "int64")),
    "min": (lambda m, x, out: m.min(x, 0, keepdim=True, out=out), ("float32", "int64")),
    "sort": (lambda m, x, out: m.sort(x, 1, descending=True, out=out), ("float32", "int64")),
    "topk": (lambda m, x, out: m.topk(x, 2, out=out), ("float32", "int64")),
    "kthvalue": (lambda m, x, out: m.kthvalue(x, 2, 1, out=out), ("float32", "int64")),
    "median": (lambda m, x, out: m.median(x, 1, out=out), ("float32", "int64")),
    "nanmedian": (lambda m, x, out: m.nanmedian(x, 0, out=out), ("float32", "int64")),
    "cummax": (lambda m, x, out: m.cummax(x, 1, out=out), ("float32", "int64")),
    "cummin": (lambda m, x, out: m.cummin(x, 0, out=out), ("float32", "int64")),
    "aminmax": (lambda m, x, out: m.aminmax(x, dim=1, out=out), ("float32", "float32")),
}


@pytest.mark.parametrize("name", list(TUPLE_OUT))
@pytest.mark.parametrize("container", [tuple, list])
def test_tuple_out_is_filled_resized_and_returned_as_torch(name, container):
    fn, dts = TUPLE_OUT[name]
    x = torch.tensor(np.random.default_rng(10).standard_normal((3, 5)).astype(np.float32))
    touts = container(torch.empty(0, dtype=getattr(torch, d)) for d in dts)
    fouts = container(fc.empty(0, dtype=getattr(fc, d)) for d in dts)
    tr = fn(torch, x, touts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # empty outs are resized silently
        fr = fn(fc, fc.tensor(x.numpy()), fouts)
    assert len(fr) == len(tr) == 2
    for k in range(2):
        assert fr[k] is fouts[k]
        same(fouts[k], touts[k])
    assert [getattr(fr, f) is fouts[k] for k, f in enumerate(fr._fields)] == [True, True]
    assert fr[0] is getattr(fr, fr._fields[0]) and hasattr(tr, fr._fields[0]) and hasattr(tr, fr._fields[1])


def test_tuple_out_nonempty_mismatch_warns_and_matching_is_in_place():
    x = fc.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    v, i = fc.empty(7), fc.empty(7, dtype=fc.int64)
    with pytest.warns(UserWarning, match=r"\[max\] An output with one or more elements was resized"):
        fc.max(x, 1, out=(v, i))
    assert tuple(v.shape) == (3,) and tuple(i.shape) == (3,)
    np.testing.assert_array_equal(to_numpy(i), [3, 3, 3])
    v2, i2 = fc.zeros(3), fc.zeros(3, dtype=fc.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fc.sort(x, 1, out=(fc.empty(0), fc.empty(0, dtype=fc.int64)))
        fc.min(x, 1, out=(v2, i2))
    np.testing.assert_array_equal(to_numpy(v2), [0, 4, 8])


def test_tuple_out_errors():
    x = fc.zeros(3, 4)
    with pytest.raises(TypeError, match=r"\[max\] expected out tensor to have dtype int64, but got float32"):
        fc.max(x, 1, out=(fc.empty(0), fc.empty(0)))
    with pytest.raises(TypeError, match=r"\[sort\] expected out tensor to have dtype float32, but got float64"):
        fc.sort(x, 1, out=(fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.int64)))
    with pytest.raises(TypeError, match=r"\[topk\] out= must be a tuple of 2 tensors, got 1"):
        fc.topk(x, 1, out=(fc.empty(0),))
    with pytest.raises(TypeError):
        fc.sort(x, 1, out=fc.empty(0))  # a single tensor is not a tuple (PyTorch raises TypeError too)
