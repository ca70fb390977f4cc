"""Audit: which public flambeau functions lack the `out=` PyTorch gives them.

For every public function of `flambeau`, `flambeau.linalg`, `flambeau.fft` and
`flambeau.special` (when present) that torch also has, checks
  - whether torch takes out=: an `out` overload of its ATen op
    (torch.ops.aten.<name>, linalg_<name>, fft_<name>, special_<name>), or an
    `out` parameter in its Python signature / docstring;
  - whether flambeau's takes out=: its Python signature (Python wrappers) or
    the signature lines at the top of its docstring (generated bindings).
Prints the gaps (torch has out=, flambeau does not) and the reverse.

Not run in CI (needs torch): `.nox/dev/bin/python tools/audit_out_args.py`.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import sys

import flambeau as fb
import torch

NAMESPACES = [("", fb, torch, ""), ("linalg.", fb.linalg, torch.linalg, "linalg_"), ("fft.", fb.fft, torch.fft, "fft_")]
if hasattr(fb, "special"):
    NAMESPACES.append(("special.", fb.special, torch.special, "special_"))


def _stub_outs() -> dict[str, bool]:
    """name -> whether any overload in torch's _VariableFunctions.pyi stub takes `out`."""
    path = os.path.join(os.path.dirname(torch._C.__file__), "_C", "_VariableFunctions.pyi")
    if not os.path.exists(path):
        path = os.path.join(os.path.dirname(torch.__file__), "_C", "_VariableFunctions.pyi")
    tree = ast.parse(open(path).read())
    outs: dict[str, bool] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in node.args.args + node.args.kwonlyargs]
            outs[node.name] = outs.get(node.name, False) or "out" in names
    return outs


STUB_OUTS = _stub_outs()


def torch_has_out(fn, aten_name: str, top_level: bool) -> bool:
    # The Python signature of a torch function written in Python (torch.functional, ...).
    try:
        if "out" in inspect.signature(fn).parameters:
            return True
        if not isinstance(fn, type(torch.exp)):
            return False
    except (TypeError, ValueError):
        pass
    if top_level:  # the bindings of torch._C._VariableFunctions, from their stub
        return STUB_OUTS.get(aten_name, False)
    # torch.linalg / fft / special: every function of the namespace binds its ATen op, whose
    # overloads with out arguments (`out`, `eigvals`, ...) are what its Python `out=` reaches.
    schemas = torch._C._jit_get_schemas_for_operator("aten::" + aten_name)
    return any(a.is_out for s in schemas for a in s.arguments)


def fb_has_out(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters
        if "out" in params:
            return True
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            pass  # **kwargs: fall through to the docstring
        else:
            return False
    except (TypeError, ValueError):
        pass
    doc = getattr(fn, "__doc__", None) or ""
    # The generated bindings start their docstring with one signature line per overload.
    head = []
    for line in doc.splitlines():
        if not line.strip():
            break
        head.append(line)
    return any(re.search(r"\bout\s*[=:]", line) for line in head)


def audit():
    gaps, extra, both = [], [], []
    for prefix, fmod, tmod, aten_prefix in NAMESPACES:
        for name in sorted(dir(fmod)):
            if name.startswith("_"):
                continue
            f = getattr(fmod, name)
            if not callable(f) or isinstance(f, type) or inspect.ismodule(f):
                continue
            t = getattr(tmod, name, None)
            if t is None or not callable(t) or isinstance(t, type):
                continue
            th = torch_has_out(t, aten_prefix + name, prefix == "")
            fh = fb_has_out(f)
            if th and not fh:
                gaps.append(prefix + name)
            elif fh and not th:
                extra.append(prefix + name)
            elif th:
                both.append(prefix + name)
    return gaps, extra, both


def main() -> int:
    gaps, extra, both = audit()
    print(f"out= in both: {len(both)}")
    print(f"\nGAPS: torch takes out=, flambeau does not ({len(gaps)}):")
    for n in gaps:
        print("  " + n)
    print(f"\nflambeau takes out=, torch's signature does not ({len(extra)}):")
    for n in extra:
        print("  " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
