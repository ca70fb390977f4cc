"""isreal, vdot, resolve_conj / resolve_neg / is_conj / is_neg and Tensor.cfloat / cdouble / chalf against
PyTorch 2.13: values, dtypes, out=, and the errors."""

from __future__ import annotations

import math

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

Z = [1 + 0j, 2j, complex(math.nan, 0), complex(0, math.nan), -0.0 + 0j, complex(math.inf, 0)]


@pytest.mark.parametrize(("ours", "theirs"), [(fc.complex64, torch.complex64), (fc.complex128, torch.complex128)])
def test_isreal_complex(ours, theirs):
    got, expected = fc.isreal(fc.tensor(Z, dtype=ours)), torch.isreal(torch.tensor(Z, dtype=theirs))
    assert got.dtype == fc.bool and got.tolist() == expected.tolist()
    assert fc.tensor(Z, dtype=ours).isreal().tolist() == expected.tolist()


@pytest.mark.parametrize(
    ("ours", "theirs"), [(fc.float32, torch.float32), (fc.int64, torch.int64), (fc.bool, torch.bool)]
)
def test_isreal_real(ours, theirs):
    got, expected = fc.isreal(fc.zeros(2, 3, dtype=ours)), torch.isreal(torch.zeros(2, 3, dtype=theirs))
    assert got.shape == (2, 3) and got.tolist() == expected.tolist()


RNG = np.random.default_rng(9)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64", "complex128"])
def test_vdot(dtype):
    a, b = RNG.standard_normal((2, 7))
    if dtype.startswith("complex"):
        a, b = a + 1j * RNG.standard_normal(7), b - 2j * RNG.standard_normal(7)
    a, b = (
        (np.round(a * 4) if dtype == "int64" else a).astype(dtype),
        (np.round(b * 4) if dtype == "int64" else b).astype(dtype),
    )
    expected = torch.vdot(torch.from_numpy(a), torch.from_numpy(b))
    got = fc.vdot(fc.tensor(a), fc.tensor(b))
    assert got.shape == () and str(got.dtype).split(".")[-1] == dtype
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(fc.tensor(a).vdot(fc.tensor(b))), expected.numpy(), rtol=1e-5)


def test_vdot_conjugates_the_first_only():
    assert fc.vdot(fc.tensor([1j, 2 + 0j]), fc.tensor([3 + 0j, 4j])).item() == 5j
    assert torch.vdot(torch.tensor([1j, 2 + 0j]), torch.tensor([3 + 0j, 4j])).item() == 5j


def test_vdot_out_and_errors():
    out = fc.empty(())
    assert fc.vdot(fc.ones(3), fc.ones(3), out=out) is out and out.item() == 3.0
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        torch.vdot(torch.ones(2), torch.ones(3))
    with pytest.raises(fc.FlambeauError, match=r"^\[vdot\] inconsistent tensor size"):
        fc.vdot(fc.ones(2), fc.ones(3))
    with pytest.raises(fc.FlambeauError, match=r"^\[vdot\] 1D tensors expected, but got 2D and 1D tensors"):
        fc.vdot(fc.ones(1, 2), fc.ones(2))
    with pytest.raises(TypeError, match=r"^\[vdot\] expected both vectors to have same dtype"):
        fc.vdot(fc.ones(2), fc.ones(2, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"^\[vdot\] expected a Tensor as 'other', got list"):
        fc.vdot(fc.ones(2), [1.0, 2.0])


@pytest.mark.parametrize("dtype", [fc.float32, fc.complex64])
def test_no_lazy_bits(dtype):
    x = fc.ones(3, dtype=dtype)
    c = x.conj()
    for t in (x, c):
        assert fc.resolve_conj(t) is t and t.resolve_conj() is t
        assert fc.resolve_neg(t) is t and t.resolve_neg() is t
        assert t.is_conj() is False and t.is_neg() is False
    # the conjugate is there already: resolving changes nothing PyTorch's resolve_conj would not
    tc = torch.ones(3, dtype=getattr(torch, str(dtype).split(".")[-1])).conj()
    np.testing.assert_array_equal(to_numpy(fc.resolve_conj(c)), torch.resolve_conj(tc).numpy())


def test_resolve_errors():
    with pytest.raises(TypeError, match=r"^\[resolve_conj\] expected a Tensor as 'input', got list"):
        fc.resolve_conj([1j])


@pytest.mark.parametrize(
    ("method", "ours", "theirs"),
    [("cfloat", fc.complex64, torch.complex64), ("cdouble", fc.complex128, torch.complex128)],
)
@pytest.mark.parametrize("source", ["float32", "float64", "int64", "bool", "complex64"])
def test_complex_conversions(method, ours, theirs, source):
    a = np.array([[1.5, -2.0, 0.0]]).astype(source)
    got, expected = getattr(fc.tensor(a), method)(), getattr(torch.from_numpy(a), method)()
    assert got.dtype == ours and expected.dtype == theirs
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    got = getattr(fc.tensor(a).t(), method)(memory_format=fc.contiguous_format)
    assert got.is_contiguous()


def test_complex_conversion_to_its_own_dtype_is_the_tensor():
    x = fc.ones(2, dtype=fc.complex64)
    assert x.cfloat() is x


def test_chalf_is_a_clear_type_error():
    with pytest.raises(
        TypeError, match=r"^\[chalf\] complex32 \(chalf\) is not a flambeau dtype; cfloat\(\) gives complex64"
    ):
        fc.ones(2).chalf()
