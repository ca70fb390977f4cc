"""fb.compile's entries in the extension cache (Note [Bounded compile cache] in flambeau/compiler/_disk_cache.py):
the size limit evicts the least recently used, keeps what is in use and what is not the compiler's, and
``fb.compiler.clear_cache`` empties it. The oracles: the files' own sizes and times (os.stat), and PyTorch for a
model compiled again after its kernel was evicted."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau import _cpp_extension as ext
from flambeau.compiler import _checked, _cpp_kernel, _disk_cache

ABI = "py311_test_abi_1"  # an ABI folder of the cache's naming scheme (another version's, as after an upgrade)
OLD = time.time() - 10 * 3600  # long before the grace period


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    """Each test its own cache root and this process's bookkeeping of it from scratch."""
    monkeypatch.setenv("FLAMBEAU_EXTENSIONS_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_disk_cache, "_loaded", set())
    monkeypatch.setattr(_disk_cache, "_checked_once", False)
    monkeypatch.setattr(_disk_cache, "_written", 0)
    fb.compiler.reset()
    _cpp_kernel.reset()
    yield
    fb.compiler.reset()
    _cpp_kernel.reset()


def _root() -> Path:
    return Path(os.environ["FLAMBEAU_EXTENSIONS_DIR"])


def _disk(path: Path) -> int:
    """du's size of a file or folder: the oracle of an entry's size."""
    if path.is_dir():
        return sum(_disk(p) for p in path.iterdir())
    return os.stat(path).st_blocks * 512


def _kernel(i: int, kib: int, mtime: float, abi: str = ABI) -> Path:
    """A fused kernel's folder as cpp_extension leaves it: source, library, header list, lock."""
    name = f"fb_fused_{i:016x}"
    folder = _root() / abi / "fused" / name
    folder.mkdir(parents=True)
    (folder / "kernel.cpp").write_text("// kernel\n")
    (folder / f"{name}_{i:016x}.so").write_bytes(os.urandom(kib * 1024))
    (folder / f"{name}_{i:016x}.so.deps").write_text("")
    (folder / "lock").write_text("1")
    for p in folder.iterdir():
        os.utime(p, (mtime, mtime))
    return folder


def _record(i: int, mtime: float, abi: str = ABI, suffix: str = ".json") -> Path:
    folder = _root() / abi / "compile_checked"
    folder.mkdir(parents=True, exist_ok=True)
    digest = f"{i:040x}"
    path = folder / (digest + suffix)
    path.write_text(json.dumps({"format": _checked.FORMAT, "fingerprint": digest, "nodes": 1}))
    os.utime(path, (mtime, mtime))
    return path


def _expected_survivors(entries: list[tuple[float, Path]], limit: int) -> set[Path]:
    """The newest entries whose sizes sum to at most ``limit`` (what LRU eviction keeps)."""
    kept, total = set(), sum(_disk(p) for _, p in entries)
    for _, p in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            kept.add(p)
        else:
            total -= _disk(p)
    return kept


def _fused(x, y):
    return fb.nn.functional.gelu(x * y + 1.0) * 0.5


def _fused_torch(x, y):
    return torch.nn.functional.gelu(x * y + 1.0) * 0.5


def _inputs():
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal((4, 7)).astype(np.float32) for _ in range(2))
    return (fb.tensor(x), fb.tensor(y)), (torch.from_numpy(x), torch.from_numpy(y))


def _run_compiled():
    """Compiles and runs the fused function twice against PyTorch; its kernel folders."""
    (x, y), (tx, ty) = _inputs()
    compiled = fb.compile(_fused)
    with fb.no_grad():
        compiled(x, y)
        out = compiled(x, y)
    np.testing.assert_allclose(out.numpy(), _fused_torch(tx, ty).numpy(), rtol=2e-5, atol=2e-6)
    assert [[g.ops for g in gs] for gs in compiled.fused_groups] == [[["mul", "add", "gelu", "mul"]]]
    return sorted((Path(ext._extensions_root()) / "fused").glob("fb_fused_*"))


# --------------------------------------------------------------------------- the setting
def test_the_setting_defaults_to_512_mib_and_rejects_bad_values(monkeypatch):
    assert fb.compiler.config.cache_size_limit_mb == 512
    for good in (None, 1, 0.25, 4096):
        monkeypatch.setattr(fb.compiler.config, "cache_size_limit_mb", good)
        assert fb.compiler.config.cache_size_limit_mb == good
    for bad, error in [(0, ValueError), (-5, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
                       (True, TypeError), ("512", TypeError), ([512], TypeError)]:  # fmt: skip
        with pytest.raises(error, match=r"fb\.compiler\.config\.cache_size_limit_mb must be .*or None"):
            fb.compiler.config.cache_size_limit_mb = bad
        assert fb.compiler.config.cache_size_limit_mb == 4096  # unchanged


# --------------------------------------------------------------------------- the limit
def test_the_limit_evicts_least_recently_used_first_and_keeps_entries_in_use(monkeypatch):
    entries = []
    for i in range(12):  # kernels of 8 KiB and records, used one minute apart; the oldest first
        t = OLD + 60 * i
        entries.append((t, _kernel(i, 8, t) if i % 3 else _record(i, t)))
    busy = _kernel(100, 8, OLD - 500)  # the oldest, but another process is building it (holds its lock)
    loaded = _kernel(101, 8, OLD - 400)  # loaded by this process
    recent = _record(102, time.time() - 5)  # used within the grace period
    _disk_cache._loaded.add(str(loaded))
    kept_anyway = [busy, loaded, recent]

    limit = sum(_disk(p) for _, p in entries) // 2 + sum(_disk(p) for p in kept_anyway)
    monkeypatch.setattr(fb.compiler.config, "cache_size_limit_mb", limit / _disk_cache.MB)
    expected = _expected_survivors(entries, limit - sum(_disk(p) for p in kept_anyway))
    assert 0 < len(expected) < len(entries)

    sizes = {p: _disk(p) for _, p in entries}
    fd = os.open(busy / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # flock locks of two open files conflict in one process too
        before = _disk_cache.checks
        freed = _disk_cache.enforce()
    finally:
        os.close(fd)
    assert _disk_cache.checks == before + 1
    survivors = {p for _, p in entries if p.exists()}
    assert survivors == expected
    assert all(p.exists() for p in kept_anyway)
    assert freed == sum(size for p, size in sizes.items() if p not in expected)
    total = sum(_disk(p) for _, p in entries if p.exists()) + sum(_disk(p) for p in kept_anyway)
    assert total <= limit
    assert not list((_root() / ABI / "fused").glob(".evicted-*"))  # the renamed folders are deleted

    monkeypatch.setattr(fb.compiler.config, "cache_size_limit_mb", None)  # no limit: nothing goes
    _kernel(200, 64, OLD - 9000)
    assert _disk_cache.enforce() == 0 and (_root() / ABI / "fused" / f"fb_fused_{200:016x}").exists()


def test_a_write_checks_the_limit_first_then_each_sixteenth_of_it(monkeypatch, tmp_path):
    monkeypatch.setattr(fb.compiler.config, "cache_size_limit_mb", 1)  # a check is due every 64 KiB written
    small = _record(1, time.time())
    checks = _disk_cache.checks
    _disk_cache.wrote(str(small))  # the process's first write
    assert _disk_cache.checks == checks + 1
    for _ in range(3):
        _disk_cache.wrote(str(small))  # 4 KiB blocks each at most: not due
    assert _disk_cache.checks == checks + 1
    big = _kernel(2, 64, time.time())
    _disk_cache.wrote(str(big))
    assert _disk_cache.checks == checks + 2


def test_two_processes_evicting_at_once_keep_the_same_newest_entries(tmp_path):
    entries = [(OLD + i, _kernel(i, 4, OLD + i) if i % 2 else _record(i, OLD + i)) for i in range(120)]
    limit = sum(_disk(p) for _, p in entries) // 3
    expected = _expected_survivors(entries, limit)
    sizes = {p: _disk(p) for _, p in entries}
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import os, sys, time
        import flambeau as fb
        from flambeau.compiler import _disk_cache
        fb.compiler.config.cache_size_limit_mb = {limit} / _disk_cache.MB
        open(os.path.join({str(tmp_path)!r}, "ready" + sys.argv[1]), "w").close()
        while not os.path.exists({str(go)!r}):
            time.sleep(0.001)
        print(_disk_cache.enforce())
    """)
    env = {**os.environ, "FLAMBEAU_EXTENSIONS_DIR": str(_root())}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(i)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for i in range(2)
    ]
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)):  # both imported: released together
        assert all(p.poll() is None for p in procs), [p.communicate()[1].decode() for p in procs]
        time.sleep(0.01)
    go.write_text("")
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1].decode() for o in outs]
    assert {p for _, p in entries if p.exists()} == expected
    freed = sum(int(o[0].decode().split()[-1]) for o in outs)
    assert freed == sum(size for p, size in sizes.items() if p not in expected)
    assert not list((_root() / ABI / "fused").glob(".evicted-*"))


def test_entries_that_vanish_between_the_scan_and_their_removal_count_as_removed(monkeypatch):
    entries = [(OLD + i, _kernel(i, 4, OLD + i) if i % 2 else _record(i, OLD + i)) for i in range(20)]
    limit = sum(_disk(p) for _, p in entries) // 2
    expected = _expected_survivors(entries, limit)
    gone = [p for _, p in entries[:6]]  # removed by someone else (a concurrent `rm`) right after the scan
    scan = _disk_cache._entries

    def scan_then_remove(root):
        found = scan(root)
        for p in gone:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        return found

    monkeypatch.setattr(_disk_cache, "_entries", scan_then_remove)
    monkeypatch.setattr(fb.compiler.config, "cache_size_limit_mb", limit / _disk_cache.MB)
    sizes = {p: _disk(p) for _, p in entries}
    freed = _disk_cache.enforce()
    assert {p for _, p in entries if p.exists()} == expected
    assert freed == sum(size for p, size in sizes.items() if p not in expected and p not in gone)


# --------------------------------------------------------------------------- what is not the compiler's
def test_files_the_cache_does_not_own_are_left_alone():
    root = _root()
    foreign = [
        root / "notes.txt",  # beside the ABI folders
        root / "other" / "fused" / f"fb_fused_{1:016x}" / "kernel.cpp",  # not an ABI folder's name
        root / ABI / "my_ext" / f"my_ext_{2:016x}.so",  # an extension built by cpp_extension.load
        root / ABI / "my_ext" / "lock",
        root / ABI / "fused" / "README",
        root / ABI / "fused" / "fb_fused_notahexname" / "kernel.cpp",
        root / ABI / "fused" / f"fb_fused_{3:015x}" / "kernel.cpp",  # 15 digits: not a kernel's name
        root / ABI / "compile_checked" / "notes.json",
        root / ABI / "compile_checked" / (f"{4:040x}" + ".json.bak"),
        root / ABI / "compile_checked" / (f"{5:032x}" + ".json"),
    ]
    for p in foreign:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * 5000)
        os.utime(p, (OLD, OLD))
    own = [_kernel(6, 4, OLD), _record(7, OLD), _record(8, OLD, suffix=".hint")]
    size = sum(_disk(p) for p in own)
    assert fb.compiler.clear_cache() == size > 0
    assert not any(p.exists() for p in own)
    assert all(p.exists() and p.read_bytes() == b"x" * 5000 for p in foreign)


# --------------------------------------------------------------------------- half-written entries
def test_a_half_written_record_is_never_read_and_is_removed_only_once_its_writer_is_gone():
    digest = f"{9:040x}"
    folder = Path(_checked._folder())  # this process's ABI folder, where lookup reads
    folder.mkdir(parents=True)
    partial = folder / f"{digest}.json.{os.getpid()}.tmp"
    partial.write_text(json.dumps({"format": _checked.FORMAT, "fingerprint": digest, "nodes": 1}))
    dead = folder / f"{10:040x}.json.1.tmp"
    dead.write_text("{")
    os.utime(dead, (OLD, OLD))

    assert _checked.lookup(digest) == (False, None)  # only the renamed file is a record
    fb.compiler.clear_cache()
    assert partial.exists()  # being written
    assert not dead.exists()  # its writer died an hour ago


def test_a_half_built_kernel_is_never_loaded_and_a_cleared_model_builds_again():
    folders = _run_compiled()
    assert len(folders) == 1
    (lib,) = folders[0].glob("fb_fused_*.so")
    # Cleared: the loaded kernel keeps running; the folder and its library are gone.
    records = list((folders[0].parent.parent / "compile_checked").glob("*"))  # the check's record and hint
    size, lib_size = _disk(folders[0]) + sum(_disk(p) for p in records), _disk(lib)
    assert fb.compiler.clear_cache() == size > lib_size > 4096
    assert not folders[0].exists() and not any(p.exists() for p in records)
    (x, y), (tx, ty) = _inputs()
    compiled = fb.compile(_fused)
    with fb.no_grad():
        compiled(x, y)
        np.testing.assert_allclose(compiled(x, y).numpy(), _fused_torch(tx, ty).numpy(), rtol=2e-5, atol=2e-6)

    # A new process (this one forgets its kernels) finds a build cut short: its temporary folder holds a library
    # of garbage under the final name. It builds the kernel again and loads that.
    fb.compiler.reset()
    _cpp_kernel.reset()
    partial = folders[0] / "build_0123_x" / lib.name
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"\x7fELF half written")
    builds = _cpp_kernel.builds
    again = _run_compiled()
    assert again == folders and _cpp_kernel.builds == builds + 1
    assert lib.exists() and lib.read_bytes()[:4] == b"\x7fELF" and _disk(lib) > 4096
    assert str(folders[0]) in _disk_cache._loaded


def test_a_model_whose_kernel_the_limit_evicted_recompiles(monkeypatch):
    (folder,) = _run_compiled()
    (lib,) = folder.glob("*.so")
    for p in folder.iterdir():
        os.utime(p, (OLD, OLD))
    # A new process loads the library from disk (the same file, not rebuilt) and marks it used.
    fb.compiler.reset()
    _cpp_kernel.reset()
    inode = os.stat(lib).st_ino
    assert _run_compiled() == [folder]
    assert os.stat(lib).st_ino == inode and os.stat(lib).st_mtime > OLD + 3600
    for p in folder.iterdir():
        os.utime(p, (OLD, OLD))
    newer = _record(11, time.time() - 3600)
    # Another process, which has not loaded the kernel, with a limit under the kernel's size.
    monkeypatch.setattr(_disk_cache, "_loaded", set())
    records = sum(_disk(p) for p in (folder.parent.parent / "compile_checked").glob("*"))  # the capture's, kept
    monkeypatch.setattr(fb.compiler.config, "cache_size_limit_mb", (_disk(newer) + records + 1) / _disk_cache.MB)
    size = _disk(folder)
    assert _disk_cache.enforce() == size
    assert not folder.exists() and newer.exists()

    fb.compiler.reset()
    _cpp_kernel.reset()
    builds = _cpp_kernel.builds
    assert _run_compiled() == [folder]
    assert _cpp_kernel.builds == builds + 1 and lib.exists()


def test_using_an_entry_marks_it_recently_used():
    abi = Path(ext._extensions_root()).name
    record, hint = _record(12, OLD, abi), _record(13, OLD, abi, suffix=".hint")
    assert _checked.lookup(f"{12:040x}") == (True, None)
    assert _checked.hinted(f"{13:040x}")
    assert os.stat(record).st_mtime > OLD + 3600 and os.stat(hint).st_mtime > OLD + 3600
