"""NumPy <-> flambeau without copies: from_numpy, Tensor.numpy(), __array__,
__array_interface__ (oracle: NumPy itself)."""

from __future__ import annotations

import sys
import time
import warnings
import weakref

import flambeau_core as fc
import flambeau_interop as fi
import numpy as np
import pytest
from conftest import NUMPY_DTYPES, collect, sample
from flambeau_interop import _C


def addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


# ---- from_numpy ----


@pytest.mark.parametrize("fb_dtype,np_dtype", NUMPY_DTYPES)
def test_from_numpy_every_dtype_shares_memory(fb_dtype, np_dtype):
    a = sample(np_dtype)
    t = fi.from_numpy(a)
    assert t.dtype == fb_dtype
    assert t.shape == a.shape
    assert t.stride() == tuple(s // a.itemsize for s in a.strides)
    assert t.data_ptr() == addr(a)
    assert _C._storage_is_external(t)
    np.testing.assert_array_equal(t.numpy(), a)
    if fb_dtype != fc.float16:  # core reads float16 elements only through other libraries so far
        np.testing.assert_array_equal(np.array(t.tolist(), dtype=np_dtype), a)


def test_from_numpy_writes_are_seen_both_ways():
    a = np.zeros((2, 3), dtype=np.float32)
    t = fi.from_numpy(a)
    a[1, 2] = 5.0
    assert t.tolist()[1][2] == 5.0
    t[0, 1] = 7.0  # core's __setitem__ writes into NumPy's memory
    assert a[0, 1] == 7.0


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.T,
        lambda a: a[:, ::2],
        lambda a: a[1:, 1:3],
        lambda a: a[::2, ::3],
        lambda a: np.broadcast_to(a[:1], (4, 6)),
        lambda a: a.reshape(3, 2, 4).transpose(2, 0, 1),
    ],
    ids=["T", "step", "slice", "steps", "broadcast", "permute"],
)
def test_from_numpy_non_contiguous_views_keep_their_strides(make):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    a = make(base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # broadcast_to is read-only (tested below)
        t = fi.from_numpy(a)
    assert t.shape == a.shape
    assert t.stride() == tuple(s // 8 for s in a.strides)
    assert t.data_ptr() == addr(a)
    np.testing.assert_array_equal(np.array(t.tolist()), a)
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 2, 5), (1,), (1, 1)])
def test_from_numpy_scalars_and_empty(shape):
    a = np.full(shape, 4.5, dtype=np.float32)
    t = fi.from_numpy(a)
    assert t.shape == shape
    assert t.numel() == a.size
    back = t.numpy()
    assert back.shape == shape and back.dtype == np.float32
    if a.size:
        assert t.data_ptr() == addr(a)
        np.testing.assert_array_equal(back, a)
    if shape == ():
        assert t.item() == 4.5


def test_from_numpy_keeps_the_array_alive_exactly_as_long_as_the_storage():
    a = np.arange(5, dtype=np.int64)
    ref = weakref.ref(a)
    before = sys.getrefcount(a)
    t = fi.from_numpy(a)
    assert sys.getrefcount(a) == before + 1  # one reference, held by the storage
    view = t[1:]
    del a, t
    collect()
    assert ref() is not None  # the view still uses the memory
    assert view.tolist() == [1, 2, 3, 4]
    del view
    collect()
    assert ref() is None  # freed as soon as the last user is gone


def test_from_numpy_then_numpy_then_drop_everything_but_the_last_view():
    a = np.arange(6, dtype=np.float32)
    ref = weakref.ref(a)
    b = fi.from_numpy(a).numpy()  # ndarray -> Tensor -> ndarray, no copy
    assert addr(b) == addr(ref())
    del a
    collect()
    assert ref() is not None
    b[0] = 42.0
    assert ref()[0] == 42.0
    del b
    collect()
    assert ref() is None


def test_from_numpy_read_only_array_warns_and_shares():
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        t = fi.from_numpy(a)
    assert t.data_ptr() == addr(a)


def test_from_numpy_accepts_subclasses_and_keeps_int_width():
    m = np.arange(4, dtype=np.intc).view(np.ma.MaskedArray)
    assert fi.from_numpy(m).dtype == fc.int32
    assert fi.from_numpy(np.arange(3, dtype=np.longlong)).dtype == fc.int64


@pytest.mark.parametrize(
    "value,words",
    [
        (np.arange(3, dtype=np.clongdouble), "complex256"),
        (np.array([1, "a"], dtype=object), "object"),
        (np.zeros(3, dtype="datetime64[s]"), "datetime64"),
        (np.zeros(3, dtype="timedelta64[s]"), "timedelta64"),
        (np.array(["ab"]), "<U2"),
        (np.arange(3, dtype=np.longdouble), "float128"),
    ],
)
def test_from_numpy_rejects_unsupported_dtypes(value, words):
    with pytest.raises(TypeError, match=r"\[from_numpy\].*" + words):
        fi.from_numpy(value)


def test_from_numpy_rejects_non_native_byte_order():
    with pytest.raises(TypeError, match=r"\[from_numpy\] the array's byte order.*>f4"):
        fi.from_numpy(np.arange(3, dtype=">f4"))


def test_from_numpy_rejects_negative_strides():
    with pytest.raises(ValueError, match=r"\[from_numpy\].*negative stride.*copy"):
        fi.from_numpy(np.arange(4.0)[::-1])
    # A negative stride that never moves is harmless.
    assert fi.from_numpy(np.arange(4.0)[:1][::-1]).tolist() == [0.0]


def test_from_numpy_rejects_strides_that_split_elements():
    rec = np.zeros(4, dtype=[("a", np.int8), ("b", np.float32)])
    with pytest.raises(ValueError, match=r"\[from_numpy\].*multiple of its element size"):
        fi.from_numpy(rec["b"])


@pytest.mark.parametrize("value", [[1.0, 2.0], 3.0, None, memoryview(b"abc")])
def test_from_numpy_rejects_non_arrays(value):
    with pytest.raises(TypeError, match=r"\[from_numpy\] expected a numpy.ndarray, got"):
        fi.from_numpy(value)


def test_from_numpy_is_fast():
    a = np.ones(16, dtype=np.float32)
    for _ in range(100):
        fi.from_numpy(a)
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        fi.from_numpy(a)
    per_call = (time.perf_counter() - start) / n
    assert per_call < 20e-6, f"from_numpy took {per_call * 1e6:.1f} us per call"


# ---- Tensor.numpy ----


@pytest.mark.parametrize("fb_dtype,np_dtype", NUMPY_DTYPES)
def test_numpy_every_dtype_is_a_view(fb_dtype, np_dtype):
    t = fi.from_numpy(sample(np_dtype)).reshape(3, 2)  # reshape of a contiguous tensor: a view
    a = t.numpy()
    assert a.dtype == np_dtype
    assert a.shape == (3, 2)
    assert addr(a) == t.data_ptr()
    assert a.base is t
    assert a.flags.writeable


def test_numpy_of_core_made_tensors_and_views():
    t = fc.arange(12, dtype=fc.float32).reshape(3, 4)
    np.testing.assert_array_equal(t.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    for view in (t.t(), t[:, 1::2], t[2], t.select(1, 3), fc.zeros(3).expand(2, 3), t.unsqueeze(0)):
        a = view.numpy()
        assert addr(a) == view.data_ptr()
        assert a.strides == tuple(s * 4 for s in view.stride())
        np.testing.assert_array_equal(a, np.array(view.tolist(), dtype=np.float32))


def test_numpy_writes_are_seen_both_ways():
    t = fc.zeros(2, 3)
    a = t.numpy()
    a[0, 2] = 3.5
    assert t.tolist()[0][2] == 3.5
    t[1, 0] = -1.0
    assert a[1, 0] == -1.0


def test_numpy_keeps_the_tensor_alive():
    t = fc.arange(4, dtype=fc.int64)
    ref = weakref.ref(t)
    a = t.numpy()
    del t
    collect()
    assert ref() is not None and a.base is ref()
    assert a.tolist() == [0, 1, 2, 3]
    del a
    collect()
    assert ref() is None


def test_numpy_of_empty_and_scalar_tensors():
    assert fc.zeros(0, 3).numpy().shape == (0, 3)
    s = fc.tensor(2.5).numpy()
    assert s.shape == () and s[()] == 2.5


def test_numpy_rejects_dtypes_numpy_lacks():
    t = fc.empty(2, dtype=fc.bfloat16)
    with pytest.raises(TypeError, match=r"\[numpy\] dtype bfloat16 has no NumPy equivalent"):
        t.numpy()
    with pytest.raises(TypeError, match=r"\[__array_interface__\] dtype bfloat16"):
        t.__array_interface__  # noqa: B018


def test_numpy_force_is_keyword_only():
    t = fc.zeros(2)
    assert t.numpy(force=True).base is t
    with pytest.raises(TypeError):
        t.numpy(True)


# ---- __array__ and __array_interface__ ----


def test_array_protocol_shares_memory():
    t = fc.arange(6, dtype=fc.float64).reshape(2, 3)
    a = np.asarray(t)
    assert addr(a) == t.data_ptr()
    a2 = t.__array__()
    assert addr(a2) == t.data_ptr() and a2.base is t
    np.testing.assert_array_equal(np.add(t, 1), np.arange(6).reshape(2, 3) + 1)


def test_array_protocol_dtype_and_copy():
    t = fc.arange(3, dtype=fc.int32)
    f = t.__array__(np.float64)
    assert f.dtype == np.float64 and f.tolist() == [0.0, 1.0, 2.0]
    assert t.__array__(np.int32, copy=False).base is t  # same dtype: still a view
    c = t.__array__(copy=True)
    assert addr(c) != t.data_ptr() and c.tolist() == [0, 1, 2]
    assert not np.shares_memory(np.array(t, copy=True), t.numpy())
    with pytest.raises(ValueError, match=r"\[__array__\] converting int32 to float64 needs a copy"):
        t.__array__(np.float64, copy=False)


@pytest.mark.parametrize("fb_dtype,np_dtype", NUMPY_DTYPES)
def test_array_interface_describes_the_memory(fb_dtype, np_dtype):
    t = fi.from_numpy(sample(np_dtype, (3, 4)))
    for view in (t, t.t(), t[:, 1:3]):
        iface = view.__array_interface__
        assert iface["version"] == 3
        assert iface["shape"] == view.shape
        assert np.dtype(iface["typestr"]) == np.dtype(np_dtype)
        assert iface["data"] == (view.data_ptr(), False)
        if view.is_contiguous():
            assert iface["strides"] is None
        else:
            assert iface["strides"] == tuple(s * np.dtype(np_dtype).itemsize for s in view.stride())

        class Holder:  # NumPy reads the interface of any object
            __array_interface__ = iface

        np.testing.assert_array_equal(np.asarray(Holder()), view.numpy())


def test_protocol_methods_are_attached_to_core_tensor():
    for name in ("numpy", "__array__", "__array_interface__", "__dlpack__", "__dlpack_device__"):
        assert name in vars(fc.Tensor), name


def test_from_numpy_rejects_misaligned_data():
    a = np.frombuffer(bytearray(17), dtype=np.float32, offset=1)
    assert not a.flags.aligned
    with pytest.raises(ValueError, match=r"\[from_numpy\] the array's data is not aligned to its 4-byte elements"):
        fi.from_numpy(a)


def test_unbound_methods_reject_non_tensors():
    with pytest.raises(TypeError, match=r"\[numpy\] expected a Tensor, got int"):
        fc.Tensor.numpy(3)
    with pytest.raises(TypeError):
        fc.Tensor.__dlpack__(3)
