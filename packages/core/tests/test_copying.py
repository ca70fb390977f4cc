"""pickle and copy.deepcopy of tensors: values, dtype, shape survive; memory is not shared."""

import copy
import pickle

import flambeau_core as fc
import numpy as np
import pytest


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64, fc.int64, fc.bool])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3)])
def test_pickle_round_trip(dtype, shape):
    src = (fc.arange(int(np.prod(shape)) if shape else 1) * 7 - 3).to(dtype).reshape(shape)
    out = pickle.loads(pickle.dumps(src))
    assert out.dtype == dtype and out.shape == src.shape
    assert out.tolist() == src.tolist()
    if src.numel():
        assert out.data_ptr() != src.data_ptr()


def test_pickle_non_contiguous():
    src = fc.arange(12).reshape(3, 4).transpose(0, 1)
    out = pickle.loads(pickle.dumps(src))
    assert out.tolist() == src.tolist()
    assert out.is_contiguous()


def test_deepcopy_copies_memory():
    src = fc.ones(4)
    out = copy.deepcopy(src)
    out.add_(1)
    assert src.tolist() == [1.0] * 4
    assert out.tolist() == [2.0] * 4
    pair = copy.deepcopy([src, src])
    assert pair[0] is pair[1]


def test_dtypes_and_devices_pickle():
    for dt in [fc.bool, fc.uint8, fc.int64, fc.float16, fc.float32, fc.float64]:
        assert pickle.loads(pickle.dumps(dt)) == dt
    assert pickle.loads(pickle.dumps(fc.device("cpu"))) == fc.device("cpu")
