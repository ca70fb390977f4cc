"""flambeau-cuda: the CUDA device for flambeau (Note [CUDA backend] in src/backend.cpp).

Importing this package registers the CUDA backend with flambeau-core through
the public device API (docs/design/devices.md): device count, streams, events,
a stream-aware caching allocator per GPU and one for pinned host memory (both
flambeau-alloc's ``CachingAllocator``), and the CUDA kernels. Afterwards
``flambeau_core.cuda`` (``fb.cuda``) is live: ``is_available()``,
``device_count()``, streams, events, the memory functions
(``memory_allocated``, ``memory_stats``, ``memory_snapshot``,
``empty_cache``, ...), ``mem_get_info``, ``get_device_name`` and ``manual_seed``.

Without a driver or a GPU the import still succeeds: ``is_available()`` is
False, ``device_count()`` is 0 and creating a CUDA tensor raises "no CUDA GPU
is available". cuBLAS is loaded at the first matrix product (from the
``nvidia-cublas`` wheel, or the system).

Example:
    >>> import flambeau_core as fc, flambeau_cuda
    >>> fc.cuda.device_count() >= 0
    True
"""

from __future__ import annotations

import site
import sys
from typing import Any

import flambeau_alloc
import flambeau_core
from flambeau_core import _device_modules

from flambeau_cuda import _C

__all__ = ["cublas_path", "device_count", "is_available", "load_cublas", "unavailable_reason"]

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("flambeau-cuda")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0+unknown"


def _site_dirs() -> list[str]:
    dirs = [p for p in sys.path if p.endswith("site-packages") or p.endswith("dist-packages")]
    try:
        dirs += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:  # some virtualenvs lack them
        pass
    out: list[str] = []
    for d in dirs:
        if d not in out:
            out.append(d)
    return out


def _register() -> int:
    n = _C._register_backend()
    device_allocators = [
        flambeau_alloc.CachingAllocator._from_raw_backend(
            _C._device_memory(i), "cuda caching", flambeau_core.device(f"cuda:{i}")
        )
        for i in range(n)
    ]
    pinned = flambeau_alloc.CachingAllocator._from_raw_backend(
        _C._pinned_memory(), "cuda pinned", flambeau_core.device("cpu")
    )
    _C._install(device_allocators, pinned)
    _C._set_cublas_search_dirs(_site_dirs())
    _device_modules.register_memory_functions("cuda", _memory_functions(device_allocators, pinned))
    return n


def _module() -> Any:
    return flambeau_core.device_module("cuda")


def _memory_functions(device_allocators: list[Any], pinned: Any) -> dict[str, Any]:
    def allocator(device: Any) -> Any:
        if not device_allocators:
            flambeau_core._C._require_device("cuda")  # "no CUDA GPU is available"
        return device_allocators[_module()._index(device)]

    def memory_snapshot() -> list[dict]:
        if not device_allocators:
            flambeau_core._C._require_device("cuda")  # as torch: "no CUDA GPU is available"
        out: list[dict] = []
        for a in device_allocators:
            out.extend(a.memory_snapshot())
        return out

    def empty_cache() -> None:
        # As torch.cuda.empty_cache: a no-op before any GPU memory exists.
        for a in device_allocators:
            a.empty_cache()
        pinned.empty_cache()

    def get_device_name(device: Any = None) -> str:
        if not device_allocators:
            flambeau_core._C._require_device("cuda")
        return _C._get_device_name(_module()._index(device))

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        """(free, total) bytes of a GPU as the driver counts them (cudaMemGetInfo), as torch.cuda.mem_get_info:
        free excludes what this process's caching allocator holds too."""
        if not device_allocators:
            flambeau_core._C._require_device("cuda")
        return _C._mem_get_info(_module()._index(device))

    def manual_seed(seed: int) -> None:
        """Seeds the generator of the current CUDA device (lazily, as torch: a no-op without a GPU)."""
        if device_allocators:
            _C._manual_seed(_module().current_device(), int(seed))

    def manual_seed_all(seed: int) -> None:
        """Seeds the generators of every CUDA device."""
        for i in range(len(device_allocators)):
            _C._manual_seed(i, int(seed))

    def initial_seed() -> int:
        if not device_allocators:
            flambeau_core._C._require_device("cuda")
        return _C._initial_seed(_module().current_device())

    funcs: dict[str, Any] = _device_modules.per_device_memory_functions(allocator)
    funcs["memory_snapshot"] = memory_snapshot
    funcs["empty_cache"] = empty_cache
    funcs["get_device_name"] = get_device_name
    funcs["manual_seed"] = manual_seed
    funcs["manual_seed_all"] = manual_seed_all
    funcs["initial_seed"] = initial_seed
    funcs["mem_get_info"] = mem_get_info
    funcs["empty_host_cache"] = pinned.empty_cache
    return funcs


def is_available() -> bool:
    """True if the CUDA runtime sees at least one GPU."""
    return _module().is_available()


def device_count() -> int:
    """Number of CUDA GPUs (0 without a driver or a GPU)."""
    return _module().device_count()


def prepare_for_tests() -> str | None:
    """The ``flambeau.test_devices`` hook of flambeau_core.testing: None when a GPU can run the
    ``on_devices`` cases, else why not (they are skipped with that reason)."""
    return None if is_available() else f"no CUDA GPU ({unavailable_reason() or 'none found'})"


def unavailable_reason() -> str:
    """Why no GPU is available (the CUDA runtime's error), or '' when GPUs were found."""
    return _C._unavailable_reason()


def load_cublas() -> str:
    """Loads cuBLAS now (it is otherwise loaded at the first matrix product); returns its path.

    Raises RuntimeError naming the wheel to install (``pip install nvidia-cublas``) when it is missing.
    """
    return _C._load_cublas(_site_dirs())


def cublas_path() -> str:
    """The cuBLAS library loaded, or '' if none was loaded yet."""
    return _C._cublas_path()


# __cuda_array_interface__ (version 3) typestr of each dtype; bfloat16 has none.
_TYPESTR = {
    "bool": "|b1",
    "uint8": "|u1",
    "int8": "|i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "complex64": "<c8",
    "complex128": "<c16",
}


def _cuda_array_interface(self: Any) -> dict:
    """Numba's CUDA Array Interface (version 3) of a CUDA tensor, as torch.Tensor.__cuda_array_interface__.

    An AttributeError on a tensor that is not on a CUDA device (so ``hasattr`` is False there).
    ``stream`` is the tensor's device's current stream (1: the legacy default stream): a consumer
    orders its reads after the work enqueued there.
    """
    if self.device.type != "cuda":
        raise AttributeError(f"[__cuda_array_interface__] only CUDA tensors have it; this tensor is on {self.device}")
    if self.requires_grad:
        raise RuntimeError("[__cuda_array_interface__] can't export a tensor that requires grad; use tensor.detach()")
    name = str(self.dtype).rsplit(".", 1)[-1]
    if name not in _TYPESTR:
        raise TypeError(f"[__cuda_array_interface__] dtype {name} has no typestr in the CUDA Array Interface")
    itemsize = self.element_size()
    strides = None if self.is_contiguous() else tuple(s * itemsize for s in self.stride())
    stream = _module().current_stream(self.device)
    return {
        "typestr": _TYPESTR[name],
        "shape": tuple(self.shape),
        "strides": strides,
        "data": (self.data_ptr() if self.numel() > 0 else 0, False),
        "version": 3,
        "stream": _C._stream_handle(stream._s),
    }


flambeau_core.Tensor.__cuda_array_interface__ = property(_cuda_array_interface)  # type: ignore[attr-defined]

_register()
