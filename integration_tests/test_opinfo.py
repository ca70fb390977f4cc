"""flambeau against PyTorch's OpInfo database, with a ratchet on the known disagreements.

opinfo_differential.py runs every CPU entry of torch's `op_db` (float32 and float64, a bounded number of
samples per entry) in both frameworks and classifies each disagreement. integration_tests/opinfo_baseline.json
lists today's disagreements by entry and kind: a new one (an entry that agreed, a new crash), lower totals,
or a listed one that now agrees fails here. After a fix, `python integration_tests/opinfo_differential.py
--update-baseline` rewrites the list. Wrong gradients are printed as a warning on every run.
"""

from __future__ import annotations

import json
import os
import warnings

import opinfo_differential as od
import pytest


@pytest.fixture(scope="module")
def report():
    rep = od.run(jobs=min(2, os.cpu_count() or 1))
    od.DEFAULT_REPORT.parent.mkdir(parents=True, exist_ok=True)
    od.DEFAULT_REPORT.write_text(json.dumps(rep, indent=1))
    wrong = od.wrong_gradients(rep)
    if wrong:
        warnings.warn(
            f"WRONG GRADIENTS against torch in {len(wrong)} OpInfo entries:\n  " + "\n  ".join(wrong), stacklevel=1
        )
    print("\n" + od.summary(rep, failures=False))
    return rep


def test_agrees_with_baseline(report):
    problems = od.regressions(report, od.load_baseline())
    assert not problems, f"{len(problems)} differences from {od.BASELINE.name}:\n  " + "\n  ".join(problems)


def test_every_entry_ran(report):
    """Each compared entry has a result: none was lost to a dead worker without being reported."""
    totals = report["totals"]
    assert len(report["entries"]) == totals["compared_entries"]
    assert totals["compared_entries"] + sum(totals["skipped"].values()) == totals["op_db_entries"]
    assert totals["compared_entries"] > 600 and totals["forward_samples"] > 3000 and totals["grad_samples"] > 1000


def test_no_crash(report):
    crashed = {k: r["examples"] for k, r in report["entries"].items() if {"crash", "hang"} & set(r["kinds"])}
    assert not crashed, crashed


def test_baseline_is_well_formed():
    base = od.load_baseline()
    assert base["config"] == {"dtypes": list(od.CI_DTYPES), "max_samples": od.CI_MAX_SAMPLES, "detail": False}
    assert all(kinds and set(kinds) <= set(od.KINDS) for kinds in base["disagreements"].values())
    assert "harness" not in {k for kinds in base["disagreements"].values() for k in kinds}


def test_gradients_where_torch_is_wrong_name_existing_tests():
    """An entry may differ from torch's gradient (or be more accurate than torch's value, or differ by design:
    JUSTIFIED_DIFFERENCES) only with a test that checks flambeau's another way."""
    root = od.BASELINE.resolve().parents[1]
    justified = {entry: test for entry, (_why, test) in od.JUSTIFIED_DIFFERENCES.items()}
    for entry, ref in {**od.TORCH_GRADIENT_WRONG, **od.TORCH_VALUE_LESS_ACCURATE, **justified}.items():
        file, test = ref.split("::")
        assert f"def {test}(" in (root / file).read_text(), (entry, ref)


def _rep(kinds: dict[str, list[str]], present=10, fwd=100, grad=50):
    entries = {k: {"kinds": dict.fromkeys(v, 1), "examples": {x: f"{x} example" for x in v}} for k, v in kinds.items()}
    totals = {"present": present, "forward_equal": fwd, "grad_equal": grad}
    return {"entries": entries, "totals": totals}


def test_regressions_new_fixed_and_totals():
    base = {"disagreements": {"a": ["value"], "b": ["grad", "raises"]}, "totals": _rep({})["totals"]}
    assert od.regressions(_rep({"a": ["value"], "b": ["grad", "raises"], "c": []}), base) == []
    new = od.regressions(_rep({"a": ["value"], "b": ["grad", "raises"], "c": ["crash"]}), base)
    assert len(new) == 1 and new[0].startswith("NEW c [crash]")
    fixed = od.regressions(_rep({"a": ["value"], "b": ["raises"]}), base)
    assert len(fixed) == 1 and fixed[0].startswith("FIXED b [grad]") and "--update-baseline" in fixed[0]
    dropped = od.regressions(_rep({"a": ["value"], "b": ["grad", "raises"]}, grad=49), base)
    assert dropped == ["TOTAL grad_equal dropped: 49 < baseline 50"]


def test_compare_sees_dtype_shape_values_and_nan_positions():
    import flambeau as fb
    import torch

    def cmp(expected, got):
        return od._compare(expected, fb.from_dlpack(got), fb, torch)

    x = torch.tensor([1.0, float("nan"), 3.0])
    assert cmp(x, x.clone()) is None
    assert "dtype" in cmp(x, x.double())
    assert "shape" in cmp(x, x[:2].clone())
    assert cmp(x, torch.tensor([1.0, float("nan"), 3.001])) is not None
    assert cmp(x, torch.tensor([1.0, 2.0, 3.0])) is not None
    assert cmp(x, torch.tensor([1.0, float("nan"), 3.0 + 1e-6])) is None  # within float32's tolerance
    assert od._compare((x, 2), (fb.from_dlpack(x.clone()), 2.0), fb, torch).startswith("output 1: float")


def test_a_crash_and_a_hang_are_reported_by_entry_and_the_run_goes_on(monkeypatch):
    monkeypatch.setenv("FLAMBEAU_OPINFO_ABORT_AT", "abs")
    rep = od.run(keys=["abs", "sin", "cos"])
    kinds = {k: sorted(r["kinds"]) for k, r in rep["entries"].items()}
    assert kinds == {"abs": ["crash"], "sin": [], "cos": []}
    assert "exit code -6" in rep["entries"]["abs"]["examples"]["crash"]
    monkeypatch.delenv("FLAMBEAU_OPINFO_ABORT_AT")
    rep = od.run(keys=["sin", "cos"], timeout=1e-3)
    assert {k: sorted(r["kinds"]) for k, r in rep["entries"].items()} == {"sin": ["hang"], "cos": ["hang"]}
