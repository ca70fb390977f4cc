"""Views, set_ and resize_ of tensors of many dims, against PyTorch: a TensorImpl holds the sizes and
strides of up to 5 dims inline and more on the heap (Note [Inline sizes and strides]), and a view kernel
builds its shape on the stack (8 dims, more on the heap), so each op is checked on both sides of both
limits and across them: shapes, strides, storage offsets, values, shared memory, and the errors."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices


def pair(*shape):
    """The same arange tensor in flambeau and in PyTorch."""
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return fc.tensor(a), torch.tensor(a)


def assert_same_view(ours, theirs, base=None):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride())
    assert ours.storage_offset() == theirs.storage_offset()
    np.testing.assert_array_equal(to_numpy(ours, strided=True), theirs.numpy())
    if base is not None:
        assert ours._is_view
        assert ours.data_ptr() == base.data_ptr() + 4 * (ours.storage_offset() - base.storage_offset())


# 4 to 6 dims cross the TensorImpl's inline limit (5), 7 to 10 the view kernels' (8).
DIMS = [1, 4, 5, 6, 7, 8, 9, 10]


def shape_of(nd):
    return tuple(2 if d % 3 else 3 for d in range(nd))


@pytest.mark.parametrize("nd", DIMS)
def test_select_and_int_index(nd):
    x, t = pair(*shape_of(nd))
    assert_same_view(x[1], t[1], x)  # the x[i] fast path (one dim fewer)
    assert_same_view(x[-1], t[-1], x)
    assert_same_view(x.select(nd - 1, 1), t.select(nd - 1, 1), x)
    assert_same_view(fc.select(x, nd // 2, -2), torch.select(t, nd // 2, -2), x)


@pytest.mark.parametrize("nd", DIMS)
def test_slice_narrow_and_getitem(nd):
    x, t = pair(*shape_of(nd))
    assert_same_view(x[1:], t[1:], x)
    assert_same_view(x[..., ::2], t[..., ::2], x)
    assert_same_view(x.narrow(nd - 1, 1, 1), t.narrow(nd - 1, 1, 1), x)
    key = (slice(None, None, -1),) if nd == 1 else (1, Ellipsis, slice(1, None))
    if nd == 1:
        assert_same_view(x[1:2], t[1:2], x)
    else:
        assert_same_view(x[key], t[key], x)


@pytest.mark.parametrize("nd", DIMS)
def test_transpose_permute(nd):
    x, t = pair(*shape_of(nd))
    assert_same_view(x.transpose(0, -1), t.transpose(0, -1), x)
    dims = list(range(nd))[::-1]
    assert_same_view(x.permute(*dims), t.permute(*dims), x)
    if nd > 1:
        assert_same_view(x.mT, t.mT, x)


@pytest.mark.parametrize("nd", DIMS)
def test_unsqueeze_squeeze_across_the_limits(nd):
    x, t = pair(*shape_of(nd))
    for d in (0, nd, -1):
        assert_same_view(x.unsqueeze(d), t.unsqueeze(d), x)
    ones = x.view(*shape_of(nd), 1, 1, 1)  # 3 more dims: crosses a limit for nd in 3..8
    assert_same_view(ones, t.view(*shape_of(nd), 1, 1, 1), x)
    assert_same_view(ones.squeeze(), t.view(*shape_of(nd), 1, 1, 1).squeeze(), x)
    assert_same_view(ones.squeeze(-2), t.view(*shape_of(nd), 1, 1, 1).squeeze(-2), x)


@pytest.mark.parametrize("nd", DIMS)
def test_expand_view_as_strided(nd):
    x, t = pair(*shape_of(nd))
    grown = (4, 2, *shape_of(nd))
    assert_same_view(x.expand(*grown), t.expand(*grown), x)
    assert_same_view(x.view(-1), t.view(-1), x)
    flat, ft = x.view(-1), t.view(-1)
    assert_same_view(flat.view(*shape_of(nd)), ft.view(*shape_of(nd)), x)
    sizes, strides = (2,) * nd, (1,) * nd
    assert_same_view(x.as_strided(sizes, strides, 1), t.as_strided(sizes, strides, 1), x)


@pytest.mark.parametrize(
    ("shape", "sizes"),
    [
        ((2, 3), (3, 2, 3)),
        ((2, 3), (1, 2, 3)),
        ((2, 3), (1, 1, 2, 3)),
        ((2, 3), (4, 1, 2, 3)),
        ((2, 3), (1, 4, 2, 3)),
        ((2, 3), (0, 2, 3)),
        ((3, 1), (1, 3, 4)),
        ((1, 3), (1, 5, 3)),
        ((), (1,)),
        ((), (1, 1)),
        ((), (2, 1)),
        ((2, 3), (1, 1, 1, 1, 1, 1, 2, 3)),
    ],
)
def test_expand_strides_of_new_dims(shape, sizes):
    """A new dim of size 1 takes the stride of a contiguous dim there (PyTorch's), any other new dim 0."""
    x, t = pair(*shape)
    assert_same_view(x.expand(*sizes), t.expand(*sizes), x)
    if len(shape) == 2:  # the new dim's stride follows the next dim's, whatever its layout
        assert_same_view(x.t().expand(1, *sizes[-2:][::-1]), t.t().expand(1, *sizes[-2:][::-1]), x)
    assert x.expand(*sizes).is_contiguous() == t.expand(*sizes).is_contiguous()


def test_views_of_sixteen_dims_and_back():
    x, t = pair(*(2,) * 16)
    v, w = x, t
    for _ in range(12):  # 16 dims down to 4 by x[i]: heap to inline
        v, w = v[1], w[1]
        assert_same_view(v, w, x)
    for d in range(12):  # and up again by unsqueeze: inline to heap
        v, w = v.unsqueeze(d), w.unsqueeze(d)
        assert_same_view(v, w, x)
    assert_same_view(v.permute(*range(15, -1, -1)), w.permute(*range(15, -1, -1)), x)
    v[(0,) * 16] = -1.0  # the views still write the shared storage
    w[(0,) * 16] = -1.0
    np.testing.assert_array_equal(to_numpy(x), t.numpy())


def geometry(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


@pytest.mark.parametrize(
    "sizes",
    [
        [(2, 3), (1, 2, 1, 2, 1, 2, 1), (3, 2), ()],  # inline -> heap -> inline -> 0-d
        [(2,) * 6, (2,) * 7, (4,) * 3, (1,) * 9, (5,)],  # heap -> heap -> inline -> heap -> inline
    ],
)
def test_resize_across_the_inline_limit(sizes):
    x, t = fc.zeros(1), torch.zeros(1)
    for size in sizes:
        x.resize_(size)
        t.resize_(size)
        assert geometry(x) == geometry(t)
        x.fill_(2.0)
        assert float(x.sum()) == 2.0 * t.numel()
    channels = fc.zeros(2, 3, 4, 5, 6)
    channels.resize_(2, 3, 4, 5, 6, 7)  # grows past the limit, keeps the dtype and device
    assert geometry(channels) == geometry(torch.zeros(2, 3, 4, 5, 6).resize_(2, 3, 4, 5, 6, 7))


def test_set_across_the_inline_limit():
    big, big_t = pair(*(2,) * 8)
    x, t = fc.zeros(3), torch.zeros(3)
    x.set_(big.transpose(0, 7))
    t.set_(big_t.transpose(0, 7))
    assert geometry(x) == geometry(t)
    np.testing.assert_array_equal(to_numpy(x, strided=True), t.numpy())
    small, small_t = pair(2, 3)
    x.set_(small[1:])
    t.set_(small_t[1:])
    assert geometry(x) == geometry(t)
    np.testing.assert_array_equal(to_numpy(x, strided=True), t.numpy())


def test_as_strided_of_many_dims_keeps_its_checks():
    x, _ = pair(12)
    with pytest.raises(ValueError, match=r"\[as_strided\].*storage holding only 12"):
        x.as_strided((2,) * 7, (2,) * 7)
    with pytest.raises(ValueError, match=r"\[as_strided\] got 7 sizes but 6 strides"):
        x.as_strided((1,) * 7, (1,) * 6)
    too_large = r"shape \(1024, 1024, 1024, 1024, 1024, 1024, 1024\) is too large: the product of its sizes overflows"
    with pytest.raises(fc.FlambeauError, match=r"\[as_strided\] " + too_large):
        x.as_strided((2**10,) * 7, (0,) * 7)
    with pytest.raises(RuntimeError, match=r"\[as_strided\] size .* and offset 0 overflow int64"):
        x.as_strided((1,) * 5 + (2**20, 2), (1,) * 5 + (2**63 - 1, 1))


def test_expand_and_view_of_many_dims_keep_their_checks():
    x, _ = pair(1, 1, 1, 1, 1, 1, 1)
    too_large = r"shape \(1024, 1024, 1024, 1024, 1024, 1024, 1024\) is too large: the product of its sizes overflows"
    with pytest.raises(fc.FlambeauError, match=r"\[expand\] " + too_large):
        x.expand((2**10,) * 7)
    with pytest.raises(ValueError, match=r"\[expand\] cannot expand shape \(3, 1, 1, 1, 1, 1\) to \(4, 1, 1, 1, 1"):
        pair(3, 1, 1, 1, 1, 1)[0].expand(4, 1, 1, 1, 1, 1)
    y, _ = pair(*(2,) * 6)
    with pytest.raises(ValueError, match=r"\[view\] shape \(3, -1\) is invalid for input of size 64"):
        y.view(3, -1)
    with pytest.raises(ValueError, match=r"\[view\] cannot view a tensor of shape \(2, 2, 2, 2, 2, 2\)"):
        y.transpose(0, 5).view(-1)
    with pytest.raises(IndexError, match=r"\[select\] index 2 is out of bounds for dimension 5 with size 2"):
        y.select(5, 2)
    with pytest.raises(IndexError, match=r"\[unsqueeze\] dimension 8 out of range for a 6-d tensor"):
        y.unsqueeze(8)
    with pytest.raises(ValueError, match=r"\[permute\] dim 0 repeats"):
        y.permute(0, 0, 1, 2, 3, 4)
