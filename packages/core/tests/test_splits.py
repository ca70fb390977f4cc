"""split_with_sizes, unsafe_split / unsafe_chunk / unsafe_split_with_sizes and hsplit / vsplit / dsplit
(functions and Tensor methods) against PyTorch 2.13: pieces, views of the input, int and list forms,
the errors, and fuzzed sizes."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import same_as_torch_or_refused, to_numpy

pytestmark = pytest.mark.on_devices

A = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)

CASES = [
    ("split_with_sizes", A, ([1, 3], 1)),
    ("split_with_sizes", A, ([2, 0, 4], -1)),
    ("unsafe_split_with_sizes", A, ([1, 1], 0)),
    ("unsafe_split", A, (4, 2)),
    ("unsafe_split", A, (3,)),
    ("unsafe_chunk", A, (4, 2)),
    ("unsafe_chunk", A, (3, 1)),
    ("hsplit", A, (2,)),
    ("hsplit", A, ([1, 3],)),
    ("hsplit", A, ((1, 10),)),
    ("hsplit", A[0, 0], (3,)),
    ("hsplit", A[0, 0], ([2, 2, 5],)),
    ("vsplit", A, (2,)),
    ("vsplit", A, ([1],)),
    ("vsplit", A[0], ([3, 1],)),
    ("dsplit", A, (3,)),
    ("dsplit", A, ([-1],)),
]


def check_pieces(got, expected):
    assert isinstance(got, tuple) and len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == tuple(e.shape)
        np.testing.assert_array_equal(to_numpy(g), e.numpy())


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}{c[2]}-{c[1].ndim}d")
def test_pieces(case):
    name, a, args = case
    expected = getattr(torch, name)(torch.from_numpy(a), *args)
    check_pieces(getattr(fc, name)(fc.tensor(a), *args), expected)
    check_pieces(getattr(fc.tensor(a), name)(*args), getattr(torch.from_numpy(a), name)(*args))


@pytest.mark.parametrize("name", ["split_with_sizes", "unsafe_split", "unsafe_chunk", "hsplit"])
def test_pieces_are_views(name):
    x = fc.zeros(2, 4)
    args = {"split_with_sizes": ([1, 3], 1), "unsafe_split": (2, 1), "unsafe_chunk": (2, 1), "hsplit": (2,)}[name]
    pieces = getattr(fc, name)(x, *args)
    x.fill_(7.0)
    assert all(to_numpy(p).min() == 7.0 for p in pieces)


def test_keywords():
    x, t = fc.tensor(A), torch.from_numpy(A)
    check_pieces(x.split_with_sizes(split_sizes=[1, 3], dim=1), t.split_with_sizes(split_sizes=[1, 3], dim=1))
    check_pieces(fc.unsafe_chunk(x, chunks=2, dim=2), torch.unsafe_chunk(t, chunks=2, dim=2))


ERRORS = [
    (lambda x: fc.split_with_sizes(x, [1, 2], 1), fc.FlambeauError, r"^\[split_with_sizes\] .*must sum exactly to 4"),
    (lambda x: fc.split_with_sizes(x, [1, -1, 4], 1), fc.FlambeauError, r"^\[split_with_sizes\] .*non-negative"),
    (lambda x: fc.split_with_sizes(x, 2, 1), TypeError, r"^\[split_with_sizes\] expected 'split_sizes' as a list"),
    (lambda x: fc.split_with_sizes(x, [2, 2], 5), IndexError, r"^\[split_with_sizes\] .*out of range"),
    (lambda x: fc.unsafe_split(x, [1, 3], 1), TypeError, r"^\[unsafe_split\] expected an int 'split_size', got list"),
    (lambda x: fc.unsafe_split(x, 0, 1), fc.FlambeauError, r"^\[unsafe_split\] split_size can only be 0"),
    (lambda x: fc.unsafe_split(x, -1, 1), fc.FlambeauError, r"^\[unsafe_split\] split_size must be non-negative"),
    (lambda x: fc.unsafe_chunk(x, 0, 1), fc.FlambeauError, r"^\[unsafe_chunk\] chunks must be greater than 0"),
    (lambda x: fc.unsafe_split_with_sizes(x, [5], 1), fc.FlambeauError, r"^\[unsafe_split_with_sizes\] .*sum"),
    (
        lambda x: fc.hsplit(x, 3),
        fc.FlambeauError,
        r"^\[hsplit\] attempted to split along dimension 1, but the size of the dimension 4 is not divisible by the "
        r"split_size 3",
    ),
    (lambda x: fc.vsplit(x, 0), fc.FlambeauError, r"^\[vsplit\] .*not divisible by the split_size 0"),
    (lambda x: fc.hsplit(x, -2), fc.FlambeauError, r"^\[hsplit\] number of sections must be larger than 0, got -2"),
    (lambda x: fc.hsplit(x, 2.0), TypeError, r"^\[hsplit\] expected 'indices_or_sections' as a list"),
    (
        lambda x: fc.hsplit(fc.tensor(1.0), 1),
        fc.FlambeauError,
        r"^\[hsplit\] requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions",
    ),
    (lambda x: fc.vsplit(x[0, 0], 2), fc.FlambeauError, r"^\[vsplit\] requires a tensor with at least 2 dimensions"),
    (lambda x: fc.dsplit(x[0], 2), fc.FlambeauError, r"^\[dsplit\] requires a tensor with at least 3 dimensions"),
    (lambda x: fc.unsafe_chunk([1], 2), TypeError, r"^\[unsafe_chunk\] expected a Tensor as 'input', got list"),
]


@pytest.mark.parametrize(("call", "error", "message"), ERRORS, ids=[m for _, _, m in ERRORS])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(fc.zeros(2, 4, 6))


def test_torch_raises_runtime_errors_for_the_sizes():
    t = torch.zeros(2, 4, 6)
    for call in (
        lambda: torch.split_with_sizes(t, [1, 2], 1),
        lambda: torch.hsplit(t, 3),
        lambda: torch.hsplit(t, -2),
        lambda: torch.vsplit(t[0, 0], 2),
        lambda: torch.unsafe_chunk(t, 0, 1),
    ):
        with pytest.raises(RuntimeError):
            call()


@pytest.mark.parametrize("n", [-(2**62), -3, -1, 0, 1, 2, 5, 2**31, 2**62])
def test_fuzzed_sizes(n):
    x, t = fc.tensor(A), torch.from_numpy(A)
    for name, args in [
        ("split_with_sizes", ([n, 4 - n], 1)),
        ("unsafe_split", (n, 1)),
        ("unsafe_chunk", (n, 1)),
        ("hsplit", (n,)),
        ("hsplit", ([n],)),
        ("vsplit", ([1, n],)),
        ("dsplit", (n,)),
    ]:
        same_as_torch_or_refused(name, getattr(fc, name), getattr(torch, name), (x, *args), (t, *args))
