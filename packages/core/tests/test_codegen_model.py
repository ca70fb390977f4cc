"""The op table's data model (codegen/model.py, which CMake runs to generate core) on small tables written
here: an op's vmap batching rule (`batch:`, else its shape rule's; Note [Batching rules in the table]), a
misspelt rule refused naming the op, an op's result layout rule (`layout:`, Note [Result layout]), and the
built module's `_C._op_batch_rules` against the table."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import flambeau_core as fc
import pytest

# model.py reads the table with PyYAML, a build requirement of core and a test dependency (noxfile):
# under CI a missing PyYAML fails here instead of skipping the table's checks.
if os.environ.get("CI"):
    import yaml  # noqa: F401
else:
    pytest.importorskip("yaml")

CODEGEN = Path(__file__).resolve().parents[1] / "codegen"


@pytest.fixture(scope="module")
def model():
    name = "flambeau_core_codegen_model"
    spec = importlib.util.spec_from_file_location(name, CODEGEN / "model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the classes are built
    spec.loader.exec_module(module)
    yield module
    del sys.modules[name]


def _load(model, tmp_path, text):
    path = tmp_path / "ops.yaml"
    path.write_text(text)
    return model.load_ops(path)


SIN = """
- func: sin(Tensor self) -> Tensor
  dtype: float
  shape: same
"""

# `max` declared as given ({max}), its overload max.other declaring elementwise
MAX_OVERLOADS = """
- func: max(Tensor self) -> Tensor
  kind: composite{max}
- func: max.other(Tensor self, Tensor other) -> Tensor
  kind: composite
  batch: elementwise
"""


def test_a_misspelt_batch_rule_is_refused_naming_the_op(model, tmp_path):
    text = SIN + "  batch: elementwize\n"
    with pytest.raises(model.TableError, match=r"ops.yaml:2: op 'sin': unknown batch rule 'elementwize'") as e:
        _load(model, tmp_path, text)
    assert "elementwise" in str(e.value) and "reduction" in str(e.value)  # the known rules are listed


def test_the_rule_is_the_declared_one_else_the_shape_rules(model, tmp_path):
    text = (
        SIN
        + MAX_OVERLOADS.format(max="\n  dtype: same\n  shape: scalar")
        + """
- func: asin(Tensor self) -> Tensor
  aliases: [arcsin]
  dtype: float
  shape: same
  inplace: true
- func: sum(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor
  dtype: same
  shape: reduce
- func: mm(Tensor self, Tensor mat2) -> Tensor
  dtype: promote
  shape: mm
- func: matmul(Tensor self, Tensor other) -> Tensor
  kind: composite
  batch: matmul
- func: view(Tensor self, int[] size) -> Tensor
  python: []
  batch: views
- func: gather(Tensor self, int dim, Tensor index) -> Tensor
  python_name: take_rows
  kind: composite
  batch: indexed
"""
    )
    rules = model.batch_rules(_load(model, tmp_path, text))
    assert rules == {
        "sin": "elementwise",
        "asin": "elementwise",
        "arcsin": "elementwise",  # an alias shares its op's rule
        "sum": "reduction",
        "matmul": "matmul",
        "max": "elementwise",  # an overload's declared rule wins over another's derived one
        "view": "views",  # bound by hand: its Python function has the op's name
        "take_rows": "indexed",  # the Python name
    }  # mm's shape rule names no batching rule, asin_ batches as asin (vmap's in-place fallback)


def test_overloads_of_one_python_name_share_one_rule(model, tmp_path):
    ops = _load(model, tmp_path, MAX_OVERLOADS.format(max="\n  batch: reduction"))
    with pytest.raises(model.TableError, match=r"'max_other' declares batch rule 'elementwise'.*'max' 'reduction'"):
        model.batch_rules(ops)


def test_shape_rules_name_known_batching_rules(model):
    assert set(model.SHAPE_BATCH_RULES) <= set(model.SHAPE_RULES) | set(model.SHAPE_FUNCTIONS)
    assert set(model.SHAPE_BATCH_RULES.values()) <= set(model.BATCH_RULES)


def test_the_built_module_exports_the_tables_batching_rules(model):
    """_C._op_batch_rules is generated from ops.yaml: a stale build (the table edited, core not rebuilt) fails."""
    expected = model.batch_rules(model.load_ops(CODEGEN / "ops.yaml"))
    assert dict(fc._C._op_batch_rules) == expected
    assert expected["view"] == "views" and expected["sum"] == "reduction" and expected["row_stack"] == "stacks"


def test_ops_whose_values_raise_are_not_launched_from_the_meta_step(model, tmp_path, monkeypatch):
    """Note [Ops launched from the meta step]: an op marked `value_errors:` (a LAPACK kernel raising for a
    singular matrix), `index_values:` or `random:` stays out of FB_FOR_EACH_META_OP, so a queuing backend (the
    simulated device) runs it where its error reaches the call; an op without those keys is in the list."""
    rules = "\n  dtype: same\n  shape: same\n  structured: true\n"
    text = "".join(
        f"- func: {name}(Tensor self) -> Tensor{rules}{key}"
        for name, key in (
            ("_linalg_inv", "  value_errors: true\n"),
            ("_linalg_qr", ""),
            ("take", "  index_values: true\n"),
            ("dropout", "  random: true\n"),
        )
    )
    ops = _load(model, tmp_path, text)
    assert [op.value_errors for op in ops] == [True, False, False, False]
    monkeypatch.syspath_prepend(str(CODEGEN))
    monkeypatch.setitem(sys.modules, "model", model)  # gen_core imports the model by that name
    spec = importlib.util.spec_from_file_location("flambeau_core_codegen_gen_core", CODEGEN / "gen_core.py")
    gen_core = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_core)
    listed = [line for line in gen_core.meta_op_list(ops) if line.startswith("  X(")]
    assert listed == ["  X(_linalg_qr)"]
    with pytest.raises(model.TableError, match=r"unknown keys \[.value_error.\]"):
        _load(model, tmp_path, SIN + "  value_error: true\n")


# ---- Note [Result layout]: `layout:`, else elementwise for a pointwise op, else contiguous ----


def test_the_layout_rule_is_the_declared_one_else_the_pointwise_default(model, tmp_path):
    ops = _load(
        model,
        tmp_path,
        SIN
        + "  structured: true\n"
        + """
- func: cumsum(Tensor self, int dim) -> Tensor
  dtype: same
  shape: same
  batch: views
  structured: true
- func: avg_pool(Tensor self, int k) -> Tensor
  dtype: same
  shape: same
  structured: true
  layout: suggest(self)
- func: mix(Tensor self, Tensor other) -> Tensor
  dtype: promote
  shape: broadcast
  structured: true
""",
    )
    rules = {op.cpp_name: (op.layout_rule.name, op.layout_rule.args) for op in ops}
    assert rules == {
        "sin": ("elementwise", ["self"]),
        "cumsum": ("contiguous", []),
        "avg_pool": ("suggest", ["self"]),
        "mix": ("elementwise", ["self", "other"]),
    }


@pytest.mark.parametrize(
    ("layout", "structured", "message"),
    [
        ("suggest_format(self)", True, r"ops.yaml:2: unknown layout rule 'suggest_format\(self\)' \(known: contiguous"),
        ("suggest(self, self)", True, r"ops.yaml:2: layout suggest names one tensor argument, suggest\(input\)"),
        ("conv_format(self)", True, r"ops.yaml:2: layout conv_format names two tensor arguments, conv_format\(input"),
        ("elementwise(weight)", True, r"ops.yaml:2: layout rule 'elementwise\(weight\)' names 'weight', which is not"),
        ("elementwise", False, r"ops.yaml:2: 'layout' is the rule of a structured op's new result"),
    ],
)
def test_a_bad_layout_rule_is_refused_naming_the_entry(model, tmp_path, layout, structured, message):
    text = SIN + ("  structured: true\n" if structured else "") + f"  layout: {layout}\n"
    with pytest.raises(model.TableError, match=message):
        _load(model, tmp_path, text)
