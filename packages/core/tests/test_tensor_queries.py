"""The tensor queries (flambeau_core/_tensor_queries.py) against PyTorch 2.13: sizes in elements and bytes,
dtype sign, one-element truth, device index, dim order, typename, and their errors."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool", "complex64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (4, 1, 5)])
def test_sizes_and_sign_match_torch(shape, dtype):
    ours, theirs = fc.zeros(shape, dtype=getattr(fc, dtype)), torch.zeros(shape, dtype=getattr(torch, dtype))
    assert ours.nelement() == theirs.nelement() == fc.numel(ours) == torch.numel(theirs)
    assert ours.ndimension() == theirs.ndimension()
    assert ours.nbytes == theirs.nbytes and ours.itemsize == theirs.itemsize
    assert ours.is_signed() is theirs.is_signed() is fc.is_signed(ours) is torch.is_signed(theirs)


def test_nbytes_counts_the_view_not_the_storage():
    base, tbase = fc.zeros(10, 10), torch.zeros(10, 10)
    assert base[2:4, ::3].nbytes == tbase[2:4, ::3].nbytes == 2 * 4 * 4


@pytest.mark.parametrize("value", [[0.0], [[2.5]], [[[0]]], [True], [False], [-0.0], [float("nan")]])
def test_is_nonzero_matches_torch(value):
    assert fc.tensor(value).is_nonzero() is torch.tensor(value).is_nonzero()
    assert fc.is_nonzero(fc.tensor(value)) is torch.is_nonzero(torch.tensor(value))


def test_is_nonzero_refuses_other_than_one_element():
    for value, words in (([], "no values"), ([1, 2], "more than one value")):
        with pytest.raises(RuntimeError, match=words):
            torch.tensor(value).is_nonzero()
        with pytest.raises(fc.FlambeauError, match=rf"\[is_nonzero\] Boolean value of Tensor with {words}"):
            fc.tensor(value).is_nonzero()


def test_is_same_size():
    pairs = [((2, 3), (2, 3)), ((2, 3), (3, 2)), ((), ()), ((1,), ())]
    for a, b in pairs:
        expected = torch.is_same_size(torch.zeros(a), torch.ones(b, dtype=torch.int64))
        assert fc.is_same_size(fc.zeros(a), fc.ones(b, dtype=fc.int64)) is expected
        assert fc.zeros(a).is_same_size(fc.zeros(b)) is expected
    with pytest.raises(TypeError, match=r"\[is_same_size\] expected a Tensor as 'other', got list"):
        fc.is_same_size(fc.zeros(1), [1.0])


def test_get_device_and_const_data_ptr():
    x = fc.zeros(3)
    assert x.get_device() == fc.get_device(x) == torch.zeros(3).get_device() == torch.get_device(torch.zeros(3)) == -1
    assert x[1:].const_data_ptr() == x[1:].data_ptr() == x.data_ptr() + 4


def test_is_conj_is_neg_is_tensor():
    z, tz = fc.tensor([1 + 2j]), torch.tensor([1 + 2j])
    # flambeau conjugates eagerly: as torch's tensors once their conjugation is resolved
    assert fc.is_conj(z) is torch.is_conj(tz) is False
    assert fc.is_conj(z.conj()) is torch.is_conj(tz.conj().resolve_conj()) is False
    assert fc.is_neg(z) is torch.is_neg(tz) is False
    for obj, tobj in ((fc.zeros(1), torch.zeros(1)), ([1.0], [1.0]), (3, 3), (None, None)):
        assert fc.is_tensor(obj) is torch.is_tensor(tobj)
    with pytest.raises(TypeError, match=r"\[is_conj\] expected a Tensor"):
        fc.is_conj([1.0])


def test_typename_matches_torch():
    for name in ("float32", "float64", "int64", "int32", "uint8", "bool", "float16"):
        assert fc.typename(fc.zeros(1, dtype=getattr(fc, name))) == torch.typename(
            torch.zeros(1, dtype=getattr(torch, name))
        )
    for obj in (3, "s", [1], len, int, None):
        assert fc.typename(obj) == torch.typename(obj)

    class Local:
        pass

    assert fc.typename(Local) == torch.typename(Local) and fc.typename(Local()) == torch.typename(Local())
    assert fc.typename(fc.Size) == "flambeau_core._size.Size"


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.empty(2, 3, 5, 7),
        lambda m: m.empty(2, 3, 5, 7).transpose(1, 2),
        lambda m: m.empty(2, 3, 5, 7).permute(3, 1, 0, 2),
        lambda m: m.empty(2, 3, 5, 7).contiguous(memory_format=m.channels_last),
        lambda m: m.empty(1, 2, 3, 4),
        lambda m: m.empty(6, 4)[:, ::2],
        lambda m: m.empty(3, 1, 4).expand(3, 5, 4),
        lambda m: m.empty(4, 3).t(),
        lambda m: m.empty(5),
        lambda m: m.empty(()),
        lambda m: m.empty(2, 2, 3).transpose(0, 2)[:, :1],
    ],
)
def test_dim_order_matches_torch(make):
    ours, theirs = make(fc), make(torch)
    assert ours.dim_order() == theirs.dim_order()
    for check in (True, [fc.contiguous_format, fc.channels_last]):
        tcheck = True if check is True else [torch.contiguous_format, torch.channels_last]
        try:
            expected = theirs.dim_order(ambiguity_check=tcheck)
        except RuntimeError:
            with pytest.raises(fc.FlambeauError, match=r"\[dim_order\] The tensor does not have unique dim order"):
                ours.dim_order(ambiguity_check=check)
        else:
            assert ours.dim_order(ambiguity_check=check) == expected


def test_dim_order_refuses_another_ambiguity_check():
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        torch.empty(2).dim_order(ambiguity_check="ILLEGAL")
    with pytest.raises(TypeError, match=r"\[dim_order\] The ambiguity_check argument must be a bool or a list"):
        fc.empty(2).dim_order(ambiguity_check="ILLEGAL")


@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 4)])
def test_layout_queries_of_a_strided_tensor_match_torch(shape):
    x, t = fc.zeros(shape), torch.zeros(shape)
    assert (x.sparse_dim(), x.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    assert (x.is_nested, x.is_sparse_csr, x.is_sparse) == (t.is_nested, t.is_sparse_csr, t.is_sparse)


def test_queries_refuse_non_tensors():
    for fn in (fc.numel, fc.is_signed, fc.is_nonzero, fc.is_neg, fc.get_device):
        with pytest.raises(TypeError, match=rf"\[{fn.__name__}\] expected a Tensor as 'input', got list"):
            fn([1.0])
