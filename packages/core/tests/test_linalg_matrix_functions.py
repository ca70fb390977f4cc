"""flambeau_core.linalg's matrix functions and tensor forms against PyTorch 2.13: matrix_exp (every scale
of the scaling-and-squaring, batches whose matrices need different scalings, float32/float64/complex128),
cond (every norm, singular and empty matrices), vander, diagonal, tensorinv and tensorsolve; out= and every
error path (type and message). Gradients are in packages/autograd/tests/test_linalg_solvers_grad.py."""

from __future__ import annotations

import math

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy
from test_linalg_solvers import close, fct, rand, th, tol

pytestmark = pytest.mark.on_devices(not_on_cuda="LAPACK: no flambeau-cuda kernel yet")

LA = fc.linalg
DTYPES = [np.float32, np.float64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.0, 1e-3, 0.5, 3.0, 20.0])
def test_matrix_exp_matches_torch(dtype, scale):
    a = (rand((2, 5, 5), dtype, 1) * scale).astype(dtype)
    E = LA.matrix_exp(fct(a))
    t = torch.linalg.matrix_exp(th(a))
    assert E.dtype == fct(a).dtype and tuple(E.shape) == (2, 5, 5)
    # relative to the result's size: e^A grows like e^(scale * n)
    big = float(t.abs().max())
    np.testing.assert_allclose(to_numpy(E) / big, t.numpy() / big, **tol(dtype))


def test_matrix_exp_batch_of_different_scales_and_properties():
    a = rand((4, 3, 3), np.float64, 2) * np.array([1e-4, 1.0, 8.0, 60.0])[:, None, None]
    E = LA.matrix_exp(fct(a))
    t = torch.linalg.matrix_exp(th(a))
    np.testing.assert_allclose(to_numpy(E), t.numpy(), rtol=1e-10, atol=1e-10 * float(t.abs().max()))
    # e^A e^-A = I, and a diagonal matrix exponentiates elementwise
    prod = to_numpy(LA.matrix_exp(fct(a[:3])) @ LA.matrix_exp(fct(-a[:3])))
    np.testing.assert_allclose(prod, np.broadcast_to(np.eye(3), prod.shape), atol=1e-8)
    d = np.diag([-2.0, 0.0, 1.5])
    np.testing.assert_allclose(to_numpy(fc.matrix_exp(fct(d))), np.diag(np.exp([-2.0, 0.0, 1.5])), rtol=1e-13)
    np.testing.assert_allclose(to_numpy(fct(d).matrix_exp()), np.diag(np.exp([-2.0, 0.0, 1.5])), rtol=1e-13)


def test_matrix_exp_empty_and_errors():
    assert tuple(LA.matrix_exp(fc.ones(2, 0, 0)).shape) == (2, 0, 0)
    assert tuple(LA.matrix_exp(fc.ones(0, 3, 3)).shape) == (0, 3, 3)
    with pytest.raises(fc.FlambeauError, match=r"^linalg.matrix_exp: A must be batches of square matrices"):
        LA.matrix_exp(fc.ones(3, 4))
    with pytest.raises(fc.FlambeauError, match=r"^linalg.matrix_exp: The input tensor A must have at least 2"):
        LA.matrix_exp(fc.ones(3))
    with pytest.raises(TypeError, match="Expected a floating point or complex tensor as input. Got"):
        LA.matrix_exp(fc.ones(3, 3, dtype=fc.int32))


NORMS = [None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", NORMS)
def test_cond_matches_torch(dtype, p):
    a = rand((3, 4, 4), dtype, 3)
    c = LA.cond(fct(a), p)
    t = torch.linalg.cond(th(a), p)
    assert tuple(c.shape) == (3,) and c.dtype == (fc.float32 if dtype == np.float32 else fc.float64)
    close(c, t, dtype)
    # a singular matrix: inf (PyTorch's) for the norms that invert A
    if p not in (None, 2, -2):
        s = np.diag([1.0, 2.0, 0.0]).astype(dtype)
        assert LA.cond(fct(s), p).item() == math.inf == torch.linalg.cond(th(s), p).item()


@pytest.mark.parametrize("p", [None, 2, -2])
def test_cond_of_rectangular_and_empty(p):
    a = rand((2, 3, 5), np.float64, 4)
    close(LA.cond(fct(a), p), torch.linalg.cond(th(a), p), np.float64)
    assert to_numpy(LA.cond(fc.ones(2, 0, 0, dtype=fc.float64), p)).tolist() == [0.0, 0.0]


def test_cond_out_and_errors():
    a = rand((4, 4), np.float64, 5)
    out = fc.empty(0, dtype=fc.float64)
    assert LA.cond(fct(a), "fro", out=out) is out
    close(out, torch.linalg.cond(th(a), "fro"), np.float64)
    assert to_numpy(LA.cond(fc.ones(2, 0, 0, dtype=fc.float64), "fro")).tolist() == [0.0, 0.0]
    with pytest.raises(fc.FlambeauError, match=r"^linalg.cond got an invalid norm type: 3"):
        LA.cond(fct(a), 3)
    with pytest.raises(fc.FlambeauError, match=r"^linalg.cond\(ord=fro\): A must be batches of square matrices"):
        LA.cond(fc.ones(3, 4), "fro")
    with pytest.raises(TypeError, match="float32 or float64"):
        LA.cond(fc.ones(3, 3, dtype=fc.int64))
    with pytest.raises(fc.FlambeauError, match="at least 2 dimensions"):
        LA.cond(fc.ones(3))


@pytest.mark.parametrize(
    "dtype",
    [(fc.float32, torch.float32), (fc.float64, torch.float64), (fc.int32, torch.int32), (fc.int64, torch.int64)],
)
@pytest.mark.parametrize("N", [None, 2, 5])
def test_vander_matches_torch(dtype, N):
    x = np.array([[1, -2, 3], [0, 2, -1]])
    v = LA.vander(fc.tensor(x.tolist(), dtype=dtype[0]), N=N)
    t = torch.linalg.vander(torch.tensor(x, dtype=dtype[1]), N=N)
    assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(to_numpy(v), t.numpy())


def test_vander_complex_and_errors():
    x = rand((4,), np.complex128, 6)
    close(LA.vander(fct(x)), torch.linalg.vander(th(x)), np.complex128)
    with pytest.raises(fc.FlambeauError, match=r"^linalg.vander: N must be greater than 1"):
        LA.vander(fc.ones(3), N=1)
    with pytest.raises(fc.FlambeauError, match="N must be greater than 1"):
        LA.vander(fc.ones(1))
    np.testing.assert_array_equal(to_numpy(LA.vander(fc.tensor(2.0), N=3)), torch.linalg.vander(torch.tensor(2.0), N=3))
    with pytest.raises(fc.FlambeauError, match="N must be greater than 1"):
        LA.vander(fc.tensor(2.0))
    with pytest.raises(TypeError, match="supports floating point, complex, and integer tensors"):
        LA.vander(fc.ones(3, dtype=fc.bool))
    with pytest.raises(TypeError, match="N must be an int"):
        LA.vander(fc.ones(3), N=2.0)


def test_diagonal_matches_torch():
    a = rand((2, 3, 4, 5), np.float64, 7)
    for kw in [{}, dict(offset=1), dict(offset=-2), dict(dim1=0, dim2=2), dict(offset=1, dim1=-1, dim2=1)]:
        d = LA.diagonal(fct(a), **kw)
        close(d, torch.linalg.diagonal(th(a), **kw), np.float64)
    with pytest.raises(IndexError, match=r"^linalg.diagonal: Dimension out of range"):
        LA.diagonal(fc.ones(3))
    with pytest.raises(TypeError):
        LA.diagonal(fc.ones(3, 3), 1)  # offset is keyword-only, as PyTorch's


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "ind"), [((4, 6, 8, 3), 2), ((6, 2, 3), 1), ((2, 3, 6), 2), ((5, 5), 1)])
def test_tensorinv_matches_torch(dtype, shape, ind):
    a = rand(shape, dtype, 8)
    r = LA.tensorinv(fct(a), ind)
    close(r, torch.linalg.tensorinv(th(a), ind), dtype)


def test_tensorinv_out_and_errors():
    a = rand((6, 2, 3), np.float64, 9)
    out = fc.empty(0, dtype=fc.float64)
    assert LA.tensorinv(fct(a), 1, out=out) is out
    close(out, torch.linalg.tensorinv(th(a), 1), np.float64)
    with pytest.raises(fc.FlambeauError, match="Expected a strictly positive integer for 'ind', but got 0"):
        LA.tensorinv(fct(a), 0)
    with pytest.raises(fc.FlambeauError, match=r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\)"):
        LA.tensorinv(fct(a), 2)
    with pytest.raises(TypeError, match="float32 or float64"):
        LA.tensorinv(fc.ones(2, 2, dtype=fc.int64), 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorsolve_matches_torch(dtype):
    a = rand((2, 3, 6), dtype, 10)
    b = rand((2, 3), dtype, 11)
    close(LA.tensorsolve(fct(a), fct(b)), torch.linalg.tensorsolve(th(a), th(b)), dtype)
    a2 = rand((6, 4, 3, 8), dtype, 12)
    b2 = rand((6, 4), dtype, 13)
    close(LA.tensorsolve(fct(a2), fct(b2)), torch.linalg.tensorsolve(th(a2), th(b2)), dtype)
    a3 = rand((6, 2, 3), dtype, 14)
    for dims in [(0,), (-3,)]:
        close(LA.tensorsolve(fct(a3), fct(b), dims=dims), torch.linalg.tensorsolve(th(a3), th(b), dims=dims), dtype)


def test_tensorsolve_out_and_errors():
    a, b = rand((2, 3, 6), np.float64, 15), rand((2, 3), np.float64, 16)
    out = fc.empty(0, dtype=fc.float64)
    assert LA.tensorsolve(fct(a), fct(b), out=out) is out
    close(out, torch.linalg.tensorsolve(th(a), th(b)), np.float64)
    with pytest.raises(
        fc.FlambeauError, match=r"prod\(self.shape\[other.ndim:\]\) == prod\(self.shape\[:other.ndim\]\)"
    ):
        LA.tensorsolve(fct(a), fc.ones(2, 2, dtype=fc.float64))
    with pytest.raises(IndexError, match="Dimension out of range"):
        LA.tensorsolve(fct(a), fct(b), dims=(3,))
    with pytest.raises(TypeError, match="same dtype"):
        LA.tensorsolve(fct(a), fc.ones(2, 3))


def test_matrix_exp_single_precision_keeps_small_entries_of_a_large_result():
    # e^A of norm ~1e5 whose small entries float32 squaring would lose: each entry is float64's rounded to
    # float32
    a = (rand((3, 5, 5), np.float64, 23) * 3).astype(np.float32).astype(np.float64)  # exact in float32
    ref = torch.linalg.matrix_exp(th(a)).numpy()
    E = to_numpy(LA.matrix_exp(fct(a.astype(np.float32))))
    np.testing.assert_allclose(E, ref.astype(np.float32), rtol=1e-5, atol=0)
    Ec = to_numpy(LA.matrix_exp(fct(a.astype(np.complex64))))
    assert Ec.dtype == np.complex64
    np.testing.assert_allclose(Ec, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    # where the two disagree (OpInfo's samples: entries in [-9, 9]), torch's float32 result is the one away
    # from the float64 reference: ~1e-5 relative against flambeau's ~6e-8
    b = np.random.default_rng(0).uniform(-9, 9, (5, 5, 5)).astype(np.float32)
    ref64 = torch.linalg.matrix_exp(th(b.astype(np.float64))).numpy()
    ours = np.max(np.abs(to_numpy(LA.matrix_exp(fct(b))) / ref64 - 1))
    theirs = np.max(np.abs(torch.linalg.matrix_exp(th(b)).numpy() / ref64 - 1))
    assert ours < 1e-6 < theirs, (ours, theirs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "k"), [((4, 3), 2), ((2, 5, 3), 3), ((3, 3), 0), ((2, 1, 4, 4), 4), ((1, 1), 1)])
def test_householder_product_matches_torch(dtype, shape, k):
    a = rand(shape, dtype, 24)
    tau = rand((*shape[:-2], k), dtype, 25)
    Q = LA.householder_product(fct(a), fct(tau).reshape(*tau.shape))
    close(Q, torch.linalg.householder_product(th(a), th(tau)), dtype)


def test_householder_product_of_geqrf_reflectors_is_qr_q():
    # the reflectors LAPACK's geqrf returns give back the Q of the QR factorization
    a = rand((6, 4), np.float64, 26)
    refl, tau = torch.geqrf(th(a))
    Q = LA.householder_product(fct(refl.numpy()), fct(tau.numpy()))
    close(Q, torch.linalg.qr(th(a)).Q, np.float64)


def test_householder_product_out_and_errors():
    a, tau = rand((4, 3), np.float64, 27), rand((2,), np.float64, 28)
    out = fc.empty(0, dtype=fc.float64)
    assert LA.householder_product(fct(a), fct(tau), out=out) is out
    close(out, torch.linalg.householder_product(th(a), th(tau)), np.float64)
    H = LA.householder_product
    with pytest.raises(fc.FlambeauError, match=r"^linalg.householder_product: input must have at least 2 dim"):
        H(fc.ones(3), fc.ones(1))
    with pytest.raises(fc.FlambeauError, match=r"input.shape\[-2\] must be greater than or equal to input.shape\[-1\]"):
        H(fc.ones(3, 4), fc.ones(2))
    with pytest.raises(fc.FlambeauError, match=r"input.shape\[-1\] must be greater than or equal to tau.shape\[-1\]"):
        H(fc.ones(4, 3), fc.ones(4))
    with pytest.raises(fc.FlambeauError, match="Expected tau to have one dimension less than input"):
        H(fc.ones(4, 3), fc.ones(2, 2))
    with pytest.raises(fc.FlambeauError, match=r"Expected batch dimensions of tau to be equal to input.shape\[:-2\]"):
        H(fc.ones(2, 4, 3), fc.ones(3, 2))
    with pytest.raises(TypeError, match="tau dtype .* does not match input dtype"):
        H(fc.ones(4, 3), fc.ones(2, dtype=fc.float64))
    with pytest.raises(TypeError, match="float32 or float64"):
        H(fc.ones(4, 3, dtype=fc.int32), fc.ones(2, dtype=fc.int32))
