"""Note [Structured kernels] for the spatial ops (src/meta/spatial_rules.cpp, the out kernels of
src/cpu/conv/conv.cpp, src/cpu/pool/pool_pad.cpp and src/cpu/pool/resample.cpp): im2col, col2im, _pad_nd,
_pad_nd_backward, upsample_nearest2d(_backward) and upsample_bilinear2d(_backward) run their meta step and
one out kernel, in the functional form and (im2col, col2im, the two upsamplings, as torch._C._nn's) out=,
on the cpu, the simulated device and cuda, and on the meta device. Values, shapes and dtypes, out= written
in place and resized, out dtype errors, strided and aliasing outs, channels_last inputs, empty inputs and
the errors against PyTorch 2.13."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from flambeau_core.testing import device_params, kernel_trace

RNG = np.random.default_rng(23)
TOL = {"float32": 2e-6, "float64": 1e-13}
BLOCK1 = ([1, 1], [0, 0], [1, 1])  # dilation, padding, stride of 1, 0, 1
NO_CUDA = "flambeau-cuda has no kernel for im2col, col2im and the upsamplings"
# im2col/col2im arguments: kernel_size, dilation, padding, stride
BLOCKS = [([2, 2], *BLOCK1), ([3, 2], [2, 1], [1, 0], [1, 2]), ([3, 3], [1, 1], [1, 1], [2, 2])]
# upsampling arguments: output_size, scales_h, scales_w
SIZES = [([4, 6], None, None), ([5, 3], None, None), ([10, 17], 2.0, 2.0), ([3, 7], 0.5, 1.7), ([1, 1], None, None)]
# _pad_nd's arguments (non-constant modes pad the last 2 dims of these 3-D and 4-D inputs)
PADS = [([1, 2], "constant", 1.5), ([2, 1, 0, 3], "constant", 0.0), ([-1, 2, 1, -1], "constant", -2.0),
        ([1, 2, 0, 1], "reflect", 0.0), ([2, 1, 1, 2], "reflect", 0.0), ([1, 3, 2, 0], "replicate", 0.0),
        ([2, 1, 1, 1], "replicate", 0.0), ([1, 2, 2, 1], "circular", 0.0), ([], "constant", 0.0)]  # fmt: skip


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.array(memoryview(t.cpu().contiguous()))


def pair(a: np.ndarray, device: str = "cpu", layout: str = "contiguous"):
    """The same values as a flambeau tensor on `device` and a cpu torch tensor, in `layout`."""
    f, t = fc.tensor(a), torch.from_numpy(a.copy())
    if layout == "channels_last":
        f, t = f.contiguous(memory_format=fc.channels_last), t.contiguous(memory_format=torch.channels_last)
    elif layout == "transposed":  # the last two dims swapped in memory
        f = f.transpose(-1, -2).contiguous().transpose(-1, -2)
    return f.to(device), t


def assert_same(got, expected: torch.Tensor, tol: float = 0.0) -> None:
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(npy(got), npy(expected), rtol=tol, atol=tol)


def trace(fn) -> list[str]:
    with kernel_trace() as rows:
        fn()
    return [r[0] for r in rows]


def random(shape, dtype: str = "float64") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


# ---- values against torch on each device ----


@pytest.mark.parametrize("device", device_params(("cpu", "sim", "cuda"), not_on_cuda=NO_CUDA))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
def test_im2col_and_col2im_match_torch(dtype, layout, device):
    for shape in [(2, 3, 7, 6), (3, 5, 4)]:
        x, t = pair(random(shape, dtype), device, layout if len(shape) == 4 else "contiguous")
        for args in BLOCKS:
            expected = torch._C._nn.im2col(t, *args)
            got = _C.im2col(x, *args)
            assert got.device.type == x.device.type
            assert_same(got, expected)  # a gather: the same values
            cols_t = torch.from_numpy(random(tuple(expected.shape), dtype))
            cols = fc.tensor(cols_t.numpy()).to(device)
            if layout == "transposed":
                cols = cols.transpose(-1, -2).contiguous().transpose(-1, -2)
            assert_same(_C.col2im(cols, list(shape[-2:]), *args), torch._C._nn.col2im(cols_t, shape[-2:], *args),
                        TOL[dtype])  # fmt: skip


@pytest.mark.parametrize("device", device_params(("cpu", "sim", "cuda")))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
def test_pad_nd_and_backward_match_torch(dtype, device):
    for shape, layout in [((2, 3, 5, 4), "contiguous"), ((2, 3, 5, 4), "channels_last"), ((3, 6, 5), "transposed")]:
        a = RNG.integers(0, 2, shape).astype(bool) if dtype == "bool" else random(shape).astype(dtype)
        x, t = pair(a, device, layout)
        for pad, mode, value in PADS:
            if (dtype == "bool" and (value != 0.0 or mode != "constant")) or (dtype == "uint8" and value < 0):
                continue  # torch pads bool tensors with a constant only, and refuses a negative uint8 value
            expected = torch._C._nn.pad(t, pad, mode, value if mode == "constant" else None)
            got = _C._pad_nd(x, pad, mode, value)
            assert got.device.type == x.device.type
            assert_same(got, expected)  # a gather: the same values
            if dtype not in ("float32", "float64"):
                continue
            # The gradient: torch's autograd of F.pad is the oracle (a crop for a constant pad).
            tg = t.clone().requires_grad_()
            g = torch.from_numpy(random(tuple(expected.shape), dtype))
            torch._C._nn.pad(tg, pad, mode, value if mode == "constant" else None).backward(g)
            gi = _C._pad_nd_backward(fc.tensor(g.numpy()).to(device), list(shape), pad, mode)
            assert_same(gi, tg.grad, TOL[dtype])


@pytest.mark.parametrize("device", device_params(("cpu", "sim", "cuda"), not_on_cuda=NO_CUDA))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
def test_upsampling_and_backwards_match_torch(dtype, layout, device):
    x, t = pair(random((2, 3, 5, 4), dtype), device, layout)
    for size, sh, sw in SIZES:
        assert_same(_C.upsample_nearest2d(x, size, sh, sw), torch._C._nn.upsample_nearest2d(t, size, sh, sw))
        g = torch.from_numpy(random((2, 3, *size), dtype))
        fg = fc.tensor(g.numpy()).to(device)
        expected = torch.ops.aten.upsample_nearest2d_backward(g, size, [2, 3, 5, 4], sh, sw)
        assert_same(_C.upsample_nearest2d_backward(fg, [2, 3, 5, 4], size, sh, sw), expected, TOL[dtype])
        for ac in (False, True):
            expected = torch._C._nn.upsample_bilinear2d(t, size, ac, sh, sw)
            assert_same(_C.upsample_bilinear2d(x, size, ac, sh, sw), expected, TOL[dtype])
            expected = torch.ops.aten.upsample_bilinear2d_backward(g, size, [2, 3, 5, 4], ac, sh, sw)
            assert_same(_C.upsample_bilinear2d_backward(fg, [2, 3, 5, 4], size, ac, sh, sw), expected, TOL[dtype])


@pytest.mark.parametrize("device", device_params(("cpu", "sim")))
def test_upsample_nearest2d_integer_dtypes_match_torch(device):
    # torch resizes uint8 (its only integer loop); the others are checked against its float64 result.
    for dtype in ["uint8", "int32", "int64"]:
        for layout in ["contiguous", "channels_last"]:
            x, t = pair(RNG.integers(0, 100, (2, 3, 4, 5)).astype(dtype), device, layout)
            for size, sh, sw in SIZES:
                expected = torch._C._nn.upsample_nearest2d(t if dtype == "uint8" else t.double(), size, sh, sw)
                assert_same(_C.upsample_nearest2d(x, size, sh, sw), expected.to(t.dtype))


# ---- out= ----

OUT_FORMS = [
    ("im2col", lambda m, x: m.im2col(x, [3, 2], [1, 1], [1, 1], [2, 1])),
    ("col2im", lambda m, x: m.col2im(x.reshape(2, 12, 5), [6, 2], [2, 2], *BLOCK1)),
    ("upsample_nearest2d", lambda m, x: m.upsample_nearest2d(x, [7, 3])),
    ("upsample_bilinear2d", lambda m, x: m.upsample_bilinear2d(x, [7, 3], False)),
]


def out_form(name, fn, x, out):
    """`fn` called on flambeau's _C with out= added."""

    class WithOut:
        def __getattr__(self, attr):
            return lambda *args: getattr(_C, attr)(*args, out=out)

    return fn(WithOut(), x)


@pytest.mark.parametrize("device", device_params(("cpu", "sim", "cuda"), not_on_cuda=NO_CUDA))
@pytest.mark.parametrize("name", [n for n, _ in OUT_FORMS])
def test_out_is_written_in_place_and_resized_as_torch(name, device):
    fn = dict(OUT_FORMS)[name]
    x, t = pair(random((2, 3, 5, 4)), device)
    expected = fn(torch._C._nn, t)
    out = fc.empty(tuple(expected.shape), dtype=fc.float64, device=device)
    ptr = out.data_ptr()
    assert out_form(name, fn, x, out) is out
    assert out.data_ptr() == ptr
    assert_same(out, expected, 1e-13)
    # An empty out is resized silently, one with elements with a UserWarning (torch's structured upsamplings
    # warn too; its im2col/col2im resize silently, flambeau warns for every structured op).
    for size in [(0,), (5,)]:
        with warnings.catch_warnings(record=True) as tw:
            warnings.simplefilter("always")
            torch_out = torch.empty(size, dtype=torch.float64)
            torch_call(name, t, torch_out)
        out = fc.empty(size, dtype=fc.float64, device=device)
        with warnings.catch_warnings(record=True) as fw:
            warnings.simplefilter("always")
            assert out_form(name, fn, x, out) is out
        assert bool(fw) == (size != (0,))
        if name.startswith("upsample"):
            assert bool(tw) == bool(fw)
        assert tuple(out.shape) == tuple(torch_out.shape)
        assert_same(out, torch_out, 1e-13)


def torch_call(name, t, out):
    """OUT_FORMS' calls on torch with out=."""
    if name == "im2col":
        return torch._C._nn.im2col(t, [3, 2], [1, 1], [1, 1], [2, 1], out=out)
    if name == "col2im":
        return torch._C._nn.col2im(t.reshape(2, 12, 5), [6, 2], [2, 2], *BLOCK1, out=out)
    if name == "upsample_nearest2d":
        return torch._C._nn.upsample_nearest2d(t, [7, 3], out=out)
    return torch._C._nn.upsample_bilinear2d(t, [7, 3], False, out=out)


@pytest.mark.parametrize("name", [n for n, _ in OUT_FORMS])
def test_out_runs_the_out_kernel_without_a_copy(name):
    fn = dict(OUT_FORMS)[name]
    x = fc.tensor(random((2, 3, 5, 4), "float32"))
    expected = fn(_C, x)
    out = fc.empty(tuple(expected.shape))
    names = trace(lambda: out_form(name, fn, x, out))
    assert name in names
    assert "copy_" not in names and "empty" not in names
    np.testing.assert_array_equal(npy(out), npy(expected))
    # The functional form: one kernel, its output allocated by the meta step, no copy.
    names = trace(lambda: fn(_C, x))
    assert names.count(name) == 1 and "copy_" not in names


def test_functional_forms_run_one_kernel_and_no_copy():
    x = fc.tensor(random((2, 3, 5, 4), "float32"))
    g = fc.ones(2, 3, 7, 6)
    calls = {
        "_pad_nd": lambda: _C._pad_nd(x, [1, 1, 1, 1], "reflect", 0.0),
        "_pad_nd_backward": lambda: _C._pad_nd_backward(g, [2, 3, 5, 4], [1, 1, 1, 1], "reflect"),
        "upsample_nearest2d_backward": lambda: _C.upsample_nearest2d_backward(g, [2, 3, 5, 4], [7, 6]),
        "upsample_bilinear2d_backward": lambda: _C.upsample_bilinear2d_backward(g, [2, 3, 5, 4], [7, 6], True),
    }
    for name, call in calls.items():
        names = trace(call)
        assert names.count(name) == 1 and "copy_" not in names, (name, names)


def test_strided_and_aliasing_out():
    a = random((1, 2, 6, 6))
    x, t = pair(a)
    # A transposed out: the values land in its elements.
    expected = torch._C._nn.upsample_nearest2d(t, [4, 5])
    out = fc.zeros((1, 2, 5, 4), dtype=fc.float64).transpose(-1, -2)
    assert _C.upsample_nearest2d(x, [4, 5], out=out) is out
    assert_same(out, expected)
    # Every other element of a buffer.
    buf = fc.zeros((1, 8, 50), dtype=fc.float64)
    out = buf[..., ::2]
    _C.im2col(x, [2, 2], *BLOCK1, out=out)
    assert_same(out, torch._C._nn.im2col(t, [2, 2], *BLOCK1))
    np.testing.assert_array_equal(npy(buf)[..., 1::2], 0)
    # out a view of the input's memory: every value is read before out is written (torch's result on an
    # untouched copy is the oracle).
    for name, call, tcall in [
        ("upsample_bilinear2d", lambda y, o: _C.upsample_bilinear2d(y, [3, 3], True, out=o),
         lambda: torch._C._nn.upsample_bilinear2d(t, [3, 3], True)),
        ("col2im", lambda y, o: _C.col2im(y.reshape(1, 8, 9), [4, 4], [2, 2], *BLOCK1, out=o),
         lambda: torch._C._nn.col2im(t.reshape(1, 8, 9), [4, 4], [2, 2], *BLOCK1)),
    ]:  # fmt: skip
        y = fc.tensor(a.copy())
        expected = tcall()
        view = y.reshape(-1)[: expected.numel()].reshape(tuple(expected.shape))
        assert call(y, view) is view, name
        np.testing.assert_allclose(npy(view), npy(expected), rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(npy(y).reshape(-1)[expected.numel() :], a.reshape(-1)[expected.numel() :])


def test_out_dtype_and_device_errors():
    x, t = pair(random((2, 3, 5, 4), "float32"))
    for name, fn in OUT_FORMS:
        with pytest.raises(RuntimeError, match="dtype|scalar type"):
            torch_call(name, t, torch.empty(0, dtype=torch.float64))
        with pytest.raises((TypeError, RuntimeError), match=rf"\[{name}\].*dtype float32, but got float64"):
            out_form(name, fn, x, fc.empty((0,), dtype=fc.float64))
    # An out= on another device: torch and flambeau refuse it.
    with pytest.raises(RuntimeError):
        torch._C._nn.upsample_nearest2d(t, [3, 3], out=torch.empty(0, device="meta"))
    with pytest.raises(RuntimeError, match=r"\[upsample_nearest2d\]"):
        _C.upsample_nearest2d(x, [3, 3], out=fc.empty((0,), device="meta"))


# ---- the meta device ----


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_meta_device_as_torch(dtype):
    def both(shape):
        return (fc.empty(shape, dtype=getattr(fc, dtype), device="meta"),
                torch.empty(shape, dtype=getattr(torch, dtype), device="meta"))  # fmt: skip

    def check(got, expected):
        assert got.is_meta and tuple(got.shape) == tuple(expected.shape)
        assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")

    x, t = both((2, 3, 7, 6))
    for args in BLOCKS:
        expected = torch._C._nn.im2col(t, *args)
        check(_C.im2col(x, *args), expected)
        out = fc.empty((0,), dtype=x.dtype, device="meta")
        assert _C.im2col(x, *args, out=out) is out
        check(out, expected)
        cols, tcols = both(tuple(expected.shape))
        check(_C.col2im(cols, [7, 6], *args), torch._C._nn.col2im(tcols, [7, 6], *args))
    for pad, mode, value in PADS:
        expected = torch._C._nn.pad(t, pad, mode, value if mode == "constant" else None)
        check(_C._pad_nd(x, pad, mode, value), expected)
        g, _ = both(tuple(expected.shape))
        check(_C._pad_nd_backward(g, [2, 3, 7, 6], pad, mode), t)
    for size, sh, sw in SIZES:
        check(_C.upsample_nearest2d(x, size, sh, sw), torch._C._nn.upsample_nearest2d(t, size, sh, sw))
        check(_C.upsample_bilinear2d(x, size, True, sh, sw), torch._C._nn.upsample_bilinear2d(t, size, True, sh, sw))
        g, tg = both((2, 3, *size))
        check(_C.upsample_nearest2d_backward(g, [2, 3, 7, 6], size, sh, sw),
              torch.ops.aten.upsample_nearest2d_backward(tg, size, [2, 3, 7, 6], sh, sw))  # fmt: skip
        check(_C.upsample_bilinear2d_backward(g, [2, 3, 7, 6], size, False, sh, sw),
              torch.ops.aten.upsample_bilinear2d_backward(tg, size, [2, 3, 7, 6], False, sh, sw))  # fmt: skip
    # The meta device refuses what the cpu refuses, with the cpu's message.
    with pytest.raises(RuntimeError, match=r"\[upsample_nearest2d_backward\] grad_output has shape"):
        _C.upsample_nearest2d_backward(both((2, 3, 4, 4))[0], [2, 3, 7, 6], [5, 5])
    with pytest.raises(RuntimeError, match=r"\[pad\] reflect padding must be less than the input size"):
        _C._pad_nd(x, [6, 6, 0, 0], "reflect", 0.0)


# ---- empty inputs ----


@pytest.mark.parametrize("device", device_params(("cpu", "sim", "cuda"), not_on_cuda=NO_CUDA))
def test_empty_inputs_as_torch(device):
    x, t = pair(np.zeros((0, 3, 5, 4)), device)
    assert_same(_C.im2col(x, [2, 2], *BLOCK1), torch._C._nn.im2col(t, [2, 2], *BLOCK1))
    cols, tcols = pair(np.zeros((0, 12, 12)), device)
    assert_same(_C.col2im(cols, [5, 4], [2, 2], *BLOCK1), torch._C._nn.col2im(tcols, [5, 4], [2, 2], *BLOCK1))
    for size, sh, sw in SIZES:
        assert_same(_C.upsample_nearest2d(x, size, sh, sw), torch._C._nn.upsample_nearest2d(t, size, sh, sw))
        assert_same(
            _C.upsample_bilinear2d(x, size, False, sh, sw), torch._C._nn.upsample_bilinear2d(t, size, False, sh, sw)
        )
        g = fc.empty((0, 3, *size), dtype=fc.float64, device=device)
        tg = torch.empty((0, 3, *size), dtype=torch.float64)
        assert_same(_C.upsample_nearest2d_backward(g, [0, 3, 5, 4], size, sh, sw),
                    torch.ops.aten.upsample_nearest2d_backward(tg, size, [0, 3, 5, 4], sh, sw))  # fmt: skip
        assert_same(_C.upsample_bilinear2d_backward(g, [0, 3, 5, 4], size, True, sh, sw),
                    torch.ops.aten.upsample_bilinear2d_backward(tg, size, [0, 3, 5, 4], True, sh, sw))  # fmt: skip
    out = fc.empty((5,), dtype=fc.float64, device=device)
    with pytest.warns(UserWarning, match="was resized"):
        assert _C.upsample_nearest2d(x, [3, 3], out=out) is out
    assert tuple(out.shape) == (0, 3, 3, 3)


@pytest.mark.parametrize("device", device_params(("cpu", "sim", "cuda")))
def test_empty_pads_as_torch(device):
    for shape, pad, mode in [((0, 3, 4), [1, 2], "reflect"), ((2, 0, 4), [1, 1], "constant"),
                             ((3, 4), [-2, -2], "constant"), ((2, 3, 4), [], "constant"),
                             ((0, 2, 3, 3), [1, 1, 1, 1], "circular")]:  # fmt: skip
        x, t = pair(random(shape), device)
        expected = torch._C._nn.pad(t, pad, mode, None)
        assert_same(_C._pad_nd(x, pad, mode, 0.0), expected)
        g = fc.zeros(tuple(expected.shape), dtype=fc.float64, device=device)
        assert tuple(_C._pad_nd_backward(g, list(shape), pad, mode).shape) == shape


# ---- errors ----


def test_errors_as_torch():
    x, t = pair(random((1, 2, 4, 4), "float32"))
    cols, tcols = pair(random((1, 8, 9), "float32"))
    cases = [
        # (torch call, flambeau call, flambeau's message)
        (lambda: torch._C._nn.im2col(t, [0, 2], *BLOCK1), lambda: _C.im2col(x, [0, 2], *BLOCK1),
         r"\[im2col\] kernel_size must be positive, got \[0, 2\]"),
        (lambda: torch._C._nn.im2col(t, [5, 5], *BLOCK1), lambda: _C.im2col(x, [5, 5], *BLOCK1),
         r"\[im2col\] given spatial size \(4, 4\), kernel_size \(5, 5\).*do not fit"),
        (lambda: torch._C._nn.col2im(tcols[:, :7], [4, 4], [2, 2], *BLOCK1),
         lambda: _C.col2im(cols[:, :7], [4, 4], [2, 2], *BLOCK1),
         r"\[col2im\] expected size of input's dimension 1 to be divisible by the product of kernel_size"),
        (lambda: torch._C._nn.col2im(tcols, [4, 5], [2, 2], *BLOCK1),
         lambda: _C.col2im(cols, [4, 5], [2, 2], *BLOCK1),
         r"\[col2im\] given output_size \[4, 5\].*expected the input's last dimension to be 12"),
        (lambda: torch._C._nn.pad(t, [1], "constant"), lambda: _C._pad_nd(x, [1], "constant", 0.0),
         r"\[pad\] padding length must be divisible by 2"),
        (lambda: torch._C._nn.pad(t, [1, 1], "reflect", 1.0), lambda: _C._pad_nd(x, [1, 1], "reflect", 1.0),
         r"\[pad\] padding mode 'reflect' doesn't take in value argument"),
        (lambda: torch._C._nn.pad(t, [4, 4, 0, 0], "reflect"), lambda: _C._pad_nd(x, [4, 4, 0, 0], "reflect", 0.0),
         r"\[pad\] reflect padding must be less than the input size"),
        (lambda: torch._C._nn.upsample_nearest2d(t, [0, 3]), lambda: _C.upsample_nearest2d(x, [0, 3]),
         r"\[upsample_nearest2d\] input and output sizes should be greater than 0"),
        (lambda: torch._C._nn.upsample_bilinear2d(t, [3], False), lambda: _C.upsample_bilinear2d(x, [3], False),
         r"\[upsample_bilinear2d\] output_size must have 2 elements"),
        (lambda: torch._C._nn.upsample_nearest2d(t[0], [3, 3]), lambda: _C.upsample_nearest2d(x[0], [3, 3]),
         r"\[upsample_nearest2d\] expected a 4-D \(N, C, H, W\) input"),
        (lambda: torch.ops.aten.upsample_nearest2d_backward(torch.ones(1, 2, 3, 3), [4, 4], [1, 2, 4, 4], None, None),
         lambda: _C.upsample_nearest2d_backward(fc.ones(1, 2, 3, 3), [1, 2, 4, 4], [4, 4]),
         r"\[upsample_nearest2d_backward\] grad_output has shape \(1, 2, 3, 3\) but the forward output has shape"),
        (lambda: torch.ops.aten.upsample_bilinear2d_backward(torch.ones(1, 2, 3, 3), [4, 4], [1, 2, 4, 4], True,
                                                             None, None),
         lambda: _C.upsample_bilinear2d_backward(fc.ones(1, 2, 3, 3), [1, 2, 4, 4], [4, 4], True),
         r"\[upsample_bilinear2d_backward\] grad_output has shape"),
    ]  # fmt: skip
    for tcall, fcall, msg in cases:
        with pytest.raises(RuntimeError) as te:
            tcall()
        with pytest.raises(type(te.value), match=msg):
            fcall()
    # The same errors on the meta device, raised by the meta step alone.
    xm = fc.empty((1, 2, 4, 4), device="meta")
    with pytest.raises(RuntimeError, match=r"\[im2col\] kernel_size must be positive"):
        _C.im2col(xm, [0, 2], *BLOCK1)
    with pytest.raises(RuntimeError, match=r"\[upsample_bilinear2d\] output_size must have 2 elements"):
        _C.upsample_bilinear2d(xm, [3], False)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_wrong_ranks_and_pad_modes_raise_torchs_types(device):
    """An input of the wrong rank: torch's im2col indexes dims 1 to 3 before it checks the rank, so fewer
    than 3 dims are its IndexError and more its RuntimeError (col2im's: RuntimeError); an unknown pad mode is
    its NotImplementedError. Same types here, with messages naming the op, the ranks and the shape."""
    for shape in [(), (4,), (4, 4), (1, 1, 1, 4, 4)]:
        with pytest.raises((IndexError, RuntimeError)) as expected:
            torch._C._nn.im2col(torch.ones(shape), [1, 1], *BLOCK1)
        size = "[" + ", ".join(map(str, shape)) + "]"
        with pytest.raises(type(expected.value)) as got:
            _C.im2col(fc.ones(*shape, device=device), [1, 1], *BLOCK1)
        assert type(got.value) is (IndexError if len(shape) < 3 else fc.FlambeauError)
        assert str(got.value) == f"[im2col] expected a 3-D (unbatched) or 4-D (batched) input, got input of size {size}"
    for shape in [(), (4,), (2, 2, 2, 2)]:
        with pytest.raises(RuntimeError):
            torch._C._nn.col2im(torch.ones(shape), [2, 2], [1, 1], *BLOCK1)
        with pytest.raises(
            fc.FlambeauError, match=r"^\[col2im\] expected a 2-D \(unbatched\) or 3-D \(batched\) input"
        ):
            _C.col2im(fc.ones(*shape, device=device), [2, 2], [1, 1], *BLOCK1)
    x, t = fc.ones(1, 2, 4, device=device), torch.ones(1, 2, 4)
    message = "[pad] unsupported padding mode 'bogus': use one of 'constant', 'reflect', 'replicate' or 'circular'"
    with pytest.raises(NotImplementedError):
        torch._C._nn.pad(t, [1, 1], "bogus")
    with pytest.raises(NotImplementedError) as got:
        _C._pad_nd(x, [1, 1], "bogus", 0.0)
    assert str(got.value) == message
    with pytest.raises(NotImplementedError) as got:
        _C._pad_nd_backward(fc.ones(1, 2, 6, device=device), [1, 2, 4], [1, 1], "bogus")
    assert str(got.value) == message


def test_errors_where_torch_differs():
    """torch raises these too, with another type: flambeau keeps its messages (and types)."""
    x = fc.ones(1, 2, 4, 4)
    ti = torch.ones(1, 2, 4, 4, dtype=torch.int64)
    # Dtypes without a loop: torch's NotImplementedError, flambeau's TypeError naming the op.
    with pytest.raises(NotImplementedError):
        torch._C._nn.im2col(ti, [2, 2], *BLOCK1)
    with pytest.raises(
        TypeError, match=r"\[im2col\] expected a float16, bfloat16, float32 or float64 input, got int64"
    ):
        _C.im2col(x.long(), [2, 2], *BLOCK1)
    with pytest.raises(NotImplementedError):
        torch._C._nn.upsample_bilinear2d(ti, [3, 3], False)
    with pytest.raises(
        TypeError,
        match=r"\[upsample_bilinear2d\] needs a float16, bfloat16, float32 or float64 tensor, got dtype int64",
    ):
        _C.upsample_bilinear2d(x.long(), [3, 3], False)
    with pytest.raises(NotImplementedError):
        torch._C._nn.upsample_nearest2d(ti.bool(), [3, 3])
    with pytest.raises(TypeError, match=r"\[upsample_nearest2d\] is not supported for dtype bool"):
        _C.upsample_nearest2d(x.bool(), [3, 3])
    # float16 runs the float32 loop (as torch takes it), on every device's meta step too; the shape errors
    # still come first.
    for device in ["cpu", "meta"]:
        h = fc.ones(1, 2, 4, 4, dtype=fc.float16, device=device)
        assert _C.upsample_nearest2d(h, [3, 3]).dtype == fc.float16
        with pytest.raises(RuntimeError, match=r"\[upsample_nearest2d\] output_size must have 2 elements"):
            _C.upsample_nearest2d(h, [3])
        assert tuple(_C.upsample_nearest2d(h[:0], [3, 3]).shape) == (0, 2, 3, 3)
        assert tuple(_C._pad_nd(h, [1, 1], "constant", 0.0).shape) == (1, 2, 4, 6)
        assert tuple(_C._pad_nd(h, [], "constant", 0.0).shape) == (1, 2, 4, 4)
    assert torch._C._nn.upsample_nearest2d(ti.half(), [3, 3]).dtype == torch.float16
    # The gradient of a non-constant pad is computed for the floating dtypes only.
    with pytest.raises(
        TypeError, match=r"\[pad_backward\] needs a float16, bfloat16, float32 or float64 gradient, got dtype int64"
    ):
        _C._pad_nd_backward(fc.ones(2, 4, 6, dtype=fc.int64), [2, 4, 4], [1, 1], "reflect")
    with pytest.raises(RuntimeError, match=r"\[pad_backward\] grad_output has shape \(2, 4, 5\) but padding"):
        _C._pad_nd_backward(fc.ones(2, 4, 5), [2, 4, 4], [1, 1], "reflect")
