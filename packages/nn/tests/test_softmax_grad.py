"""Gradients of softmax / log_softmax (the fused _softmax_backward_data /
_log_softmax_backward_data kernels, Note [Softmax rows]) and of cross_entropy against
PyTorch, float32 and float64, odd shapes, any dim, non-contiguous inputs and gradients,
gradcheck and gradgradcheck in float64 (create_graph goes through the composed formulas),
and dot's gradient through its C++ composite."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from nn_testing import close, npy

DTYPES = {"float32": (fc.float32, torch.float32, 3e-5, 1e-6), "float64": (fc.float64, torch.float64, 1e-10, 1e-12)}


CASES = [((128, 10), -1), ((7, 513), 1), ((1024, 1), -1), ((20, 35), -1), ((3, 4, 5), 0), ((3, 4, 300), 1), ((9,), 0)]


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize(("shape", "dim"), CASES)
def test_softmax_grad_matches_torch(name, dtype, shape, dim):
    fdt, tdt, rtol, atol = DTYPES[dtype]
    rng = np.random.default_rng(sum(shape) + dim)
    a = rng.standard_normal(shape) * 2
    g = rng.standard_normal(shape)
    x = fc.tensor(a).to(fdt).requires_grad_()
    tx = torch.tensor(a, dtype=tdt, requires_grad=True)
    y = getattr(F, name)(x, dim)
    ty = getattr(TF, name)(tx, dim)
    close(y, ty, rtol, atol, "value")
    y.backward(fc.tensor(g).to(fdt))
    ty.backward(torch.tensor(g, dtype=tdt))
    close(x.grad, tx.grad, rtol, atol, "grad")


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_softmax_grad_non_contiguous(name, dtype):
    fdt, tdt, rtol, atol = DTYPES[dtype]
    rng = np.random.default_rng(11)
    a, gbase = rng.standard_normal((30, 17)), rng.standard_normal((30, 34))
    x = fc.tensor(a).to(fdt).requires_grad_()
    tx = torch.tensor(a, dtype=tdt, requires_grad=True)
    g = fc.tensor(gbase).to(fdt)[:, ::2].t()  # (17, 30): sliced and transposed
    tg = torch.tensor(gbase, dtype=tdt)[:, ::2].t()
    assert not g.is_contiguous()
    for dim in (0, 1):
        x.grad, tx.grad = None, None
        y = getattr(F, name)(x.t(), dim)  # (17, 30), a transposed input
        ty = getattr(TF, name)(tx.t(), dim)
        close(y, ty, rtol, atol, "value")
        y.backward(g)
        ty.backward(tg)
        close(x.grad, tx.grad, rtol, atol, f"grad dim {dim}")


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_grad_non_contiguous_upstream(name):
    # the gradient reaching softmax is a transposed view (y.t() used downstream)
    rng = np.random.default_rng(12)
    a, w = rng.standard_normal((6, 11)), rng.standard_normal((11, 6))
    x = fc.tensor(a).requires_grad_()
    tx = torch.tensor(a, requires_grad=True)
    (getattr(F, name)(x, 1).t() * fc.tensor(w)).sum().backward()
    (getattr(TF, name)(tx, 1).t() * torch.tensor(w)).sum().backward()
    close(x.grad, tx.grad, 1e-10, 1e-12)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize(("shape", "dim"), [((4, 7), -1), ((3, 4, 5), 1), ((5, 1), 1), ((2, 3, 2), 0)])
def test_softmax_gradcheck_and_gradgradcheck(name, shape, dim):
    x = fc.tensor(np.random.default_rng(13).standard_normal(shape)).requires_grad_()
    fn = getattr(F, name)
    assert fa.gradcheck(lambda t: fn(t, dim), (x,))
    assert fa.gradgradcheck(lambda t: fn(t, dim), (x,))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_double_backward_matches_torch(name):
    a = np.random.default_rng(14).standard_normal((5, 8))
    g = np.random.default_rng(15).standard_normal((5, 8))
    x = fc.tensor(a).requires_grad_()
    tx = torch.tensor(a, requires_grad=True)
    (gx,) = fa.grad([getattr(F, name)(x, 1)], [x], [fc.tensor(g)], create_graph=True)
    (tgx,) = torch.autograd.grad(getattr(TF, name)(tx, 1), tx, torch.tensor(g), create_graph=True)
    close(gx, tgx, 1e-10, 1e-12, "first")
    (gx * gx).sum().backward()
    (tgx * tgx).sum().backward()
    close(x.grad, tx.grad, 1e-9, 1e-11, "second")


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_softmax_grad_special_rows(dtype):
    fdt, tdt, _, _ = DTYPES[dtype]
    inf, nan = float("inf"), float("nan")
    a = np.array([[-inf, -inf, -inf], [-inf, 0.0, 1.0], [1e4, -1e4, 0.0], [nan, 1.0, 2.0], [inf, 1.0, 0.0]])
    for name in ("softmax", "log_softmax"):
        x = fc.tensor(a).to(fdt).requires_grad_()
        tx = torch.tensor(a, dtype=tdt, requires_grad=True)
        getattr(F, name)(x, 1).sum().backward()
        getattr(TF, name)(tx, 1).sum().backward()
        got, want = npy(x.grad), tx.grad.numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_softmax_half_grad_uses_composed_formula():
    a = np.random.default_rng(16).standard_normal((4, 6)).astype(np.float32)
    x = fc.tensor(a).to(fc.bfloat16).requires_grad_()
    F.softmax(x, -1).sum().backward()
    assert x.grad.dtype == fc.bfloat16 and x.grad.shape == (4, 6)
    np.testing.assert_allclose(npy(x.grad.to(fc.float32)), np.zeros((4, 6)), atol=2e-2)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize(("n", "c"), [(128, 10), (70, 1000), (3, 1)])
def test_cross_entropy_grad_matches_torch(dtype, n, c):
    fdt, tdt, rtol, atol = DTYPES[dtype]
    rng = np.random.default_rng(n + c)
    a, t = rng.standard_normal((n, c)) * 3, rng.integers(0, c, n)
    x = fc.tensor(a).to(fdt).requires_grad_()
    tx = torch.tensor(a, dtype=tdt, requires_grad=True)
    loss, tloss = F.cross_entropy(x, fc.tensor(t)), TF.cross_entropy(tx, torch.tensor(t))
    close(loss, tloss, rtol, atol, "loss")
    loss.backward()
    tloss.backward()
    close(x.grad, tx.grad, rtol, atol, "grad")


def test_dot_grad_matches_torch():
    rng = np.random.default_rng(17)
    a, b = rng.standard_normal(16), rng.standard_normal(16)
    x, y = fc.tensor(a).requires_grad_(), fc.tensor(b).requires_grad_()
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    fc.dot(x, y).backward()
    torch.dot(tx, ty).backward()
    close(x.grad, tx.grad, 1e-12, 1e-14)
    close(y.grad, ty.grad, 1e-12, 1e-14)
    assert fa.gradcheck(lambda u, v: fc.dot(u, v), (x, y))


@pytest.mark.parametrize("n", [16, 5000])
def test_dot_gradgradcheck_short_and_long(n):
    rng = np.random.default_rng(n)
    x = fc.tensor(rng.standard_normal(n)).requires_grad_()
    y = fc.tensor(rng.standard_normal(n)).requires_grad_()
    if n <= 16:
        assert fa.gradgradcheck(lambda u, v: fc.dot(u, v), (x, y))
    fc.dot(x, y).backward()
    close(x.grad, torch.tensor(npy(y)), 1e-12, 1e-14)
    close(y.grad, torch.tensor(npy(x)), 1e-12, 1e-14)
