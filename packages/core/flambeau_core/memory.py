"""flambeau_core.memory: core's allocator registry (Note [Allocator registry] in flambeau/allocator.h).

One current allocator per device type; each storage is freed by the allocator
that made it, so the current one can be swapped at any time. ``flambeau.memory``
re-exports these next to flambeau-alloc's caching allocator and statistics.

Example:
    >>> from flambeau_core import memory
    >>> memory.get_allocator("cpu").name in ("system", "caching")
    True
"""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core._C import Allocator, get_allocator, set_allocator, system_allocator

__all__ = ["Allocator", "allocator_from_c_abi", "get_allocator", "set_allocator", "system_allocator"]


def allocator_from_c_abi(table_address: int) -> Allocator:
    """Wraps an allocator given as a C ABI table, by address, as an :class:`Allocator`.

    ``table_address`` is the address of a ``struct fb_allocator_v1`` (declared in
    ``flambeau/allocator.h``: ``abi_version`` = 1, ``ctx``, ``allocate``,
    ``deallocate``, optional ``release`` and ``name``), e.g. from
    ``ctypes.addressof`` or a shared library's exported symbol. Core copies the
    table at once; the functions it points to must stay valid while any tensor
    they allocated is alive.

    The address is **trusted**: core reads it without being able to check it, so
    a wrong address crashes the process. That is why this lives in
    ``flambeau_core.memory`` (and ``flambeau.memory``), not in the top-level
    namespace. Only the form is checked: ``TypeError`` for a non-int,
    ``ValueError`` for a negative int, one of 2**64 or more, or 0 (NULL), or for
    a table with the wrong ``abi_version`` or a missing function.

    Example:
        >>> import ctypes
        >>> from flambeau_core import memory
        >>> libc = ctypes.CDLL(None)
        >>> libc.aligned_alloc.restype = ctypes.c_void_p
        >>> libc.aligned_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        >>> libc.free.argtypes = [ctypes.c_void_p]
        >>> ALLOCATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
        >>> DEALLOCATE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
        >>> class Table(ctypes.Structure):
        ...     _fields_ = [("abi_version", ctypes.c_uint32), ("ctx", ctypes.c_void_p),
        ...                 ("allocate", ALLOCATE), ("deallocate", DEALLOCATE),
        ...                 ("release", ctypes.c_void_p), ("name", ctypes.c_char_p)]
        >>> allocate = ALLOCATE(lambda ctx, n: libc.aligned_alloc(64, (n + 63) // 64 * 64))
        >>> deallocate = DEALLOCATE(lambda ctx, p, n: libc.free(p))
        >>> table = Table(1, None, allocate, deallocate, None, b"libc")
        >>> memory.allocator_from_c_abi(ctypes.addressof(table)).name
        'libc'
    """
    return _C._allocator_from_c_abi(table_address)
