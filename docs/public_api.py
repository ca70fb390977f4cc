"""The public API of `import flambeau as fb`: what the API reference documents and the docstring check checks.

"Public" is, for each module below, the names in its ``__all__``; for a module without one (the
meta-package itself, ``fb.memory``, ``fb.cuda``, ``fb.array_api``), the names it exposes that do not start
with ``_``, less submodules (each documented module has its own page) and ``from __future__`` features.
The methods of a public class are the callables defined in it or in a private flambeau base class
(``_ConvNd``); a public base class's methods are documented, and checked, under that base.

Run as a script to rewrite the docstring baseline (``python docs/public_api.py --update``): the names
that still lack a docstring or an example, which `integration_tests/test_docstrings.py` lets pass and
which may only shrink.
"""

from __future__ import annotations

import doctest
import functools
import importlib
import inspect
import json
import pkgutil
import re
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Documented modules, in the API reference's order: the name a user writes after `import flambeau`.
# A public module not listed is documented after these (modules()).
MODULES = [
    "flambeau",
    "flambeau.nn",
    "flambeau.nn.functional",
    "flambeau.nn.init",
    "flambeau.nn.utils",
    "flambeau.optim",
    "flambeau.optim.lr_scheduler",
    "flambeau.autograd",
    "flambeau.autograd.functional",
    "flambeau.linalg",
    "flambeau.fft",
    "flambeau.special",
    "flambeau.signal.windows",
    "flambeau.masked",
    "flambeau.sparse",
    "flambeau.random",
    "flambeau.utils",
    "flambeau.utils.data",
    "flambeau.utils.checkpoint",
    "flambeau.utils.tensorboard",
    "flambeau.multiprocessing",
    "flambeau.distributed",
    "flambeau.serialization",
    "flambeau.memory",
    "flambeau.cuda",
    "flambeau.backends",
    "flambeau.accelerator",
    "flambeau.onnx",
    "flambeau.hub",
    "flambeau.array_api",
]

BASELINE = Path(__file__).with_name("docstring_baseline.json")


@dataclass(frozen=True)
class Entry:
    """One documented object: `name` is where the reference documents it (``flambeau.nn.Conv2d.forward``)."""

    module: str  # the documented module it belongs to (a key of the baseline)
    name: str
    obj: object
    kind: str  # "function", "class", "method" or "data"


def resolve(dotted: str) -> object:
    """The object a user reaches as `dotted` (``flambeau.utils.data``), attribute by attribute."""
    import flambeau

    obj: object = flambeau
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _is_module_like(obj: object) -> bool:
    return isinstance(obj, types.ModuleType) or type(obj).__name__ == "DeviceModule"


def public_names(dotted: str) -> list[str]:
    """The public names of one documented module, sorted."""
    module = resolve(dotted)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    out = []
    for name in names:
        obj = getattr(module, name, None)
        if obj is None or _is_module_like(obj) or type(obj).__name__ == "_Feature":
            continue
        out.append(name)
    return sorted(set(out))


# Modules of the meta-package that are not API to look up in a reference, and why.
NOT_IN_REFERENCE = {
    "flambeau.run": "the flambeau-run command; docs/running-pytorch-programs.md is its page",
    "flambeau.torch_import_hook": "flambeau-run's import machinery; docs/running-pytorch-programs.md shows its table",
}


@functools.cache
def modules() -> tuple[str, ...]:
    """The documented modules: MODULES, then any other public module of `flambeau` or `flambeau.utils`
    (a new ``fb.profiler`` is documented, and its names checked, without being listed here first).

    A module counts when it is the package's own submodule or an alias registered in sys.modules; a
    flambeau_core submodule that the meta-package's star import happens to copy (``flambeau_core.testing``,
    once pytest has loaded it as a plugin) is not exposed on purpose."""
    import flambeau

    for info in pkgutil.iter_modules(flambeau.__path__):
        if not info.name.startswith("_") and f"flambeau.{info.name}" not in NOT_IN_REFERENCE:
            importlib.import_module(f"flambeau.{info.name}")
    found = []
    for parent in ("flambeau", "flambeau.utils"):
        module = resolve(parent)
        for name in dir(module):
            obj = getattr(module, name)
            full = f"{parent}.{name}"
            if name.startswith("_") or not _is_module_like(obj) or full in MODULES or full in NOT_IN_REFERENCE:
                continue
            if sys.modules.get(full) is obj or getattr(obj, "__name__", None) == full:
                found.append(full)
    return tuple(MODULES) + tuple(sorted(found))


def _kind(obj: object) -> str:
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "data"


def _is_flambeau_class(cls: type) -> bool:
    return cls.__module__.split(".")[0].startswith("flambeau")


def public_methods(cls: type) -> list[str]:
    """The public methods of a class: callables defined in it or in a private flambeau base class, sorted."""
    names = set()
    for base in cls.__mro__:
        if not _is_flambeau_class(base) or (base is not cls and not base.__name__.startswith("_")):
            continue
        for name, value in vars(base).items():
            if name.startswith("_"):
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if inspect.isroutine(value) or type(value).__name__ == "instancemethod":
                names.add(name)
    return sorted(names)


def _from_standard_library(obj: object) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in sys.stdlib_module_names


@functools.cache
def entries() -> tuple[Entry, ...]:
    """Every documented object once: an object reachable under several names (``fb.mm`` and ``fb.sparse``'s)
    is checked where it first appears in modules() order, and methods under their first public class.

    Python's own objects re-exported as they are (``flambeau.multiprocessing.Queue`` is
    ``multiprocessing.Queue``, as PyTorch's) are not entries: Python documents them, and giving them a
    docstring here would mean changing the standard library's objects for every program."""
    seen: set[int] = set()
    out: list[Entry] = []
    for dotted in modules():
        module = resolve(dotted)
        for name in public_names(dotted):
            obj = getattr(module, name)
            kind = _kind(obj)
            if kind == "data" or id(obj) in seen or _from_standard_library(obj):
                continue
            seen.add(id(obj))
            out.append(Entry(dotted, f"{dotted}.{name}", obj, kind))
            if kind == "class" and _is_flambeau_class(obj):
                for meth in public_methods(obj):
                    func = inspect.getattr_static(obj, meth)
                    if isinstance(func, (staticmethod, classmethod)):
                        func = func.__func__
                    if id(func) in seen:
                        continue
                    seen.add(id(func))
                    out.append(Entry(dotted, f"{dotted}.{name}.{meth}", func, "method"))
    return tuple(out)


def docstring(obj: object) -> str:
    """The object's own docstring ('' when it has none: a class does not inherit `object`'s)."""
    doc = getattr(obj, "__doc__", None)
    if inspect.isclass(obj) and doc == object.__doc__:
        return ""
    if doc and type(obj).__name__ == "builtin_function_or_method" and doc.startswith("(self: "):
        return ""  # pybind11's generated signature, not documentation
    return inspect.cleandoc(doc) if doc else ""


def has_example(doc: str) -> bool:
    return ">>>" in doc


def missing() -> dict[str, dict[str, list[str]]]:
    """Per documented module: the names with no docstring, and those whose docstring has no example."""
    out: dict[str, dict[str, list[str]]] = {m: {"no_docstring": [], "no_example": []} for m in modules()}
    for entry in entries():
        doc = docstring(entry.obj)
        if not doc:
            out[entry.module]["no_docstring"].append(entry.name)
        elif not has_example(doc):
            out[entry.module]["no_example"].append(entry.name)
    return out


class _Checker(doctest.OutputChecker):
    """Compares outputs with the meta-package's names and the packages' names as one: an example in
    flambeau-core's docs prints ``flambeau_core.int64``, the same dtype prints ``flambeau.int64`` once
    ``import flambeau`` has run (it renames what it exposes, as PyTorch's objects say ``torch.``)."""

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        unify = functools.partial(re.sub, r"\bflambeau_[a-z]+\.", "flambeau.")
        return super().check_output(unify(want), unify(got), optionflags)


def example_globals(obj: object) -> dict[str, object]:
    """What an example runs with: the defining Python module's globals (as `pytest --doctest-modules`
    gives), and every flambeau package by its import name (the op table's examples say ``flambeau_core.add``).
    A C++-bound object gets no module globals: `flambeau_core._C` binds ``float`` and ``int`` to dtypes. A
    module's function named like a builtin (`flambeau.special.round`) does not shadow the builtin: a reader
    types the example at a prompt, where ``round`` is Python's."""
    import builtins

    import flambeau

    # A decorated function's example reads the globals of the module that defines the function it wraps
    # (functools.wraps keeps the docstring and __wrapped__, while __globals__ is the decorator's module).
    scope = getattr(inspect.unwrap(obj), "__globals__", None) if callable(obj) else None
    if scope is None and inspect.isclass(obj):
        module = sys.modules.get(obj.__module__)
        scope = vars(module) if str(getattr(module, "__file__", "")).endswith(".py") else None
    scope = {k: v for k, v in (scope or {}).items() if not hasattr(builtins, k) or k.startswith("__")}
    packages = {n: m for n, m in sys.modules.items() if n.startswith("flambeau_") and "." not in n}
    return {**scope, **packages, "flambeau": flambeau, "fb": flambeau}


def run_example(entry: Entry) -> str:
    """Runs the entry's docstring examples as a doctest; '' when they pass, else doctest's report."""
    test = doctest.DocTestParser().get_doctest(docstring(entry.obj), example_globals(entry.obj), entry.name, None, 0)
    runner = doctest.DocTestRunner(checker=_Checker(), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    result = runner.run(test, out=report.append, clear_globs=True)
    return "".join(report) if result.failed else ""


def load_baseline() -> dict[str, dict[str, list[str]]]:
    return json.loads(BASELINE.read_text()) if BASELINE.exists() else {}


def new_names(current: dict[str, dict[str, list[str]]]) -> list[str]:
    """Names in `current` that the baseline does not let pass (one that had no docstring may now lack only an
    example: that is progress)."""
    baseline = load_baseline()
    out = []
    for module, kinds in current.items():
        allowed = baseline.get(module, {})
        for kind, names in kinds.items():
            known = set(allowed.get(kind, []))
            if kind == "no_example":
                known |= set(allowed.get("no_docstring", []))
            out += [f"{name} ({kind.replace('_', ' ')})" for name in names if name not in known]
    return out


def write_baseline(allow_new: bool = False) -> dict[str, dict[str, list[str]]]:
    """Rewrites the baseline from the current names; refuses, listing them, when that would add a name."""
    current = missing()
    added = new_names(current)
    if added and not allow_new:
        sys.exit(
            "not rewritten: these would join the list (document them, or pass --allow-new):\n  " + "\n  ".join(added)
        )
    BASELINE.write_text(json.dumps(current, indent=1, sort_keys=False) + "\n")
    return current


def summary(report: dict[str, dict[str, list[str]]]) -> Iterator[str]:
    for module, kinds in report.items():
        no_doc, no_example = len(kinds["no_docstring"]), len(kinds["no_example"])
        yield f"{module}: {no_doc} without a docstring, {no_example} without an example"


def run_examples() -> dict[str, str]:
    """Runs every docstring's examples, in this process, one after another: name -> doctest's report ('' when
    they pass). The docstring test runs this in a child process, since examples change global state (the
    current allocator, the registered devices, the RNG) that the tests after it must not inherit."""
    import warnings

    reports = {}
    for entry in entries():
        if has_example(docstring(entry.obj)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reports[entry.name] = run_example(entry)
    return reports


if __name__ == "__main__":
    importlib.import_module("flambeau")
    if "--run-examples" in sys.argv:  # --run-examples OUT.json
        Path(sys.argv[sys.argv.index("--run-examples") + 1]).write_text(json.dumps(run_examples()))
        sys.exit(0)
    report = write_baseline("--allow-new" in sys.argv) if "--update" in sys.argv else missing()
    print("\n".join(summary(report)))
    n = len(entries())
    undocumented = sum(len(k["no_docstring"]) for k in report.values())
    no_example = sum(len(k["no_example"]) for k in report.values())
    print(f"{n} public objects; {undocumented} without a docstring; {no_example} more without an example")
