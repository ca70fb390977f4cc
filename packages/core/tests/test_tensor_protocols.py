"""Python protocols on tensors (_protocols.py and the C++ conversions) against PyTorch 2.13:
format, float/int/index and the math functions through them, len, iteration, ``in``, bool,
and round/trunc (which PyTorch does not define either)."""

from __future__ import annotations

import math
import operator

import flambeau_core as fc
import pytest
import torch


def both(make):
    """The same expression on flambeau and torch: (flambeau result, torch result)."""
    return make(fc), make(torch)


@pytest.mark.parametrize(
    "value, spec",
    [(1.23456, ".4f"), (1.23456, ""), (3, "d"), (3, "5"), (-2.5, "+.1e"), (True, ""), (True, "d"), (0.5, "%")],
)
def test_format_0d_as_python_number(value, spec):
    got, want = both(lambda m: format(m.tensor(value), spec))
    assert got == want


def test_format_0d_requires_grad_and_fstring():
    pytest.importorskip("flambeau_autograd", reason="requires_grad needs flambeau-autograd")
    x = fc.tensor(0.123456, requires_grad=True)
    assert f"{x:.3f}" == f"{torch.tensor(0.123456, requires_grad=True):.3f}" == "0.123"


@pytest.mark.parametrize("shape", [(1,), (2, 2), (0,)])
def test_format_non_0d(shape):
    t = fc.ones(shape)
    assert format(t, "") == str(t)  # an empty spec is str(t), as object.__format__
    with pytest.raises(TypeError) as info:
        format(t, ".4f")
    assert "[format] unsupported format string passed to Tensor.__format__" in str(info.value)
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        format(torch.ones(shape), ".4f")


def test_format_subclass_uses_object_format():
    class Sub(fc.Tensor):
        pass

    class TSub(torch.Tensor):
        pass

    s = Sub(fc.tensor(1.5))
    with pytest.raises(TypeError, match=r"Sub\.__format__"):
        format(s, ".2f")
    with pytest.raises(TypeError, match=r"TSub\.__format__"):
        format(torch.tensor(1.5).as_subclass(TSub), ".2f")


@pytest.mark.parametrize(
    "fn",
    [float, int, complex, math.floor, math.ceil, math.isfinite, math.isnan, math.isinf, math.sqrt, abs],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("data", [2.5, [2.5], [[-1.5]], float("inf"), float("nan"), 7, [7]], ids=str)
def test_scalar_conversions(fn, data):
    try:
        want = fn(torch.tensor(data))
    except Exception as e:  # e.g. int(inf): the same Python error from the same number
        with pytest.raises(type(e)):
            fn(fc.tensor(data))
        return
    got = fn(fc.tensor(data))
    if isinstance(want, torch.Tensor):  # abs (str: nan == nan)
        assert str(got.tolist()) == str(want.tolist())
    elif want != want:  # nan, real or complex
        assert got != got and type(got) is type(want)
    else:
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize("fn", [float, int, math.floor])
@pytest.mark.parametrize("data", [[1.0, 2.0], []])
def test_scalar_conversions_need_one_element(fn, data):
    with pytest.raises(ValueError) as info:
        fn(fc.tensor(data))
    assert "one element" in str(info.value)
    with pytest.raises(ValueError, match="one element"):
        fn(torch.tensor(data))


@pytest.mark.parametrize("data", [3, [3], [[3]], -4])
def test_index_of_one_integer(data):
    got, want = both(lambda m: operator.index(m.tensor(data)))
    assert got == want and type(got) is int
    seq = list(range(10))
    assert seq[fc.tensor(data)] == seq[torch.tensor(data)]


@pytest.mark.parametrize("data", [3.0, [1.0]])
def test_index_refuses_floats(data):
    with pytest.raises(TypeError, match=r"\[index\] only integer tensors"):
        operator.index(fc.tensor(data))
    with pytest.raises(TypeError, match="only integer tensors"):
        operator.index(torch.tensor(data))


@pytest.mark.parametrize("data", [[1, 2], [], [[1], [2]]])
def test_index_refuses_several_elements(data):
    with pytest.raises(TypeError, match=r"\[index\] only integer tensors of a single element.*shape \("):
        operator.index(fc.tensor(data, dtype=fc.int64))
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        operator.index(torch.tensor(data, dtype=torch.int64))
    with pytest.raises(TypeError, match=r"\[index\] only integer tensors of a single element"):
        operator.index(fc.tensor(data, dtype=fc.float32))  # several elements first, as torch


@pytest.mark.filterwarnings("error::DeprecationWarning")  # Python's "__index__ returned non-int (type bool)"
@pytest.mark.parametrize(
    "data, dtype",
    [
        (True, "bool"),
        (False, "bool"),
        ([[True]], "bool"),
        (2, "int8"),
        ([[200]], "uint8"),
        (-7, "int16"),
        ([5], "int32"),
        (299, "int64"),
        ([1, 2], "int64"),
        (1.0, "float32"),
        ([2.0], "float64"),
    ],
)
def test_index_as_torch(data, dtype):
    def run(m, fn):
        try:
            return fn(m.tensor(data, dtype=getattr(m, dtype)))
        except TypeError as e:
            return TypeError, str(e).split("] ")[-1].split(", got")[0]

    for fn in (
        operator.index,
        lambda t: list(range(t))[-3:],
        lambda t: list(range(300))[t],
        hex,
        bin,
        lambda t: "ab" * t,
        lambda t: (1, 2, 3, 4)[t:],
    ):
        got, want = run(fc, fn), run(torch, fn)
        assert got == want and type(got) is type(want)
        if fn is operator.index and not isinstance(got, tuple):
            assert type(got) is int


def test_len():
    assert len(fc.zeros(3, 2)) == len(torch.zeros(3, 2)) == 3
    assert len(fc.zeros(0, 2)) == 0
    with pytest.raises(TypeError, match=r"\[len\] len\(\) of a 0-d tensor"):
        len(fc.tensor(1.0))
    with pytest.raises(TypeError, match="len"):
        len(torch.tensor(1.0))


def test_iteration_yields_views_along_dim0():
    t = fc.arange(6).reshape(3, 2)
    rows = list(t)
    assert [r.tolist() for r in rows] == [r.tolist() for r in torch.arange(6).reshape(3, 2)]
    rows[1][0] = 100  # views, as PyTorch's
    assert t[1, 0].item() == 100
    assert [x.item() for x in fc.tensor([1.5, 2.5])] == [1.5, 2.5]
    assert list(fc.zeros(0, 3)) == []
    a, b = fc.tensor([1, 2])  # unpacking
    assert (a.item(), b.item()) == (1, 2)
    with pytest.raises(TypeError, match=r"\[iter\] iteration over a 0-d tensor"):
        iter(fc.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(torch.tensor(1.0))


@pytest.mark.parametrize("element", [2, 2.0, 5, True, -1.5, "tensor2", "tensor5", "tensor[[2]]"], ids=str)
def test_contains(element):
    def make(m):
        e = element
        if isinstance(e, str):
            e = m.tensor(2) if e == "tensor2" else m.tensor(5) if e == "tensor5" else m.tensor([[2]])
        return e in m.tensor([[1, 2], [3, 4]])

    got, want = both(make)
    assert got == want


@pytest.mark.parametrize("element", ["a", [2], None])
def test_contains_refuses_other_types(element):
    with pytest.raises(RuntimeError) as info:
        element in fc.tensor([1, 2])  # noqa: B015
    assert "only supports Tensor or scalar" in str(info.value)
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        element in torch.tensor([1, 2])  # noqa: B015


@pytest.mark.parametrize("data", [[0.0], [1.0], [[2]], 0, True, [False]])
def test_bool_of_one_element(data):
    got, want = both(lambda m: bool(m.tensor(data)))
    assert got == want


@pytest.mark.parametrize("data", [[1.0, 2.0], [], [[True, False]]])
def test_bool_of_several_elements_is_ambiguous(data):
    with pytest.raises(RuntimeError) as info:
        bool(fc.tensor(data))
    assert "ambiguous" in str(info.value) and "[bool]" in str(info.value)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(torch.tensor(data))


@pytest.mark.parametrize("call", [round, lambda t: round(t, 2), math.trunc], ids=["round", "round2", "trunc"])
def test_round_and_trunc_are_undefined_as_in_torch(call):
    # PyTorch 2.13 defines neither __round__ nor __trunc__: round t.item() (or use t.round()).
    with pytest.raises(TypeError, match="doesn't define"):
        call(torch.tensor(1.666))
    with pytest.raises(TypeError, match="doesn't define"):
        call(fc.tensor(1.666))
    assert round(fc.tensor(1.666).item(), 2) == round(torch.tensor(1.666).item(), 2)
