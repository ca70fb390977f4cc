"""DLPack kDLCUDA and __cuda_array_interface__ for CUDA tensors.

The error paths run everywhere; the GPU paths skip with "no CUDA GPU".
"""

from __future__ import annotations

import ctypes

import flambeau_core as fc
import flambeau_interop as fi
import numpy as np
import pytest
from conftest import HAS_GPU, requires_gpu
from flambeau_interop.dlpack_abi import DLDataType, DLDevice, DLManagedTensor, DLTensor, kDLCUDA


def _fake_cuda_capsule(device_id: int):
    """A legacy 'dltensor' capsule claiming 4 float32 on cuda:<device_id> (never dereferenced)."""
    shape = (ctypes.c_int64 * 1)(4)
    managed = DLManagedTensor()
    managed.dl_tensor = DLTensor(256, DLDevice(kDLCUDA, device_id), 1, DLDataType(2, 32, 1), shape, None, 0)
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new(ctypes.addressof(managed), b"dltensor", None)
    return capsule, (managed, shape)  # keep the structs alive while the capsule is used


def test_cpu_tensors_have_no_cuda_array_interface():
    assert not hasattr(fc.ones(3), "__cuda_array_interface__")


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_dlpack_capsule_on_a_missing_gpu_is_refused():
    capsule, _keep = _fake_cuda_capsule(0)
    with pytest.raises(BufferError, match=r"on cuda:0, but flambeau-cuda sees no such CUDA GPU"):
        fi.from_dlpack(capsule)


def test_dlpack_capsule_on_a_gpu_out_of_range_is_refused():
    capsule, _keep = _fake_cuda_capsule(fc.cuda.device_count() + 3)
    with pytest.raises(BufferError, match="no such CUDA GPU"):
        fi.from_dlpack(capsule)


@requires_gpu
def test_dlpack_round_trip_shares_cuda_memory():
    x = fc.arange(6.0, device="cuda").reshape(2, 3)
    assert x.__dlpack_device__() == (kDLCUDA, x.device.index or 0)
    y = fi.from_dlpack(x)
    assert y.is_cuda and y.device == x.device and y.data_ptr() == x.data_ptr()
    y.add_(1)
    assert x.cpu().tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    z = fi.from_dlpack(x.__dlpack__(stream=None, max_version=(1, 0)))
    assert z.cpu().tolist() == x.cpu().tolist()
    with pytest.raises(TypeError, match="stream"):
        x.__dlpack__(stream="default")


@requires_gpu
def test_cuda_array_interface_v3():
    x = fc.arange(12.0, device="cuda").reshape(3, 4)
    cai = x.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (3, 4)
    assert cai["strides"] is None and cai["data"] == (x.data_ptr(), False)
    assert cai["stream"] == 1  # the legacy default stream
    t = x.t().__cuda_array_interface__
    assert t["strides"] == (4, 16)
    s = fc.cuda.Stream()
    with fc.cuda.stream(s):
        assert x.__cuda_array_interface__["stream"] not in (0, 1)
    with pytest.raises(TypeError, match="bfloat16"):
        x.to(fc.bfloat16).__cuda_array_interface__  # noqa: B018
    w = x.clone().requires_grad_(True)
    with pytest.raises(RuntimeError, match="requires grad"):
        w.__cuda_array_interface__  # noqa: B018
    np.testing.assert_array_equal(np.array(x.cpu().tolist()), np.arange(12.0).reshape(3, 4))
