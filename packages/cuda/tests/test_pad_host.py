"""flambeau-cuda's _pad_nd and _pad_nd_backward (src/shape_ops.cpp: core's CPU pad of an int64 arange as the
gather map, then dispatched ops) run on cpu tensors through _C._pad_on_host / _C._pad_backward_on_host, against
core's CPU kernels: every mode, negative pads (crops), pads on 1 to 3 dims, dtypes (bool, int, float), non-
contiguous inputs, empty inputs, and the error paths (core's checks and messages)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
from flambeau_cuda import _C


def _x(shape, dtype=fc.float64):
    fc.manual_seed(sum(shape))
    x = (fc.randn(*shape) * 3).round()
    return x > 0 if dtype == fc.bool else x.to(dtype)


CONSTANT = [[1, 2], [0, 0], [-1, 2], [2, -3], [1, 1, 2, 0], [-1, -1, 1, 2], [1, 0, 0, 1, 2, 1], [3, 3, 0, 0, 0, 0]]


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64, fc.int64, fc.uint8, fc.bool])
@pytest.mark.parametrize("pad", CONSTANT, ids=str)
def test_constant_pad_matches_core(pad, dtype):
    x = _x((2, 3, 4, 5), dtype).transpose(1, 3)  # (2, 5, 4, 3), not contiguous
    value = 1.0 if dtype == fc.bool else 2.5
    got = _C._pad_on_host(x, pad, "constant", value)
    exp = fc._C._pad_nd(x, pad, "constant", value)
    assert got.dtype == exp.dtype and got.shape == exp.shape and got.is_contiguous()
    assert got.tolist() == exp.tolist()
    if dtype in (fc.float32, fc.float64):
        g = _x(tuple(exp.shape), dtype)
        assert (
            _C._pad_backward_on_host(g, list(x.shape), pad, "constant").tolist()
            == fc._C._pad_nd_backward(g, list(x.shape), pad, "constant").tolist()
        )


MODES = [
    ("reflect", (2, 3, 5), [2, 1]),
    ("reflect", (1, 2, 4, 5), [1, 3, 2, 0]),
    ("reflect", (1, 1, 3, 4, 5), [1, 1, 2, 2, 0, 1]),
    ("replicate", (2, 3, 5), [4, 1]),
    ("replicate", (2, 4, 5), [0, 6, 3, 2]),
    ("replicate", (1, 2, 3, 2, 2), [2, 1, 0, 3, 1, 1]),
    ("circular", (2, 3, 5), [2, 3]),
    ("circular", (1, 2, 4, 5), [1, 2, 3, 0]),
    ("circular", (1, 2, 3, 4, 3), [1, 1, 2, 1, 0, 2]),
    ("reflect", (2, 3, 5), [-1, 2]),
    ("circular", (2, 3, 5), [-1, 2]),
]


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
@pytest.mark.parametrize(("mode", "shape", "pad"), MODES, ids=str)
def test_modes_match_core(mode, shape, pad, dtype):
    x = _x(shape, dtype)
    x = x.transpose(-1, -2).contiguous().transpose(-1, -2)  # same values, not contiguous
    got = _C._pad_on_host(x, pad, mode, 0.0)
    exp = fc._C._pad_nd(x, pad, mode, 0.0)
    assert got.shape == exp.shape and got.tolist() == exp.tolist()
    g = _x(tuple(exp.shape), dtype) + 0.25
    gi = _C._pad_backward_on_host(g, list(shape), pad, mode)
    ge = fc._C._pad_nd_backward(g, list(shape), pad, mode)
    assert gi.shape == ge.shape
    assert gi.tolist() == ge.tolist()  # quarter-integers: the sums are exact in any order


def test_empty_inputs_match_core():
    x = fc.zeros(2, 0, 3)
    for pad in ([1, 1], [0, 0, 1, 2]):
        got, exp = _C._pad_on_host(x, pad, "constant", 4.0), fc._C._pad_nd(x, pad, "constant", 4.0)
        assert got.shape == exp.shape and got.tolist() == exp.tolist()


def test_errors_match_core():
    x = fc.ones(2, 3)
    cases = [
        (ValueError, r"\[pad\] padding length must be divisible by 2", (x, [1], "constant", 0.0)),
        (NotImplementedError, r"\[pad\] unsupported padding mode 'wrap'", (x, [1, 1], "wrap", 0.0)),
        (ValueError, r"doesn't take in value argument", (x, [1, 1], "reflect", 1.0)),
        (TypeError, r"pad", (fc.ones(2, 3, dtype=fc.complex64), [1, 1], "constant", 0.0)),
    ]
    for exc, msg, args in cases:
        with pytest.raises(exc, match=msg):
            _C._pad_on_host(*args)
        with pytest.raises(exc, match=msg):
            fc._C._pad_nd(*args)
    with pytest.raises(ValueError, match=r"\[pad_backward\] grad_output has shape"):
        _C._pad_backward_on_host(fc.ones(2, 4), [2, 3], [1, 1], "constant")
    with pytest.raises(TypeError, match=r"\[pad_backward\] needs a float32 or float64"):
        _C._pad_backward_on_host(fc.ones(2, 3, 7, dtype=fc.int64), [2, 3, 5], [1, 1], "reflect")
