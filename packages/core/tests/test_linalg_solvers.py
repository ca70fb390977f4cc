"""flambeau_core.linalg's triangular and Cholesky solves and the _ex forms against PyTorch 2.13:
linalg.solve_triangular, triangular_solve, cholesky_solve, cholesky_inverse, linalg.cholesky_ex,
linalg.inv_ex and linalg.solve_ex in float32, float64 and complex128, batched and broadcast, with info
for the matrices that fail, out=, and every error path (type and message). Gradients are in
packages/autograd/tests/test_linalg_solvers_grad.py."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import make_tensor, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="LAPACK: no flambeau-cuda kernel yet")

LA = fc.linalg
DTYPES = [np.float32, np.float64, np.complex128]
TORCH = {np.float32: torch.float32, np.float64: torch.float64, np.complex128: torch.complex128}


def tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def triangular_ok(shape, dtype, seed=0):
    """Random matrices whose triangles have a dominant diagonal (well-conditioned triangular solves)."""
    n = shape[-1]
    return (rand(shape, dtype, seed) + 3 * n**0.5 * np.eye(n)).astype(dtype)


def fct(a, layout="contiguous"):
    """A flambeau tensor with a's values and dtype (complex through fc.complex)."""
    a = np.asarray(a)
    if a.dtype.kind != "c":
        return make_tensor(a, layout)
    real = fc.float32 if a.dtype == np.complex64 else fc.float64
    return fc.complex(fc.tensor(a.real.copy(), dtype=real), fc.tensor(a.imag.copy(), dtype=real))


def th(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def close(x, expected, dtype):
    expected = expected.resolve_conj().numpy() if isinstance(expected, torch.Tensor) else expected
    np.testing.assert_allclose(to_numpy(x), expected,
                               **tol(dtype))  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular_matches_torch(dtype, upper, left, unitriangular):
    a = triangular_ok((2, 4, 4), dtype, 1)
    b = rand((2, 4, 3) if left else (2, 3, 4), dtype, 2)
    kw = dict(upper=upper, left=left, unitriangular=unitriangular)
    X = LA.solve_triangular(fct(a), fct(b), **kw)
    assert X.dtype == fct(a).dtype
    close(X, torch.linalg.solve_triangular(th(a), th(b), **kw), dtype)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_solve_triangular_broadcasts_and_strided(layout):
    a = triangular_ok((3, 1, 5, 5), np.float64, 3)
    b = rand((2, 5, 2), np.float64, 4)
    X = LA.solve_triangular(make_tensor(a, layout), make_tensor(b, layout), upper=False)
    assert tuple(X.shape) == (3, 2, 5, 2)
    close(X, torch.linalg.solve_triangular(th(a), th(b), upper=False), np.float64)


def test_solve_triangular_out_and_errors():
    a, b = triangular_ok((3, 3), np.float64), rand((3, 2), np.float64)
    out = fc.empty(0, dtype=fc.float64)
    r = LA.solve_triangular(fct(a), fct(b), upper=True, out=out)
    assert r is out
    close(out, torch.linalg.solve_triangular(th(a), th(b), upper=True), np.float64)
    with pytest.raises(fc.FlambeauError, match=r"^linalg.solve_triangular: The input tensor B must have at least 2"):
        LA.solve_triangular(fct(a), fc.ones(3, dtype=fc.float64), upper=True)
    with pytest.raises(fc.FlambeauError, match="must be batches of square matrices"):
        LA.solve_triangular(fc.ones(3, 4, dtype=fc.float64), fct(b), upper=True)
    with pytest.raises(fc.FlambeauError, match=r"Incompatible shapes of A and B for the equation XA = B"):
        LA.solve_triangular(fct(a), fct(b), upper=True, left=False)
    with pytest.raises(TypeError, match="Expected A and B to have the same dtype"):
        LA.solve_triangular(fct(a), fct(b.astype(np.float32)), upper=True)
    with pytest.raises(TypeError, match="float32 or float64"):
        LA.solve_triangular(fc.ones(3, 3, dtype=fc.int64), fc.ones(3, 2, dtype=fc.int64), upper=True)
    with pytest.raises(TypeError):
        LA.solve_triangular(fct(a), fct(b))  # upper is required, as PyTorch's
    with pytest.raises(TypeError, match=r"^linalg.solve_triangular: upper must be a bool, got str"):
        LA.solve_triangular(fct(a), fct(b), upper="yes")
    with pytest.raises(TypeError, match="check_errors must be a bool"):
        LA.inv_ex(fct(a), check_errors=None)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_triangular_solve_matches_torch(dtype, upper, transpose):
    a = triangular_ok((2, 4, 4), dtype, 5)
    b = rand((4, 2), dtype, 6)
    r = fc.triangular_solve(fct(b), fct(a), upper, transpose)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.triangular_solve(th(b), th(a), upper, transpose)
    close(r.solution, t.solution, dtype)
    close(r.cloned_coefficient, t.cloned_coefficient, dtype)
    assert type(r).__name__ == "triangular_solve"
    close(fct(b).triangular_solve(fct(a), upper=upper, transpose=transpose)[0], t.solution, dtype)


def test_triangular_solve_unitriangular_out_and_errors():
    a, b = triangular_ok((3, 3), np.float64, 7), rand((3, 2), np.float64, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.triangular_solve(th(b), th(a), False, unitriangular=True)
    outs = (fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.float64))
    r = fc.triangular_solve(fct(b), fct(a), False, unitriangular=True, out=outs)
    assert r[0] is outs[0] and r[1] is outs[1]
    close(outs[0], t.solution, np.float64)
    with pytest.raises(fc.FlambeauError, match="each A matrix is 3 by 3 but each b matrix is 4 by 2"):
        fc.triangular_solve(fc.ones(4, 2, dtype=fc.float64), fct(a))
    with pytest.raises(TypeError, match="Expected b and A to have the same dtype"):
        fc.triangular_solve(fct(b.astype(np.float32)), fct(a))
    with pytest.raises(fc.FlambeauError, match="at least 2 dimensions"):
        fc.triangular_solve(fc.ones(3, dtype=fc.float64), fct(a))


def spd(shape, dtype, seed=0):
    a = rand(shape, dtype, seed)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
def test_cholesky_solve_and_inverse_match_torch(dtype, upper):
    s = spd((2, 4, 4), dtype, 9)
    f = torch.linalg.cholesky(th(s), upper=upper).numpy()
    b = rand((3, 1, 4, 2), dtype, 10)
    X = fc.cholesky_solve(fct(b), fct(f), upper)
    assert tuple(X.shape) == (3, 2, 4, 2)
    close(X, torch.cholesky_solve(th(b), th(f), upper), dtype)
    close(fct(b).cholesky_solve(fct(f), upper), torch.cholesky_solve(th(b), th(f), upper), dtype)
    close(fc.cholesky_inverse(fct(f), upper), torch.cholesky_inverse(th(f), upper), dtype)
    close(fct(f).cholesky_inverse(upper), torch.cholesky_inverse(th(f), upper), dtype)


def test_cholesky_solve_inverse_out_and_errors():
    f = np.linalg.cholesky(spd((3, 3), np.float64, 11))
    b = rand((3, 2), np.float64, 12)
    out = fc.empty(0, dtype=fc.float64)
    assert fc.cholesky_solve(fct(b), fct(f), out=out) is out
    close(out, torch.cholesky_solve(th(b), th(f)), np.float64)
    out = fc.empty(0, dtype=fc.float64)
    assert fc.cholesky_inverse(fct(f), out=out) is out
    close(out, torch.cholesky_inverse(th(f)), np.float64)
    with pytest.raises(fc.FlambeauError, match="Incompatible matrix sizes for cholesky_solve"):
        fc.cholesky_solve(fc.ones(4, 2, dtype=fc.float64), fct(f))
    with pytest.raises(fc.FlambeauError, match="b should have at least 2 dimensions, but has 1"):
        fc.cholesky_solve(fc.ones(3, dtype=fc.float64), fct(f))
    with pytest.raises(TypeError, match="Expected b and A to have the same dtype"):
        fc.cholesky_solve(fct(b.astype(np.float32)), fct(f))
    with pytest.raises(fc.FlambeauError, match=r"^cholesky_inverse: A must be batches of square matrices"):
        fc.cholesky_inverse(fc.ones(3, 4))
    with pytest.raises(fc.FlambeauError, match="at least 2 dimensions"):
        fc.cholesky_inverse(fc.ones(3))
    with pytest.raises(TypeError, match="float32 or float64"):
        fc.cholesky_inverse(fc.ones(3, 3, dtype=fc.int32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_ex_info_matches_torch(dtype):
    s = spd((3, 4, 4), dtype, 13)
    s[1] = -s[1]  # not positive-definite at order 1
    s[2][2, 2] = -50  # ... at order 3
    L, info = LA.cholesky_ex(fct(s))
    tL, tinfo = torch.linalg.cholesky_ex(th(s))
    np.testing.assert_array_equal(to_numpy(info), tinfo.numpy())
    assert info.dtype == fc.int32 and tuple(info.shape) == (3,)
    close(L[0], tL[0], dtype)
    assert np.isnan(to_numpy(L[1])).all()
    Lu, info_u = LA.cholesky_ex(fct(s), upper=True)
    np.testing.assert_array_equal(to_numpy(info_u), torch.linalg.cholesky_ex(th(s), upper=True).info.numpy())
    close(Lu[0], torch.linalg.cholesky(th(s[0]), upper=True), dtype)
    good = spd((2, 3, 3), dtype, 14)
    L, info = LA.cholesky_ex(fct(good))
    close(L, torch.linalg.cholesky(th(good)), dtype)
    assert to_numpy(info).tolist() == [0, 0]


def test_cholesky_ex_check_errors_and_out():
    bad = -np.eye(3)
    with pytest.raises(fc.FlambeauError, match=r"^linalg.cholesky_ex: .*leading minor of order 1"):
        LA.cholesky_ex(fct(bad), check_errors=True)
    outs = (fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.int32))
    r = LA.cholesky_ex(fct(spd((3, 3), np.float64)), out=outs)
    assert r.L is outs[0] and r.info is outs[1] and outs[1].item() == 0
    with pytest.raises(fc.FlambeauError, match="must be batches of square matrices"):
        LA.cholesky_ex(fc.ones(2, 3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_ex_and_solve_ex_info_match_torch(dtype):
    a = triangular_ok((3, 4, 4), dtype, 15)
    a[1] = 0  # info 1
    a[2] = np.triu(a[2])
    a[2][2, 2] = 0  # LU of a triangular matrix is itself: info 3, exactly
    b = rand((3, 4, 2), dtype, 16)
    inverse, info = LA.inv_ex(fct(a))
    tinfo = torch.linalg.inv_ex(th(a)).info
    assert tinfo.tolist() == [0, 1, 3]
    np.testing.assert_array_equal(to_numpy(info), tinfo.numpy())
    close(inverse[0], torch.linalg.inv(th(a[0])), dtype)
    X, info = LA.solve_ex(fct(a), fct(b))
    np.testing.assert_array_equal(to_numpy(info), tinfo.numpy())
    close(X[0], torch.linalg.solve(th(a[0]), th(b[0])), dtype)
    # vectors, left=False, broadcasting, and the all-good path
    good = triangular_ok((2, 1, 3, 3), dtype, 17)
    v = rand((3,), dtype, 18)
    X, info = LA.solve_ex(fct(good), fct(v))
    tX, tinfo = torch.linalg.solve_ex(th(good), th(v))
    close(X, tX, dtype)
    assert tuple(info.shape) == tuple(tinfo.shape) == (2, 1)
    Bw = rand((4, 2, 3), dtype, 19)
    X, info = LA.solve_ex(fct(good), fct(Bw), left=False)
    tX, tinfo = torch.linalg.solve_ex(th(good), th(Bw), left=False)
    close(X, tX, dtype)
    assert tuple(info.shape) == tuple(tinfo.shape) == (2, 1)
    inverse, info = LA.inv_ex(fct(good))
    close(inverse, torch.linalg.inv(th(good)), dtype)
    assert info.dtype == fc.int32 and to_numpy(info).tolist() == [[0], [0]]


def test_inv_ex_solve_ex_check_errors_and_out():
    z = np.zeros((2, 3, 3))
    with pytest.raises(fc.FlambeauError, match=r"^linalg.inv_ex: .*singular"):
        LA.inv_ex(fct(z), check_errors=True)
    with pytest.raises(fc.FlambeauError, match=r"^linalg.solve_ex: .*singular"):
        LA.solve_ex(fct(z), fc.ones(2, 3, 1, dtype=fc.float64), check_errors=True)
    with pytest.raises(fc.FlambeauError, match=r"^linalg.solve_ex: Incompatible shapes"):
        LA.solve_ex(fct(z), fc.ones(2, 4, 1, dtype=fc.float64))
    with pytest.raises(TypeError, match="same dtype"):
        LA.solve_ex(fct(z), fc.ones(2, 3, 1))
    a = triangular_ok((3, 3), np.float64, 20)
    outs = (fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.int32))
    r = LA.inv_ex(fct(a), out=outs)
    assert r.inverse is outs[0] and r.info is outs[1]
    close(outs[0], torch.linalg.inv(th(a)), np.float64)
    outs = (fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.int32))
    r = LA.solve_ex(fct(a), fc.ones(3, dtype=fc.float64), out=outs)
    assert r.result is outs[0] and r.info is outs[1]
    close(outs[0], torch.linalg.solve(th(a), torch.ones(3, dtype=torch.float64)), np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_with_zero_on_the_diagonal_gives_torchs_inf_and_nan(dtype, upper, left):
    a = triangular_ok((3, 4, 4), dtype, 21)
    a[0, 1, 1] = 0
    a[2, 3, 3] = 0  # the middle matrix is regular: its solution stays exact
    b = rand((3, 4, 2) if left else (3, 2, 4), dtype, 22)
    X = to_numpy(LA.solve_triangular(fct(a), fct(b), upper=upper, left=left))
    t = torch.linalg.solve_triangular(th(a), th(b), upper=upper, left=left).numpy()
    np.testing.assert_array_equal(np.isnan(X), np.isnan(t))
    np.testing.assert_array_equal(np.isposinf(X), np.isposinf(t))
    np.testing.assert_allclose(X, t, equal_nan=True, **tol(dtype))
    assert np.isfinite(X[1]).all()
