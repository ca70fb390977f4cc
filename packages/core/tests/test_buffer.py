"""The buffer protocol (tensors export their memory) and frombuffer (tensors
wrap any exporter's memory without a copy), with lifetimes on both sides."""

import gc
import subprocess
import sys
import threading
import weakref

import flambeau_core as fc
import numpy as np
import pytest

# ---- export: memoryview / NumPy over a tensor ----


@pytest.mark.parametrize(
    "dtype, fmt, np_dtype",
    [
        (fc.float32, "f", np.float32),
        (fc.float64, "d", np.float64),
        (fc.int64, "q", np.int64),
        (fc.int32, "i", np.int32),
        (fc.bool, "?", np.bool_),
        (fc.uint8, "B", np.uint8),
    ],
)
def test_memoryview_format_shape_strides(dtype, fmt, np_dtype):
    t = fc.zeros(2, 3, dtype=dtype)
    m = memoryview(t)
    assert m.format == fmt and m.shape == (2, 3) and not m.readonly
    assert m.strides == (3 * m.itemsize, m.itemsize)
    assert np.asarray(m).dtype == np_dtype


def test_numpy_view_shares_memory_and_strides():
    t = fc.arange(12.0).view(3, 4)
    a = np.asarray(memoryview(t))
    a[1, 2] = -5
    assert t[1, 2].item() == -5
    t[0, 0] = 42.0
    assert a[0, 0] == 42
    tt = t.T[:, ::2]
    b = np.asarray(memoryview(tt))
    np.testing.assert_array_equal(b, np.arange(12.0).reshape(3, 4).T[:, ::2] * 0 + b)  # shape/strides ok
    assert b.shape == (4, 2) and b.strides == (4, 32)
    assert b[0, 1] == t[2, 0].item()


def test_exported_buffer_keeps_tensor_alive():
    t = fc.arange(5.0)
    a = np.asarray(memoryview(t))
    del t
    gc.collect()
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


# ---- frombuffer ----


def test_frombuffer_bytearray_shares_both_ways():
    ba = bytearray(16)
    t = fc.frombuffer(ba, dtype=fc.int32)
    assert t.shape == (4,) and t.dtype == fc.int32
    t[1] = 7
    assert ba[4:8] == (7).to_bytes(4, "little")
    ba[0:4] = (123).to_bytes(4, "little")
    assert t[0].item() == 123
    assert t._allocator is None  # external memory


def test_frombuffer_numpy_shares_both_ways():
    a = np.arange(10, dtype=np.float64)
    t = fc.frombuffer(a, dtype=fc.float64)
    assert t.data_ptr() == a.ctypes.data
    t[3] = -1.0
    assert a[3] == -1.0
    a[4] = 99.0
    assert t[4].item() == 99.0
    v = t.view(2, 5)[1]
    v[0] = 5.5
    assert a[5] == 5.5


def test_frombuffer_offset_count_and_reinterpretation():
    a = np.arange(8, dtype=np.float32)
    t = fc.frombuffer(a, dtype=fc.float32, offset=8, count=3)
    assert t.tolist() == [2.0, 3.0, 4.0]
    assert t.data_ptr() == a.ctypes.data + 8
    raw = fc.frombuffer(a, dtype=fc.uint8)
    assert raw.shape == (32,)
    assert bytes(np.asarray(memoryview(raw))[4:8]) == np.float32(1).tobytes()


def test_frombuffer_readonly_bytes_is_copied_with_a_warning():
    # Note [frombuffer of read-only buffers]: writing must not change a bytes object.
    data = np.arange(4, dtype=np.int64).tobytes()
    with pytest.warns(UserWarning, match=r"\[frombuffer\] the given buffer of type bytes is not writable"):
        t = fc.frombuffer(data, dtype=fc.int64)
    assert t.tolist() == [0, 1, 2, 3]
    t.fill_(7)
    assert data == np.arange(4, dtype=np.int64).tobytes()
    one = b"A"  # CPython shares one-byte bytes objects: a write would change b"A" everywhere
    with pytest.warns(UserWarning, match="holds a copy of its 1 bytes"):
        fc.frombuffer(one, dtype=fc.uint8).fill_(66)
    assert one == b"A" and bytes([65]) == b"A"


@pytest.mark.parametrize(
    "make",
    [
        lambda: memoryview(bytearray(b"ABCD")).toreadonly(),
        lambda: np.frombuffer(b"ABCD", dtype=np.uint8),  # a read-only array
    ],
    ids=["readonly-memoryview", "readonly-ndarray"],
)
def test_frombuffer_copies_every_read_only_buffer(make):
    buf = make()
    with pytest.warns(UserWarning, match="not writable"):
        t = fc.frombuffer(buf, dtype=fc.uint8, offset=1, count=2)
    assert t.tolist() == [66, 67]
    t.fill_(0)
    assert bytes(buf) == b"ABCD"


def test_frombuffer_readonly_mmap_is_copied_not_mapped(tmp_path):
    # Writing through a read-only mapping would crash the process (SIGSEGV).
    import mmap

    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(8)))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        with pytest.warns(UserWarning, match="not writable"):
            t = fc.frombuffer(m, dtype=fc.uint8)
        t.fill_(1)
        assert m[:] == bytes(range(8))
    assert t.tolist() == [1] * 8  # the copy outlives the mapping


def test_frombuffer_of_a_writable_buffer_shares_memory_without_warning():
    import warnings

    buf = bytearray(b"AB")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = fc.frombuffer(buf, dtype=fc.uint8)
    t.fill_(66)
    assert buf == bytearray(b"BB")


def test_frombuffer_keeps_exporter_alive_exactly_as_long_as_needed():
    a = np.arange(6, dtype=np.float32)
    ref = weakref.ref(a)
    t = fc.frombuffer(a, dtype=fc.float32)
    v = t[2:]
    del a
    gc.collect()
    assert ref() is not None
    del t
    gc.collect()
    assert ref() is not None  # the view still holds the storage
    assert v.tolist() == [2.0, 3.0, 4.0, 5.0]
    del v
    gc.collect()
    assert ref() is None


def test_frombuffer_locks_resizable_exporter():
    ba = bytearray(8)
    t = fc.frombuffer(ba, dtype=fc.uint8)
    with pytest.raises(BufferError):
        ba.extend(b"12")
    del t
    gc.collect()
    ba.extend(b"12")  # released
    assert len(ba) == 10


def test_frombuffer_released_from_another_thread():
    a = np.zeros(1000, dtype=np.float32)
    ref = weakref.ref(a)
    box = [fc.frombuffer(a, dtype=fc.float32)]
    del a

    def drop():
        box.clear()

    th = threading.Thread(target=drop)
    th.start()
    th.join()
    gc.collect()
    assert ref() is None


def test_frombuffer_alive_at_interpreter_shutdown():
    code = (
        "import numpy as np, flambeau_core as fc\n"
        "a = np.arange(4.0)\n"
        "T = fc.frombuffer(a, dtype=fc.float64)\n"
        "V = T[1:]\n"
        "del a\n"
        "print(V.tolist())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1.0, 2.0, 3.0]"


def test_frombuffer_errors():
    with pytest.raises(TypeError, match=r"\[frombuffer\] expected an object with the buffer protocol.*list"):
        fc.frombuffer([1, 2], dtype=fc.int32)
    with pytest.raises(ValueError, match=r"\[frombuffer\].*not a multiple of the element size"):
        fc.frombuffer(bytearray(7), dtype=fc.int32)
    with pytest.raises(ValueError, match=r"\[frombuffer\] requested 3 elements"):
        fc.frombuffer(bytearray(8), dtype=fc.int32, count=3)
    with pytest.raises(ValueError, match=r"\[frombuffer\] requested"):
        fc.frombuffer(bytearray(8), dtype=fc.int64, count=2**62)
    with pytest.raises(ValueError, match=r"\[frombuffer\] offset"):
        fc.frombuffer(bytearray(8), dtype=fc.int32, offset=8)
    with pytest.raises(ValueError, match=r"must not be 0"):
        fc.frombuffer(bytearray(0), dtype=fc.int32)
    with pytest.raises(ValueError, match="not C-contiguous"):
        fc.frombuffer(np.arange(10.0)[::2], dtype=fc.float64)
    with pytest.raises(TypeError, match="dtype"):
        fc.frombuffer(bytearray(8), dtype="int32")


def test_memoryview_refuses_sizes_whose_byte_count_overflows():
    # 2**61 elements of 8 bytes, and an empty tensor whose sizes overflow
    # before the 0 when multiplied in order (as the buffer protocol does).
    for t in (
        fc.zeros(1, dtype=fc.float64).expand(2**61),
        fc.zeros(0, dtype=fc.float64).view(1, 0).expand(2**60, 0),
    ):
        with pytest.raises(BufferError) as info:
            memoryview(t)
        assert "[buffer] a tensor of shape" in str(info.value.__cause__)
        assert "its size in bytes overflows int64" in str(info.value.__cause__)
    assert memoryview(fc.zeros(0, 3)).shape == (0, 3)
