"""Type promotion (Note [TensorIterator], Note [Wrapped numbers]) against PyTorch."""

from __future__ import annotations

import itertools

import flambeau_core as fc
import numpy as np
import pytest
import torch

pytestmark = pytest.mark.on_devices

NAMES = ["bool", "int32", "int64", "float32", "float64"]
FC = {n: getattr(fc, n) for n in NAMES}
TORCH = {n: getattr(torch, n) for n in NAMES}


def operand(kind: str, dtype: str):
    """The same operand in both libraries: a 1-D tensor, a 0-dim tensor, or a Python number."""
    if kind == "number":
        value = {"bool": True, "int32": 2, "int64": 2, "float32": 2.5, "float64": 2.5}[dtype]
        return value, value
    shape = (3,) if kind == "dims" else ()
    return fc.ones(*shape, dtype=FC[dtype]), torch.ones(shape, dtype=TORCH[dtype])


def torch_name(dt) -> str:
    return str(dt).removeprefix("torch.")


KINDS = [
    ("dims", "dims"),
    ("dims", "zero"),
    ("zero", "dims"),
    ("dims", "number"),
    ("number", "dims"),
    ("zero", "zero"),
    ("zero", "number"),
]


@pytest.mark.parametrize(("kind_a", "kind_b"), KINDS)
def test_result_type_matches_torch(kind_a, kind_b):
    for da, db in itertools.product(NAMES, NAMES):
        if kind_a == "number" and da == "int32" or kind_b == "number" and db == "int32":
            continue
        fa, ta = operand(kind_a, da)
        fb, tb = operand(kind_b, db)
        expected = torch_name(torch.result_type(ta, tb))
        assert str(fc.result_type(fa, fb)) == f"flambeau.{expected}", (kind_a, da, kind_b, db)
        if da != "bool" or db != "bool":
            if kind_a == "number":
                fa, ta = fb, tb  # keep a tensor first for the op
                fb, tb = operand(kind_a, da)
            out = fa * fb
            assert str(out.dtype) == f"flambeau.{torch_name((ta * tb).dtype)}", (kind_a, da, kind_b, db)


def test_documented_examples():
    i64 = fc.tensor([1, 2])
    f32 = fc.tensor([1.0, 2.0])
    assert (i64 + 2.5).dtype == fc.float32
    assert (f32 + 2.5).dtype == fc.float32
    assert (f32 + fc.tensor(1.0, dtype=fc.float64)).dtype == fc.float32  # 0-dim participates by category
    assert (i64 + fc.tensor(1.0, dtype=fc.float64)).dtype == fc.float64
    assert (f32 + fc.tensor([1.0], dtype=fc.float64)).dtype == fc.float64
    assert (fc.tensor([True]) + 1).dtype == fc.int64
    assert (fc.tensor([1], dtype=fc.int32) + 1).dtype == fc.int32
    assert (fc.tensor([1], dtype=fc.int32) + fc.tensor([1])).dtype == fc.int64
    assert fc.promote_types(fc.int64, fc.float32) == fc.float32


def test_division_and_unary_dtypes_match_torch():
    for name in NAMES:
        t = torch.ones(2, dtype=TORCH[name])
        f = fc.ones(2, dtype=FC[name])
        assert str((f / f).dtype) == f"flambeau.{torch_name((t / t).dtype)}", name
        for op in ("exp", "log", "sqrt", "tanh", "sigmoid"):
            assert str(getattr(f, op)().dtype) == f"flambeau.{torch_name(getattr(t, op)().dtype)}", (op, name)
        if name != "bool":
            for op in ("neg", "abs"):
                assert getattr(f, op)().dtype == f.dtype
        assert (f > f).dtype == fc.bool


def test_sum_dtypes_match_torch():
    for name in NAMES:
        t = torch.ones(2, dtype=TORCH[name])
        f = fc.ones(2, dtype=FC[name])
        assert str(f.sum().dtype) == f"flambeau.{torch_name(t.sum().dtype)}", name


@pytest.mark.parametrize(
    ("self_dtype", "other"),
    [
        ("int64", 2.5),
        ("int64", "float32"),
        ("bool", 1),
        ("bool", "int64"),
        ("int32", "float64"),
    ],
)
def test_inplace_cast_errors_like_torch(self_dtype, other):
    fo = fc.ones(3, dtype=FC[other]) if isinstance(other, str) else other
    to = torch.ones(3, dtype=TORCH[other]) if isinstance(other, str) else other
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.ones(3, dtype=TORCH[self_dtype]).add_(to)
    with pytest.raises(
        TypeError, match=r"\[add_\] result type \w+ can't be cast to the desired output type " + self_dtype
    ):
        fc.ones(3, dtype=FC[self_dtype]).add_(fo)


@pytest.mark.parametrize(
    ("self_dtype", "other"),
    [
        ("float32", "float64"),
        ("float32", 2),
        ("float64", "int64"),
        ("int64", "bool"),
        ("int64", "int32"),
        ("float32", True),
    ],
)
def test_inplace_computes_in_self_dtype(self_dtype, other):
    fo = fc.ones(3, dtype=FC[other]) if isinstance(other, str) else other
    to = torch.ones(3, dtype=TORCH[other]) if isinstance(other, str) else other
    f = fc.ones(3, dtype=FC[self_dtype])
    t = torch.ones(3, dtype=TORCH[self_dtype])
    f.mul_(fo).add_(fo)
    t.mul_(to).add_(to)
    assert f.dtype == FC[self_dtype]
    np.testing.assert_array_equal(np.asarray(f.tolist()), t.numpy())


def test_mixed_values_are_converted_before_computing():
    # int64 + float32 computes in float32, comparisons in the promoted type
    assert (fc.tensor([1, 2]) + fc.tensor([0.5, 0.25])).tolist() == [1.5, 2.25]
    assert (fc.tensor([1, 2]) < 1.5).tolist() == [True, False]
    assert (fc.tensor([True, False]) * 3).tolist() == [3, 0]
    assert fc.maximum(fc.tensor([1, 5]), fc.tensor([2.5, 2.5], dtype=fc.float64)).tolist() == [2.5, 5.0]


def test_python_floats_keep_double_precision():
    # a wrapped number is weak for promotion but keeps its double value
    t = fc.tensor([1.0], dtype=fc.float64)
    assert (t + 0.1).tolist() == [1.1]
    assert (t * 0.1).tolist() == [0.1]
    assert (0.1 - t).tolist() == [0.1 - 1.0]
    assert (fc.tensor([1]) + 0.1).dtype == fc.float32
    assert fc.result_type(t, 0.1) == fc.float64
    assert fc.result_type(fc.tensor([1]), 0.1) == fc.float32
