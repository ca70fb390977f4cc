"""DLPack between flambeau and PyTorch 2.13, both ways: the same memory, no
copy, every dtype, views, 0-d and empty tensors, lifetimes."""

from __future__ import annotations

import gc
import weakref

import flambeau_core as fc
import flambeau_interop as fi
import numpy as np
import pytest
import torch
from conftest import collect
from flambeau_interop import _C

DTYPES = [
    (fc.bool, torch.bool),
    (fc.uint8, torch.uint8),
    (fc.int8, torch.int8),
    (fc.int16, torch.int16),
    (fc.int32, torch.int32),
    (fc.int64, torch.int64),
    (fc.float16, torch.float16),
    (fc.bfloat16, torch.bfloat16),
    (fc.float32, torch.float32),
    (fc.float64, torch.float64),
]


def torch_sample(dtype, shape=(3, 4)):
    x = torch.arange(int(np.prod(shape))).reshape(shape) % 50 - 5
    return (x % 3 == 0) if dtype == torch.bool else x.to(dtype)


@pytest.mark.parametrize("fb_dtype,torch_dtype", DTYPES)
def test_torch_to_flambeau_every_dtype(fb_dtype, torch_dtype):
    src = torch_sample(torch_dtype)
    t = fi.from_dlpack(src)
    assert t.dtype == fb_dtype
    assert t.shape == tuple(src.shape) and t.stride() == src.stride()
    assert t.data_ptr() == src.data_ptr()
    assert torch.equal(torch.from_dlpack(t), src)  # and back again, still the same memory
    assert torch.from_dlpack(t).data_ptr() == src.data_ptr()


@pytest.mark.parametrize("fb_dtype,torch_dtype", DTYPES)
def test_flambeau_to_torch_every_dtype(fb_dtype, torch_dtype):
    t = fc.empty(3, 4, dtype=fb_dtype)
    u = torch.from_dlpack(t)
    assert u.dtype == torch_dtype and tuple(u.shape) == (3, 4)
    assert u.data_ptr() == t.data_ptr()


def test_writes_are_seen_on_both_sides():
    t = fc.zeros(2, 3)
    u = torch.from_dlpack(t)
    u[1, 2] = 4.0
    assert t.tolist()[1][2] == 4.0
    t[0, 0] = -2.0
    assert u[0, 0].item() == -2.0
    src = torch.zeros(4, dtype=torch.int64)
    s = fi.from_dlpack(src)
    s[3] = 11
    assert src[3].item() == 11
    src.add_(1)
    assert s.tolist() == [1, 1, 1, 12]


def test_non_contiguous_views_both_ways():
    base = torch.arange(24.0).reshape(4, 6)
    for src in (base.t(), base[1:, ::2], base[2], base[:, 3], base.unsqueeze(1).expand(4, 3, 6)):
        t = fi.from_dlpack(src)
        assert t.data_ptr() == src.data_ptr() and t.stride() == src.stride()
        assert t.tolist() == src.tolist()
    fb = fc.arange(24, dtype=fc.float32).reshape(4, 6)
    for view in (fb.t(), fb[1:, ::2], fb[3], fb.select(1, 2), fc.ones(3).expand(2, 3)):
        u = torch.from_dlpack(view)
        assert u.data_ptr() == view.data_ptr() and u.stride() == view.stride()
        assert u.tolist() == view.tolist()


@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (1,)])
def test_scalars_and_empty_both_ways(shape):
    src = torch.full(shape, 3.0)
    t = fi.from_dlpack(src)
    assert t.shape == shape and t.numel() == src.numel()
    u = torch.from_dlpack(fc.full(shape, 3.0))
    assert tuple(u.shape) == shape and torch.equal(u, src)
    if shape == ():
        assert t.item() == 3.0


def test_torch_producer_outlives_its_python_object():
    src = torch.arange(1000.0)
    ptr = src.data_ptr()
    t = fi.from_dlpack(src)
    del src
    gc.collect()
    torch.ones(1000) * 5  # churn torch's allocator; our memory must stay ours
    assert t.data_ptr() == ptr
    assert t.tolist() == [float(i) for i in range(1000)]


def test_flambeau_producer_kept_alive_by_torch_then_freed():
    a = np.arange(6, dtype=np.float32)
    ref = weakref.ref(a)
    t = fi.from_numpy(a)
    del a
    u = torch.from_dlpack(t)
    tref = weakref.ref(t)
    assert _C._storage_use_count(t) == 2  # the flambeau tensor and torch's DLPack context
    del t
    collect()
    assert tref() is None and ref() is not None
    u[0] = 9.0
    assert ref()[0] == 9.0
    del u
    collect()
    assert ref() is None  # torch called our deleter: the NumPy array is released


def test_torch_from_dlpack_of_raw_flambeau_capsules():
    t = fc.arange(5, dtype=fc.int32)
    for cap in (t.__dlpack__(), t.__dlpack__(max_version=(1, 0))):
        u = torch.from_dlpack(cap)
        assert u.data_ptr() == t.data_ptr() and u.tolist() == [0, 1, 2, 3, 4]


def test_torch_asks_for_copies():
    t = fc.arange(4, dtype=fc.float32)
    c = torch.from_dlpack(t, copy=True)
    assert c.data_ptr() != t.data_ptr() and c.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.from_dlpack(t, copy=False).data_ptr() == t.data_ptr()
    c = fi.from_dlpack(torch.arange(3.0), copy=True)
    assert c.tolist() == [0.0, 1.0, 2.0]


def test_torch_rejections_surface_as_python_errors():
    with pytest.raises(BufferError, match="require gradient"):
        fi.from_dlpack(torch.ones(2, requires_grad=True))
    with pytest.raises((TypeError, BufferError, RuntimeError), match="(?i)complex|conj"):
        fi.from_dlpack(torch.ones(2, dtype=torch.complex64).conj())  # torch's lazy conj bit
    with pytest.raises(TypeError, match=r"\[from_dlpack\] unsupported DLPack dtype complex32"):
        fi.from_dlpack(torch.ones(2, dtype=torch.complex32))
