"""F.normalize against torch.nn.functional.normalize: values, gradients, out=, errors.
Complex input and a dim out of range (on the cpu)."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from nn_testing import assert_close, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="normalize: no flambeau-cuda kernel yet")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("shape", "p", "dim"),
    [((4, 5), 2.0, 1), ((4, 5), 1.0, 0), ((2, 3, 4), 3.0, -1), ((2, 3, 4), float("inf"), 1), ((7,), 2.0, 0)],
)
def test_values_and_gradients_match_torch(dtype, shape, p, dim):
    rng = np.random.default_rng(len(shape) * 10 + dim)
    a = rng.standard_normal(shape).astype(dtype)
    a.flat[0] = 0.0  # a zero entry: |x|'s kink inside the norm
    g = rng.standard_normal(shape).astype(dtype)
    x = fc.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    y, ty = F.normalize(x, p=p, dim=dim), TF.normalize(tx, p=p, dim=dim)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert_close(y, ty, rtol=tol, atol=tol)
    y.backward(fc.tensor(g))
    ty.backward(torch.tensor(g))
    assert_close(x.grad, tx.grad, rtol=10 * tol, atol=10 * tol)


def test_a_zero_row_stays_zero_with_a_zero_gradient_like_torch():
    a = np.zeros((2, 3))
    a[1] = [1.0, 2.0, 2.0]
    x, tx = fc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = F.normalize(x), TF.normalize(tx)
    y.sum().backward()
    ty.sum().backward()
    assert_close(y, ty)
    assert_close(x.grad, tx.grad, atol=1e-12)
    assert np.isfinite(to_numpy(x.grad)).all()


def test_gradcheck_float64():
    x = fc.randn(3, 4, dtype=fc.float64, requires_grad=True)
    assert fa.gradcheck(lambda t: F.normalize(t, p=2.0, dim=1), (x,))


def test_noncontiguous_input_and_out():
    a = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    x = fc.tensor(a).t()
    out = fc.empty(4, 5)
    res = F.normalize(x, dim=0, out=out)
    assert res is out
    assert_close(out, TF.normalize(torch.tensor(a).t(), dim=0), rtol=1e-6)


def test_errors_name_the_op():
    with pytest.raises(TypeError, match=r"\[normalize\] input must be a Tensor"):
        F.normalize([1.0, 2.0])
    with pytest.raises(TypeError, match=r"\[normalize\] expected a floating point or complex input, got .*int64"):
        F.normalize(fc.tensor([1, 2]))
    with pytest.raises(IndexError, match="out of range|dim"):
        F.normalize(fc.ones(2, 3), dim=2)


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize(("p", "dim"), [(2.0, 1), (1.0, 0), (3.0, -1), (float("inf"), 1)])
def test_complex_values_and_gradients_match_torch(dtype, p, dim):
    rng = np.random.default_rng(int(p) if p != float("inf") else 9)
    a = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype)
    g = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype)
    x = fc.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    y, ty = F.normalize(x, p=p, dim=dim), TF.normalize(tx, p=p, dim=dim)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    assert_close(y, ty, rtol=tol, atol=tol)
    y.backward(fc.tensor(g))
    ty.backward(torch.tensor(g))
    assert_close(x.grad, tx.grad, rtol=10 * tol, atol=10 * tol)


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("dim", [2, -3, 2**63 - 1, -(2**63)])
def test_dim_out_of_range_is_an_index_error_naming_normalize(dim):
    with pytest.raises(IndexError, match=r"^\[normalize\] Dimension out of range .*\(2, 3\)"):
        F.normalize(fc.ones(2, 3), dim=dim)
    with pytest.raises(IndexError):
        TF.normalize(torch.ones(2, 3), dim=dim)
