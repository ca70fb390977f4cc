"""flambeau.Size (src/python/bind_size.cpp, Note [Size is a C type]) against torch.Size, and the Sizes that
Tensor.shape and Tensor.size() return."""

from __future__ import annotations

import copy
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


def test_bools_and_generators_become_ints_as_torch():
    for items in ([True, False], (n for n in [1, 2])):
        s = fc.Size(items)
        assert s == torch.Size([True, False] if isinstance(items, list) else [1, 2])
        assert all(type(v) is int for v in s)
    assert fc.Size() == torch.Size() == ()


@pytest.mark.parametrize("bad, item", [([2.5], "float"), (["a"], "str"), ([None], "NoneType"), ("ab", "str")])
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


def test_an_item_beyond_int64_is_a_value_error():
    # torch.Size keeps int64 sizes too; its "Overflow when unpacking long long" ValueError is left pending
    # in the interpreter (it surfaces at a later call, or not at all under pytest), so it is no oracle here.
    with pytest.raises(ValueError, match=r"^\[Size\] item 1 \(1180591620717411303424\) does not fit in int64$"):
        fc.Size([1, 2**70])
    # Sizes inside int64 whose product is not: numel() is exact, as Python ints are.
    assert fc.Size([2**62, 8]).numel() == 2**65


def test_operations_keep_the_type():
    for lib in (fc, torch):
        s = lib.Size([2, 3, 4])
        for r in (s[1:], s[::-1], s[:], s + (5,), (1,) + s, s + s, s * 2, 2 * s, s * 0):
            assert type(r) is lib.Size, lib.__name__
        assert s[1:] == (3, 4) and s + (5,) == (2, 3, 4, 5) and (1,) + s == (1, 2, 3, 4) and s * 2 == (2, 3, 4) * 2
        assert s[::-1] == (4, 3, 2) and type(s[0]) is int and s[-1] == 4
        assert s.count(3) == 1 and s.index(4) == 2 and 3 in s and list(s) == [2, 3, 4]
        a, b, c = s
        assert (a, b, c) == (2, 3, 4)


@pytest.mark.parametrize(
    "bad, exc",
    [
        (lambda m: m.Size([2]) + [1], TypeError),
        (lambda m: [1] + m.Size([2]), TypeError),
        (lambda m: m.Size([2]) * 1.5, TypeError),
        (lambda m: m.Size([2])[5], IndexError),
        (lambda m: m.Size([2])["a"], TypeError),
        (lambda m: setattr(m.Size([2]), "a", 1), AttributeError),
    ],
)
def test_errors_as_torch(bad, exc):
    with pytest.raises(exc):
        bad(torch)
    with pytest.raises(exc):
        bad(fc)


def test_final_as_torch():
    with pytest.raises(TypeError, match="not an acceptable base type"):
        type("Sub", (torch.Size,), {})
    with pytest.raises(TypeError, match="not an acceptable base type"):
        type("Sub", (fc.Size,), {})


def test_repr_pickle_copy_and_use_as_a_shape():
    s = fc.Size([2, 3])
    assert repr(s) == str(s) == "flambeau.Size([2, 3])" and repr(fc.Size([])) == "flambeau.Size([])"
    assert repr(torch.Size([2, 3])) == "torch.Size([2, 3])"
    for out in (pickle.loads(pickle.dumps(s)), copy.copy(s), copy.deepcopy(s)):
        assert type(out) is fc.Size and out == s
    assert s.__reduce__() == (fc.Size, ((2, 3),))
    assert fc.zeros(s).shape == (2, 3) and fc.ones(6).view(s).shape == s
    assert fc.zeros(2, 3).reshape(fc.Size([3, 2])).shape == (3, 2)
    assert fc.zeros(1, 3).expand(fc.Size([4, 3])).shape == (4, 3)
    assert {s: 1}[(2, 3)] == 1 and {(2, 3): 1}[s] == 1


@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (1, 0, 4), (2, 1, 3, 1)], ids=str)
def test_shape_and_size_are_sizes_as_torch(shape):
    x, tx = fc.zeros(shape), torch.zeros(shape)
    for got, want in ((x.shape, tx.shape), (x.size(), tx.size())):
        assert type(got) is fc.Size and type(want) is torch.Size
        assert got == tuple(want) and got.numel() == want.numel() == x.numel()
        assert repr(got) == repr(want).replace("torch.", "flambeau.")
        assert type(got[1:]) is fc.Size and type(got + (7,)) is fc.Size
    if len(shape) <= 2:
        assert x.t().shape == tx.t().shape and type(x.t().shape) is fc.Size
    # A new object each call (a tuple cannot change; the tensor's shape can), read from the tensor each time.
    y = fc.zeros(2, 3)
    before = y.shape
    y.t_()
    assert before == (2, 3) and y.shape == (3, 2) and type(y.shape) is fc.Size


def test_size_of_a_dim_stays_an_int():
    x = fc.zeros(2, 3)
    assert type(x.size(1)) is int and x.size(-2) == torch.zeros(2, 3).size(-2) == 2
    with pytest.raises(IndexError):
        x.size(2)
    with pytest.raises(IndexError):
        torch.zeros(2, 3).size(2)


def test_subclass_and_parameter_shapes_are_sizes():
    class Sub(fc.Tensor):
        pass

    p = Sub(fc.zeros(4, 5))
    assert type(p.shape) is fc.Size and p.size() == (4, 5)
