"""``import torch`` resolved to flambeau: the import hook behind ``flambeau-run``.

:data:`TORCH_MODULES` is the one table of which ``torch`` module plays its part
in flambeau (``docs/running-pytorch-programs.md`` is checked against it).
:func:`install` puts a finder first on ``sys.meta_path`` that answers every
``torch`` and ``torch.*`` import:

- a mapped name gets a *view module* (``sys.modules["torch.nn"]``) whose
  attributes are the flambeau module's (looked up on first access and kept;
  setting one through the view sets it on the flambeau module); a submodule
  reached as an attribute (``torch.nn.functional``) is the view of that name too;
- an unmapped name (``torch.jit``, ``torch.nn.modules.fold`` ...) and
  ``torchvision`` (not in flambeau's scope) raise ``ModuleNotFoundError``.

Every failed attribute lookup on a view module and every refused import is
recorded; :func:`report` prints them once, to stderr, at exit (or before the
script's error is re-raised by ``flambeau-run``). ``multiprocessing`` children
started with ``spawn`` or ``forkserver`` install the hook before they re-import
the main module (Note [The hook in spawned children]).

Example:
    >>> import sys, flambeau
    >>> from flambeau import torch_import_hook as hook
    >>> hook.install()
    >>> import torch.nn.functional as F
    >>> F.relu is flambeau.nn.functional.relu
    True
    >>> hook.uninstall()
"""

from __future__ import annotations

import atexit
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import multiprocessing.forkserver
import multiprocessing.spawn
import multiprocessing.util
import os
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

__all__ = ["TORCH_MODULES", "install", "installed", "missing", "module_table_markdown", "report", "uninstall"]

# torch module -> (where flambeau has it, what of it is not there). A target is a module
# name, or "module:attribute" for a namespace object. A key ending in ".*" maps every
# submodule below it to the same-named submodule of its target.
TORCH_MODULES: dict[str, tuple[str, str]] = {
    "torch": ("flambeau", "tensors, dtypes, ops, devices, save/load, compile; no torch.jit, quantization"),
    "torch.nn": ("flambeau_nn", "layers, losses, Parameter; see docs/nn.md for the layers there are"),
    "torch.nn.functional": ("flambeau_nn.functional", ""),
    "torch.nn.init": ("flambeau_nn.init", ""),
    "torch.nn.parameter": ("flambeau_nn.parameter", ""),
    "torch.nn.modules": ("flambeau_nn.modules", ""),
    "torch.nn.modules.*": ("flambeau_nn.modules.*", "the submodules flambeau_nn.modules has (activation, linear, ...)"),
    "torch.nn.utils": ("flambeau_nn.utils", "clip_grad_norm_, clip_grad_value_, rnn"),
    "torch.nn.utils.rnn": ("flambeau_nn.utils.rnn", ""),
    "torch.nn.utils.*": ("flambeau_nn.utils.*", "the submodules flambeau_nn.utils has"),
    "torch.nn.parallel": (
        "flambeau_distributed.parallel",
        "DistributedDataParallel (DataParallel: as torch.nn.DataParallel only)",
    ),
    "torch.optim": ("flambeau_nn.optim", "the optimizers of docs/nn.md"),
    "torch.optim.lr_scheduler": ("flambeau_nn.optim.lr_scheduler", ""),
    "torch.optim.optimizer": ("flambeau_nn.optim.optimizer", ""),
    "torch.optim.*": ("flambeau_nn.optim.*", "the optimizer submodules flambeau_nn.optim has"),
    "torch.utils": ("flambeau:utils", "utils.data, utils.checkpoint, utils.tensorboard"),
    "torch.utils.checkpoint": ("flambeau_nn.utils.checkpoint", ""),
    "torch.utils.tensorboard": ("flambeau.utils.tensorboard", "SummaryWriter; add_graph logs the module structure"),
    "torch.utils.data": ("flambeau_data", ""),
    "torch.utils.data.dataloader": ("flambeau_data.dataloader", ""),
    "torch.utils.data.dataset": ("flambeau_data.dataset", ""),
    "torch.utils.data.sampler": ("flambeau_data.sampler", ""),
    "torch.utils.data.distributed": ("flambeau_data.sampler", "DistributedSampler"),
    "torch.serialization": ("flambeau_interop.serialization", "save, load (PyTorch's .pt format), safe globals"),
    "torch.autograd": ("flambeau_autograd", ""),
    "torch.autograd.function": ("flambeau_autograd.function", ""),
    "torch.autograd.functional": ("flambeau_autograd.functional", ""),
    "torch.autograd.grad_mode": ("flambeau_autograd.grad_mode", ""),
    "torch.autograd.anomaly_mode": ("flambeau_autograd.anomaly_mode", ""),
    "torch.autograd.profiler": ("flambeau_core.profiler.autograd_profiler", "no cuda kernel times"),
    "torch.multiprocessing": ("flambeau_data.multiprocessing", ""),
    "torch.distributed": ("flambeau_distributed", "over MPI (see docs/distributed.md)"),
    "torch.distributed.algorithms": ("flambeau_distributed.algorithms", "Join, ddp_comm_hooks"),
    "torch.distributed.algorithms.join": ("flambeau_distributed.algorithms.join", ""),
    "torch.distributed.algorithms.ddp_comm_hooks": ("flambeau_distributed.algorithms.ddp_comm_hooks", ""),
    "torch.distributed.algorithms.ddp_comm_hooks.default_hooks": (
        "flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks",
        "allreduce_hook, fp16_compress_hook, bf16_compress_hook",
    ),
    "torch.futures": ("flambeau_distributed.futures", "Future"),
    "torch.distributions": (
        "flambeau.distributions",
        "no Gamma, Beta, Dirichlet, Poisson, Binomial, StudentT, NegativeBinomial, Chi2 yet (they need lgamma)",
    ),
    "torch.distributions.*": ("flambeau.distributions.*", "constraints, transforms, kl and one module a family"),
    "torch.func": (
        "flambeau.func",
        "vmap by batching rules, one vmap level under grad; jvp, jacfwd, linearize by the double-backward trick",
    ),
    "torch.linalg": ("flambeau_core.linalg", ""),
    "torch.fft": ("flambeau_core.fft", ""),
    "torch.signal": ("flambeau_core.signal", ""),
    "torch.signal.windows": ("flambeau_core.signal.windows", ""),
    "torch.masked": ("flambeau_core.masked", "the mask= functions (sum, amax, softmax, ...); no MaskedTensor"),
    "torch.sparse": ("flambeau_core.sparse", "COO tensors: mm, sum (see docs/running-pytorch-programs.md)"),
    "torch.cuda": ("flambeau:cuda", "answers 'not available' without flambeau-cuda"),
    "torch.backends": ("flambeau:backends", "flambeau's settings under PyTorch's names"),
    "torch.backends.*": ("flambeau_core.backends.*", "cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum"),
    "torch.accelerator": ("flambeau:accelerator", ""),
    "torch.random": ("flambeau:random", ""),
    "torch.amp": ("flambeau_core.amp", "CPU autocast (bfloat16, float16) and GradScaler"),
    "torch.cpu": ("flambeau_core.cpu", ""),
    "torch.cpu.amp": ("flambeau_core.cpu.amp", "autocast and GradScaler, PyTorch's older CPU spellings"),
    "torch.profiler": ("flambeau_core.profiler", "sim kernels, DataLoader workers; no cuda kernels (docs/profiler.md)"),
    "torch.library": ("flambeau.library", "custom_op, Library, register_fake/autograd/kernel, opcheck (Python ops)"),
    "torch.hub": ("flambeau:hub", "local folders and cached GitHub repositories; no downloads offline"),
    "torch.onnx": ("flambeau:onnx", "export by tracing, opsets 13-21 ([tutorial](tutorials/onnx-export.md))"),
    "torch.compiler": (
        "flambeau.compiler",
        "capture, guards and replay; elementwise fusion into C++ kernels (docs/compile.md)",
    ),
}

# Not flambeau's to provide: refused with a message naming the reason.
OUT_OF_SCOPE = {
    "torchvision": "torchvision is not in flambeau's scope (no datasets, transforms or models of it); "
    "use flambeau.utils.data with your own Dataset",
    "torchaudio": "torchaudio is not in flambeau's scope",
    "torchtext": "torchtext is not in flambeau's scope",
}

_LOCK = threading.Lock()
_missing: dict[str, None] = {}  # what the program reached that flambeau lacks, in order, once each
_views: dict[str, _TorchView] = {}
_reported = False
_record_pid = os.getpid()  # the process whose record _missing is
_finder: _TorchFinder | None = None


def _target_of(torch_name: str) -> str | None:
    """The flambeau target of a torch module name, or None when unmapped."""
    entry = TORCH_MODULES.get(torch_name)
    if entry is not None:
        return entry[0]
    parent, _, leaf = torch_name.rpartition(".")
    entry = TORCH_MODULES.get(parent + ".*") if parent else None
    if entry is not None and not leaf.startswith("_"):
        return entry[0][: -len("*")] + leaf
    return None


def _resolve(target: str) -> Any:
    """The flambeau object a target names (raises ImportError or AttributeError when it is not there)."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def _record(what: str) -> None:
    with _LOCK:
        _missing.setdefault(what, None)


class _TorchView(types.ModuleType):
    """``sys.modules["torch..."]``: the attributes of the flambeau module playing its part."""

    def __init__(self, torch_name: str, target: Any) -> None:
        super().__init__(torch_name)
        object.__setattr__(self, "_flambeau_target", target)
        # A package to the import system, so `import torch.x.y` reaches the finder.
        self.__path__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        target = object.__getattribute__(self, "_flambeau_target")
        torch_name = object.__getattribute__(self, "__name__")
        try:
            value = getattr(target, name)
        except AttributeError:
            if not (name.startswith("__") and name.endswith("__")):
                _record(f"{torch_name}.{name}")
            flambeau_name = getattr(target, "__name__", type(target).__name__)
            raise AttributeError(
                f"module '{torch_name}' has no attribute '{name}' "
                f"(flambeau-run: {flambeau_name} has no '{name}': a PyTorch feature flambeau lacks)"
            ) from None
        if isinstance(value, types.ModuleType) or f"{torch_name}.{name}" in TORCH_MODULES:
            sub = f"{torch_name}.{name}"
            if _target_of(sub) is not None:
                value = _view(sub)
        # Kept: the next lookup (torch.relu in a training loop) is a plain module attribute.
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, _TorchView) or name in ("__path__", "__spec__", "__loader__", "__package__"):
            # The import system binding a submodule (torch.nn on torch), or the module's own metadata.
            object.__setattr__(self, name, value)
        else:  # torch.x = ... : the program patches flambeau's module, as it would patch torch's
            setattr(object.__getattribute__(self, "_flambeau_target"), name, value)
            self.__dict__.pop(name, None)

    def __delattr__(self, name: str) -> None:
        delattr(object.__getattribute__(self, "_flambeau_target"), name)
        self.__dict__.pop(name, None)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(object.__getattribute__(self, "_flambeau_target"))))

    def __repr__(self) -> str:
        target = object.__getattribute__(self, "_flambeau_target")
        return f"<module '{self.__name__}' (flambeau-run: {getattr(target, '__name__', target)!s})>"


def _view(torch_name: str) -> _TorchView:
    """The view module of a mapped torch name (made once, kept in sys.modules)."""
    view = _views.get(torch_name)
    if view is None:
        view = _TorchView(torch_name, _resolve(_target_of(torch_name)))  # type: ignore[arg-type]
        view.__spec__ = importlib.machinery.ModuleSpec(torch_name, _finder, is_package=True)
        view.__loader__ = _finder
        view.__package__ = torch_name
        _views[torch_name] = view
        sys.modules.setdefault(torch_name, view)
    return view


class _TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``torch``, ``torch.*`` and the out-of-scope companions before any other finder."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> Any:
        root = fullname.partition(".")[0]
        if root in OUT_OF_SCOPE:
            _record(f"import {fullname} ({OUT_OF_SCOPE[root]})")
            raise ModuleNotFoundError(
                f"No module named '{fullname}' (flambeau-run: {OUT_OF_SCOPE[root]})", name=fullname
            )
        if root != "torch":
            return None
        flambeau_target = _target_of(fullname)
        reason = "flambeau has no counterpart of it"
        if flambeau_target is not None:
            try:
                _resolve(flambeau_target)
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            except (ImportError, AttributeError):
                reason = f"its flambeau counterpart {flambeau_target} is not there"
        _record(f"import {fullname}")
        raise ModuleNotFoundError(
            f"No module named '{fullname}' (flambeau-run: {reason}; "
            "docs/running-pytorch-programs.md lists the torch modules flambeau maps)",
            name=fullname,
        )

    def create_module(self, spec: Any) -> types.ModuleType:
        return _view(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass  # a view has nothing to run: its attributes are the flambeau module's


# Note [The hook in spawned children]: a `spawn` or `forkserver` child is a fresh
# interpreter that re-imports the main module (as __mp_main__) before it unpickles
# its target, so `import torch` there must already be hooked. The parent adds an
# entry to the preparation data the child unpickles first; unpickling it installs
# the hook (multiprocessing's `prepare` ignores keys it does not know). The
# forkserver's server process would import the main module when it starts, before
# any hook: it preloads flambeau instead, and each child imports the main module
# itself, after the hook (as spawn children do).
class _InstallInChild:
    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return (install, ())


_PREPARATION_KEY = "flambeau_torch_import_hook"
_original_preparation = multiprocessing.spawn.get_preparation_data


def _preparation_data(name: str) -> dict[str, Any]:
    data = _original_preparation(name)
    if installed():
        data[_PREPARATION_KEY] = _InstallInChild()
    return data


class _Anchor:
    pass


_ANCHOR = _Anchor()


def _report_at_child_exit(_: Any = None) -> None:
    # multiprocessing's children leave through os._exit (no atexit) after running its
    # finalizers, which it clears when a child starts: registered again in each child.
    global _reported, _record_pid
    if _record_pid != os.getpid():  # forked: what is listed so far is the parent's to print
        with _LOCK:
            _missing.clear()
        _reported, _record_pid = False, os.getpid()
    multiprocessing.util.Finalize(None, report, exitpriority=0)


def installed() -> bool:
    """Whether the hook is on ``sys.meta_path``."""
    return _finder is not None and _finder in sys.meta_path


def install() -> None:
    """Resolves ``import torch`` (and its mapped submodules) to flambeau from now on, in this process and its
    ``spawn``/``forkserver`` children; records what the program reaches that flambeau lacks (:func:`report`).

    Raises RuntimeError if the real ``torch`` is imported already (objects of both would mix).
    """
    global _finder
    if installed():
        return
    real = sys.modules.get("torch")
    if real is not None and not isinstance(real, _TorchView):
        raise RuntimeError(
            "[flambeau.torch_import_hook] the real torch is imported already in this process; "
            "install the hook before anything imports torch"
        )
    import flambeau  # noqa: F401  (registers flambeau.nn, flambeau.utils.data ... before views resolve them)

    _finder = _finder or _TorchFinder()
    sys.meta_path.insert(0, _finder)
    multiprocessing.spawn.get_preparation_data = _preparation_data
    preload = multiprocessing.forkserver._forkserver._preload_modules
    if "__main__" in preload:
        multiprocessing.forkserver.set_forkserver_preload([m for m in preload if m != "__main__"] + ["flambeau"])
    atexit.register(report)
    multiprocessing.util.register_after_fork(_ANCHOR, _report_at_child_exit)


def uninstall() -> None:
    """Removes the hook and the ``torch`` view modules from ``sys.modules`` (the record stays)."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    multiprocessing.spawn.get_preparation_data = _original_preparation
    for name, view in list(_views.items()):
        if sys.modules.get(name) is view:
            del sys.modules[name]
    _views.clear()
    atexit.unregister(report)


def missing() -> list[str]:
    """What the program reached that flambeau lacks so far, in first-reached order."""
    with _LOCK:
        return list(_missing)


def report(error: BaseException | None = None, file: Any = None) -> None:
    """Prints, once per process, what the program reached that flambeau lacks (nothing if it reached nothing).

    ``error`` (the exception ending the program, if any) is named when it is a
    lookup of something flambeau lacks on one of its objects (``AttributeError``,
    ``NotImplementedError``).
    """
    global _reported
    lines = missing()
    # A lookup on a torch view module is listed already; other lookups of a missing feature are not.
    if isinstance(error, (AttributeError, NotImplementedError)) and "flambeau-run:" not in str(error):
        lines.append(f"{type(error).__name__}: {error}")
    with _LOCK:
        if _reported or not lines:
            return
        _reported = True
    out = file or sys.stderr
    where = "" if multiprocessing.parent_process() is None else f" (process {os.getpid()})"
    print(f"flambeau-run{where}: the program reached PyTorch features flambeau lacks:", file=out)
    for line in lines:
        print(f"  - {line}", file=out)
    print("  (docs/running-pytorch-programs.md says what each torch module maps to)", file=out, flush=True)


def module_table_markdown() -> str:
    """The table of :data:`TORCH_MODULES` as the docs page shows it (Markdown)."""
    rows = ["| torch module | flambeau | not there / notes |", "|---|---|---|"]
    for torch_name, (target, notes) in TORCH_MODULES.items():
        rows.append(f"| `{torch_name}` | `{target.replace(':', '.')}` | {notes} |")
    return "\n".join(rows) + "\n"
