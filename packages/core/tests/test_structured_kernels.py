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
from flambeau_core.testing import devices, kernel_trace

FLOAT_UNARY = list(_C._elementwise_math_ops()["float_unary"])
ARITHMETIC = ["add", "sub", "mul", "div"]
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]
RNG = np.random.default_rng(11)


def npy(t: fc.Tensor) -> np.ndarray:
    return np.array(memoryview(t.contiguous()))


def trace(fn):
    with kernel_trace() as rows:
        fn()
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
    with pytest.raises(
        ValueError, match=r"\[pow_\] output with shape \(3,\) doesn't match the broadcast shape \(2, 3\)"
    ):
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


# ---- the activations, their fused backwards, clamp, sgn and conj_physical ----
# Each activation's functional form and its in-place method (where flambeau has one) run its one out
# kernel: float32 and float64 against PyTorch 2.13, bfloat16 computed in float32 and rounded once (a
# bfloat16 result within one rounding of PyTorch's). The backwards are checked against torch.autograd's
# gradient of the same forward.

F = torch.nn.functional
ACT_FORWARD = {  # name: (flambeau call, torch call)
    "gelu": (lambda x: fc.gelu(x), lambda x: F.gelu(x)),
    "gelu_tanh": (lambda x: fc.gelu(x, approximate="tanh"), lambda x: F.gelu(x, approximate="tanh")),
    "silu": (fc.silu, F.silu),
    "mish": (fc.mish, F.mish),
    "leaky_relu": (lambda x: fc.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2)),
    "elu": (lambda x: fc.elu(x, 1.5, 1.2, 0.8), lambda x: torch.ops.aten.elu(x, 1.5, 1.2, 0.8)),
    "softplus": (lambda x: fc.softplus(x, 2.0, 1.5), lambda x: F.softplus(x, 2.0, 1.5)),
    "hardtanh": (lambda x: fc.hardtanh(x, -0.5, 0.7), lambda x: F.hardtanh(x, -0.5, 0.7)),
    "hardswish": (fc.hardswish, F.hardswish),
    "hardsigmoid": (fc.hardsigmoid, F.hardsigmoid),
    "log_sigmoid": (fc.log_sigmoid, F.logsigmoid),
    "softsign": (fc.softsign, F.softsign),
}
ACT_INPLACE = {  # the in-place methods flambeau has, with their arguments
    "gelu": ("gelu_", ()),
    "silu": ("silu_", ()),
    "mish": ("mish_", ()),
    "leaky_relu": ("leaky_relu_", (0.2,)),
    "elu": ("elu_", (1.5, 1.2, 0.8)),
    "hardtanh": ("hardtanh_", (-0.5, 0.7)),
    "hardswish": ("hardswish_", ()),
    "hardsigmoid": ("hardsigmoid_", ()),
}
ACT_BACKWARD = {  # backward name: (flambeau call on (grad, x), the forward whose torch gradient it is)
    "threshold_backward": (lambda g, x: fc.threshold_backward(g, x, 0.25), lambda x: F.threshold(x, 0.25, 0.0)),
    "gelu_backward": (lambda g, x: fc.gelu_backward(g, x), ACT_FORWARD["gelu"][1]),
    "gelu_backward_tanh": (lambda g, x: fc.gelu_backward(g, x, approximate="tanh"), ACT_FORWARD["gelu_tanh"][1]),
    "silu_backward": (fc.silu_backward, F.silu),
    "mish_backward": (fc.mish_backward, F.mish),
    "leaky_relu_backward": (lambda g, x: fc.leaky_relu_backward(g, x, 0.2), ACT_FORWARD["leaky_relu"][1]),
    "elu_backward": (lambda g, x: fc.elu_backward(g, x, 1.5, 1.2, 0.8), ACT_FORWARD["elu"][1]),
    "softplus_backward": (lambda g, x: fc.softplus_backward(g, x, 2.0, 1.5), ACT_FORWARD["softplus"][1]),
    "hardtanh_backward": (lambda g, x: fc.hardtanh_backward(g, x, -0.5, 0.7), ACT_FORWARD["hardtanh"][1]),
    "hardswish_backward": (fc.hardswish_backward, F.hardswish),
    "hardsigmoid_backward": (fc.hardsigmoid_backward, F.hardsigmoid),
    "log_sigmoid_backward": (fc.log_sigmoid_backward, F.logsigmoid),
    "softsign_backward": (fc.softsign_backward, F.softsign),
}
ACT_DTYPES = {"float32": (fc.float32, torch.float32), "float64": (fc.float64, torch.float64)}
ACT_DTYPES["bfloat16"] = (fc.bfloat16, torch.bfloat16)
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
TOL["bfloat16"] = dict(rtol=8e-3, atol=8e-3)  # one bfloat16 rounding (2^-8) of a float32 result


def act_input(shape=(3, 5), seed=0):
    # Both sides of every kink (hardtanh's bounds, hardswish's +-3, threshold 0.25), none on one.
    a = np.random.default_rng(seed).uniform(-4.0, 4.0, shape)
    return a + 0.03125 * (np.abs(a - 0.25) < 1e-3)


def to_fc(a, dtype, device="cpu"):
    return fc.tensor(a, device=device).to(ACT_DTYPES[dtype][0])


def fc_values(t: fc.Tensor) -> np.ndarray:
    return npy(t.cpu().to(fc.float64))


def assert_act_close(got: fc.Tensor, expected: torch.Tensor, dtype: str):
    assert got.dtype == ACT_DTYPES[dtype][0] and tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(fc_values(got), expected.double().numpy(), **TOL[dtype])


def refuses_on_cuda(device, dtype, name, call):
    """CUDA's activation kernels take float32 and float64 (bfloat16 is computed on the CPU only)."""
    if device != "cuda" or dtype != "bfloat16":
        return False
    with pytest.raises(TypeError, match=rf"\[{name}\] .*float32 or float64 tensor on CUDA"):
        call()
    return True


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", list(ACT_DTYPES))
@pytest.mark.parametrize("name", list(ACT_FORWARD))
def test_activation_forms(name, dtype, device):
    fn, tfn = ACT_FORWARD[name]
    a = act_input()
    expected = tfn(torch.from_numpy(a).to(ACT_DTYPES[dtype][1]))
    x = to_fc(a, dtype, device)
    op = name.removesuffix("_tanh")
    if refuses_on_cuda(device, dtype, op, lambda: fn(x)):
        return
    names = trace(lambda: fn(x))
    assert op in names and "copy_" not in names or dtype == "bfloat16"  # float32 and float64: no copy
    got = fn(x)
    assert got.device.type == device
    assert_act_close(got, expected, dtype)
    with pytest.raises(TypeError, match=rf"\[{op}\] got an unexpected keyword argument 'out'"):
        getattr(fc, op)(x, out=fc.empty(0, device=device))  # as torch.nn.functional's: no out=
    if name not in ACT_INPLACE:
        assert not hasattr(fc.Tensor, name + "_")
        return
    method, args = ACT_INPLACE[name]
    y = to_fc(a, dtype, device)
    ptr, v0 = y.data_ptr(), y._version
    names = trace(lambda: getattr(y, method)(*args))
    assert y.data_ptr() == ptr and y._version > v0
    if dtype != "bfloat16":
        assert names == {name}  # the out kernel on self: no intermediate, no copy
    assert_act_close(y, expected, dtype)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", list(ACT_DTYPES))
@pytest.mark.parametrize("name", list(ACT_BACKWARD))
def test_activation_backward_forms(name, dtype, device):
    fn, tfwd = ACT_BACKWARD[name]
    a, ga = act_input(seed=1), act_input(seed=2)
    tx = torch.from_numpy(a).to(ACT_DTYPES[dtype][1]).requires_grad_()
    (expected,) = torch.autograd.grad(tfwd(tx), tx, torch.from_numpy(ga).to(ACT_DTYPES[dtype][1]))
    if name == "hardsigmoid_backward" and dtype == "float64":
        # torch's float64 kernel multiplies by the float32 constant 1.0f / 6.0f (relative error 3e-8);
        # flambeau divides by 6 in float64: the exact formula is the reference.
        expected = torch.from_numpy(np.where(np.abs(a) < 3, ga / 6, 0.0))
    x, g = to_fc(a, dtype, device), to_fc(ga, dtype, device)
    op = name.removesuffix("_tanh")
    if refuses_on_cuda(device, dtype, op, lambda: fn(g, x)):
        return
    names = trace(lambda: fn(g, x))
    assert op in names
    if dtype != "bfloat16" or op == "threshold_backward":  # threshold_backward selects bfloat16 in place
        assert "copy_" not in names and "cast" not in names
    got = fn(g, x)
    assert got.device.type == device
    assert_act_close(got, expected, dtype)
    # A float64 grad_output of a float32 input: read as float32, as before (the result is self's dtype).
    if dtype == "float32":
        got = fn(to_fc(ga, "float64", device), x)
        assert_act_close(got, expected, dtype)


def test_threshold_backward_bfloat16_is_an_exact_select():
    a, ga = act_input((64, 33), seed=3), act_input((64, 33), seed=4)
    x, g = to_fc(a, "bfloat16"), to_fc(ga, "bfloat16")
    tx, tg = torch.from_numpy(a).bfloat16(), torch.from_numpy(ga).bfloat16()
    expected = torch.ops.aten.threshold_backward(tg, tx, 0.25)
    names = trace(lambda: fc.threshold_backward(g, x, 0.25))
    assert names == {"threshold_backward"}  # 16-bit select: no float32 copies
    got = fc.threshold_backward(g, x, 0.25)
    np.testing.assert_array_equal(fc_values(got), expected.double().numpy())
    # Strided views (a transposed grad): the iterator's strides, same values.
    got = fc.threshold_backward(g.t().contiguous().t(), x, 0.25)
    np.testing.assert_array_equal(fc_values(got), expected.double().numpy())


@pytest.mark.parametrize("name", list(ACT_FORWARD) + list(ACT_BACKWARD))
def test_activations_on_the_meta_device(name):
    x, g = fc.empty((2, 3, 4), device="meta"), fc.empty((2, 3, 4), device="meta")
    tx = torch.empty((2, 3, 4), device="meta")
    if name in ACT_FORWARD:
        got, expected = ACT_FORWARD[name][0](x), ACT_FORWARD[name][1](tx)
    else:
        got = ACT_BACKWARD[name][0](g, x)
        expected = torch.empty_like(ACT_BACKWARD[name][1](tx))  # the gradient has the input's shape and dtype
    assert got.is_meta and got.dtype == fc.float32 and tuple(got.shape) == tuple(expected.shape)
    if name in ACT_INPLACE:
        method, args = ACT_INPLACE[name]
        assert getattr(x, method)(*args) is x
    # The checks still run on meta: an integer input, a grad_output of another shape.
    i = fc.empty((2, 3), dtype=fc.int64, device="meta")
    op = name.removesuffix("_tanh")
    if name in ACT_FORWARD:
        with pytest.raises(TypeError, match=rf"\[{op}\] input must be a float16, bfloat16, float32 or float64"):
            ACT_FORWARD[name][0](i)
    else:
        with pytest.raises(ValueError, match=rf"\[{op}\] grad_output shape \(2, 3\) does not match input shape"):
            ACT_BACKWARD[name][0](fc.empty((2, 3), device="meta"), x)


def test_activation_errors_keep_their_names():
    x = fc.tensor(act_input())
    with pytest.raises(TypeError, match=r"\[silu\] input must be a float16, bfloat16, float32 or float64 tensor"):
        fc.silu(fc.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"\[gelu\] approximate argument must be either 'none' or 'tanh'"):
        fc.gelu(x, approximate="erf")
    with pytest.raises(ValueError, match=r"\[gelu\] approximate argument must be either 'none' or 'tanh'"):
        fc.gelu_backward(x, x, approximate="erf")
    with pytest.raises(ValueError, match=r"\[elu_backward\] grad_output shape \(5,\) does not match input shape"):
        fc.elu_backward(x[0], x, 1.0, 1.0, 1.0)
    with pytest.raises(TypeError, match=r"\[softplus_backward\] grad_output must be a float16, bfloat16, float32"):
        fc.softplus_backward(fc.tensor(np.ones((3, 5), dtype=np.int64)), x, 1.0, 20.0)
    with pytest.raises(RuntimeError, match=r"\[hardtanh\] .*single memory location"):
        fc.tensor(act_input((1, 5))).expand(3, 5).hardtanh_()
    # hardtanh's bounds are checked before its kernel, as PyTorch's.
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(torch.zeros(2), 1.0, 0.0)
    with pytest.raises(ValueError, match=r"\[hardtanh\] min_val \(1\) cannot be greater than max_val \(0\)"):
        fc.hardtanh(x, 1.0, 0.0)


# clamp, sgn and conj_physical have out= and in-place forms (PyTorch's).
ELEMENTWISE_OUT = {
    "clamp": (lambda m, *a, **k: m.clamp(*a, -0.5, 1.25, **k), (np.float32, np.float64, np.int64)),
    "sgn": (lambda m, *a, **k: m.sgn(*a, **k), (np.float32, np.float64, np.int64, np.complex64)),
    "conj_physical": (lambda m, *a, **k: m.conj_physical(*a, **k), (np.float32, np.complex64, np.complex128)),
}


def out_input(np_dtype):
    r = np.random.default_rng(5)
    a = r.uniform(-2.0, 2.0, (3, 4))
    if np.dtype(np_dtype).kind == "c":
        a = a + 1j * r.uniform(-2.0, 2.0, (3, 4))
        a[0, 0] = 0
    elif np.dtype(np_dtype).kind == "i":
        a = np.round(a * 2)
    return a.astype(np_dtype)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("name", list(ELEMENTWISE_OUT))
def test_clamp_sgn_conj_physical_forms(name, device):
    call, np_dtypes = ELEMENTWISE_OUT[name]
    for np_dtype in np_dtypes:
        if device == "cuda" and np.dtype(np_dtype).kind == "c":
            continue  # complex kernels are not yet on CUDA
        a = out_input(np_dtype)
        expected = call(torch, torch.from_numpy(a.copy()))
        x = fc.tensor(a, device=device)
        got = call(fc, x)
        assert got.device.type == device
        assert_matches_any(got, expected)
        out = fc.empty(tuple(expected.shape), dtype=fc.tensor(expected.numpy()).dtype, device=device)
        ptr = out.data_ptr()
        names = trace(lambda out=out, x=x: call(fc, x, out=out))
        assert "copy_" not in names or (name == "conj_physical" and np.dtype(np_dtype).kind != "c")
        assert out.data_ptr() == ptr
        assert_matches_any(out, expected)
        y, ty = fc.tensor(a, device=device), torch.from_numpy(a.copy())
        ptr, v0 = y.data_ptr(), y._version
        bounds = (-0.5, 1.25) if name == "clamp" else ()
        if name == "clamp" and np_dtype == np.int64:  # a float32 result does not fit int64 self
            with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type"):
                ty.clamp_(*bounds)
            with pytest.raises(TypeError, match=r"\[clamp_\] result type float32 can't be cast to the desired"):
                y.clamp_(*bounds)
            continue
        assert getattr(y, name + "_")(*bounds) is y
        getattr(ty, name + "_")(*bounds)
        assert y.data_ptr() == ptr and y._version > v0
        assert_matches_any(y, ty)


def assert_matches_any(got: fc.Tensor, expected: torch.Tensor):
    e = expected.numpy()
    g = npy(got.cpu())
    assert g.dtype == e.dtype
    np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_clamp_sgn_conj_physical_dtypes_and_out_errors():
    i = fc.tensor(np.array([-3, 0, 2, 7], dtype=np.int64))
    ti = torch.tensor([-3, 0, 2, 7])
    # clamp promotes with its bounds as Python numbers: a float bound of an integer tensor is float32.
    assert_matches_any(fc.clamp(i, 0.5, 2), torch.clamp(ti, 0.5, 2))
    o = fc.empty(4)
    assert "copy_" not in trace(lambda: fc.clamp(i, 0.5, 2, out=o))
    assert_matches_any(o, torch.clamp(ti, 0.5, 2))
    with pytest.raises(RuntimeError, match="Found dtype Long but expected Float"):
        torch.clamp(ti, 0.5, out=torch.empty(4, dtype=torch.int64))
    cast_error = "result type float32 can't be cast to the desired output type int64"
    with pytest.raises(TypeError, match=rf"\[clamp\] {cast_error}"):
        fc.clamp(i, 0.5, out=fc.empty(4, dtype=fc.int64))
    with pytest.raises(TypeError, match=rf"\[clamp_\] {cast_error}"):
        i.clamp_(0.5)
    with pytest.raises(ValueError, match=r"\[clamp\] at least one of min and max must not be None"):
        fc.clamp(fc.tensor([1.0]), out=fc.empty(1))
    # where min > max every element is max; NaN stays NaN, as PyTorch.
    a = np.array([np.nan, -1.0, 3.0], dtype=np.float32)
    assert_matches_any(fc.clamp(fc.tensor(a), 2.0, 1.0), torch.clamp(torch.from_numpy(a), 2.0, 1.0))
    # A wider out of clamp: computed, then cast (the copy path), as PyTorch.
    o = fc.empty(3, dtype=fc.float64)
    fc.clamp(fc.tensor(a), 0.0, 1.0, out=o)
    np.testing.assert_array_equal(npy(o), torch.clamp(torch.from_numpy(a), 0.0, 1.0).double().numpy())
    # sgn and conj_physical take out= of exactly the result's dtype.
    x = fc.tensor(a)
    with pytest.raises(TypeError, match=r"\[sgn\] expected out tensor to have dtype float32, but got float64"):
        fc.sgn(x, out=fc.empty(3, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[conj_physical\] expected out tensor to have dtype float32, but got"):
        fc.conj_physical(x, out=fc.empty(3, dtype=fc.complex64))
    # An empty out is resized silently; a non-empty one of another shape warns, as PyTorch.
    o = fc.empty((0,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fc.sgn(x, out=o)
    assert tuple(o.shape) == (3,)
    with pytest.warns(UserWarning, match=r"\[clamp\] An output with one or more elements was resized"):
        fc.clamp(x, 0.0, out=fc.empty(5))
    # A real tensor's conj_physical_ leaves it as it is.
    y = fc.tensor(np.array([1.0, -2.0], dtype=np.float32))
    assert y.conj_physical_() is y and y.tolist() == [1.0, -2.0]
    m = fc.empty((2, 3), dtype=fc.complex64, device="meta")
    for r in (fc.sgn(m), fc.conj_physical(m), fc.clamp(fc.empty((2, 3), device="meta"), 0.0)):
        assert r.is_meta and tuple(r.shape) == (2, 3)
    assert fc.clamp(fc.empty((2, 3), dtype=fc.int64, device="meta"), 0.5).dtype == fc.float32


# ---- the softmax family: _softmax, _log_softmax and their backwards (the row kernels) ----

SOFTMAX = ["_softmax", "_log_softmax"]


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", list(ACT_DTYPES))
@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_forms(name, dtype, device):
    a = np.random.default_rng(6).uniform(-6.0, 6.0, (4, 3, 5))
    fdt, tdt = ACT_DTYPES[dtype]
    for dim in (0, 1, -1):  # strided rows (inner > 1) and contiguous ones
        expected = getattr(torch, name)(torch.from_numpy(a).to(tdt), dim, False)
        x = to_fc(a, dtype, device)
        if dtype == "float32":
            names = trace(lambda x=x, dim=dim: getattr(_C, name)(x, dim))
            assert name in names and "copy_" not in names and "cast" not in names
        assert_act_close(getattr(_C, name)(x, dim), expected, dtype)
    # A transposed (non-contiguous) input.
    t = torch.from_numpy(a).to(tdt).transpose(0, 2)
    assert_act_close(
        getattr(_C, name)(to_fc(a, dtype, device).transpose(0, 2), 1), getattr(torch, name)(t, 1, False), dtype
    )
    e = getattr(_C, name)(fc.empty((0, 3), dtype=fdt, device=device), 1)
    assert tuple(e.shape) == (0, 3) and e.dtype == fdt


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_backward_forms(name, dtype, device):
    a, ga = np.random.default_rng(7).uniform(-3.0, 3.0, (2, 4, 6)), act_input((2, 4, 6), seed=8)
    fdt, tdt = ACT_DTYPES[dtype]
    for dim in (0, 1, 2):
        y = getattr(torch, name)(torch.from_numpy(a).to(tdt), dim, False)
        g = torch.from_numpy(ga).to(tdt)
        expected = getattr(torch, name + "_backward_data")(g, y, dim, tdt)
        fy, fg = fc.tensor(y.numpy(), device=device), fc.tensor(ga, device=device).to(fdt)
        names = trace(lambda fy=fy, fg=fg, dim=dim: getattr(_C, name + "_backward_data")(fg, fy, dim))
        assert name + "_backward_data" in names and "copy_" not in names
        assert_act_close(getattr(_C, name + "_backward_data")(fg, fy, dim), expected, dtype)
        # grad_output and output of other strides (transposed views of the same values)
        got = getattr(_C, name + "_backward_data")(fg.transpose(0, 2).contiguous().transpose(0, 2), fy, dim)
        assert_act_close(got, expected, dtype)


def test_softmax_family_meta_and_errors():
    m = fc.empty((2, 3, 4), device="meta")
    tm = torch.empty((2, 3, 4), device="meta")
    for name in SOFTMAX:
        got, expected = getattr(_C, name)(m, 1), getattr(torch, name)(tm, 1, False)
        assert got.is_meta and got.dtype == fc.float32 and tuple(got.shape) == tuple(expected.shape)
        got = getattr(_C, name + "_backward_data")(m, m, -1)
        assert got.is_meta and tuple(got.shape) == (2, 3, 4)
    for device in ("cpu", "meta"):
        i = fc.empty((2, 3), dtype=fc.int64, device=device)
        with pytest.raises(TypeError, match=r"\[softmax\] needs a floating point tensor, got dtype int64"):
            _C._softmax(i, 0)
        with pytest.raises(TypeError, match=r"\[log_softmax\] needs a floating point tensor, got dtype int64"):
            _C._log_softmax(i, 0)
        x = fc.empty((2, 3), device=device)
        with pytest.raises(IndexError, match=r"\[log_softmax\] .*dim"):
            _C._log_softmax(x, 2)
        with pytest.raises(TypeError, match=r"\[_softmax_backward_data\] grad_output dtype float64 does not match"):
            _C._softmax_backward_data(fc.empty((2, 3), dtype=fc.float64, device=device), x, 0)
        with pytest.raises(ValueError, match=r"\[_log_softmax_backward_data\] grad_output shape \(3,\) does not"):
            _C._log_softmax_backward_data(fc.empty((3,), device=device), x, 0)
        with pytest.raises(TypeError, match=r"\[_softmax_backward_data\] needs a float32 or float64 output"):
            b = fc.empty((2, 3), dtype=fc.bfloat16, device=device)
            _C._softmax_backward_data(b, b, 0)
