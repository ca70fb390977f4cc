"""Tensor.new_full / new_zeros / new_ones / new_empty / new_tensor against PyTorch: the dtype and device
default to the tensor's, explicit ones win, sizes variadic or as a sequence, copies not views, errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

DTYPES = [("float64", fc.float64, torch.float64), ("int32", fc.int32, torch.int32), ("bool", fc.bool, torch.bool)]


def dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


@pytest.mark.parametrize(("name", "ours_dtype", "theirs_dtype"), DTYPES)
@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([4],), ((),)])
@pytest.mark.parametrize("method", ["new_zeros", "new_ones", "new_empty"])
def test_variadic_factories_follow_the_tensor(name, ours_dtype, theirs_dtype, size, method):
    ours = getattr(fc.zeros(1, dtype=ours_dtype), method)(*size)
    theirs = getattr(torch.zeros(1, dtype=theirs_dtype), method)(*size)
    assert ours.shape == tuple(theirs.shape)
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype) == name
    assert ours.device == fc.zeros(1).device
    if method != "new_empty":
        np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())


@pytest.mark.parametrize(("name", "ours_dtype", "theirs_dtype"), DTYPES)
def test_new_full_and_explicit_dtype(name, ours_dtype, theirs_dtype):
    ours, theirs = (
        fc.zeros(1, dtype=ours_dtype).new_full((2, 2), 3),
        torch.zeros(1, dtype=theirs_dtype).new_full((2, 2), 3),
    )
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())
    ours, theirs = fc.zeros(1, dtype=ours_dtype).new_ones(3, dtype=fc.float32), torch.zeros(1).new_ones(3)
    assert ours.dtype == fc.float32
    np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())


def test_new_tensor_copies_in_the_tensor_dtype():
    base, theirs_base = fc.zeros(1, dtype=fc.float64), torch.zeros(1, dtype=torch.float64)
    for data in ([1, 2, 3], [[1.5], [2.5]], 7):
        ours, theirs = base.new_tensor(data), theirs_base.new_tensor(data)
        assert ours.dtype == fc.float64 and ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())
    source = fc.tensor([1.0, 2.0])
    copy = base.new_tensor(source, dtype=fc.float32)
    copy[0] = 9.0  # a copy: the source keeps its values
    assert source.tolist() == [1.0, 2.0] and copy.dtype == fc.float32


def test_requires_grad():
    pytest.importorskip("flambeau_autograd", reason="requires_grad needs flambeau-autograd")
    assert fc.zeros(1).new_zeros(2, requires_grad=True).requires_grad
    source = fc.ones(2, requires_grad=True)
    copy = fc.zeros(1).new_tensor(source)
    assert not copy.requires_grad and copy.grad_fn is None  # cut from the source's graph
    assert fc.zeros(1).new_tensor(source, requires_grad=True).requires_grad


def test_errors():
    with pytest.raises(TypeError, match=r"\[new_full\] expected a size \(a tuple or list of ints\), got int"):
        fc.zeros(1).new_full(2, 3.0)
    with pytest.raises(TypeError, match=r"\[new_zeros\] expected a size of ints, got str at position 0"):
        fc.zeros(1).new_zeros("a")
    with pytest.raises(TypeError):
        torch.zeros(1).new_empty()
    with pytest.raises(TypeError, match=r"\[new_empty\] expected a size, got none"):
        fc.zeros(1).new_empty()
    with pytest.raises(TypeError, match=r"\[new_ones\] expected a size of ints, got float at position 1"):
        fc.zeros(1).new_ones(2, 3.0)


@pytest.mark.parametrize(
    ("size", "stride"), [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((2, 3), (0, 0)), ((), ()), ([4], [2])]
)
@pytest.mark.parametrize(("name", "ours_dtype", "theirs_dtype"), DTYPES)
def test_new_empty_strided(size, stride, name, ours_dtype, theirs_dtype):
    ours = fc.zeros(1, dtype=ours_dtype).new_empty_strided(size, stride)
    theirs = torch.zeros(1, dtype=theirs_dtype).new_empty_strided(size, stride)
    assert ours.shape == tuple(theirs.shape) and ours.stride() == theirs.stride()
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype) == name
    assert fc.zeros(1).new_empty_strided(size, stride, dtype=fc.int64).dtype == fc.int64


def test_new_empty_strided_errors():
    x = fc.zeros(1)
    with pytest.raises(RuntimeError, match="dimensionality of sizes"):
        torch.zeros(1).new_empty_strided((2, 3), (1,))
    with pytest.raises(fc.FlambeauError, match=r"^\[new_empty_strided\] size \[2, 3\] and stride \[1\] must have the"):
        x.new_empty_strided((2, 3), (1,))
    with pytest.raises(fc.FlambeauError, match=r"^\[new_empty_strided\] sizes and strides must be non-negative"):
        x.new_empty_strided((2, -3), (1, 2))
    with pytest.raises(fc.FlambeauError, match=r"^\[new_empty_strided\] .*too large"):
        x.new_empty_strided((2**62, 2**62), (1, 1))
    with pytest.raises(TypeError, match=r"^\[new_empty_strided\] expected stride as a tuple or list of ints, got int"):
        x.new_empty_strided((2, 3), 1)
    with pytest.raises(TypeError, match=r"^\[new_empty_strided\] expected a size of ints, got float at position 0"):
        x.new_empty_strided((2.0, 3), (1, 2))


# ---- Tensor.new: the legacy constructor ----


@pytest.mark.parametrize("name, ours, theirs", DTYPES)
def test_new_forms_match_torch(name, ours, theirs):
    x, t = fc.zeros(2, dtype=ours), torch.zeros(2, dtype=theirs)
    assert (x.new().dtype, tuple(x.new().shape)) == (ours, tuple(t.new().shape)) == (ours, (0,))
    assert tuple(x.new(2, 3).shape) == tuple(t.new(2, 3).shape) and x.new(2, 3).dtype == ours
    assert x.new(fc.zeros(4, 5).size()).shape == tuple(t.new(torch.zeros(4, 5).size()).shape)
    for data in ([1, 0], [[1, 2], [3, 0]], [], [True]):
        got, expected = x.new(data), t.new(data)
        assert got.dtype == ours and got.tolist() == expected.tolist()


def test_new_of_a_tensor_shares_its_memory():
    x, y = fc.zeros(1), fc.arange(6.0).reshape(2, 3)[:, 1:]
    z = x.new(y)
    assert z.data_ptr() == y.data_ptr() and z.stride() == y.stride() and z.tolist() == y.tolist()
    z.fill_(7.0)
    assert y.tolist() == [[7.0, 7.0], [7.0, 7.0]]
    w = fc.ones(2, requires_grad=True) if hasattr(fc.Tensor, "backward") else None
    if w is not None:
        assert not x.new(w).requires_grad


def test_new_errors_match_torch():
    x, t = fc.zeros(1, dtype=fc.float64), torch.zeros(1, dtype=torch.float64)
    cases = [
        ((2.5,), {}, TypeError, r"\[new\] expected new\(\*size\), new\(data\)"),
        ((fc.ones(2),), {}, TypeError, r"\[new\] expected a tensor of dtype float64 on \S+ to share, got float32"),
        ((-1,), {}, fc.FlambeauError, r"\[new\] Trying to create tensor with negative dimension"),
        ((3,), {"dtype": fc.int32}, TypeError, r"\[new\] unexpected keyword arguments \['dtype'\]"),
        (("a",), {}, TypeError, r"\[new\] expected new"),
    ]
    for args, kwargs, error, message in cases:
        targs = tuple(torch.ones(2) if isinstance(a, fc.Tensor) else a for a in args)
        tkwargs = {k: torch.int32 for k in kwargs}
        with pytest.raises((TypeError, RuntimeError)):
            t.new(*targs, **tkwargs)
        with pytest.raises(error, match=message):
            x.new(*args, **kwargs)
