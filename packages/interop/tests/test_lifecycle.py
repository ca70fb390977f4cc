"""Crossing module boundaries and lifetimes at the edges: the C++ roundtrip,
storages released on threads that do not hold the GIL, interpreter shutdown,
and gradients (which need flambeau-autograd)."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap
import threading
import weakref

import flambeau_core as fc
import flambeau_interop as fi
import numpy as np
import pytest
from conftest import NUMPY_DTYPES, DLManagedTensor, collect, read_capsule, sample
from flambeau_interop import _C


@pytest.mark.parametrize("fb_dtype,np_dtype", NUMPY_DTYPES)
def test_roundtrip_through_cpp_keeps_identity_dtype_and_refcount(fb_dtype, np_dtype):
    t = fi.from_numpy(sample(np_dtype))
    before = sys.getrefcount(t)
    for _ in range(10):
        back = _C._roundtrip(t)
        assert back is t
        assert back.dtype == fb_dtype
        del back
    assert sys.getrefcount(t) == before


def test_roundtrip_of_views_and_rejection_of_non_tensors():
    t = fc.arange(6, dtype=fc.float32).reshape(2, 3)
    v = t.t()
    assert _C._roundtrip(v) is v
    with pytest.raises(TypeError):
        _C._roundtrip(np.ones(3))


def _release_without_gil(tensor_factory):
    """Exports a tensor, drops every Python owner, then calls the capsule's
    deleter through ctypes, which releases the GIL around the call: the
    storage (and the NumPy array it wraps) dies on a thread without the GIL."""
    a = np.arange(8, dtype=np.float64)
    ref = weakref.ref(a)
    t = tensor_factory(a)
    cap = t.__dlpack__()
    del a, t
    collect()
    managed = read_capsule(cap)
    deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(ctypes.cast(managed.deleter, ctypes.c_void_p).value)
    ptr = ctypes.addressof(managed)
    ctypes.pythonapi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    assert ctypes.pythonapi.PyCapsule_SetName(cap, b"used_dltensor") == 0  # we consume it ourselves
    assert ref() is not None
    return ref, deleter, ptr, cap


def test_numpy_array_released_from_a_thread_without_the_gil():
    ref, deleter, ptr, _cap = _release_without_gil(fi.from_numpy)
    deleter(ptr)  # GIL released by ctypes during the call
    assert ref() is None


def test_numpy_array_released_from_another_native_thread():
    ref, deleter, ptr, _cap = _release_without_gil(fi.from_dlpack)
    worker = threading.Thread(target=deleter, args=(ptr,))
    worker.start()
    worker.join()
    assert ref() is None


def test_storage_dying_on_a_python_thread():
    a = np.arange(4.0)
    ref = weakref.ref(a)
    box = [fi.from_numpy(a)]
    del a
    worker = threading.Thread(target=box.clear)
    worker.start()
    worker.join()
    collect()
    assert ref() is None


def test_interpreter_shutdown_with_live_foreign_memory_is_clean():
    code = textwrap.dedent(
        """
        import numpy as np, torch, flambeau_core as fc, flambeau_interop as fi

        class Cycle:
            pass

        keep = []
        for i in range(20):
            a = np.arange(100.0)
            t = fi.from_numpy(a)
            c = Cycle(); c.self = c; c.t = t; c.view = t[1:]       # garbage cycles
            keep.append(torch.from_dlpack(t))                      # torch owns our storage
            keep.append(fi.from_dlpack(torch.arange(10.0)))        # we own torch's memory
            keep.append(t.__dlpack__(max_version=(1, 0)))          # unconsumed capsules
            keep.append(fi.from_dlpack(np.arange(5)).numpy())
        GLOBAL = fi.from_numpy(np.ones(3))
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert "Fatal" not in done.stderr and "Error" not in done.stderr


def test_importing_interop_leaves_numpy_unloaded_until_needed():
    code = (
        "import sys, flambeau_core as fc, flambeau_interop; "
        "t = fc.ones(2); c = t.__dlpack__(); print('numpy' in sys.modules); "
        "t.numpy(); print('numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


# ---- gradients: tensors that require grad are not exported silently ----


@pytest.fixture
def grad_tensor():
    autograd = pytest.importorskip("flambeau_autograd", reason="requires_grad tensors need flambeau-autograd")
    assert autograd
    return fc.ones(3, requires_grad=True)


def test_numpy_of_a_tensor_requiring_grad_raises(grad_tensor):
    with pytest.raises(RuntimeError, match=r"\[numpy\] can't convert a tensor that requires grad.*detach"):
        grad_tensor.numpy()
    with pytest.raises(RuntimeError, match=r"\[__array__\] can't convert a tensor that requires grad"):
        np.asarray(grad_tensor.__array__())
    with pytest.raises(RuntimeError, match=r"\[__array_interface__\]"):
        grad_tensor.__array_interface__  # noqa: B018
    assert grad_tensor.numpy(force=True).tolist() == [1.0, 1.0, 1.0]


def test_numpy_of_a_tensor_requiring_grad_under_no_grad(grad_tensor):
    # As PyTorch: the refusal guards the graph, so with grad mode off the array is handed out
    # (sharing memory), while __dlpack__ refuses in every mode (torch's words differ, its rule is the same).
    # Interop's tests run without flambeau-autograd: core's grad-mode switch is what its no_grad sets.
    import torch

    ref = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        want = ref.numpy()
        with pytest.raises(BufferError):
            ref.__dlpack__()
    fc._C._set_grad_enabled(False)
    try:
        got = grad_tensor.numpy()
        assert np.asarray(grad_tensor).tolist() == want.tolist()
        with pytest.raises(BufferError, match=r"\[__dlpack__\] can't export a tensor that requires grad"):
            grad_tensor.__dlpack__()
    finally:
        fc._C._set_grad_enabled(True)
    assert got.tolist() == want.tolist()
    assert np.shares_memory(got, grad_tensor.numpy(force=True))
    with pytest.raises(RuntimeError, match=r"\[numpy\] can't convert a tensor that requires grad"):
        grad_tensor.numpy()


def test_dlpack_of_a_tensor_requiring_grad_raises(grad_tensor):
    with pytest.raises(BufferError, match=r"\[__dlpack__\] can't export a tensor that requires grad"):
        grad_tensor.__dlpack__()


def test_bridge_detaches_tensors_requiring_grad(grad_tensor):
    import torch
    from flambeau_interop.torch_bridge import state_dict_to_torch

    out = state_dict_to_torch({"w": grad_tensor})["w"]
    assert out.data_ptr() == grad_tensor.data_ptr() and not out.requires_grad
    assert isinstance(out, torch.Tensor)


_ = DLManagedTensor  # re-exported for readers of _release_without_gil
