"""Scatter gradients against PyTorch 2.13: scatter with reduce= has no
derivative (PyTorch's backward raises; so does flambeau's), scatter_reduce(prod)'s gradient with
zeros among self and src (PyTorch's masked formula, not a division by zero), and gradcheck in float64."""

from __future__ import annotations

import warnings

import flambeau_autograd as fa
import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import to_host
from nn_testing import assert_close, from_torch

pytestmark = pytest.mark.on_devices

IDX = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 1], [2, 0, 1, 2]])


def pair(a: np.ndarray):
    return fc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("form", ["src", "value"])
def test_scatter_with_reduce_has_no_derivative_as_in_torch(reduce, form):
    rng = np.random.default_rng(0)
    xf, xt = pair(rng.standard_normal((3, 4)))
    sf, st = pair(rng.standard_normal((3, 4)))
    idx_f = from_torch(IDX)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of scatter(reduce=) with a tensor src
        yt = xt.scatter(0, IDX, st if form == "src" else 2.0, reduce=reduce)
    yf = xf.scatter(0, idx_f, sf if form == "src" else 2.0, reduce=reduce)
    assert_close(yf, yt.detach())  # the forward works in both
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        yt.sum().backward()
    with pytest.raises(RuntimeError, match=rf"\[scatter\] derivative for scatter with reduce='{reduce}'"):
        yf.sum().backward()


def test_scatter_without_reduce_keeps_its_derivative():
    rng = np.random.default_rng(1)
    xf, xt = pair(rng.standard_normal((3, 4)))
    sf, st = pair(rng.standard_normal((3, 4)))
    perm = torch.tensor(np.argsort(rng.random((3, 4)), axis=0))
    xt.scatter(0, perm, st).pow(2).sum().backward()
    xf.scatter(0, from_torch(perm), sf).pow(2).sum().backward()
    assert_close(xf.grad, xt.grad)
    assert_close(sf.grad, st.grad)


PROD_CASES = {
    "no_zero": (np.arange(1.0, 13.0).reshape(3, 4) / 4, np.arange(2.0, 14.0).reshape(3, 4) / 5),
    "zero_in_self": (np.array([[0.0, 1.5, 2.0, 0.5], [1.0, 0.0, 3.0, 2.0], [0.5, 1.0, 0.0, 1.5]]), None),
    "one_zero_in_src": (None, np.array([[0.0, 1.5, 2.0, 0.5], [1.0, 2.5, 3.0, 2.0], [0.5, 1.0, 1.5, 1.5]])),
    "two_zeros_one_place": (None, np.array([[0.0, 1.5, 2.0, 0.5], [1.0, 2.5, 3.0, 2.0], [0.0, 1.0, 1.5, 1.5]])),
    "zeros_everywhere": (
        np.array([[0.0, 1.5, 0.0, 0.5], [1.0, 0.0, 3.0, 2.0], [0.5, 1.0, 0.0, 1.5]]),
        np.array([[0.0, 1.5, 2.0, 0.0], [1.0, 2.5, 0.0, 2.0], [0.0, 1.0, 1.5, 1.5]]),
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_reduce_prod_gradient_with_zeros_matches_torch(case, include_self, dtype):
    rng = np.random.default_rng(2)
    s, src = PROD_CASES[case]
    s = rng.uniform(0.5, 2.0, (3, 4)) if s is None else s
    src = rng.uniform(0.5, 2.0, (3, 4)) if src is None else src
    xf, xt = pair(s.astype(dtype))
    sf, st = pair(src.astype(dtype))
    w = rng.standard_normal((3, 4)).astype(dtype)
    yt = xt.scatter_reduce(0, IDX, st, "prod", include_self=include_self)
    yf = xf.scatter_reduce(0, from_torch(IDX), sf, "prod", include_self=include_self)
    assert_close(yf, yt.detach())
    (yt * torch.tensor(w)).sum().backward()
    (yf * fc.tensor(w)).sum().backward()
    assert (
        np.isfinite(np.array(memoryview(to_host(xf.grad)))).all()
        and np.isfinite(np.array(memoryview(to_host(sf.grad)))).all()
    )
    assert_close(xf.grad, xt.grad, rtol=1e-5, atol=1e-6)
    assert_close(sf.grad, st.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["no_zero", "zero_in_self", "one_zero_in_src"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_gradcheck_float64(case, include_self):
    rng = np.random.default_rng(3)
    s, src = PROD_CASES[case]
    s = rng.uniform(0.5, 2.0, (3, 4)) if s is None else s
    src = rng.uniform(0.5, 2.0, (3, 4)) if src is None else src
    x = fc.tensor(s, requires_grad=True)
    y = fc.tensor(src, requires_grad=True)
    idx = from_torch(IDX)
    assert fa.gradcheck(lambda a, b: a.scatter_reduce(0, idx, b, "prod", include_self=include_self), (x, y))


def test_scatter_reduce_prod_noncontiguous_inputs():
    rng = np.random.default_rng(4)
    base = rng.uniform(0.5, 2.0, (4, 3))
    base[1, 2] = 0.0
    src = rng.uniform(0.5, 2.0, (4, 3))
    src[0, 1] = 0.0
    xt = torch.tensor(base).t().detach().requires_grad_(True)
    st = torch.tensor(src).t().detach().requires_grad_(True)
    xf = fc.tensor(base).t().detach().requires_grad_(True)
    sf = fc.tensor(src).t().detach().requires_grad_(True)
    xt.scatter_reduce(1, IDX, st, "prod").sum().backward()
    xf.scatter_reduce(1, from_torch(IDX), sf, "prod").sum().backward()
    assert_close(xf.grad, xt.grad)
    assert_close(sf.grad, st.grad)


# ---- nn ops in float16 / bfloat16 (PyTorch runs them; flambeau computes them in float32) ----

HALF_NN = {
    "relu": lambda F, x: F.relu(x),
    "gelu": lambda F, x: F.gelu(x),
    "gelu_tanh": lambda F, x: F.gelu(x, approximate="tanh"),
    "silu": lambda F, x: F.silu(x),
    "mish": lambda F, x: F.mish(x),
    "elu": lambda F, x: F.elu(x, 0.7),
    "softplus": lambda F, x: F.softplus(x, 1.5),
    "hardtanh": lambda F, x: F.hardtanh(x, -0.5, 0.5),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.1),
    "hardswish": lambda F, x: F.hardswish(x),
    "softmax": lambda F, x: F.softmax(x, dim=-1),
    "log_softmax": lambda F, x: F.log_softmax(x, dim=0),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(HALF_NN))
def test_nn_ops_in_half_match_torch_values_and_gradients(name, dtype):
    import flambeau_nn.functional as FF
    import torch.nn.functional as TF

    fn = HALF_NN[name]
    a = np.random.default_rng(5).standard_normal((4, 7)).astype(np.float32)
    xt = torch.tensor(a).to(getattr(torch, dtype)).requires_grad_(True)
    xf = fc.tensor(a).to(getattr(fc, dtype)).detach().requires_grad_(True)
    yt, yf = fn(TF, xt), fn(FF, xf)
    assert yf.dtype == getattr(fc, dtype)
    tol = 1e-2 if dtype == "float16" else 4e-2
    assert_close(yf.float(), yt.detach().float(), rtol=tol, atol=tol)
    w = np.random.default_rng(6).standard_normal((4, 7)).astype(np.float32)
    (yt.float() * torch.tensor(w)).sum().backward()
    (yf.float() * fc.tensor(w)).sum().backward()
    assert xf.grad.dtype == getattr(fc, dtype)
    assert_close(xf.grad.float(), xt.grad.float(), rtol=2 * tol, atol=2 * tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_embedding_in_half_matches_torch(dtype):
    import flambeau_nn.functional as FF
    import torch.nn.functional as TF

    a = np.random.default_rng(7).standard_normal((6, 5)).astype(np.float32)
    idx = np.array([[0, 5, 2], [2, 2, 1]])
    wt = torch.tensor(a).to(getattr(torch, dtype)).requires_grad_(True)
    wf = fc.tensor(a).to(getattr(fc, dtype)).detach().requires_grad_(True)
    yt = TF.embedding(torch.tensor(idx), wt)
    yf = FF.embedding(fc.tensor(idx), wf)
    assert_close(yf.float(), yt.detach().float(), rtol=0, atol=0)
    yt.float().sum().backward()
    yf.float().sum().backward()
    assert wf.grad.dtype == getattr(fc, dtype)
    assert_close(wf.grad.float(), wt.grad.float(), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["uint16", "complex64"])
def test_nn_ops_refuse_what_torch_refuses(dtype):
    import flambeau_nn.functional as FF

    x = fc.zeros(2, 3, dtype=getattr(fc, dtype))
    with pytest.raises(TypeError, match=rf"\[gelu\].*{dtype}"):
        FF.gelu(x)
    with pytest.raises(TypeError, match=rf"log_softmax.*{dtype}"):
        FF.log_softmax(x, dim=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_in_half_matches_torch(dtype, affine):
    import flambeau_nn.functional as FF
    import torch.nn.functional as TF

    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 4, 6)).astype(np.float32)
    w, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    tdt, fdt = getattr(torch, dtype), getattr(fc, dtype)
    xt = torch.tensor(a).to(tdt).requires_grad_(True)
    xf = fc.tensor(a).to(fdt).detach().requires_grad_(True)
    wt = torch.tensor(w).to(tdt).requires_grad_(True) if affine else None
    bt = torch.tensor(b).to(tdt).requires_grad_(True) if affine else None
    wf = fc.tensor(w).to(fdt).detach().requires_grad_(True) if affine else None
    bf = fc.tensor(b).to(fdt).detach().requires_grad_(True) if affine else None
    yt = TF.layer_norm(xt, (6,), wt, bt)
    yf = FF.layer_norm(xf, (6,), wf, bf)
    assert yf.dtype == fdt
    tol = 2e-2 if dtype == "float16" else 8e-2
    assert_close(yf.float(), yt.detach().float(), rtol=tol, atol=tol)
    g = rng.standard_normal((3, 4, 6)).astype(np.float32)
    (yt.float() * torch.tensor(g)).sum().backward()
    (yf.float() * fc.tensor(g)).sum().backward()
    assert_close(xf.grad.float(), xt.grad.float(), rtol=3 * tol, atol=3 * tol)
    if affine:
        assert_close(wf.grad.float(), wt.grad.float(), rtol=3 * tol, atol=3 * tol)
        assert_close(bf.grad.float(), bt.grad.float(), rtol=3 * tol, atol=3 * tol)
