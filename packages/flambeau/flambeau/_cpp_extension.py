"""flambeau.utils.cpp_extension: C++ and CUDA extensions compiled on demand (torch.utils.cpp_extension).

`load` and `load_inline` compile sources against flambeau-core's headers
(`#include <flambeau/extension.h>`) into a shared library, import it and
return the module. A build lives in a cache folder keyed by a hash of the
sources, the flags, the compiler's version and flambeau's ABI tag (Note [ABI
tag]), so an unchanged extension is never rebuilt and a changed one always is.

Note [Extension build lock]
Builds of one extension are serialised by an exclusive ``fcntl.flock`` on a
lock file in its folder, which holds the owner's pid for messages. The kernel
drops the lock when its owner dies, SIGKILL included, so a killed build
cannot leave the extension locked (torch's FileBaton, a file whose mere
existence is the lock, waits for ever on one a killed build left). Outputs are
written under temporary names and renamed into place, so a killed build
leaves no half-written library either; a waiter re-checks for the library
once it holds the lock and builds only if it is still missing.

Extension functions are called as Python functions. Operators with a
gradient and a shape rule are registered from C++ with FLAMBEAU_LIBRARY
(flambeau/library.h); loading the library makes them `flambeau.ops.<ns>.<name>`
(Note [Operators registered from C++]).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import flambeau_core

__all__ = [
    "load",
    "load_inline",
    "include_paths",
    "library_paths",
    "CppExtension",
    "CUDAExtension",
]  # and BuildExtension, made on first use (module __getattr__) so that importing flambeau skips setuptools

_CXX_STANDARD = "-std=c++20"  # core's (cmake/flambeau_defaults.cmake): one ABI domain
_ABI_MARKER = b"FLAMBEAU_ABI_TAG="  # Note [Extension ABI marker] in flambeau/extension.h
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CUDA_SUFFIXES = (".cu", ".cuh")


def _abi_tag() -> str:
    return flambeau_core._C._abi_tag()


def include_paths(cuda: bool = False) -> list[str]:
    r"""Returns the include folders an extension is compiled with.

    flambeau-core's public headers (``<flambeau/extension.h>``), pybind11's and
    Python's; with ``cuda=True`` also the CUDA toolkit's, when nvcc is found.

    Example::

        >>> from flambeau.utils.cpp_extension import include_paths
        >>> any(p.endswith("include") for p in include_paths())
        True
    """
    import pybind11

    paths = [flambeau_core.get_include_dir(), pybind11.get_include(), sysconfig.get_paths()["include"]]
    if cuda:
        home = _cuda_home()
        if home is not None:
            paths.append(os.path.join(home, "include"))
    return paths


def library_paths(cuda: bool = False) -> list[str]:
    r"""Returns the folders an extension links from: libflambeau_core's, and CUDA's with ``cuda=True``.

    Example::

        >>> from flambeau.utils.cpp_extension import library_paths
        >>> import os
        >>> os.path.isfile(os.path.join(library_paths()[0], "libflambeau_core.so"))
        True
    """
    paths = [os.path.join(os.path.dirname(flambeau_core.get_include_dir()), "lib")]
    if cuda:
        home = _cuda_home()
        if home is not None:
            paths.append(os.path.join(home, "lib64"))
    return paths


def _nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found is not None:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
        return os.path.join(home, "bin", "nvcc")
    return None


def _cuda_home() -> str | None:
    """The CUDA toolkit's folder: $CUDA_HOME, nvcc's grandparent, or /usr/local/cuda (nvcc may be a wrapper script)."""
    nvcc = _nvcc()
    if nvcc is None:
        return None
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    candidates += [os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "/usr/local/cuda"]
    for home in candidates:
        if home and os.path.isfile(os.path.join(home, "include", "cuda_runtime.h")):
            return home
    return None


def _cxx() -> str:
    return os.environ.get("CXX", "c++")


_version_cache: dict[str, str] = {}


def _tool_version(tool: str) -> str:
    """The first line of `tool --version`, cached per process (it keys the build cache)."""
    if tool not in _version_cache:
        try:
            out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=False).stdout
        except OSError as e:
            raise RuntimeError(f"[load] cannot run the C++ compiler '{tool}' (set CXX to one): {e}") from None
        _version_cache[tool] = out.strip()
    return _version_cache[tool]


def _cache_root() -> str:
    """The extension cache's root: one folder below it per Python version and ABI (_extensions_root)."""
    root = os.environ.get("FLAMBEAU_EXTENSIONS_DIR")
    return root or os.path.join(os.path.expanduser("~"), ".cache", "flambeau_extensions")


def _extensions_root() -> str:
    tag = re.sub(r"[^A-Za-z0-9.]+", "_", _abi_tag())
    return os.path.join(_cache_root(), f"py{sys.version_info[0]}{sys.version_info[1]}_{tag}")


@contextlib.contextmanager
def _build_lock(folder: str, name: str, verbose: bool) -> Iterator[None]:
    """Holds the extension's lock (Note [Extension build lock])."""
    path = os.path.join(folder, "lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if verbose:
                owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                print(f"[load] waiting for process {owner} building extension '{name}'", file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _read_abi_marker(path: str) -> str | None:
    with open(path, "rb") as f:
        data = f.read()
    start = data.find(_ABI_MARKER)
    if start < 0:
        return None
    start += len(_ABI_MARKER)
    return data[start : data.index(b";", start)].decode(errors="replace")


def _check_abi(name: str, path: str) -> None:
    theirs = _read_abi_marker(path)
    ours = _abi_tag()
    if theirs is not None and theirs != ours:
        raise ImportError(
            f"[load] extension '{name}' ({path}) was built for flambeau ABI '{theirs}', but the installed "
            f"flambeau-core has ABI '{ours}'; rebuild the extension against this flambeau-core "
            "(delete the file, or build it again with load/load_inline or setup.py)"
        )


def _run(cmd: list[str], cwd: str, name: str, verbose: bool) -> None:
    if verbose:
        print(" ".join(cmd), file=sys.stderr)
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise RuntimeError(f"[load] building extension '{name}': cannot run '{cmd[0]}': {e}") from None
    if verbose and proc.stdout + proc.stderr:
        print(proc.stdout + proc.stderr, file=sys.stderr)
    if proc.returncode != 0:
        raise RuntimeError(
            f"[load] building extension '{name}' failed ({os.path.basename(cmd[0])} exited with "
            f"{proc.returncode}):\n{proc.stdout}{proc.stderr}"
        )


def _commands(
    name: str,
    sources: list[str],
    objdir: str,
    output: str,
    cflags: list[str],
    cuda_cflags: list[str],
    ldflags: list[str],
    includes: list[str],
    with_cuda: bool,
    is_python_module: bool,
) -> tuple[list[tuple[list[str], str]], list[str]]:
    """The compile commands (each with its object file) and the link command."""
    defines = [f"-DFLAMBEAU_EXTENSION_NAME={name}", f"-DTORCH_EXTENSION_NAME={name}"]
    incs = [f"-I{p}" for p in includes]
    compiles = []
    for i, src in enumerate(sources):
        obj = os.path.join(objdir, f"{i}_{os.path.splitext(os.path.basename(src))[0]}.o")
        deps = ["-MD", "-MF", obj + ".d"]  # the headers it read (Note [Extension header dependencies])
        if src.endswith(_CUDA_SUFFIXES):
            nvcc = _nvcc()
            assert nvcc is not None  # checked before
            cmd = [nvcc, _CXX_STANDARD, "-O2", "-Xcompiler", "-fPIC", *defines, *incs, *cuda_cflags, *deps, "-c", src]
        else:
            # pybind11 modules hide their symbols (pybind11's advice); a plain library exports them (ctypes).
            visibility = ["-fvisibility=hidden"] if is_python_module else []
            cmd = [_cxx(), _CXX_STANDARD, "-O2", "-fPIC", *visibility, *defines, *incs, *cflags, *deps, "-c", src]
        compiles.append((cmd + ["-o", obj], obj))
    libs = library_paths(cuda=with_cuda)
    link = [_cxx(), "-shared", *[c[1] for c in compiles], "-o", output]
    link += [f"-L{p}" for p in libs] + [f"-Wl,-rpath,{p}" for p in libs] + ["-lflambeau_core"]
    if with_cuda:
        link.append("-lcudart")
    return compiles, link + ldflags


def _build(name: str, compiles: list[tuple[list[str], str]], link: list[str], objdir: str, verbose: bool) -> None:
    ninja = shutil.which("ninja")
    if ninja is None:
        for cmd, _ in compiles:
            _run(cmd, objdir, name, verbose)
        _run(link, objdir, name, verbose)
        return
    # One rule per command: ninja runs the compiles in parallel and reports each failure's output.
    lines = []
    for i, (cmd, obj) in enumerate(compiles):
        lines += [f"rule cc{i}", f"  command = {_ninja_cmd(cmd)}", f"build {_ninja_path(obj)}: cc{i}", ""]
    objs = " ".join(_ninja_path(obj) for _, obj in compiles)
    lines += [
        "rule link",
        f"  command = {_ninja_cmd(link)}",
        f"build {_ninja_path(link[link.index('-o') + 1])}: link {objs}",
    ]
    with open(os.path.join(objdir, "build.ninja"), "w") as f:
        f.write("\n".join(lines) + "\n")
    _run([ninja, "-v"] if verbose else [ninja], objdir, name, verbose)


def _ninja_path(p: str) -> str:
    return p.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _ninja_cmd(cmd: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(c) for c in cmd).replace("$", "$$")


def _import(name: str, path: str, is_python_module: bool) -> Any:
    _check_abi(name, path)
    from flambeau.library._cpp import register_pending

    if not is_python_module:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        register_pending(path)  # its FLAMBEAU_LIBRARY blocks ran when it was loaded
        return path
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    register_pending(path)
    return module


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def load(
    name: str,
    sources: str | Sequence[str],
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str] | None = None,
    build_directory: str | None = None,
    verbose: bool = False,
    with_cuda: bool | None = None,
    is_python_module: bool = True,
    is_standalone: bool = False,
    keep_intermediates: bool = True,
) -> Any:
    r"""Compiles C++ (and CUDA) sources into an extension, imports it and returns the module.

    The build is cached under ``build_directory``, else ``$FLAMBEAU_EXTENSIONS_DIR/<name>``, else
    ``~/.cache/flambeau_extensions/<name>``, keyed by a hash of the sources, the flags, the
    compiler's version and flambeau's ABI tag, and rebuilt when a header the sources include has
    changed: an unchanged extension loads without compiling.
    Sources include ``<flambeau/extension.h>`` and, for Python bindings, ``<flambeau/python/bindings.h>``
    and define ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`` (``FLAMBEAU_EXTENSION_NAME`` is the same
    name). ``.cu`` files are compiled with nvcc (from ``PATH`` or ``$CUDA_HOME/bin``); ninja runs the
    compiles when installed, the compiler is called directly otherwise (``$CXX``, default ``c++``).

    Args:
        name (str): the module's name, a Python identifier.
        sources (str or list of str): the C++ (``.cpp``, ``.cc``) and CUDA (``.cu``) files.
        extra_cflags, extra_cuda_cflags, extra_ldflags (list of str, optional): more compiler / nvcc /
            linker flags.
        extra_include_paths (list of str, optional): more include folders.
        build_directory (str, optional): where to build, instead of the cache folder.
        verbose (bool): print the commands and the compiler's output.
        with_cuda (bool, optional): link the CUDA runtime; default: whether a source is ``.cu``.
        is_python_module (bool): import the library as a Python module (default); if ``False``, load
            it into the process with ``ctypes`` (``RTLD_GLOBAL``) and return its path.

    Returns:
        The imported module (or the library's path if ``is_python_module=False``).

    Raises:
        RuntimeError: a source fails to compile (the message carries the compiler's output, with the
            file, line and source line), or nvcc is needed and not found.
        ImportError: the library was built against another flambeau ABI (Note [ABI tag]).

    Example::

        >>> import os, tempfile
        >>> import flambeau as fb
        >>> from flambeau.utils.cpp_extension import load
        >>> src = os.path.join(tempfile.mkdtemp(), "twice.cpp")
        >>> _ = open(src, "w").write('''
        ... #include <flambeau/extension.h>
        ... #include <flambeau/python/bindings.h>
        ... flambeau::Tensor twice(const flambeau::Tensor& x) { return flambeau::add(x, x); }
        ... PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice", &twice); }
        ... ''')
        >>> ext = load("twice_ext", [src])  # doctest: +SKIP
        >>> ext.twice(fb.tensor([1.0, 2.0]))  # doctest: +SKIP
        tensor([2., 4.])
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"[load] name must be a Python identifier (the module's name), got {name!r}")
    del is_standalone, keep_intermediates  # accepted for torch's signature; builds are always kept
    paths = [os.path.abspath(s) for s in _as_list(sources)]
    if not paths:
        raise ValueError(f"[load] extension '{name}': sources is empty")
    contents = []
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"[load] extension '{name}': source file not found: {p}")
        with open(p, "rb") as f:
            contents.append(f.read())
    has_cuda = any(p.endswith(_CUDA_SUFFIXES) for p in paths)
    if with_cuda is None:
        with_cuda = has_cuda
    if (has_cuda or with_cuda) and _nvcc() is None:
        raise RuntimeError(
            f"[load] extension '{name}' has CUDA sources (or with_cuda=True) but nvcc was not found on PATH "
            "nor in $CUDA_HOME/bin; install the CUDA toolkit and put its bin folder on PATH"
        )
    cflags, cuda_cflags, ldflags = _as_list(extra_cflags), _as_list(extra_cuda_cflags), _as_list(extra_ldflags)
    includes = _as_list(extra_include_paths) + include_paths(cuda=with_cuda)

    key = hashlib.sha256()
    for part in [name, _abi_tag(), sys.version, _tool_version(_cxx()), *cflags, "|", *cuda_cflags, "|",
                 *ldflags, "|", *includes, str(with_cuda), str(is_python_module)]:  # fmt: skip
        key.update(part.encode() + b"\0")
    if with_cuda:
        key.update(_tool_version(_nvcc() or "nvcc").encode())
    for p, data in zip(paths, contents, strict=True):
        key.update(p.encode() + b"\0" + hashlib.sha256(data).digest())
    digest = key.hexdigest()[:16]

    folder = os.path.abspath(build_directory) if build_directory else os.path.join(_extensions_root(), name)
    os.makedirs(folder, exist_ok=True)
    output = os.path.join(folder, f"{name}_{digest}.so")
    if not _up_to_date(output):
        with _build_lock(folder, name, verbose):
            if not _up_to_date(output):  # another process may have built it while we waited
                _build_into(name, paths, folder, digest, output, cflags, cuda_cflags, ldflags, includes,
                            with_cuda, is_python_module, verbose)  # fmt: skip
    elif verbose:
        print(f"[load] extension '{name}' is up to date: {output}", file=sys.stderr)
    return _import(name, output, is_python_module)


# Note [Extension header dependencies]: the cache key hashes the sources and the flags, not the headers
# they include (the extension's own, flambeau's, pybind11's), which only the compiler knows. Each
# compile writes the headers it read (-MD -MF, as ninja's depfiles); after a build they are listed
# beside the library (`<library>.deps`: size, mtime and content hash per header), and a cached
# library is used only while every listed header is unchanged: a size or mtime that differs is
# confirmed by the content hash, so touching a file does not rebuild, editing one does.
_DEPS_SUFFIX = ".deps"


def _file_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _header_line(path: str) -> str:
    st = os.stat(path)
    return f"{st.st_size} {st.st_mtime_ns} {_file_digest(path)} {path}\n"


def _headers_read(objs: list[str], sources: list[str]) -> list[str]:
    """The files the compiles read besides the sources, from their dependency files (Make syntax)."""
    found: dict[str, None] = {}
    skip = {os.path.realpath(s) for s in sources}
    for obj in objs:
        try:
            with open(obj + ".d") as f:
                text = f.read().replace("\\\n", " ")
        except OSError:
            continue  # a compiler that wrote none: the headers are not tracked for this source
        for rule in text.split("\n"):
            _, sep, prereqs = rule.partition(": ")
            if not sep:
                continue
            for dep in re.split(r"(?<!\\)\s+", prereqs.strip()):
                dep = dep.replace("\\ ", " ")
                real = os.path.realpath(dep) if dep else ""
                if real and real not in skip and os.path.isfile(real):
                    found[real] = None
    return list(found)


def _up_to_date(output: str) -> bool:
    """Whether the library exists and every header its build read is unchanged."""
    if not os.path.isfile(output):
        return False
    try:
        with open(output + _DEPS_SUFFIX) as f:
            lines = f.read().splitlines()
    except OSError:
        return False  # built before headers were tracked: once more, to list them
    for line in lines:
        size, mtime, digest, path = line.split(" ", 3)
        try:
            st = os.stat(path)
        except OSError:
            return False
        if (str(st.st_size), str(st.st_mtime_ns)) != (size, mtime) and _file_digest(path) != digest:
            return False
    return True


def _build_into(
    name: str,
    paths: list[str],
    folder: str,
    digest: str,
    output: str,
    cflags: list[str],
    cuda_cflags: list[str],
    ldflags: list[str],
    includes: list[str],
    with_cuda: bool,
    is_python_module: bool,
    verbose: bool,
) -> None:
    start = time.perf_counter()
    objdir = tempfile.mkdtemp(prefix=f"build_{digest}_", dir=folder)
    partial = os.path.join(objdir, os.path.basename(output))
    compiles, link = _commands(
        name, paths, objdir, partial, cflags, cuda_cflags, ldflags, includes, with_cuda, is_python_module
    )
    try:
        _build(name, compiles, link, objdir, verbose)
        headers = _headers_read(objs=[obj for _, obj in compiles], sources=paths)
        _write_if_changed(output + _DEPS_SUFFIX, "".join(_header_line(h) for h in headers))
        os.replace(partial, output)
    finally:
        shutil.rmtree(objdir, ignore_errors=True)
    # Older builds of this extension: a process that has one loaded keeps its mapping.
    for old in os.listdir(folder):
        stale = old.startswith(f"{name}_") and old.endswith((".so", ".so" + _DEPS_SUFFIX))
        if stale and not os.path.join(folder, old).startswith(output):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, old))
    if verbose:
        print(f"[load] built extension '{name}' in {time.perf_counter() - start:.1f} s: {output}", file=sys.stderr)


def _binding_source(functions: Sequence[str] | dict[str, str]) -> str:
    if isinstance(functions, str):
        functions = [functions]
    docs = dict(functions) if isinstance(functions, dict) else {f: "" for f in functions}
    defs = []
    for fn, doc in docs.items():
        if not _NAME_RE.match(fn):
            raise ValueError(f"[load_inline] functions must name C++ functions, got {fn!r}")
        defs.append(f'  m.def("{fn}", &{fn}, {_cpp_string(doc)});')
    # The ABI check comes first (Note [ABI tag]): before this module binds anything. pybind11 turns a
    # std::exception thrown from module init into an ImportError carrying its message.
    return "\n".join(
        [
            "#include <flambeau/python/bindings.h>",
            "PYBIND11_MODULE(FLAMBEAU_EXTENSION_NAME, m) {",
            '  pybind11::module_::import("flambeau_core");',
            "  if (std::string(FLAMBEAU_ABI_TAG) != ::flambeau::core_abi_tag()) {",
            "    throw std::runtime_error(std::string(FB_ABI_STR(FLAMBEAU_EXTENSION_NAME)) +",
            '        " was built for flambeau ABI \'" FLAMBEAU_ABI_TAG "\' but flambeau-core has ABI \'" +',
            '        ::flambeau::core_abi_tag() + "\'; rebuild the extension");',
            "  }",
            *defs,
            "}",
        ]
    )


def _cpp_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def load_inline(
    name: str,
    cpp_sources: str | Sequence[str],
    cuda_sources: str | Sequence[str] | None = None,
    functions: str | Sequence[str] | dict[str, str] | None = None,
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str] | None = None,
    build_directory: str | None = None,
    verbose: bool = False,
    with_cuda: bool | None = None,
    is_python_module: bool = True,
    with_pytorch_error_handling: bool = True,
    keep_intermediates: bool = True,
) -> Any:
    r"""Compiles C++ (and CUDA) source strings into an extension, imports it and returns the module.

    As :func:`load`, from strings: the C++ sources go into ``main.cpp`` after
    ``#include <flambeau/extension.h>``, the CUDA sources into ``cuda.cu`` (declare their host
    functions in the C++ sources). ``functions`` names the C++ functions to bind (a list, or a dict
    from name to docstring): their Python bindings are generated, so a function taking and
    returning ``flambeau::Tensor`` is called with flambeau tensors. Without ``functions`` the
    sources define ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`` themselves.

    Example::

        >>> import flambeau as fb
        >>> from flambeau.utils.cpp_extension import load_inline
        >>> src = '''
        ... flambeau::Tensor fma(const flambeau::Tensor& a, const flambeau::Tensor& b, const flambeau::Tensor& c) {
        ...   return flambeau::add(flambeau::mul(a, b), c);
        ... }'''
        >>> ext = load_inline("fma_ext", src, functions=["fma"])  # doctest: +SKIP
        >>> ext.fma(fb.ones(2), fb.full((2,), 3.0), fb.ones(2))  # doctest: +SKIP
        tensor([4., 4.])
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"[load_inline] name must be a Python identifier (the module's name), got {name!r}")
    del with_pytorch_error_handling  # pybind11 turns C++ exceptions (FlambeauError included) into Python ones
    cpp = "#include <flambeau/extension.h>\n" + "\n".join(_as_list(cpp_sources)) + "\n"
    if functions:
        cpp += _binding_source(functions) + "\n"
    cuda = _as_list(cuda_sources)
    folder = os.path.abspath(build_directory) if build_directory else os.path.join(_extensions_root(), name)
    os.makedirs(folder, exist_ok=True)
    files = [_write_if_changed(os.path.join(folder, "main.cpp"), cpp)]
    if cuda:
        files.append(_write_if_changed(os.path.join(folder, "cuda.cu"), "\n".join(cuda) + "\n"))
    return load(name, files, extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths, folder,
                verbose, with_cuda, is_python_module, keep_intermediates=keep_intermediates)  # fmt: skip


def _write_if_changed(path: str, text: str) -> str:
    """Writes `text` to `path` atomically, unless it holds it already (a concurrent loader may be reading it)."""
    with contextlib.suppress(OSError), open(path) as f:
        if f.read() == text:
            return path
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


# ---- setuptools ----


def _extension_kwargs(kwargs: dict[str, Any], cuda: bool) -> dict[str, Any]:
    kwargs = dict(kwargs)
    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + include_paths(cuda=cuda)
    libs = library_paths(cuda=cuda)
    kwargs["library_dirs"] = list(kwargs.get("library_dirs", [])) + libs
    kwargs["runtime_library_dirs"] = list(kwargs.get("runtime_library_dirs", [])) + libs
    kwargs["libraries"] = list(kwargs.get("libraries", [])) + ["flambeau_core"] + (["cudart"] if cuda else [])
    kwargs["language"] = "c++"
    return kwargs


def CppExtension(name: str, sources: Sequence[str], *args: Any, **kwargs: Any) -> Any:
    r"""A ``setuptools.Extension`` for C++ compiled against flambeau-core (include and library folders).

    Build it with ``cmdclass={"build_ext": BuildExtension}``, which adds the flags.

    Example::

        >>> from flambeau.utils.cpp_extension import CppExtension
        >>> ext = CppExtension("my_ext", ["my_ext.cpp"])
        >>> "flambeau_core" in ext.libraries
        True
    """
    import setuptools

    return setuptools.Extension(name, list(sources), *args, **_extension_kwargs(kwargs, cuda=False))


def CUDAExtension(name: str, sources: Sequence[str], *args: Any, **kwargs: Any) -> Any:
    r"""A ``setuptools.Extension`` for C++ and CUDA sources; :class:`BuildExtension` compiles ``.cu`` with nvcc.

    Example::

        >>> from flambeau.utils.cpp_extension import CUDAExtension
        >>> ext = CUDAExtension("my_cuda_ext", ["my_ext.cpp", "kernel.cu"])
        >>> "cudart" in ext.libraries
        True
    """
    import setuptools

    return setuptools.Extension(name, list(sources), *args, **_extension_kwargs(kwargs, cuda=True))


def _build_extension_class() -> type:
    from setuptools.command.build_ext import build_ext

    class BuildExtension(build_ext):
        r"""setuptools' ``build_ext`` with flambeau's flags (C++20, hidden visibility, the extension's
        name as ``TORCH_EXTENSION_NAME``/``FLAMBEAU_EXTENSION_NAME``) and ``.cu`` sources compiled by nvcc.

        ``extra_compile_args`` may be a dict ``{"cxx": [...], "nvcc": [...]}`` as with PyTorch.

        Example::

            >>> from flambeau.utils.cpp_extension import BuildExtension
            >>> BuildExtension.__name__
            'BuildExtension'
        """

        def build_extension(self, ext: Any) -> None:
            short = ext.name.split(".")[-1]
            extra = ext.extra_compile_args
            cxx_flags, nvcc_flags = (
                (extra.get("cxx", []), extra.get("nvcc", [])) if isinstance(extra, dict) else (extra, [])
            )
            ext.extra_compile_args = [_CXX_STANDARD, "-fvisibility=hidden", *cxx_flags]
            ext.define_macros = list(ext.define_macros) + [
                ("TORCH_EXTENSION_NAME", short),
                ("FLAMBEAU_EXTENSION_NAME", short),
            ]
            self.compiler.src_extensions = [*self.compiler.src_extensions, ".cu"]
            original = self.compiler._compile

            def compile_one(
                obj: str, src: str, ext_: str, cc_args: list[str], extra_postargs: list[str], pp_opts: list[str]
            ) -> None:
                if src.endswith(".cu"):
                    nvcc = _nvcc()
                    if nvcc is None:
                        raise RuntimeError(
                            f"[BuildExtension] {src} is CUDA but nvcc was not found on PATH nor in $CUDA_HOME/bin"
                        )
                    self.spawn(
                        [nvcc, _CXX_STANDARD, "-O2", "-Xcompiler", "-fPIC", *pp_opts, *nvcc_flags, "-c", src, "-o", obj]
                    )
                else:
                    original(obj, src, ext_, cc_args, extra_postargs, pp_opts)

            self.compiler._compile = compile_one
            try:
                super().build_extension(ext)
            finally:
                self.compiler._compile = original

    return BuildExtension


def __getattr__(name: str) -> Any:
    # setuptools is imported only by a setup.py that asks for BuildExtension.
    if name == "BuildExtension":
        cls = _build_extension_class()
        globals()["BuildExtension"] = cls
        return cls
    raise AttributeError(f"module 'flambeau.utils.cpp_extension' has no attribute '{name}'")
