"""Tensor.view(dtype) (src/generic/complex_views.cpp: views that read memory as another dtype) against
PyTorch: pairs of dtypes on contiguous and sliced tensors (shape, strides, offset, the bytes read),
shared memory, not differentiable, the meta device, and the error paths."""

from __future__ import annotations

import itertools

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128", "uint16", "uint32", "uint64"]  # fmt: skip
SLICES = {"whole": lambda t: t, "rows": lambda t: t[1:], "columns": lambda t: t[:, 8:16]}


def _pair(shape, dtype, bits=False):
    """The same bytes as a flambeau and a torch tensor of `dtype`; only 0/1 bytes for a bool tensor or when
    `bits` (bytes read as bool must be 0 or 1: others are undefined in both libraries)."""
    raw = np.random.default_rng(0).integers(0, 256, size=int(np.prod(shape)) * 8, dtype=np.uint8)
    if dtype == "bool" or bits:
        raw = raw % 2
    tt = torch.from_numpy(raw).view(getattr(torch, dtype))[: int(np.prod(shape))].reshape(shape)
    return fc.tensor(raw).view(getattr(fc, dtype))[: int(np.prod(shape))].reshape(shape), tt


def _bytes(t, lib):
    flat = t.contiguous().reshape(-1).view(lib.uint8)
    return to_numpy(flat) if lib is fc else flat.numpy()


def _same(ours, theirs):
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride())
    assert ours.storage_offset() == theirs.storage_offset()
    np.testing.assert_array_equal(_bytes(ours, fc), _bytes(theirs, torch))


@pytest.mark.parametrize("where", sorted(SLICES))
@pytest.mark.parametrize("src,dst", list(itertools.product(["uint8", "int16", "float32", "float64"], DTYPES)))
def test_view_dtype_reads_the_same_bytes_as_torch(src, dst, where):
    ft, tt = (SLICES[where](t) for t in _pair((3, 16), src, bits=dst == "bool"))
    try:
        theirs = tt.view(getattr(torch, dst))
    except RuntimeError as e:
        with pytest.raises(fc.FlambeauError) as info:
            ft.view(getattr(fc, dst))
        assert str(e).split(" to view ")[0] in str(info.value)  # the condition, in torch's words
        return
    _same(ft.view(getattr(fc, dst)), theirs)


def test_view_dtype_shares_memory():
    x = fc.zeros(4)
    v = x.view(fc.int32)
    v[1] = 1065353216  # the bits of 1.0f
    assert x.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert v._is_view and v.data_ptr() == x.data_ptr()


def test_view_dtype_is_not_differentiable_as_torch():
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")
    x = fc.zeros(4, requires_grad=True)
    assert x.view(fc.int32).requires_grad is False and x.view(fc.float32).requires_grad is False
    t = torch.zeros(4, requires_grad=True)
    assert t.view(torch.int32).requires_grad is False and t.view(torch.float32).requires_grad is False


def test_view_dtype_of_a_scalar_and_of_empty_tensors():
    _same(fc.tensor(1.5).view(fc.int32), torch.tensor(1.5).view(torch.int32))
    _same(fc.zeros(0, 4).view(fc.int8), torch.zeros(0, 4).view(torch.int8))
    _same(fc.zeros(0, 8, dtype=fc.int8).view(fc.float32), torch.zeros(0, 8, dtype=torch.int8).view(torch.float32))


def test_view_dtype_on_the_meta_device():
    m = fc.empty(3, 8, dtype=fc.int8, device="meta").view(fc.float64)
    assert m.shape == (3, 1) and m.dtype == fc.float64 and m.device.type == "meta"


@pytest.mark.parametrize(
    "make,dtype,words",
    [
        (lambda: fc.tensor(1.0), fc.int8, "[view] self.dim() cannot be 0 to view float32 as int8"),
        (lambda: fc.zeros(3, 2).t(), fc.int8, "[view] self.stride(-1) must be 1 to view float32 as int8"),
        (lambda: fc.zeros(3, dtype=fc.int8), fc.float32, "[view] self.size(-1) must be divisible by 4"),
        (lambda: fc.zeros(3, 6, dtype=fc.int8)[:, :4], fc.int32, "[view] self.stride(0) must be divisible by 4"),
        (lambda: fc.zeros(8, dtype=fc.int8)[1:5], fc.int16, "[view] self.storage_offset() must be divisible by 2"),
    ],
)
def test_view_dtype_errors_name_the_condition(make, dtype, words):
    with pytest.raises(fc.FlambeauError) as info:
        make().view(dtype)
    assert words in str(info.value)


def test_view_with_a_dtype_is_not_read_as_sizes():
    # A dtype converts to an int in pybind11: view(int64) once meant view(5).
    assert fc.zeros(2, dtype=fc.float64).view(fc.int64).shape == (2,)


def test_view_dtype_sizes_near_the_int64_limit():
    """On the meta device (no memory): 2**59 float64 elements are 2**62 int8 ones, and back; the rescaled
    sizes and strides are exact at that scale."""
    big = fc.empty(2**59, dtype=fc.float64, device="meta")
    small = big.view(fc.int8)
    assert small.shape == (2**62,) and small.stride() == (1,)
    assert small.view(fc.float64).shape == (2**59,)
    wide = fc.empty(2**28, 2**30, dtype=fc.int8, device="meta")
    assert wide.view(fc.int64).shape == (2**28, 2**27) and wide.view(fc.int64).stride() == (2**27, 1)
    with pytest.raises(fc.FlambeauError, match=r"\[view\] self.size\(-1\) must be divisible by 8"):
        fc.empty(2**60 - 1, dtype=fc.int8, device="meta").view(fc.float64)
