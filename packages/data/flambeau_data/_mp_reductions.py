"""Shared-memory storages and the ForkingPickler reduction of tensors.

Note [Shared storages]: ``Tensor.share_memory_()`` copies a storage's bytes
into a new shared-memory *segment* (an ``mmap`` of a memfd or of a file in
``/dev/shm``) and makes the storage use that memory from then on (core's
``StorageImpl::replace_data``, Note [Moving a storage's memory]): the Storage
object is the same, so every tensor and view of it sees the shared memory at
once. The storage holds a buffer export of the segment (a ``_Segment``: a
ctypes array over the ``mmap``-ed bytes that carries how another process
reaches them, and unmaps them when collected), so the segment lives exactly as
long as the storage. (Not Python's ``mmap`` object: it keeps a second
descriptor of its own per mapping.) ``_BY_PTR`` maps a segment's
address to (a weak reference to) the segment: a tensor is shared when its
storage's first byte is a live segment's.

Sending a tensor (the reduction registered with ``ForkingPickler``, used by
every ``Queue``, ``SimpleQueue``, ``Pipe`` and process argument) shares it first
when it is not (as PyTorch does), then pickles a handle of its segment and the
view's dtype, shape, strides and offset; no tensor byte crosses the pipe. The
receiver maps the segment (once per process: a cache keyed by the segment's
identity) and rebuilds the view over it, so it shares the sender's memory.

Two ways to reach a segment (``set_sharing_strategy``):

- ``file_descriptor`` (default): the segment is a memfd (or a ``/dev/shm``
  file unlinked at once). The sender passes a duplicate of its descriptor
  (``multiprocessing.reduction.DupFd``: the spawning popen for process
  arguments, otherwise the resource sharer over a Unix socket). The kernel
  frees the memory when the last descriptor and mapping are gone, in any
  process. The sender must still be alive when the receiver unpickles. Each
  shared storage holds one descriptor open in each process that has it. A
  message carries a segment's descriptor once however many tensors of it it
  holds (the segment's ``_FdHandle`` is one object, which the pickler writes
  once): a spawning popen refuses the same descriptor twice (``bad value(s)
  in fds_to_keep``), and the receiver needs only one.
- ``file_system``: the segment is a named file in ``/dev/shm`` whose first
  page holds a reference count of the processes mapping it, changed under
  ``flock`` (the storage's bytes follow; no descriptor is kept open). Each
  process holds one reference per segment while it maps it; a message in
  flight holds one too (taken by the sender when pickling, handed to the
  receiver, as PyTorch's ``_shared_incref``); a forked child takes one for
  every segment it inherits; a process exiting drops its own. The name is
  unlinked when the count reaches zero. A message pickled but never received,
  or a process killed by a signal, leaks the segment's name (PyTorch's manager
  daemon would remove it when every process is gone; flambeau has none).

A storage keeps the strategy it was shared with. Memory flambeau does not own
(a NumPy array's, a DLPack capsule's, a buffer's given to ``frombuffer``)
cannot move: ``share_memory_`` refuses it, and sending such a tensor sends a
shared *copy* of it.
"""

from __future__ import annotations

import ctypes
import fcntl
import itertools
import mmap
import os
import threading
import weakref
from multiprocessing import reduction, util
from typing import Any

import flambeau_core as fc

from flambeau_data import _shm

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"

_HEADER = mmap.PAGESIZE  # file_system segments: a page holding the reference count, then the bytes
_LOCK = threading.RLock()
_BY_PTR: dict[int, weakref.ref] = {}  # storage address -> its segment (Note [Shared storages])
_RECEIVED: dict[Any, weakref.ref] = {}  # segment identity -> its mapping in this process
_counter = itertools.count()


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies this system supports: ``{"file_descriptor", "file_system"}``.

    Example:
        >>> import flambeau as fb
        >>> sorted(fb.multiprocessing.get_all_sharing_strategies())
        ['file_descriptor', 'file_system']
    """
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The strategy used to share tensors' storages from now on (default ``"file_descriptor"``).

    Example:
        >>> import flambeau as fb
        >>> fb.multiprocessing.get_sharing_strategy() in fb.multiprocessing.get_all_sharing_strategies()
        True
    """
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Sets how storages are shared from now on: ``"file_descriptor"`` or ``"file_system"``.

    A storage already shared keeps its strategy.

    Example:
        >>> import flambeau as fb
        >>> previous = fb.multiprocessing.get_sharing_strategy()
        >>> fb.multiprocessing.set_sharing_strategy("file_system")
        >>> fb.multiprocessing.get_sharing_strategy()
        'file_system'
        >>> fb.multiprocessing.set_sharing_strategy(previous)
    """
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(
            f"[set_sharing_strategy] unknown sharing strategy {new_strategy!r}; expected one of {list(_STRATEGIES)}"
        )
    _strategy = new_strategy


class _State:
    """What one process holds of one segment: its mapping, descriptor and (file_system) reference."""

    __slots__ = ("addr", "size", "fd", "path", "held")

    def __init__(self, addr: int, size: int, fd: int, path: str | None) -> None:
        self.addr, self.size, self.fd, self.path, self.held = addr, size, fd, path, path is not None


_LIVE: dict[int, _State] = {}  # id(state) -> state, for process exit and fork


def _release(state: _State, unmap: bool) -> None:
    """Drops this process's hold on a segment (its mapping only when no tensor can see it any more)."""
    _LIVE.pop(id(state), None)
    if state.fd >= 0:
        try:
            os.close(state.fd)
        except OSError:
            pass
        state.fd = -1
    if state.held:
        state.held = False
        _fs_add_ref(state.path, -1)
    if unmap and state.addr:
        _libc.munmap(state.addr, state.size)
        state.addr = 0


def _release_all_at_exit() -> None:
    # The mappings stay (tensors may still be read while the interpreter shuts down); the
    # references and descriptors go, so the last process to exit frees each segment.
    for state in list(_LIVE.values()):
        _release(state, unmap=False)


def _after_fork_in_child() -> None:
    # A forked child maps every segment of its parent: it takes a reference of its own
    # (file_system), released when its tensors go or it exits.
    for state in _LIVE.values():
        if state.path is not None:
            _fs_add_ref(state.path, +1)
            state.held = True


def _register_exit_hook(_: Any = None) -> None:
    util.Finalize(None, _release_all_at_exit, exitpriority=0)


class _Anchor:
    pass


_ANCHOR = _Anchor()
_register_exit_hook()
util.register_after_fork(_ANCHOR, _register_exit_hook)  # multiprocessing's children clear the exit hooks
os.register_at_fork(after_in_child=_after_fork_in_child)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value
_SEGMENT_TYPES: dict[int, type] = {}


def _segment_type(size: int) -> type:
    """A ctypes array type of ``size`` bytes whose instances carry attributes (cached per size)."""
    t = _SEGMENT_TYPES.get(size)
    if t is None:
        t = _SEGMENT_TYPES[size] = type("_Segment", (ctypes.c_char * size,), {})
    return t


def _map(fd: int, size: int, offset: int, kind: str, key: Any, path: str | None, keep_fd: bool) -> Any:
    """Maps ``size`` bytes of ``fd`` from ``offset`` as a segment object.

    The object exports the memory (buffer protocol), carries how another process
    reaches it, and unmaps it when collected. Not Python's ``mmap``: it keeps a
    second descriptor of its own, and cannot be told when an exporter is gone.
    """
    addr = _libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, offset)
    if addr is None or addr == _MAP_FAILED:
        err = ctypes.get_errno()
        raise OSError(err, f"[multiprocessing] mmap of a shared segment of {size} bytes failed: {os.strerror(err)}")
    state = _State(addr, size, fd if keep_fd else -1, path)
    seg = _segment_type(size).from_address(addr)
    seg.kind, seg.fd, seg.size, seg.key, seg.tensors, seg.addr = kind, fd if keep_fd else -1, size, key, {}, addr
    seg.name = os.path.basename(path) if path else ""
    seg.handle = _FdHandle(fd, key) if kind == "fd" else None
    _LIVE[id(state)] = state
    fin = weakref.finalize(seg, _release, state, True)
    fin.atexit = False  # at exit: _release_all_at_exit, which leaves the mappings
    _RECEIVED[key] = weakref.ref(seg, lambda r, k=key: _RECEIVED.pop(k, None) if _RECEIVED.get(k) is r else None)
    return seg


def _fs_add_ref(path: str | None, delta: int) -> int:
    """Adds ``delta`` to a file_system segment's reference count; unlinks it at zero. -1: gone."""
    if path is None:
        return -1
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        count = int.from_bytes(os.pread(fd, 8, 0), "little", signed=True) + delta
        os.pwrite(fd, count.to_bytes(8, "little", signed=True), 0)
        if count <= 0:
            _shm._unlink(path)
        return count
    finally:
        os.close(fd)  # releases the lock


def _new_segment(nbytes: int, what: str) -> Any:
    """A new zero-filled segment of ``nbytes`` under the current strategy."""
    if _strategy == "file_system":
        name = f"fbtensor_{os.getpid()}_{next(_counter)}_{os.urandom(4).hex()}"
        path = os.path.join(_shm.SHM_DIR, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _shm.reserve(fd, _HEADER + nbytes, what)
            os.pwrite(fd, (1).to_bytes(8, "little", signed=True), 0)  # this process's reference
            return _map(fd, nbytes, _HEADER, "fs", ("fs", name), path, keep_fd=False)
        except BaseException:
            _shm._unlink(path)
            raise
        finally:
            os.close(fd)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("flambeau_shared_tensor", os.MFD_CLOEXEC)
    else:  # shm_open + unlink: a file no other process can open by name
        path = os.path.join(_shm.SHM_DIR, f"fbtensor_{os.getpid()}_{next(_counter)}_{os.urandom(4).hex()}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        _shm._unlink(path)
    try:
        _shm.reserve(fd, nbytes, what)
        st = os.fstat(fd)
        return _map(fd, nbytes, 0, "fd", ("fd", st.st_dev, st.st_ino), None, keep_fd=True)
    except BaseException:
        os.close(fd)
        raise


def _register(t: fc.Tensor, seg: Any) -> None:
    ptr = t._storage_ptr
    ref = weakref.ref(seg, lambda r, p=ptr: _BY_PTR.pop(p, None) if _BY_PTR.get(p) is r else None)
    _BY_PTR[ptr] = ref


def _segment_of(t: fc.Tensor) -> Any:
    ref = _BY_PTR.get(t._storage_ptr) if t._storage_nbytes else None
    seg = ref() if ref is not None else None
    if seg is None or t._storage_nbytes > seg.size:
        return None
    return seg


def share_memory_(self: fc.Tensor) -> fc.Tensor:
    """Moves this tensor's storage into shared memory, in place; returns self.

    A no-op if the storage is shared already. Every tensor and view of the
    storage sees the shared memory afterwards (the Storage is the same; its
    address changes); values, version counter and autograd state are kept. The
    segment is freed when the last tensor viewing it, in any process, is gone.
    Raises RuntimeError for memory flambeau does not own (``from_numpy``,
    ``from_dlpack``, ``frombuffer``: moving would cut the tie with its owner;
    share ``t.clone()`` instead). Not thread-safe with respect to other threads
    using the tensor meanwhile (as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> t = fb.arange(3.0)
        >>> view = t[1:]
        >>> t.share_memory_() is t, t.is_shared(), view.is_shared()
        (True, True, True)
        >>> t.tolist()  # the values moved with it
        [0.0, 1.0, 2.0]
    """
    if not self.is_cpu:
        raise RuntimeError(f"[share_memory_] only cpu tensors can be moved to shared memory, got {self.device}")
    with _LOCK:
        if _segment_of(self) is not None:
            return self
        nbytes = self._storage_nbytes
        if nbytes == 0:
            return self  # nothing to move; sent as an empty tensor
        if self._allocator is None:
            raise RuntimeError(
                "[share_memory_] this tensor views memory that flambeau does not own (a NumPy array, a DLPack "
                "capsule or a buffer given to frombuffer): moving it to shared memory would cut the tie with its "
                "owner, whose writes would no longer be seen. Share a copy instead: t.clone().share_memory_()"
            )
        seg = _new_segment(nbytes, f"share_memory_ (a storage of {nbytes} bytes)")
        self._move_storage_(seg)
        _register(self, seg)
        # Received back here, a view of it is a view of this very storage.
        seg.tensors.setdefault(_shm.dtype_name(self.dtype), []).append(weakref.ref(self))
        return self


def is_shared(self: fc.Tensor) -> bool:
    """Whether this tensor's storage is in shared memory (``share_memory_``, or received from another process).

    Example:
        >>> import flambeau as fb
        >>> t = fb.zeros(2)
        >>> t.is_shared()
        False
        >>> t.share_memory_().is_shared()
        True
    """
    return self.is_cpu and _segment_of(self) is not None


# ---- sending and receiving ----


def _tensor_state(t: fc.Tensor) -> tuple[Any, ...]:
    cls = type(t)
    state = dict(t.__dict__) if cls is not fc.Tensor and hasattr(t, "__dict__") else None
    requires_grad = bool(getattr(t, "requires_grad", False))
    return (
        _shm.dtype_name(t.dtype),
        tuple(t.shape),
        tuple(t.stride()),
        t.storage_offset(),
        requires_grad,
        None if cls is fc.Tensor else cls,
        state,
    )


def reduce_tensor(t: fc.Tensor) -> tuple[Any, tuple[Any, ...]]:
    """The ForkingPickler reduction of a tensor: a handle of its shared segment and its view's layout.

    An unshared tensor is moved to shared memory first (``share_memory_``); one
    whose memory flambeau does not own is sent as a shared copy.

    Example:
        >>> import flambeau as fb
        >>> t = fb.tensor([1.0, 2.0])
        >>> rebuild, args = fb.multiprocessing.reduce_tensor(t)  # the receiving process calls rebuild(*args)
        >>> t.is_shared(), callable(rebuild)  # moved to shared memory
        (True, True)
    """
    if getattr(t, "requires_grad", False) and not getattr(t, "is_leaf", True):
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries. If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue)."
        )
    if not t.is_cpu:
        raise RuntimeError(f"[multiprocessing] only cpu tensors can be sent between processes, got {t.device}")
    meta = _tensor_state(t)
    original = t
    if t._storage_nbytes == 0:
        return (_rebuild_empty, meta)
    with _LOCK:
        seg = _segment_of(t)
        if seg is None:
            if t._allocator is None:  # memory of NumPy's, DLPack's...: send a shared copy, leave t alone
                src = t.detach() if hasattr(t, "detach") else t
                copy = fc.empty(tuple(t.shape), dtype=t.dtype)
                copy.copy_(src)
                share_memory_(copy)
                seg = _segment_of(copy)
                meta = (meta[0], meta[1], tuple(copy.stride()), 0, *meta[4:])
                t = copy
            else:
                share_memory_(t)
                seg = _segment_of(t)
        assert seg is not None
        nbytes = t._storage_nbytes
        if seg.kind == "fd":
            handle = seg.handle if t is original else _FdHandle(seg.fd, seg.key, seg)
            return (_rebuild_fd, (handle, nbytes, meta))
        _fs_add_ref(os.path.join(_shm.SHM_DIR, seg.name), +1)  # the message's reference
        return (_rebuild_fs, (seg.name, nbytes, meta))


def _rebuild_empty(*meta: Any) -> fc.Tensor:
    dtype, shape = _shm.dtype_from_name(meta[0]), meta[1]
    return _finish(fc.empty(shape, dtype=dtype), meta)


def _view_of(seg: Any, nbytes: int, meta: tuple[Any, ...]) -> fc.Tensor:
    """The view described by ``meta`` over ``seg`` (a storage shared with earlier receipts of it)."""
    dtype_name, shape, strides, offset = meta[:4]
    refs = seg.tensors.setdefault(dtype_name, [])
    base = None
    for r in refs:
        base = r()
        if base is not None and base._storage_ptr == seg.addr:  # (not re-pointed elsewhere since)
            break
        base = None
    if base is None:
        dtype = _shm.dtype_from_name(dtype_name)
        count = nbytes // _shm._itemsize(dtype)
        base = fc.frombuffer(seg, dtype=dtype, count=count)
        _register(base, seg)
    refs[:] = [r for r in refs if r() is not None and r()._storage_ptr == seg.addr]
    if hasattr(base, "detach"):  # a view of a tensor that requires grad would join its graph
        base = base.detach()
    t = base.as_strided(shape, strides, offset)
    refs.append(weakref.ref(t))
    return _finish(t, meta)


def _finish(t: fc.Tensor, meta: tuple[Any, ...]) -> fc.Tensor:
    requires_grad, cls, state = meta[4:7]
    if cls is not None:
        obj = cls.__new__(cls)
        fc.Tensor.__init__(obj, t)
        if state:
            obj.__dict__.update(state)
        t = obj
    if requires_grad:
        t.requires_grad_(True)
    return t


class _FdHandle:
    """How another process reaches a file_descriptor segment: pickled as a duplicate of its descriptor.

    One object per segment, so a message holding several tensors (views) of one
    segment carries its descriptor once (Note [Shared storages]).
    """

    __slots__ = ("fd", "key", "segment")

    def __init__(self, fd: int, key: Any, segment: Any = None) -> None:
        # segment: kept alive until pickled, for a shared copy no tensor holds meanwhile.
        self.fd, self.key, self.segment = fd, key, segment

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_ReceivedFd.receive, (reduction.DupFd(self.fd), self.key, os.getpid()))


class _ReceivedFd:
    """A segment's descriptor as received: handed to the segment's mapping, or closed."""

    __slots__ = ("fd", "key")

    def __init__(self, fd: int, key: Any) -> None:
        self.fd, self.key = fd, key

    @classmethod
    def receive(cls, df: Any, key: Any, sender: int) -> _ReceivedFd:
        try:
            return cls(df.detach(), key)
        except OSError as e:
            raise RuntimeError(
                f"[multiprocessing] could not receive a shared tensor's file descriptor from process {sender}: "
                f"{type(e).__name__}: {e}. With the 'file_descriptor' sharing strategy the sending process must "
                "still be alive when the tensor is received; keep it alive until then, or use "
                "flambeau.multiprocessing.set_sharing_strategy('file_system')."
            ) from e

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:  # a message whose tensors were never rebuilt
        self.close()


def _rebuild_fd(received: _ReceivedFd, nbytes: int, meta: tuple[Any, ...]) -> fc.Tensor:
    with _LOCK:
        ref = _RECEIVED.get(received.key)
        seg = ref() if ref is not None else None
        if seg is None:
            seg = _map(received.fd, nbytes, 0, "fd", received.key, None, keep_fd=True)
            received.fd = -1  # the mapping owns it now
        else:
            received.close()  # mapped here already (or by an earlier tensor of this message)
        return _view_of(seg, nbytes, meta)


def _rebuild_fs(name: str, nbytes: int, meta: tuple[Any, ...]) -> fc.Tensor:
    path = os.path.join(_shm.SHM_DIR, name)
    key = ("fs", name)
    with _LOCK:
        ref = _RECEIVED.get(key)
        seg = ref() if ref is not None else None
        if seg is not None:
            _fs_add_ref(path, -1)  # this process holds a reference already: drop the message's
        else:
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                raise RuntimeError(
                    f"[multiprocessing] the shared-memory segment {path} of a received tensor is gone "
                    "(file_system sharing strategy): was it received twice, or removed by hand?"
                ) from None
            try:
                # The message's reference becomes this process's.
                seg = _map(fd, nbytes, _HEADER, "fs", key, path, keep_fd=False)
            except BaseException:
                _fs_add_ref(path, -1)
                raise
            finally:
                os.close(fd)
        return _view_of(seg, nbytes, meta)


def _reducer_override(self: Any, obj: Any) -> Any:
    # Tensor and every subclass of it (nn.Parameter keeps its class and requires_grad).
    if isinstance(obj, fc.Tensor):
        return reduce_tensor(obj)
    return NotImplemented


def init_reductions() -> None:
    """Registers the tensor reduction with ``multiprocessing.reduction.ForkingPickler`` (done on import).

    Example:
        >>> import pickle
        >>> from multiprocessing.reduction import ForkingPickler
        >>> import flambeau as fb
        >>> fb.multiprocessing.init_reductions()  # idempotent
        >>> data = ForkingPickler.dumps(fb.tensor([3.0]))
        >>> pickle.loads(data).tolist()
        [3.0]
    """
    reduction.ForkingPickler.register(fc.Tensor, reduce_tensor)
    reduction.ForkingPickler.reducer_override = _reducer_override  # subclasses (Parameter) too
    fc.Tensor.share_memory_ = share_memory_
    fc.Tensor.is_shared = is_shared
