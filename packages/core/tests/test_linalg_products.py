"""flambeau_core.linalg products and norms (einsum, tensordot, outer, vecdot,
multi_dot, matrix_power, cross, vector_norm, matrix_norm, norm) and the torch.*
spellings (dot, inner, mv, ger, chain_matmul) against PyTorch 2.13: values in
float32 and float64, broadcasting, non-contiguous inputs, and errors."""

from __future__ import annotations

import math
import re

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import make_tensor, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="linalg products: no flambeau-cuda kernel yet")

LA = fc.linalg
FLOATS = [np.float32, np.float64]


def tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def rand(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]),
    ("ijk,ikl,ilm->ijm", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
    ("iij->j", [(3, 3, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("i,jk->ijk", [(2,), (3, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("ab,ab,ab->a", [(3, 4), (3, 4), (3, 4)]),
    ("Ab,bC->AC", [(3, 4), (4, 2)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
    ("i,i", [(1,), (5,)]),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("eq, shapes", EINSUM_CASES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_einsum_matches_torch(dtype, eq, shapes, layout):
    arrs = [rand(s, dtype, i) for i, s in enumerate(shapes)]
    got = fc.einsum(eq, *[make_tensor(a, layout) for a in arrs])
    want = torch.einsum(eq, *[torch.from_numpy(a) for a in arrs])
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), **tol(dtype))


def test_einsum_list_form_and_linalg_name():
    a, b = rand((2, 3)), rand((3, 2))
    np.testing.assert_allclose(to_numpy(fc.einsum("ij,jk", [fc.tensor(a), fc.tensor(b)])), a @ b)


@pytest.mark.parametrize(
    "eq, shapes, match",
    [
        ("ij,jk->ik", [(3, 4), (5, 6)], "subscript j has size 4 for one operand and 5"),
        ("ij->ik", [(3, 4)], "output subscript k does not appear"),
        ("ij,jk", [(3, 4)], "more operands|fewer operands"),
        ("ijk", [(3, 4)], r"number of subscripts in the equation \(3\) does not match the number of dimensions \(2\)"),
        ("i1", [(3, 4)], "invalid subscript"),
        ("ii->i", [(3, 4)], "subscript i is repeated for operand of shape \\(3, 4\\) but the sizes don't match"),
        ("ij->ii", [(3, 4)], "appears more than once"),
        ("......", [(3,)], "more than one"),
    ],
)
def test_einsum_errors(eq, shapes, match):
    with pytest.raises(fc.FlambeauError, match=match):
        fc.einsum(eq, *[fc.ones(*s) for s in shapes])


def test_einsum_type_errors():
    with pytest.raises(TypeError, match="equation"):
        fc.einsum(3, fc.ones(2))
    with pytest.raises(TypeError, match="Tensor"):
        fc.einsum("i", [1, 2])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "sa, sb, dims",
    [
        ((3, 4, 5), (4, 5, 6), 2),
        ((3, 4), (4, 5), 1),
        ((2, 3), (4, 5), 0),
        ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])),
        ((4,), (4,), 1),
        ((2, 3, 4), (4, 3), ([1, 2], [1, 0])),
        # a contracted dim of size 1 broadcasts against the other side's (which is summed over)
        ((1, 1, 1), (2, 1, 2), ([0, 1], [2, 0])),
        ((3, 1), (1, 4), ([1], [1])),
        ((3, 4), (1, 5), ([1], [0])),
    ],
)
def test_tensordot_matches_torch(dtype, sa, sb, dims):
    a, b = rand(sa, dtype, 1), rand(sb, dtype, 2)
    got = fc.tensordot(make_tensor(a, "transposed"), fc.tensor(b), dims=dims)
    want = torch.tensordot(torch.from_numpy(a), torch.from_numpy(b), dims=dims)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), **tol(dtype))


def test_tensordot_errors():
    with pytest.raises(fc.FlambeauError, match="contracted dimensions need to match"):
        fc.tensordot(fc.ones(3, 4), fc.ones(5, 6), dims=1)
    with pytest.raises(fc.FlambeauError, match="size 3 in dim 0 and second has size 4 in dim 1"):
        fc.tensordot(fc.ones(3, 1), fc.ones(1, 4), dims=([0], [1]))
    with pytest.raises(fc.FlambeauError, match="dims >= 0"):
        fc.tensordot(fc.ones(3), fc.ones(3), dims=-1)
    with pytest.raises(fc.FlambeauError, match="same length"):
        fc.tensordot(fc.ones(3), fc.ones(3), dims=([0], [0, 1]))
    with pytest.raises(IndexError, match="out of range"):
        fc.tensordot(fc.ones(3), fc.ones(3), dims=([1], [0]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_outer_vecdot_dot_inner_mv(dtype):
    a, b, m = rand((4,), dtype, 1), rand((5,), dtype, 2), rand((5, 4), dtype, 3)
    ta, tb, tm = (torch.from_numpy(x) for x in (a, b, m))
    np.testing.assert_allclose(
        to_numpy(LA.outer(fc.tensor(a), fc.tensor(b))), torch.outer(ta, tb).numpy(), **tol(dtype)
    )
    np.testing.assert_allclose(to_numpy(fc.ger(fc.tensor(a), fc.tensor(b))), torch.ger(ta, tb).numpy(), **tol(dtype))
    np.testing.assert_allclose(to_numpy(fc.tensor(a).outer(fc.tensor(b))), np.outer(a, b), **tol(dtype))
    x, y = rand((3, 1, 4), dtype, 4), rand((2, 4), dtype, 5)
    np.testing.assert_allclose(
        to_numpy(LA.vecdot(fc.tensor(x), fc.tensor(y))),
        torch.linalg.vecdot(torch.from_numpy(x), torch.from_numpy(y)),
        **tol(dtype),
    )
    np.testing.assert_allclose(
        to_numpy(LA.vecdot(fc.tensor(x), fc.tensor(x), dim=0)),
        torch.linalg.vecdot(torch.from_numpy(x), torch.from_numpy(x), dim=0),
        **tol(dtype),
    )
    np.testing.assert_allclose(fc.dot(fc.tensor(a), fc.tensor(a)).item(), torch.dot(ta, ta).item(), **tol(dtype))
    np.testing.assert_allclose(
        to_numpy(fc.inner(fc.tensor(m), fc.tensor(m))), torch.inner(tm, tm).numpy(), **tol(dtype)
    )
    np.testing.assert_allclose(to_numpy(fc.mv(fc.tensor(m), fc.tensor(a))), torch.mv(tm, ta).numpy(), **tol(dtype))
    with pytest.raises(fc.FlambeauError, match="outer: expected two 1-D tensors"):
        LA.outer(fc.ones(2, 2), fc.ones(2))
    with pytest.raises(fc.FlambeauError, match="dot: inconsistent tensor size"):
        fc.dot(fc.ones(2), fc.ones(3))
    with pytest.raises(fc.FlambeauError, match="mv: size mismatch"):
        fc.mv(fc.ones(2, 3), fc.ones(2))
    with pytest.raises(fc.FlambeauError, match="same size along dim"):
        LA.vecdot(fc.ones(2, 3), fc.ones(2, 4))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "shapes", [[(3, 4), (4, 5)], [(10, 2), (2, 30), (30, 3), (3, 40)], [(4,), (4, 6), (6, 2), (2,)], [(5,), (5, 3)]]
)
def test_multi_dot(dtype, shapes):
    arrs = [rand(s, dtype, i) for i, s in enumerate(shapes)]
    got = LA.multi_dot([fc.tensor(a) for a in arrs])
    want = torch.linalg.multi_dot([torch.from_numpy(a) for a in arrs])
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), **tol(dtype))


def test_multi_dot_errors():
    with pytest.raises(fc.FlambeauError, match="at least 2 tensors"):
        LA.multi_dot([fc.ones(2, 2)])
    with pytest.raises(
        fc.FlambeauError, match=r"tensors 0 and 1 with shapes \(2, 3\) and \(4, 2\) cannot be multiplied"
    ):
        LA.multi_dot([fc.ones(2, 3), fc.ones(4, 2)])
    with pytest.raises(fc.FlambeauError, match="tensor 1 must be 2D"):
        LA.multi_dot([fc.ones(2, 3), fc.ones(3), fc.ones(3, 2)])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -3])
def test_matrix_power(dtype, n):
    a = (rand((2, 4, 4), dtype, 6) / 2 + 2 * np.eye(4)).astype(dtype)
    got = LA.matrix_power(fc.tensor(a), n)
    want = torch.linalg.matrix_power(torch.from_numpy(a), n)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-3 if dtype == np.float32 else 1e-9)
    np.testing.assert_allclose(
        to_numpy(fc.tensor(a).matrix_power(n)), want.numpy(), rtol=1e-3 if dtype == np.float32 else 1e-9
    )


def test_matrix_power_integers_and_errors():
    a = np.array([[1, 1], [1, 0]], dtype=np.int64)
    assert LA.matrix_power(fc.tensor(a), 10).tolist() == [[89, 55], [55, 34]]
    with pytest.raises(fc.FlambeauError, match="square matrices"):
        LA.matrix_power(fc.ones(2, 3), 2)
    # n < 0 inverts: PyTorch's linalg.inv refuses what is not float or complex (a RuntimeError there, the
    # TypeError of flambeau's dtype checks here), naming linalg.inv
    for dtype in ("int64", "float16", "bool"):
        with pytest.raises(RuntimeError, match=r"^linalg.inv: "):
            torch.linalg.matrix_power(torch.ones(2, 2, dtype=getattr(torch, dtype)), -1)
        with pytest.raises(TypeError, match=rf"^linalg.inv: expected a float32 or float64 tensor for A, got .*{dtype}"):
            LA.matrix_power(fc.ones(2, 2, dtype=getattr(fc, dtype)), -1)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 2), (3, 2, 2), (0, 0), (2, 0, 0)])
def test_matrix_power_bool_as_torch(n, shape):
    # PyTorch's products have no bool kernel: n >= 2 of a non-empty bool matrix raises; n = 0 (the
    # identity), n = 1 (a copy) and empty matrices give values
    a = (np.arange(math.prod(shape)).reshape(shape) % 3 == 0) if shape else np.zeros(shape, bool)
    if n >= 2 and a.size:
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            torch.linalg.matrix_power(torch.from_numpy(a), n)
        with pytest.raises(NotImplementedError, match=r"^linalg.matrix_power: not implemented for bool tensors"):
            LA.matrix_power(fc.tensor(a), n)
        return
    x = fc.tensor(a)
    got, want = LA.matrix_power(x, n), torch.linalg.matrix_power(torch.from_numpy(a), n)
    assert got.dtype == fc.bool and got.tolist() == want.tolist()
    if n == 1 and a.size:  # a new tensor, as PyTorch's: writing to it leaves x alone
        got[..., 0, 0] = ~got[..., 0, 0]
        assert x.tolist() == a.tolist()


@pytest.mark.parametrize("kind", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2, -3])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (0, 2, 2), (2, 0, 0)])
def test_matrix_power_complex(kind, n, shape):
    rng = np.random.default_rng(8)
    a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / 2 + 2 * np.eye(shape[-1])
    a = a.astype(kind)
    want = torch.linalg.matrix_power(torch.from_numpy(a), n)
    got = LA.matrix_power(fc.tensor(a), n)
    assert got.shape == tuple(want.shape) and got.dtype == getattr(fc, kind)
    rtol = 1e-4 if kind == "complex64" else 1e-10
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(to_numpy(fc.tensor(a).matrix_power(n)), want.numpy(), rtol=rtol, atol=rtol)


def test_matrix_power_complex_singular_raises_as_torch():
    a = np.zeros((2, 2, 2), np.complex64)
    a[0] = np.eye(2)
    with pytest.raises(torch.linalg.LinAlgError) as theirs:
        torch.linalg.matrix_power(torch.from_numpy(a), -2)
    with pytest.raises(LA.LinAlgError) as ours:
        LA.matrix_power(fc.tensor(a), -2)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", FLOATS)
def test_cross(dtype):
    a, b = rand((4, 3), dtype, 1), rand((1, 3), dtype, 2)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    np.testing.assert_allclose(
        to_numpy(LA.cross(fc.tensor(a), fc.tensor(b))), torch.linalg.cross(ta, tb).numpy(), **tol(dtype)
    )
    c, d = rand((3, 5), dtype, 3), rand((3, 5), dtype, 4)
    np.testing.assert_allclose(
        to_numpy(fc.cross(make_tensor(c, "transposed"), fc.tensor(d))),
        torch.cross(torch.from_numpy(c), torch.from_numpy(d), dim=0).numpy(),
        **tol(dtype),
    )
    np.testing.assert_allclose(
        to_numpy(LA.cross(fc.tensor(c), fc.tensor(d), dim=0)),
        torch.linalg.cross(torch.from_numpy(c), torch.from_numpy(d), dim=0).numpy(),
        **tol(dtype),
    )
    with pytest.raises(fc.FlambeauError, match="must have length 3"):
        LA.cross(fc.ones(2, 4), fc.ones(2, 4))


VECTOR_ORDS = [2, 1, 0, math.inf, -math.inf, 3, 0.5, -1]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (-1, False), ((0, 2), True), (1, True)])
def test_vector_norm(dtype, ord, dim, keepdim):
    x = rand((3, 4, 5), dtype, 7)
    x[0, 0, 0] = 0.0
    got = LA.vector_norm(make_tensor(x, "sliced"), ord, dim, keepdim)
    want = torch.linalg.vector_norm(torch.from_numpy(x), ord, dim, keepdim)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
@pytest.mark.parametrize("dim, keepdim", [((-2, -1), False), ((0, 2), True), ((2, 0), False)])
def test_matrix_norm(dtype, ord, dim, keepdim):
    x = rand((3, 4, 5), dtype, 8)
    got = LA.matrix_norm(fc.tensor(x), ord, dim, keepdim)
    want = torch.linalg.matrix_norm(torch.from_numpy(x), ord, dim, keepdim)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), **tol(dtype))


@pytest.mark.parametrize(
    "shape, ord, dim",
    [
        ((5,), None, None),
        ((3, 4), None, None),
        ((3, 4), "fro", None),
        ((3, 4), 2, None),
        ((3, 4), math.inf, None),
        ((2, 3, 4), None, (1, 2)),
        ((2, 3, 4), 3, 1),
        ((5,), 1, None),
    ],
)
def test_norm_dispatches_like_torch(shape, ord, dim):
    x = rand(shape, np.float64, 9)
    got = LA.norm(fc.tensor(x), ord, dim)
    want = torch.linalg.norm(torch.from_numpy(x), ord, dim)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-10)


def test_norm_errors():
    with pytest.raises(fc.FlambeauError, match="Order 3 not supported"):
        LA.matrix_norm(fc.ones(3, 3), 3)
    with pytest.raises(fc.FlambeauError, match="the input must be 1D or 2D"):
        LA.norm(fc.ones(2, 3, 4), 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        LA.vector_norm(fc.ones(2, 3), 2, 4)
    with pytest.raises(fc.FlambeauError, match="cannot compute the inf norm on an empty tensor"):
        LA.vector_norm(fc.ones(0), math.inf)
    with pytest.raises(TypeError, match="float32 or float64"):
        LA.vector_norm(fc.ones(3).to(fc.int64))


def test_matmul_shape_error_names_shapes():
    with pytest.raises(fc.FlambeauError, match=r"\(2, 3\).*\(4, 5\)"):
        LA.matmul(fc.ones(2, 3), fc.ones(4, 5))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize(
    ("batch", "n", "k", "m"), [(5, 35, 32, 35), (8, 128, 128, 128), (3, 4, 600, 700), (1, 200, 64, 300)]
)
def test_bmm_split_by_matrix_or_inside_matches_numpy(threads, batch, n, k, m):
    # bmm splits a batch over the threads by matrix (small products, or one per
    # thread) or hands each product to gemm's own split: every path, transposed
    # operands included, gives NumPy's result.
    rng = np.random.default_rng(batch * 1000 + n)
    a = rng.standard_normal((batch, n, k)).astype(np.float32)
    b = rng.standard_normal((batch, m, k)).astype(np.float32)
    old = fc.get_num_threads()
    fc.set_num_threads(threads)
    try:
        out = fc.bmm(fc.tensor(a), fc.tensor(b).transpose(1, 2))
    finally:
        fc.set_num_threads(old)
    np.testing.assert_allclose(np.array(out.tolist()), a @ b.transpose(0, 2, 1), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("ord", [2, -2, "nuc", 1, -1, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0, 0), (2, 0, 0), (1, 3, 0, 2), (0, 2, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm_of_empty_matrices(ord, shape, keepdim):
    """Norm 0 for the largest-value orders, PyTorch's IndexError (its amin's words) for the smallest ones."""
    x = np.zeros(shape, np.float32)
    try:
        want = torch.linalg.matrix_norm(torch.from_numpy(x), ord, keepdim=keepdim)
    except IndexError as e:
        with pytest.raises(IndexError, match="^linalg.matrix_norm: " + re.escape(str(e)) + "$"):
            LA.matrix_norm(fc.tensor(x), ord, keepdim=keepdim)
        return
    got = LA.matrix_norm(fc.tensor(x), ord, keepdim=keepdim)
    assert got.shape == tuple(want.shape) and got.dtype == fc.float32
    np.testing.assert_array_equal(to_numpy(got), want.numpy())
