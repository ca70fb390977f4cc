"""max/min/argmax/argmin/amax/amin against PyTorch 2.13: widened to float16 and bfloat16 (uint16/32/64
and complex stay refused, as in PyTorch), the one-pass float arg-extremum (first index of ties, first
NaN), non-contiguous half inputs."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import assert_same_as_torch, from_torch, to_numpy

pytestmark = pytest.mark.on_devices

HALF = ["float16", "bfloat16"]


def ties_and_nans(shape, dtype, rng, nan=True):
    x = torch.tensor(rng.integers(-3, 4, size=shape).astype(np.float32)).to(getattr(torch, dtype))
    if nan and x.numel() > 4:
        flat = x.view(-1)
        flat[rng.integers(0, x.numel(), size=2)] = float("nan")
    return x


@pytest.mark.parametrize("dtype", HALF + ["float32", "float64"])
@pytest.mark.parametrize("shape,dim", [((7, 5), 1), ((7, 5), 0), ((3, 130), 1), ((2, 3, 1001), -1), ((129,), 0)])
@pytest.mark.parametrize("nan", [False, True])
def test_extrema_with_dim_match_torch(dtype, shape, dim, nan):
    rng = np.random.default_rng(sum(shape) + dim)
    x = ties_and_nans(shape, dtype, rng, nan)
    f = from_torch(x)
    for name in ("max", "min"):
        fv, fi = getattr(f, name)(dim)
        tv, ti = getattr(x, name)(dim)
        assert_same_as_torch(fv, tv)
        assert_same_as_torch(fi, ti)
        assert_same_as_torch(getattr(f, "arg" + name)(dim), getattr(x, "arg" + name)(dim))
        assert_same_as_torch(getattr(f, "a" + name)(dim), getattr(x, "a" + name)(dim))
        assert_same_as_torch(getattr(f, name)(), getattr(x, name)())
        assert_same_as_torch(getattr(f, "arg" + name)(), getattr(x, "arg" + name)())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 127, 128, 129, 255, 1000, 4097])
def test_float_arg_extremum_first_tie_and_first_nan(dtype, n):
    rng = np.random.default_rng(n)
    x = torch.tensor(rng.integers(0, 4, size=(6, n))).to(getattr(torch, dtype))
    if n > 3:
        x[1, n - 1] = 9  # the maximum in the tail
        x[2, [n // 2, n - 2]] = float("nan")
        x[3, 0] = float("nan")
        x[4, :] = 1  # all ties
    f = from_torch(x)
    for name in ("max", "min"):
        fv, fi = getattr(f, name)(1)
        tv, ti = getattr(x, name)(1)
        assert_same_as_torch(fi, ti)
        assert_same_as_torch(fv, tv)


def test_extrema_noncontiguous_half():
    x = torch.randn(6, 8).to(torch.float16)
    f = from_torch(x)
    assert_same_as_torch(f.t().max(1)[0], x.t().max(1)[0])
    assert_same_as_torch(f.t().argmin(1), x.t().argmin(1))
    assert_same_as_torch(f[:, ::2].amax(0), x[:, ::2].amax(0))


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64", "complex64", "complex128"])
@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "amax", "amin"])
def test_extrema_refuse_the_dtypes_torch_refuses(dtype, op):
    t = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    with pytest.raises((TypeError, RuntimeError, NotImplementedError)):
        getattr(t, op)(1)
    f = fc.zeros(2, 3, dtype=getattr(fc, dtype))
    with pytest.raises(TypeError, match=rf"\[{op}\].*{dtype}"):
        getattr(f, op)(1)


@pytest.mark.parametrize("n", [1, 5, 63, 64, 65, 100, 127, 128, 129, 1000, 1023, 4096, 5000])
def test_float32_arg_extremum_rows(n):
    """max/min/argmax/argmin along the last dim of float32 rows (the AVX-512 register loop for
    64 <= n): first index of ties, first NaN, maxima in the masked tail, non-contiguous input."""
    rng = np.random.default_rng(n)
    for trial in range(12):
        x = rng.standard_normal((7, n)).astype(np.float32)
        if trial % 3 == 0:
            x = np.round(x)  # many ties
        if trial % 4 == 1:
            x[rng.integers(0, 7), rng.integers(0, n)] = np.nan
            x[rng.integers(0, 7), rng.integers(0, n)] = np.nan
        if trial % 4 == 2:
            x[:, -1] = 100.0  # the best in the tail
            x[:, 0] = -100.0
        if trial % 4 == 3:
            x[:, :] = -0.0
            x[:, n // 2] = 0.0  # signed zeros compare equal: the first index wins
        t = torch.from_numpy(x)
        f = fc.tensor(x)
        for fn in ("max", "min"):
            v, i = getattr(f, fn)(-1)
            tv, ti = getattr(t, fn)(-1)
            np.testing.assert_array_equal(to_numpy(i), ti.numpy())
            np.testing.assert_array_equal(to_numpy(v), tv.numpy())
        np.testing.assert_array_equal(to_numpy(f.argmax(-1)), t.argmax(-1).numpy())
        np.testing.assert_array_equal(to_numpy(f.argmin(-1)), t.argmin(-1).numpy())
    xt = np.ascontiguousarray(rng.standard_normal((n, 3)).astype(np.float32))
    np.testing.assert_array_equal(to_numpy(fc.tensor(xt).t().argmax(-1)), torch.from_numpy(xt).t().argmax(-1).numpy())
