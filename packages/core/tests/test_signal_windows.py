"""flambeau.signal.windows and the top-level window functions (hann_window, ...) against PyTorch 2.13:
values in float32 and float64 for symmetric and periodic windows of every length from 0 up, each window's
parameters, the keyword defaults, and the error paths (negative length, layout, dtype, bad parameters)."""

from __future__ import annotations

import inspect

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy, torch_numpy

pytestmark = pytest.mark.on_devices

W = fc.signal.windows
TW = torch.signal.windows
DTYPES = {"float32": (fc.float32, torch.float32), "float64": (fc.float64, torch.float64)}
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14)}
LENGTHS = [0, 1, 2, 3, 4, 7, 16, 33]

# name -> the parameter sets each window is checked with (besides its defaults)
PARAMS = {
    "bartlett": [{}],
    "blackman": [{}],
    "cosine": [{}],
    "exponential": [{}, {"tau": 0.5}, {"tau": 3.0}],
    "gaussian": [{}, {"std": 0.3}, {"std": 4.0}],
    "general_cosine": [{"a": [0.46, 0.23, 0.31]}, {"a": (1.0,)}, {"a": [0.21557895, 0.41663158, 0.277263158]}],
    "general_hamming": [{}, {"alpha": 0.5}, {"alpha": 0.7}],
    "hamming": [{}],
    "hann": [{}],
    "kaiser": [{}, {"beta": 0.0}, {"beta": 4.0}, {"beta": 30.0}],
    "nuttall": [{}],
}


def assert_window(ours: fc.Tensor, theirs: torch.Tensor, dtype: str) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).removeprefix("flambeau.") == str(theirs.dtype).removeprefix("torch.")
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(ours), torch_numpy(theirs), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(PARAMS))
def test_window_values_match_torch(name, dtype):
    fc_dt, th_dt = DTYPES[dtype]
    for params in PARAMS[name]:
        for sym in (True, False):
            for M in LENGTHS:
                ours = getattr(W, name)(M, sym=sym, dtype=fc_dt, **params)
                theirs = getattr(TW, name)(M, sym=sym, dtype=th_dt, **params)
                assert_window(ours, theirs, dtype)


@pytest.mark.parametrize("center", [0.0, 2.5, 7.0, -1.0])
def test_exponential_center_of_periodic_window(center):
    for M in (1, 6, 9):
        ours = W.exponential(M, center=center, tau=2.0, sym=False, dtype=fc.float64)
        assert_window(ours, TW.exponential(M, center=center, tau=2.0, sym=False, dtype=torch.float64), "float64")


def test_signatures_and_defaults_are_torchs():
    for name in PARAMS:
        ours, theirs = inspect.signature(getattr(W, name)), inspect.signature(getattr(TW, name))
        assert list(ours.parameters) == list(theirs.parameters), name
        for p in ours.parameters.values():
            q = theirs.parameters[p.name]
            assert p.kind == q.kind, (name, p.name)
            if p.name == "layout":
                assert p.default is fc.sparse.strided
            elif p.name != "a":
                assert p.default == q.default, (name, p.name)
    assert W.__all__ == TW.__all__


def test_default_dtype_and_leaf_requiring_grad():
    w = W.hann(5)
    assert w.dtype == fc.get_default_dtype() == fc.float32
    assert not w.requires_grad
    fc.set_default_dtype(fc.float64)
    try:
        assert W.kaiser(4).dtype == fc.float64
        assert fc.bartlett_window(4).dtype == fc.float64
    finally:
        fc.set_default_dtype(fc.float32)


def test_edge_lengths():
    for name, params in PARAMS.items():
        empty = getattr(W, name)(0, **params[0])
        assert tuple(empty.shape) == (0,) and empty.dtype == fc.float32
        assert getattr(W, name)(1, sym=False, **params[0]).tolist() == [1.0]
    # general_cosine answers M = 0 and M = 1 before looking at the coefficients, as PyTorch
    assert W.general_cosine(1, a=[]).tolist() == [1.0]
    assert W.general_cosine(0, a=5).tolist() == []


def test_length_may_be_any_integer_type():
    assert W.hann(np.int64(5)).tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]


@pytest.mark.parametrize("name", list(PARAMS))
def test_window_errors(name):
    params = PARAMS[name][0]
    fn = getattr(W, name)
    with pytest.raises(
        ValueError, match=rf"^\[signal\.windows\.{name}\] requires non-negative window length, got M=-1"
    ):
        fn(-1, **params)
    with pytest.raises(
        ValueError, match=rf"\[signal\.windows\.{name}\] expects float32 or float64 dtypes, got: .*int64"
    ):
        fn(4, dtype=fc.int64, **params)
    with pytest.raises(ValueError, match=r"float32 or float64 dtypes, got: .*float16"):
        fn(4, dtype=fc.float16, **params)
    with pytest.raises(ValueError, match=r"implemented for strided tensors only"):
        fn(4, layout=fc.sparse.sparse_coo, **params)
    with pytest.raises(TypeError, match=rf"^\[signal\.windows\.{name}\] the window length M must be an int, got float"):
        fn(4.0, **params)
    # torch raises the same types
    with pytest.raises(ValueError):
        getattr(TW, name)(-1, **params)
    with pytest.raises(ValueError):
        getattr(TW, name)(4, dtype=torch.int64, **params)


def test_parameter_errors():
    cases = [
        (
            W.exponential,
            TW.exponential,
            {"tau": 0.0},
            ValueError,
            r"\[signal\.windows\.exponential\] Tau must be positive",
        ),
        (W.exponential, TW.exponential, {"tau": -1.0}, ValueError, r"Tau must be positive, got: -1.0"),
        (W.exponential, TW.exponential, {"center": 1.0}, ValueError, r"Center must be None for symmetric windows"),
        (
            W.gaussian,
            TW.gaussian,
            {"std": 0.0},
            ValueError,
            r"\[signal\.windows\.gaussian\] Standard deviation must be positive",
        ),
        (
            W.kaiser,
            TW.kaiser,
            {"beta": -0.5},
            ValueError,
            r"\[signal\.windows\.kaiser\] beta must be non-negative, got: -0.5",
        ),
        (
            W.general_cosine,
            TW.general_cosine,
            {"a": []},
            ValueError,
            r"\[signal\.windows\.general_cosine\] Coefficients cannot be empty",
        ),
        (
            W.general_cosine,
            TW.general_cosine,
            {"a": 0.5},
            TypeError,
            r"\[signal\.windows\.general_cosine\] Coefficients must be a list/tuple",
        ),
    ]
    for ours, theirs, kwargs, exc, message in cases:
        with pytest.raises(exc, match=message):
            ours(5, **kwargs)
        with pytest.raises(exc):
            theirs(5, **kwargs)
    with pytest.raises(TypeError, match=r"Coefficients must be real numbers"):
        W.general_cosine(5, a=["x"])
    with pytest.raises(TypeError, match=r"\[signal\.windows\.gaussian\] std must be a real number, got str"):
        W.gaussian(5, std="wide")


# ---- the top-level functions: hann_window(window_length, periodic=True, ...) ----

TOP_LEVEL = {
    "hann_window": [()],
    "hamming_window": [(), (0.5,), (0.6, 0.3)],
    "blackman_window": [()],
    "bartlett_window": [()],
    "kaiser_window": [(), (0.0,), (5.0,), (-3.0,)],
}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(TOP_LEVEL))
def test_top_level_windows_match_torch(name, dtype):
    fc_dt, th_dt = DTYPES[dtype]
    for extra in TOP_LEVEL[name]:
        for periodic in (True, False):
            for n in LENGTHS:
                ours = getattr(fc, name)(n, periodic, *extra, dtype=fc_dt)
                theirs = getattr(torch, name)(n, periodic, *extra, dtype=th_dt)
                assert_window(ours, theirs, dtype)
    # the default is periodic
    assert_window(getattr(fc, name)(7, dtype=fc_dt), getattr(torch, name)(7, dtype=th_dt), dtype)


@pytest.mark.parametrize("name", list(TOP_LEVEL))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_top_level_windows_in_half_precision(name, dtype):
    ours = getattr(fc, name)(9, dtype=getattr(fc, dtype))
    theirs = getattr(torch, name)(9, dtype=getattr(torch, dtype))
    assert str(ours.dtype).removeprefix("flambeau.") == dtype
    tol = 1e-3 if dtype == "float16" else 1e-2
    np.testing.assert_allclose(to_numpy(ours), torch_numpy(theirs), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(TOP_LEVEL))
def test_top_level_window_errors(name):
    fn = getattr(fc, name)
    with pytest.raises(RuntimeError, match=rf"^\[{name}\] requires non-negative window_length, got window_length=-2"):
        fn(-2)
    # the dtype is checked first, as PyTorch's
    with pytest.raises(RuntimeError, match=rf"^\[{name}\] expects floating point dtypes, got: .*int32"):
        fn(-2, dtype=fc.int32)
    with pytest.raises(RuntimeError):
        getattr(torch, name)(-2)
    with pytest.raises(RuntimeError):
        getattr(torch, name)(4, dtype=torch.int32)
    with pytest.raises(TypeError, match=rf"^\[{name}\] window_length must be an int, got str"):
        fn("4")


def test_top_level_parameter_types():
    with pytest.raises(TypeError, match=r"^\[hamming_window\] beta must be a real number, got str"):
        fc.hamming_window(4, True, 0.5, "x")
    with pytest.raises(TypeError, match=r"^\[kaiser_window\] beta must be a real number, got NoneType"):
        fc.kaiser_window(4, True, None)
