"""flambeau_core.sparse (COO tensors) against PyTorch's sparse_coo layout: values, layouts, errors.

The gradients through sparse tensors need autograd: packages/flambeau/tests/test_sparse_autograd.py.
"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import sparse
from flambeau_core.sparse import SparseTensor, sparse_coo_tensor
from helpers import assert_same_as_torch, from_torch, to_numpy


def _random_coo(seed: int, size: tuple[int, ...], nnz: int, sparse_dim: int | None = None):
    """Uncoalesced (duplicates included) COO parts as torch tensors: indices, values."""
    g = torch.Generator().manual_seed(seed)
    k = len(size) if sparse_dim is None else sparse_dim
    indices = (
        torch.stack([torch.randint(0, s, (nnz,), generator=g) for s in size[:k]])
        if nnz
        else torch.zeros(k, 0, dtype=torch.int64)
    )
    values = torch.randn((nnz, *size[k:]), generator=g, dtype=torch.float64)
    return indices, values


def _both(seed: int, size: tuple[int, ...], nnz: int, sparse_dim: int | None = None):
    i, v = _random_coo(seed, size, nnz, sparse_dim)
    return sparse_coo_tensor(from_torch(i), from_torch(v), size), torch.sparse_coo_tensor(i, v, size)


def _assert_same_sparse(ours: SparseTensor, theirs: torch.Tensor) -> None:
    assert isinstance(ours, SparseTensor) and theirs.is_sparse
    assert ours.shape == tuple(theirs.shape)
    assert (ours.sparse_dim(), ours.dense_dim()) == (theirs.sparse_dim(), theirs.dense_dim())
    assert ours.is_coalesced() == theirs.is_coalesced()
    assert_same_as_torch(ours._indices(), theirs._indices())
    np.testing.assert_allclose(to_numpy(ours._values()), theirs._values().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("size", "nnz", "sparse_dim"),
    [
        ((4, 5), 12, None),
        ((3,), 7, None),
        ((2, 3, 4), 9, None),
        ((3, 4, 2), 6, 2),
        ((5, 6), 0, None),
        ((1, 1), 3, None),
    ],
)
def test_coalesce_and_to_dense_match_torch(size, nnz, sparse_dim):
    ours, theirs = _both(seed=nnz + len(size), size=size, nnz=nnz, sparse_dim=sparse_dim)
    assert ours._nnz() == theirs._nnz()
    np.testing.assert_allclose(to_numpy(ours.to_dense()), theirs.to_dense().numpy(), rtol=1e-12, atol=1e-12)
    _assert_same_sparse(ours.coalesce(), theirs.coalesce())
    c = ours.coalesce()
    assert c.coalesce() is c
    _assert_same_sparse(
        sparse_coo_tensor(c.indices(), c.values(), size), torch.sparse_coo_tensor(*_coalesced_parts(theirs), size)
    )


def _coalesced_parts(t: torch.Tensor):
    c = t.coalesce()
    return c.indices(), c.values()


def test_uncoalesced_indices_and_values_refuse_as_torch():
    ours, theirs = _both(seed=1, size=(3, 3), nnz=6)
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        theirs.indices()
    with pytest.raises(RuntimeError, match=r"\[indices\] Cannot get indices on an uncoalesced tensor"):
        ours.indices()
    with pytest.raises(RuntimeError, match=r"\[values\] Cannot get values on an uncoalesced tensor"):
        ours.values()


@pytest.mark.parametrize("shape", [(4, 5), (6,), (2, 3, 4)])
def test_to_sparse_matches_torch(shape):
    g = torch.Generator().manual_seed(len(shape))
    dense = torch.randn(shape, generator=g, dtype=torch.float64) * (torch.rand(shape, generator=g) < 0.4)
    ours = from_torch(dense).to_sparse()
    _assert_same_sparse(ours, dense.to_sparse())
    assert ours.is_sparse and not from_torch(dense).is_sparse
    np.testing.assert_array_equal(to_numpy(ours.to_dense()), dense.numpy())
    x = fc.zeros(2)
    assert x.to_dense() is x and x.layout is fc.sparse.strided and ours.layout is sparse.sparse_coo


def test_to_sparse_with_dense_dims_matches_torch():
    dense = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [2.0, 3.0]])
    _assert_same_sparse(from_torch(dense).to_sparse(1), dense.to_sparse(1))


@pytest.mark.parametrize(("m", "k", "n", "nnz"), [(5, 4, 3, 11), (1, 7, 2, 3), (6, 6, 6, 0), (3, 2, 1, 20)])
def test_mm_matches_torch(m, k, n, nnz):
    ours, theirs = _both(seed=m * k + nnz, size=(m, k), nnz=nnz)
    dense = torch.randn(k, n, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    expected = torch.sparse.mm(theirs, dense).numpy()
    for result in (sparse.mm(ours, from_torch(dense)), sparse.spmm(ours, from_torch(dense)), ours @ from_torch(dense)):
        assert result.shape == (m, n)
        np.testing.assert_allclose(to_numpy(result), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1, 2, (1, 2), (0, 2)])
def test_sum_matches_torch(dim):
    ours, theirs = _both(seed=3, size=(3, 4, 2), nnz=10, sparse_dim=2)
    expected = torch.sparse.sum(theirs) if dim is None else torch.sparse.sum(theirs, dim=dim)
    result = sparse.sum(ours) if dim is None else sparse.sum(ours, dim=dim)
    if expected.is_sparse:
        _assert_same_sparse(result, expected)
    else:
        assert isinstance(result, fc.Tensor)
        np.testing.assert_allclose(to_numpy(result), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_transpose_add_and_scale_match_torch():
    a, ta = _both(seed=4, size=(3, 5), nnz=8)
    b, tb = _both(seed=5, size=(3, 5), nnz=4)
    _assert_same_sparse(a.t().coalesce(), ta.t().coalesce())
    _assert_same_sparse(a + b, (ta + tb).coalesce())
    np.testing.assert_allclose(to_numpy((2.5 * a).to_dense()), (2.5 * ta).to_dense().numpy())
    np.testing.assert_allclose(to_numpy((a / 4).to_dense()), (ta / 4).to_dense().numpy())
    np.testing.assert_allclose(to_numpy((-a).to_dense()), (-ta).to_dense().numpy())
    assert a.float().dtype == fc.float32 and a.double().dtype == fc.float64


def test_size_is_inferred_as_torch():
    i, v = torch.tensor([[0, 3, 1], [2, 0, 1]]), torch.ones(3, 2)
    assert sparse_coo_tensor(from_torch(i), from_torch(v)).shape == tuple(torch.sparse_coo_tensor(i, v).shape)
    assert sparse_coo_tensor([[0, 2]], [5.0, 6.0], dtype=fc.float64).dtype == fc.float64


def test_empty_sparse_tensor():
    e = sparse_coo_tensor(fc.zeros((2, 0), dtype=fc.int64), fc.zeros(0), (2, 3))
    assert e._nnz() == 0 and e.is_coalesced()
    assert e.to_dense().tolist() == [[0.0] * 3] * 2
    assert e.coalesce()._nnz() == 0
    assert sparse.mm(e, fc.ones(3, 2)).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert sparse.sum(e).item() == 0.0


def test_bad_input_raises_clear_errors():
    with pytest.raises(IndexError, match=r"\[sparse_coo_tensor\] size is inconsistent with indices: for dim 1, size "):
        sparse_coo_tensor([[0, 1], [0, 3]], [1.0, 2.0], (2, 3))
    with pytest.raises(IndexError, match=r"found negative index -1 for dim 0"):
        sparse_coo_tensor([[-1]], [1.0], (3,))
    with pytest.raises(RuntimeError, match=r"indices and values must have same nnz, but got nnz from indices: 2"):
        sparse_coo_tensor([[1, 2]], [1.0], (3,))
    with pytest.raises(RuntimeError, match=r"indices must be sparse_dim x nnz, but got: \[1\]"):
        sparse_coo_tensor(fc.tensor([1]), [1.0], (3,))
    with pytest.raises(RuntimeError, match=r"len\(size\) = 2, sparse_dim = 1, dense_dim = 0"):
        sparse_coo_tensor([[1]], [1.0], (3, 4))
    with pytest.raises(RuntimeError, match=r"cannot infer the size"):
        sparse_coo_tensor(fc.zeros((1, 0), dtype=fc.int64), fc.zeros(0))
    with pytest.raises(TypeError, match=r"indices must be an integer tensor, got flambeau.bool"):
        sparse_coo_tensor(fc.tensor([[True]]), [1.0], (3,))
    a = sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    with pytest.raises(RuntimeError, match=r"\[sparse.mm\] shapes \[2, 2\] and \[3, 1\] cannot be multiplied"):
        sparse.mm(a, fc.ones(3, 1))
    with pytest.raises(TypeError, match=r"expected scalar type flambeau.float32 but found flambeau.float64"):
        sparse.mm(a, fc.ones(2, 1, dtype=fc.float64))
    with pytest.raises(RuntimeError, match=r"\[sparse.mm\] expects a 2-D dense second operand, got shape \[2\]"):
        sparse.mm(a, fc.ones(2))
    with pytest.raises(TypeError, match=r"sparse @ sparse is not supported"):
        sparse.mm(a, a)
    with pytest.raises(IndexError, match=r"\[sparse.sum\] Dimension out of range"):
        sparse.sum(a, dim=2)
    with pytest.raises(RuntimeError, match=r"\[to_sparse\] sparse_dim must be in \[1, 2\]"):
        fc.ones(2, 2).to_sparse(3)


def test_docstring_examples():
    import doctest

    result = doctest.testmod(sparse, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
