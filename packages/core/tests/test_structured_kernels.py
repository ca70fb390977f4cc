"""Note [Structured kernels]: a structured op's functional, out= and in-place forms reach its one out
kernel, which writes the output the meta step chose (a new tensor, the user's out=, or self) with no
intermediate tensor and no copy; the other cases (another out dtype, autograd recording) keep the
compute-and-copy path and its messages. Values against PyTorch 2.13."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C

FLOAT_UNARY = list(_C._elementwise_math_ops()["float_unary"])
ARITHMETIC = ["add", "sub", "mul", "div"]
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]
RNG = np.random.default_rng(11)


def npy(t: fc.Tensor) -> np.ndarray:
    return np.array(memoryview(t.contiguous()))


def trace(fn):
    _C._kernel_trace_start()
    try:
        fn()
    finally:
        rows = _C._kernel_trace_stop()
    return {r[0] for r in rows}


def values(shape, name=""):
    a = RNG.uniform(0.1, 0.9, shape)  # inside every domain of the unary list (acosh: shifted below)
    return (a + 1.0 if name == "acosh" else a).astype(np.float32)


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_unary_forms_share_one_kernel(name):
    a = values((3, 4), name)
    # torch spells the special functions torch.special.<name> (flambeau's table row: special_<name>)
    ref = getattr(torch.special, name.removeprefix("special_")) if name.startswith("special_") else getattr(torch, name)
    expected = ref(torch.from_numpy(a)).numpy()
    x = fc.tensor(a)
    np.testing.assert_allclose(npy(getattr(fc, name)(x)), expected, rtol=2e-6, atol=1e-7)
    out = fc.empty((3, 4))
    ptr = out.data_ptr()
    assert getattr(fc, name)(x, out=out) is out
    assert out.data_ptr() == ptr
    np.testing.assert_allclose(npy(out), expected, rtol=2e-6, atol=1e-7)
    if not hasattr(torch.Tensor, name + "_"):  # torch.special's functions have no in-place methods
        assert not hasattr(fc.Tensor, name + "_")
        return
    y = fc.tensor(a)
    ptr, v0 = y.data_ptr(), y._version
    assert getattr(y, name + "_")() is y
    assert y.data_ptr() == ptr and y._version > v0
    np.testing.assert_allclose(npy(y), expected, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ARITHMETIC + COMPARISONS)
def test_binary_out_is_written_by_the_kernel(name):
    a, b = values((4, 5)), values((1, 5))
    expected = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    out = fc.empty((4, 5), dtype=fc.bool if name in COMPARISONS else fc.float32)
    ptr = out.data_ptr()
    names = trace(lambda: getattr(fc, name)(fc.tensor(a), fc.tensor(b), out=out))
    assert name in names and "copy_" not in names  # the out kernel, no result to copy
    assert out.data_ptr() == ptr
    np.testing.assert_allclose(npy(out), expected, rtol=1e-6)


def test_functional_and_inplace_primitives_reach_the_out_kernel():
    x, y = fc.tensor(values((2, 3))), fc.tensor(values((3,)))
    assert trace(lambda: x + y) == {"add"}  # the adapter's empty and kernel run inside it
    assert _C._has_kernel("add_", "CPU") and _C._has_kernel("sin", "CPU")
    t = torch.from_numpy(npy(x).copy())
    ptr = x.data_ptr()
    x.add_(y, alpha=2)
    t.add_(torch.from_numpy(npy(y)), alpha=2)
    assert x.data_ptr() == ptr
    np.testing.assert_allclose(npy(x), t.numpy(), rtol=1e-6)
    # A float64 other of a float32 self: the result keeps self's dtype.
    a = values((3,))
    z, tz = fc.tensor(a), torch.from_numpy(a.copy())
    z.mul_(fc.tensor(np.array([2.0, 3.0, 4.0])))
    tz.mul_(torch.tensor([2.0, 3.0, 4.0], dtype=torch.float64))
    assert z.dtype == fc.float32
    np.testing.assert_allclose(npy(z), tz.numpy(), rtol=1e-6)


def test_inplace_errors_keep_their_names():
    i = fc.tensor(np.arange(6, dtype=np.int64))
    with pytest.raises(TypeError, match=r"\[div_\] result type float32 can't be cast.*int64"):
        i.div_(2)
    with pytest.raises(TypeError, match=r"sin_.*float32.*int64"):
        i.sin_()
    x = fc.tensor(values((3,)))
    with pytest.raises(ValueError, match=r"\[add_\] shape \(2, 3\) cannot be broadcast to the shape \(3,\) of self"):
        x.add_(fc.tensor(values((2, 3))))
    with pytest.raises(RuntimeError, match=r"\[mul_\].*single memory location"):
        fc.tensor(values((1, 3))).expand(2, 3).mul_(2)


def test_out_resizing_and_dtypes_as_before():
    a = values((4, 5))
    x, t = fc.tensor(a), torch.from_numpy(a.copy())
    # Empty out: resized silently, then written by the kernel.
    o = fc.empty((0,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fc.add(x, x, out=o)
    assert tuple(o.shape) == (4, 5)
    np.testing.assert_array_equal(npy(o), a + a)
    # A non-empty out of another shape: PyTorch's UserWarning, then resized.
    o = fc.empty((2, 2))
    with pytest.warns(UserWarning, match=r"\[sin\] An output with one or more elements was resized"):
        fc.sin(x, out=o)
    np.testing.assert_allclose(npy(o), torch.sin(t).numpy(), rtol=1e-6)
    # A wider out dtype: computed in float32 and cast (the copy path), as PyTorch.
    o = fc.empty((4, 5), dtype=fc.float64)
    names = trace(lambda: fc.mul(x, x, out=o))
    assert "copy_" in names
    np.testing.assert_array_equal(npy(o), (a * a).astype(np.float64))
    # A float result into an integer out: PyTorch's message.
    with pytest.raises(TypeError, match=r"\[div\] result type float32 can't be cast to the desired output type int64"):
        fc.div(x, x, out=fc.empty((4, 5), dtype=fc.int64))
    # A comparison into a non-bool out: computed, then cast.
    o = fc.empty((4, 5), dtype=fc.float32)
    fc.lt(x, 0.5, out=o)
    np.testing.assert_array_equal(npy(o), torch.lt(t, 0.5).float().numpy())


def test_meta_device_forms():
    m = fc.empty((2, 3), device="meta")
    assert fc.sin(m).is_meta and tuple(fc.add(m, m).shape) == (2, 3)
    o = fc.empty((0,), device="meta")
    assert fc.cos(m, out=o) is o and tuple(o.shape) == (2, 3)
    assert m.exp2_() is m
