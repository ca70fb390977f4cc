"""set_ and resize_ (src/generic/set_resize.cpp) and resize_as_, against PyTorch: shapes, strides, offsets,
shared storage, the bytes a grown storage keeps, and the errors."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices


def geometry(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def test_set_shows_the_source():
    x, src = fc.zeros(2, 3), fc.arange(12.0).view(3, 4)[1:, ::2]
    assert x.set_(src) is x
    assert geometry(x) == geometry(src)
    assert x.data_ptr() == src.data_ptr()
    src.fill_(7.0)
    np.testing.assert_array_equal(to_numpy(x), np.full((2, 2), 7.0, np.float32))


def test_set_errors():
    x = fc.zeros(2)
    message = r"^\[set_\] could not set a tensor of dtype float32 to a tensor of dtype float64"
    with pytest.raises(TypeError, match=message):
        x.set_(fc.zeros(2, dtype=fc.float64))
    assert tuple(x.shape) == (2,)


@pytest.mark.parametrize(
    ("start", "size"),
    [((2, 3), (3, 2)), ((2, 3), (4, 5)), ((6,), (2,)), ((2, 3), (2, 3)), ((0,), (3, 0)), ((2, 3), ())],
)
def test_resize_matches_torch(start, size):
    base = np.arange(int(np.prod(start)), dtype=np.float32).reshape(start)
    t, x = torch.tensor(base), fc.tensor(base)
    assert x.resize_(size) is x
    t.resize_(size)
    assert geometry(x) == (tuple(t.shape), tuple(t.stride()), t.storage_offset())
    # The elements the old storage held keep their values (the rest are uninitialized).
    kept = min(t.numel(), base.size)
    np.testing.assert_array_equal(to_numpy(x).reshape(-1)[:kept], t.reshape(-1)[:kept].numpy())


def test_resize_of_a_view_grows_past_its_offset():
    base = fc.arange(6.0)
    v = base[2:]
    v.resize_(10)
    assert geometry(v) == ((10,), (1,), 2)
    np.testing.assert_array_equal(to_numpy(v)[:4], [2.0, 3.0, 4.0, 5.0])
    v.fill_(1.0)  # every element of the grown storage is writable
    assert float(v.sum()) == 10.0


def test_resize_keeps_strides_of_the_same_shape_and_takes_a_memory_format():
    x, t = fc.zeros(2, 3).t(), torch.zeros(2, 3).t()
    x.resize_(3, 2)
    t.resize_(3, 2)
    assert tuple(x.stride()) == tuple(t.stride()) == (1, 3)
    x, t = fc.zeros(2, 3, 4, 5), torch.zeros(2, 3, 4, 5)
    x.resize_(2, 3, 4, 5, memory_format=fc.channels_last)
    t.resize_(2, 3, 4, 5, memory_format=torch.channels_last)
    assert tuple(x.stride()) == tuple(t.stride())


def test_resize_as_matches_torch():
    x = fc.zeros(3)
    assert x.resize_as_(fc.zeros(2, 2)) is x
    assert tuple(x.shape) == (2, 2)


def test_resize_errors():
    x = fc.zeros(2, 3)
    with pytest.raises(fc.FlambeauError, match=r"^\[resize_\] negative size in \(-1, 2\)"):
        x.resize_(-1, 2)
    with pytest.raises(fc.FlambeauError, match=r"^\[resize_\]"):
        x.resize_(2**62, 2**62)
    with pytest.raises(fc.FlambeauError, match=r"^\[resize_\]"):
        x.resize_(2, 3, memory_format=fc.channels_last)  # channels_last needs 4 dims
    with pytest.raises(TypeError, match=r"resize_as_"):
        x.resize_as_([2, 2])
    assert geometry(x) == ((2, 3), (3, 1), 0), "a refused resize changes nothing"


def test_zero_is_a_function_too():
    x = fc.ones(3)
    assert fc.zero_(x) is x
    np.testing.assert_array_equal(to_numpy(x), np.zeros(3, np.float32))


def test_function_forms():
    x = fc.zeros(3)
    assert fc.resize_as_(x, fc.zeros(2, 2)) is x
    assert tuple(x.shape) == (2, 2)
    y = fc.arange(6.0)
    assert fc.as_strided_(y, (2, 2), (1, 2)) is y
    np.testing.assert_array_equal(to_numpy(y), [[0.0, 2.0], [1.0, 3.0]])
