"""Python numbers out of a dtype's range (Note [Scalar overflow] in flambeau/scalar.h).

Where a number becomes an element of a dtype (fill_, full, zeros/ones,
``t[i] = v``, tensor([...]), alpha, an integer exponent) a value the dtype
cannot hold raises, as PyTorch's checked conversion does, instead of wrapping
silently; wrapped numbers in binary ops wrap, as in PyTorch. Every case is
checked against PyTorch.
"""

from __future__ import annotations

import math

import flambeau_core as fc
import pytest
import torch

INF, NAN = math.inf, math.nan

# (dtype name, value): in range, at the edges, and beyond them.
VALUES = [
    ("int8", 127),
    ("int8", -128),
    ("int8", 128),
    ("int8", -129),
    ("int8", 1000),
    ("int8", 1000.0),
    ("int8", 127.5),
    ("int8", 1.5),
    ("int8", -1.9),
    ("int8", NAN),
    ("int8", INF),
    ("int8", True),
    ("uint8", 255),
    ("uint8", 256),
    ("uint8", -1),  # unsigned dtypes take negatives down to -max: they wrap (255)
    ("uint8", -255),
    ("uint8", -256),
    ("uint8", -1.0),
    ("int16", 40000),
    ("int32", 2**31 - 1),
    ("int32", 2**31),
    ("int32", 2**40),
    ("int64", 2**63 - 1),
    ("int64", -(2**63)),
    ("int64", 1e19),
    ("int64", -INF),
    ("float32", 1e300),
    ("float32", -1e300),
    ("float32", 3e38),
    ("float32", INF),
    ("float32", NAN),
    ("float32", 2**62),
    ("float64", 1e300),
    ("bool", 5),
    ("bool", 2.5),
    ("bool", -1),
]


def _full(m, dtype, v):
    return m.full((2,), v, dtype=dtype)


def _fill(m, dtype, v):
    return m.zeros(2, dtype=dtype).fill_(v)


def _setitem(m, dtype, v):
    t = m.zeros(3, dtype=dtype)
    t[1] = v
    return t


def _setitem_slice(m, dtype, v):
    t = m.zeros(3, dtype=dtype)
    t[1:] = v
    return t


def _setitem_advanced(m, dtype, v):
    t = m.zeros(3, dtype=dtype)
    t[m.tensor([2, 0])] = v
    return t


def _tensor(m, dtype, v):
    return m.tensor([1, v], dtype=dtype)


WAYS = {
    "full": _full,
    "fill_": _fill,
    "setitem": _setitem,
    "setitem slice": _setitem_slice,
    "setitem advanced": _setitem_advanced,
    "tensor": _tensor,
}
# The op named in flambeau's message: setitem writes with fill_ (or makes its value with it).
OP_IN_MESSAGE = {way: "tensor" if way == "tensor" else "fill_" for way in WAYS}


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert (isinstance(g, float) and math.isnan(g) and math.isnan(w)) or g == w, (got, want)


@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize("dtype, value", VALUES, ids=[f"{d}-{v}" for d, v in VALUES])
def test_numbers_out_of_range_raise_like_torch(way, dtype, value):
    make = WAYS[way]
    try:
        want = make(torch, getattr(torch, dtype), value).tolist()
    except RuntimeError as e:
        assert "without overflow" in str(e)
        want = None
    if want is None:
        pattern = rf"^\[{OP_IN_MESSAGE[way]}\] value .* cannot be converted to type {dtype} without overflow$"
        with pytest.raises(fc.FlambeauError, match=pattern):
            make(fc, getattr(fc, dtype), value)
    else:
        _same(make(fc, getattr(fc, dtype), value).tolist(), want)


def test_message_names_the_value_as_python_writes_it():
    with pytest.raises(RuntimeError, match=r"^\[fill_\] value 1000 cannot be converted to type int8 without overflow$"):
        fc.full((2,), 1000, dtype=fc.int8)
    with pytest.raises(ValueError, match=r"\[fill_\] value 1000.0 cannot be converted to type int8"):
        fc.zeros(2, dtype=fc.int8).fill_(1000.0)
    with pytest.raises(ValueError, match=r"\[fill_\] value 1e\+300 cannot be converted to type float32"):
        fc.full((1,), 1e300)
    with pytest.raises(ValueError, match=r"\[fill_\] value nan cannot be converted to type int32"):
        fc.zeros(1, dtype=fc.int32)[0] = NAN
    with pytest.raises(ValueError, match=r"\[fill_\] value 1099511627776 cannot be converted to type int32"):
        fc.zeros(1, dtype=fc.int32)[0] = 2**40


def test_a_failed_write_changes_nothing():
    t = fc.tensor([1, 2, 3], dtype=fc.int8)
    v = t._version
    with pytest.raises(fc.FlambeauError):
        t[:] = 200
    assert t.tolist() == [1, 2, 3] and t._version == v


@pytest.mark.parametrize(
    "expr",
    [
        "t + 1000",
        "t + 200",
        "t * 1000",
        "t - 1000",
        "t + 2**40",
        "t == 1000",
        "t < 1000",
        "t + 1000.0",
        "u + -1",
        "u - 300",
        "t.clone().add_(1000)",
        "t.clone().mul_(300)",
        "fc_or_torch.maximum(t, fc_or_torch.tensor(1000))",
        "fc_or_torch.add(t, 1000, alpha=2)",
        "t ** 127",
        "t.fill_(fc_or_torch.tensor(1000))",
        "t.clone().copy_(fc_or_torch.tensor([300, 1000]))",
    ],
)
def test_wrapped_numbers_and_tensor_values_wrap_like_torch(expr):
    """A Python number as an operand of a binary op is converted to the
    result dtype silently (PyTorch wraps `int8_tensor + 1000` too), and so is a
    tensor copied into another dtype; only a number becoming a fill value,
    alpha or an exponent is checked."""
    results = []
    for m in (torch, fc):
        env = {"t": m.tensor([1, 2], dtype=m.int8), "u": m.tensor([1, 2], dtype=m.uint8), "fc_or_torch": m}
        results.append(eval(expr, env).tolist())  # the fixed expressions above
    assert results[1] == results[0]


@pytest.mark.parametrize("exponent, ok", [(127, True), (128, False), (1000, False)])
def test_integer_exponent_must_fit_the_dtype(exponent, ok):
    t = fc.tensor([1, 2], dtype=fc.int8)
    if ok:
        assert (t**exponent).tolist() == (torch.tensor([1, 2], dtype=torch.int8) ** exponent).tolist()
    else:
        with pytest.raises(fc.FlambeauError, match=rf"\[pow\] value {exponent} cannot be converted to type int8"):
            t**exponent
        with pytest.raises(RuntimeError, match="without overflow"):
            torch.tensor([1, 2], dtype=torch.int8) ** exponent


def test_zeros_ones_and_wrapped_scalars_are_unaffected():
    for dt in (fc.bool, fc.uint8, fc.int8, fc.int16, fc.int32, fc.int64, fc.float32, fc.float64):
        assert fc.zeros(2, dtype=dt).tolist() == [0, 0]
        assert fc.ones(2, dtype=dt).tolist() == [1, 1]
    assert (fc.tensor([1.0]) + 1e300).tolist() == [math.inf]  # float32 + a huge wrapped float: inf, as torch
