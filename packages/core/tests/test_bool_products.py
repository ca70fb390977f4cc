"""The bool rule of the matrix products (src/meta/bool_products.h, Note [Bool products]) against PyTorch
2.13: a bool product with work to do raises (NotImplementedError in PyTorch, flambeau's dtype error class
TypeError, named for the op called); an empty result or k = 0 still gives PyTorch's result."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch


def ones(lib, *shape):
    return lib.ones(*shape, dtype=lib.bool)


def linear(lib, x, w):
    return (fc if lib is fc else torch.nn.functional).linear(x, w)


# name -> (op named in flambeau's message, call on a module): each has work to do, so both refuse bool.
REFUSED = {
    "mm": ("mm", lambda m: m.mm(ones(m, 2, 3), ones(m, 3, 2))),
    "bmm": ("bmm", lambda m: m.bmm(ones(m, 2, 2, 3), ones(m, 2, 3, 2))),
    "matmul": ("matmul", lambda m: m.matmul(ones(m, 2, 3), ones(m, 3, 2))),
    "@": ("matmul", lambda m: ones(m, 2, 3) @ ones(m, 3, 2)),
    "Tensor.matmul": ("matmul", lambda m: ones(m, 2, 3).matmul(ones(m, 3))),
    "matmul 3-D @ 1-D": ("matmul", lambda m: m.matmul(ones(m, 2, 2, 3), ones(m, 3))),
    "matmul 1-D @ 3-D": ("matmul", lambda m: m.matmul(ones(m, 2), ones(m, 4, 2, 3))),
    "matmul broadcast": ("matmul", lambda m: m.matmul(ones(m, 2, 1, 2, 3), ones(m, 4, 3, 2))),
    "matmul 1-D @ 1-D": ("matmul", lambda m: m.matmul(ones(m, 3), ones(m, 3))),
    "matmul 1-D @ 1-D empty": ("matmul", lambda m: m.matmul(ones(m, 0), ones(m, 0))),  # torch's dot
    "mv": ("mv", lambda m: m.mv(ones(m, 2, 3), ones(m, 3))),
    "linear": ("linear", lambda m: linear(m, ones(m, 4, 3), ones(m, 2, 3))),
    "addmm": ("addmm", lambda m: m.addmm(ones(m, 2, 2), ones(m, 2, 3), ones(m, 3, 2))),
    "addmv": ("addmv", lambda m: m.addmv(ones(m, 2), ones(m, 2, 3), ones(m, 3))),
    "baddbmm": ("baddbmm", lambda m: m.baddbmm(ones(m, 2, 2, 2), ones(m, 2, 2, 3), ones(m, 2, 3, 2))),
    "addbmm": ("addbmm", lambda m: m.addbmm(ones(m, 2, 2), ones(m, 2, 2, 3), ones(m, 2, 3, 2))),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_bool_products_raise_as_torch(case):
    op, call = REFUSED[case]
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        call(torch)
    with pytest.raises(TypeError, match=rf"^\[{op}\] is not supported for bool tensors \(PyTorch has no bool matrix"):
        call(fc)


# Nothing to compute: PyTorch returns before choosing a kernel, so bool gives an empty result or zeros.
EMPTY_OR_K0 = {
    "mm empty rows": lambda m: m.mm(ones(m, 0, 2), ones(m, 2, 3)),
    "mm empty cols": lambda m: m.mm(ones(m, 2, 2), ones(m, 2, 0)),
    "mm k = 0": lambda m: m.mm(ones(m, 2, 0), ones(m, 0, 3)),
    "bmm empty batch": lambda m: m.bmm(ones(m, 0, 2, 2), ones(m, 0, 2, 2)),
    "bmm k = 0": lambda m: m.bmm(ones(m, 1, 2, 0), ones(m, 1, 0, 2)),
    "matmul 3-D k = 0": lambda m: m.matmul(ones(m, 2, 2, 0), ones(m, 2, 0, 2)),
    "matmul 3-D @ 2-D empty": lambda m: m.matmul(ones(m, 2, 0, 2), ones(m, 2, 2)),
    "mv k = 0": lambda m: m.mv(ones(m, 2, 0), ones(m, 0)),
    "mv empty": lambda m: m.mv(ones(m, 0, 2), ones(m, 2)),
    "linear empty batch": lambda m: linear(m, ones(m, 0, 2), ones(m, 3, 2)),
    "linear k = 0": lambda m: linear(m, ones(m, 2, 0), ones(m, 3, 0)),
    "addmm empty": lambda m: m.addmm(ones(m, 0, 2), ones(m, 0, 2), ones(m, 2, 2)),
    "baddbmm empty batch": lambda m: m.baddbmm(ones(m, 0, 2, 2), ones(m, 0, 2, 2), ones(m, 0, 2, 2)),
    "addr (an outer product, no GEMM)": lambda m: m.addr(ones(m, 2, 2), ones(m, 2), ones(m, 2)),
}


@pytest.mark.parametrize("case", list(EMPTY_OR_K0))
def test_bool_products_without_work_match_torch(case):
    want, got = EMPTY_OR_K0[case](torch), EMPTY_OR_K0[case](fc)
    assert got.dtype == fc.bool and tuple(got.shape) == tuple(want.shape) and got.tolist() == want.tolist()


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_integer_products_still_work_as_torch(dtype):
    a = [[1, 2, 3], [4, 5, 6]]
    want = torch.tensor(a, dtype=getattr(torch, dtype)) @ torch.tensor(a, dtype=getattr(torch, dtype)).T
    got = fc.tensor(a, dtype=getattr(fc, dtype)) @ fc.tensor(a, dtype=getattr(fc, dtype)).t()
    assert got.dtype == getattr(fc, dtype) and got.tolist() == want.tolist()
    got = fc.bmm(fc.tensor([a], dtype=getattr(fc, dtype)), fc.tensor([a], dtype=getattr(fc, dtype)).transpose(1, 2))
    assert got.tolist() == [want.tolist()]


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_unsigned_wide_products_refused_as_torch(dtype):
    with pytest.raises(NotImplementedError, match="not implemented for 'UInt"):
        torch.ones(2, 2, dtype=getattr(torch, dtype)) @ torch.ones(2, 2, dtype=getattr(torch, dtype))
    with pytest.raises(TypeError, match=rf"^\[mm\] is not supported for dtype {dtype}"):
        fc.ones(2, 2, dtype=getattr(fc, dtype)) @ fc.ones(2, 2, dtype=getattr(fc, dtype))
