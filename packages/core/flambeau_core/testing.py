"""Test support shared by every package's tests: one parametrisation over devices.

An op test written once runs on every device flambeau can reach here::

    from flambeau_core.testing import devices, assert_close_on

    @devices
    def test_exp(device):
        x = fc.tensor([0.0, 1.0], device=device)
        assert_close_on(device, x.exp(), fc.tensor([0.0, 1.0]).exp())

The devices are ``"cpu"``; ``"sim"``, the simulated device of flambeau-sim
(Note [Simulated device]; registered on first use, skipped with the reason
"flambeau-sim not installed" only where that package is missing); and
``"cuda"`` (skipped with "flambeau-cuda not installed" or "no CUDA GPU").
Each case's id is its device type (``-k "not sim"`` deselects one). The
module imports pytest, so import it from tests only; it is a plain module
(not a conftest), so packages' conftests never collide over it.

Whole test modules on every device (the default for op tests)
-------------------------------------------------------------

This module is also a pytest plugin (flambeau-core's ``pytest11`` entry
point, so every package's tests have it). A module, class or test marked
``on_devices`` runs each of its tests once per device, with that device as
the *default device* (``with flambeau_core.device(d):``, PyTorch's
``torch.set_default_device``, Note [Default device]): every tensor the test
makes with a factory called without ``device=`` (``tensor``, ``zeros``,
``arange``, ``randn``, ...) is on it, so an existing cpu test becomes a
device test unchanged::

    pytestmark = pytest.mark.on_devices           # every test of the module

    def test_exp():
        x = fc.tensor([0.0, 1.0])                 # on cpu, then sim, then cuda
        assert x.exp().tolist() == [1.0, math.e]  # tolist/item/repr copy back

The test ids end with the device (``test_exp[sim]``). Results come back to
the host with ``.cpu()`` (or ``tolist``/``item``); ``memoryview``/``numpy()``
of a device tensor raise, as in PyTorch, so a module's own comparison helper
calls ``.cpu()`` first (``to_host`` does, and is a no-op on the cpu).
``current_device()`` is the device of the running case. After each case the
device is synchronized, so an asynchronous kernel's error fails the case
that caused it.

The marker's arguments narrow it, the closest one winning (a test's marker
over its class's over the module's ``pytestmark``):

* ``pytest.mark.on_devices(types=("cpu",))``: a test that is about the host
  (buffer protocol, thread counts, hypothesis fuzzing over many examples)
  or ``types=("cpu", "sim")``;
* ``pytest.mark.on_devices(not_on_cuda="reason")``: the ops the module or
  test calls have no CUDA kernel yet; the cuda case is expected to raise
  ``NotImplementedError`` ("... is not yet implemented on CUDA"), reported
  as xfail with the reason. Any other error or a wrong result fails; a pass
  is reported as XPASS (the kernels landed: the argument can go). An op
  without a CUDA kernel is never skipped silently; the sim device needs no
  such mark (the host fallback runs every CPU kernel on it).

A hypothesis test runs its own number of examples on the cpu and at most
``DEVICE_MAX_EXAMPLES`` on another device (the device cases check that the
kernels run there; the fuzzing is the cpu case's).

A test that parametrises ``device`` itself (``@devices``) is left alone.

``kernel_trace()`` records which kernels a block ran (the op's own or a Generic one, per device type): a
test of an out= form or a fusion asserts with it that one kernel ran and nothing was copied.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import re
from collections.abc import Iterator
from typing import Any

import pytest

import flambeau_core

__all__ = [
    "DEVICE_TYPES",
    "asan_exit_code",
    "assert_close_on",
    "check_chrome_trace",
    "cpu_settings",
    "current_device",
    "device_params",
    "devices",
    "raises_when_run",
    "running_under_asan",
    "skip_reason",
    "to_host",
]

#: The device types of the parametrisation, in order.
DEVICE_TYPES = ("cpu", "sim", "cuda")


# Note [Test devices]: core knows no backend by name. A package that provides a device declares an
# entry point in the group "flambeau.test_devices" (flambeau-sim: "sim", flambeau-cuda: "cuda")
# naming a function that readies the device for tests and returns None, or the reason it cannot
# run here. A device no installed package provides is skipped saying so.
_PROVIDERS = {"sim": "flambeau-sim", "cuda": "flambeau-cuda"}


def _test_device_hook(device_type: str) -> Any:
    for ep in importlib.metadata.entry_points(group="flambeau.test_devices"):
        if ep.name == device_type:
            return ep.load()
    return None


def skip_reason(device_type: str) -> str | None:
    """Why tests on ``device_type`` cannot run in this process, or None if they can."""
    if device_type == "cpu":
        return None
    if device_type not in DEVICE_TYPES:
        raise ValueError(f"[device_params] unknown device type {device_type!r}; expected one of {DEVICE_TYPES}")
    hook = _test_device_hook(device_type)
    if hook is None:
        return f"{_PROVIDERS[device_type]} not installed"
    return hook()


def device_params(types: tuple[str, ...] = DEVICE_TYPES, *, not_on_cuda: str | None = None) -> list[Any]:
    """``pytest.param`` per device type (the value is the device string), skipped with a reason where unavailable.

    ``not_on_cuda``: the cuda case is expected to raise NotImplementedError (an op
    without a CUDA kernel yet): that error is reported as xfail with the reason; any
    other error, or a wrong result, fails; a pass is reported as XPASS (the mark can go).
    """
    params = []
    for t in types:
        reason = skip_reason(t)
        marks: list[Any] = [pytest.mark.skip(reason=reason)] if reason is not None else []
        if t == "cuda" and not_on_cuda is not None:
            marks.append(
                pytest.mark.xfail(
                    raises=NotImplementedError, strict=False, reason=f"not yet implemented on CUDA: {not_on_cuda}"
                )
            )
        params.append(pytest.param(t, id=t, marks=marks))
    return params


def devices(fn: Any = None, *, types: tuple[str, ...] = DEVICE_TYPES) -> Any:
    """Decorator: parametrises a test's ``device`` argument over ``types`` (default: cpu, sim, cuda)."""
    mark = pytest.mark.parametrize("device", device_params(types))
    return mark(fn) if fn is not None else mark


def _as_device(device: Any) -> Any:
    return device if isinstance(device, flambeau_core.device) else flambeau_core.device(device)


def _synchronize(device: Any) -> None:
    d = _as_device(device)
    if d.type != "cpu":
        flambeau_core.device_module(d.type).synchronize()


def assert_close_on(device: Any, result: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """``result`` (computed on ``device``) is on that device and matches ``expected`` (computed on the cpu).

    Tensors, and tuples/lists of them, are compared by device, shape, dtype and
    value (NaNs compare equal); anything else by equality.
    """
    import numpy as np

    if isinstance(expected, (tuple, list)):
        assert isinstance(result, (tuple, list)) and len(result) == len(expected), (result, expected)
        for r, e in zip(result, expected, strict=True):
            assert_close_on(device, r, e, rtol=rtol, atol=atol)
        return
    if not isinstance(expected, flambeau_core.Tensor):
        assert result == expected, (result, expected)
        return
    assert isinstance(result, flambeau_core.Tensor), type(result)
    want = _as_device(device)
    got = result.device
    assert got.type == want.type and (want.index is None or got.index == want.index), (
        f"result on {got}, expected {want}"
    )
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert tuple(result.shape) == tuple(expected.shape), (tuple(result.shape), tuple(expected.shape))
    _synchronize(got)
    r, e = result.cpu(), expected.cpu()
    if r.dtype.is_complex:
        rv, ev = np.array(r.tolist(), dtype=complex), np.array(e.tolist(), dtype=complex)
    else:
        rv, ev = np.array(r.tolist(), dtype=np.float64), np.array(e.tolist(), dtype=np.float64)
    np.testing.assert_allclose(rv, ev, rtol=rtol, atol=atol, equal_nan=True)


def raises_when_run(exc: type[BaseException], match: str, fn: Any, *args: Any) -> None:
    """An error the kernel finds in the values (an index out of range, a probability outside [0, 1]):
    ``fn(*args)`` raises ``exc`` matching ``match`` (``re.search``) at the call on the cpu. A device
    that queues its kernels (sim, as CUDA) may return at once and raise it at the next
    synchronization instead, as a RuntimeError with the same message (Note [Asynchronous sim
    kernels])."""
    try:
        result = fn(*args)
    except exc as e:
        assert re.search(match, str(e)), f"{str(e)!r} does not match {match!r}"
        return
    device = next(a.device for a in args if isinstance(a, flambeau_core.Tensor))
    assert device.type != "cpu", f"DID NOT RAISE {exc.__name__} ({match!r})"
    with pytest.raises(RuntimeError, match=match.removeprefix("^")) as info:
        (result[0] if isinstance(result, tuple) else result).cpu()
    assert "asynchronous kernel failed" in str(info.value), str(info.value)


def check_chrome_trace(doc: Any) -> list[dict]:
    """Checks a profiler trace (``export_chrome_trace``'s JSON, loaded) against the trace-event format that
    Perfetto and chrome://tracing read; returns its events. Each flow start ("s") has its finish ("f",
    same category and id) at the same time or later.

    Example:
        >>> import json, os, tempfile
        >>> import flambeau_core as fc
        >>> from flambeau_core.profiler import profile
        >>> from flambeau_core.testing import check_chrome_trace
        >>> with profile() as prof:
        ...     y = fc.ones(2) + 1
        >>> path = os.path.join(tempfile.mkdtemp(), "t.json")
        >>> prof.export_chrome_trace(path)
        >>> "aten::add" in {e["name"] for e in check_chrome_trace(json.load(open(path)))}
        True
    """
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "no traceEvents list"
    flows: dict[tuple, dict[str, list[float]]] = {}
    for e in doc["traceEvents"]:
        assert e["ph"] in ("X", "i", "M", "s", "f"), e
        assert isinstance(e["name"], str) and isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "M":
            assert isinstance(e["args"]["name"], str), e
            continue
        assert isinstance(e["ts"], (int, float)), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            assert isinstance(e["args"], dict) and isinstance(e["cat"], str), e
        elif e["ph"] == "i":
            assert e["s"] in ("t", "p", "g"), e
        else:
            assert isinstance(e["cat"], str) and "id" in e, e
            flows.setdefault((e["cat"], e["id"]), {"s": [], "f": []})[e["ph"]].append(e["ts"])
    for key, ends in flows.items():
        assert len(ends["s"]) == len(ends["f"]), (key, ends)
        assert all(s <= f for s, f in zip(sorted(ends["s"]), sorted(ends["f"]), strict=True)), (key, ends)
    return doc["traceEvents"]


@contextlib.contextmanager
def kernel_trace() -> Iterator[list[list[str]]]:
    """Records the kernels the block runs: yields a list that holds, after the block, one
    ``[op, device type, "own" | "Generic"]`` row per kernel, sorted (the dispatcher's kernel trace,
    Note [Observation]). ``with kernel_trace() as rows: fb.sin(x, out=o)`` then ``rows == [["sin",
    "cpu", "own"]]`` says out= ran sin's own kernel once, and no copy."""
    from flambeau_core import _C

    rows: list[list[str]] = []
    _C._kernel_trace_start()
    try:
        yield rows
    finally:
        rows.extend(_C._kernel_trace_stop())


def to_host(t: Any) -> Any:
    """A result of the running case back on the cpu, for comparing with an oracle.

    ``t`` must be on the case's device (the default device; a result left on
    another device is a bug of the op), and is copied to the cpu
    synchronously (itself on the cpu). Anything but a tensor is returned as is.
    """
    if not isinstance(t, flambeau_core.Tensor):
        return t
    want = flambeau_core.get_default_device()
    assert t.device.type == want.type, f"result on {t.device}, expected it on {want}"
    return t.cpu()


def current_device() -> str:
    """The device type of the running ``on_devices`` case (the default device's): "cpu", "sim" or "cuda"."""
    return flambeau_core.get_default_device().type


# ---- the pytest plugin (entry point pytest11: flambeau_core.testing) ----

_FIXTURE = "_flambeau_default_device"


# ---- --gradcheck-coverage: the backward nodes gradchecks differentiate (flambeau_core._testing_hooks) ----

_gradcheck_nodes: set[str] = set()


def _record_graph(outs: tuple) -> None:
    stack = [o.grad_fn for o in outs if getattr(o, "grad_fn", None) is not None]
    # Keyed by id() with the node kept alive: next_functions makes new wrapper objects, and the
    # id of one that was freed could be reused by a node not yet seen.
    visited: dict[int, object] = {}
    while stack:
        node = stack.pop()
        if node is None or id(node) in visited:
            continue
        visited[id(node)] = node
        _gradcheck_nodes.add(node.name())
        stack.extend(fn for fn, _ in node.next_functions)


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--gradcheck-coverage",
        default=None,
        metavar="FILE",
        help="append the backward nodes that gradcheck/gradgradcheck (flambeau-autograd) differentiated to FILE",
    )


def pytest_sessionfinish(session: Any) -> None:
    path = session.config.getoption("--gradcheck-coverage", default=None)
    if path and _gradcheck_nodes:
        with open(path, "a") as f:
            f.writelines(name + "\n" for name in sorted(_gradcheck_nodes))


def pytest_configure(config: Any) -> None:
    if config.getoption("--gradcheck-coverage", default=None):
        from flambeau_core._testing_hooks import gradcheck_graph_observers

        gradcheck_graph_observers.append(_record_graph)
    config.addinivalue_line(
        "markers",
        "on_devices(types=('cpu', 'sim', 'cuda'), not_on_cuda=None): run each test once per device, that "
        "device being the default device of factories (flambeau_core.testing)",
    )


def pytest_generate_tests(metafunc: Any) -> None:
    marker = metafunc.definition.get_closest_marker("on_devices")
    if marker is None or _FIXTURE not in metafunc.fixturenames:
        return
    # A test that parametrises `device` itself (@devices) places its tensors explicitly.
    if any("device" in getattr(m, "args", ("",))[0] for m in metafunc.definition.iter_markers("parametrize")):
        return
    types = tuple(marker.kwargs.get("types", marker.args[0] if marker.args else DEVICE_TYPES))
    params = device_params(types, not_on_cuda=marker.kwargs.get("not_on_cuda"))
    metafunc.parametrize(_FIXTURE, params, indirect=True)


#: A hypothesis test's examples on a device other than the cpu, at most: the
#: cpu case fuzzes with the test's own settings; the device cases check that
#: the same kernels run there, which a few examples show (CI time).
DEVICE_MAX_EXAMPLES = 10


def _fewer_examples(fn: Any) -> Any:
    """Caps a hypothesis test's max_examples at DEVICE_MAX_EXAMPLES; returns the settings to restore."""
    old = getattr(fn, "_hypothesis_internal_use_settings", None)
    if old is None or old.max_examples <= DEVICE_MAX_EXAMPLES:
        return None
    from hypothesis import settings

    fn._hypothesis_internal_use_settings = settings(old, max_examples=DEVICE_MAX_EXAMPLES)
    return old


@pytest.fixture(autouse=True)
def _flambeau_default_device(request: Any) -> Iterator[str | None]:
    """The device of an ``on_devices`` case, made the default device while the test runs."""
    device = getattr(request, "param", None)
    if device is None or device == "cpu":
        yield device
        return
    fn = getattr(request, "function", None)
    old_settings = _fewer_examples(fn)
    try:
        with flambeau_core.device(device):
            yield device
            # An asynchronous kernel's error is raised by the next synchronous op on
            # its stream: make one now, so it fails this case and not the next one.
            _synchronize(device)
            flambeau_core.zeros(1).cpu()
    finally:
        if old_settings is not None:
            fn._hypothesis_internal_use_settings = old_settings


@pytest.fixture
def cpu_settings() -> Iterator[Any]:
    """Sets settings of ``flambeau_core.backends.cpu`` for one test and restores them after it
    (as ``monkeypatch`` does for attributes): ``cpu_settings(conv_row_blocks="off")``.

        >>> def test_rows_off(cpu_settings):  # doctest: +SKIP
        ...     cpu_settings(conv_row_blocks="off", gemm_pool=False)
    """
    import contextlib

    with contextlib.ExitStack() as stack:
        yield lambda **values: stack.enter_context(flambeau_core.backends.cpu.flags(**values))


def running_under_asan() -> bool:
    """True when this process runs with AddressSanitizer's runtime (``nox -s sanitize``
    preloads it), whose SIGSEGV handler and allocator change what a test can observe:
    a native crash becomes an ASan report and :func:`asan_exit_code`, not a signal; freed
    memory waits in a quarantine instead of being reused.

        >>> from flambeau_core.testing import running_under_asan
        >>> isinstance(running_under_asan(), bool)
        True
    """
    import ctypes

    try:
        ctypes.CDLL(None).__asan_init  # noqa: B018 (the runtime's entry point, in any process it is loaded in)
    except AttributeError:
        return False
    return True


def asan_exit_code() -> int:
    """The exit status AddressSanitizer gives a process it stops (``exitcode`` in ``ASAN_OPTIONS``, else 1).

    >>> from flambeau_core.testing import asan_exit_code
    >>> asan_exit_code() >= 0
    True
    """
    import os

    for option in os.environ.get("ASAN_OPTIONS", "").replace(",", ":").split(":"):
        key, _, value = option.partition("=")
        if key.strip() == "exitcode" and value.strip().lstrip("-").isdigit():
            return int(value)
    return 1
