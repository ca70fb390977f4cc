"""Datasets and random_split against plain-Python oracles."""

from __future__ import annotations

import random
import warnings

import flambeau_core as fc
import flambeau_data as data
import numpy as np
import pytest
from conftest import make_xy
from flambeau_data import ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from flambeau_data.dataset import GatheredBatch


def test_tensor_dataset_rows():
    xs, ys, x, y = make_xy(7)
    ds = TensorDataset(x, y)
    assert len(ds) == 7
    for i in range(7):
        xi, yi = ds[i]
        assert xi.tolist() == xs[i] and yi.item() == ys[i]
    assert ds[-1][1].item() == 6


def test_tensor_dataset_accepts_numpy_without_copy():
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    labels = np.array([3, 1, 4, 1], dtype=np.int64)
    ds = TensorDataset(a, labels)
    assert all(isinstance(t, fc.Tensor) for t in ds.tensors)
    assert ds[2][0].tolist() == [6.0, 7.0, 8.0] and ds[2][1].item() == 4
    assert dtype_str(ds.tensors[0].dtype) == "float32" and dtype_str(ds.tensors[1].dtype) == "int64"
    a[2, 0] = 100.0  # a view, not a copy
    assert ds[2][0].tolist()[0] == 100.0
    # non-contiguous arrays are made contiguous
    ds2 = TensorDataset(np.arange(12, dtype=np.float64).reshape(3, 4).T)
    assert ds2[1][0].tolist() == [1.0, 5.0, 9.0]


def dtype_str(d):
    return str(d).split(".")[-1]


def test_tensor_dataset_errors():
    _, _, x, _ = make_xy(5)
    _, _, _, y4 = make_xy(4)
    with pytest.raises(ValueError, match=r"size mismatch.*5 rows.*4"):
        TensorDataset(x, y4)
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(TypeError, match="argument 1 must be a flambeau Tensor or a NumPy array, got list"):
        TensorDataset(x, [1, 2, 3, 4, 5])
    with pytest.raises(TypeError, match="complex128 has no flambeau equivalent"):
        TensorDataset(np.zeros(3, dtype=np.complex128))


def test_subset_and_concat():
    base = list(range(10, 20))
    sub = Subset(base, [9, 0, 4])
    assert [sub[i] for i in range(len(sub))] == [19, 10, 14]
    assert sub.__getitems__([0, 2]) == [19, 14]
    cat = ConcatDataset([base[:3], base[3:8], base[8:]])
    assert len(cat) == 10 and [cat[i] for i in range(10)] == base
    assert cat[-1] == 19 and cat[-10] == 10
    with pytest.raises(IndexError, match="out of range"):
        cat[10]
    with pytest.raises(IndexError, match="out of range"):
        cat[-11]
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])


class _Squares(Dataset):
    def __len__(self):
        return 3

    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return i * i


class _Count(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


def test_dataset_add_and_chain():
    cat = _Squares() + _Squares()
    assert isinstance(cat, ConcatDataset) and [cat[i] for i in range(6)] == [0, 1, 4, 0, 1, 4]
    chain = _Count(2) + _Count(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2]
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([_Count(2)])
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_random_split_lengths_and_disjoint():
    parts = random_split(range(10), [3, 7], generator=random.Random(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))


def test_random_split_fractions_like_pytorch():
    # PyTorch: floor each fraction, then give the remainder out round-robin.
    parts = random_split(range(11), [0.5, 0.3, 0.2], generator=0)
    assert [len(p) for p in parts] == [6, 3, 2]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        parts = random_split(range(2), [0.9, 0.05, 0.05], generator=0)
    assert [len(p) for p in parts] == [2, 0, 0] or [len(p) for p in parts] == [1, 1, 0]
    assert any("is 0" in str(x.message) for x in w)


def test_random_split_reproducible_with_manual_seed():
    fc.manual_seed(123)
    a = [list(p) for p in random_split(range(50), [20, 30])]
    fc.manual_seed(123)
    b = [list(p) for p in random_split(range(50), [20, 30])]
    c = [list(p) for p in random_split(range(50), [20, 30])]
    assert a == b
    assert a != c  # the generator advanced


def test_random_split_errors():
    with pytest.raises(
        ValueError, match=r"sum of input lengths \(9\) does not equal the length of the input dataset \(10\)"
    ):
        random_split(range(10), [4, 5])
    with pytest.raises(ValueError, match="fractions that sum to 1"):
        random_split(range(10), [0.5, 0.6])


def test_random_split_with_a_core_generator():
    def split(seed):
        g = fc.Generator()
        g.manual_seed(seed)
        return [list(p) for p in random_split(range(30), [10, 20], generator=g)]

    assert split(42) == split(42)
    assert split(42) != split(43)


# ---- StackDataset ----


def test_stack_dataset_samples_match_torch():
    import torch

    a, b = fc.arange(5).float(), [f"s{i}" for i in range(5)]
    ta = torch.arange(5).float()
    ours, theirs = data.StackDataset(a, b), torch.utils.data.StackDataset(ta, b)
    assert len(ours) == len(theirs) == 5
    for i in (0, 3, -1):
        assert (ours[i][0].item(), ours[i][1]) == (theirs[i][0].item(), theirs[i][1])
    ours, theirs = data.StackDataset(x=a, y=b), torch.utils.data.StackDataset(x=ta, y=b)
    assert ours[2]["x"].item() == theirs[2]["x"].item() and ours[2]["y"] == theirs[2]["y"] == "s2"


def test_stack_dataset_in_a_loader_collates_tuples_and_dicts():
    a, b = fc.arange(6).float(), fc.arange(6) * 10
    batch = next(iter(data.DataLoader(data.StackDataset(a, b), batch_size=4)))
    assert batch[0].tolist() == [0.0, 1.0, 2.0, 3.0] and batch[1].tolist() == [0, 10, 20, 30]
    batch = next(iter(data.DataLoader(data.StackDataset(x=a, y=b), batch_size=3)))
    assert batch["x"].tolist() == [0.0, 1.0, 2.0] and batch["y"].tolist() == [0, 10, 20]


def _stack_parts():
    """Equal data as flambeau and torch tensors: float32 images (a non-contiguous view), int32 ids, bool flags."""
    import torch

    rng = np.random.default_rng(3)
    images = rng.standard_normal((4, 2, 11)).astype(np.float32)  # viewed as (11, 2, 4): non-contiguous
    ids = rng.integers(-50, 50, size=11).astype(np.int32)
    flags = rng.integers(0, 2, size=11).astype(bool)
    ours = (fc.tensor(images).permute(2, 1, 0), fc.tensor(ids), fc.tensor(flags))
    theirs = (torch.tensor(images).permute(2, 1, 0), torch.tensor(ids), torch.tensor(flags))
    assert not ours[0].is_contiguous()
    return ours, theirs


def test_stack_dataset_getitems_of_tensors_gathers_what_getitem_gives():
    import torch
    from conftest import to_py

    ours_parts, theirs_parts = _stack_parts()
    ours, theirs = data.StackDataset(*ours_parts), torch.utils.data.StackDataset(*theirs_parts)
    indices = [3, 0, -1, 10, 3, -11]
    got = ours.__getitems__(indices)
    assert type(got) is GatheredBatch  # one gather per tensor, not a tuple per sample
    want = [to_py(s) for s in theirs.__getitems__(indices)]
    assert [to_py(tuple(s)) for s in got] == want == [to_py(ours[i]) for i in indices]
    # default_collate gives what stacking the samples one by one gives
    assert to_py(data.default_collate(got)) == to_py(data.default_collate([ours[i] for i in indices]))
    assert to_py(data.default_collate(got)) == to_py(torch.utils.data.default_collate(theirs.__getitems__(indices)))
    # NumPy integers index too
    assert [to_py(tuple(s)) for s in ours.__getitems__([np.int64(i) for i in indices])] == want


def test_stack_dataset_getitems_part_by_part_matches_torch():
    import torch
    from conftest import to_py

    ours_parts, theirs_parts = _stack_parts()
    names = [f"n{i}" for i in range(11)]
    arr = np.arange(22.0).reshape(11, 2)
    rows = TensorDataset(fc.arange(11), fc.arange(11) * 2)
    theirs_rows = torch.utils.data.TensorDataset(torch.arange(11), torch.arange(11) * 2)
    indices = [4, -2, 0, 4]
    cases = [
        ((ours_parts[0], names, arr, rows), (theirs_parts[0], names, arr, theirs_rows)),
        ((ours_parts[1], ours_parts[0][:, 0]), (theirs_parts[1], theirs_parts[0][:, 0])),
    ]

    def plain(sample):
        return [("np", str(v.dtype), v.tolist()) if isinstance(v, np.ndarray) else to_py(v) for v in sample]

    for ours_args, theirs_args in cases:
        ours = data.StackDataset(*ours_args)
        theirs = torch.utils.data.StackDataset(*theirs_args)
        got = ours.__getitems__(indices)
        assert [plain(s) for s in got] == [plain(s) for s in theirs.__getitems__(indices)]
        assert [plain(s) for s in got] == [plain(ours[i]) for i in indices]
    ours = data.StackDataset(image=ours_parts[0], name=names, label=ours_parts[1])
    theirs = torch.utils.data.StackDataset(image=theirs_parts[0], name=names, label=theirs_parts[1])
    got = ours.__getitems__(indices)
    assert [to_py(s) for s in got] == [to_py(s) for s in theirs.__getitems__(indices)]
    assert [list(s) for s in got] == [["image", "name", "label"]] * len(indices)


@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_stack_dataset_of_tensors_in_a_loader_matches_torch(no_leaks, workers, persistent):
    import torch
    from conftest import to_py

    ours_parts, theirs_parts = _stack_parts()
    order = list(np.random.default_rng(4).permutation(11))
    kwargs = dict(batch_size=4, sampler=order, num_workers=workers, persistent_workers=persistent)
    ours = data.DataLoader(data.StackDataset(*ours_parts), **kwargs)
    theirs = torch.utils.data.DataLoader(torch.utils.data.StackDataset(*theirs_parts), **kwargs)
    for _ in range(2 if persistent else 1):
        assert [to_py(b) for b in ours] == [to_py(b) for b in theirs]
    # a collate_fn of one's own still sees one tuple per sample
    mine = data.DataLoader(data.StackDataset(*ours_parts), batch_size=4, sampler=order, collate_fn=list)
    reference = torch.utils.data.DataLoader(theirs.dataset, batch_size=4, sampler=order, collate_fn=list)
    assert [[to_py(tuple(s)) for s in b] for b in mine] == [[to_py(s) for s in b] for b in reference]


def test_stack_dataset_getitems_errors():
    ours_parts, _ = _stack_parts()
    ds = data.StackDataset(*ours_parts)
    with pytest.raises(IndexError, match=r"\[StackDataset\] index 11 is out of range for a dataset of length 11"):
        ds.__getitems__([0, 11])
    with pytest.raises(IndexError, match=r"\[StackDataset\] index -12 is out of range"):
        data.DataLoader(ds, batch_size=2, sampler=[1, -12]).__iter__().__next__()

    class Short:
        def __len__(self):
            return 11

        def __getitem__(self, i):
            return i

        def __getitems__(self, indices):
            return indices[:-1]

    with pytest.raises(ValueError, match=r"\[StackDataset\] dataset 1.__getitems__ returned 2 samples for 3 indices"):
        data.StackDataset(ours_parts[1], Short()).__getitems__([0, 1, 2])
    with pytest.raises(ValueError, match=r"dataset 'b'.__getitems__ returned 1 samples for 2 indices"):
        data.StackDataset(a=list(range(11)), b=Short()).__getitems__([0, 1])
    # a part that is not indexable by the given index raises its own error, as sample by sample would
    with pytest.raises(IndexError):
        data.StackDataset(ours_parts[1], list(range(11))).__getitems__([0, 11])


def test_stack_dataset_bad_input():
    with pytest.raises(ValueError, match=r"\[StackDataset\] size mismatch between datasets \(0: 2, 1: 3\)"):
        data.StackDataset([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"\[StackDataset\] size mismatch between datasets \(x: 2, y: 1\)"):
        data.StackDataset(x=[1, 2], y=[1])
    with pytest.raises(ValueError, match=r"either positionally .* or by keyword"):
        data.StackDataset([1], y=[1])
    with pytest.raises(ValueError, match=r"at least one dataset"):
        data.StackDataset()
