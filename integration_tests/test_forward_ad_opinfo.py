"""Forward-mode AD (``fb.autograd.forward_ad``) against PyTorch's, on PyTorch's OpInfo database.

For every CPU entry of torch's ``op_db`` that flambeau has (found as opinfo_differential.py finds it) and that
torch differentiates in forward mode (``supports_forward_ad``), a few float64 samples each: every floating
input torch's sample marks as differentiable becomes a dual tensor with a seeded random tangent, in both
frameworks; the op runs once; the outputs' tangents (after the OpInfo's own ``output_process_fn_grad``, which
fixes the sign and phase of eigenvectors) must agree (rtol 1e-5, atol 1e-7, the gradient tolerance of the
differential test). A sample whose forward values differ, or that torch refuses, is not compared: the
differential test reports those.

An entry whose call reaches an op with no forward formula raises NotImplementedError naming that op; those
ops are collected (``missing``), and each must be an entry of derivatives.yaml without ``result:``, so the
list of what forward mode still lacks is the table's own. ``python integration_tests/test_forward_ad_opinfo.py
[NAME ...]`` prints every entry's result; under pytest, ``-s`` shows the summary line.
"""

from __future__ import annotations

import itertools
import re
import sys
import time
from pathlib import Path

import opinfo_differential as od
import pytest
from flambeau_autograd.testing import entry_names
from flambeau_autograd.testing import without_forward_formula as _without

torch = pytest.importorskip("torch")
try:
    OP_DB = od.load_op_db()
except Exception as exc:  # torch built without its testing internals
    pytest.skip(f"torch's op_db is unavailable: {exc}", allow_module_level=True)

import flambeau as fb  # noqa: E402
import torch.autograd.forward_ad as tfwAD  # noqa: E402

fwAD = fb.autograd.forward_ad
MAX_SAMPLES = 6
RTOL, ATOL = od.GRAD_TOL
DERIVATIVES = Path(__file__).resolve().parent.parent / "packages" / "autograd" / "derivatives.yaml"
_NO_FORMULA = re.compile(r"\[(\w+)\] forward-mode AD is not implemented for this op")

# Entries whose tangents differ from torch's, each with why it is not fixed here. A listed entry that starts
# to agree fails test_known_gaps_still_differ, so the list only shrinks.
KNOWN_GAPS: dict[str, str] = {}


def _substitute(x, mapping: dict):
    """``x`` with each tensor found (by identity) in ``mapping`` replaced by its value."""
    if id(x) in mapping:
        return mapping[id(x)]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_substitute(v, mapping) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_substitute(v, mapping) for v in x)
    if isinstance(x, dict):
        return {k: _substitute(v, mapping) for k, v in x.items()}
    return x


class _Result:
    def __init__(self) -> None:
        self.compared = 0
        self.agreed = 0
        self.missing: set[str] = set()
        self.failures: list[str] = []


def _torch_tangents(op, sample, tangents):
    """torch's outputs and their tangents (a list, None where an output has none), or None if torch refuses."""
    process = sample.output_process_fn_grad
    try:
        with tfwAD.dual_level():
            mapping = {}
            for t, v in zip(_torch_leaves(sample), tangents, strict=True):
                mapping[id(t)] = tfwAD.make_dual(t.detach(), v)
            inp, args, kwargs = _substitute((sample.input, list(sample.args), dict(sample.kwargs)), mapping)
            torch.manual_seed(0)
            out = od._flatten(process(od._call(op.op, op.gradcheck_wrapper, inp, args, kwargs)), None, torch)
            return [
                (o.detach(), tfwAD.unpack_dual(o).tangent) if isinstance(o, torch.Tensor) else (o, None) for o in out
            ]
    except Exception:
        return None


def _torch_leaves(sample) -> list:
    found: list = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            if x.requires_grad and (x.is_floating_point() or x.is_complex()):
                found.append(x)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)

    walk([sample.input, list(sample.args), dict(sample.kwargs)])
    return found


def _raises_without_duals(op, sample, fb_fn, wrapper) -> bool:
    conv = od._Converter(fb, torch)
    try:
        inp, args, kwargs = conv(sample.input), conv(list(sample.args)), conv(dict(sample.kwargs))
        od._call(fb_fn, wrapper, inp, args, kwargs)
    except Exception:
        return True
    return False


def check_entry(op, fb_fn, max_samples: int = MAX_SAMPLES) -> _Result:
    res = _Result()
    gen = torch.Generator().manual_seed(20261129)
    wrapper = od._rebind(op.gradcheck_wrapper, fb, torch)
    torch.manual_seed(0)
    try:
        samples = list(itertools.islice(op.sample_inputs("cpu", torch.float64, requires_grad=True), max_samples))
    except Exception:
        return res
    for k, sample in enumerate(samples):
        leaves = _torch_leaves(sample)
        if not leaves:
            continue
        tangents = [torch.randn(t.shape, dtype=t.dtype, generator=gen) for t in leaves]
        expected = _torch_tangents(op, sample, tangents)
        if expected is None:
            continue
        conv = od._Converter(fb, torch)
        what = f"sample {k} {od._describe(sample, 'float64')}"
        try:
            inp, args, kwargs = conv(sample.input), conv(list(sample.args)), conv(dict(sample.kwargs))
            fb_leaves = {id(t): f for t, f in conv.leaves}
            process = od._rebind(sample.output_process_fn_grad, fb, torch) or sample.output_process_fn_grad
            with fwAD.dual_level():
                mapping = {}
                for t, v in zip(leaves, tangents, strict=True):
                    f = fb_leaves[id(t)]
                    mapping[id(f)] = fwAD.make_dual(f.detach(), fb.from_dlpack(v.clone()))
                inp, args, kwargs = _substitute((inp, args, kwargs), mapping)
                out = od._flatten(process(od._call(fb_fn, wrapper, inp, args, kwargs)), fb, torch)
                got = [(o.detach(), fwAD.unpack_dual(o).tangent) if isinstance(o, fb.Tensor) else (o, None)
                       for o in out]  # fmt: skip
        except NotImplementedError as exc:
            m = _NO_FORMULA.search(str(exc))
            if m:
                res.missing.add(m.group(1))
                continue
            res.compared += 1
            res.failures.append(f"{what}: raises {od._short(exc)}")
            continue
        except Exception as exc:
            if _raises_without_duals(op, sample, fb_fn, wrapper):
                continue  # flambeau refuses the sample itself: the differential test reports it
            res.compared += 1
            res.failures.append(f"{what}: raises {od._short(exc)}")
            continue
        if len(got) != len(expected) or od._compare([e for e, _ in expected], [g for g, _ in got], fb, torch):
            continue  # the values differ: the differential test reports it
        res.compared += 1
        diff = None
        for n, ((_, et), (g, gt)) in enumerate(zip(expected, got, strict=True)):
            if et is None or not (et.is_floating_point() or et.is_complex()):
                continue
            mine = gt if gt is not None else fb.zeros_like(g)
            d = od._compare(et, mine, fb, torch, tol=(RTOL, ATOL))
            if d:
                diff = f"output {n}: {d}"
                break
        if diff:
            res.failures.append(f"{what}: {diff}")
        else:
            res.agreed += 1
    return res


def entries():
    """(key, OpInfo, flambeau callable) of every entry compared."""
    out = []
    for op in OP_DB:
        if od.skip_reason(op) or not op.supports_forward_ad or torch.float64 not in op.supported_dtypes("cpu"):
            continue
        if op.has_nondeterministic_output:
            continue
        if "wrapper_set_seed" in getattr(getattr(op.op, "__code__", None), "co_names", ()):
            continue  # a random draw: tangents of different draws do not compare
        fn, how = od.counterpart(op, fb, torch)
        if fn is not None:
            out.append((od.entry_key(op), op, fn))
    return out


def run(names: list[str] | None = None) -> dict[str, _Result]:
    report = {}
    for key, op, fn in entries():
        if names and key not in names and op.name not in names:
            continue
        report[key] = check_entry(op, fn)
    return report


def without_forward_formula() -> set[str]:
    """derivatives.yaml's entries with no ``result:`` (forward formula)."""
    return set(_without(DERIVATIVES))


def summary(report: dict[str, _Result], seconds: float) -> str:
    compared = {k: r for k, r in report.items() if r.compared}
    agreeing = [k for k, r in compared.items() if not r.failures]
    blocked = {k for k, r in report.items() if r.missing}
    missing = set().union(*(r.missing for r in report.values())) if report else set()
    entries_total = len(entry_names(DERIVATIVES))
    return (
        f"forward-mode AD over OpInfo: {len(compared)} entries compared with torch "
        f"({sum(r.compared for r in compared.values())} samples), {len(agreeing)} agree on every sample, "
        f"{len(compared) - len(agreeing)} differ; {len(blocked)} entries reach an op without a forward formula "
        f"({len(missing)} ops: {', '.join(sorted(missing))}); derivatives.yaml: "
        f"{entries_total - len(without_forward_formula())} of {entries_total} entries have one [{seconds:.0f} s]"
    )


@pytest.fixture(scope="module")
def report():
    t0 = time.perf_counter()
    rep = run()
    print("\n" + summary(rep, time.perf_counter() - t0))
    return rep


def test_tangents_agree_with_torch(report):
    failing = {k: r.failures[:3] for k, r in report.items() if r.failures and k not in KNOWN_GAPS}
    lines = [f"{k}: {f}" for k, fs in sorted(failing.items()) for f in fs]
    assert not failing, f"{len(failing)} entries where forward mode differs from torch's:\n  " + "\n  ".join(lines)


def test_known_gaps_still_differ(report):
    fixed = [k for k in KNOWN_GAPS if k in report and report[k].compared and not report[k].failures]
    assert not fixed, f"now agree with torch; remove them from KNOWN_GAPS: {fixed}"


def test_what_lacks_a_forward_formula_is_the_table_s_own_list(report):
    missing = set().union(*(r.missing for r in report.values()))
    assert missing <= without_forward_formula(), missing - without_forward_formula()


def test_most_entries_are_compared(report):
    compared = [k for k, r in report.items() if r.compared]
    assert len(compared) > 300, len(compared)


if __name__ == "__main__":
    t0 = time.perf_counter()
    rep = run(sys.argv[1:] or None)
    for key, r in sorted(rep.items()):
        state = "FAIL" if r.failures else ("ok" if r.compared else "-")
        extra = f" missing {','.join(sorted(r.missing))}" if r.missing else ""
        print(f"{key}: {r.agreed}/{r.compared} {state}{extra}")
        for f in r.failures[:4]:
            print("    " + f)
    print(summary(rep, time.perf_counter() - t0))
