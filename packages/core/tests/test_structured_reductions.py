"""Note [Structured kernels] for the reductions and scans (src/cpu/reduce/reduce.cpp,
reduce_extra.cpp, scan.cpp): sum, max, min, argmax, argmin, amax, amin, prod along a dim, var with
a correction, cumsum and cumprod run their meta step and one out kernel in the functional, out= (and
for the scans, in-place) forms, on every device (cpu, the simulated device, cuda) and on the meta
device. Values, dtypes, shapes, out= resizing, out= dtype errors and empty tensors against PyTorch
2.13."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import devices, kernel_trace

RNG = np.random.default_rng(5)

# name -> list of (args after the tensor, kwargs): the dim/keepdim/dtype variants each form is run with.
VARIANTS = {
    "sum": [((), {}), ((1,), {}), ((0, True), {}), (((0, 2),), {}), ((-1,), {"dtype": "float64"})],
    "amax": [((), {}), ((1,), {}), (((0, 2), True), {})],
    "amin": [((), {}), ((0,), {}), (((1, 2),), {"keepdim": True})],
    "max": [((), {})],
    "min": [((), {})],
    "argmax": [((), {}), ((1,), {}), ((2, True), {})],
    "argmin": [((), {}), ((0,), {}), ((-1,), {"keepdim": True})],
    "prod": [((1,), {}), ((0, True), {}), ((-1,), {"dtype": "float64"})],
    "var": [((), {}), ((1,), {}), (((0, 2),), {"correction": 0, "keepdim": True})],
    "cumsum": [((1,), {}), ((-1,), {"dtype": "float64"}), ((0,), {})],
    "cumprod": [((2,), {}), ((0,), {"dtype": "float64"})],
}
# The dtypes torch takes for each (var: floating only; the extrema: no complex).
DTYPES = {
    "sum": ["float32", "float64", "int32", "int64", "bool", "int8", "float16"],
    "amax": ["float32", "float64", "int32", "int64", "bool", "uint8", "float16"],
    "amin": ["float32", "int64", "bool"],
    "max": ["float32", "float64", "int32", "bool", "bfloat16"],
    "min": ["float32", "int64", "bool"],
    "argmax": ["float32", "float64", "int32", "int16"],
    "argmin": ["float32", "int64", "uint8"],
    "prod": ["float32", "float64", "int32", "int64", "bool"],
    "var": ["float32", "float64"],
    "cumsum": ["float32", "float64", "int32", "int64", "bool", "uint8"],
    "cumprod": ["float32", "float64", "int32", "int64", "bool"],
}
CASES = [(n, d) for n in VARIANTS for d in DTYPES[n]]


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype in (torch.float16, torch.bfloat16) else t).numpy()
    t = t.cpu()
    return np.array(memoryview((t.float() if t.dtype in (fc.float16, fc.bfloat16) else t).contiguous()))


def sample(dtype: str, shape=(3, 4, 5)) -> np.ndarray:
    a = RNG.standard_normal(shape) * 3
    if dtype == "bool":
        return a > 0
    if dtype.startswith(("int", "uint")):
        return np.abs(a).astype(dtype) if dtype.startswith("u") else a.astype(dtype)
    return a.astype(np.float32 if dtype in ("float16", "bfloat16") else dtype)


def make(a: np.ndarray, dtype: str, device: str = "cpu"):
    f = fc.tensor(a).to(getattr(fc, dtype)).to(device)
    t = torch.from_numpy(np.array(a)).to(getattr(torch, dtype))
    return f, t


def kwargs_for(lib, kw: dict) -> dict:
    return {k: getattr(lib, v) if k == "dtype" else v for k, v in kw.items()}


def assert_same(got, expected: torch.Tensor) -> None:
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(expected.shape)
    if not expected.is_floating_point():
        np.testing.assert_array_equal(npy(got), npy(expected))
        return
    # Sums, products and variances add in their own orders (flambeau's ordered partials).
    tol = {torch.float16: 1e-2, torch.bfloat16: 1e-2, torch.float32: 2e-6}.get(expected.dtype, 1e-13)
    np.testing.assert_allclose(npy(got), npy(expected), rtol=tol, atol=tol)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_reduction_forms_match_torch(name, dtype, device):
    x, t = make(sample(dtype), dtype, device)
    for args, kw in VARIANTS[name]:
        if name in ("prod", "cumprod") and dtype == "bool" and "dtype" in kw:
            continue
        expected = getattr(torch, name)(t, *args, **kwargs_for(torch, kw))
        got = getattr(fc, name)(x, *args, **kwargs_for(fc, kw))
        assert got.device.type == device
        assert_same(got, expected)
        assert_same(getattr(x, name)(*args, **kwargs_for(fc, kw)), expected)
        # out= of the result's shape and dtype is written in place; a wrong shape is resized (torch
        # warns for a non-empty one); both give the functional values.
        out = fc.empty(tuple(expected.shape), dtype=got.dtype, device=device)
        ptr = out.data_ptr()
        assert getattr(fc, name)(x, *args, out=out, **kwargs_for(fc, kw)) is out
        assert out.data_ptr() == ptr
        assert_same(out, expected)
        out = fc.empty((0,), dtype=got.dtype, device=device)
        assert getattr(fc, name)(x, *args, out=out, **kwargs_for(fc, kw)) is out
        assert_same(out, expected)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_out_is_written_by_the_out_kernel(name):
    x = fc.tensor(sample("float32"))
    args, kw = VARIANTS[name][-1]
    expected = getattr(fc, name)(x, *args, **kwargs_for(fc, kw))
    out = fc.empty(tuple(expected.shape), dtype=expected.dtype)
    with kernel_trace() as rows:
        getattr(fc, name)(x, *args, out=out, **kwargs_for(fc, kw))
    names = [r[0] for r in rows]
    assert "copy_" not in names and "empty" not in names  # no result computed elsewhere and copied
    np.testing.assert_array_equal(npy(out), npy(expected))


@pytest.mark.parametrize("name", list(VARIANTS))
def test_strided_and_aliasing_out(name):
    a = sample("float64", (4, 6))
    x, t = make(a, "float64")
    args = () if name in ("max", "min") else (1,)
    expected = getattr(torch, name)(t, *args)
    if expected.dim() == 2:
        # A transposed out: the values land in its elements.
        out = fc.zeros((6, 4), dtype=fc.float64).t()
        assert getattr(fc, name)(x, *args, out=out) is out
        assert_same(out, expected)
    if expected.dim() == 1:
        # A strided out (every other element of a buffer): the values land in its elements.
        buf = fc.zeros(2 * expected.shape[0], dtype=fc.float64 if expected.is_floating_point() else fc.int64)
        out = buf[::2]
        assert getattr(fc, name)(x, *args, out=out) is out
        assert_same(out, expected)
        np.testing.assert_array_equal(npy(buf)[1::2], 0)
    if expected.is_floating_point() and expected.dim() == 1 and expected.shape[0] == 4:
        # out a view of the input (its first column): every value is read before out is written
        # (torch leaves such aliasing undefined; its result on an untouched copy is the oracle).
        y = fc.tensor(a)
        col = y[:, 0]
        assert getattr(fc, name)(y, *args, out=col) is col
        np.testing.assert_allclose(npy(y)[:, 0], npy(expected), rtol=1e-13)
        np.testing.assert_array_equal(npy(y)[:, 1:], a[:, 1:])


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_meta_device_shapes_and_dtypes(name, dtype):
    for args, kw in VARIANTS[name]:
        if name in ("prod", "cumprod") and dtype == "bool" and "dtype" in kw:
            continue
        t = torch.empty((3, 4, 5), dtype=getattr(torch, dtype), device="meta")
        x = fc.empty((3, 4, 5), dtype=getattr(fc, dtype), device="meta")
        expected = getattr(torch, name)(t, *args, **kwargs_for(torch, kw))
        got = getattr(fc, name)(x, *args, **kwargs_for(fc, kw))
        assert got.is_meta
        assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
        assert tuple(got.shape) == tuple(expected.shape)
        out = fc.empty((0,), dtype=got.dtype, device="meta")
        assert getattr(fc, name)(x, *args, out=out, **kwargs_for(fc, kw)) is out
        assert tuple(out.shape) == tuple(expected.shape)


def test_out_dtype_errors_name_the_op():
    x, t = make(sample("float32"), "float32")
    # argmax/argmin: out must be int64 (torch: RuntimeError).
    for name in ("argmax", "argmin", "amax", "amin", "max", "min"):
        with pytest.raises(RuntimeError):
            getattr(torch, name)(t, out=torch.empty(0, dtype=torch.int32 if name.startswith("arg") else torch.int64))
        bad = fc.int32 if name.startswith("arg") else fc.int64
        with pytest.raises((TypeError, RuntimeError), match=rf"\[{name}\]"):
            getattr(fc, name)(x, out=fc.empty((0,), dtype=bad))
    # var of an integer tensor, and into an integer out: torch raises, flambeau names the op.
    with pytest.raises(RuntimeError):
        torch.var(torch.ones(3, dtype=torch.int64))
    with pytest.raises(TypeError, match=r"\[var\] var and std only support floating point"):
        fc.var(fc.ones(3, dtype=fc.int64))
    # sum: out's dtype chooses the accumulation when dtype= is not given (torch.sum(f, out=i64)).
    expected = torch.sum(t, 1, out=torch.empty(0, dtype=torch.int64))
    out = fc.empty((0,), dtype=fc.int64)
    fc.sum(x, 1, out=out)
    assert_same(out, expected)
    with pytest.raises(RuntimeError):
        torch.sum(t, 1, dtype=torch.float64, out=torch.empty(0, dtype=torch.float32))
    with pytest.raises((TypeError, RuntimeError), match=r"\[sum\]"):
        fc.sum(x, 1, dtype=fc.float64, out=fc.empty((0,), dtype=fc.float32))


def test_out_resize_warning_as_torch():
    x, t = make(sample("float32"), "float32")
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        torch.sum(t, 0, out=torch.empty(7))
    with warnings.catch_warnings(record=True) as fw:
        warnings.simplefilter("always")
        out = fc.empty((7,))
        fc.sum(x, 0, out=out)
    assert bool(tw) == bool(fw)
    assert tuple(out.shape) == (4, 5)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_empty_tensors_and_dims_as_torch(shape):
    a = np.zeros(shape, dtype=np.float32)
    x, t = make(a, "float32")
    nd = len(shape)
    for name, args in [("sum", ()), ("sum", (nd - 1,)), ("prod", (nd - 1,)), ("var", (nd - 1,))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's var of 0 or 1 elements warns
            expected = getattr(torch, name)(t, *args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = getattr(fc, name)(x, *args)
        assert tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_array_equal(npy(got), npy(expected))
    for name in ("amax", "amin", "max", "min", "argmax", "argmin"):
        with pytest.raises((IndexError, RuntimeError)):
            getattr(torch, name)(t)
        with pytest.raises((IndexError, RuntimeError), match=rf"\[{name}\]"):
            getattr(fc, name)(x)
    last = shape[-1]
    for name in ("amax", "amin", "argmax", "argmin"):
        if last == 0:
            with pytest.raises(IndexError):
                getattr(torch, name)(t, nd - 1)
            with pytest.raises(IndexError, match=rf"\[{name}\]"):
                getattr(fc, name)(x, nd - 1)
        else:
            # Reducing a non-empty dim of a tensor with an empty one: an empty result.
            expected = getattr(torch, name)(t, nd - 1)
            got = getattr(fc, name)(x, nd - 1)
            assert tuple(got.shape) == tuple(expected.shape) and got.numel() == 0


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_scan_inplace_forms(name, dtype, device):
    a = sample(dtype, (4, 6))
    for dim in (0, 1, -1):
        x, t = make(a, dtype, device)
        getattr(t, name + "_")(dim)
        ptr, v0 = x.data_ptr(), x._version
        assert getattr(x, name + "_")(dim) is x
        assert x.data_ptr() == ptr and x._version > v0
        assert_same(x, t)
    # An integer tensor's in-place scan with a float dtype: torch refuses the cast back.
    x, t = make(a, "int64", device)
    with pytest.raises(RuntimeError):
        getattr(t, name + "_")(0, dtype=torch.float64)
    with pytest.raises((TypeError, RuntimeError), match=rf"\[{name}_\]"):
        getattr(x, name + "_")(0, dtype=fc.float64)


def test_scan_of_empty_and_0d_tensors():
    for shape in [(0,), (3, 0), ()]:
        a = sample("float32", shape)
        x, t = make(a, "float32")
        for name in ("cumsum", "cumprod"):
            expected = getattr(torch, name)(t, 0 if shape else -1)
            got = getattr(fc, name)(x, 0 if shape else -1)
            assert_same(got, expected)
            with pytest.raises(IndexError):
                getattr(torch, name)(t, 2)
            with pytest.raises(IndexError, match=rf"\[{name}\]"):
                getattr(fc, name)(x, 2)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_extrema_refuse_bool_as_torch(name):
    t = torch.tensor([[True, False], [False, True]])
    x = fc.tensor([[True, False], [False, True]])
    for args in [(), (1,), (0, True)]:
        with pytest.raises(RuntimeError, match=rf"{name}\(\): does not support bool input"):
            getattr(torch, name)(t, *args)
        with pytest.raises(RuntimeError, match=rf"\[{name}\] {name}\(\): does not support bool input"):
            getattr(fc, name)(x, *args)
        with pytest.raises(RuntimeError, match=rf"\[{name}\] {name}\(\): does not support bool input"):
            getattr(x, name)(*args)
    # On the meta device too (the check step).
    with pytest.raises(RuntimeError, match=rf"\[{name}\] {name}\(\): does not support bool input"):
        getattr(fc, name)(fc.empty((2, 3), dtype=fc.bool, device="meta"), 1)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_scans_as_torch(name, dtype, device):
    # Accumulated in float32, each result rounded to the half dtype: torch's CPU scans, bit for bit.
    a = (RNG.standard_normal((5, 40)) * (0.3 if name == "cumprod" else 3)).astype(np.float32)
    a[0, 3] = np.nan
    a[1, 5:9] = [np.inf, -np.inf, 0.0, -0.0]
    for dim in (0, 1, -1):
        x, t = make(a, dtype, device)
        expected = getattr(torch, name)(t, dim)
        got = getattr(fc, name)(x, dim)
        assert got.device.type == device
        assert str(got.dtype) == f"flambeau.{dtype}" and tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_array_equal(npy(got), npy(expected))
        assert_same(getattr(x, name)(dim), expected)
        out = fc.empty((0,), dtype=getattr(fc, dtype), device=device)
        assert getattr(fc, name)(x, dim, out=out) is out
        np.testing.assert_array_equal(npy(out), npy(expected))
        assert getattr(x, name + "_")(dim) is x
        np.testing.assert_array_equal(npy(x), npy(expected))
    # A float32 input scanned in the half dtype (dtype=): cast first, as torch.
    x, t = make(a, "float32")
    expected = getattr(torch, name)(t, 1, dtype=getattr(torch, dtype))
    np.testing.assert_array_equal(npy(getattr(fc, name)(x, 1, dtype=getattr(fc, dtype))), npy(expected))
    # 0-d and empty.
    for shape in [(), (0,), (3, 0)]:
        x, t = make(np.ones(shape, np.float32), dtype)
        assert_same(getattr(fc, name)(x, -1), getattr(torch, name)(t, -1))
