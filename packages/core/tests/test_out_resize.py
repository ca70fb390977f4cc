"""out= against PyTorch 2.13: an empty out is resized silently, a mismatched one with a warning, a
matching one written in place, a dtype that cannot hold the result refused; and out=(a, b) of the
ops returning several tensors."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import assert_same_as_torch, to_numpy

pytestmark = pytest.mark.on_devices


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
        assert_same_as_torch(fouts[k], touts[k])
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
