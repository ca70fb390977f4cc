"""Note [Structured kernels] for the poolings (src/cpu/pool/pool.cpp): avg_pool2d, adaptive_avg_pool2d,
their backwards and max_pool_backward run their meta step and one out kernel, in the functional form
and (avg_pool2d, adaptive_avg_pool2d) out=, on the cpu, the simulated device and cuda, and on the meta
device. Values, shapes, dtypes, out= resizing and dtype errors, strided and aliasing out, empty
batches and the errors against PyTorch 2.13."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import devices, kernel_trace

RNG = np.random.default_rng(7)
DTYPES = ["float32", "float64", "bfloat16", "float16"]
TOL = {"float32": 2e-6, "float64": 1e-13, "bfloat16": 1e-2, "float16": 2e-3}

# kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
AVG_CASES = [
    ([2, 2], [2, 2], [0, 0], False, True, None),
    ([3, 3], [2, 2], [1, 1], True, False, None),
    ([3, 2], [1, 2], [1, 0], True, True, 5),
    ([2, 2], [], [1, 1], False, False, None),
]
# kernel, stride, padding, dilation, ceil_mode
MAX_CASES = [
    ([2, 2], [2, 2], [0, 0], [1, 1], False),
    ([3, 3], [2, 2], [1, 1], [1, 1], True),
    ([3, 2], [1, 2], [1, 1], [2, 1], True),
]
ADAPTIVE = [[1, 1], [3, 2], [4, 4], [5, 7]]


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.float().numpy() if t.dtype in (torch.float16, torch.bfloat16) else t.numpy()
    t = t.cpu()
    return np.array(memoryview((t.float() if t.dtype in (fc.float16, fc.bfloat16) else t).contiguous()))


def pair(a: np.ndarray, dtype: str, device: str = "cpu", layout: str = "contiguous"):
    """The same values as a flambeau tensor on `device` and a cpu torch tensor, in `layout`."""
    f = fc.tensor(a).to(getattr(fc, dtype))
    t = torch.from_numpy(a).to(getattr(torch, dtype))
    if layout == "channels_last":
        f, t = f.contiguous(memory_format=fc.channels_last), t.contiguous(memory_format=torch.channels_last)
    elif layout == "transposed":  # H and W swapped in memory
        f = f.transpose(-1, -2).contiguous().transpose(-1, -2)
    return f.to(device), t


def assert_same(got, expected: torch.Tensor, dtype: str) -> None:
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(npy(got), npy(expected), rtol=TOL[dtype], atol=TOL[dtype])


def trace(fn) -> list[str]:
    with kernel_trace() as rows:
        fn()
    return [r[0] for r in rows]


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
def test_avg_pool2d_and_backward_match_torch(dtype, layout, device):
    if device.startswith("cuda") and dtype in ("bfloat16", "float16"):
        pytest.skip("flambeau-cuda pools float32 and float64 only")
    for shape in [(2, 3, 7, 9), (3, 6, 5)]:
        a = RNG.standard_normal(shape)
        x, t = pair(a, dtype, device, layout if len(shape) == 4 else "contiguous")
        for k, s, p, ceil, cip, div in AVG_CASES:
            expected = torch._C._nn.avg_pool2d(t, k, s, p, ceil, cip, div)
            got = fc.avg_pool2d(x, k, s, p, ceil, cip, div)
            assert got.device.type == x.device.type
            assert_same(got, expected, dtype)
            g = RNG.standard_normal(tuple(expected.shape))
            fg, tg = pair(g, dtype, device)
            expected_gi = torch.ops.aten.avg_pool2d_backward(tg, t, k, s, p, ceil, cip, div)
            assert_same(fc.avg_pool2d_backward(fg, list(shape), k, s, p, ceil, cip, div), expected_gi, dtype)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
def test_adaptive_avg_pool2d_and_backward_match_torch(dtype, layout, device):
    if device.startswith("cuda") and dtype in ("bfloat16", "float16"):
        pytest.skip("flambeau-cuda pools float32 and float64 only")
    for shape in [(2, 3, 8, 8), (4, 9, 7)]:
        a = RNG.standard_normal(shape)
        x, t = pair(a, dtype, device, layout if len(shape) == 4 else "contiguous")
        for size in ADAPTIVE:
            expected = torch._C._nn.adaptive_avg_pool2d(t, size)
            assert_same(fc.adaptive_avg_pool2d(x, size), expected, dtype)
            fg, tg = pair(RNG.standard_normal(tuple(expected.shape)), dtype, device)
            expected_gi = torch.ops.aten._adaptive_avg_pool2d_backward(tg, t)
            assert_same(fc.adaptive_avg_pool2d_backward(fg, list(shape)), expected_gi, dtype)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool_backward_matches_torch(dtype, device):
    if device.startswith("cuda") and dtype in ("bfloat16", "float16"):
        pytest.skip("flambeau-cuda pools float32 and float64 only")
    for shape in [(2, 3, 8, 9), (3, 7, 6)]:
        a = RNG.standard_normal(shape)
        x, t = pair(a, dtype, device)
        for k, s, p, d, ceil in MAX_CASES:
            out, idx = torch.ops.aten.max_pool2d_with_indices(t, k, s, p, d, ceil)
            g = RNG.standard_normal(tuple(out.shape))
            fg, tg = pair(g, dtype, device)
            expected = torch.ops.aten.max_pool2d_with_indices_backward(tg, t, k, s, p, d, ceil, idx)
            fidx = fc.tensor(idx.numpy()).to(device)
            assert_same(fc.max_pool_backward(fg, fidx, list(shape)), expected, dtype)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_out_is_written_in_place_and_resized_as_torch(dtype, device):
    if device.startswith("cuda") and dtype == "bfloat16":
        pytest.skip("flambeau-cuda pools float32 and float64 only")
    x, t = pair(RNG.standard_normal((2, 3, 7, 9)), dtype, device)
    forms = [
        ("avg_pool2d", ([3, 3], [2, 2], [1, 1], True, False, None)),
        ("adaptive_avg_pool2d", ([3, 4],)),
    ]
    for name, args in forms:
        expected = getattr(torch._C._nn, name)(t, *args)
        out = fc.empty(tuple(expected.shape), dtype=getattr(fc, dtype), device=device)
        ptr = out.data_ptr()
        assert getattr(fc, name)(x, *args, out=out) is out
        assert out.data_ptr() == ptr
        assert_same(out, expected, dtype)
        # An empty out is resized silently, a non-empty one of another shape with avg_pool2d's warning
        # (torch's structured kernels warn; its adaptive_avg_pool2d.out resizes silently, flambeau warns
        # for every structured op).
        for size in [(0,), (5,)]:
            with warnings.catch_warnings(record=True) as tw:
                warnings.simplefilter("always")
                getattr(torch._C._nn, name)(t, *args, out=torch.empty(size, dtype=t.dtype))
            out = fc.empty(size, dtype=getattr(fc, dtype), device=device)
            with warnings.catch_warnings(record=True) as fw:
                warnings.simplefilter("always")
                assert getattr(fc, name)(x, *args, out=out) is out
            assert bool(fw) == (size != (0,))
            if name == "avg_pool2d":
                assert bool(tw) == bool(fw)
            assert_same(out, expected, dtype)


@pytest.mark.parametrize("name", ["avg_pool2d", "adaptive_avg_pool2d"])
def test_out_runs_the_out_kernel_without_a_copy(name):
    x = fc.tensor(RNG.standard_normal((2, 3, 8, 8)).astype(np.float32))
    args = ([2, 2], [2, 2], [0, 0]) if name == "avg_pool2d" else ([2, 2],)
    expected = getattr(fc, name)(x, *args)
    out = fc.empty(tuple(expected.shape))
    names = trace(lambda: getattr(fc, name)(x, *args, out=out))
    assert name in names
    assert "copy_" not in names and "empty" not in names
    np.testing.assert_array_equal(npy(out), npy(expected))
    # The functional form: one kernel, its output allocated by the meta step, no copy.
    names = trace(lambda: getattr(fc, name)(x, *args))
    assert names.count(name) == 1 and "copy_" not in names


def test_backward_functional_forms_run_no_copy():
    x = fc.tensor(RNG.standard_normal((2, 3, 8, 8)).astype(np.float32))
    g = fc.ones(2, 3, 4, 4)
    idx = fc.max_pool2d_with_indices(x, [2, 2], [], [0, 0], [1, 1])[1]
    calls = {
        "avg_pool2d_backward": lambda: fc.avg_pool2d_backward(
            g, [2, 3, 8, 8], [2, 2], [2, 2], [0, 0], False, True, None
        ),
        "adaptive_avg_pool2d_backward": lambda: fc.adaptive_avg_pool2d_backward(g, [2, 3, 8, 8]),
        "max_pool_backward": lambda: fc.max_pool_backward(g, idx, [2, 3, 8, 8]),
    }
    for name, call in calls.items():
        names = trace(call)
        assert names.count(name) == 1 and "copy_" not in names, (name, names)


def test_strided_and_aliasing_out():
    a = RNG.standard_normal((1, 2, 6, 6))
    x, t = pair(a, "float64")
    expected = torch._C._nn.avg_pool2d(t, [2, 2])
    # A transposed out: the values land in its elements.
    out = fc.zeros((1, 2, 3, 3), dtype=fc.float64).transpose(-1, -2)
    assert fc.avg_pool2d(x, [2, 2], [], [0, 0], out=out) is out
    assert_same(out, expected, "float64")
    # Every other element of a buffer.
    buf = fc.zeros((1, 2, 3, 6), dtype=fc.float64)
    out = buf[..., ::2]
    fc.adaptive_avg_pool2d(x, [3, 3], out=out)
    assert_same(out, torch._C._nn.adaptive_avg_pool2d(t, [3, 3]), "float64")
    np.testing.assert_array_equal(npy(buf)[..., 1::2], 0)
    # out a view of the input's memory: every value is read before out is written (torch's result on an
    # untouched copy is the oracle).
    y = fc.tensor(a)
    view = y.reshape(-1)[:18].reshape(1, 2, 3, 3)
    assert fc.avg_pool2d(y, [2, 2], [], [0, 0], out=view) is view
    np.testing.assert_allclose(npy(view), npy(expected), rtol=1e-13)
    np.testing.assert_array_equal(npy(y).reshape(-1)[18:], a.reshape(-1)[18:])


def test_out_dtype_and_device_errors():
    x, t = pair(RNG.standard_normal((1, 2, 4, 4)), "float32")
    for name, args in [("avg_pool2d", ([2, 2],)), ("adaptive_avg_pool2d", ([2, 2],))]:
        with pytest.raises(RuntimeError, match="dtype"):
            getattr(torch._C._nn, name)(t, *args, out=torch.empty(0, dtype=torch.float64))
        full = args if name == "adaptive_avg_pool2d" else (*args, [], [0, 0])
        with pytest.raises((TypeError, RuntimeError), match=rf"\[{name}\].*dtype float32, but got float64"):
            getattr(fc, name)(x, *full, out=fc.empty((0,), dtype=fc.float64))
    # An out= on another device: torch and flambeau refuse it.
    with pytest.raises(RuntimeError):
        torch._C._nn.avg_pool2d(t, [2, 2], out=torch.empty(0, device="meta"))
    with pytest.raises(RuntimeError, match=r"\[avg_pool2d\]"):
        fc.avg_pool2d(x, [2, 2], [], [0, 0], out=fc.empty((0,), device="meta"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_meta_device_as_torch(dtype):
    t = torch.empty((2, 3, 7, 9), dtype=getattr(torch, dtype), device="meta")
    x = fc.empty((2, 3, 7, 9), dtype=getattr(fc, dtype), device="meta")
    for k, s, p, ceil, cip, div in AVG_CASES:
        expected = torch._C._nn.avg_pool2d(t, k, s, p, ceil, cip, div)
        got = fc.avg_pool2d(x, k, s, p, ceil, cip, div)
        assert got.is_meta and tuple(got.shape) == tuple(expected.shape)
        out = fc.empty((0,), dtype=getattr(fc, dtype), device="meta")
        assert fc.avg_pool2d(x, k, s, p, ceil, cip, div, out=out) is out
        assert tuple(out.shape) == tuple(expected.shape)
        g = fc.empty(tuple(expected.shape), dtype=getattr(fc, dtype), device="meta")
        gi = fc.avg_pool2d_backward(g, [2, 3, 7, 9], k, s, p, ceil, cip, div)
        assert gi.is_meta and tuple(gi.shape) == (2, 3, 7, 9) and gi.dtype == x.dtype
    for size in ADAPTIVE:
        expected = torch._C._nn.adaptive_avg_pool2d(t, size)
        got = fc.adaptive_avg_pool2d(x, size)
        assert got.is_meta and tuple(got.shape) == tuple(expected.shape) and got.dtype == x.dtype
        gi = fc.adaptive_avg_pool2d_backward(
            fc.empty(tuple(expected.shape), dtype=x.dtype, device="meta"), [2, 3, 7, 9]
        )
        assert gi.is_meta and tuple(gi.shape) == (2, 3, 7, 9)
    idx = fc.empty((2, 3, 3, 4), dtype=fc.int64, device="meta")
    gi = fc.max_pool_backward(fc.empty((2, 3, 3, 4), dtype=x.dtype, device="meta"), idx, [2, 3, 7, 9])
    assert gi.is_meta and tuple(gi.shape) == (2, 3, 7, 9) and gi.dtype == x.dtype


@devices(types=("cpu", "sim", "cuda"))
def test_empty_batch_as_torch(device):
    x, t = pair(np.zeros((0, 3, 6, 6)), "float32", device)
    expected = torch._C._nn.avg_pool2d(t, [2, 2])
    got = fc.avg_pool2d(x, [2, 2], [], [0, 0])
    assert tuple(got.shape) == tuple(expected.shape) == (0, 3, 3, 3)
    assert tuple(fc.adaptive_avg_pool2d(x, [2, 2]).shape) == tuple(torch._C._nn.adaptive_avg_pool2d(t, [2, 2]).shape)
    g = fc.empty((0, 3, 3, 3), device=device)
    tg = torch.empty((0, 3, 3, 3))
    expected = torch.ops.aten.avg_pool2d_backward(tg, t, [2, 2], [2, 2], [0, 0], False, True, None)
    got = fc.avg_pool2d_backward(g, [0, 3, 6, 6], [2, 2], [2, 2], [0, 0], False, True, None)
    assert tuple(got.shape) == tuple(expected.shape)
    got = fc.adaptive_avg_pool2d_backward(g, [0, 3, 6, 6])
    assert tuple(got.shape) == tuple(torch.ops.aten._adaptive_avg_pool2d_backward(tg, t).shape)
    got = fc.max_pool_backward(g, fc.empty((0, 3, 3, 3), dtype=fc.int64, device=device), [0, 3, 6, 6])
    assert tuple(got.shape) == (0, 3, 6, 6)
    out = fc.empty((5,), device=device)
    fc.avg_pool2d(x, [2, 2], [], [0, 0], out=out)
    assert tuple(out.shape) == (0, 3, 3, 3)


def test_errors_as_torch():
    x, t = pair(RNG.standard_normal((1, 2, 4, 4)), "float32")
    xi, ti = fc.ones(1, 1, 4, 4, dtype=fc.int64), torch.ones(1, 1, 4, 4, dtype=torch.int64)
    cases = [
        # (torch call, flambeau call, flambeau's message)
        (
            lambda: torch._C._nn.avg_pool2d(t, [2, 2], [1, 1], [2, 2]),
            lambda: fc.avg_pool2d(x, [2, 2], [1, 1], [2, 2]),
            r"\[avg_pool2d\] pad should be at most half",
        ),
        (
            lambda: torch._C._nn.avg_pool2d(t, [2, 2], [1, 1], [0, 0], False, True, 0),
            lambda: fc.avg_pool2d(x, [2, 2], [1, 1], [0, 0], False, True, 0),
            r"\[avg_pool2d\] divisor_override",
        ),
        (lambda: torch._C._nn.avg_pool2d(t, [9, 9]), lambda: fc.avg_pool2d(x, [9, 9], [], [0, 0]), r"\[avg_pool2d\]"),
        (
            lambda: torch._C._nn.avg_pool2d(torch.ones(1, 1, 1, 4, 4), [2, 2]),
            lambda: fc.avg_pool2d(fc.ones(1, 1, 1, 4, 4), [2, 2], [], [0, 0]),
            r"\[avg_pool2d\] expected a 3-D",
        ),
        (
            lambda: torch._C._nn.adaptive_avg_pool2d(t, [-1, 2]),
            lambda: fc.adaptive_avg_pool2d(x, [-1, 2]),
            r"\[adaptive_avg_pool2d\]",
        ),
        (
            lambda: torch.ops.aten.avg_pool2d_backward(
                torch.ones(1, 2, 3, 3), t, [2, 2], [2, 2], [0, 0], False, True, None
            ),
            lambda: fc.avg_pool2d_backward(
                fc.ones(1, 2, 3, 3), [1, 2, 4, 4], [2, 2], [2, 2], [0, 0], False, True, None
            ),
            r"\[avg_pool2d_backward\] grad_output has shape",
        ),
    ]
    for tcall, fcall, msg in cases:
        with pytest.raises(RuntimeError) as te:
            tcall()
        with pytest.raises(type(te.value), match=msg):
            fcall()
    # An integer input: torch has no adaptive_avg_pool2d kernel for it (NotImplementedError, the same words
    # here); avg_pool2d computes int64 (a sum divided toward zero) and refuses the other integer dtypes.
    with pytest.raises(NotImplementedError, match=r"\"adaptive_avg_pool2d\" not implemented for 'Long'"):
        torch._C._nn.adaptive_avg_pool2d(ti, [2, 2])
    with pytest.raises(
        NotImplementedError, match=r"\[adaptive_avg_pool2d\] \"adaptive_avg_pool2d\" not implemented for 'Long'"
    ):
        fc.adaptive_avg_pool2d(xi, [2, 2])
    ti = torch.arange(-8, 8).reshape(1, 1, 4, 4) * 3
    want = torch._C._nn.avg_pool2d(ti, [2, 2], [1, 1], [1, 1], True, False)
    got = fc.avg_pool2d(fc.tensor(ti.numpy()), [2, 2], [1, 1], [1, 1], True, False)
    assert got.dtype == fc.int64 and got.tolist() == want.tolist()
    with pytest.raises(NotImplementedError, match=r"\"avg_pool2d\" not implemented for 'Int'"):
        torch._C._nn.avg_pool2d(ti.int(), [2, 2])
    with pytest.raises(NotImplementedError, match=r"\[avg_pool2d\] \"avg_pool2d\" not implemented for 'Int'"):
        fc.avg_pool2d(xi.int(), [2, 2], [], [0, 0])
    # max_pool_backward: int64 indices of the grad's shape, inside the plane.
    with pytest.raises(TypeError, match=r"\[max_pool_backward\] indices must be int64"):
        fc.max_pool_backward(fc.ones(1, 1, 1, 1), fc.ones(1, 1, 1, 1), [1, 1, 2, 2])
    with pytest.raises(IndexError, match=r"\[max_pool_backward\] index -3 is out of bounds"):
        fc.max_pool_backward(fc.ones(1, 1, 1, 1), fc.full((1, 1, 1, 1), -3, dtype=fc.int64), [1, 1, 2, 2])
