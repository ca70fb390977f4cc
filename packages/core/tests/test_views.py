"""Views: view/reshape/transpose/permute/(un)squeeze/expand/flatten/narrow/select/as_strided
and basic indexing, checked against NumPy (shapes, strides, values, shared memory)."""

import flambeau_core as fc
import numpy as np
import pytest
from helpers import to_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.on_devices


def arange(*shape, dtype=np.float32):
    n = int(np.prod(shape)) if shape else 1
    a = np.arange(n, dtype=dtype).reshape(shape)
    return fc.tensor(a), a


def np_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


def test_view_shares_storage_and_infers_minus_one():
    t, a = arange(2, 3, 4)
    v = t.view(4, -1)
    assert v.shape == (4, 6)
    assert v._is_view and v.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(to_numpy(v, strided=True), a.reshape(4, 6))
    v[0, 0] = 100.0
    assert t[0, 0, 0].item() == 100.0
    assert t.view((24,)).shape == (24,)
    assert t.view([2, 12]).shape == (2, 12)
    assert t.view(-1).shape == (24,)


def test_view_errors():
    t, _ = arange(6)
    with pytest.raises(ValueError, match=r"\[view\] shape \(4, 5\) is invalid for input of size 6"):
        t.view(4, 5)
    with pytest.raises(ValueError, match="only one dimension can be inferred"):
        t.view(-1, -1)
    with pytest.raises(ValueError, match="invalid for input of size 6"):
        t.view(4, -1)
    m, _ = arange(3, 4)
    with pytest.raises(ValueError, match=r"\[view\].*reshape"):
        m.T.view(12)
    with pytest.raises(TypeError):
        t.view("a")


def test_reshape_copies_only_when_needed():
    t, a = arange(3, 4)
    r = t.reshape(2, 6)
    assert r.data_ptr() == t.data_ptr()
    tt = t.T
    r2 = tt.reshape(12)
    np.testing.assert_array_equal(to_numpy(r2, strided=True), a.T.reshape(12))
    assert r2.is_contiguous()
    assert fc.reshape(t, (4, 3)).shape == (4, 3)
    with pytest.raises(ValueError, match=r"\[reshape\] shape \(5,\) is invalid for input of size 12"):
        t.reshape(5)


def test_transpose_permute_T_mT():
    t, a = arange(2, 3, 4)
    np.testing.assert_array_equal(to_numpy(t.transpose(0, 2), strided=True), a.transpose(2, 1, 0))
    assert t.transpose(0, 2).stride() == np_strides(a.transpose(2, 1, 0))
    np.testing.assert_array_equal(to_numpy(t.permute(1, 2, 0), strided=True), a.transpose(1, 2, 0))
    np.testing.assert_array_equal(to_numpy(t.permute((2, 0, 1)), strided=True), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(to_numpy(fc.permute(t, (2, 0, 1)), strided=True), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(to_numpy(t.T, strided=True), a.T)
    np.testing.assert_array_equal(to_numpy(t.mT, strided=True), a.swapaxes(-1, -2))
    np.testing.assert_array_equal(to_numpy(fc.transpose(t, -1, 0), strided=True), a.swapaxes(-1, 0))
    with pytest.raises(ValueError, match=r"\[permute\]"):
        t.permute(0, 1)
    with pytest.raises(ValueError, match="repeats"):
        t.permute(0, 1, 1)
    with pytest.raises(IndexError, match=r"\[transpose\] dimension 3 out of range"):
        t.transpose(0, 3)
    with pytest.raises(ValueError, match=r"\[mT\]"):
        _ = fc.ones(3).mT


def test_unsqueeze_squeeze():
    t, a = arange(3, 1, 4)
    assert t.unsqueeze(0).shape == (1, 3, 1, 4)
    assert t.unsqueeze(-1).shape == (3, 1, 4, 1)
    assert t.unsqueeze(3).shape == (3, 1, 4, 1)
    assert fc.unsqueeze(t, 1).shape == (3, 1, 1, 4)
    assert t.squeeze().shape == (3, 4)
    assert t.squeeze(1).shape == (3, 4)
    assert t.squeeze(0).shape == (3, 1, 4)  # size != 1: no-op, as in PyTorch
    assert t.unsqueeze(0).squeeze((0, 2)).shape == (3, 4)
    assert fc.squeeze(t).shape == (3, 4)
    np.testing.assert_array_equal(to_numpy(t.squeeze(), strided=True), a.squeeze())
    s = fc.tensor(5.0)
    assert s.unsqueeze(0).shape == (1,)
    assert s.squeeze().shape == ()
    with pytest.raises(IndexError, match=r"\[unsqueeze\] dimension 4 out of range"):
        t.unsqueeze(4)
    with pytest.raises(IndexError, match=r"\[squeeze\]"):
        t.squeeze(3)


def test_expand():
    t, a = arange(3, 1)
    e = t.expand(2, 3, 4)
    assert e.shape == (2, 3, 4)
    assert e.stride() == (0, 1, 0)
    np.testing.assert_array_equal(to_numpy(e, strided=True), np.broadcast_to(a, (2, 3, 4)))
    assert t.expand(-1, 5).shape == (3, 5)
    assert t.expand_as(fc.zeros(3, 7)).shape == (3, 7)
    with pytest.raises(ValueError, match=r"\[expand\] cannot expand shape \(3, 1\) to \(4, 1\)"):
        t.expand(4, 1)
    with pytest.raises(ValueError, match="number of sizes"):
        t.expand(3)
    with pytest.raises(ValueError, match="new leading dim"):
        t.expand(-1, 3, 1)


def test_flatten_narrow_select_unbind():
    t, a = arange(2, 3, 4)
    assert t.flatten().shape == (24,)
    assert t.flatten(1).shape == (2, 12)
    assert t.flatten(0, 1).shape == (6, 4)
    assert fc.flatten(t, 1, 2).shape == (2, 12)
    np.testing.assert_array_equal(to_numpy(t.T.flatten(), strided=True), a.T.flatten())
    assert fc.tensor(3.0).flatten().shape == (1,)
    with pytest.raises(ValueError, match=r"\[flatten\]"):
        t.flatten(2, 1)
    np.testing.assert_array_equal(to_numpy(t.narrow(2, 1, 2), strided=True), a[:, :, 1:3])
    np.testing.assert_array_equal(to_numpy(fc.narrow(t, 0, -1, 1), strided=True), a[-1:])
    with pytest.raises(ValueError, match=r"\[narrow\]"):
        t.narrow(2, 3, 2)
    np.testing.assert_array_equal(to_numpy(t.select(1, -1), strided=True), a[:, -1])
    np.testing.assert_array_equal(to_numpy(fc.select(t, 2, 0), strided=True), a[:, :, 0])
    parts = t.unbind(1)
    assert len(parts) == 3
    np.testing.assert_array_equal(to_numpy(parts[2], strided=True), a[:, 2])
    x = fc.zeros(3)
    with pytest.raises(IndexError, match=r"\[select\] index 5 is out of bounds for dimension 0 with size 3"):
        x.select(0, 5)


def test_as_strided():
    t, a = arange(12)
    w = t.as_strided((3, 4), (1, 3))
    np.testing.assert_array_equal(to_numpy(w, strided=True), np.lib.stride_tricks.as_strided(a, (3, 4), (4, 12)))
    w2 = t.as_strided((2, 2), (4, 1), 1)
    np.testing.assert_array_equal(to_numpy(w2, strided=True), [[1, 2], [5, 6]])
    assert w2.storage_offset() == 1
    assert fc.as_strided(t, (2,), (1,), 10).tolist() == [10.0, 11.0]
    with pytest.raises(ValueError, match=r"\[as_strided\].*storage holding only 12"):
        t.as_strided((4, 4), (4, 1))
    with pytest.raises(ValueError, match=r"\[as_strided\]"):
        t.as_strided((2, 2), (1,))
    with pytest.raises(RuntimeError, match=r"\[as_strided\] shape \(1099511627776, 1099511627776\).*overflows int64"):
        t.as_strided((2**40, 2**40), (2**40, 2**40))
    with pytest.raises(
        RuntimeError, match=r"\[as_strided\] size \(1048576, 2\), stride \(9223372036854775807, 1\).*overflow"
    ):
        t.as_strided((2**20, 2), (2**63 - 1, 1))
    assert t[:: 2**62].tolist() == [0.0]
    assert t[3 :: 2**63 - 1].tolist() == [3.0]


def test_getitem_basic():
    t, a = arange(4, 5, 6)
    cases = [
        1,
        -1,
        (1, 2),
        (1, 2, 3),
        slice(1, 3),
        slice(None, None, 2),
        (slice(None), 2),
        (Ellipsis, 1),
        (None, 1),
        (1, None, slice(None, None, 3)),
        (Ellipsis, None),
        (slice(-3, None), Ellipsis, 0),
        (slice(10, 20),),
        (slice(-100, 2),),
        (),
        Ellipsis,
        (slice(3, 1),),
    ]
    for idx in cases:
        got = t[idx]
        want = a[idx]
        assert got.shape == want.shape, idx
        np.testing.assert_array_equal(to_numpy(got, strided=True), want)
        if got.numel() > 0:
            assert got.stride() == np_strides(want) or got.dim() == 0 or any(s == 1 for s in want.shape), idx
    assert t[1, 2, 3].item() == a[1, 2, 3]
    v = t[1]
    assert v._is_view
    assert t[...].data_ptr() == t.data_ptr() and t[...] is not t


NEGATIVE_STEP_KEYS = [
    np.s_[::-1],
    np.s_[::-2],
    np.s_[1::-1],
    np.s_[:0:-1],
    np.s_[5:1:-3],
    np.s_[-1:-4:-2],
    np.s_[1:3:-1],  # empty
    np.s_[100:-100:-1],  # clamped
    np.s_[:, ::-1],
    np.s_[::-1, 1],
    np.s_[None, ::-1, None, 2::-2],
    np.s_[..., ::-3],
    np.s_[::-1, [0, 2]],
    np.s_[[2, 0], ::-1],
    np.s_[::-2, np.array([True, False, True, True])],
]


@pytest.mark.parametrize("key", NEGATIVE_STEP_KEYS, ids=repr)
def test_negative_slice_steps_match_numpy(key):
    # PyTorch refuses them (ValueError); flambeau reads them as NumPy and the Array API standard do.
    # getitem gives a copy, setitem writes through.
    t, a = arange(5, 4)
    got = t[key]
    np.testing.assert_array_equal(to_numpy(got), a[key])
    assert got.shape == a[key].shape
    if got.numel():  # a copy: writing to it leaves t alone
        got.fill_(-1.0)
        np.testing.assert_array_equal(to_numpy(t), a)
    # setitem: a number, and a tensor of the indexed shape (where no tensor index comes with the slice)
    t[key] = 7.0
    b = a.copy()
    b[key] = 7.0
    np.testing.assert_array_equal(to_numpy(t), b)
    if not any(isinstance(k, list | np.ndarray) for k in (key if isinstance(key, tuple) else (key,))):
        value = np.arange(a[key].size, dtype=np.float32).reshape(a[key].shape) + 100
        t[key] = fc.tensor(value)
        b[key] = value
        np.testing.assert_array_equal(to_numpy(t), b)


def test_negative_slice_steps_setitem_broadcast_overlap_and_errors():
    t, a = arange(3, 4)
    t[::-1, ::-2] = fc.tensor([1.0, 2.0])  # broadcast along the first dim
    a[::-1, ::-2] = np.array([1.0, 2.0])
    np.testing.assert_array_equal(to_numpy(t), a)
    t[::-1] = t  # the value is read before the write (NumPy's result too)
    a[::-1] = a.copy()
    np.testing.assert_array_equal(to_numpy(t), a)
    with pytest.raises(ValueError, match=r"\[setitem\] shape mismatch: value of shape \(3,\) cannot be broadcast"):
        t[::-1, ::-2] = fc.tensor([1.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match=r"\[setitem\] a slice with a negative step together with tensor"):
        t[::-1, [0, 1]] = fc.tensor([1.0, 2.0])


def test_getitem_errors():
    t, _ = arange(3, 4)
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for dimension 0 with size 3"):
        t[3]
    with pytest.raises(IndexError, match=r"index -5 is out of bounds for dimension 1 with size 4"):
        t[0, -5]
    with pytest.raises(IndexError, match="too many indices for a tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(ValueError, match="step"):
        t[::0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(TypeError, match="valid indices.*str"):
        t["a"]
    with pytest.raises(TypeError, match="float"):
        t[1.5]
    with pytest.raises(IndexError, match="too many indices for a tensor of dimension 0"):
        fc.tensor(1.0)[0]


def test_getitem_with_index_like_objects():
    t, a = arange(5)
    assert t[np.int64(2)].item() == 2.0
    assert t[fc.tensor(3)].item() == 3.0


def test_setitem():
    t = fc.zeros(3, 4)
    a = np.zeros((3, 4), np.float32)
    t[0] = 1.0
    a[0] = 1.0
    t[:, 1] = 2
    a[:, 1] = 2
    t[1:, 2:] = fc.tensor([[5.0, 6.0], [7.0, 8.0]])
    a[1:, 2:] = [[5.0, 6.0], [7.0, 8.0]]
    t[2, ::2] = fc.tensor(9.0)  # broadcast
    a[2, ::2] = 9.0
    t[..., -1] = True
    a[..., -1] = True
    np.testing.assert_array_equal(to_numpy(t, strided=True), a)
    v0 = t._version
    t[0, 0] = 3.0
    assert t._version > v0
    with pytest.raises(TypeError, match=r"\[setitem\]"):
        t[0] = "x"
    with pytest.raises(IndexError):
        t[5] = 1.0


def test_setitem_broadcasts_value():
    t = fc.zeros(3, 4)
    t[2, ::2] = fc.tensor([9.0])
    t[0] = fc.tensor([[1.0, 2.0, 3.0, 4.0]])[0]
    t[1:] = fc.tensor([5.0, 6.0, 7.0, 8.0])
    a = np.zeros((3, 4), np.float32)
    a[2, ::2] = [9.0]
    a[0] = [1, 2, 3, 4]
    a[1:] = [5, 6, 7, 8]
    np.testing.assert_array_equal(to_numpy(t, strided=True), a)
    t[0] = fc.ones(1, 1, 4)  # leading size-1 dims are dropped
    assert t[0].tolist() == [1.0] * 4
    with pytest.raises(
        ValueError,
        match=r"\[setitem\] shape mismatch: value of shape \(3,\) cannot be broadcast to the indexed shape \(4,\)",
    ):
        t[0] = fc.ones(3)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
)
def test_getitem_property(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = fc.tensor(a)
    items = []
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "none", "full"]))
        if kind == "int":
            items.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = data.draw(st.none() | st.integers(-n - 2, n + 2))
            stop = data.draw(st.none() | st.integers(-n - 2, n + 2))
            step = data.draw(st.none() | st.integers(1, 3))
            items.append(slice(start, stop, step))
        elif kind == "none":
            items.append(None)
            items.append(slice(None))
        else:
            items.append(slice(None))
    idx = tuple(items)
    want = a[idx]
    got = t[idx]
    assert got.shape == want.shape
    np.testing.assert_array_equal(to_numpy(got, strided=True), want)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_permute_reshape_property(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = fc.tensor(a)
    perm = data.draw(st.permutations(range(len(shape))))
    p = t.permute(*perm)
    ap = a.transpose(perm)
    np.testing.assert_array_equal(to_numpy(p, strided=True), ap)
    new_shape = data.draw(st.sampled_from([(-1,), (ap.size, 1), (1, -1)]))
    r = p.reshape(*new_shape)
    np.testing.assert_array_equal(to_numpy(r, strided=True), ap.reshape(new_shape))
    # view succeeds exactly when NumPy can reshape without copying
    try:
        v = p.view(*new_shape)
    except ValueError:
        v = None
    if v is not None:
        np.testing.assert_array_equal(to_numpy(v, strided=True), ap.reshape(new_shape))
        assert v.data_ptr() == p.data_ptr()


def _factorizations(n, max_len=3):
    """A few shapes with n elements."""
    out = [(n,), (1, n), (n, 1)]
    for d in range(2, n + 1):
        if n % d == 0:
            out.append((d, n // d))
            for e in range(2, n // d + 1):
                if (n // d) % e == 0:
                    out.append((d, e, n // d // e))
    return out


@settings(max_examples=80, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_view_strides_match_torch(shape, data):
    """view succeeds exactly when PyTorch's does, with the same strides, over permuted,
    sliced and expanded inputs."""
    import torch

    x = torch.arange(float(np.prod(shape))).reshape(shape)
    t = fc.arange(float(np.prod(shape))).reshape(shape)
    op = data.draw(st.sampled_from(["permute", "slice", "expand", "none"]))
    if op == "permute":
        perm = data.draw(st.permutations(range(len(shape))))
        x, t = x.permute(*perm), t.permute(*perm)
    elif op == "slice":
        d = data.draw(st.integers(0, len(shape) - 1))
        step = data.draw(st.integers(1, 2))
        x, t = x[(slice(None),) * d + (slice(None, None, step),)], t[(slice(None),) * d + (slice(None, None, step),)]
    elif op == "expand":
        x, t = x.unsqueeze(1).expand(-1, 2, *shape[1:]), t.unsqueeze(1).expand(-1, 2, *shape[1:])
    assert t.stride() == x.stride()
    new_shape = data.draw(st.sampled_from(_factorizations(x.numel())))
    try:
        want = x.view(new_shape)
    except RuntimeError:
        with pytest.raises(ValueError, match=r"\[view\]"):
            t.view(new_shape)
        return
    got = t.view(new_shape)
    assert got.shape == tuple(want.shape)
    assert got.stride() == want.stride()
    np.testing.assert_array_equal(to_numpy(got, strided=True), want.numpy())


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=4), data=st.data())
def test_expand_squeeze_unsqueeze_property(shape, data):
    """Against NumPy's broadcast_to / squeeze / expand_dims, including strides."""
    a = np.arange(float(np.prod(shape)) if shape else 1.0).reshape(shape)
    t = fc.tensor(a)
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    u = t.unsqueeze(dim)
    np.testing.assert_array_equal(to_numpy(u, strided=True), np.expand_dims(a, dim))
    np.testing.assert_array_equal(to_numpy(u.squeeze(dim), strided=True), a)
    np.testing.assert_array_equal(to_numpy(t.squeeze(), strided=True), a.squeeze())
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = [data.draw(st.sampled_from([s, 3, -1])) if s == 1 else data.draw(st.sampled_from([s, -1])) for s in shape]
    e = t.expand(*lead, *target)
    want = np.broadcast_to(a, (*lead, *[s if s != -1 else shape[i] for i, s in enumerate(target)]))
    assert e.shape == want.shape
    np.testing.assert_array_equal(to_numpy(e, strided=True), want)
    assert e.data_ptr() == t.data_ptr()


def test_views_made_and_dropped_on_other_threads():
    # Note [View blocks]: a view's block freed on another thread, or cached by a thread that then
    # exits, is reused or released without harm; every view still reads what NumPy does.
    import queue
    import threading

    a = np.arange(1200, dtype=np.float32).reshape(300, 4)
    x = fc.tensor(a, device="cpu")  # the threads run with the process's default device
    handoff: queue.Queue = queue.Queue()

    def make():
        for _ in range(20):
            handoff.put([x[i] for i in range(300)] + [x[:, 1], x.t(), x.view(4, 300)])
        handoff.put(None)

    seen = []

    def drop():
        while (views := handoff.get()) is not None:
            seen.append(views[7].tolist())
            del views

    workers = [threading.Thread(target=make), threading.Thread(target=drop)]
    workers += [threading.Thread(target=lambda: [x[i % 300] for i in range(2000)]) for _ in range(8)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert seen == [a[7].tolist()] * 20
    for i in (0, 123, -1):
        assert x[i].tolist() == a[i].tolist()
    assert x.t()[2].tolist() == a.T[2].tolist()
