"""histogram and histogramdd (flambeau_core/_histogram.py) against PyTorch 2.13: int and tensor bins,
ranges, weights, density, edge values and out-of-range points, and the error paths."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(3)


def assert_same(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-6, atol=1e-12)


def convert(value, lib):
    if isinstance(value, np.ndarray):
        return fc.tensor(value) if lib is fc else torch.from_numpy(value)
    if isinstance(value, list):
        return [convert(v, lib) for v in value]
    return value


HIST_CASES = [
    ((20,), 5, {}),
    ((4, 5), 3, dict(range=(-1.0, 1.0))),
    ((30,), "edges", dict(weight="w")),
    ((30,), "edges", dict(weight="w", density=True)),
    ((30,), 7, dict(density=True)),
    ((0,), 3, {}),
    ((6,), 4, dict(range=(0.0, 0.0))),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "bins", "kwargs"), HIST_CASES)
def test_histogram_matches_torch(shape, bins, kwargs, dtype):
    a = np.asarray(RNG.standard_normal(shape).astype(dtype))
    if bins == "edges":
        bins = np.array([-2.0, -0.5, 0.0, 0.3, 2.0], dtype=dtype)
    kw = dict(kwargs)
    if kw.get("weight") == "w":
        kw["weight"] = np.asarray(RNG.uniform(0, 2, shape).astype(dtype))
    ours = fc.histogram(fc.tensor(a), convert(bins, fc), **{k: convert(v, fc) for k, v in kw.items()})
    theirs = torch.histogram(torch.from_numpy(a), convert(bins, torch), **{k: convert(v, torch) for k, v in kw.items()})
    assert ours._fields == ("hist", "bin_edges")
    assert_same(ours.hist, theirs.hist)
    assert_same(ours.bin_edges, theirs.bin_edges)
    assert_same(fc.tensor(a).histogram(convert(bins, fc), **{k: convert(v, fc) for k, v in kw.items()})[0], theirs.hist)


def test_histogram_counts_edges_and_ignores_outside():
    x = fc.tensor([0.0, 1.0, 2.0, 3.0, -0.1, 3.1, float("nan")])
    hist, edges = fc.histogram(x, fc.tensor([0.0, 1.0, 2.0, 3.0]))
    assert hist.tolist() == [1.0, 1.0, 2.0]  # the last bin is closed on the right
    with pytest.raises(fc.FlambeauError, match=r"\[histogram\] dimension 0's range \[nan, nan\] is not finite"):
        fc.histogram(fc.tensor([float("nan"), 1.0]), 3)


DD_CASES = [
    ((10, 2), 3, {}),
    ((4, 5, 3), [2, 3, 4], dict(range=[-1.0, 1.0, -2.0, 2.0, 0.0, 1.0])),
    ((12, 2), "edges", dict(weight="w", density=True)),
    ((12, 2), [4, 2], dict(weight="w")),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "bins", "kwargs"), DD_CASES)
def test_histogramdd_matches_torch(shape, bins, kwargs, dtype):
    a = np.asarray(RNG.standard_normal(shape).astype(dtype))
    if bins == "edges":
        bins = [np.array([-2.0, 0.0, 0.5, 2.0], dtype=dtype), np.array([-1.0, 1.0], dtype=dtype)]
    kw = dict(kwargs)
    if kw.get("weight") == "w":
        kw["weight"] = np.asarray(RNG.uniform(0, 2, shape[:-1]).astype(dtype))
    ours = fc.histogramdd(fc.tensor(a), convert(bins, fc), **{k: convert(v, fc) for k, v in kw.items()})
    theirs = torch.histogramdd(
        torch.from_numpy(a), convert(bins, torch), **{k: convert(v, torch) for k, v in kw.items()}
    )
    assert_same(ours.hist, theirs.hist)
    assert len(ours.bin_edges) == len(theirs.bin_edges)
    for e, te in zip(ours.bin_edges, theirs.bin_edges, strict=True):
        assert_same(e, te)


X = fc.tensor([1.0, 2.0, 1.0, 4.0, 2.5, 7.0])
ERRORS = [
    (lambda: fc.histogram(X, 0), fc.FlambeauError, r"\[histogram\] bins must be > 0, but got 0"),
    (lambda: fc.histogram(X, fc.tensor([1.0])), fc.FlambeauError, r"\[histogram\] bins must be > 0"),
    (lambda: fc.histogram(X, 3, range=(2.0, 1.0)), fc.FlambeauError, r"\[histogram\] min should not exceed max"),
    (lambda: fc.histogram(X, 3, range=(0.0, float("inf"))), fc.FlambeauError, r"\[histogram\] .* is not finite"),
    (lambda: fc.histogram(X, 3, weight=fc.ones(5)), fc.FlambeauError, r"\[histogram\] if weight tensor is provided"),
    (lambda: fc.histogram(X, 3, weight=fc.ones(6, dtype=fc.float64)), fc.FlambeauError, r"\[histogram\] .* same dtype"),
    (lambda: fc.histogram(X, fc.tensor([0.0, 1.0], dtype=fc.float64)), fc.FlambeauError, r"\[histogram\] .*same dtype"),
    (lambda: fc.histogram(X, fc.tensor([[0.0, 1.0]])), fc.FlambeauError, r"\[histogram\] bins tensor should have one"),
    (lambda: fc.histogram(fc.tensor([1, 2]), 3), TypeError, r"\[histogram\] expected a float32 or float64 input"),
    (lambda: fc.histogram([1.0], 3), TypeError, r"\[histogram\] expected a Tensor"),
    (lambda: fc.histogramdd(X, 2), fc.FlambeauError, r"\[histogramdd\] input tensor should have at least 2 dim"),
    (lambda: fc.histogramdd(X.reshape(3, 2), [2, 3, 4]), fc.FlambeauError, r"\[histogramdd\] The size of bins"),
    (lambda: fc.histogramdd(X.reshape(3, 2), 2, range=[0.0, 5.0]), fc.FlambeauError, r"range should have 4 elements"),
    (lambda: fc.histogramdd(X.reshape(3, 2), 2, weight=fc.ones(6)), fc.FlambeauError, r"\[histogramdd\] if weight"),
]


@pytest.mark.parametrize(("call", "exc", "words"), ERRORS)
def test_histogram_errors(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
