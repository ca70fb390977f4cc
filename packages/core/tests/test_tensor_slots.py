"""The Tensor type's C slots (Note [Tensor slots]: x[i], len(x), x.shape), _C._stack_samples
(Note [Stacking samples]), a complex number written by x[...] = v, and size-0 boolean masks,
against PyTorch."""

from __future__ import annotations

import weakref

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from flambeau_core._trace import OpRecorder
from flambeau_core.profiler import profile

_DATA = np.arange(24, dtype=np.float32).reshape(4, 3, 2)


def _pair():
    return fc.tensor(_DATA), torch.tensor(_DATA)


@pytest.mark.parametrize("i", [0, 1, 3, -1, -4])
def test_int_index_is_torchs_view(i):
    x, tx = _pair()
    got, want = x[i], tx[i]
    assert got.tolist() == want.tolist() and got.shape == tuple(want.shape)
    assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
    assert got._is_view and got._storage_id == x._storage_id
    assert type(got) is fc.Tensor
    got.fill_(-1.0)  # a view: the write reaches x
    tx[i].fill_(-1.0)
    assert x.tolist() == tx.tolist()


def test_int_index_on_each_rank_and_dtype():
    for shape in [(5,), (2, 3), (3, 1, 2, 2)]:
        for dt in ("float32", "int64", "bool", "complex64"):
            t = torch.arange(int(np.prod(shape))).reshape(shape).to(getattr(torch, dt))
            x = fc.tensor(t.numpy())
            for i in range(-shape[0], shape[0]):
                assert x[i].tolist() == t[i].tolist() and x[i].dtype == getattr(fc, dt)


def test_int_index_errors_as_before():
    x, tx = _pair()
    for i in (4, -5, 10**6):
        with pytest.raises(IndexError, match=rf"\[getitem\] index {i} is out of bounds for dimension 0 with size 4"):
            x[i]
        with pytest.raises(IndexError):
            tx[i]
    with pytest.raises(IndexError, match=r"does not fit in int64"):
        x[2**70]
    with pytest.raises(IndexError, match=r"too many indices for a tensor of dimension 0"):
        fc.tensor(1.0)[0]
    with pytest.raises(IndexError):
        torch.tensor(1.0)[0]


def test_int_index_of_rows_the_fast_path_does_not_prefetch_matches_torch():
    # Note [Prefetching a sample]: rows past 16 KB, rows that are not contiguous, empty rows and meta
    # tensors are views as any other; the prefetch never changes a result.
    big = np.arange(3 * 5000, dtype=np.float32).reshape(3, 5000)  # 20 KB rows
    for x, tx in [
        (fc.tensor(big), torch.tensor(big)),
        (fc.tensor(_DATA).transpose(0, 1), torch.tensor(_DATA).transpose(0, 1)),  # strided rows
        (fc.zeros(3, 0, 2), torch.zeros(3, 0, 2)),
        (fc.tensor(_DATA).flatten(), torch.tensor(_DATA).flatten()),  # 0-d results
    ]:
        for i in range(-len(tx), len(tx)):
            got, want = x[i], tx[i]
            assert got.tolist() == want.tolist() and got.shape == tuple(want.shape)
            assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
            assert got.is_contiguous() == want.is_contiguous() and got._storage_id == x._storage_id
    meta, tmeta = fc.empty(4, 3, device="meta"), torch.empty(4, 3, device="meta")
    assert meta[-2].shape == tuple(tmeta[-2].shape) and meta[-2].device.type == "meta"
    with pytest.raises(IndexError, match=r"\[getitem\] index 4 is out of bounds for dimension 0 with size 4"):
        meta[4]


def test_int_index_objects_die_and_keep_their_identity():
    x, _ = _pair()
    ref = weakref.ref(x[1])
    assert ref() is None  # freed as soon as dropped: nothing else holds the new object
    views = [x[i % 4] for i in range(200)]
    refs = [weakref.ref(v) for v in views]
    for v in views:
        assert v.t_() is v  # each object is the one its impl maps back to (Note [Python Tensor identity])
    del v, views
    assert all(r() is None for r in refs)
    again = x[2]
    assert again.unsqueeze_(0) is again and again.shape == (1, 3, 2)


@pytest.mark.parametrize("how", ["plain", "weakref", "subclass", "while raising"])
def test_freeing_the_last_object_releases_the_storage(how):
    # Note [Tensor dealloc]: an exact Tensor object takes the slot's own path, one with a weak reference or
    # of a subclass pybind11's; each drops its impl (the bytearray's export goes with the storage) and
    # leaves the registry (the next object of a view is a new one, its own in-place results itself).
    buf = bytearray(64)
    base = fc.frombuffer(buf, dtype=fc.uint8).view(8, 8)
    view = base[3] if how != "subclass" else type("Sub", (fc.Tensor,), {})(base[3])
    del base
    called = []
    ref = weakref.ref(view, called.append) if how == "weakref" else None
    with pytest.raises(BufferError):
        buf.append(0)
    if how == "while raising":

        def fail(holder):
            v = holder.pop()  # the last reference: freed while the error propagates
            assert v.shape == (8,)
            raise KeyError("kept")

        holder = [view]
        del view
        with pytest.raises(KeyError, match="kept"):
            fail(holder)
    else:
        del view
    buf.append(0)  # nothing exports it any more
    assert len(buf) == 65
    if ref is not None:
        assert ref() is None and len(called) == 1
    x, _ = _pair()
    for _ in range(3):
        v = x[1]
        assert v.add_(0) is v and v.unsqueeze_(0) is v
        del v


def test_int_index_of_a_0d_bool_or_int_tensor_is_torchs():
    x, tx = _pair()
    for ours, theirs in [
        (fc.tensor(True), torch.tensor(True)),
        (fc.tensor(False), torch.tensor(False)),
        (fc.tensor(-1), torch.tensor(-1)),
        (fc.tensor(2, dtype=fc.int32), torch.tensor(2, dtype=torch.int32)),
    ]:
        assert x[ours].tolist() == tx[theirs].tolist() and x[ours].shape == tuple(tx[theirs].shape)
    with pytest.raises(IndexError):
        tx[torch.tensor(4)]
    with pytest.raises(IndexError, match=r"\[getitem\] index 4 is out of bounds for dimension 0 with size 4"):
        x[fc.tensor(4)]


def test_int_index_records_select_for_autograd():
    pytest.importorskip("flambeau_autograd")
    w = fc.tensor(_DATA).requires_grad_()
    tw = torch.tensor(_DATA, requires_grad=True)
    ours = w[-1] * w[1] + w[1]
    theirs = tw[-1] * tw[1] + tw[1]
    assert ours.requires_grad and w[0]._is_view
    ours.sum().backward()
    theirs.sum().backward()
    assert w.grad.tolist() == tw.grad.tolist()


def test_other_indices_take_the_general_path():
    x, tx = _pair()
    for index in [True, False, None, Ellipsis, np.int64(2), torch.tensor(1).item(), (1,), (1, -1), slice(1, 3)]:
        assert x[index].tolist() == tx[index].tolist(), index
        assert x[index].shape == tuple(tx[index].shape), index
    assert x[fc.tensor(2)].tolist() == tx[torch.tensor(2)].tolist()
    assert x[fc.tensor([2, 0])].tolist() == tx[torch.tensor([2, 0])].tolist()


def test_each_int_index_is_a_new_object_registered_as_any_other():
    x, _ = _pair()
    a, b = x[1], x[1]
    assert a is not b
    assert a.add_(0) is a  # the object is the one pybind11 knows for its impl (Note [Python Tensor identity])
    assert a.unsqueeze_(0) is a and a.shape == (1, 3, 2)


def test_int_index_is_reported_to_the_recorder_and_seen_by_the_profiler():
    x, tx = _pair()
    with OpRecorder() as rec:
        v = x[2]
    assert [c.name for c in rec.calls] == ["__getitem__"]
    assert rec.calls[0].args[0] is x and rec.calls[0].args[1] == 2 and rec.calls[0].result is v
    with profile() as prof:
        x[2]
    with torch.profiler.profile() as tprof:
        tx[2]
    ours = [e.name for e in prof.events()].count("aten::select")
    assert ours == [e.name for e in tprof.events()].count("aten::select") == 1


def test_subclasses_keep_their_getitem_and_inherit_the_rest():
    class Plain(fc.Tensor):
        pass

    class Own(fc.Tensor):
        def __getitem__(self, i):
            return ("own", i)

    x, tx = _pair()
    p, o = Plain(x), Own(x)
    assert p[1].tolist() == tx[1].tolist() and len(p) == 4 and p.shape == (4, 3, 2)
    assert o[1] == ("own", 1) and len(o) == 4


def test_len_and_shape_match_torch():
    for shape in [(4,), (0, 3), (2, 0), (1, 2, 3, 4)]:
        x, tx = fc.zeros(*shape), torch.zeros(*shape)
        assert len(x) == len(tx)
        assert x.shape == tuple(tx.shape) and type(x.shape) is fc.Size and type(tx.shape) is torch.Size
    assert fc.tensor(1.0).shape == () == tuple(torch.tensor(1.0).shape)
    with pytest.raises(TypeError, match=r"len\(\) of a 0-d tensor"):
        len(fc.tensor(1.0))
    with pytest.raises(TypeError, match=r"len\(\) of a 0-d tensor"):
        len(torch.tensor(1.0))
    x = fc.zeros(2, 3)
    x.t_()
    assert x.shape == (3, 2) and len(x) == 3  # read from the impl each time
    x.resize_(5)
    assert x.shape == (5,) and len(x) == 5
    with pytest.raises(AttributeError, match="not writable"):
        x.shape = (5,)
    with pytest.raises(AttributeError, match="not writable"):
        torch.zeros(5).shape = (5,)
    assert fc.Tensor.shape.__doc__


# ---- x[...] = a complex number (as PyTorch) ----

_COMPLEX_VALUES = [1j, 2 + 0j, 0.5 - 0j, -3 + 4j]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "bool", "complex64", "complex128"])
@pytest.mark.parametrize("advanced", [False, True])
def test_setitem_complex_number_matches_torch(dtype, advanced):
    for value in _COMPLEX_VALUES:
        x, tx = fc.zeros(4, dtype=getattr(fc, dtype)), torch.zeros(4, dtype=getattr(torch, dtype))
        idx, tidx = (fc.tensor([0, 2]), torch.tensor([0, 2])) if advanced else (1, 1)
        try:
            tx[tidx] = value
        except RuntimeError as e:
            want = str(e)
            with pytest.raises(RuntimeError) as got:
                x[idx] = value
            assert isinstance(got.value, fc.FlambeauError)
            # torch names its C++ type (float, int64_t, c10::Half); flambeau the dtype and the op.
            assert "cannot be converted to type" in want and "without overflow" in want
            assert str(got.value) == f"[setitem] value {value} cannot be converted to type {dtype} without overflow"
            assert x.tolist() == [0] * 4 if dtype != "bool" else x.tolist() == [False] * 4
            continue
        x[idx] = value
        assert x.tolist() == tx.tolist(), (value, dtype)


def test_setitem_complex_number_through_a_mask_and_a_slice():
    x, tx = fc.zeros(2, 3, dtype=fc.complex64), torch.zeros(2, 3, dtype=torch.complex64)
    x[x.real == 0] = 1 + 2j
    tx[tx.real == 0] = 1 + 2j
    x[:, 1:] = -1j
    tx[:, 1:] = -1j
    assert x.tolist() == tx.tolist()
    with pytest.raises(TypeError, match=r"\[setitem\] can assign a Tensor or a number, got str"):
        x[0] = "1j"


# ---- size-0 boolean masks (as PyTorch) ----

_EMPTY_MASK_CASES = [
    ((0,), lambda L: L.zeros(0, dtype=L.bool)),
    ((0, 3), lambda L: L.zeros(0, dtype=L.bool)),
    ((0, 3), lambda L: L.zeros(0, 3, dtype=L.bool)),
    ((3, 0), lambda L: (slice(None), L.zeros(0, dtype=L.bool))),
    ((3, 0), lambda L: L.zeros(3, 0, dtype=L.bool)),
    ((0, 0), lambda L: L.zeros(0, 0, dtype=L.bool)),
    ((2, 0, 4), lambda L: (slice(None), L.zeros(0, dtype=L.bool))),
    ((2, 0, 4), lambda L: L.zeros(2, 0, dtype=L.bool)),
    ((0, 3), lambda L: (L.zeros(0, dtype=L.bool), 1)),
    ((0, 3), lambda L: (L.zeros(0, dtype=L.bool), slice(0, 2))),
    ((0, 3), lambda L: (None, L.zeros(0, dtype=L.bool))),
    ((0, 3), lambda L: (Ellipsis, L.zeros(3, dtype=L.bool))),
    ((0,), lambda L: (L.zeros(0, dtype=L.bool), None)),
    ((3,), lambda L: L.zeros(3, dtype=L.bool)),
]


@pytest.mark.parametrize("case", range(len(_EMPTY_MASK_CASES)))
def test_size_0_mask_gives_torchs_empty_result(case):
    shape, index = _EMPTY_MASK_CASES[case]
    got, want = fc.zeros(*shape)[index(fc)], torch.zeros(*shape)[index(torch)]
    assert got.shape == tuple(want.shape) and got.tolist() == want.tolist()
    x, tx = fc.zeros(*shape), torch.zeros(*shape)
    x[index(fc)] = 1.0
    tx[index(torch)] = 1.0
    assert x.tolist() == tx.tolist()


@pytest.mark.parametrize(
    ("shape", "mask"), [((0, 3), (2,)), ((2, 3), (0,)), ((2, 3), (3,)), ((0, 3), (0, 2)), ((0,), (1,))]
)
def test_mask_shape_mismatch_is_torchs_index_error(shape, mask):
    with pytest.raises(IndexError, match=r"does not match the shape"):
        torch.zeros(*shape)[torch.zeros(*mask, dtype=torch.bool)]
    with pytest.raises(IndexError, match=r"\[index\] the shape .* of the mask at index 0 does not match the shape"):
        fc.zeros(*shape)[fc.zeros(*mask, dtype=fc.bool)]
    with pytest.raises(IndexError, match=r"does not match the shape"):
        fc.zeros(*shape)[fc.zeros(*mask, dtype=fc.bool)] = 1.0


# ---- _C._stack_samples (Note [Stacking samples]) ----


def test_stack_samples_is_torch_stack():
    x, tx = _pair()
    order = [3, 0, 2, 2, 1]
    got = _C._stack_samples([x[i] for i in order])
    want = torch.stack([tx[i] for i in order])
    assert got.tolist() == want.tolist() and got.shape == tuple(want.shape) and got.is_contiguous()
    labels = fc.tensor([5, 6, 7])
    assert _C._stack_samples(tuple(labels[i] for i in (2, 0))).tolist() == [7, 5]
    empty = _C._stack_samples([fc.zeros(0, 2)] * 3)
    assert empty.shape == (3, 0, 2) == tuple(torch.stack([torch.zeros(0, 2)] * 3).shape)
    got.fill_(0.0)  # a copy: x is untouched
    assert x.tolist() == tx.tolist()


def test_stack_samples_leaves_everything_else_to_stack():
    x, _ = _pair()

    class Sub(fc.Tensor):
        pass

    for samples in (
        [],
        [x[:, 0], x[:, 1]],  # not contiguous
        [x[0], x[1].to(fc.float64)],  # dtypes differ: stack promotes
        [x[0], x[1, :2]],  # shapes differ: stack's error
        [x[0], Sub(x[1])],
        [x[0], 1.0],
        (x[0] for _ in range(2)),
        fc.zeros(2, 3),
    ):
        assert _C._stack_samples(samples) is None
    with profile():
        assert _C._stack_samples([x[0], x[1]]) is None  # the profiler sees stack
    with OpRecorder():
        assert _C._stack_samples([x[0], x[1]]) is None  # the recorder sees stack


# ---- _C._stack_sample_fields (Note [Stacking samples]: tuples of tensors) ----


def _pairs(lib):
    x = (fc if lib == "fb" else torch).tensor(_DATA)
    y = (fc if lib == "fb" else torch).tensor([5, 6, 7, 8])
    return x, y


def test_stack_sample_fields_is_torch_stack_per_position():
    (x, y), (tx, ty) = _pairs("fb"), _pairs("torch")
    order = [3, 0, 2, 2]
    got = _C._stack_sample_fields([(x[i], y[i], x[i, 0]) for i in order])
    want = [
        torch.stack([tx[i] for i in order]),
        torch.stack([ty[i] for i in order]),
        torch.stack([tx[i, 0] for i in order]),
    ]
    assert type(got) is list and len(got) == 3
    for g, w in zip(got, want, strict=True):
        assert g.tolist() == w.tolist() and g.shape == tuple(w.shape) and g.is_contiguous()
        assert g._storage_id != x._storage_id and not g._is_view
    assert [g.dtype for g in got] == [fc.float32, fc.int64, fc.float32]
    one = _C._stack_sample_fields(((y[1],),))
    assert len(one) == 1 and one[0].tolist() == [6]


def test_stack_sample_fields_leaves_everything_else_to_collate():
    x, y = _pairs("fb")

    class Sub(fc.Tensor):
        pass

    for samples in (
        [],
        [(), ()],
        [x[0], x[1]],  # not tuples
        [[x[0], y[0]], [x[1], y[1]]],  # lists
        [(x[0], y[0]), (x[1],)],  # lengths differ
        [(x[0], y[0]), [x[1], y[1]]],
        [(x[0], 1), (x[1], 2)],  # a number
        [(x[0], y[0]), (x[1, :2], y[1])],  # shapes differ in one position
        [(x[0], y[0]), (x[1], y[1].double())],
        [(x[0], y[0]), (Sub(x[1]), y[1])],
        [(x[:, 0], y[0]), (x[:, 1], y[1])],  # not contiguous
        ((x[0], y[0]) for _ in range(2)),
    ):
        assert _C._stack_sample_fields(samples) is None
    with profile():
        assert _C._stack_sample_fields([(x[0], y[0])]) is None
    with OpRecorder():
        assert _C._stack_sample_fields([(x[0], y[0])]) is None


def test_stack_sample_fields_leaves_samples_requiring_grad_to_stack():
    pytest.importorskip("flambeau_autograd")
    x, y = _pairs("fb")
    w = x.clone().requires_grad_()
    assert _C._stack_sample_fields([(w[0], y[0]), (w[1], y[1])]) is None
