"""Storage objects (UntypedStorage, TypedStorage, the legacy FloatStorage, ... classes), is_storage and the
Tensor methods untyped_storage, storage, storage_type and is_set_to, against PyTorch 2.13."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import pytest
import torch
from flambeau_core._storage import LEGACY_STORAGES

# every dtype: those with a legacy storage class, and the unsigned ones without (storage_type() is None)
DTYPES = [name for _, name in LEGACY_STORAGES] + ["uint16", "uint32", "uint64"]


def both(make):
    return make(fc), make(torch)


def quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@pytest.mark.parametrize("dtype", DTYPES)
def test_untyped_storage_bytes_sizes_and_addresses(dtype):
    ours, theirs = both(lambda m: m.arange(7).to(getattr(m, dtype))[2:5])
    s, t = ours.untyped_storage(), theirs.untyped_storage()
    assert (s.nbytes(), s.size(), len(s), s.element_size()) == (t.nbytes(), t.size(), len(t), t.element_size())
    assert s.tolist() == t.tolist() and list(s) == list(t)
    assert s.data_ptr() == ours.data_ptr() - ours.storage_offset() * ours.element_size()
    assert str(s.device) == str(t.device) == "cpu"
    assert [s[i] for i in (0, 3, -1)] == [t[i] for i in (0, 3, -1)]
    assert s[1:4].tolist() == t[1:4].tolist() and s[1:4].data_ptr() == s.data_ptr() + 1


def test_untyped_storage_is_one_object_per_storage_while_it_lives():
    for m in (fc, torch):
        x = m.zeros(2, 3)
        s = x.untyped_storage()
        assert x.untyped_storage() is s and x.t().untyped_storage() is s and x[1].untyped_storage() is s
        assert x.clone().untyped_storage() is not s
        assert x.clone().untyped_storage().data_ptr() != s.data_ptr()
        assert s.untyped() is s
    y = fc.ones(3)
    s = y.untyped_storage()
    del y  # the storage object keeps the memory alive
    assert fc.tensor([1.0]).untyped_storage() is not s and s.tolist()[2:4] == [128, 63]


def test_untyped_storage_writes_are_seen_by_the_tensors():
    for m in (fc, torch):
        x = m.zeros(2, dtype=m.int32)
        s = x[1:].untyped_storage()
        s[4] = 1
        assert x.tolist() == [0, 1] and s[-4] == 1
        for i in (-4, 8):
            with pytest.raises(RuntimeError, match="out of bounds"):
                s[i] = 1
        t = quiet(x.storage)
        quiet(lambda t=t: t.__setitem__(-1, 2))
        assert x.tolist() == [0, 2]
        with pytest.raises(IndexError, match="out of bounds"):
            quiet(lambda t=t: t.__setitem__(2, 2))
        quiet(lambda t=t: t.__setitem__(-1, 1))
        s.fill_(0)
        assert x.tolist() == [0, 0]
        s.copy_(m.tensor([3, 4], dtype=m.int32).untyped_storage())
        assert x.tolist() == [3, 4]
        c = s.clone()
        c[0] = 9
        assert x.tolist() == [3, 4] and c.tolist()[:4] == [9, 0, 0, 0]
        assert s.cpu() is s and not s.is_pinned()


def test_untyped_storage_errors():
    s, t = both(lambda m: m.zeros(4).untyped_storage())
    for st in (s, t):
        with pytest.raises(IndexError, match="index 16 out of range for storage of size 16"):
            st[16]
        with pytest.raises(IndexError, match="index -1 out of range for storage of size 16"):
            st[-17]
        with pytest.raises(IndexError, match="index -24 out of range for storage of size 16"):
            st[-40]
    with pytest.raises(RuntimeError, match="size mismatch"):
        s.copy_(fc.zeros(2).untyped_storage())
    with pytest.raises(AttributeError):
        s.dtype  # noqa: B018 - an untyped storage has no dtype, as PyTorch's


def test_meta_storage_has_a_size_and_no_address():
    s, t = both(lambda m: m.empty(3, device="meta").untyped_storage())
    assert (s.nbytes(), s.data_ptr(), str(s.device)) == (t.nbytes(), t.data_ptr(), str(t.device)) == (12, 0, "meta")


def test_typed_storage_warns_once_and_reads_elements():
    import flambeau_core._storage as st

    st._typed_storage_warned = False
    with pytest.warns(UserWarning, match="TypedStorage is deprecated") as record:
        fc.arange(2).storage()
        fc.arange(2).storage().size()
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dtype in DTYPES:
            ours, theirs = both(lambda m, d=dtype: m.arange(6).to(getattr(m, d))[1:4])
            s, t = ours.storage(), theirs.storage()
            assert str(s.dtype) == str(t.dtype).replace("torch", "flambeau")
            assert (s.size(), len(s), s.nbytes(), s.element_size()) == (t.size(), len(t), t.nbytes(), t.element_size())
            assert s.tolist() == t.tolist() and s[2] == t[2]
            assert s.data_ptr() == s.untyped().data_ptr() and s.untyped() is ours.untyped_storage()


def test_typed_storage_writes_and_legacy_classes():
    for m in (fc, torch):
        x = m.zeros(3)
        s = quiet(x.storage)
        quiet(lambda s=s: s.__setitem__(1, 2.5))
        assert x.tolist() == [0.0, 2.5, 0.0]
        quiet(lambda s=s: s.fill_(1.0))
        assert x.tolist() == [1.0, 1.0, 1.0]
        assert isinstance(s, m.FloatStorage) and not isinstance(s, m.DoubleStorage) and isinstance(s, m.TypedStorage)
        assert quiet(lambda m=m: m.FloatStorage(4).size()) == 4
        with pytest.raises(IndexError, match="index 3 out of range for storage of size 3"):
            quiet(lambda s=s: s[3])
        with pytest.raises(IndexError, match="index -4 out of range for storage of size 3"):
            quiet(lambda s=s: s[-4])


@pytest.mark.parametrize("dtype", DTYPES)
def test_storage_type_names_the_legacy_class(dtype):
    ours, theirs = both(lambda m: m.zeros(1, dtype=getattr(m, dtype)).storage_type())
    assert (ours.__name__ if ours else None) == (theirs.__name__ if theirs else None)
    if ours is not None:
        assert getattr(fc, ours.__name__) is ours


def test_is_storage():
    for m in (fc, torch):
        x = m.zeros(2)
        assert m.is_storage(x.untyped_storage()) and m.is_storage(quiet(x.storage))
        assert not m.is_storage(x) and not m.is_storage(3)


@pytest.mark.parametrize(
    "other",
    ["self", "slice_all", "view", "t", "clone", "narrow", "as_strided_same", "reshape"],
)
def test_is_set_to_against_torch(other):
    def run(m):
        x = m.arange(6.0).reshape(2, 3)
        y = {
            "self": lambda: x,
            "slice_all": lambda: x[:],
            "view": lambda: x.view(3, 2),
            "t": lambda: x.t(),
            "clone": lambda: x.clone(),
            "narrow": lambda: x.narrow(1, 0, 2),
            "as_strided_same": lambda: x.as_strided((2, 3), (3, 1), 0),
            "reshape": lambda: x.reshape(2, 3),
        }[other]()
        return x.is_set_to(y), y.is_set_to(x)

    assert run(fc) == run(torch)


def test_is_set_to_empty_and_errors():
    for m in (fc, torch):
        e = m.empty(0)
        assert e.is_set_to(e) and not e.is_set_to(m.empty(0))
        with pytest.raises(TypeError, match=r"is_set_to\(\): argument 'tensor' \(position 1\) must be Tensor, not int"):
            e.is_set_to(3)
