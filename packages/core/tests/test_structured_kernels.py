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
from flambeau_core.testing import devices

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


# ---- the unary elementwise family (shape `same`) and the broadcasting binary family ----
# Every form against PyTorch 2.13, on each device: the functional result, out= of the result's dtype
# (written in place by the kernel: same storage, no copy), and the in-place method where PyTorch has
# one (self written by the kernel when the result fits it; otherwise today's errors).

UNARY_SAME = ["neg", "abs", "relu", "exp", "log", "tanh", "sigmoid", "sqrt", "floor", "ceil", "trunc", "round"]
UNARY_SAME += ["frac", "sign", "isnan", "isinf", "isfinite", "nan_to_num", "signbit", "logical_not", "bitwise_not"]
INT_ONLY = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}
POLYNOMIALS = [
    f"special_{k}"
    for k in [
        *(f"chebyshev_polynomial_{c}" for c in "tuvw"),
        *(f"shifted_chebyshev_polynomial_{c}" for c in "tuvw"),
        "hermite_polynomial_h",
        "hermite_polynomial_he",
        "laguerre_polynomial_l",
        "legendre_polynomial_p",
    ]
]
BINARY_BROADCAST = ["pow", "maximum", "minimum", "atan2", "hypot", "fmod", "remainder", "floor_divide"]
BINARY_BROADCAST += ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"]
BINARY_BROADCAST += ["bitwise_left_shift", "bitwise_right_shift", "copysign", "nextafter", "logaddexp", "xlogy"]
BINARY_BROADCAST += ["special_xlog1py", "special_zeta", *POLYNOMIALS]
TORCH_DTYPES = {fc.float32: torch.float32, fc.float64: torch.float64, fc.int64: torch.int64, fc.bool: torch.bool}


def torch_fn(name):
    if name.startswith("special_"):
        return getattr(torch.special, name.removeprefix("special_"))
    return getattr(torch, name)


def fc_dtype(t: torch.dtype):
    return next(k for k, v in TORCH_DTYPES.items() if v == t)


def unary_input(name, integer=False):
    if name in INT_ONLY or integer:
        return np.array([[-3, 0, 2, 7], [5, -1, 4, 1], [0, 9, -8, 6]], dtype=np.int64)
    a = RNG.uniform(-2.0, 2.0, (3, 4)).astype(np.float32)
    if name in ("log", "sqrt"):
        a = np.abs(a) + 0.1
    if name in ("isnan", "isinf", "isfinite", "nan_to_num", "signbit"):
        a[0, :3] = [np.nan, np.inf, -np.inf]
    return a


def binary_inputs(name):
    if name in INT_ONLY:
        a = np.array([[-3, 0, 2, 7], [5, -1, 4, 1], [0, 9, -8, 6]], dtype=np.int64)
        return a, np.array([1, 2, 3, 0], dtype=np.int64)
    if name in POLYNOMIALS:  # x in [-1, 1], integer degrees n (as floats)
        return RNG.uniform(-1.0, 1.0, (3, 4)).astype(np.float32), np.array([0.0, 1.0, 2.0, 5.0], dtype=np.float32)
    if name == "special_zeta":
        return RNG.uniform(1.5, 3.0, (3, 4)).astype(np.float32), np.array([1.0, 2.0, 0.5, 3.0], dtype=np.float32)
    a = RNG.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    b = RNG.uniform(0.5, 2.0, (4,)).astype(np.float32) * np.array([1, -1, 1, -1], dtype=np.float32)
    if name in ("pow", "xlogy", "special_xlog1py"):
        b = np.abs(b)
    return a, b


def assert_matches(got: fc.Tensor, expected: torch.Tensor):
    assert got.dtype == fc_dtype(expected.dtype)
    e, g = expected.numpy(), npy(got.cpu())
    if e.dtype.kind == "f":
        np.testing.assert_allclose(g, e, rtol=3e-6, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, e)


def check_forms(name, args, device):
    """functional, out= and in-place of fc.<name>(*args) on device against torch.<name>."""
    fn, tfn = getattr(fc, name), torch_fn(name)
    targs = [torch.from_numpy(a.copy()) for a in args]
    xs = [fc.tensor(a, device=device) for a in args]
    try:
        expected = tfn(*targs)
    except RuntimeError:  # a dtype the op does not take (frac of an integer): raised under its name here too
        with pytest.raises(TypeError, match=rf"\[{name}\] .*not"):
            fn(*xs)
        return
    got = fn(*xs)
    assert got.device.type == device
    assert_matches(got, expected)
    try:
        tfn(*targs, out=torch.empty(0, dtype=expected.dtype))
        has_out = True
    except TypeError:
        has_out = False
    if has_out:
        out = fc.empty(tuple(expected.shape), dtype=fc_dtype(expected.dtype), device=device)
        ptr = out.data_ptr()
        assert fn(*xs, out=out) is out
        assert out.data_ptr() == ptr
        assert_matches(out, expected)
    else:
        with pytest.raises(TypeError, match=rf"\[{name}\] got an unexpected keyword argument 'out'"):
            fn(*xs, out=fc.empty(0, device=device))
    assert hasattr(fc.Tensor, name + "_") == hasattr(torch.Tensor, name + "_")
    if not hasattr(torch.Tensor, name + "_"):
        return
    self_t = targs[0].clone()
    try:
        getattr(self_t, name + "_")(*targs[1:])
    except RuntimeError as e:
        assert "can't be cast to the desired output type" in str(e)
        with pytest.raises(TypeError, match=rf"\[{name}_\] result type .* can't be cast to the desired output type"):
            getattr(fc.tensor(args[0], device=device), name + "_")(*xs[1:])
        return
    y = fc.tensor(args[0], device=device)
    ptr, v0 = y.data_ptr(), y._version
    assert getattr(y, name + "_")(*xs[1:]) is y
    assert y.data_ptr() == ptr and y._version > v0
    assert_matches(y, self_t)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("name", UNARY_SAME)
def test_unary_family_forms(name, device):
    check_forms(name, [unary_input(name)], device)
    check_forms(name, [unary_input(name, integer=True)], device)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("name", BINARY_BROADCAST)
def test_binary_family_forms(name, device):
    check_forms(name, list(binary_inputs(name)), device)


@pytest.mark.parametrize("name", UNARY_SAME + BINARY_BROADCAST)
def test_families_on_the_meta_device(name):
    args = [unary_input(name)] if name in UNARY_SAME else list(binary_inputs(name))
    targs = [torch.empty(a.shape, dtype=torch.from_numpy(a).dtype, device="meta") for a in args]
    margs = [fc.empty(a.shape, dtype=fc_dtype(torch.from_numpy(a).dtype), device="meta") for a in args]
    expected = torch_fn(name)(*targs)
    got = getattr(fc, name)(*margs)
    assert got.is_meta and got.dtype == fc_dtype(expected.dtype) and tuple(got.shape) == tuple(expected.shape)
    if hasattr(fc.Tensor, name + "_"):
        assert getattr(margs[0], name + "_")(*margs[1:]) is margs[0]
    try:
        getattr(fc, name)(*margs, out=fc.empty((0,), dtype=got.dtype, device="meta"))
    except TypeError as e:
        assert "unexpected keyword argument 'out'" in str(e)
    else:
        o = fc.empty((0,), dtype=got.dtype, device="meta")
        assert getattr(fc, name)(*margs, out=o) is o and tuple(o.shape) == tuple(expected.shape)


def test_family_out_errors_and_resizing_as_torch():
    x = fc.tensor(values((4, 5)))
    t = torch.from_numpy(npy(x).copy())
    # A float result into an integer out, and an integer one into a float out of an `exact` op.
    with pytest.raises(TypeError, match=r"\[exp\] result type float32 can't be cast to the desired output type int64"):
        fc.exp(x, out=fc.empty((4, 5), dtype=fc.int64))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        torch.exp(t, out=torch.empty((4, 5), dtype=torch.int64))
    with pytest.raises(TypeError, match=r"\[neg\] expected out tensor to have dtype int64, but got float32"):
        fc.neg(fc.tensor([1, 2]), out=fc.empty(2))
    with pytest.raises(TypeError, match=r"\[atan2\] result type float32 can't be cast to the desired output type"):
        fc.atan2(x, x, out=fc.empty((4, 5), dtype=fc.int64))
    # A wider out: computed, then cast (the copy path).
    o = fc.empty((4, 5), dtype=fc.float64)
    assert "copy_" in trace(lambda: fc.maximum(x, 0.5, out=o))
    np.testing.assert_array_equal(npy(o), torch.maximum(t, torch.tensor(0.5)).double().numpy())
    # Of the result's dtype: the kernel writes it (no copy), resized as PyTorch.
    for call, name in ((lambda o: fc.sqrt(x, out=o), "sqrt"), (lambda o: fc.hypot(x, x[0], out=o), "hypot")):
        o = fc.empty((0,))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            names = trace(lambda call=call, o=o: call(o))
        assert name in names and "copy_" not in names and tuple(o.shape) == (4, 5)
        o = fc.empty((3,))
        with pytest.warns(UserWarning, match=rf"\[{name}\] An output with one or more elements was resized"):
            call(o)
        assert tuple(o.shape) == (4, 5)
    np.testing.assert_allclose(npy(o), torch.hypot(t, t[0]).numpy(), rtol=1e-6)
    # out= one of the inputs: written in place, as PyTorch.
    y = fc.tensor(values((4, 5)))
    ty = torch.from_numpy(npy(y).copy())
    assert fc.tanh(y, out=y) is y
    np.testing.assert_allclose(npy(y), torch.tanh(ty).numpy(), rtol=1e-6)
    assert fc.pow(y, x, out=y) is y
    np.testing.assert_allclose(npy(y), torch.pow(torch.tanh(ty), t).numpy(), rtol=1e-6)


def test_family_inplace_errors_keep_their_names():
    i = fc.tensor(np.arange(6, dtype=np.int64))
    with pytest.raises(TypeError, match=r"\[exp_\] result type float32 can't be cast to the desired output type int64"):
        i.exp_()
    with pytest.raises(TypeError, match=r"\[atan2_\] result type float32 can't be cast.*int64"):
        i.atan2_(i)
    with pytest.raises(ValueError, match=r"\[pow_\] output with shape \(3,\) doesn't match the broadcast shape \(2, 3\)"):
        fc.tensor(values((3,))).pow_(fc.tensor(values((2, 3))))
    with pytest.raises(RuntimeError, match=r"single memory location"):
        fc.tensor(values((1, 3))).expand(2, 3).relu_()
    # The dtype of an in-place result that is not self's: computed, then cast into self, as PyTorch.
    f = fc.tensor(values((2, 3)))
    tf = torch.from_numpy(npy(f).copy())
    f.logical_not_()
    tf.logical_not_()
    np.testing.assert_array_equal(npy(f), tf.numpy())


def test_div_rounding_modes_and_where_forms():
    a, b = values((3, 4)) * 10 - 5, values((4,)) * 3 + 0.5
    ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    for mode in (None, "floor", "trunc"):
        expected = torch.div(ta, tb, rounding_mode=mode).numpy()
        o = fc.empty((3, 4))
        ptr = o.data_ptr()
        names = trace(lambda mode=mode, o=o: fc.div(fc.tensor(a), fc.tensor(b), rounding_mode=mode, out=o))
        assert "copy_" not in names and o.data_ptr() == ptr
        np.testing.assert_allclose(npy(o), expected, rtol=1e-6)
        y = fc.tensor(a)
        ptr = y.data_ptr()
        y.div_(fc.tensor(b), rounding_mode=mode)
        assert y.data_ptr() == ptr
        np.testing.assert_allclose(npy(y), expected, rtol=1e-6)
    with pytest.raises(TypeError, match=r"\[div_\] result type float32 can't be cast.*int64"):
        fc.tensor([3, 4]).div_(2, rounding_mode=None)
    cond = a > 0
    o = fc.empty((3, 4))
    names = trace(lambda: fc.where(fc.tensor(cond), fc.tensor(a), fc.tensor(b), out=o))
    assert "where" in names and "copy_" not in names
    np.testing.assert_array_equal(npy(o), torch.where(torch.from_numpy(cond), ta, tb).numpy())
    m = fc.where(fc.empty((3, 1), dtype=fc.bool, device="meta"), fc.empty((4,), device="meta"), 1.0)
    assert m.is_meta and tuple(m.shape) == (3, 4) and m.dtype == fc.float32
