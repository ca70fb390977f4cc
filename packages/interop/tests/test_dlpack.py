"""DLPack both ways, checked at the level of the specification: capsule names
and renaming, versioned vs legacy structures, flags, the deleter called
exactly once, and the error paths. NumPy is the other library here; PyTorch
is in test_torch.py."""

from __future__ import annotations

import sys
import warnings
import weakref

import flambeau_core as fc
import flambeau_interop as fi
import numpy as np
import pytest
from conftest import (
    FLAG_IS_COPIED,
    FLAG_READ_ONLY,
    NUMPY_DTYPES,
    HandMadeCapsule,
    capsule_name,
    collect,
    dl_summary,
    kDLBfloat,
    kDLBool,
    kDLComplex,
    kDLFloat,
    kDLInt,
    kDLUInt,
    read_capsule,
    sample,
)
from flambeau_interop import _C

DL_CODES = {
    fc.bool: (kDLBool, 8),
    fc.uint8: (kDLUInt, 8),
    fc.int8: (kDLInt, 8),
    fc.int16: (kDLInt, 16),
    fc.int32: (kDLInt, 32),
    fc.int64: (kDLInt, 64),
    fc.float16: (kDLFloat, 16),
    fc.bfloat16: (kDLBfloat, 16),
    fc.float32: (kDLFloat, 32),
    fc.float64: (kDLFloat, 64),
}


def addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


# ---- export: Tensor.__dlpack__ / __dlpack_device__ ----


def test_dlpack_device_is_cpu():
    assert fc.zeros(2).__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 3), (2, 0)])
def test_dlpack_capsule_kind_follows_max_version(max_version):
    t = fc.arange(6, dtype=fc.float32).reshape(2, 3)
    cap = t.__dlpack__(max_version=max_version)
    versioned = max_version is not None and max_version[0] >= 1
    assert capsule_name(cap) == ("dltensor_versioned" if versioned else "dltensor")
    m = read_capsule(cap)
    if versioned:
        assert (m.version.major, m.version.minor) == (1, 0)
        assert m.flags == 0
    assert dl_summary(m) == {
        "data": t.data_ptr(),
        "device": (1, 0),
        "dtype": (kDLFloat, 32, 1),
        "shape": (2, 3),
        "strides": (3, 1),
    }


@pytest.mark.parametrize("dtype", list(DL_CODES))
def test_dlpack_export_dtype_codes(dtype):
    t = fc.empty(3, dtype=dtype)
    cap = t.__dlpack__(max_version=(1, 0))
    assert dl_summary(read_capsule(cap))["dtype"] == (*DL_CODES[dtype], 1)


def test_dlpack_export_views_scalars_and_empty():
    t = fc.arange(24, dtype=fc.int64).reshape(4, 6)
    for view in (t.t(), t[1:, ::2], t[3], fc.tensor(5), fc.zeros(0, 3), fc.zeros(3).expand(2, 3)):
        cap = view.__dlpack__()  # must outlive the read
        s = dl_summary(read_capsule(cap))
        assert s["shape"] == view.shape
        assert s["strides"] == view.stride()
        if view.numel():
            assert s["data"] == view.data_ptr()


def test_dlpack_capsule_keeps_storage_alive_and_frees_it_once():
    a = np.arange(4, dtype=np.float64)
    ref = weakref.ref(a)
    t = fi.from_numpy(a)
    del a
    cap = t.__dlpack__()
    assert _C._storage_use_count(t) == 2  # the tensor and the capsule's context
    del t
    collect()
    assert ref() is not None  # only the capsule holds the memory now
    assert read_capsule(cap).dl_tensor.data == ref().ctypes.data
    del cap  # never consumed: its destructor calls our deleter
    collect()
    assert ref() is None


def test_dlpack_export_copy_true_makes_a_flagged_copy():
    t = fc.arange(6, dtype=fc.float32).reshape(2, 3).t()
    cap = t.__dlpack__(max_version=(1, 0), copy=True)
    m = read_capsule(cap)
    assert m.flags == FLAG_IS_COPIED
    s = dl_summary(m)
    assert s["data"] != t.data_ptr() and s["shape"] == (3, 2)
    copy = np.from_dlpack(t, copy=True)
    np.testing.assert_array_equal(copy, t.numpy())
    assert not np.shares_memory(copy, t.numpy())
    cap = t.__dlpack__(max_version=(1, 0), copy=False)
    assert read_capsule(cap).flags == 0 and read_capsule(cap).dl_tensor.data == t.data_ptr()


def test_dlpack_export_errors():
    t = fc.zeros(2)
    with pytest.raises(ValueError, match=r"\[__dlpack__\] stream must be None for a cpu tensor, got 1"):
        t.__dlpack__(stream=1)
    with pytest.raises(BufferError, match=r"\[__dlpack__\] can't export a tensor on cpu to DLPack device \(2, 0\)"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match=r"DLPack device \(1, 3\)"):
        t.__dlpack__(dl_device=(1, 3))
    assert capsule_name(t.__dlpack__(dl_device=(1, 0))) == "dltensor"
    with pytest.raises(TypeError, match=r"\[__dlpack__\] max_version must be a tuple of two ints"):
        t.__dlpack__(max_version=1)
    with pytest.raises(TypeError):
        t.__dlpack__(None)  # keyword-only, as the specification says


# ---- NumPy as the consumer ----


@pytest.mark.parametrize("fb_dtype,np_dtype", NUMPY_DTYPES)
def test_numpy_from_dlpack_of_flambeau(fb_dtype, np_dtype):
    t = fi.from_numpy(sample(np_dtype, (3, 4))).t()
    a = np.from_dlpack(t)
    assert a.dtype == np_dtype and a.shape == (4, 3)
    assert addr(a) == t.data_ptr()
    assert a.strides == tuple(s * a.itemsize for s in t.stride())


def test_numpy_from_dlpack_lifetime_and_writes():
    t = fc.zeros(5, dtype=fc.int32)
    ref = weakref.ref(t)
    a = np.from_dlpack(t)
    a[2] = 9
    assert t.tolist() == [0, 0, 9, 0, 0]
    del t
    collect()
    assert ref() is None  # the Python tensor is gone; its storage lives on in the capsule
    a[3] = 4
    assert a.tolist() == [0, 0, 9, 4, 0]


# ---- import: from_dlpack ----


@pytest.mark.parametrize("fb_dtype,np_dtype", NUMPY_DTYPES)
def test_from_dlpack_of_numpy_every_dtype(fb_dtype, np_dtype):
    a = sample(np_dtype, (2, 5))[:, 1::2]
    t = fi.from_dlpack(a)
    assert t.dtype == fb_dtype and t.shape == (2, 2)
    assert t.data_ptr() == addr(a)
    assert t.stride() == tuple(s // a.itemsize for s in a.strides)
    np.testing.assert_array_equal(t.numpy(), a)


def test_from_dlpack_of_numpy_keeps_it_alive_exactly_as_long_as_needed():
    a = np.arange(6, dtype=np.float32)
    ref = weakref.ref(a)
    t = fi.from_dlpack(a)
    view = t[2:]
    del a, t
    collect()
    assert ref() is not None
    view[0] = 50.0
    assert ref()[2] == 50.0
    del view
    collect()
    assert ref() is None


@pytest.mark.parametrize("versioned", [False, True])
def test_from_dlpack_capsule_is_renamed_and_deleter_runs_exactly_once(versioned):
    src = np.arange(8, dtype=np.int64).reshape(2, 4)
    h = HandMadeCapsule(src, versioned=versioned)
    t = fi.from_dlpack(h.capsule)
    assert capsule_name(h.capsule) == ("used_dltensor_versioned" if versioned else "used_dltensor")
    assert t.data_ptr() == src.ctypes.data and t.tolist() == src.tolist()
    views = [t.t(), t[1], fi.from_dlpack(t)]  # views, and a re-import through our own capsule
    exported = t.__dlpack__()
    del t
    collect()
    assert h.calls == 0
    del views
    collect()
    assert h.calls == 0  # the unconsumed export still holds the storage
    del exported
    collect()
    assert h.calls == 1
    with pytest.raises(ValueError, match=r"\[from_dlpack\] this DLPack capsule was already consumed"):
        fi.from_dlpack(h.capsule)
    assert h.calls == 1


def test_from_dlpack_rejections_leave_the_capsule_unconsumed():
    src = np.arange(4, dtype=np.float32)
    cases = [
        # complex64 and uint32 have flambeau dtypes
        (dict(dtype=(kDLComplex, 32)), TypeError, r"\[from_dlpack\] unsupported DLPack dtype complex32"),
        (dict(dtype=(kDLFloat, 8)), TypeError, r"unsupported DLPack dtype float8"),
        (
            dict(device=2),
            BufferError,
            r"\[from_dlpack\] this DLPack tensor is on cuda:0, but flambeau-cuda (sees no such CUDA GPU|is not inst)",
        ),
        (dict(version=(2, 0)), BufferError, r"\[from_dlpack\] the capsule uses DLPack 2.0"),
    ]
    for kwargs, exc, words in cases:
        h = HandMadeCapsule(src, versioned=True, **kwargs)
        with pytest.raises(exc, match=words):
            fi.from_dlpack(h.capsule)
        assert capsule_name(h.capsule) == "dltensor_versioned"
        assert h.calls == 0  # still the producer's to free


def test_from_dlpack_negative_strides_are_rejected():
    a = np.arange(5.0)[::-1]
    with pytest.raises(ValueError, match=r"\[from_dlpack\] the DLPack tensor has a negative stride \(-1"):
        fi.from_dlpack(a)


def test_from_dlpack_read_only_shares_with_a_warning():
    h = HandMadeCapsule(np.arange(3.0), versioned=True, flags=FLAG_READ_ONLY)
    with pytest.warns(UserWarning, match="read-only"):
        t = fi.from_dlpack(h.capsule)
    assert t.data_ptr() == h.array.ctypes.data
    a = np.arange(3.0)
    a.flags.writeable = False  # NumPy exports it flagged read-only
    with pytest.warns(UserWarning, match="read-only"):
        assert fi.from_dlpack(a).data_ptr() == addr(a)


def test_from_dlpack_copy_and_device_arguments():
    a = np.arange(4.0)
    c = fi.from_dlpack(a, copy=True)
    assert c.data_ptr() != addr(a) and c.tolist() == a.tolist()
    assert fi.from_dlpack(a, copy=False, device="cpu").data_ptr() == addr(a)
    with pytest.raises(ValueError, match=r"\[from_dlpack\] device must be None or 'cpu', got cuda"):
        fi.from_dlpack(a, device="cuda")


def test_from_dlpack_of_a_raw_capsule_from_numpy():
    a = np.arange(3, dtype=np.int16)
    for cap in (a.__dlpack__(), a.__dlpack__(max_version=(1, 0))):
        t = fi.from_dlpack(cap)
        assert t.dtype == fc.int16 and t.data_ptr() == addr(a)


class LegacyProducer:
    """A producer from before DLPack 1.0: __dlpack__ knows only `stream`."""

    def __init__(self, array):
        self.array = array
        self.calls = []

    def __dlpack__(self, stream=None):
        self.calls.append(stream)
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_from_dlpack_falls_back_to_the_legacy_call():
    p = LegacyProducer(np.arange(4, dtype=np.int64))
    t = fi.from_dlpack(p)
    assert p.calls == [None]  # first call (with max_version) raised TypeError, second succeeded
    assert t.data_ptr() == addr(p.array)
    c = fi.from_dlpack(LegacyProducer(np.arange(4, dtype=np.int64)), copy=True)
    assert c.data_ptr() != addr(p.array) and c.tolist() == [0, 1, 2, 3]


def test_from_dlpack_errors():
    with pytest.raises(TypeError, match=r"\[from_dlpack\] expected an object with __dlpack__ .* got list"):
        fi.from_dlpack([1, 2])

    class Bad:
        def __dlpack__(self, **kwargs):
            return 3

    with pytest.raises(TypeError, match=r"__dlpack__\(\) returned int, not a capsule"):
        fi.from_dlpack(Bad())

    import ctypes

    other = ctypes.pythonapi.PyCapsule_New
    other.restype = ctypes.py_object
    other.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    stranger = other(ctypes.c_void_p(8), b"not_a_tensor", None)
    with pytest.raises(TypeError, match=r"got a capsule named 'not_a_tensor'"):
        fi.from_dlpack(stranger)

    class OnGpu:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kwargs):
            raise BufferError("no copy to host")

    with pytest.raises(BufferError, match="copy=False was given"):
        fi.from_dlpack(OnGpu(), copy=False)
    with pytest.raises(BufferError, match="no copy to host"):
        fi.from_dlpack(OnGpu())


def test_exceptions_in_producers_propagate_and_leak_nothing():
    class Raising:
        def __dlpack__(self, **kwargs):
            raise RuntimeError("producer failed")

    with pytest.raises(RuntimeError, match="producer failed"):
        fi.from_dlpack(Raising())
    a = np.arange(3.0)
    before = sys.getrefcount(a)
    for _ in range(3):
        with pytest.raises(TypeError), warnings.catch_warnings():
            fi.from_dlpack(HandMadeCapsule(a, versioned=True, dtype=(kDLComplex, 32)).capsule)
    collect()
    assert sys.getrefcount(a) == before


def test_from_dlpack_rejects_misaligned_data():
    a = np.frombuffer(bytearray(17), dtype=np.float32, offset=1)
    h = HandMadeCapsule(a, versioned=True)
    with pytest.raises(ValueError, match=r"\[from_dlpack\] the DLPack tensor's data is not aligned to its 4-byte"):
        fi.from_dlpack(h.capsule)
    assert h.calls == 0 and capsule_name(h.capsule) == "dltensor_versioned"


def test_numpy_from_dlpack_of_scalars_and_empty():
    for t in (fc.zeros(0, 3), fc.tensor(2.5), fc.zeros(3, 0, 2, dtype=fc.int64)):
        a = np.from_dlpack(t)
        assert a.shape == t.shape
        np.testing.assert_array_equal(a, np.array(t.tolist()).reshape(t.shape))
    assert fi.from_dlpack(np.array(3.0)).item() == 3.0  # a 0-d array


def test_to_dlpack_round_trips_with_torch():
    import torch

    x = fc.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(fi.to_dlpack(x))
    assert t.tolist() == x.tolist() and t.data_ptr() == x.data_ptr()
    back = fi.from_dlpack(torch.to_dlpack(torch.arange(4)))
    assert back.tolist() == [0, 1, 2, 3] and back.dtype == fc.int64
    with pytest.raises(TypeError, match=r"\[to_dlpack\] expected a Tensor, got list"):
        fi.to_dlpack([1.0])
