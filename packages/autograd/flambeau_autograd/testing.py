"""Test tooling for derivatives.yaml: which node each entry records, which entries CI requires a
gradcheck case for, and which ones still raise NotImplementedError.

``pytest --gradcheck-coverage=FILE`` (flambeau_core.testing's plugin) writes the backward nodes
every ``gradcheck``/``gradgradcheck`` differentiated; ``nox -s tests`` then calls
``gradcheck_coverage_missing`` with them: a formula without a gradcheck case fails CI.
"""

from __future__ import annotations

import re
from pathlib import Path


def node_name(entry: str) -> str:
    """The node class gen_autograd writes for a derivatives.yaml entry (its ``camel`` rule):
    ``sin`` -> ``SinBackward0``, ``max_dim`` -> ``MaxDimBackward0``, ``add_`` -> ``AddBackward0``."""
    return "".join(p.capitalize() for p in entry.replace(".", "_").rstrip("_").split("_")) + "Backward0"


def _entries(derivatives_yaml: str | Path) -> list[tuple[str, str]]:
    """(name, formulas text) of each derivatives.yaml entry, in table order."""
    text = Path(derivatives_yaml).read_text()
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"(?m)^- name: *([\w.]+)", text)]
    ends = [s for s, _ in starts[1:]] + [len(text)]
    return [(name, text[s:e]) for (s, name), e in zip(starts, ends, strict=True)]


def entry_names(derivatives_yaml: str | Path) -> list[str]:
    """Every entry's op name, in table order."""
    return [name for name, _ in _entries(derivatives_yaml)]


def without_forward_formula(derivatives_yaml: str | Path) -> list[str]:
    """The entries with no forward formula (no ``result:`` key, Note [Forward formulas] in gen_autograd.py):
    a dual tensor reaching one raises NotImplementedError naming it."""
    return [name for name, body in _entries(derivatives_yaml) if not re.search(r'(?m)^  "?result\d*[,:]', body)]


def declared_unsupported(derivatives_yaml: str | Path) -> list[str]:
    """The entries with a formula that raises NotImplementedError (a derivative not written yet):
    no gradcheck can pass through them, so their tests assert that error instead."""
    return [name for name, body in _entries(derivatives_yaml) if "throw NotImplementedError" in body]


def declared_not_differentiable(derivatives_yaml: str | Path) -> list[str]:
    """The entries whose every formula is formula_helpers.h's not_implemented_gradient(...): ops PyTorch does
    not differentiate either (ldl_factor, geqrf), whose backward raises; no gradcheck can pass through them."""
    return [
        name
        for name, body in _entries(derivatives_yaml)
        if (formulas := [m.group(1) for m in re.finditer(r"(?m)^  \w+: *(.+)$", body)])
        and all(f.startswith("not_implemented_gradient(") for f in formulas)
    ]


_CHECKED_BY = re.compile(r"#\s*gradient checked by:\s*(\S+?)::(\w+)")


def checked_elsewhere(derivatives_yaml: str | Path) -> dict[str, tuple[str, str]]:
    """The entries no finite difference can check (a sampler draws anew on each call), each with the
    (file, test) its ``# gradient checked by: FILE::TEST`` comment names: a test against another
    oracle (the derivative of the distribution's mean, an exact reference). FILE is relative to the
    repository root."""
    found = {}
    for name, body in _entries(derivatives_yaml):
        m = _CHECKED_BY.search(body)
        if m:
            found[name] = (m.group(1), m.group(2))
    return found


def gradcheck_coverage_missing(derivatives_yaml: str | Path, covered: set[str]) -> list[str]:
    """The derivatives.yaml entries whose node is not in ``covered``, in table order (the declared
    unsupported and not-differentiable ones left out, and those checked elsewhere whose named test exists)."""
    unsupported = set(declared_unsupported(derivatives_yaml)) | set(declared_not_differentiable(derivatives_yaml))
    root = Path(derivatives_yaml).resolve().parents[2]
    elsewhere = {
        name
        for name, (file, test) in checked_elsewhere(derivatives_yaml).items()
        if (root / file).is_file() and re.search(rf"(?m)^def {test}\(", (root / file).read_text())
    }
    return [
        n
        for n, _ in _entries(derivatives_yaml)
        if n not in unsupported and n not in elsewhere and node_name(n) not in covered
    ]
