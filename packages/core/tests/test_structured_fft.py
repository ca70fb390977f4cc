"""Note [Structured kernels] for the FFT primitives (src/cpu/fft/fft.cpp; their checks and shapes in
src/meta/fft_rules.cpp): _fft_c2c, _fft_r2c, _fft_c2r and _stft_r2c run their meta step and one out
kernel in the functional and out= forms on the cpu and the simulated device, and the meta step alone on
the meta device. The public transforms (flambeau.fft, Python composites) hand out= to the primitive
when it is their last step. Values against PyTorch 2.13 (torch.fft and torch's own primitives), out=
written by the kernel with no copy, strided and aliasing out, resizing, dtype errors, empty inputs and
the errors with torch's exception types."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from flambeau_core import fft as F
from flambeau_core.testing import devices, kernel_trace

RNG = np.random.default_rng(5)
NORMS = [None, "backward", "ortho", "forward"]


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return np.array(memoryview(t.cpu().contiguous()))


def sample(shape, dtype: str) -> np.ndarray:
    if dtype.startswith("complex"):
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def pair(a: np.ndarray, device: str = "cpu"):
    return fc.tensor(a).to(device), torch.from_numpy(np.array(a))


def assert_close(got, expected, single: bool | None = None) -> None:
    """Values within the rounding of the precision computed in (single: float32/complex64)."""
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(expected.shape)
    if single is None:
        single = expected.dtype in (torch.float32, torch.complex64)
    tol = {"rtol": 2e-5, "atol": 2e-5} if single else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(npy(got), npy(expected), **tol)


# (transform, input dtypes, n or s, dim): the public 1-D and n-D transforms.
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
REAL_ONLY = {"rfft", "ihfft", "rfftn", "ihfftn", "rfft2", "ihfft2"}


def input_dtypes(name: str) -> list[str]:
    return ["float32", "float64"] if name in REAL_ONLY else ["float32", "float64", "complex64", "complex128"]


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("name", ONE_D)
def test_one_dim_transforms_match_torch(name, device):
    for dtype in input_dtypes(name):
        for shape, dim in (((8,), -1), ((7,), 0), ((3, 10), 1), ((6, 5), 0), ((2, 3, 9), 1)):
            x, t = pair(sample(shape, dtype), device)
            for n in (None, 1, 4, 13):
                for norm in NORMS:
                    expected = getattr(torch.fft, name)(t, n=n, dim=dim, norm=norm)
                    got = getattr(F, name)(x, n=n, dim=dim, norm=norm)
                    assert got.device.type == device
                    assert_close(got, expected)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("name", N_D)
def test_n_dim_transforms_match_torch(name, device):
    two = name.endswith("2")
    for dtype in input_dtypes(name):
        x, t = pair(sample((4, 6, 5), dtype), device)
        cases = [(None, None), ([3, 8], None), ([-1, 4], (0, 2)), (None, (2, 0))]
        if not two:
            cases += [([7], (1,)), ([2, 3, 4], None), (None, (0, 1, 2))]
        for s, dim in cases:
            for norm in NORMS:
                kw = {"s": s, "norm": norm}
                if dim is not None:
                    kw["dim"] = dim
                assert_close(getattr(F, name)(x, **kw), getattr(torch.fft, name)(t, **kw))


# The primitives' normalization code of an inverse transform -> torch.fft's norm=.
C2R_NORM = {0: "forward", 1: "ortho", 2: "backward"}
C2C_NORM = {True: {0: "backward", 1: "ortho", 2: "forward"}, False: C2R_NORM}


@devices(types=("cpu", "sim"))
def test_primitives_match_torch(device):
    """The primitives themselves against torch's (normalization 0, 1, 2; several dims, strided input)."""
    for dtype in ("complex64", "complex128"):
        a = sample((5, 6, 7), dtype)
        x, t = pair(a, device)
        xt, tt = x.transpose(0, 2), t.transpose(0, 2)
        for dim in ([0], [-1], [0, 2], [2, 0, 1], [1, 2]):
            for norm in (0, 1, 2):
                for fw in (True, False):
                    # torch's _fft_c2c asserts on some dim orders: its public fftn/ifftn compute the same
                    f = torch.fft.fftn if fw else torch.fft.ifftn
                    nm = C2C_NORM[fw][norm]
                    assert_close(_C._fft_c2c(x, dim, norm, fw), f(t, dim=dim, norm=nm))
                    assert_close(_C._fft_c2c(xt, dim, norm, fw), f(tt, dim=dim, norm=nm))
                for ld in (2 * (a.shape[dim[-1]] - 1), 2 * (a.shape[dim[-1]] - 1) + 1):
                    # torch's _fft_c2r asserts on some of these dims: its public irfftn computes the same
                    s = [a.shape[d] for d in dim[:-1]] + [ld]
                    expected = torch.fft.irfftn(t, s=s, dim=dim, norm=C2R_NORM[norm])
                    assert_close(_C._fft_c2r(x, dim, norm, ld), expected)
    for dtype in ("float32", "float64"):
        x, t = pair(sample((5, 6, 7), dtype), device)
        for dim in ([0], [-1], [0, 2], [2, 0, 1]):
            for norm in (0, 1, 2):
                for onesided in (True, False):
                    # torch's _fft_r2c asserts on some dim orders: its public rfftn/fftn compute the same
                    f = torch.fft.rfftn if onesided else torch.fft.fftn
                    nm = C2C_NORM[True][norm]
                    assert_close(_C._fft_r2c(x, dim, norm, onesided), f(t, dim=dim, norm=nm))
                    assert_close(_C._fft_r2c(x[:, ::2], dim, norm, onesided), f(t[:, ::2], dim=dim, norm=nm))


@devices(types=("cpu", "sim"))
def test_stft_kernel_matches_torch(device):
    for dtype in ("float32", "float64"):
        x, t = pair(sample((3, 40), dtype), device)
        w, tw = pair(sample((8,), dtype), device)
        for hop, pad, mode, normalized in (
            (1, 0, "constant", False),
            (3, 4, "reflect", True),
            (2, 4, "replicate", False),
            (5, 3, "circular", True),
        ):
            got = _C._stft_r2c(x, w, 8, hop, pad, mode, normalized)
            padded = torch.nn.functional.pad(t.unsqueeze(1), (pad, pad), mode=mode).squeeze(1) if pad else t
            expected = torch.stft(padded, 8, hop, window=tw, center=False, normalized=normalized, return_complex=True)
            assert got.device.type == device
            assert_close(got, expected.transpose(-1, -2))


@devices(types=("cpu", "sim"))
def test_primitive_out_forms(device):
    """out= of the result's dtype is written in place (resized silently when empty, with torch's warning
    when it had elements); another dtype the result casts to gets it copied in."""
    x, t = pair(sample((4, 6), "complex128"), device)
    expected = torch._fft_c2c(t, [1], 1, True)
    out = fc.empty((4, 6), dtype=fc.complex128, device=device)
    ptr = out.data_ptr()
    assert _C._fft_c2c(x, [1], 1, True, out=out) is out
    assert out.data_ptr() == ptr
    assert_close(out, expected)
    out = fc.empty((0,), dtype=fc.complex128, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _C._fft_c2c(x, [1], 1, True, out=out)
    assert_close(out, expected)
    out = fc.empty((2, 2), dtype=fc.complex128, device=device)
    with pytest.warns(UserWarning, match="was resized"):
        _C._fft_c2c(x, [1], 1, True, out=out)
    assert_close(out, expected)
    r, tr = pair(sample((4, 6), "float32"), device)
    out = fc.empty((4, 4), dtype=fc.complex64, device=device)
    _C._fft_r2c(r, [1], 0, True, out=out)
    assert_close(out, torch._fft_r2c(tr, [1], 0, True))
    out = fc.empty((4, 10), dtype=fc.float64, device=device)
    _C._fft_c2r(x, [1], 2, 10, out=out)
    assert_close(out, torch._fft_c2r(t, [1], 2, 10))
    # complex64 result into a complex128 out: computed, then cast in (torch's out= copy).
    out = fc.empty((4, 4), dtype=fc.complex128, device=device)
    _C._fft_r2c(r, [1], 0, True, out=out)
    assert_close(out, torch._fft_r2c(tr, [1], 0, True).to(torch.complex128), single=True)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("name", ONE_D + N_D)
def test_public_out_forms_match_torch(name, device):
    dtype = "float64" if name in REAL_ONLY else "complex128"
    x, t = pair(sample((4, 6), dtype), device)
    expected = getattr(torch.fft, name)(t)
    out_dtype = getattr(fc, str(expected.dtype).split(".")[-1])
    for shape in (tuple(expected.shape), (0,)):
        out = fc.empty(shape, dtype=out_dtype, device=device)
        assert getattr(F, name)(x, out=out) is out
        assert_close(out, expected)
    out = fc.empty((3,), dtype=out_dtype, device=device)
    with pytest.warns(UserWarning, match=rf"\[fft\.{name}\] An output with one or more elements was resized"):
        getattr(F, name)(x, out=out)
    assert_close(out, expected)


# The public transforms whose last step is a primitive, and that primitive: out= reaches its out kernel.
LAST_STEP = {
    "fft": ("complex128", "_fft_c2c"),
    "ifft": ("complex128", "_fft_c2c"),
    "fftn": ("complex128", "_fft_c2c"),
    "fft2": ("complex128", "_fft_c2c"),
    "ifftn": ("float64", "_fft_c2c"),
    "rfft": ("float64", "_fft_r2c"),
    "rfftn": ("float64", "_fft_r2c"),
    "rfft2": ("float64", "_fft_r2c"),
    "irfft": ("complex128", "_fft_c2r"),
    "irfftn": ("complex128", "_fft_c2r"),
    "hfft": ("complex128", "_fft_c2r"),
    "hfft2": ("complex128", "_fft_c2r"),
    "ihfft2": ("float64", "_fft_c2c"),
}


@pytest.mark.parametrize("name", list(LAST_STEP))
def test_public_out_is_written_by_the_out_kernel(name):
    dtype, prim = LAST_STEP[name]
    x = fc.tensor(sample((4, 6), dtype))
    expected = getattr(F, name)(x)
    out = fc.empty(tuple(expected.shape), dtype=expected.dtype)
    ptr = out.data_ptr()
    with kernel_trace() as rows:
        getattr(F, name)(x, out=out)
    names = [r[0] for r in rows]
    assert prim in names, rows
    assert "copy_" not in names[names.index(prim) :], rows  # nothing copied in after the primitive
    assert out.data_ptr() == ptr
    np.testing.assert_array_equal(npy(out), npy(expected))


def test_functional_form_runs_one_kernel():
    x = fc.tensor(sample((4, 6), "complex128"))
    r = fc.tensor(sample((4, 6), "float64"))
    w = fc.tensor(sample((4,), "float64"))
    calls = [
        ("_fft_c2c", lambda: _C._fft_c2c(x, [0, 1], 0, True)),
        ("_fft_r2c", lambda: _C._fft_r2c(r, [1], 0, True)),
        ("_fft_c2r", lambda: _C._fft_c2r(x, [1], 0, 10)),
        ("_stft_r2c", lambda: _C._stft_r2c(r, w, 4, 1, 0, "constant", False)),
    ]
    for name, fn in calls:
        with kernel_trace() as rows:
            fn()
        assert rows == [[name, "cpu", "own"]], (name, rows)


def test_strided_and_aliasing_out():
    a = sample((6, 8), "complex128")
    x, t = pair(a)
    expected = torch._fft_c2c(t, [1], 0, True)
    out = fc.empty((8, 6), dtype=fc.complex128).t()  # a transposed out: the values land in its elements
    _C._fft_c2c(x, [1], 0, True, out=out)
    assert_close(out, expected)
    y = fc.tensor(a)
    _C._fft_c2c(y, [0, 1], 2, False, out=y)  # out is the input: read before it is written
    assert_close(y, torch._fft_c2c(t, [0, 1], 2, False))
    r = fc.tensor(sample((6, 8), "float64"))
    out = fc.empty((6, 8), dtype=fc.complex128)
    o = out.view_as_real() if hasattr(out, "view_as_real") else _C.view_as_real(out)
    o.copy_(fc.stack([r, r], -1))
    _C._fft_r2c(_C.select(o, -1, 0), [1], 0, False, out=out)  # out shares memory with the input
    assert_close(out, torch._fft_r2c(torch.from_numpy(npy(r)), [1], 0, False))


def test_meta_device_gives_shapes_and_dtypes():
    """The meta step alone: the output's shape and dtype, and the same errors, with no data."""
    cases = [
        (
            lambda d: _C._fft_c2c(fc.empty(3, 4, 5, dtype=fc.complex64, device=d), [0, 2], 1, True),
            ((3, 4, 5), "complex64"),
        ),
        (lambda d: _C._fft_r2c(fc.empty(3, 10, dtype=fc.float64, device=d), [0, 1], 0, True), ((3, 6), "complex128")),
        (lambda d: _C._fft_r2c(fc.empty(3, 10, dtype=fc.float32, device=d), [0], 0, False), ((3, 10), "complex64")),
        (lambda d: _C._fft_c2r(fc.empty(3, 6, dtype=fc.complex128, device=d), [1], 2, 11), ((3, 11), "float64")),
        (
            lambda d: _C._stft_r2c(fc.empty(2, 50, device=d), fc.empty(16, device=d), 16, 4, 8, "reflect", True),
            ((2, 13, 9), "complex64"),
        ),
        (lambda d: F.rfft(fc.empty(4, 9, device=d), n=12), ((4, 7), "complex64")),
        (lambda d: F.irfftn(fc.empty(4, 9, dtype=fc.complex128, device=d), s=[5, 6]), ((5, 6), "float64")),
    ]
    for fn, (shape, dtype) in cases:
        m = fn("meta")
        c = fn("cpu")
        assert m.is_meta and tuple(m.shape) == shape == tuple(c.shape)
        assert str(m.dtype) == f"flambeau.{dtype}" == str(c.dtype)
    with pytest.raises(TypeError, match=r"\[_fft_c2c\] expected a complex64 or complex128 tensor, got float32"):
        _C._fft_c2c(fc.empty(4, device="meta"), [0], 0, True)
    with pytest.raises(IndexError, match=r"\[_fft_r2c\] Dimension out of range"):
        _C._fft_r2c(fc.empty(4, device="meta"), [1], 0, True)
    t = torch.empty(3, 6, dtype=torch.complex128, device="meta")
    assert tuple(torch._fft_c2r(t, [1], 2, 11).shape) == tuple(
        _C._fft_c2r(fc.empty(3, 6, dtype=fc.complex128, device="meta"), [1], 2, 11).shape
    )


@devices(types=("cpu", "sim"))
def test_empty_inputs(device):
    """torch's primitives refuse empty inputs (a reshape error); its public transforms pad or trim them."""
    for shape, dim, half in (
        ((0,), [0], (1,)),
        ((3, 0), [0], (2, 0)),
        ((0, 4), [1], (0, 3)),
        ((2, 0, 3), [0, 2], (2, 0, 2)),
    ):
        x = fc.tensor(sample(shape, "complex64")).to(device)
        got = _C._fft_c2c(x, dim, 0, True)
        assert tuple(got.shape) == shape and got.dtype == fc.complex64 and got.device.type == device
        r = fc.tensor(sample(shape, "float64")).to(device)
        got = _C._fft_r2c(r, dim, 0, True)
        assert tuple(got.shape) == half and got.dtype == fc.complex128
        # A signal of no points: its one bin sums nothing.
        np.testing.assert_array_equal(npy(got), np.zeros(half, np.complex128))
    got = _C._fft_r2c(fc.empty((3, 0), dtype=fc.float32, device=device), [1], 1, True)
    np.testing.assert_array_equal(npy(got), np.zeros((3, 1), np.complex64))
    x, t = pair(sample((0, 5), "complex128"), device)
    assert tuple(_C._fft_c2r(x, [1], 0, 8).shape) == (0, 8)
    assert_close(F.fft(x, dim=0, n=3), torch.fft.fft(t, dim=0, n=3))
    assert_close(F.rfft(x.real, dim=0, n=4), torch.fft.rfft(t.real, dim=0, n=4))
    # Without n, a 1-D transform over an empty dim raises PyTorch's error.
    for name in ("fft", "rfft", "ihfft"):
        with pytest.raises(RuntimeError, match="Invalid number of data points"):
            getattr(torch.fft, name)(torch.empty(0, dtype=torch.float64))
        with pytest.raises(RuntimeError, match=rf"fft\.{name}: Invalid number of data points \(0\) specified"):
            getattr(F, name)(fc.empty(0, dtype=fc.float64, device=device))
    sig, w = fc.empty((0, 20), device=device), fc.ones(4, device=device)
    assert tuple(_C._stft_r2c(sig, w, 4, 2, 0, "constant", False).shape) == (0, 9, 3)


def test_errors_match_torch_types():
    c = fc.tensor(sample((4, 6), "complex64"))
    r = fc.tensor(sample((4, 6), "float32"))
    tc = torch.from_numpy(npy(c))
    with pytest.raises(
        TypeError, match=r"\[_fft_r2c\] expected a float32 or float64 tensor, got complex64 \(shape \(4, 6\)\)"
    ):
        _C._fft_r2c(c, [1], 0, True)
    with pytest.raises(TypeError, match=r"\[_fft_c2r\] expected a complex64 or complex128 tensor, got float32"):
        _C._fft_c2r(r, [1], 0, 10)
    with pytest.raises(TypeError, match=r"\[_fft_c2c\] expected a complex64 or complex128 tensor, got int64"):
        _C._fft_c2c(fc.tensor([1, 2]), [0], 0, True)
    # torch raises IndexError for a dim out of range, RuntimeError for a repeated one.
    with pytest.raises(IndexError):
        torch.fft.fft(tc, dim=2)
    with pytest.raises(
        IndexError, match=r"\[_fft_c2c\] Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"
    ):
        _C._fft_c2c(c, [2], 0, True)
    with pytest.raises(RuntimeError):
        torch.fft.fftn(tc, dim=[1, -1])
    with pytest.raises(RuntimeError, match=r"\[_fft_c2c\] dim -1 appears more than once in dim"):
        _C._fft_c2c(c, [1, -1], 0, True)
    with pytest.raises(RuntimeError, match=r"\[_fft_c2c\] expected at least one dim to transform"):
        _C._fft_c2c(c, [], 0, True)
    with pytest.raises(RuntimeError, match=r"\[_fft_c2r\] Invalid number of data points \(0\) specified"):
        _C._fft_c2r(c, [1], 0, 0)
    with pytest.raises(
        RuntimeError,
        match=r"\[_fft_c2r\] expected the last transformed dim \(1\) of size last_dim_size / 2 \+ 1 = 4, got 6",
    ):
        _C._fft_c2r(c, [1], 0, 6)
    # normalization is checked by the meta step, on empty inputs too.
    for x in (c, fc.empty((0, 3), dtype=fc.complex64)):
        with pytest.raises(
            RuntimeError,
            match=r"\[_fft_c2c\] normalization must be 0 \(none\), 1 \(by sqrt\(n\)\) or 2 \(by n\), got 3",
        ):
            _C._fft_c2c(x, [1], 3, True)
    with pytest.raises(RuntimeError, match=r"\[_fft_r2c\] normalization must be"):
        _C._fft_r2c(r, [1], -1, False)
    # out= of a dtype the result does not cast to (torch: RuntimeError from its copy; ours: TypeError as
    # every out= of the table).
    with pytest.raises(TypeError, match=r"\[fft\.irfft\] expects a floating point out tensor \(the result is "):
        F.irfft(c, out=fc.empty(0, dtype=fc.complex64))
    with pytest.raises(RuntimeError):
        torch.fft.fft(tc, out=torch.empty(0))
    with pytest.raises(TypeError):
        F.fft(c, out=fc.empty(0, dtype=fc.float32))
    with pytest.raises(TypeError):
        _C._fft_c2c(c, [1], 0, True, out=fc.empty(0, dtype=fc.float32))


def test_stft_errors():
    x, w = fc.tensor(sample((2, 10), "float64")), fc.tensor(sample((4,), "float64"))
    with pytest.raises(
        TypeError,
        match=r"\[stft\] expected a float32 or float64 signal and window of its dtype, got float64 and float32",
    ):
        _C._stft_r2c(x, w.to(fc.float32), 4, 1, 0, "constant", False)
    with pytest.raises(RuntimeError, match=r"\[stft\] Unrecognised padding mode zeros"):
        _C._stft_r2c(x, w, 4, 1, 0, "zeros", False)
    with pytest.raises(RuntimeError, match=r"\[stft\] expected a \(B, L\) signal and a window of n_fft values"):
        _C._stft_r2c(x, w, 5, 1, 0, "constant", False)
    with pytest.raises(RuntimeError, match=r"\[stft\] expected 0 < n_fft < 10, but got n_fft=12"):
        _C._stft_r2c(x, fc.ones(12, dtype=fc.float64), 12, 1, 0, "constant", False)
    with pytest.raises(RuntimeError, match=r"\[stft\] reflect padding of 10 needs a signal longer than 10 samples"):
        _C._stft_r2c(x, w, 4, 1, 10, "reflect", False)
    with pytest.raises(RuntimeError, match=r"\[stft\] circular padding of 11 needs a signal of at least 11 samples"):
        _C._stft_r2c(x, w, 4, 1, 11, "circular", False)
    with pytest.raises(RuntimeError, match=r"\[stft\] padding of 4611686018427387904 samples is too long"):
        _C._stft_r2c(x, w, 4, 1, 2**62, "constant", False)
    # Replicating the ends of an empty signal: refused (torch's pad refuses it too), on meta as well.
    with pytest.raises(RuntimeError):
        torch.nn.functional.pad(torch.empty(2, 1, 0), (2, 2), mode="replicate")
    for d in ("cpu", "meta"):
        with pytest.raises(RuntimeError, match=r"\[stft\] replicate padding of 2 needs a non-empty signal"):
            _C._stft_r2c(
                fc.empty((2, 0), dtype=fc.float64, device=d),
                fc.ones(4, dtype=fc.float64, device=d),
                4,
                1,
                2,
                "replicate",
                False,
            )


def test_table_rules():
    """The table's rules for the primitives: structured, with their dtype and shape rules."""
    codegen = Path(__file__).resolve().parents[1] / "codegen"
    name = "flambeau_core_codegen_model_fft"
    spec = importlib.util.spec_from_file_location(name, codegen / "model.py")
    model = importlib.util.module_from_spec(spec)
    sys.modules[name] = model
    try:
        spec.loader.exec_module(model)
        ops = {op.name: op for op in model.load_ops(codegen / "ops.yaml")}
    finally:
        del sys.modules[name]
    rules = {
        "_fft_c2c": ("same", "same"),
        "_fft_r2c": ("complex", "fft_r2c"),
        "_fft_c2r": ("real", "fft_c2r"),
        "_stft_r2c": ("complex", "stft"),
    }
    for name, (dtype, shape) in rules.items():
        op = ops[name]
        assert op.structured and op.dtype[0].name == dtype and op.shape.name == shape, name
