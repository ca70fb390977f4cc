"""pytest plugin of flambeau-autograd: which backward nodes the gradchecks of a test run covered.

``pytest --gradcheck-coverage=FILE`` records the name of every node (``SinBackward0``, ...) in the
graphs that ``gradcheck`` and ``gradgradcheck`` differentiate, and appends them to FILE at the end
of the session (several sessions, one per package, may write the same file). ``nox -s tests``
passes it to every suite, then checks that each entry of derivatives.yaml has a node in the
file (``gradcheck_coverage_missing``): a formula without a gradcheck case fails CI.

Registered as a ``pytest11`` entry point, so every test session with flambeau-autograd installed
has the option; without it the plugin does nothing.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

# The module, not the function the package exports under the same name.
_gradcheck = importlib.import_module("flambeau_autograd.gradcheck")

_seen: set[str] = set()


def _record(outs: tuple) -> None:
    stack = [o.grad_fn for o in outs if getattr(o, "grad_fn", None) is not None]
    # Keyed by id() with the node kept alive: next_functions makes new wrapper objects, and the
    # id of one that was freed could be reused by a node not yet seen.
    visited: dict[int, object] = {}
    while stack:
        node = stack.pop()
        if node is None or id(node) in visited:
            continue
        visited[id(node)] = node
        _seen.add(node.name())
        stack.extend(fn for fn, _ in node.next_functions)


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--gradcheck-coverage",
        default=None,
        metavar="FILE",
        help="append the backward nodes that gradcheck/gradgradcheck covered to FILE (flambeau-autograd)",
    )


def pytest_configure(config: Any) -> None:
    if config.getoption("--gradcheck-coverage", default=None):
        _gradcheck._graph_observers.append(_record)


def pytest_sessionfinish(session: Any) -> None:
    path = session.config.getoption("--gradcheck-coverage", default=None)
    if path and _seen:
        with open(path, "a") as f:
            f.writelines(name + "\n" for name in sorted(_seen))


def node_name(entry: str) -> str:
    """The node class gen_autograd writes for a derivatives.yaml entry (its ``camel`` rule):
    ``sin`` -> ``SinBackward0``, ``max_dim`` -> ``MaxDimBackward0``, ``add_`` -> ``AddBackward0``."""
    return "".join(p.capitalize() for p in entry.replace(".", "_").rstrip("_").split("_")) + "Backward0"


def _entries(derivatives_yaml: str | Path) -> list[tuple[str, str]]:
    """(name, formulas text) of each derivatives.yaml entry, in table order."""
    text = Path(derivatives_yaml).read_text()
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"(?m)^- name: *([\w.]+)", text)]
    ends = [s for s, _ in starts[1:]] + [len(text)]
    return [(name, text[s:e]) for (s, name), e in zip(starts, ends)]


def declared_unsupported(derivatives_yaml: str | Path) -> list[str]:
    """The entries with a formula that raises NotImplementedError (a derivative not written yet):
    no gradcheck can pass through them, so their tests assert that error instead."""
    return [name for name, body in _entries(derivatives_yaml) if "throw NotImplementedError" in body]


def gradcheck_coverage_missing(derivatives_yaml: str | Path, covered: set[str]) -> list[str]:
    """The derivatives.yaml entries whose node is not in ``covered``, in table order (the declared
    unsupported ones left out)."""
    unsupported = set(declared_unsupported(derivatives_yaml))
    return [n for n, _ in _entries(derivatives_yaml) if n not in unsupported and node_name(n) not in covered]
