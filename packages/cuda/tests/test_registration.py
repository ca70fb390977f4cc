"""flambeau-cuda's registration and error paths: these run on any machine (a GPU is not needed)."""

from __future__ import annotations

import os

import flambeau_alloc
import flambeau_core as fc
import flambeau_cuda
import pytest
from conftest import HAS_GPU, requires_no_gpu
from flambeau_cuda import _C


def test_import_registers_the_backend():
    # Without flambeau-cuda, core says "flambeau-cuda is not installed"; with it, the backend answers.
    assert fc.cuda.device_count() == flambeau_cuda.device_count() >= 0
    assert fc.cuda.is_available() == flambeau_cuda.is_available() == HAS_GPU
    if not HAS_GPU:
        with pytest.raises(RuntimeError) as info:
            fc.zeros(2, device="cuda")
        assert "not installed" not in str(info.value)
        assert "flambeau-cuda is installed" in str(info.value)


@requires_no_gpu
def test_no_gpu_counts():
    assert fc.cuda.is_available() is False
    assert fc.cuda.device_count() == 0
    assert flambeau_cuda.unavailable_reason() != ""  # the CUDA runtime's own error, e.g. no driver


@requires_no_gpu
@pytest.mark.parametrize(
    "make",
    [
        lambda: fc.zeros(2, device="cuda"),
        lambda: fc.ones(2, 3, device="cuda:0"),
        lambda: fc.empty(4, device="cuda"),
        lambda: fc.ones(3).to("cuda"),
        lambda: fc.ones(3).cuda(),
    ],
)
def test_no_gpu_tensors_raise(make):
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        make()


@requires_no_gpu
def test_no_gpu_memory_functions():
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "memory_stats"):
        with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
            getattr(fc.cuda, name)()
    fc.cuda.empty_cache()  # as torch.cuda.empty_cache: nothing to release
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        fc.cuda.memory_snapshot()
    fc.cuda.manual_seed(0)  # as torch: lazy, a no-op without a GPU
    fc.cuda.manual_seed_all(0)
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        fc.cuda.get_device_name()
    for device in (None, 0, "cuda:0"):  # torch built with CUDA raises RuntimeError too (no driver, no device)
        with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
            fc.cuda.mem_get_info(device)
    with pytest.raises(ValueError, match=r"\[mem_get_info\] invalid CUDA device index 0 \(0 devices\)"):
        _C._mem_get_info(0)
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        fc.cuda.current_stream()
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        fc.cuda.synchronize()


def test_memory_functions_are_registered():
    names = (
        "memory_allocated max_memory_allocated memory_reserved max_memory_reserved memory_stats "
        "memory_snapshot empty_cache get_device_name manual_seed mem_get_info"
    ).split()
    for name in names:
        assert callable(getattr(fc.cuda, name))
    with pytest.raises(AttributeError):
        fc.cuda.no_such_function  # noqa: B018


def test_cuda_errors_become_exceptions_naming_the_call():
    with pytest.raises(RuntimeError, match=r"\[cuda\] cudaMalloc failed: out of memory \(cudaErrorMemoryAllocation\)"):
        _C._check_error(2, "cudaMalloc")
    with pytest.raises(ValueError, match=r"\[cuda\] cudaMemcpyAsync failed: invalid argument"):
        _C._check_error(1, "cudaMemcpyAsync")
    _C._check_error(0, "cudaFree")  # success raises nothing


def test_runtime_is_linked_statically():
    assert _C._runtime_version() >= 13000  # no driver needed to ask


def _cublas_present() -> bool:
    try:
        flambeau_cuda.load_cublas()
    except RuntimeError:
        return False
    return True


def test_cublas_missing_names_the_wheel():
    if _cublas_present():
        pytest.skip("cuBLAS is installed here")
    with pytest.raises(RuntimeError, match=r"pip install nvidia-cublas") as info:
        flambeau_cuda.load_cublas()
    assert "libcublas.so.13" in str(info.value)
    assert flambeau_cuda.cublas_path() == ""


def test_alloc_raw_backend_header_is_installed():
    path = os.path.join(flambeau_alloc.get_include(), "flambeau_alloc", "raw_backend.h")
    assert os.path.isfile(path)


def test_caching_allocator_over_a_capsule():
    a = flambeau_alloc.CachingAllocator._from_raw_backend(_C._pinned_memory(), "test pinned", fc.device("cpu"))
    assert a.backend == "cuda pinned host (cudaHostAlloc)"
    assert a.memory_allocated() == 0 and a.memory_reserved() == 0
    a.empty_cache()


def test_caching_allocator_capsule_errors():
    import ctypes

    wrong = ctypes.pythonapi.PyCapsule_New
    wrong.restype = ctypes.py_object
    wrong.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    cap = wrong(ctypes.c_void_p(1), b"something.else", None)
    with pytest.raises(TypeError, match="expected a capsule named 'flambeau_alloc.RawBackend'"):
        flambeau_alloc.CachingAllocator._from_raw_backend(cap, "x", fc.device("cpu"))
    cap = _C._pinned_memory()
    flambeau_alloc.CachingAllocator._from_raw_backend(cap, "first", fc.device("cpu"))
    with pytest.raises(ValueError, match="taken already"):
        flambeau_alloc.CachingAllocator._from_raw_backend(cap, "second", fc.device("cpu"))
