"""flambeau.Size (_size.py) against torch.Size."""

from __future__ import annotations

import pickle

import flambeau_core as fc
import numpy as np
import pytest
import torch


@pytest.mark.parametrize("sizes", [[], [2, 3], (4,), [0, 5], [np.int64(2), 3], [fc.tensor(2)], range(3)], ids=str)
def test_construction_and_numel(sizes):
    t_sizes = [torch.tensor(2) if isinstance(s, fc.Tensor) else s for s in sizes] if isinstance(sizes, list) else sizes
    s, ts = fc.Size(sizes), torch.Size(t_sizes)
    assert s == ts == tuple(ts) and s.numel() == ts.numel()
    assert all(type(v) is int for v in s)
    assert isinstance(s, tuple) and hash(s) == hash(tuple(ts))


@pytest.mark.parametrize("bad, item", [([2.5], "float"), (["a"], "str"), ([None], "NoneType")])
def test_bad_items(bad, item):
    with pytest.raises(TypeError, match=rf"\[Size\] takes an iterable of 'int' \(item 0 is '{item}'\)"):
        fc.Size(bad)
    with pytest.raises(TypeError, match=rf"takes an iterable of 'int' \(item 0 is '{item}'\)"):
        torch.Size(bad)


def test_not_iterable():
    with pytest.raises(TypeError, match="not iterable"):
        fc.Size(3)
    with pytest.raises(TypeError, match="not iterable"):
        torch.Size(3)


def test_operations_keep_the_type():
    for lib in (fc, torch):
        s = lib.Size([2, 3, 4])
        for r in (s[1:], s + (5,), (1,) + s, s * 2, 2 * s):
            assert type(r) is lib.Size, lib.__name__
        assert s[1:] == (3, 4) and s + (5,) == (2, 3, 4, 5) and (1,) + s == (1, 2, 3, 4) and s * 2 == (2, 3, 4) * 2
        assert type(s[0]) is int


def test_repr_pickle_and_use_as_a_shape():
    s = fc.Size([2, 3])
    assert repr(s) == str(s) == "flambeau.Size([2, 3])"
    out = pickle.loads(pickle.dumps(s))
    assert type(out) is fc.Size and out == s
    assert fc.zeros(s).shape == (2, 3) and fc.ones(6).view(s).shape == s
    assert fc.zeros(2, 3).reshape(fc.Size([3, 2])).shape == (3, 2)
    assert fc.zeros(1, 3).expand(fc.Size([4, 3])).shape == (4, 3)
    assert fc.zeros(2, 3).shape == s and fc.zeros(2, 3).size() == s
