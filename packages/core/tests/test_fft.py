"""flambeau.fft's transforms against PyTorch 2.13 (torch.fft): fft ... ihfftn
over real, complex and integer inputs, every norm, n/s padding and trimming,
dims in any order, non-contiguous layouts, empty batches, out=, and the error
paths (bad dims, sizes, norms, dtypes)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="FFT: no flambeau-cuda kernel yet")

FFT = fc.fft


def rand(shape, seed=0, kind="float64"):
    rng = np.random.default_rng(seed)
    if kind.startswith("complex"):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    if kind.startswith("int"):
        return rng.integers(-5, 6, size=shape)
    return rng.standard_normal(shape)


FC_DT = {
    "float32": fc.float32,
    "float64": fc.float64,
    "complex64": fc.complex64,
    "complex128": fc.complex128,
    "int64": fc.int64,
}
TH_DT = {
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
    "int64": torch.int64,
}


def pair(a, kind, layout="contiguous"):
    """The same values as a flambeau tensor (in layout) and a torch tensor."""
    sliced = layout == "sliced" and a.ndim >= 1
    if sliced:  # every other element of a buffer twice as long along the last dim
        a = np.concatenate([a, a], -1)
    th = torch.tensor(a).to(TH_DT[kind])
    if kind.startswith("complex"):
        rdt = fc.float32 if kind == "complex64" else fc.float64
        x = fc.complex(
            fc.tensor(np.ascontiguousarray(a.real), dtype=rdt), fc.tensor(np.ascontiguousarray(a.imag), dtype=rdt)
        )
    else:
        x = fc.tensor(np.ascontiguousarray(a), dtype=FC_DT[kind])
    if layout == "transposed" and x.dim() >= 2:
        x = x.transpose(0, -1).contiguous().transpose(0, -1)
    elif sliced:
        x = x[..., ::2]
        th = th[..., ::2]
    return x, th


# Not helpers.assert_same_as_torch: FFT results within a tolerance by precision (single 2e-4), in double.
def close(got, want, kind):
    assert tuple(got.shape) == tuple(want.shape), (tuple(got.shape), tuple(want.shape))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    single = kind in ("float32", "complex64") or want.dtype in (torch.complex64, torch.float32)
    tol = 2e-4 if single else 1e-10
    np.testing.assert_allclose(to_numpy(got, widen=True), want.resolve_conj().numpy(), rtol=tol, atol=tol)


ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_ONLY = {"rfft", "ihfft"}


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("kind", ["float32", "float64", "complex64", "complex128", "int64"])
@pytest.mark.parametrize("shape,dim", [((8,), -1), ((7,), 0), ((3, 5), -1), ((4, 6), 0), ((2, 3, 9), 1), ((1,), 0)])
@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_one_dim(name, kind, shape, dim, norm):
    if name in REAL_ONLY and kind.startswith("complex"):
        x, _ = pair(rand(shape, 1, kind), kind)
        with pytest.raises(TypeError, match=f"fft.{name} expects a real input tensor, but got .*{kind}"):
            getattr(FFT, name)(x, dim=dim, norm=norm)
        return
    if name in ("irfft", "hfft") and shape[dim] == 1:
        n = 3  # the default 2 * (1 - 1) = 0 points is an error (tested separately)
    else:
        n = None
    x, t = pair(rand(shape, 1, kind), kind)
    close(getattr(FFT, name)(x, n=n, dim=dim, norm=norm), getattr(torch.fft, name)(t, n=n, dim=dim, norm=norm), kind)


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("n", [1, 3, 8, 13])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_one_dim_n_and_layouts(name, n, layout):
    kind = "float64" if name in REAL_ONLY else "complex128"
    x, t = pair(rand((5, 6), 2, kind), kind, layout)
    for dim in (0, 1, -1):
        close(getattr(FFT, name)(x, n, dim), getattr(torch.fft, name)(t, n, dim), kind)


MANY = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]


@pytest.mark.parametrize("name", MANY)
@pytest.mark.parametrize("kind", ["float32", "complex128"])
@pytest.mark.parametrize(
    "s,dim",
    [(None, None), (None, (0, 2)), (None, (2, 0)), ((4, 6), (1, 2)), ((3, 5), None), ((-1, 7), (0, 1)), (None, (-1,))],
)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_many_dims(name, kind, s, dim, norm):
    if name.startswith(("rfft", "ihfft")) and kind.startswith("complex"):
        kind = "float64"
    x, t = pair(rand((3, 4, 5), 3, kind), kind, "transposed")
    kw = {"norm": norm}
    if s is not None:
        kw["s"] = s
    if dim is not None:
        kw["dim"] = dim
    if name.endswith("2") and dim is not None and len(dim) != 2:
        kw.pop("dim")
        kw.pop("s", None)
    close(getattr(FFT, name)(x, **kw), getattr(torch.fft, name)(t, **kw), kind)


def test_round_trips_and_large_sizes():
    # prime, power-of-two and composite sizes, through pocketfft's different plans
    for n in (1, 2, 17, 64, 97, 360, 4096):
        a = rand((3, n), n)
        x, t = pair(a, "float64")
        close(FFT.rfft(x), torch.fft.rfft(t), "float64")
        np.testing.assert_allclose(to_numpy(FFT.irfft(FFT.rfft(x), n), widen=True), a, atol=1e-10)
        c, tc = pair(rand((2, n), n, "complex64"), "complex64")
        close(FFT.fft(c), torch.fft.fft(tc), "complex64")
        close(FFT.ifft(FFT.fft(c)), tc, "complex64")


def test_batched_multithreaded_matches_torch():
    fc.set_num_threads(2)
    x, t = pair(rand((64, 256), 4, "complex128"), "complex128")
    close(FFT.fft(x), torch.fft.fft(t), "complex128")
    r, tr = pair(rand((64, 256), 5), "float64")
    close(FFT.rfft(r), torch.fft.rfft(tr), "float64")
    close(FFT.fft2(r.reshape(4, 64, 64)), torch.fft.fft2(tr.reshape(4, 64, 64)), "float64")


@pytest.mark.parametrize("kind", ["float64", "complex64"])
def test_single_multidim_signal_threaded(kind):
    # no batch dims: transformed one axis at a time, each pass split across threads
    fc.set_num_threads(2)
    x, t = pair(rand((192, 160), 6, kind), kind, "transposed")
    for name in ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"):
        if name in ("rfft2", "ihfft2") and kind.startswith("complex"):
            continue
        close(getattr(FFT, name)(x), getattr(torch.fft, name)(t), kind)
    x3, t3 = pair(rand((24, 20, 18), 7, kind), kind)
    close(FFT.fftn(x3, dim=(2, 0, 1)), torch.fft.fftn(t3, dim=(2, 0, 1)), kind)
    close(FFT.irfftn(x3, dim=(1, 2, 0)), torch.fft.irfftn(t3, dim=(1, 2, 0)), kind)
    if not kind.startswith("complex"):
        close(FFT.rfftn(x3, dim=(0, 2, 1)), torch.fft.rfftn(t3, dim=(0, 2, 1)), kind)


def test_empty_batches_and_zero_dims():
    # an empty batch (torch's MKL backend refuses some of these: shapes and dtypes as PyTorch's rules)
    x = fc.zeros(0, 4, dtype=fc.float64)
    for got, shape, dt in [
        (FFT.fft(x), (0, 4), fc.complex128),
        (FFT.rfft(x), (0, 3), fc.complex128),
        (FFT.irfft(x), (0, 6), fc.float64),
        (FFT.fft2(x, s=(2, 4)), (2, 4), fc.complex128),
    ]:
        assert tuple(got.shape) == shape and got.dtype == dt
    y, ty = pair(rand((3, 4)), "float64")
    close(FFT.fftn(y, dim=()), torch.fft.fftn(ty, dim=()), "float64")  # no dim: a complex copy, as PyTorch


def test_out_and_dtypes():
    x, t = pair(rand((4, 6)), "float32")
    out = fc.empty(0, dtype=fc.complex64)
    r = FFT.fft(x, out=out)
    assert r is out
    close(out, torch.fft.fft(t), "float32")
    out = fc.empty(0, dtype=fc.float32)
    FFT.irfft(FFT.rfft(x), 6, out=out)
    np.testing.assert_allclose(to_numpy(out, widen=True), t.numpy(), atol=1e-5)
    with pytest.raises(TypeError, match=r"fft\.fft.*complex64.*float32"):
        FFT.fft(x, out=fc.empty(0, dtype=fc.float32))
    b, tb = pair(rand((5,), 0, "int64"), "int64")
    close(FFT.rfft(b), torch.fft.rfft(tb), "float32")
    assert FFT.fft(fc.tensor([True, False])).dtype == fc.complex64
    assert FFT.fft(fc.tensor([1.0, 2.0], dtype=fc.float64)).dtype == fc.complex128
    assert FFT.irfft(fc.tensor([1.0, 2.0, 3.0], dtype=fc.float64)).dtype == fc.float64


def test_errors():
    x = fc.ones(3, 4)
    with pytest.raises(IndexError, match=r"fft.fft: Dimension out of range .*got 2.*\(3, 4\)"):
        FFT.fft(x, dim=2)
    with pytest.raises(IndexError, match=r"fft.rfft: Dimension out of range"):
        FFT.rfft(fc.tensor(1.0))
    with pytest.raises(fc.FlambeauError, match=r"fft.fft: Invalid number of data points \(0\)"):
        FFT.fft(x, n=0)
    with pytest.raises(fc.FlambeauError, match=r"fft.irfft: Invalid number of data points \(0\)"):
        FFT.irfft(fc.ones(3, 1))
    with pytest.raises(fc.FlambeauError, match="fft.fftn: FFT dims must be unique"):
        FFT.fftn(x, dim=(0, -2))
    with pytest.raises(
        fc.FlambeauError, match="fft.fftn: When given, dim and shape arguments must have the same length"
    ):
        FFT.fftn(x, s=(2,), dim=(0, 1))
    with pytest.raises(fc.FlambeauError, match="fft.rfftn: Got shape with 3 values but input tensor only has 2"):
        FFT.rfftn(x, s=(2, 3, 4))
    with pytest.raises(fc.FlambeauError, match="fft.fft2: Invalid number of data points"):
        FFT.fft2(x, s=(0, 4))
    with pytest.raises(fc.FlambeauError, match='fft.ifft: Invalid normalization mode: "bad"'):
        FFT.ifft(x, norm="bad")
    with pytest.raises(TypeError, match="fft.rfft expects a real input tensor, but got .*complex64"):
        FFT.rfft(x.to(fc.complex64))
    with pytest.raises(TypeError, match="fft.fft: Unsupported dtype .*float16"):
        FFT.fft(x.to(fc.float16))
    with pytest.raises(TypeError, match="fft.fft: n must be an int"):
        FFT.fft(x, n=2.5)
    with pytest.raises(TypeError, match="fft.fft: expected a Tensor"):
        FFT.fft([1.0, 2.0])
    # the primitives check their own arguments
    with pytest.raises(TypeError, match=r"\[_fft_c2c\] expected a complex64 or complex128 tensor, got float32"):
        fc._C._fft_c2c(x, [0], 0, True)
    with pytest.raises(fc.FlambeauError, match=r"\[_fft_r2c\] expected at least one dim"):
        fc._C._fft_r2c(x, [], 0, True)
    with pytest.raises(fc.FlambeauError, match=r"\[_fft_c2r\] expected the last transformed dim"):
        fc._C._fft_c2r(x.to(fc.complex64), [1], 0, 4)
    with pytest.raises(fc.FlambeauError, match=r"\[_fft_c2c\] normalization must be"):
        fc._C._fft_c2c(x.to(fc.complex64), [1], 5, True)
    with pytest.raises(IndexError, match=r"\[_fft_c2c\] Dimension out of range"):
        fc._C._fft_c2c(x.to(fc.complex64), [3], 0, True)
