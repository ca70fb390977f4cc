"""Shared helpers of flambeau-interop's tests: dtype tables and a DLPack
reader written from the specification with ctypes (an oracle independent of
the C++ code under test)."""

from __future__ import annotations

import ctypes
import gc

import flambeau_core as fc
import flambeau_interop  # noqa: F401  (attaches the protocols to fc.Tensor)
import numpy as np
import pytest
from flambeau_interop.dlpack_abi import (  # noqa: F401  (re-exported to the tests)
    FLAG_IS_COPIED,
    FLAG_READ_ONLY,
    LEGACY_DELETER,
    VERSIONED_DELETER,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackVersion,
    DLTensor,
    kDLBfloat,
    kDLBool,
    kDLComplex,
    kDLCPU,
    kDLFloat,
    kDLInt,
    kDLUInt,
)

# flambeau dtype <-> NumPy dtype, for every dtype both sides have.
NUMPY_DTYPES = [
    (fc.bool, np.bool_),
    (fc.uint8, np.uint8),
    (fc.int8, np.int8),
    (fc.int16, np.int16),
    (fc.int32, np.int32),
    (fc.int64, np.int64),
    (fc.float16, np.float16),
    (fc.float32, np.float32),
    (fc.float64, np.float64),
]


def sample(np_dtype, shape=(2, 3)) -> np.ndarray:
    """Distinct, exactly representable values of a dtype."""
    n = int(np.prod(shape))
    if np_dtype == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 100 - (0 if np.dtype(np_dtype).kind == "u" else 7)).astype(np_dtype).reshape(shape)


def collect() -> None:
    """Only the youngest generation: flambeau frees memory when the last
    reference drops, so lifetime tests must not need the cycle collector."""
    gc.collect(0)


# DLPack structures (the oracle, from the specification): flambeau_interop.dlpack_abi.


_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def capsule_name(capsule) -> str:
    return _api.PyCapsule_GetName(capsule).decode()


def read_capsule(capsule):
    """The managed tensor inside an unconsumed capsule (a ctypes view of it)."""
    name = capsule_name(capsule)
    ptr = _api.PyCapsule_GetPointer(capsule, name.encode())
    cls = DLManagedTensorVersioned if name == "dltensor_versioned" else DLManagedTensor
    return cls.from_address(ptr)


def dl_summary(managed) -> dict:
    dl = managed.dl_tensor
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    strides = tuple(dl.strides[i] for i in range(dl.ndim)) if dl.strides else None
    return {
        "data": dl.data + dl.byte_offset if dl.data else dl.byte_offset,
        "device": (dl.device.device_type, dl.device.device_id),
        "dtype": (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes),
        "shape": shape,
        "strides": strides,
    }


class HandMadeCapsule:
    """A DLPack capsule built by hand over a NumPy buffer, whose deleter
    counts its calls: the oracle for "the producer's deleter runs exactly once".

    The capsule has no destructor of its own, so only a consumer calls the
    deleter."""

    def __init__(
        self, array: np.ndarray, *, versioned: bool, flags: int = 0, dtype=None, version=(1, 0), device=kDLCPU
    ):
        self.array = array
        self.calls = 0
        self.shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
        self.strides = (ctypes.c_int64 * max(array.ndim, 1))(*(s // array.itemsize for s in array.strides))
        code_bits = (
            dtype
            or {
                "f": (kDLFloat, array.itemsize * 8),
                "i": (kDLInt, array.itemsize * 8),
                "u": (kDLUInt, array.itemsize * 8),
                "b": (kDLBool, 8),
            }[array.dtype.kind]
        )
        dl = DLTensor(
            data=array.ctypes.data,
            device=DLDevice(device, 0),
            ndim=array.ndim,
            dtype=DLDataType(code_bits[0], code_bits[1], 1),
            shape=ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)),
            strides=ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)),
            byte_offset=0,
        )
        if versioned:
            self.deleter = VERSIONED_DELETER(self._on_delete)
            self.managed = DLManagedTensorVersioned(DLPackVersion(*version), None, self.deleter, flags, dl)
            name = b"dltensor_versioned"
        else:
            self.deleter = LEGACY_DELETER(self._on_delete)
            self.managed = DLManagedTensor(dl, None, self.deleter)
            name = b"dltensor"
        self.capsule = _api.PyCapsule_New(ctypes.addressof(self.managed), name, None)

    def _on_delete(self, _ptr) -> None:
        self.calls += 1


@pytest.fixture
def hand_made():
    return HandMadeCapsule
