"""cdist against PyTorch: values over p in [0, inf], broadcast batch dims, float64, zero distances (whose
gradient is 0, as PyTorch's), gradients when flambeau-autograd is installed, and the error paths."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

PS = [0.0, 0.5, 1.0, 2.0, 3.0, float("inf")]


def operands(shape1, shape2, dtype=np.float32):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(shape1).astype(dtype), rng.standard_normal(shape2).astype(dtype)
    b[..., 0, :] = a.reshape(-1, a.shape[-1])[0]  # a distance of exactly 0 in every batch
    return a, b


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize(("shape1", "shape2"), [((4, 3), (5, 3)), ((2, 4, 3), (2, 6, 3)), ((2, 1, 4, 3), (3, 5, 3))])
def test_cdist_values(p, shape1, shape2):
    a, b = operands(shape1, shape2)
    expected = torch.cdist(torch.from_numpy(a), torch.from_numpy(b), p=p)
    got = fc.cdist(fc.tensor(a), fc.tensor(b), p=p)
    assert got.shape == tuple(expected.shape)
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
def test_cdist_float64_and_compute_modes(mode):
    a, b = operands((30, 4), (40, 4), np.float64)
    expected = torch.cdist(torch.from_numpy(a), torch.from_numpy(b), compute_mode=mode)
    got = fc.cdist(fc.tensor(a), fc.tensor(b), compute_mode=mode)
    assert got.dtype == fc.float64
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-7, atol=1e-6)


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0, float("inf")])
def test_cdist_gradients(p):
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")
    a, b = operands((2, 4, 3), (2, 5, 3))
    weights = np.linspace(-1, 1, 40, dtype=np.float32).reshape(2, 4, 5)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (torch.cdist(ta, tb, p=p) * torch.from_numpy(weights)).sum().backward()
    fa, fb = fc.tensor(a, requires_grad=True), fc.tensor(b, requires_grad=True)
    (fc.cdist(fa, fb, p=p) * fc.tensor(weights)).sum().backward()
    np.testing.assert_allclose(to_numpy(fa.grad), ta.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_numpy(fb.grad), tb.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_cdist_gradients_by_matmul():
    """More than 25 rows: the matrix-product form, with the distance of equal rows exactly 0 and its
    gradient 0, as PyTorch's."""
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")
    a, b = operands((2, 30, 3), (2, 28, 3), np.float64)
    weights = np.linspace(-1, 1, 2 * 30 * 28).reshape(2, 30, 28)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    expected = torch.cdist(ta, tb)
    (expected * torch.from_numpy(weights)).sum().backward()
    fa, fb = fc.tensor(a, requires_grad=True), fc.tensor(b, requires_grad=True)
    got = fc.cdist(fa, fb)
    assert to_numpy(got.detach())[0, 0, 0] == 0.0
    (got * fc.tensor(weights)).sum().backward()
    np.testing.assert_allclose(to_numpy(got.detach()), expected.detach().numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(to_numpy(fa.grad), ta.grad.numpy(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(to_numpy(fb.grad), tb.grad.numpy(), rtol=1e-7, atol=1e-9)


MM_SHAPES = [((40, 5), (30, 5)), ((2, 40, 7), (2, 33, 7)), ((2, 1, 30, 4), (3, 26, 4)), ((26, 70), (3, 70))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape1", "shape2"), MM_SHAPES)
def test_cdist_by_matmul_values(shape1, shape2, dtype):
    """More than 25 rows and no gradient: the one kernel (a matrix product and one pass, on the CPU), with
    PyTorch's values. Distances near 0 carry the rounding of |a|^2 + |b|^2 - 2 a.b under a square root, in
    both libraries, hence the absolute tolerance; the squares agree closely."""
    a, b = operands(shape1, shape2, dtype)
    expected = torch.cdist(torch.from_numpy(a), torch.from_numpy(b))
    got = fc.cdist(fc.tensor(a), fc.tensor(b))
    assert got.shape == tuple(expected.shape) and got.dtype == getattr(fc, np.dtype(dtype).name)
    eps = np.finfo(dtype).eps
    scale = float((a**2).sum(-1).max() + (b**2).sum(-1).max())
    np.testing.assert_allclose(to_numpy(got) ** 2, expected.numpy() ** 2, rtol=0, atol=8 * eps * scale)
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=0, atol=np.sqrt(8 * eps * scale))
    t1, t2 = fc.tensor(a).transpose(-1, -2).contiguous().transpose(-1, -2), fc.tensor(b)[..., ::1, :]
    np.testing.assert_allclose(to_numpy(fc.cdist(t1, t2)), expected.numpy(), rtol=0, atol=np.sqrt(8 * eps * scale))


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cdist_by_matmul_equal_rows(dtype):
    """|a|^2 is summed as flambeau's own float32 GEMM sums a.a (in column order, fused multiply-adds), so
    there equal rows are exactly 0 apart; with an OpenBLAS GEMM, within the rounding of |a|^2 + |a|^2 - 2 a.a
    under the square root, as PyTorch's."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((400, 64)).astype(dtype)  # blocks of 200 x 256 x 64: large enough for the own GEMM
    got = to_numpy(fc.cdist(fc.tensor(a), fc.tensor(a[:256].copy())))
    norms = 2 * float((a.astype(np.float64) ** 2).sum(-1).max())
    assert np.all(np.diagonal(got) <= np.sqrt(8 * np.finfo(dtype).eps * norms))
    if dtype == np.float32 and fc.backends.cpu.sgemm == "own" and fc.backends.cpu.get_cpu_capability() == "AVX512":
        assert np.all(np.diagonal(got) == 0)
    ref = torch.cdist(
        torch.from_numpy(a).double(), torch.from_numpy(a[:256]).double(), compute_mode="donot_use_mm_for_euclid_dist"
    )
    off = ~np.eye(400, 256, dtype=bool)
    np.testing.assert_allclose(got[off], ref.numpy()[off], rtol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.on_devices(types=("cpu",))
def test_cdist_by_matmul_special_values():
    """A NaN gives NaN distances (PyTorch's clamp_min keeps it); rows of an infinity give inf or NaN as
    PyTorch's."""
    a, b = operands((30, 3), (28, 3))
    a[1, 2], b[3, 0] = np.nan, np.inf
    expected = torch.cdist(torch.from_numpy(a), torch.from_numpy(b))
    got = to_numpy(fc.cdist(fc.tensor(a), fc.tensor(b)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected.numpy()))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected.numpy()))
    finite = np.isfinite(got)
    np.testing.assert_allclose(got[finite], expected.numpy()[finite], rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "use_mm_for_euclid_dist_if_necessary"])
def test_cdist_by_matmul_nonfinite_same_with_and_without_gradient(dtype, mode):
    """The kernel (no gradient recorded) and the composite form (a gradient recorded) give PyTorch's NaN and
    inf where a coordinate is NaN or infinite (the composite form once made those NaN squares 0), and
    PyTorch's gradients (NaN through a NaN distance)."""
    ag = pytest.importorskip("flambeau_autograd", reason="the composite form's gradient needs flambeau-autograd")
    del ag
    a, b = operands((30, 3), (28, 3), dtype)
    a[1, 2], a[4, 0], a[6, 1], b[3, 0], b[5, 2] = np.nan, np.inf, -np.inf, np.inf, np.nan
    ta, tb = torch.from_numpy(a).requires_grad_(), torch.from_numpy(b).requires_grad_()
    want = torch.cdist(ta, tb, compute_mode=mode)
    want.sum().backward()
    kernel = to_numpy(fc.cdist(fc.tensor(a), fc.tensor(b), compute_mode=mode))
    fa, fb = fc.tensor(a, requires_grad=True), fc.tensor(b, requires_grad=True)
    composite = fc.cdist(fa, fb, compute_mode=mode)
    composite.sum().backward()
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    for got in (kernel, to_numpy(composite.detach())):
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=rtol, atol=2e-3 if dtype == np.float32 else 1e-9)
    np.testing.assert_allclose(to_numpy(fa.grad), ta.grad.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(to_numpy(fb.grad), tb.grad.numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    ("shape1", "shape2"), [((0, 4), (30, 4)), ((30, 4), (0, 4)), ((30, 0), (40, 0)), ((0, 30, 2), (0, 27, 2))]
)
def test_cdist_by_matmul_empty(shape1, shape2):
    a, b = np.ones(shape1, np.float32), np.ones(shape2, np.float32)
    expected = torch.cdist(torch.from_numpy(a), torch.from_numpy(b), compute_mode="use_mm_for_euclid_dist")
    got = fc.cdist(fc.tensor(a), fc.tensor(b), compute_mode="use_mm_for_euclid_dist")
    assert got.shape == tuple(expected.shape)
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


def test_cdist_by_matmul_gradcheck():
    """With a gradient recorded the composite form runs (its gradient is PyTorch's); gradcheck in float64, and
    its values are the kernel's."""
    ag = pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")
    a, b = operands((2, 27, 3), (2, 26, 3), np.float64)
    a[0, 5] += 1e-3  # no distance of 0: sqrt's slope is not finite there
    b[:, 0] += 0.5
    fa, fb = fc.tensor(a, requires_grad=True), fc.tensor(b, requires_grad=True)
    assert ag.gradcheck(lambda x, y: fc.cdist(x, y), [fa, fb])
    np.testing.assert_allclose(
        to_numpy(fc.cdist(fa, fb).detach()), to_numpy(fc.cdist(fc.tensor(a), fc.tensor(b))), rtol=1e-12, atol=1e-12
    )


@pytest.mark.on_devices(types=("cpu",))
def test_cdist_euclidean_kernel_errors():
    with pytest.raises(fc.FlambeauError, match=r"^\[cdist\] expected inputs \(B, P, M\) and \(B, R, M\), got shapes"):
        fc._C._cdist_euclidean(fc.ones(2, 3), fc.ones(2, 3))
    with pytest.raises(fc.FlambeauError, match=r"^\[cdist\] expected inputs"):
        fc._C._cdist_euclidean(fc.ones(1, 2, 3), fc.ones(1, 2, 4))
    with pytest.raises(
        TypeError, match=r"^\[cdist\] expected two float32 or two float64 inputs, got float32 and float64"
    ):
        fc._C._cdist_euclidean(fc.ones(1, 2, 3), fc.ones(1, 2, 3, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError):  # batch dims that do not broadcast, by matmul
        fc.cdist(fc.ones(2, 40, 3), fc.ones(3, 5, 3))


def test_cdist_errors():
    with pytest.raises(TypeError, match=r"\[cdist\] expected floating-point tensors, got x1 of dtype .*int64"):
        fc.cdist(fc.ones(2, 3, dtype=fc.int64), fc.ones(2, 3))
    with pytest.raises(TypeError, match=r"\[cdist\] expected a Tensor as 'x2', got list"):
        fc.cdist(fc.ones(2, 3), [[1.0, 2.0, 3.0]])
    with pytest.raises(fc.FlambeauError, match=r"at least 2 dims, got x1 of shape \(3,\)"):
        fc.cdist(fc.ones(3), fc.ones(2, 3))
    with pytest.raises(fc.FlambeauError, match=r"same number of columns, got shapes \(2, 3\) and \(2, 4\)"):
        fc.cdist(fc.ones(2, 3), fc.ones(2, 4))
    with pytest.raises(fc.FlambeauError, match=r"\[cdist\] expected a non-negative p, got -1"):
        fc.cdist(fc.ones(2, 3), fc.ones(2, 3), p=-1)
    with pytest.raises(fc.FlambeauError, match=r"\[cdist\] expected compute_mode one of .*; got 'fast'"):
        fc.cdist(fc.ones(2, 3), fc.ones(2, 3), compute_mode="fast")
    with pytest.raises(fc.FlambeauError):  # batch dims that do not broadcast
        fc.cdist(fc.ones(2, 4, 3), fc.ones(3, 5, 3))


# ---- dist: the p-norm of a difference ----

DIST_PS = [0, 0.5, 1, 2, 3.5, -1, float("inf"), -float("inf")]


@pytest.mark.parametrize("p", DIST_PS)
@pytest.mark.parametrize(("shape1", "shape2"), [((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (5,))])
def test_dist_values(p, shape1, shape2):
    rng = np.random.default_rng(13)
    a, b = rng.standard_normal(shape1), rng.standard_normal(shape2)
    if shape1 == (3, 4):
        a[0] = b  # zero differences: p = 0 counts, negative p gives 0
    expected = torch.dist(torch.from_numpy(a), torch.from_numpy(b), p)
    got = fc.dist(fc.tensor(a), fc.tensor(b), p)
    assert got.shape == () and got.dtype == fc.float64
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(fc.tensor(a).dist(fc.tensor(b), p=p)), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("d1", "d2", "result"),
    [
        ("float32", "int64", "float32"),
        ("float16", "float16", "float16"),
        ("bfloat16", "float32", "float32"),
        ("complex64", "complex64", "float32"),
        ("float32", "float64", "float64"),
    ],
)
def test_dist_dtypes(d1, d2, result):
    a, b = np.array([3.0, -1.0]), np.array([0.0, 3.0])
    ta, tb = torch.tensor(a, dtype=getattr(torch, d1)), torch.tensor(b, dtype=getattr(torch, d2))
    fa, fb = fc.tensor(a).to(getattr(fc, d1)), fc.tensor(b).to(getattr(fc, d2))
    expected, got = torch.dist(ta, tb), fc.dist(fa, fb)
    assert str(expected.dtype).split(".")[-1] == str(got.dtype).split(".")[-1] == result
    assert got.item() == pytest.approx(expected.item(), rel=1e-3)


def test_dist_errors():
    with pytest.raises(RuntimeError, match="input dtype should be either floating point or complex"):
        torch.dist(torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64))
    with pytest.raises(
        TypeError, match=r"^\[dist\] expected floating-point or complex tensors, got dtypes int64 and int64"
    ):
        fc.dist(fc.ones(2, dtype=fc.int64), fc.ones(2, dtype=fc.int64))
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        torch.dist(torch.ones(3, 4), torch.ones(5))
    with pytest.raises(
        fc.FlambeauError, match=r"^\[dist\] input of shape \(3, 4\) and other of shape \(5,\) do not broad"
    ):
        fc.dist(fc.ones(3, 4), fc.ones(5))
    with pytest.raises(TypeError, match=r"^\[dist\] expected a Tensor as 'other', got list"):
        fc.dist(fc.ones(2), [1.0, 2.0])
    with pytest.raises(TypeError, match=r"^\[dist\] expected a real number p, got str"):
        fc.dist(fc.ones(2), fc.ones(2), "fro")
