"""flambeau_autograd.testing and core's --gradcheck-coverage, behind CI's check that every derivatives.yaml entry
has a gradcheck case: node names as gen_autograd writes them, and the coverage file of a run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import flambeau_core as fc
import pytest
from flambeau_autograd.testing import entry_names, gradcheck_coverage_missing, node_name, without_forward_formula


def _x(*shape):
    return fc.randn(*shape, dtype=fc.float64).requires_grad_()


@pytest.mark.parametrize(
    ("entry", "make"),
    [
        ("sin", lambda: _x(3).sin()),
        ("max_dim", lambda: _x(2, 3).max(1)[0]),
        ("_log_softmax", lambda: _x(2, 3).log_softmax(1)),
        ("mul_", lambda: _x(3).clone().mul_(2.0)),
        ("_fft_r2c", lambda: fc.fft.rfft(_x(8))),
        ("var_correction", lambda: _x(4).var()),
    ],
)
def test_node_name_is_the_name_of_the_recorded_node(entry, make):
    assert make().grad_fn.name() == node_name(entry)


def test_missing_lists_entries_without_a_covered_node_in_table_order(tmp_path):
    table = tmp_path / "derivatives.yaml"
    table.write_text("# a comment\n- name: sin\n  self: grad * cos(self)\n- name: max_dim\n  self: x\n- name: cos\n")
    assert gradcheck_coverage_missing(table, {"SinBackward0"}) == ["max_dim", "cos"]
    assert gradcheck_coverage_missing(table, {"SinBackward0", "CosBackward0", "MaxDimBackward0"}) == []


def test_entries_without_a_forward_formula_are_those_with_no_result_key(tmp_path):
    table = tmp_path / "derivatives.yaml"
    table.write_text(
        textwrap.dedent("""\
            - name: sin
              self: grad * cos(self)
              result: auto_element_wise
            - name: _rnn_layer
              "igates, hx": f(grads[0])
              "result, result1": g(igates_t, hx_t)
            - name: _geqrf
              self: not_implemented_gradient("geqrf", "self")
            - name: cat
              # result: a comment is not a formula
              tensors: grad
            """)
    )
    assert entry_names(table) == ["sin", "_rnn_layer", "_geqrf", "cat"]
    assert without_forward_formula(table) == ["_geqrf", "cat"]


def test_an_entry_whose_formulas_all_raise_not_implemented_is_not_missing(tmp_path):
    table = tmp_path / "derivatives.yaml"
    table.write_text(
        "- name: _ldl\n"
        '  LD: not_implemented_gradient("ldl", "ldl")\n'
        '  B: not_implemented_gradient("ldl", "ldl")\n'
        "- name: zeta\n"
        '  self: not_implemented_gradient("zeta", "zeta")\n'
        "  other: grad * x\n"
    )
    # zeta has one real formula: a gradcheck over it must still cover its node.
    assert gradcheck_coverage_missing(table, set()) == ["zeta"]


def test_an_entry_checked_elsewhere_is_not_missing_when_its_test_exists(tmp_path):
    # tmp/a/b/derivatives.yaml: the named file is relative to the repository root, two levels up
    table = tmp_path / "a" / "b" / "derivatives.yaml"
    table.parent.mkdir(parents=True)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_s.py").write_text("def test_mean_gradient():\n    pass\n")
    marker = "  # gradient checked by: t/test_s.py::{}\n"
    body = "- name: _sample\n" + marker + "  self: grad\n- name: sin\n  self: grad * cos(self)\n"
    table.write_text(body.format("test_mean_gradient"))
    assert gradcheck_coverage_missing(table, set()) == ["sin"]
    table.write_text(body.format("test_renamed"))  # a test that does not exist covers nothing
    assert gradcheck_coverage_missing(table, set()) == ["_sample", "sin"]


def test_the_table_names_existing_tests_for_entries_checked_elsewhere():
    from pathlib import Path

    from flambeau_autograd.testing import checked_elsewhere

    table = Path(__file__).resolve().parents[1] / "derivatives.yaml"
    root = table.parents[2]
    named = checked_elsewhere(table)
    assert "_standard_gamma" in named
    for entry, (file, test) in named.items():
        assert f"def {test}(" in (root / file).read_text(), (entry, file, test)


def test_a_run_with_the_option_records_the_nodes_gradcheck_differentiated(tmp_path):
    (tmp_path / "test_sample.py").write_text(
        textwrap.dedent(
            """
            import flambeau_core as fc
            from flambeau_autograd import gradcheck, gradgradcheck

            def test_exp_tanh():
                x = fc.tensor([0.3, -0.2], dtype=fc.float64, requires_grad=True)
                assert gradcheck(lambda t: t.exp().tanh(), (x,))

            def test_second_order_sin():
                x = fc.tensor([0.3, -0.2], dtype=fc.float64, requires_grad=True)
                assert gradgradcheck(lambda t: t.sin(), (x,))
            """
        )
    )
    out = tmp_path / "nodes.txt"
    out.write_text("AlreadyThereBackward0\n")  # another package's session wrote before: appended to
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--gradcheck-coverage={out}", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    names = out.read_text().split()
    assert names[0] == "AlreadyThereBackward0"
    # exp and tanh from gradcheck; from gradgradcheck the graph of sin's vjp (grad * cos(x)), whose
    # derivatives it checks: cos and mul, but not sin's own node (a second-order check does not
    # check the first-order formula).
    assert {"ExpBackward0", "TanhBackward0", "CosBackward0", "MulBackward0"} <= set(names)
    assert "SinBackward0" not in names


def test_gradcheck_is_observed_only_with_the_option(request):
    from flambeau_core._testing_hooks import gradcheck_graph_observers

    assert bool(gradcheck_graph_observers) == bool(request.config.getoption("--gradcheck-coverage"))
