"""In-place forms and out= of the elementwise ops that write straight into the destination (their
structured out kernels, Note [Structured kernels]) against PyTorch 2.13 and NumPy: values, aliasing,
views, non-contiguous destinations, the version counter, and the fallbacks with their errors (a
dtype or shape that does not fit)."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch


# Not helpers.to_numpy: float16 too as float32 (both sides), so the half tolerances apply in float32.
def to_numpy(t: fc.Tensor) -> np.ndarray:
    if t.dtype in (fc.bfloat16, fc.float16):
        t = t.float()
    return np.array(memoryview(t.contiguous()))


def from_numpy(a: np.ndarray, dtype: str) -> fc.Tensor:
    if dtype in ("float16", "bfloat16"):
        return fc.tensor(a.astype(np.float32)).to(getattr(fc, dtype))
    return fc.tensor(a.astype(getattr(np, dtype)))


def to_torch(a: np.ndarray, dtype: str) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(getattr(torch, dtype))


# The oracle's side of to_numpy above (float16 as float32 too).
def torch_numpy(x: torch.Tensor) -> np.ndarray:
    return (x.float() if x.dtype in (torch.bfloat16, torch.float16) else x).numpy()


RNG = np.random.default_rng(7)
UNARY = ["relu", "neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "atan", "expm1", "log1p"]
UNARY += ["erf", "rsqrt", "reciprocal", "floor", "ceil", "trunc", "round", "frac", "sign"]
POSITIVE = {"log", "sqrt", "rsqrt", "log1p"}
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def sample(shape, name: str) -> np.ndarray:
    a = RNG.standard_normal(shape) * 2
    return np.abs(a) + 0.1 if name in POSITIVE else a


def layouts(a: np.ndarray, dtype: str):
    """(name, destination tensor, the matching numpy view) for several layouts of one 2-D array."""
    yield "contiguous", from_numpy(a, dtype), lambda b: b
    yield "transposed", from_numpy(a.T.copy(), dtype).t(), lambda b: b
    yield "column slice", from_numpy(a, dtype)[:, 1::2], lambda b: b[:, 1::2]


def tol(dtype: str) -> dict:
    return {"float16": {"rtol": 2e-3, "atol": 2e-3}, "bfloat16": {"rtol": 1.6e-2, "atol": 1.6e-2}}.get(
        dtype, {"rtol": 1e-6, "atol": 1e-6}
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_inplace_writes_self(name, dtype):
    a = sample((9, 14), name)
    for layout, x, view in layouts(a, dtype):
        before = x.clone()
        expected = getattr(fc, name)(before)  # the out-of-place op: the same kernel, the same values
        v0 = x._version
        r = getattr(x, name + "_")()
        assert r is x, layout
        assert x._version == v0 + 1, layout
        np.testing.assert_array_equal(to_numpy(x), to_numpy(expected), err_msg=layout)
        t = to_torch(view(a), dtype)
        getattr(t, name + "_")()
        np.testing.assert_allclose(to_numpy(x), torch_numpy(t), **tol(dtype), err_msg=layout)


def test_inplace_on_a_view_writes_the_base():
    a = sample((6, 8), "exp")
    x = fc.tensor(a.astype(np.float32))
    x[2:5, ::3].exp_()
    expected = a.astype(np.float32)
    expected[2:5, ::3] = np.exp(expected[2:5, ::3])
    np.testing.assert_allclose(to_numpy(x), expected, rtol=1e-6)


def test_inplace_complex_and_integer():
    z = RNG.standard_normal((5, 7)) + 1j * RNG.standard_normal((5, 7))
    x = fc.tensor(z.astype(np.complex64))
    assert x.neg_() is x
    np.testing.assert_array_equal(to_numpy(x), -z.astype(np.complex64))
    x.exp_()
    np.testing.assert_allclose(to_numpy(x), np.exp(-z), rtol=1e-5)
    i = fc.tensor(np.arange(-6, 6, dtype=np.int64).reshape(3, 4))
    i.abs_().neg_()
    np.testing.assert_array_equal(to_numpy(i), -np.abs(np.arange(-6, 6).reshape(3, 4)))


def test_inplace_errors_keep_self():
    i = fc.tensor(np.arange(6, dtype=np.int64))
    with pytest.raises(TypeError, match=r"exp_.*Float.*Long|exp_.*float32.*int64"):
        i.exp_()
    np.testing.assert_array_equal(to_numpy(i), np.arange(6))
    b = fc.tensor(np.ones((3,), np.float32)).expand(4, 3)
    with pytest.raises((RuntimeError, ValueError)):
        b.relu_()


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]


BINARY_CASES = [(n, d) for n in BINARY for d in ["float32", "float64", "float16", "bfloat16"]]
BINARY_CASES += [(n, "complex64") for n in ["add", "sub", "mul", "div"]]  # maximum/minimum/pow: real only


@pytest.mark.parametrize("name,dtype", BINARY_CASES)
def test_binary_out_writes_out(name, dtype):
    a, b = RNG.standard_normal((7, 10)), RNG.standard_normal((1, 10))
    if name == "pow":
        a = np.abs(a) + 0.5
    if dtype == "complex64":
        a, b = a + 1j * RNG.standard_normal(a.shape), b + 1j * RNG.standard_normal(b.shape)
    fa, fb_ = from_numpy(a, dtype), from_numpy(b, dtype)
    expected = getattr(fc, name)(fa, fb_)
    ta, tb = to_torch(a, dtype), to_torch(b, dtype)
    theirs = getattr(torch, name)(ta, tb)
    for layout, out in [
        ("contiguous", fc.empty((7, 10), dtype=getattr(fc, dtype))),
        ("transposed", fc.empty((10, 7), dtype=getattr(fc, dtype)).t()),
        ("strided", fc.empty((7, 20), dtype=getattr(fc, dtype))[:, ::2]),
    ]:
        v0 = out._version
        r = getattr(fc, name)(fa, fb_, out=out)
        assert r is out, layout
        assert out._version > v0
        np.testing.assert_array_equal(to_numpy(out), to_numpy(expected), err_msg=layout)
        np.testing.assert_allclose(to_numpy(out), torch_numpy(theirs), **tol(dtype), err_msg=layout)


def test_out_aliasing_inputs():
    a = RNG.standard_normal((8, 9)).astype(np.float32)
    x = fc.tensor(a)
    assert fc.mul(x, x, out=x) is x  # out is both inputs
    np.testing.assert_array_equal(to_numpy(x), a * a)
    x = fc.tensor(a)
    fc.add(x[1:], x[:-1], out=x[:-1])  # partially overlapping: reads the old values
    np.testing.assert_array_equal(to_numpy(x)[:-1], a[1:] + a[:-1])
    x = fc.tensor(a)
    fc.sub(x, x.t()[:8, :8].contiguous().t()[:, :1], out=x)  # broadcast other into x
    t = torch.from_numpy(a.copy())
    torch.sub(t, t.t()[:8, :8].contiguous().t()[:, :1], out=t)
    np.testing.assert_array_equal(to_numpy(x), t.numpy())
    x = fc.tensor(a)
    fc.exp(x.t(), out=x.t())
    np.testing.assert_allclose(to_numpy(x), np.exp(a), rtol=1e-6)


def test_out_fallbacks_match_torch():
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    x, t = fc.tensor(a), torch.from_numpy(a.copy())
    # A wider out dtype: computed in float32, then cast (as PyTorch).
    o = fc.empty((4, 5), dtype=fc.float64)
    assert fc.mul(x, x, out=o) is o
    np.testing.assert_array_equal(to_numpy(o), (a * a).astype(np.float64))
    # Inputs that broadcast to less than out's shape: out is resized (with PyTorch's warning), not
    # broadcast into.
    o = fc.empty((3, 4, 5))
    to = torch.empty((3, 4, 5))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fc.add(x, x, out=o)
    assert any("resized" in str(m.message) for m in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.add(t, t, out=to)
    assert tuple(o.shape) == tuple(to.shape) == (4, 5)
    np.testing.assert_array_equal(to_numpy(o), a + a)
    # Empty out: resized silently.
    o = fc.empty((0,))
    fc.sin(x, out=o)
    np.testing.assert_allclose(to_numpy(o), np.sin(a), rtol=1e-6)
    # Errors: a float result into an integer out; out of the wrong device is covered in test_devices.
    oi = fc.empty((4, 5), dtype=fc.int64)
    with pytest.raises(TypeError, match="add"):
        fc.add(x, x, out=oi)
    with pytest.raises(TypeError, match="exp"):
        fc.exp(x, out=oi)
    # An expanded out: PyTorch refuses to write it; so do we.
    oe = fc.empty((1, 5)).expand(4, 5)
    with pytest.raises((RuntimeError, ValueError)):
        fc.add(x, x, out=oe)
    with pytest.raises(RuntimeError):
        torch.add(t, t, out=torch.empty((1, 5)).expand(4, 5))


def test_integer_inputs_float_out():
    i = fc.tensor(np.arange(12, dtype=np.int64).reshape(3, 4))
    o = fc.empty((3, 4))
    assert fc.div(i, 3, out=o) is o
    np.testing.assert_allclose(to_numpy(o), np.arange(12).reshape(3, 4) / 3, rtol=1e-6)
    assert fc.sqrt(i, out=o) is o
    np.testing.assert_allclose(to_numpy(o), np.sqrt(np.arange(12).reshape(3, 4)), rtol=1e-6)
