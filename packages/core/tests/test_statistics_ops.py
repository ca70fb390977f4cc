"""isin, bincount, histc, diff, trapezoid (trapz), cumulative_trapezoid, cov and corrcoef against PyTorch 2.13:
values, dtypes and shapes over dims, weights, empty inputs and special values, and the errors for bad input."""

from __future__ import annotations

import re

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(5)
NAN, INF = float("nan"), float("inf")


def pair(values, dtype="float32"):
    return fc.tensor(values, dtype=getattr(fc, dtype)), torch.tensor(values, dtype=getattr(torch, dtype))


def assert_same(got, expected, rtol=1e-5, atol=1e-6):
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    if expected.dtype.is_floating_point:
        np.testing.assert_allclose(to_numpy(got, widen=True), expected.numpy(), rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(to_numpy(got), expected.numpy())


# ---- isin


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64"])
@pytest.mark.parametrize("invert", [False, True])
def test_isin(dtype, invert):
    e = RNG.integers(-5, 6, (3, 4)).tolist()
    t = RNG.integers(-5, 6, (2, 3)).tolist()
    (fe, te), (ft, tt) = pair(e, dtype), pair(t, dtype)
    assert_same(fc.isin(fe, ft, invert=invert), torch.isin(te, tt, invert=invert))
    assert_same(fc.isin(fe, ft, assume_unique=True, invert=invert), torch.isin(te, tt, invert=invert))
    assert_same(fc.isin(fe, 3, invert=invert), torch.isin(te, 3, invert=invert))
    assert_same(fc.isin(3, ft, invert=invert), torch.isin(3, tt, invert=invert))


def test_isin_special_values_mixed_dtypes_and_empty():
    (fe, te), (ft, tt) = pair([1.0, NAN, INF, -0.0, 2.5]), pair([NAN, INF, 0.0, 2.0])
    assert_same(fc.isin(fe, ft), torch.isin(te, tt))
    (fi, ti) = pair([1, 2, 3], "int64")
    assert_same(fc.isin(fi, fc.tensor([2.0, 3.5])), torch.isin(ti, torch.tensor([2.0, 3.5])))
    assert_same(fc.isin(fe, ft[:0]), torch.isin(te, tt[:0]))
    assert_same(fc.isin(fe[:0], ft), torch.isin(te[:0], tt))
    out = fc.empty(0, dtype=fc.bool)
    fc.isin(fe, ft, out=out)
    assert_same(out, torch.isin(te, tt))


# ---- bincount and histc


def test_bincount():
    x = [0, 2, 2, 5, 1, 2]
    fx, tx = pair(x, "int64")
    assert_same(fc.bincount(fx), torch.bincount(tx))
    assert_same(fx.bincount(minlength=10), tx.bincount(minlength=10))
    for wdtype in ["float32", "float64", "int64"]:
        fw, tw = pair([0.5, 1, 2, 3, 4, 5], wdtype)
        assert_same(fc.bincount(fx, fw), torch.bincount(tx, tw))
    fs, ts = pair(x, "int32")
    assert_same(fc.bincount(fs), torch.bincount(ts))
    assert_same(fc.bincount(fx[:0]), torch.bincount(tx[:0]))
    assert_same(fc.bincount(fx[:0], minlength=3), torch.bincount(tx[:0], minlength=3))


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "words"),
    [
        ([[-1, 2]], {}, fc.FlambeauError, "non-negative"),
        ([[[1, 2]]], {}, fc.FlambeauError, "1-D"),
        ([[1.0, 2.0]], {}, TypeError, "integer"),
        ([[1, 2]], {"minlength": -1}, fc.FlambeauError, "minlength should be >= 0"),
        ([[1, 2]], {"weights": [1.0, 2.0, 3.0]}, fc.FlambeauError, "weights should be 1-D and have the same length"),
        ([[1, 2]], {"weights": [[1.0, 2.0]]}, fc.FlambeauError, "weights should be 1-D and have the same length"),
    ],
)
def test_bincount_errors(args, kwargs, error, words):
    tkw, fkw = dict(kwargs), dict(kwargs)
    if "weights" in kwargs:
        tkw["weights"], fkw["weights"] = torch.tensor(kwargs["weights"]), fc.tensor(kwargs["weights"])
    with pytest.raises(RuntimeError):
        torch.bincount(torch.tensor(args[0], dtype=torch.int64 if error is not TypeError else None), **tkw)
    with pytest.raises(error, match=rf"^\[bincount\].*{words}"):
        fc.bincount(fc.tensor(args[0], dtype=fc.int64 if error is not TypeError else None), **fkw)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bincount_refuses_wide_unsigned_as_torch(dtype, weighted):
    """PyTorch's kernel takes uint8 and the signed integers only: NotImplementedError, its words."""
    name = {"uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}[dtype]
    tw = torch.ones(3) if weighted else None
    fw = fc.ones(3) if weighted else None
    with pytest.raises(NotImplementedError, match=f"^\"bincount_cpu\" not implemented for '{name}'$"):
        torch.bincount(torch.tensor([0, 2, 1], dtype=getattr(torch, dtype)), tw)
    with pytest.raises(
        NotImplementedError, match=rf"^\[bincount\] \"bincount_cpu\" not implemented for '{name}' \(dtype {dtype}\)"
    ):
        fc.bincount(fc.tensor([0, 2, 1], dtype=getattr(fc, dtype)), fw)
    for empty in (False, True):  # refused before looking at the values, an empty input too
        with pytest.raises(NotImplementedError, match="not implemented for"):
            fc.bincount(fc.tensor([] if empty else [5], dtype=getattr(fc, dtype)), minlength=2)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize(
    ("n", "top", "minlength"),
    # one pass below the kernel's cap of bins; two threads' parts from 65,536 values; values above the
    # cap (two passes); minlength above the largest value; empty
    [(1, 1, 0), (7, 5, 0), (1000, 100, 0), (70_000, 120, 3), (70_000, 3000, 0), (40, 127, 200), (0, 1, 4)],
)
def test_bincount_counts_against_torch(dtype, n, top, minlength):
    top = min(top, 127) if dtype in ("int8", "uint8") else top
    x = RNG.integers(0, top, n)
    fx, tx = pair(x.tolist(), dtype)
    assert_same(fc.bincount(fx, minlength=minlength), torch.bincount(tx, minlength=minlength))
    assert_same(fx[::3].bincount(minlength=minlength), tx[::3].bincount(minlength=minlength))  # strided input


@pytest.mark.parametrize("wdtype", ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool"])
@pytest.mark.parametrize(("n", "top"), [(9, 4), (70_000, 50), (3000, 5000)])
def test_bincount_weights_against_torch(wdtype, n, top):
    """float32 weights sum in float32, every other dtype in float64 (PyTorch's result dtypes), in input order:
    the same bits as PyTorch's sums."""
    x = RNG.integers(0, top, n)
    w = (
        RNG.random(n) * 3
        if wdtype not in ("bool", "int32", "int64")
        else RNG.integers(0, 2 if wdtype == "bool" else 9, n)
    )
    fx, tx = pair(x.tolist(), "int64")
    fw, tw = fc.tensor(w.tolist(), dtype=getattr(fc, wdtype)), torch.tensor(w.tolist(), dtype=getattr(torch, wdtype))
    got, expected = fc.bincount(fx, fw), torch.bincount(tx, tw)
    assert_same(got, expected, rtol=0, atol=0)
    assert_same(fc.bincount(fx[1::2], fw[1::2], minlength=7000), torch.bincount(tx[1::2], tw[1::2], minlength=7000))


def test_bincount_weights_requiring_grad_are_differentiated():
    """Weights that require grad take the composite form (scatter_add), so their gradient is the gathered
    incoming gradient (PyTorch has no derivative for bincount)."""
    fc_autograd = pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")
    assert fc_autograd
    x = RNG.integers(0, 6, 20)
    fx = fc.tensor(x.tolist())
    fw = fc.tensor(RNG.random(20).tolist(), requires_grad=True)
    counts = fc.bincount(fx, fw)
    g = RNG.standard_normal(counts.shape[0])
    (counts * fc.tensor(g.tolist())).sum().backward()
    np.testing.assert_allclose(to_numpy(fw.grad), g[x].astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(counts.detach()), to_numpy(fc.bincount(fx, fw.detach())), rtol=1e-6)


@pytest.mark.parametrize("n", [5, 70_000])
def test_bincount_negative_value_anywhere(n):
    x = RNG.integers(0, 10, n)
    x[n - 2] = -3
    for dtype in ["int8", "int32", "int64"]:
        with pytest.raises(RuntimeError):
            torch.bincount(torch.tensor(x, dtype=getattr(torch, dtype)))
        with pytest.raises(fc.FlambeauError, match=r"^\[bincount\] input should contain only non-negative values"):
            fc.bincount(fc.tensor(x.tolist(), dtype=getattr(fc, dtype)))
        with pytest.raises(fc.FlambeauError, match=r"^\[bincount\] input should contain only non-negative values"):
            fc.bincount(fc.tensor(x.tolist(), dtype=getattr(fc, dtype)), fc.ones(n))


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("value", [2**63 - 1, 2**62, 2**60])
def test_bincount_too_large_value_raises(value):
    """A largest value whose max + 1 bins of 8 bytes overflow the byte count raises before allocating (as
    PyTorch's "maximum value of input overflowed" / "Storage size calculation overflowed")."""
    with pytest.raises(RuntimeError, match="overflow"):
        torch.bincount(torch.tensor([1, value]))
    with pytest.raises(fc.FlambeauError, match=r"^\[bincount\] maximum value of input overflowed: \d+ \+ 1 bins"):
        fc.bincount(fc.tensor([1, value]))
    with pytest.raises(fc.FlambeauError, match=r"^\[bincount\] maximum value of input overflowed"):
        fc.bincount(fc.tensor([value, 0]), fc.ones(2))
    with pytest.raises(RuntimeError, match="overflow"):
        torch.bincount(torch.tensor([1]), minlength=value)
    with pytest.raises(fc.FlambeauError, match=r"^\[bincount\] minlength of \d+ bins is too many"):
        fc.bincount(fc.tensor([1]), minlength=value)


@pytest.mark.on_devices(types=("cpu",))
def test_bincount_unallocatable_length_raises():
    """2**40 bins (8 TiB) pass the overflow check; the allocation itself fails with an exception."""
    with pytest.raises(RuntimeError):
        torch.bincount(torch.tensor([2**40]))
    with pytest.raises((MemoryError, RuntimeError)):
        fc.bincount(fc.tensor([2**40]))


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("seed", range(6))
def test_bincount_fuzz_against_torch(seed):
    """Random lengths, dtypes, spreads (some above the one-pass cap) and minlengths."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 80_000))
    dtype = ["uint8", "int16", "int32", "int64"][seed % 4]
    top = int(rng.choice([2, 255, 5000, 30_000])) if dtype != "uint8" else 255
    x = rng.integers(0, top, n)
    minlength = int(rng.integers(0, 2 * top))
    fx, tx = pair(x.tolist(), dtype)
    assert_same(fc.bincount(fx, minlength=minlength), torch.bincount(tx, minlength=minlength))
    w = rng.standard_normal(n)
    fw, tw = pair(w.tolist(), "float32")
    assert_same(fc.bincount(fx, fw, minlength), torch.bincount(tx, tw, minlength), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("bins", "lo", "hi"), [(4, 0, 3), (10, 0, 0), (7, -1.5, 2.25), (3, 5, 5), (1, 0, 1)])
def test_histc(dtype, bins, lo, hi):
    x = RNG.standard_normal((4, 25)).tolist()
    x[0][:3] = [3.0, 0.0, -1.5]
    if lo != hi:
        x[0][3] = NAN  # left out of a given range; a NaN in the data's own range raises (below)
    fx, tx = pair(x, dtype)
    assert_same(fc.histc(fx, bins=bins, min=lo, max=hi), torch.histc(tx, bins=bins, min=lo, max=hi))
    assert_same(fx.histc(bins, lo, hi), tx.histc(bins, lo, hi))


def test_histc_constant_and_empty_input():
    fx, tx = pair([2.0, 2.0, 2.0])
    assert_same(fc.histc(fx, bins=4), torch.histc(tx, bins=4))
    assert_same(fc.histc(fx[:0], bins=3), torch.histc(tx[:0], bins=3))
    out = fc.empty(0)
    fc.histc(fx, bins=2, out=out)
    assert_same(out, torch.histc(tx, bins=2))


@pytest.mark.parametrize(
    ("values", "kwargs", "error", "words"),
    [
        ([1.0], {"bins": 0}, fc.FlambeauError, "bins must be > 0"),
        ([1.0], {"min": 3, "max": 1}, fc.FlambeauError, "max must be larger than min"),
        ([1.0, INF], {}, fc.FlambeauError, "is not finite"),
        ([1.0, NAN], {}, fc.FlambeauError, "is not finite"),
        ([1, 2], {}, TypeError, "expected a floating point input, got int64"),
    ],
)
def test_histc_errors(values, kwargs, error, words):
    with pytest.raises(RuntimeError):
        torch.histc(torch.tensor(values), **kwargs)
    with pytest.raises(error, match=rf"^\[histc\].*{re.escape(words)}"):
        fc.histc(fc.tensor(values), **kwargs)


# ---- diff


@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
@pytest.mark.parametrize(("n", "dim"), [(1, -1), (2, 0), (3, 1), (0, 0), (5, -1)])
def test_diff(dtype, n, dim):
    x = RNG.integers(0, 3 if dtype == "bool" else 9, (3, 4)).tolist()
    fx, tx = pair(x, dtype)
    assert_same(fc.diff(fx, n=n, dim=dim), torch.diff(tx, n=n, dim=dim))
    assert_same(fx.diff(n, dim), tx.diff(n, dim))


def test_diff_prepend_append_and_out():
    (fx, tx), (fp, tp), (fa, ta) = pair([[1, 4], [2, 8]]), pair([[0], [1]]), pair([[9, 9, 9], [0, 0, 0]])
    assert_same(fc.diff(fx, prepend=fp), torch.diff(tx, prepend=tp))
    assert_same(fc.diff(fx, dim=0, append=fa[:, :2]), torch.diff(tx, dim=0, append=ta[:, :2]))
    assert_same(fc.diff(fx, n=2, prepend=fp, append=fp), torch.diff(tx, n=2, prepend=tp, append=tp))
    out = fc.empty(0)
    fc.diff(fx, out=out)
    assert_same(out, torch.diff(tx))


@pytest.mark.parametrize(
    ("x", "kwargs", "words"),
    [
        (5.0, {}, "at least one-dimensional"),
        ([1.0, 2.0], {"n": -1}, "order must be non-negative but got -1"),
        ([[1.0, 2.0]], {"prepend": [1.0]}, "as many dims as input"),
        ([[1.0, 2.0]], {"append": [[1.0], [2.0]]}, "except on dim 1"),
    ],
)
def test_diff_errors(x, kwargs, words):
    tkw = {k: torch.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    fkw = {k: fc.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    with pytest.raises((RuntimeError, IndexError)):
        torch.diff(torch.tensor(x), **tkw)
    with pytest.raises(fc.FlambeauError, match=rf"^\[diff\].*{re.escape(words)}"):
        fc.diff(fc.tensor(x), **fkw)


# ---- trapezoid and cumulative_trapezoid


@pytest.mark.parametrize("name", ["trapezoid", "trapz", "cumulative_trapezoid"])
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_trapezoid_dx(name, dtype):
    y = RNG.integers(-4, 5, (3, 5)).tolist()
    fy, ty = pair(y, dtype)
    for kwargs in [{}, {"dx": 0.5}, {"dim": 0}, {"dx": 2, "dim": -2}]:
        assert_same(getattr(fc, name)(fy, **kwargs), getattr(torch, name)(ty, **kwargs))


@pytest.mark.parametrize("name", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_trapezoid_x(name):
    y = RNG.standard_normal((3, 5))
    (fy, ty) = pair(y.tolist(), "float64")
    x1 = np.sort(RNG.uniform(0, 4, 5))
    (fx, tx) = pair(x1.tolist(), "float64")
    assert_same(getattr(fc, name)(fy, fx), getattr(torch, name)(ty, tx))
    (fx0, tx0) = pair(np.sort(RNG.uniform(0, 4, 3)).tolist(), "float64")
    assert_same(getattr(fc, name)(fy, fx0, dim=0), getattr(torch, name)(ty, tx0, dim=0))
    (fxf, txf) = pair(RNG.uniform(0, 4, (3, 5)).tolist(), "float64")
    assert_same(getattr(fc, name)(fy, fxf), getattr(torch, name)(ty, txf))


@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid_short_inputs(name):
    for shape in [(3, 0), (3, 1), (0, 4)]:
        fy, ty = pair(np.ones(shape).tolist() if shape[0] else np.ones(shape), "float32")
        fy = fy.reshape(shape)
        assert_same(getattr(fc, name)(fy), getattr(torch, name)(ty.reshape(shape)))
    with pytest.raises(RuntimeError):
        getattr(torch, name)(torch.ones(3), torch.ones(4))
    with pytest.raises(fc.FlambeauError, match=rf"^\[{name}\] there must be one x value per element"):
        getattr(fc, name)(fc.ones(3), fc.ones(4))


# ---- cov and corrcoef


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov(dtype, correction):
    x = RNG.integers(-5, 6, (3, 6)).tolist()
    fx, tx = pair(x, dtype)
    assert_same(fc.cov(fx, correction=correction), torch.cov(tx, correction=correction), rtol=1e-4)
    assert_same(fx[0].cov(correction=correction), tx[0].cov(correction=correction), rtol=1e-4)


def test_cov_weights():
    x = RNG.standard_normal((3, 6))
    fx, tx = pair(x.tolist(), "float64")
    fw, tw = pair([1, 2, 0, 3, 1, 1], "int64")
    fa, ta = pair(RNG.uniform(0.1, 2, 6).tolist(), "float64")
    for kwargs in [{"fweights": (fw, tw)}, {"aweights": (fa, ta)}, {"fweights": (fw, tw), "aweights": (fa, ta)}]:
        for correction in (0, 1):
            ours = fc.cov(fx, correction=correction, **{k: v[0] for k, v in kwargs.items()})
            assert_same(ours, torch.cov(tx, correction=correction, **{k: v[1] for k, v in kwargs.items()}))


def test_cov_complex_and_single_observation():
    x = (RNG.standard_normal((2, 4)) + 1j * RNG.standard_normal((2, 4))).tolist()
    fx, tx = fc.tensor(x, dtype=fc.complex128), torch.tensor(x, dtype=torch.complex128)
    np.testing.assert_allclose(to_numpy(fc.cov(fx)), torch.cov(tx).numpy(), rtol=1e-10)
    fo, to = pair([[1.0], [2.0]], "float64")
    assert_same(fc.cov(fo), torch.cov(to))  # n - correction = 0: inf/nan, as PyTorch (which warns)


def test_cov_and_corrcoef_of_one_variable_are_0_d():
    fx, tx = pair([[1.0, 3.0, 2.0]], "float64")
    assert_same(fc.cov(fx), torch.cov(tx))
    assert_same(fc.corrcoef(fx), torch.corrcoef(tx))
    fv, tv = pair([1.0, 3.0, 2.0], "float64")
    assert_same(fc.cov(fv), torch.cov(tv))


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"fweights": ([1.0, 2.0, 3.0], "float64")}, TypeError, "fweights to have an integral dtype"),
        ({"aweights": ([1, 2, 3], "int64")}, TypeError, "aweights to have a floating point dtype"),
        ({"fweights": ([1, 2], "int64")}, fc.FlambeauError, "same numel as there are observations (3)"),
        ({"fweights": ([1, -2, 3], "int64")}, fc.FlambeauError, "fweights cannot be negative"),
        ({"aweights": ([1.0, -2.0, 3.0], "float64")}, fc.FlambeauError, "aweights cannot be negative"),
    ],
)
def test_cov_weight_errors(kwargs, error, words):
    x = [[1.0, 2.0, 4.0]]
    with pytest.raises(RuntimeError):
        torch.cov(torch.tensor(x), **{k: torch.tensor(v, dtype=getattr(torch, d)) for k, (v, d) in kwargs.items()})
    with pytest.raises(error, match=rf"^\[cov\].*{re.escape(words)}"):
        fc.cov(fc.tensor(x), **{k: fc.tensor(v, dtype=getattr(fc, d)) for k, (v, d) in kwargs.items()})


def test_cov_corrcoef_reject_3d():
    for name in ("cov", "corrcoef"):
        with pytest.raises(RuntimeError):
            getattr(torch, name)(torch.ones(2, 2, 2))
        with pytest.raises(fc.FlambeauError, match=rf"^\[{name}\] expected input to have two or fewer dimensions"):
            getattr(fc, name)(fc.ones(2, 2, 2))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_corrcoef(dtype):
    x = RNG.integers(-5, 6, (4, 7)).tolist()
    x[3] = [2 * v + 1 for v in x[0]]  # perfectly correlated rows: clamped to 1
    fx, tx = pair(x, dtype)
    assert_same(fc.corrcoef(fx), torch.corrcoef(tx), rtol=1e-4)
    assert_same(fx.corrcoef(), tx.corrcoef(), rtol=1e-4)
    assert_same(fc.corrcoef(fx[0]), torch.corrcoef(tx[0]))
