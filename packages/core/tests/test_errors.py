"""The Python exceptions core raises (Note [Errors] in flambeau/error.h).

Shape and value errors are one class, ``flambeau_core.FlambeauError``, which
derives from both ``RuntimeError`` (what PyTorch raises, so PyTorch code
catches it) and ``ValueError``; dtype errors stay ``TypeError`` and index
errors ``IndexError``.
"""

from __future__ import annotations

import pickle

import flambeau_core as fc
import pytest


def test_flambeau_error_derives_from_runtime_error_and_value_error():
    assert fc.FlambeauError.__mro__ == (
        fc.FlambeauError,
        RuntimeError,
        ValueError,
        Exception,
        BaseException,
        object,
    )
    assert fc.FlambeauError.__module__ == "flambeau_core"
    assert fc.FlambeauError is fc._C.FlambeauError
    assert "RuntimeError" in fc.FlambeauError.__doc__ and "ValueError" in fc.FlambeauError.__doc__


def _broadcast_error():
    return fc.ones(2, 3) + fc.ones(4)


@pytest.mark.parametrize("caught", [RuntimeError, ValueError, fc.FlambeauError])
def test_a_shape_error_is_caught_by_either_habit(caught):
    with pytest.raises(caught, match=r"^\[add\] shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        _broadcast_error()


@pytest.mark.parametrize(
    "bad, op",
    [
        (lambda: fc.ones(2, 3) @ fc.ones(4, 5), "matmul"),
        (lambda: fc.ones(2, 3).view(7), "view"),
        (lambda: fc.ones(6).reshape(4, -1), "reshape"),
        (lambda: fc.zeros(2).uniform_(1.0, 0.0), "uniform_"),
        (lambda: fc.full((2,), 1000, dtype=fc.int8), "fill_"),
        (lambda: fc.zeros(3).expand(2, 3).normal_(), "normal_"),
        (lambda: fc.tensor([[1, 2], [3]]), "tensor"),
    ],
)
def test_shape_and_value_errors_are_flambeau_errors(bad, op):
    with pytest.raises(fc.FlambeauError) as info:
        bad()
    assert str(info.value).startswith(f"[{op}]"), str(info.value)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)


def test_type_and_index_errors_keep_their_python_classes():
    with pytest.raises(TypeError) as info:
        fc.ones(2, dtype=fc.bool) - fc.ones(2, dtype=fc.bool)
    assert not isinstance(info.value, fc.FlambeauError)
    with pytest.raises(IndexError) as info:
        fc.ones(2, 3).sum(5)
    assert not isinstance(info.value, fc.FlambeauError)


def test_flambeau_error_pickles_by_name():
    # A DataLoader worker sends its exception to the main process pickled.
    with pytest.raises(fc.FlambeauError) as info:
        _broadcast_error()
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is fc.FlambeauError
    assert back.args == info.value.args
