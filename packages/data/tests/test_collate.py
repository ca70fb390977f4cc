"""default_collate / default_convert against PyTorch's (outputs converted to plain lists)."""

from __future__ import annotations

import collections
import collections.abc

import flambeau_core as fc
import flambeau_data as data
import numpy as np
import pytest
import torch
from conftest import to_py
from torch.utils.data import default_collate as torch_collate  # noqa: E402
from torch.utils.data import default_convert as torch_convert  # noqa: E402

Point = collections.namedtuple("Point", ["x", "y"])


def _samples(tensor):
    """The same batches built with flambeau's or torch's tensor constructor."""
    return {
        "tensors": [tensor([1.0, 2.0]), tensor([3.0, 4.0]), tensor([5.0, 6.0])],
        "tuple": [(tensor([[1, 2], [3, 4]]), 0), (tensor([[5, 6], [7, 8]]), 1)],
        "floats": [0.5, 1.5, 2.5],
        "ints": [1, 2, 3],
        "bools": [True, False, True],
        "strings": ["a", "bc"],
        "dict": [{"x": tensor([1.0]), "label": 3, "name": "p"}, {"x": tensor([2.0]), "label": 4, "name": "q"}],
        "namedtuple": [Point(1.0, tensor([1])), Point(2.0, tensor([2]))],
        "nested_lists": [[1, [2.0, "s"]], [3, [4.0, "t"]]],
        "dict_of_tuples": [{"a": (1, 2.0)}, {"a": (3, 4.0)}],
        "scalar_tensors": [tensor(1.5), tensor(2.5)],
    }


@pytest.mark.parametrize("case", list(_samples(lambda *a: None)))
def test_default_collate_matches_pytorch(case):
    ours = data.default_collate(_samples(fc.tensor)[case])
    theirs = torch_collate(_samples(torch.tensor)[case])
    assert to_py(ours) == to_py(theirs)


@pytest.mark.parametrize(
    "batch",
    [
        [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), dtype=np.float32)],
        [np.array([1, 2], dtype=np.int64), np.array([3, 4], dtype=np.int64)],
        [np.float64(1.5), np.float64(2.5)],
        [np.int32(3), np.int32(4)],
        [(np.zeros(2, dtype=np.uint8), np.bool_(True)), (np.ones(2, dtype=np.uint8), np.bool_(False))],
    ],
)
def test_default_collate_numpy_matches_pytorch(batch):
    assert to_py(data.default_collate(batch)) == to_py(torch_collate(batch))


def test_default_convert_matches_pytorch():
    for sample in [np.arange(4, dtype=np.int64), (np.zeros(2, dtype=np.float32), 3, "s"), {"a": np.ones(1)}, 5, "x"]:
        assert to_py(data.default_convert(sample)) == to_py(torch_convert(sample))


def test_collate_errors_like_pytorch():
    with pytest.raises(
        TypeError,
        match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found <class 'object'>",
    ):
        data.default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        data.default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        data.default_collate([[1, 2], [3]])
    with pytest.raises((ValueError, RuntimeError)):
        data.default_collate([fc.tensor([1.0, 2.0]), fc.tensor([1.0])])


def test_collate_custom_map():
    class Box:
        def __init__(self, v):
            self.v = v

    fn_map = dict(data.default_collate_fn_map)
    fn_map[Box] = lambda batch, *, collate_fn_map=None: sum(b.v for b in batch)
    assert data.collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=fn_map)[0] == 4


def _views_batches(lib):
    """Batches of views of dataset tensors (``x[i]`` and the like), built alike from NumPy with either library."""
    rng = np.random.default_rng(3)
    images = rng.standard_normal((10, 1, 4, 4)).astype(np.float32)
    rows = rng.standard_normal((10, 3)).astype(np.float32)
    labels = rng.integers(0, 10, size=10).astype(np.int64)
    as_t = fc.tensor if lib == "fb" else torch.tensor
    x, r, y = as_t(images), as_t(rows), as_t(labels)
    other = as_t(rng.standard_normal((4, 3)).astype(np.float32))
    order = [7, 2, 2, 9, 0]
    return {
        # The usual map-style Dataset: views of one base tensor with a common stride.
        "image_views": [x[i] for i in order],
        "image_label_pairs": [(x[i], y[i]) for i in order],
        "dict_samples": [{"x": r[i], "y": y[i]} for i in order],
        "namedtuple_samples": [Point(r[i], y[i]) for i in order],
        # Not one base, not one stride, not contiguous: still the stack.
        "two_bases": [r[0], other[1], r[2], other[3]],
        "columns": [r.t()[j] for j in (2, 0, 1)],
        "strided_rows": [r[::2][i] for i in (4, 1, 3)],
        "slices": [r[i : i + 2] for i in (0, 5, 8)],
        "mixed_dtypes": [r[0], r[1].double(), r[2]],
        "ints_and_floats": [y[0:2], y[2:4].float()],
        "bools": [r[i] > 0 for i in range(3)],
        "empty_rows": [r[i, :0] for i in range(3)],
        "labels_0d": [y[i] for i in order],
        "one_sample": [x[3]],
    }


@pytest.mark.parametrize("case", list(_views_batches("fb")))
def test_collate_of_views_matches_pytorch(case):
    ours = data.default_collate(_views_batches("fb")[case])
    theirs = torch_collate(_views_batches("torch")[case])
    assert to_py(ours) == to_py(theirs)


def test_collate_copies_the_samples():
    x = fc.arange(24, dtype=fc.float32).view(4, 2, 3)
    batch = data.default_collate([x[i] for i in (3, 1)])
    assert batch._storage_id != x._storage_id
    batch.add_(100)  # writing to the batch leaves the dataset as it was
    assert x.tolist() == fc.arange(24, dtype=fc.float32).view(4, 2, 3).tolist()
    assert batch.tolist() == (x[fc.tensor([3, 1])] + 100).tolist()


def test_collate_unequal_first_dims_error_like_pytorch():
    # 2 + 1 + 3 rows: as many rows as three samples of 2, so only a per-sample check can tell.
    r = fc.arange(18, dtype=fc.float32).view(6, 3)
    samples = [r[0:2], r[2:3], r[3:6]]
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size") as ours:
        data.default_collate(samples)
    assert "[(2, 3), (1, 3), (3, 3)]" in str(ours.value)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        torch_collate([torch.zeros(2, 3), torch.zeros(1, 3), torch.zeros(3, 3)])
    # Equal dim 0, another dim differs; and a 0-d sample among 1-d ones.
    for bad in ([r[0], r[1, :2]], [r[0, :2].view(1, 2), r[1].view(3, 1)], [r[0], r[1, 0]], [r[0, 0], r[1]]):
        with pytest.raises(RuntimeError, match=r"\[default_collate\] stack expects each tensor to be equal size"):
            data.default_collate(bad)


def test_collate_of_a_tensor_and_a_non_tensor_errors():
    with pytest.raises(RuntimeError, match=r"shapes \[\(2,\), 'int'\]"):
        data.default_collate([fc.zeros(2), 3])


def test_collate_refusals_of_cat_come_from_stack():
    # A device cat cannot mix: the general path (stack) raises, as without the cat path.
    meta = fc.empty(2, device="meta")
    with pytest.raises(RuntimeError) as got:
        data.default_collate([fc.zeros(2), meta])
    with pytest.raises(type(got.value)) as stacked:
        fc.stack([fc.zeros(2), meta], 0)
    assert str(got.value) == str(stacked.value)


def test_collate_of_samples_requiring_grad_records_stack():
    pytest.importorskip("flambeau_autograd")  # gradients live in flambeau-autograd, not a dependency of data
    w_np = np.arange(12, dtype=np.float32).reshape(4, 3)
    w = fc.tensor(w_np).requires_grad_()
    tw = torch.tensor(w_np, requires_grad=True)
    ours = data.default_collate([w[i] * (i + 1) for i in (2, 0, 3)])
    theirs = torch_collate([tw[i] * (i + 1) for i in (2, 0, 3)])
    assert ours.requires_grad and not ours._is_view
    assert to_py(ours.detach()) == to_py(theirs.detach())
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    assert w.grad.tolist() == tw.grad.tolist()


def test_collate_copies_plain_samples_and_stacks_the_rest(monkeypatch):
    calls = []
    real_stack, real_cat = fc.stack, fc.cat
    monkeypatch.setattr(fc, "stack", lambda ts, dim=0: calls.append(("stack", len(ts))) or real_stack(ts, dim))
    monkeypatch.setattr(fc, "cat", lambda ts, dim=0: calls.append(("cat", len(ts))) or real_cat(ts, dim))
    r = fc.arange(12, dtype=fc.float32).view(4, 3)
    tr = torch.arange(12.0).view(4, 3)
    # Contiguous rows and 0-d values: one copy per sample into the batch (Note [Stacking samples]).
    batch = data.default_collate([(r[i], r[i, 0]) for i in (1, 3)])
    assert calls == []
    assert to_py(batch) == to_py(torch_collate([(tr[i], tr[i, 0]) for i in (1, 3)]))
    batch[0].fill_(-1.0)  # a copy, never a view of the dataset
    assert r.tolist() == tr.tolist()
    # Columns (not contiguous): stack (one cat into the batch inside it, no view per sample); a bool
    # sample among floats: promoted as torch's stack does. The batch is a tensor of its own, not a view.
    cols = data.default_collate([r[:, j] for j in (2, 0)])
    assert to_py(cols) == to_py(torch_collate([tr[:, j] for j in (2, 0)]))
    assert not cols._is_view
    mixed = data.default_collate([r[i] for i in range(4)] + [r[0] > 0])
    assert to_py(mixed) == to_py(torch_collate([tr[i] for i in range(4)] + [tr[0] > 0]))
    assert mixed.dtype == fc.float32
    assert calls == [("stack", 2), ("stack", 5)]
    calls.clear()
    # 0-d samples that are not contiguous-plain (here of two dtypes) are stacked.
    both = data.default_collate([r[0, 0], r[1, 1] > 0])
    assert to_py(both) == to_py(torch_collate([tr[0, 0], tr[1, 1] > 0]))
    assert calls == [("stack", 2)]


def _tuple_samples(lib):
    """The x[i], y[i] Dataset's samples (and variants), built alike from NumPy with either library."""
    rng = np.random.default_rng(5)
    as_t = fc.tensor if lib == "fb" else torch.tensor
    x = as_t(rng.standard_normal((6, 1, 3, 3)).astype(np.float32))
    y = as_t(rng.integers(0, 10, size=6).astype(np.int64))
    m = as_t(rng.standard_normal((6, 2)) > 0)
    w = as_t(rng.standard_normal((3, 6)).astype(np.float32)).t()  # its rows are not contiguous
    order = [4, 1, 1, 5]
    return {
        "pairs": [(x[i], y[i]) for i in order],
        "triples": [(x[i], y[i], m[i]) for i in order],
        "singles": [(y[i],) for i in order],
        "with_a_number": [(x[i], i) for i in order],
        "with_a_string": [(y[i], "s") for i in order],
        "nested": [(x[i], (y[i], m[i])) for i in order],
        "strided": [(w[i], y[i]) for i in order],
        "mixed_dtypes": [(y[0],), (y[1].double(),)],
    }


@pytest.mark.parametrize("case", list(_tuple_samples("fb")))
def test_collate_of_tuple_samples_matches_pytorch(case):
    ours = data.default_collate(_tuple_samples("fb")[case])
    theirs = torch_collate(_tuple_samples("torch")[case])
    assert to_py(ours) == to_py(theirs)


def test_collate_of_tuple_samples_stacks_each_position_from_the_tuples(monkeypatch):
    calls = []
    real_stack = fc.stack
    monkeypatch.setattr(fc, "stack", lambda ts, dim=0: calls.append(len(ts)) or real_stack(ts, dim))
    samples = _tuple_samples("fb")
    x0 = samples["triples"][0][0]
    out = data.default_collate(samples["triples"])
    assert calls == []  # Note [Stacking samples]: one copy per sample per position, no stack
    assert type(out) is list and [t.shape for t in out] == [(4, 1, 3, 3), (4,), (4, 2)]
    assert all(not t._is_view and t._storage_id != x0._storage_id for t in out)
    data.default_collate(samples["strided"])  # not contiguous: stacked
    assert calls == [4]


def test_collate_of_tuple_samples_errors_like_pytorch():
    x = fc.arange(12, dtype=fc.float32).view(4, 3)
    tx = torch.arange(12.0).view(4, 3)
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        data.default_collate([(x[0], x[1]), (x[2],)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        torch_collate([(tx[0], tx[1]), (tx[2],)])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size") as ours:
        data.default_collate([(x[0], x[1]), (x[2], x[3, :2])])
    assert "[(3,), (2,)]" in str(ours.value)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        torch_collate([(tx[0], tx[1]), (tx[2], tx[3, :2])])


def test_collate_of_tuple_samples_keeps_a_custom_tensor_collate():
    fn_map = dict(data.default_collate_fn_map)
    fn_map[fc.Tensor] = lambda batch, *, collate_fn_map=None: len(batch)
    x = fc.zeros(3, 2)
    assert data.collate([(x[0], x[1]), (x[2], x[0])], collate_fn_map=fn_map) == [2, 2]


def test_collate_of_tuple_samples_keeps_a_tuple_entry_of_the_map():
    x = fc.zeros(3, 2)
    for key in (tuple, collections.abc.Sequence):
        fn_map = dict(data.default_collate_fn_map)
        fn_map[key] = lambda batch, *, collate_fn_map=None: ("mine", len(batch))
        assert data.collate([(x[0], x[1]), (x[2], x[0])], collate_fn_map=fn_map) == ("mine", 2)
        torch_map = dict(torch.utils.data._utils.collate.default_collate_fn_map)
        torch_map[key] = lambda batch, *, collate_fn_map=None: ("mine", len(batch))
        tx = torch.zeros(3, 2)
        assert torch.utils.data._utils.collate.collate([(tx[0], tx[1]), (tx[2], tx[0])], collate_fn_map=torch_map) == (
            "mine",
            2,
        )
