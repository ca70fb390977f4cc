"""Gradients of flambeau.fft's transforms against PyTorch 2.13 and finite
differences (gradcheck, float64). Complex inputs are built from two real
tensors with complex(re, im) and complex outputs read through view_as_real,
so both libraries' conjugate-Wirtinger gradients are compared as the
gradients of real functions of real inputs, and gradcheck sees real ones."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices(not_on_cuda="FFT: no flambeau-cuda kernel yet")


def realify(y, lib):
    if lib is torch:
        return torch.view_as_real(y.resolve_conj()) if y.is_complex() else y
    return fc.view_as_real(y) if y.dtype in (fc.complex64, fc.complex128) else y


def run(lib, name, parts, kw, cplx):
    x = lib.complex(parts[0], parts[1]) if cplx else parts[0]
    return realify(getattr(lib.fft, name)(x, **kw), lib)


def check(name, shape, kw, cplx, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape) for _ in range(2 if cplx else 1)]
    fb_in = [fb_tensor(a, requires_grad=True) for a in arrays]
    th_in = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    fo, to = run(fc, name, fb_in, kw, cplx), run(torch, name, th_in, kw, cplx)
    np.testing.assert_allclose(to_np(fo), to.detach().numpy(), rtol=1e-9, atol=1e-9)
    w = rng.standard_normal(tuple(to.shape))
    (fo * fb_tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for i, (a, b) in enumerate(zip(fb_in, th_in, strict=True)):
        assert a.grad is not None, f"{name}: input {i} got no gradient"
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-9, err_msg=f"{name} input {i}")
    fresh = [fb_tensor(a, requires_grad=True) for a in arrays]
    assert ag.gradcheck(lambda *p: run(fc, name, list(p), kw, cplx), fresh)


C2C = ["fft", "ifft"]
REAL_IN = ["rfft", "ihfft"]
HALF_IN = ["irfft", "hfft"]


@pytest.mark.parametrize("name", C2C + REAL_IN + HALF_IN)
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("n", [None, 4, 7, 12])
def test_one_dim(name, norm, n):
    cplx = name not in REAL_IN
    check(name, (3, 6), {"n": n, "dim": -1, "norm": norm}, cplx)
    check(name, (5, 2), {"n": n, "dim": 0, "norm": norm}, cplx, seed=1)


def test_fft_of_real_input():
    check("fft", (4, 5), {}, False)
    check("ifft", (4, 5), {"n": 8}, False)


NDIM = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]


@pytest.mark.parametrize("name", NDIM)
@pytest.mark.parametrize("s,dim", [(None, None), ((4, 5), (0, 2)), ((3, 6), (-1, 0)), (None, (1, 2))])
@pytest.mark.parametrize("norm", ["backward", "ortho"])
def test_many_dims(name, s, dim, norm):
    cplx = not name.startswith(("rfft", "ihfft"))
    kw = {"norm": norm}
    if s is not None:
        kw["s"] = s
    if dim is not None:
        kw["dim"] = dim
    check(name, (3, 4, 5), kw, cplx)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "rfftn", "irfftn", "hfftn"])
def test_non_contiguous_inputs(name):
    # a transposed view and a strided slice: the kernels read the strides as they are
    rng = np.random.default_rng(9)
    a = rng.standard_normal((6, 5))
    b = rng.standard_normal((5, 12))
    cplx = name not in ("rfft", "rfftn")
    for arr, view in ((a, lambda t: t.transpose(0, 1)), (b, lambda t: t[:, ::2])):
        fb_in = [fb_tensor(arr, requires_grad=True) for _ in range(2 if cplx else 1)]
        th_in = [torch.tensor(arr, requires_grad=True) for _ in range(2 if cplx else 1)]
        fo = run(fc, name, [view(t) for t in fb_in], {}, cplx)
        to = run(torch, name, [view(t) for t in th_in], {}, cplx)
        np.testing.assert_allclose(to_np(fo), to.detach().numpy(), rtol=1e-9, atol=1e-9)
        w = rng.standard_normal(tuple(to.shape))
        (fo * fb_tensor(w)).sum().backward()
        (to * torch.tensor(w)).sum().backward()
        for x, t in zip(fb_in, th_in, strict=True):
            np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_second_order():
    x = fb_tensor(np.random.default_rng(3).standard_normal((2, 6)), requires_grad=True)
    assert ag.gradgradcheck(lambda t: fc.fft.irfft(fc.fft.rfft(t) * fc.fft.rfft(t)), [x])
