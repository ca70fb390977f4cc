"""fb.compile's entries in the extension cache: their size limit, least-recently-used eviction, clearing.

Note [Bounded compile cache]
fb.compile writes two kinds of entries under the extension cache's root (``$FLAMBEAU_EXTENSIONS_DIR``, else
``~/.cache/flambeau_extensions``), in one folder per Python version and flambeau ABI (``py311_<tag>``; an
upgrade starts a new one and leaves the old one behind):

* a fused kernel, the folder ``fused/fb_fused_<16 hex>/`` (its source, library, header list and build lock;
  Note [Fused kernel] in ``_cpp_kernel.py``);
* a check's record ``compile_checked/<40 hex>.json`` or hint ``<40 hex>.hint`` (Note [Checked captures] in
  ``_checked.py``), and a record's temporary file left by a writer that died (``<record>.<pid>.tmp``, an hour old).

Only names of these forms, in the ABI folders of the root, are entries; nothing else there (extensions built by
``cpp_extension.load``, a user's files) is ever removed. An entry's last use is its modification time: the
newest file of a kernel's folder (a process that loads the library sets the library's time), a record's or
hint's own (set when a capture uses it). ``config.cache_size_limit_mb`` bounds the sum of the entries' sizes
(disk blocks, as ``du`` counts them, over every ABI folder): past it, the least recently used entries are
removed until the sum is within it. None, the limit off, keeps everything.

The check scans the cache (a 9 MB cache of 2,223 entries in 25 ms), so it runs only after this process wrote an entry:
after its first, then each time the bytes it wrote since the last check pass a sixteenth of the limit. An
eviction never takes what is in use:

* a kernel's folder whose build lock another process holds (it is being built; the lock is taken without
  waiting), or whose library this process loaded;
* any entry used or written in the last minute (a process between creating a kernel's folder and taking its
  lock holds no lock yet); ``clear_cache`` ignores this and takes everything not locked.

Entries are written under temporary names and renamed into place (the library by ``cpp_extension``, a record by
``_checked.store``), so a reader finds a whole file or none. A kernel's folder is evicted by renaming it, under
its lock, to ``fused/.evicted-...`` and deleting that: a process that then looks for the kernel finds no folder
and builds it again (one whose folder went while it was building it, after ``clear_cache``, builds once
more: ``_cpp_kernel._build``). A library already loaded stays mapped after it is deleted (Linux), so a process using an
evicted kernel keeps running it. One process evicts at a time (``.compile_cache.lock`` in the root, taken
without waiting by the limit: a process that finds it held leaves the work to its holder; ``clear_cache``
waits), so a kernel's lock that is held is a build's, never another eviction's; what disappears between the
scan and its removal (a user's ``rm``) counts as removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator

MB = 1 << 20  # the setting's unit: a mebibyte
GRACE_S = 60.0  # an entry used more recently than this is kept by the limit (not by clear_cache)
_ORPHAN_S = 3600.0  # a record's temporary file older than this lost its writer

_ABI_DIR = re.compile(r"py\d+_[A-Za-z0-9._]+")
_KERNEL_DIR = re.compile(r"fb_fused_[0-9a-f]{16}")
_RECORD = re.compile(r"[0-9a-f]{40}\.(?:json|hint)")
_RECORD_TMP = re.compile(r"[0-9a-f]{40}\.json\.\d+\.tmp")
_EVICT_LOCK = ".compile_cache.lock"  # in the root: held while a process evicts
_EVICTED = re.compile(r"\.evicted-fb_fused_[0-9a-f]{16}-\d+-[0-9a-f]+")

_lock = threading.Lock()
_checked_once = False  # whether this process has checked the limit yet
_written = 0  # bytes this process wrote to the cache since its last check
_loaded: set[str] = set()  # the kernel folders whose library this process loaded
checks = 0  # how many times this process checked the limit (a test reads it)


def check_limit(value: object) -> None:
    """Raises if ``value`` is not a valid ``fb.compiler.config.cache_size_limit_mb``."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            "fb.compiler.config.cache_size_limit_mb must be a number of megabytes (MiB) or None (no limit), "
            f"got {type(value).__name__}"
        )
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            "fb.compiler.config.cache_size_limit_mb must be a positive, finite number of megabytes (MiB), "
            f"or None for no limit, got {value!r}"
        )


def _limit_bytes() -> int | None:
    from ._compiled import config

    limit = config.cache_size_limit_mb
    return None if limit is None else int(limit * MB)


def _root() -> str:
    from flambeau import _cpp_extension as ext

    return ext._cache_root()


def _disk_size(st: os.stat_result) -> int:
    return st.st_blocks * 512 if hasattr(st, "st_blocks") else st.st_size


def _folder_usage(path: str) -> tuple[int, float]:
    """(disk size, newest modification time) of the files under ``path``; a vanished folder is (0, 0)."""
    size, newest = 0, 0.0
    try:
        with os.scandir(path) as it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        sub, t = _folder_usage(e.path)
                        size, newest = size + sub, max(newest, t)
                    else:
                        st = e.stat(follow_symlinks=False)
                        size, newest = size + _disk_size(st), max(newest, st.st_mtime)
                except FileNotFoundError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        pass
    return size, newest


def _subdirs(path: str) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            yield from [e for e in it if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return


def _entries(root: str) -> list[tuple[float, int, str, str]]:
    """Every entry of the cache as (last use, size, kind, path), kind ``kernel``, ``record`` or ``orphan``."""
    found = []
    for abi in _subdirs(root):
        if not _ABI_DIR.fullmatch(abi.name):
            continue
        for d in _subdirs(os.path.join(abi.path, "fused")):
            if _KERNEL_DIR.fullmatch(d.name):
                size, newest = _folder_usage(d.path)
                found.append((newest, size, "kernel", d.path))
            elif _EVICTED.fullmatch(d.name):  # an eviction that died before deleting it
                size, _ = _folder_usage(d.path)
                found.append((0.0, size, "orphan", d.path))
        try:
            it = os.scandir(os.path.join(abi.path, "compile_checked"))
        except (FileNotFoundError, NotADirectoryError):
            continue
        with it:
            for e in it:
                tmp = _RECORD_TMP.fullmatch(e.name)
                if not (tmp or _RECORD.fullmatch(e.name)):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if tmp and time.time() - st.st_mtime < _ORPHAN_S:
                    continue  # being written
                found.append((st.st_mtime, _disk_size(st), "orphan" if tmp else "record", e.path))
    return found


def _remove_kernel(path: str) -> bool | None:
    """Removes a kernel's folder unless its build lock is held: True, False if it was gone, None if kept."""
    try:
        fd = os.open(os.path.join(path, "lock"), os.O_RDWR)  # never created here: the folder may be going
    except FileNotFoundError:
        fd = -1  # no build started in it (or the folder is gone: the rename below says which)
    except OSError:
        return None
    try:
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # being built
        parent, name = os.path.split(path)
        trash = os.path.join(parent, f".evicted-{name}-{os.getpid()}-{os.urandom(4).hex()}")
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            return False  # another process evicted it first
    finally:
        if fd >= 0:
            os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    return True


def _remove(kind: str, path: str) -> bool | None:
    if kind == "kernel":
        return _remove_kernel(path)
    if kind == "orphan" and os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
        return True
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    return True


def _evict(limit: int | None, grace_s: float, wait: bool) -> int:
    """Removes entries, least recently used first, until their size is at most ``limit`` (all when None);
    returns the bytes removed. One process evicts at a time: without ``wait``, none if another one is."""
    root = _root()
    try:
        fd = os.open(os.path.join(root, _EVICT_LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    except FileNotFoundError:
        return 0  # no cache yet
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return 0  # another process is bringing the cache within the limit
        return _evict_locked(root, limit, grace_s)
    finally:
        os.close(fd)


def _evict_locked(root: str, limit: int | None, grace_s: float) -> int:
    entries = sorted(_entries(root))
    total = sum(size for _, size, _, _ in entries)
    now, freed = time.time(), 0
    for used, size, kind, path in entries:
        if limit is not None and total <= limit:
            break
        if kind != "orphan" and (now - used < grace_s or (kind == "kernel" and path in _loaded)):
            continue
        try:
            removed = _remove(kind, path)
        except OSError:  # a read-only cache, a permission: kept
            continue
        if removed is None:
            continue
        if removed:
            freed += size
        total -= size  # removed here or by another process
    return freed


def enforce() -> int:
    """Applies ``config.cache_size_limit_mb`` now (Note [Bounded compile cache]); the bytes removed. Never raises."""
    global checks, _written
    with _lock:
        checks += 1
        _written = 0
        limit = _limit_bytes()
        if limit is None:
            return 0
        try:
            return _evict(limit, GRACE_S, wait=False)
        except Exception:  # an unreadable cache: the next write tries again
            return 0


def wrote(path: str) -> None:
    """Counts an entry this process wrote (a file or a kernel's folder) and checks the limit when it is due."""
    global _checked_once, _written
    try:
        size = _folder_usage(path)[0] if os.path.isdir(path) else _disk_size(os.stat(path))
    except OSError:
        size = 0
    limit = _limit_bytes()
    with _lock:
        _written += size
        due = not _checked_once or (limit is not None and _written * 16 >= limit)
        _checked_once = True
    if due:
        enforce()


def used(path: str, kernel_folder: str | None = None) -> None:
    """Marks an entry as just used (its modification time); a kernel's folder as loaded by this process."""
    if kernel_folder is not None:
        _loaded.add(kernel_folder)
    with contextlib.suppress(OSError):
        os.utime(path)


def clear() -> int:
    """Removes every fb.compile entry not being built (see ``fb.compiler.clear_cache``); the bytes removed."""
    with _lock:
        _loaded.clear()
        return _evict(None, 0.0, wait=True)
