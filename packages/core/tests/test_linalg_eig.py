"""flambeau.linalg.eig / eigvals (LAPACK geev) against PyTorch 2.13: complex
outputs and their dtypes, batches, real inputs with complex-conjugate pairs,
complex inputs, layouts, empty batches, the defining identity A V = V diag(L),
unit-norm eigenvectors, and the error paths."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="eig: no flambeau-cuda kernel yet")

LA = fc.linalg


def sort_eigs(w):
    """Eigenvalues in a canonical order (rounded real part, then imaginary part)."""
    w = np.asarray(w)
    idx = np.lexsort((np.round(w.imag, 6), np.round(w.real, 6)), axis=-1)
    return np.take_along_axis(w, idx, -1)


def fc_input(a, kind):
    if kind.startswith("complex"):
        rdt = fc.float32 if kind == "complex64" else fc.float64
        return fc.complex(fc.tensor(a.real.copy(), dtype=rdt), fc.tensor(a.imag.copy(), dtype=rdt))
    return fc.tensor(a, dtype=fc.float32 if kind == "float32" else fc.float64)


TH = {"float32": torch.float32, "float64": torch.float64, "complex64": torch.complex64, "complex128": torch.complex128}
OUT = {"float32": fc.complex64, "float64": fc.complex128, "complex64": fc.complex64, "complex128": fc.complex128}


@pytest.mark.parametrize("kind", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 4, 4), (2, 1, 3, 3)])
def test_eig_matches_torch(kind, shape):
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape)
    if kind.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    x = fc_input(a, kind)
    L, V = LA.eig(x)
    assert L.dtype == OUT[kind] and V.dtype == OUT[kind]
    assert tuple(L.shape) == shape[:-1] and tuple(V.shape) == shape
    tol = 1e-4 if kind in ("float32", "complex64") else 1e-10
    tL = torch.linalg.eigvals(torch.tensor(a).to(TH[kind]))
    np.testing.assert_allclose(sort_eigs(to_numpy(L, widen=True)), sort_eigs(tL.numpy()), rtol=tol, atol=tol)
    Ln, Vn = to_numpy(L, widen=True), to_numpy(V, widen=True)
    np.testing.assert_allclose(a @ Vn, Vn * Ln[..., None, :], rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(Vn, axis=-2), 1.0, rtol=tol)
    np.testing.assert_allclose(sort_eigs(to_numpy(LA.eigvals(x), widen=True)), sort_eigs(Ln), rtol=tol, atol=tol)


def test_eig_conjugate_pairs_and_layouts():
    rot = np.array([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])  # eigenvalues +-2i, 3
    L, V = LA.eig(fc.tensor(rot))
    np.testing.assert_allclose(sort_eigs(to_numpy(L, widen=True)), sort_eigs(np.array([-2j, 2j, 3.0])), atol=1e-12)
    Vn = to_numpy(V, widen=True)
    np.testing.assert_allclose(rot @ Vn, Vn * to_numpy(L, widen=True)[None, :], atol=1e-12)
    a = np.random.default_rng(3).standard_normal((4, 4))
    t = fc.tensor(a.T.copy()).transpose(0, 1)  # a non-contiguous layout of a
    np.testing.assert_allclose(
        sort_eigs(to_numpy(LA.eigvals(t), widen=True)), sort_eigs(np.linalg.eigvals(a)), atol=1e-12
    )


def test_eig_empty_and_out():
    L, V = LA.eig(fc.zeros(0, 3, 3))
    assert tuple(L.shape) == (0, 3) and tuple(V.shape) == (0, 3, 3) and L.dtype == fc.complex64
    L, V = LA.eig(fc.zeros(0, 0, dtype=fc.float64))
    assert tuple(L.shape) == (0,) and L.dtype == fc.complex128
    out = fc.empty(2, dtype=fc.complex128)
    r = LA.eigvals(fc.tensor([[2.0, 0.0], [0.0, 5.0]], dtype=fc.float64), out=out)
    assert r is out and sorted(v.real for v in out.tolist()) == [2.0, 5.0]


def test_eig_errors():
    with pytest.raises(TypeError, match="linalg.eig: expected a float32, float64, complex64 or complex128.*int64"):
        LA.eig(fc.tensor([[1, 2], [3, 4]]))
    with pytest.raises(fc.FlambeauError, match=r"linalg.eig: A must have at least 2 dimensions, got shape \(3,?\)"):
        LA.eig(fc.ones(3))
    with pytest.raises(
        fc.FlambeauError,
        match="linalg.eigvals: A must be batches of square matrices, but they are 2 by 3",
    ):
        LA.eigvals(fc.ones(2, 3))
    with pytest.raises(TypeError, match=r"\[linalg.eig\] expected a float32"):
        fc._C._linalg_eig(fc.ones(2, 2, dtype=fc.float16), True)
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.eigvals\] A must be batches of square"):
        fc._C._linalg_eig(fc.ones(2, 3), False)
