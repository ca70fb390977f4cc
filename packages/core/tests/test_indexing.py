"""cat, stack, gather, scatter_add and advanced indexing (x[...], x[...] = v, index_put_)
against NumPy / PyTorch."""

import doctest
import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import to_host
from helpers import to_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.on_devices


def test_cat_matches_numpy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(9, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(to_numpy(fc.cat([fc.tensor(a), fc.tensor(b)]), strided=True), np.concatenate([a, b]))
    c = np.ones((2, 1), np.float32)
    np.testing.assert_array_equal(
        to_numpy(fc.cat((fc.tensor(a), fc.tensor(c)), dim=-1), strided=True), np.concatenate([a, c], 1)
    )
    # non-contiguous input
    np.testing.assert_array_equal(
        to_numpy(fc.cat([fc.tensor(a).T, fc.tensor(a).T], 1), strided=True), np.concatenate([a.T, a.T], 1)
    )
    # legacy: 1-D empty tensors are skipped
    assert fc.cat([fc.tensor(a), fc.zeros(0)]).shape == (2, 3)


def test_cat_promotes_dtypes_like_torch():
    got = fc.cat([fc.tensor([1, 2]), fc.tensor([0.5])])
    want = torch.cat([torch.tensor([1, 2]), torch.tensor([0.5])])
    assert got.dtype == fc.float32 and got.tolist() == want.tolist()
    assert fc.cat([fc.tensor([True]), fc.tensor([3])]).dtype == fc.int64


def test_cat_errors():
    with pytest.raises(ValueError, match=r"\[cat\] expected a non-empty list"):
        fc.cat([])
    with pytest.raises(ValueError, match=r"\[cat\] sizes must match except in dimension 0.*\(2, 3\).*\(2, 4\)"):
        fc.cat([fc.zeros(2, 3), fc.zeros(2, 4)])
    with pytest.raises(ValueError, match=r"\[cat\] tensors must have the same number of dims"):
        fc.cat([fc.zeros(2, 3), fc.zeros(3)])
    with pytest.raises(ValueError, match="zero-dimensional"):
        fc.cat([fc.tensor(1.0), fc.tensor(2.0)])
    with pytest.raises(TypeError, match=r"\[cat\].*element 1 is int"):
        fc.cat([fc.zeros(1), 3])
    with pytest.raises(TypeError, match=r"\[cat\] argument 'tensors' must be a list or tuple of Tensors, got Tensor"):
        fc.cat(fc.zeros(3))
    with pytest.raises(IndexError, match=r"\[cat\] dimension 2"):
        fc.cat([fc.zeros(2, 2)], 2)


def test_stack():
    xs = [np.full((2, 3), i, np.float32) for i in range(4)]
    for dim in (0, 1, 2, -1):
        np.testing.assert_array_equal(
            to_numpy(fc.stack([fc.tensor(x) for x in xs], dim), strided=True), np.stack(xs, dim)
        )
    assert fc.stack([fc.tensor(1.0), fc.tensor(2.0)]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"\[stack\] all tensors must have the same shape.*tensor 1 has shape \(3,\)"):
        fc.stack([fc.zeros(2), fc.zeros(3)])
    with pytest.raises(ValueError, match=r"\[stack\] expected a non-empty list"):
        fc.stack([])
    with pytest.raises(IndexError, match=r"\[stack\] dimension 3"):
        fc.stack([fc.zeros(2)], 3)


def test_gather_matches_torch():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 3], [2, 2], [1, 0]])
    for dim in (0, 1):
        i = idx if dim == 1 else np.array([[0, 2, 1, 0], [2, 2, 0, 1]])
        want = torch.gather(torch.from_numpy(a), dim, torch.from_numpy(i))
        got = fc.gather(fc.tensor(a), dim, fc.tensor(i))
        np.testing.assert_array_equal(to_numpy(got, strided=True), want.numpy())
    # non-contiguous self
    t = fc.tensor(a).T
    want = torch.from_numpy(a).T.gather(1, torch.tensor([[0], [2], [1], [2]]))
    np.testing.assert_array_equal(to_numpy(t.gather(1, fc.tensor([[0], [2], [1], [2]])), strided=True), want.numpy())


def test_gather_errors():
    x = fc.zeros(2, 3)
    with pytest.raises(IndexError, match=r"\[gather\] index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, fc.tensor([[3], [0]]))
    with pytest.raises(IndexError, match=r"\[gather\] index -1 is out of bounds"):
        x.gather(1, fc.tensor([[-1], [0]]))
    with pytest.raises(TypeError, match=r"\[gather\] index must be an int64 or int32 tensor, got dtype float32"):
        x.gather(1, fc.zeros(2, 1))
    with pytest.raises(IndexError, match=r"\[gather\] index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, fc.tensor([[3], [0]], dtype=fc.int32))
    with pytest.raises(ValueError, match=r"\[gather\] index must have as many dims"):
        x.gather(1, fc.tensor([0, 1]))


@pytest.mark.parametrize("op", ["gather", "scatter", "scatter_value", "scatter_add", "scatter_reduce"])
def test_int32_index_matches_torch(op):
    # PyTorch takes an int32 index for gather and the scatters (not for take/take_along_dim).
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    src = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    idx = torch.randint(0, 4, (3, 5), generator=gen)
    calls = {
        "gather": lambda m, a, i, s: m.gather(a, 0, i),
        "scatter": lambda m, a, i, s: m.scatter(a, 0, i, s),
        "scatter_value": lambda m, a, i, s: m.scatter(a, 0, i, 2.5),
        "scatter_add": lambda m, a, i, s: m.scatter_add(a, 0, i, s),
        "scatter_reduce": lambda m, a, i, s: m.scatter_reduce(a, 0, i, s, "amax", include_self=False),
    }
    want = calls[op](torch, x, idx.int(), src)
    got = calls[op](fc, fc.tensor(x.numpy()), fc.tensor(idx.int().numpy()), fc.tensor(src.numpy()))
    assert got.dtype == fc.float64
    np.testing.assert_array_equal(to_numpy(got), want.numpy())
    # A strided (transposed) int32 index reads the same positions.
    strided = fc.tensor(idx.int().numpy().T.copy()).t()
    got = calls[op](fc, fc.tensor(x.numpy()), strided, fc.tensor(src.numpy()))
    np.testing.assert_array_equal(to_numpy(got), want.numpy())


def test_scatter_add_matches_torch():
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    idx = np.array([[0, 1, 2, 0], [2, 2, 2, 2]])
    src = np.arange(8, dtype=np.float64).reshape(2, 4) + 0.5
    want = torch.from_numpy(base).scatter_add(0, torch.from_numpy(idx), torch.from_numpy(src))
    t = fc.tensor(base)
    got = fc.scatter_add(t, 0, fc.tensor(idx), fc.tensor(src))
    np.testing.assert_array_equal(to_numpy(got, strided=True), want.numpy())
    np.testing.assert_array_equal(to_numpy(t, strided=True), base)  # out of place
    idx1 = np.array([[3, 3], [0, 1], [1, 1]])
    src1 = np.ones((3, 2))
    want1 = torch.from_numpy(base).scatter_add(1, torch.from_numpy(idx1), torch.from_numpy(src1))
    np.testing.assert_array_equal(
        to_numpy(t.scatter_add(1, fc.tensor(idx1), fc.tensor(src1)), strided=True), want1.numpy()
    )


def test_scatter_add_errors():
    x = fc.zeros(3)
    with pytest.raises(IndexError, match=r"\[scatter_add\] index 3 is out of bounds for dimension 0 with size 3"):
        x.scatter_add(0, fc.tensor([3]), fc.ones(1))
    with pytest.raises(TypeError, match=r"\[scatter_add\] src dtype float64 must match self dtype float32"):
        x.scatter_add(0, fc.tensor([0]), fc.ones(1, dtype=fc.float64))
    with pytest.raises(ValueError, match=r"larger than src shape"):
        x.scatter_add(0, fc.tensor([0, 1]), fc.ones(1))


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_gather_scatter_property(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = rng.standard_normal(shape)
    ishape = [data.draw(st.integers(1, s)) if d != dim else data.draw(st.integers(1, 5)) for d, s in enumerate(shape)]
    idx = rng.integers(0, shape[dim], size=ishape)
    got = to_numpy(fc.gather(fc.tensor(a), dim, fc.tensor(idx)), strided=True)
    np.testing.assert_array_equal(
        got,
        np.take_along_axis(a[tuple(slice(0, s) if d != dim else slice(None) for d, s in enumerate(ishape))], idx, dim),
    )
    src = rng.standard_normal(ishape)
    want = torch.from_numpy(a).scatter_add(dim, torch.from_numpy(idx), torch.from_numpy(src)).numpy()
    np.testing.assert_allclose(
        to_numpy(fc.scatter_add(fc.tensor(a), dim, fc.tensor(idx), fc.tensor(src)), strided=True), want, rtol=1e-12
    )


# ---------------------------------------------------------------------------
# Advanced indexing (Note [Advanced indexing], Note [Indexing from Python])
# ---------------------------------------------------------------------------

A345 = np.arange(60.0).reshape(3, 4, 5)
MASK_34 = A345[:, :, 0] > 20
MASK_45 = A345[0] > 7
MASK_ROWS = np.array([True, False, True, True])

# Index tuples on a (3, 4, 5) tensor; NumPy arrays become tensors on both sides.
GETITEM_CASES = [
    # one index tensor or list
    ([2, 0],),
    ([[1, -1]],),
    (slice(None), [3, 1]),
    (1, Ellipsis, [4, 4, 0]),
    (None, [0, 2], slice(1, 3)),
    ([0, 1], 1),
    (slice(None), 1, [0, 1]),
    ([],),
    ((0, 2), [1, 1]),
    (slice(1, None), [[0, 1]], slice(None, None, 2)),
    # several: broadcast together, in place when adjacent, first when separated
    ([0, 2], [1, 3]),
    ([0, 2], [1, 3], [4, 0]),
    ([[0], [2]], [1, 3]),
    ([0, 2], slice(None), [1, 3]),
    (slice(None), [0, 2], [1, 3]),
    ([0, 2], None, [1, 3]),
    ([0, 2], Ellipsis, [1, 3]),
    (Ellipsis, [0, 2], [1, 3]),
    (1, [0, 2], [1, 3]),
    ([0, 2], 1, [1, 3]),  # the int selects first (PyTorch): adjacent
    (0, slice(None), [0, 1]),  # PyTorch: (4, 2); NumPy would give (2, 4)
    (np.array([[0, 1], [2, 0]]), np.array([1]), slice(1, 4, 2)),
    ([-1, -3], [-4, 0]),
    (np.array([2, 0], np.int32), np.array([1, 1])),
    ([1.7, 0.2],),  # a list of floats is truncated to int64, as in PyTorch
    # masks: one dim per mask dim
    (MASK_34,),
    (slice(None), MASK_45),
    (MASK_34, None),
    (None, MASK_34, None),
    (MASK_34, slice(1, 3)),
    ([1], MASK_ROWS, [2]),
    ([True, False, True],),
    (np.zeros((3, 4), bool),),
    (np.zeros(3, bool), [1]),
    # Python bools and 0-dim tensors
    (True,),
    (False,),
    (True, [0, 1]),
    ([0, 1], True),
    (None, True, Ellipsis, False),
    (True, Ellipsis, True),
    (np.array(1),),
    (np.array(1), [0, 1]),
    (np.array(True),),
    (np.array(False), 1),
    # empty index tensors
    ([], []),
    (np.zeros((0, 3), np.int64),),
    (slice(None), np.zeros((2, 0), np.int64), 1),
]


def _lib_index(idx, lib):
    def conv(i):
        if isinstance(i, np.ndarray):
            return fc.tensor(i) if lib == "fc" else torch.from_numpy(i)
        return i

    return tuple(conv(i) for i in idx)


def _check_same(got, want):
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(to_numpy(got, strided=True), want.numpy())


@pytest.mark.parametrize("idx", GETITEM_CASES, ids=repr)
def test_getitem_advanced_matches_torch(idx):
    t, x = fc.tensor(A345), torch.from_numpy(A345)
    want = x[_lib_index(idx, "torch")]
    got = t[_lib_index(idx, "fc")]
    _check_same(got, want)
    assert got.is_contiguous() and got.data_ptr() != t.data_ptr()  # a copy, as in PyTorch


def test_getitem_advanced_matches_numpy_where_it_agrees():
    a = A345
    t = fc.tensor(a)
    for idx in [([0, 2], [1, 3]), ([0, 2], slice(None), [1, 3]), (Ellipsis, [[0], [1]], [2, 4]), (MASK_34,)]:
        np.testing.assert_array_equal(to_numpy(t[_lib_index(idx, "fc")], strided=True), a[idx])


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_getitem_advanced_non_contiguous(layout):
    from helpers import make_tensor

    t = make_tensor(A345, layout)
    idx = fc.tensor([[2, 0, 1, 1]]).t()  # a non-contiguous index tensor too
    for fi, ni in [
        ((idx, [1, 3, 0, 2]), (np.array([[2], [0], [1], [1]]), [1, 3, 0, 2])),
        ((slice(None), idx[:, 0], slice(1, 4)), (slice(None), [2, 0, 1, 1], slice(1, 4))),
        ((fc.tensor(MASK_34),), (MASK_34,)),
        (([0, 2], slice(None), [4, 3]), ([0, 2], slice(None), [4, 3])),
    ]:
        np.testing.assert_array_equal(to_numpy(t[fi], strided=True), A345[ni])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"])
def test_getitem_and_setitem_every_dtype(dtype):
    from helpers import NP_TO_FC, random_array

    a = random_array((4, 3), dtype, np.random.default_rng(1))
    t = fc.tensor(a, dtype=NP_TO_FC[a.dtype])
    np.testing.assert_array_equal(to_numpy(t[[3, 0, 3], [2, 1, 0]], strided=True), a[[3, 0, 3], [2, 1, 0]])
    t[[1, 2], 0] = t[[0, 0], 1]
    a[[1, 2], 0] = a[[0, 0], 1]
    np.testing.assert_array_equal(to_numpy(t, strided=True), a)
    t.index_put_((fc.tensor([0, 0]),), t[[3, 3]], accumulate=True)
    want = torch.from_numpy(a.copy()).index_put_((torch.tensor([0, 0]),), torch.from_numpy(a[[3, 3]]), accumulate=True)
    np.testing.assert_array_equal(to_numpy(t, strided=True), want.numpy())


def test_getitem_large_gather_uses_threads_and_matches():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3000, 700), dtype=np.float32)  # 2.1M elements: above the grain
    idx = rng.integers(-3000, 3000, size=3000)
    t = fc.tensor(a)
    np.testing.assert_array_equal(to_numpy(t[fc.tensor(idx)], strided=True), a[idx])
    np.testing.assert_array_equal(to_numpy(t[fc.tensor(idx), 5], strided=True), a[idx, 5])
    np.testing.assert_array_equal(to_numpy(t[:, fc.tensor(idx[:50] % 700)], strided=True), a[:, idx[:50] % 700])
    g = fc.zeros(3000, 700)
    g.index_put_((fc.tensor(idx),), t, accumulate=True)
    want = np.zeros_like(a)
    np.add.at(want, idx, a)
    np.testing.assert_allclose(to_numpy(g, strided=True), want, rtol=1e-5, atol=1e-5)


def _index_strategy(draw, shape):
    """A random index (tuple) for `shape`: ints, slices, None, Ellipsis, int tensors/lists, masks, bools."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    base = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))  # index tensors broadcast to this shape
    items, d, used_ellipsis = [], 0, False
    while d < len(shape):
        n = shape[d]
        kind = draw(st.sampled_from(["full", "int", "slice", "tensor", "list", "mask", "none", "bool", "ellipsis"]))
        if kind == "int" and n > 0:
            items.append(int(rng.integers(-n, n)))
        elif kind == "slice":
            items.append(slice(draw(st.none() | st.integers(-n - 1, n + 1)), draw(st.none() | st.integers(-n, n)), 2))
        elif kind in ("tensor", "list") and n > 0:
            ishape = tuple(s if draw(st.booleans()) else 1 for s in base)[draw(st.integers(0, len(base))) :]
            v = rng.integers(-n, n, size=ishape)
            items.append(fc.tensor(v) if kind == "tensor" else v.tolist())
        elif kind == "mask":
            k = draw(st.integers(1, min(2, len(shape) - d)))
            items.append(fc.tensor(rng.random(shape[d : d + k]) < 0.5))
            d += k - 1
        elif kind == "none":
            items.append(None)
            continue
        elif kind == "bool":
            items.append(draw(st.booleans()))
            continue
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            items.append(Ellipsis)
            d += draw(st.integers(0, len(shape) - d))
            continue
        else:
            items.append(slice(None))
        d += 1
    return tuple(items)


def _to_torch_index(idx):
    return tuple(torch.from_numpy(to_numpy(i, strided=True)) if isinstance(i, fc.Tensor) else i for i in idx)


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=4), data=st.data())
def test_getitem_property_matches_torch(shape, data):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    idx = _index_strategy(data.draw, shape)
    try:
        want = torch.from_numpy(a)[_to_torch_index(idx)]
    except IndexError:
        with pytest.raises(IndexError, match=r"^\[(getitem|index)\]"):
            fc.tensor(a)[idx]
        return
    _check_same(fc.tensor(a)[idx], want)


@settings(max_examples=100, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_setitem_and_index_put_property_match_torch(shape, data):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    idx = _index_strategy(data.draw, shape)
    tidx = _to_torch_index(idx)
    x = torch.from_numpy(a.copy())
    try:
        result_shape = x[tidx].shape
    except IndexError:
        return
    # A number (repeated positions do not matter), then a tensor added with accumulate.
    x[tidx] = -1.0
    t = fc.tensor(a)
    t[idx] = -1.0
    _check_same(t, x)
    if all(isinstance(i, (fc.Tensor, list)) for i in idx):  # torch's index_put_ takes tensors only
        fi = tuple(i if isinstance(i, fc.Tensor) else fc.tensor(i, dtype=fc.int64) for i in idx)
        ti = tuple(torch.from_numpy(to_numpy(i, strided=True)) for i in fi)
        vals = np.asarray(np.arange(float(np.prod(result_shape))).reshape(result_shape) + 100)
        t.index_put_(fi, fc.tensor(vals), accumulate=True)
        x.index_put_(ti, torch.from_numpy(vals), accumulate=True)
        _check_same(t, x)


SETITEM_CASES = [
    (([1, 0],), 5.0),
    ((slice(None), [2, 0]), None),
    ((A345 > 10,), -1.0),
    ((np.array([True, False, True]),), None),
    ((1, Ellipsis, [3, 0]), None),
    (([[0, 1], [1, 1]],), 7.0),
    ((slice(None), MASK_45), 2.0),
    ((slice(None), MASK_45), None),
    (([0, 1], [2, 0]), None),
    (([0, 1], slice(None), [2, 0]), None),
    (([0, 1], slice(1, 3), [2, 0]), None),
    ((True, [0, 1]), None),
    ((False,), 3.0),
    ((slice(None), slice(None), [0, 0, 1]), 4.0),
    ((None, [1], 0), None),
    (([], []), None),
    ((MASK_34,), None),
    ((np.array(True), [2], 1), None),
]


@pytest.mark.parametrize(("idx", "val"), SETITEM_CASES, ids=repr)
def test_setitem_advanced_matches_torch(idx, val):
    t, x = fc.tensor(A345), torch.tensor(A345)
    ti, xi = _lib_index(idx, "fc"), _lib_index(idx, "torch")
    v0 = t._version
    if val is None:
        shape = x[xi].shape
        v = torch.arange(float(np.prod(shape)), dtype=torch.float64).reshape(shape) + 100
        x[xi] = v
        t[ti] = fc.tensor(v.numpy())
    else:
        x[xi] = val
        t[ti] = val
    _check_same(t, x)
    assert t._version > v0


def test_setitem_value_broadcasts_and_casts():
    t = fc.zeros(4)
    t[fc.tensor([0, 2])] = fc.tensor(3.0)
    assert t.tolist() == [3.0, 0.0, 3.0, 0.0]
    b = fc.zeros(2, 3)
    b[[0, 1], [0]] = fc.tensor([[5.0, 6.0]])  # leading size-1 dims of the value are dropped
    b[[0, 1]] += 0  # (read, add, write back)
    b[[1]] = fc.ones(1, 1, 1, 3)
    assert b.tolist() == [[5.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    b[:, [2, 0]] = fc.tensor([7.0, 8.0])  # broadcast over the rows
    assert b.tolist() == [[8.0, 0.0, 7.0], [8.0, 1.0, 7.0]]
    # cast to self's dtype (PyTorch's index_put_ would refuse float64 into float32)
    b[[0]] = fc.tensor([1.5, 2.5, 3.5], dtype=fc.float64)
    assert b.dtype == fc.float32 and b[0].tolist() == [1.5, 2.5, 3.5]
    i = fc.zeros(3, dtype=fc.int64)
    i[[0, 1]] = fc.tensor([2.7, -3.2])
    i[[2]] = 9.9
    assert i.tolist() == [2, -3, 9]
    m = fc.zeros(3, dtype=fc.bool)
    m[[1]] = 1
    assert m.tolist() == [False, True, False]


def test_setitem_repeated_index_last_write_wins():
    t = fc.zeros(4)
    t[[0, 0, 1, 0]] = fc.tensor([1.0, 2.0, 3.0, 4.0])
    assert t.tolist() == [4.0, 3.0, 0.0, 0.0]


def test_setitem_reads_an_aliased_value_before_writing():
    a = np.arange(5.0)
    t = fc.tensor(a)
    t[[4, 3, 2, 1, 0]] = t
    a[[4, 3, 2, 1, 0]] = a.copy()
    np.testing.assert_array_equal(to_numpy(t, strided=True), a)
    t[[0, 1, 2]] = t[[2, 1, 0]]
    a[[0, 1, 2]] = a[[2, 1, 0]]
    np.testing.assert_array_equal(to_numpy(t, strided=True), a)
    t[[1, 2, 3]] = t[0:3]  # an overlapping view of self: read before any write
    a[[1, 2, 3]] = a[0:3].copy()
    np.testing.assert_array_equal(to_numpy(t, strided=True), a)


def test_setitem_through_a_view_writes_self():
    t = fc.zeros(3, 4)
    v = t[1:]
    v[[0, 1], [3, 0]] = 5.0
    assert t.tolist() == [[0.0] * 4, [0.0, 0.0, 0.0, 5.0], [5.0, 0.0, 0.0, 0.0]]
    t.t()[[1, 2]] = 1.0  # columns 1 and 2, through a transposed view
    assert t[:, 1].tolist() == [1.0, 1.0, 1.0] and t[:, 2].tolist() == [1.0, 1.0, 1.0]


def test_index_put_matches_torch_and_numpy():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((3, 4, 5))
    cases = [  # None stands for a whole dim
        ((np.array([0, 0, 2]),), rng.standard_normal((3, 4, 5))),
        ((None, np.array([1, 1, 3])), rng.standard_normal((3, 3, 5))),
        ((np.array([0, 2]), None, np.array([4, 4])), rng.standard_normal((2, 4))),
        ((np.array([[0], [2]]), np.array([1, 1])), rng.standard_normal(5)),  # values broadcast
        ((MASK_34,), rng.standard_normal(5)),
        ((np.array([0, 1, 2]), MASK_ROWS), np.array(2.0)),
        ((np.array([2, -3]), np.array([-1, 1]), np.array([0, 0])), np.array([1.0, 2.0])),
    ]
    for indices, values in cases:
        fi = tuple(None if i is None else fc.tensor(i) for i in indices)
        np_index = tuple(slice(None) if i is None else i for i in indices)
        for accumulate in (False, True):
            t = fc.tensor(base)
            assert t.index_put_(fi, fc.tensor(values), accumulate=accumulate) is t
            want = base.copy()
            if accumulate:
                np.add.at(want, np_index, values)
            else:
                want[np_index] = values
            np.testing.assert_allclose(to_numpy(t, strided=True), want, rtol=1e-12)
            if all(i is not None for i in indices):  # torch's index_put_ takes no None
                ti = tuple(torch.from_numpy(i) for i in indices)
                x = torch.from_numpy(base.copy()).index_put_(ti, torch.from_numpy(values), accumulate=accumulate)
                np.testing.assert_allclose(to_numpy(t, strided=True), x.numpy(), rtol=1e-12)


def test_index_put_out_of_place():
    t = fc.zeros(3)
    idx = (fc.tensor([0, 0, 2]),)
    vals = fc.tensor([1.0, 2.0, 3.0])
    assert t.index_put(idx, vals, accumulate=True).tolist() == [3.0, 0.0, 3.0]
    assert fc.index_put(t, idx, vals).tolist() == [2.0, 0.0, 3.0]
    assert fc.index_put(t, [fc.tensor([1])], fc.tensor(5.0)).tolist() == [0.0, 5.0, 0.0]
    assert t.tolist() == [0.0, 0.0, 0.0]
    assert fc.index_put_(t, idx, vals, True) is t and t.tolist() == [3.0, 0.0, 3.0]


def test_bool_and_uint8_accumulate():
    b = fc.zeros(3, dtype=fc.bool).index_put_((fc.tensor([0, 0]),), fc.tensor([True, False]), accumulate=True)
    assert b.tolist() == [True, False, False]
    u = fc.zeros(3, dtype=fc.uint8).index_put_((fc.tensor([1, 1]),), fc.tensor([200, 100], dtype=fc.uint8), True)
    assert u.tolist() == [0, 44, 0]  # wraps like torch


def test_uint8_index_is_a_deprecated_mask():
    t = fc.tensor(A345)
    m = fc.tensor(MASK_34.astype(np.uint8))
    with pytest.warns(UserWarning, match=r"\[getitem\] indexing with a uint8 tensor is deprecated"):
        got = t[m]
    np.testing.assert_array_equal(to_numpy(got, strided=True), A345[MASK_34])
    with pytest.warns(UserWarning, match="uint8"):
        t[m] = 0.0
    assert to_numpy(t, strided=True)[MASK_34].sum() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert t[fc.tensor(1, dtype=fc.uint8)].shape == (1, 3, 4, 5)  # 0-dim: a bool, no warning
        assert t.index_put_((m,), fc.tensor(1.0, dtype=fc.float64)) is t  # the op itself does not warn


def test_zero_dim_and_empty_self():
    s = fc.tensor(5.0)
    assert s[True].tolist() == [5.0] and s[False].shape == (0,)
    assert s[None, True].shape == (1, 1)
    e = fc.zeros(0, 3)
    assert e[fc.tensor([], dtype=fc.bool)].shape == (0, 3)
    assert e[[]].shape == (0, 3) and e[:, [2, 0]].shape == (0, 2)
    e[:, [1]] = 1.0
    with pytest.raises(IndexError, match=r"\[index\] index 0 is out of bounds for dimension 0 with size 0"):
        e[[0]]


def test_index_op_docstrings_run():
    for fn in (fc.Tensor.__getitem__, fc.Tensor.index_put_):
        finder = doctest.DocTestFinder()
        runner = doctest.DocTestRunner()
        for test in finder.find(fn.__doc__ or "", fn.__name__, globs={"flambeau_core": fc}):
            runner.run(test)
        assert runner.failures == 0 and runner.tries > 0


def test_advanced_indexing_errors():
    t = fc.zeros(3, 4)
    with pytest.raises(IndexError, match=r"\[index\] index 3 is out of bounds for dimension 0 with size 3"):
        t[[0, 3]]
    with pytest.raises(IndexError, match=r"\[index\] index -5 is out of bounds for dimension 1 with size 4"):
        t[:, fc.tensor([-5])]
    with pytest.raises(IndexError, match=r"\[index\] index 9 is out of bounds for dimension 1 with size 4"):
        t[[0], [9]]
    with pytest.raises(IndexError, match=r"\[index_put_\] index 9 is out of bounds for dimension 0 with size 3"):
        t[[9]] = 1.0
    with pytest.raises(IndexError, match=r"\[index_put_\] index -4 is out of bounds"):
        t.index_put_((fc.tensor([-4]),), fc.tensor(1.0))
    assert t.tolist() == [[0.0] * 4] * 3  # nothing was written
    for bad in (fc.tensor([0.0]), fc.tensor(1.0), fc.tensor([0], dtype=fc.int16), fc.tensor([0], dtype=fc.int8)):
        with pytest.raises(IndexError, match=r"\[index\] tensors used as indices must be int64, int32, bool or uint8"):
            t[bad]
    with pytest.raises(IndexError, match=r"must be int64, int32, bool or uint8 tensors, got float32 for index 1"):
        t.index_put_((fc.tensor([0]), fc.tensor([0.0])), fc.tensor(1.0))
    with pytest.raises(
        IndexError, match=r"\[index\] the shape \(2,\) of the mask at index 0 does not match the shape \(3,\)"
    ):
        t[fc.tensor([True, False])]
    with pytest.raises(IndexError, match=r"mask at index 1 does not match the shape \(4,\).*\(3, 4\) at dimension 1"):
        t[:, fc.tensor([True])]
    with pytest.raises(
        IndexError,
        match=r"\[index\] shape mismatch: indexing tensors could not be broadcast together with shapes \(2,\), \(3,\)",
    ):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match=r"\[getitem\] too many indices for a tensor of dimension 2 \(got 3\)"):
        t[[0], 0, 0]
    with pytest.raises(IndexError, match=r"\[getitem\] too many indices for a tensor of dimension 2 \(got 3\)"):
        t[fc.ones(3, 4, dtype=fc.bool), 0]
    with pytest.raises(IndexError, match=r"\[index_put_\] too many indices for a tensor of dimension 2 \(got 3\)"):
        t.index_put_((fc.tensor([0]),) * 3, fc.tensor(1.0))
    with pytest.raises(IndexError, match=r"\[setitem\] an index can only have a single ellipsis"):
        t[..., [0], ...] = 1.0
    with pytest.raises(TypeError, match=r"\[getitem\] a list index must hold only ints or bools"):
        t[[0, None]]
    with pytest.raises(TypeError, match=r"\[getitem\] a list index must hold only ints or bools"):
        t[[0, "a"]]
    with pytest.raises(TypeError, match=r"\[getitem\] only integers, slices.*got str"):
        t["a", [0]]
    with pytest.raises(TypeError, match=r"\[setitem\] only integers, slices.*got float"):
        t[[0], 1.5] = 1.0
    with pytest.raises(IndexError, match=r"\[getitem\] index 9223372036854775808 does not fit in int64"):
        t[2**63, [0]]


def test_index_put_errors():
    t = fc.zeros(3, 4)
    i = fc.tensor([0, 1])
    with pytest.raises(TypeError, match=r"\[index_put_\] values dtype float64 must match self dtype float32"):
        t.index_put_((i,), fc.zeros(4, dtype=fc.float64))
    with pytest.raises(
        ValueError,
        match=r"\[index_put_\] shape mismatch: values of shape \(3,\) cannot be broadcast to the indexing result of "
        r"shape \(2, 4\)",
    ):
        t.index_put_((i,), fc.zeros(3))
    with pytest.raises(ValueError, match=r"\[index_put_\] shape mismatch: values of shape \(2, 1, 4\)"):
        t.index_put_((i,), fc.zeros(2, 1, 4))  # the op does not drop leading size-1 dims (x[i] = v does)
    with pytest.raises(ValueError, match=r"\[index_put_\] shape mismatch: values of shape \(3,\)"):
        t[[0, 1]] = fc.ones(3)
    with pytest.raises(ValueError, match=r"\[index_put_\] expected at least one index tensor"):
        t.index_put_((None,), fc.tensor(1.0))
    with pytest.raises(ValueError, match=r"\[index_put_\] expected at least one index tensor"):
        t.index_put_((), fc.tensor(1.0))
    with pytest.raises(IndexError, match=r"\[index_put_\] index 0 is a 0-dim bool tensor"):
        t.index_put_((fc.tensor(True),), fc.tensor(1.0))
    with pytest.raises(TypeError, match=r"\[index_put_\] indices must be a tuple or list of tensors, got Tensor"):
        t.index_put_(i, fc.tensor(1.0))
    with pytest.raises(TypeError, match=r"\[index_put_\] indices must be tensors \(or None\), element 1 is a list"):
        t.index_put_((i, [0, 1]), fc.tensor(1.0))
    with pytest.raises(TypeError, match=r"\[index_put\] indices must be a tuple or list of tensors, got int"):
        t.index_put(0, fc.tensor(1.0))
    with pytest.raises(TypeError):
        t.index_put_((i,), 1.0)  # values must be a tensor, as in PyTorch
    e = fc.zeros(4).expand(3, 4)
    with pytest.raises(RuntimeError, match=r"\[index_put_\] cannot write into an expanded tensor.*clone\(\) it first"):
        e[[0, 1]] = 1.0
    with pytest.raises(RuntimeError, match=r"\[index_put_\] cannot write into an expanded tensor"):
        e.index_put_((i,), fc.tensor(1.0), accumulate=True)
    assert e.tolist() == [[0.0] * 4] * 3
    with pytest.raises(TypeError, match=r"\[setitem\] can assign a Tensor or a number, got str"):
        t[[0]] = "x"


def test_index_shapes_that_overflow_raise_instead_of_allocating():
    x = fc.zeros(3, 3)
    i = fc.zeros(1, dtype=fc.int64)
    rows, cols = i.view(1, 1).expand(2**40, 1), i.view(1, 1).expand(1, 2**40)
    with pytest.raises(RuntimeError, match=r"shape \(1099511627776, 1099511627776\) is too large"):
        x[rows, cols]
    with pytest.raises(RuntimeError, match=r"shape \(1099511627776, 1099511627776\) is too large"):
        x[rows, cols] = 1.0
    with pytest.raises(RuntimeError, match=r"\[index\].*\(4611686018427387904,\)"):
        x[i.expand(2**62)]


@pytest.mark.parametrize("form", ["read", "write"])
def test_range_index_as_torch(form):
    labels = [1, 2, 3]
    if form == "read":
        want = torch.arange(12).view(3, 4)[range(3), labels].tolist()
        assert fc.arange(12).view(3, 4)[range(3), labels].tolist() == want
    else:
        x, y = fc.zeros(3, 4), torch.zeros(3, 4)
        y[range(3), torch.tensor(labels)] = 5.0
        x[range(3), fc.tensor(labels)] = 5.0
        assert x.tolist() == y.tolist()


class _Seq:
    """A minimal sequence (len and getitem only), as PyTorch reads any non-str sequence."""

    def __init__(self, *items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


# (the index on flambeau, the same index on torch)
SEQUENCE_INDICES = {
    "range": lambda m: range(1, 3),
    "range_step_neg": lambda m: range(2, -1, -2),
    "range_negative": lambda m: range(-3, 0),
    "range_empty": lambda m: range(0),
    "range_then_list": lambda m: (range(3), [1, 2, 3]),
    "list_then_range": lambda m: ([0, 2], range(2)),
    "range_range": lambda m: (range(3), range(3)),
    "slice_range": lambda m: (slice(None), range(0, 4, 2)),
    "ellipsis_range": lambda m: (..., range(2)),
    "none_range": lambda m: (None, range(2)),
    "numpy_int": lambda m: np.array([0, 2]),
    "numpy_int32_2d": lambda m: np.array([[0, 1], [2, 2]], dtype=np.int32),
    "numpy_bool": lambda m: np.array([True, False, True]),
    "numpy_float": lambda m: np.array([0.5, 2.0]),  # truncated to int64, as PyTorch
    "deque": lambda m: __import__("collections").deque([2, 0]),
    "array_array": lambda m: __import__("array").array("l", [0, 2]),
    "custom_sequence": lambda m: _Seq(1, 0),
    "bool_sequence": lambda m: _Seq(True, False, True),
    "int_and_custom": lambda m: (1, _Seq(3, 0)),
}


@pytest.mark.parametrize("name", sorted(SEQUENCE_INDICES))
def test_sequence_index_as_torch(name):
    make = SEQUENCE_INDICES[name]
    x, y = fc.arange(12).view(3, 4), torch.arange(12).view(3, 4)
    got, want = x[make(fc)], y[make(torch)]
    assert got.tolist() == want.tolist() and tuple(got.shape) == tuple(want.shape)
    x, y = fc.zeros(3, 4), torch.zeros(3, 4)
    x[make(fc)] = 7.0
    y[make(torch)] = 7.0
    assert x.tolist() == y.tolist()
    x[make(fc)] = fc.tensor(3.0)  # a tensor value too
    y[make(torch)] = torch.tensor(3.0)
    assert x.tolist() == y.tolist()


def test_list_of_tuples_is_one_index_tensor():
    # Note [Indexing from Python]: a list is always one index (PyTorch 2.13 still reads this one as a tuple,
    # with a deprecation warning, and has announced the tensor reading).
    x, y = fc.arange(12).view(3, 4), torch.arange(12).view(3, 4)
    assert x[[(0, 1), (1, 2)]].tolist() == y[torch.tensor([(0, 1), (1, 2)])].tolist()
    assert x[[range(2), range(1, 3)]].tolist() == y[torch.tensor([[0, 1], [1, 2]])].tolist()


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence:UserWarning")  # torch's, for its str and _Seq
def test_sequence_index_errors_as_torch():
    x, y = fc.zeros(3, 4), torch.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for dimension 0 with size 3"):
        x[range(4)]
    with pytest.raises(IndexError, match="index 3 is out of bounds"):
        y[range(4)]
    with pytest.raises(IndexError, match=r"index 4 is out of bounds"):
        x[range(3), range(2, 5)] = 1.0
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        y[range(3), range(2, 5)] = 1.0
    with pytest.raises(IndexError, match=r"shape mismatch.*\(3,\), \(5,\)"):
        x[range(3), range(5)]
    with pytest.raises(IndexError, match="shape mismatch"):
        y[range(3), range(5)]
    with pytest.raises(ValueError, match=r"\[getitem\] a range index must hold only ints.*does not fit in int64"):
        x[range(2**64, 2**64 + 1)]
    with pytest.raises(ValueError, match="Overflow"):
        y[range(2**64, 2**64 + 1)]
    with pytest.raises(TypeError, match=r"\[getitem\] a _Seq index must hold only ints or bools"):
        x[_Seq("a", "b")]
    with pytest.raises(TypeError):
        y[_Seq("a", "b")]
    with pytest.raises(TypeError, match=r"\[setitem\] a deque index must hold only ints or bools"):
        x[__import__("collections").deque([0, None])] = 1.0
    for s in ("ab", b"ab"):  # str and bytes are not sequences of indices
        with pytest.raises(TypeError, match=r"\[getitem\] only integers, slices"):
            x[s]
        with pytest.raises(TypeError):
            y[s]
    with pytest.raises(TypeError, match=r"\[getitem\] only integers, slices.*got dict"):
        x[{0: 1}]


def test_numpy_scalars_are_ints_not_index_tensors():
    x, y = fc.arange(12).view(3, 4), torch.arange(12).view(3, 4)
    for make in (lambda: np.int64(1), lambda: np.int32(2), lambda: np.array(1)):
        got, want = x[make()], y[make()]
        assert got.tolist() == want.tolist() and tuple(got.shape) == tuple(want.shape)


@pytest.mark.parametrize(
    "data",
    [
        range(5),
        range(0),
        range(5, 0),
        range(6, 0, -2),
        range(2**63 - 3, 2**63, 2),  # stop beyond int64: the generic path
        range(-(2**63), -(2**63) + 2),
        [range(2), range(2)],
        (range(1), [3]),
        _Seq(1, 2),
        _Seq(_Seq(1.5), [2]),
    ],
    ids=[
        "range",
        "empty",
        "empty_backwards",
        "step",
        "near_int64_max",
        "int64_min",
        "list_of_ranges",
        "tuple_mixed",
        "custom",
        "nested_custom",
    ],
)
def test_tensor_and_as_tensor_of_sequences(data):
    want = torch.tensor(data)
    for make in (fc.tensor, fc.as_tensor):
        got = make(data)
        assert got.tolist() == want.tolist() and str(got.dtype) == str(want.dtype).replace("torch", "flambeau")
    for fdt, tdt in ((fc.float64, torch.float64), (fc.float32, torch.float32), (fc.bool, torch.bool)):
        got = fc.tensor(data, dtype=fdt)
        assert got.tolist() == torch.tensor(data, dtype=tdt).tolist() and got.dtype == fdt
    with pytest.raises(TypeError, match=r"\[tensor\] expected numbers"):
        fc.tensor(_Seq("a"))


def test_as_tensor_returns_a_matching_tensor_itself():
    t = fc.arange(3)
    assert fc.as_tensor(t) is t and fc.as_tensor(t, dtype=fc.int64, device=t.device) is t
    f = fc.as_tensor(t, dtype=fc.float32)
    assert f.dtype == fc.float32 and f.tolist() == torch.as_tensor(torch.arange(3), dtype=torch.float32).tolist()
    a = np.arange(3)
    assert fc.as_tensor(a).tolist() == torch.as_tensor(a).tolist()
    assert fc.as_tensor(2.5).item() == torch.as_tensor(2.5).item()


def test_python_and_cpu_indices_follow_self_to_its_device():
    # Made on the default device; indexed with indices built on the cpu (as PyTorch takes cpu
    # indices for a cuda tensor), and the other way round.
    x, y = fc.arange(12).view(3, 4), torch.arange(12).view(3, 4)
    cpu_idx = fc.tensor([2, 0], device="cpu")
    for index in (range(2), [2, 0], cpu_idx, (cpu_idx, range(2)), fc.tensor([True, False, True], device="cpu")):
        tindex = torch.tensor(index.tolist()) if isinstance(index, fc.Tensor) else index
        if isinstance(index, tuple):
            tindex = (torch.tensor(index[0].tolist()), index[1])
        assert to_host(x[index]).tolist() == y[tindex].tolist()
        z, w = fc.zeros(3, 4), torch.zeros(3, 4)
        z[index] = 1.0
        w[tindex] = 1.0
        assert to_host(z).tolist() == w.tolist()
    c = fc.arange(12, device="cpu").view(3, 4)
    assert c[range(1, 3), [0, 1]].tolist() == y[range(1, 3), [0, 1]].tolist()
    assert c[True, [0]].tolist() == y[True, [0]].tolist()


@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("np_dtype", [np.float32, np.int64, np.bool_, np.uint8])
def test_as_tensor_shares_a_numpy_arrays_memory_as_torch(np_dtype):
    for shape in [(3,), (2, 3), ()]:
        arrays = [np.zeros(shape, dtype=np_dtype) for _ in range(2)]
        got, want = fc.as_tensor(arrays[0]), torch.as_tensor(arrays[1])
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1] and got.shape == want.shape
        for a in arrays:
            a.fill(1)
        assert got.tolist() == want.tolist()
        got.fill_(0)
        want.fill_(0)
        assert arrays[0].tolist() == arrays[1].tolist()
    a = np.arange(4.0)
    cast = fc.as_tensor(a, dtype=fc.float32)  # another dtype: a copy, as in torch
    a[0] = 9.0
    assert cast[0].item() == 0.0 and torch.as_tensor(a, dtype=torch.float32)[0].item() == 9.0
    ro = np.arange(3)
    ro.setflags(write=False)
    assert fc.as_tensor(ro).tolist() == [0, 1, 2]  # read-only: copied (flambeau tensors are writable)
    assert fc.as_tensor(np.arange(6)[::2]).tolist() == [0, 2, 4]  # strided: copied
    assert fc.as_tensor(np.zeros((0, 2))).shape == (0, 2)
