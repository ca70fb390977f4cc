"""The legacy tensor types (FloatTensor, LongTensor, ...) and Tensor.type() (_legacy_types.py) against torch."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch

NAMES = [
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "BoolTensor",
]


def dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


@pytest.mark.parametrize("name", NAMES)
def test_constructors(name):
    F, T = getattr(fc, name), getattr(torch, name)
    assert dtype_name(F.dtype) == dtype_name(T.dtype)
    for args in [(2, 3), (4,), (), (np.int64(2),)]:
        f, t = F(*args), T(*args)
        assert f.shape == t.shape and dtype_name(f.dtype) == dtype_name(t.dtype) and type(f) is fc.Tensor
    for data in ([1, 0, 1], (2, 3), [[1.7, 0.0]], np.array([1, 2])):
        f, t = F(data), T(data)
        assert f.tolist() == t.tolist(), (name, data)
    assert F(fc.Size([2, 1])).shape == T(torch.Size([2, 1])).shape == (2, 1)


@pytest.mark.parametrize("bad", [2.5, "a", None])
def test_constructor_bad_data(bad):
    with pytest.raises(TypeError, match=r"\[FloatTensor\] data must be a sequence"):
        fc.FloatTensor(bad)
    with pytest.raises(TypeError):
        torch.FloatTensor(bad)


def test_constructor_from_tensor_shares_or_refuses():
    src = fc.tensor([1.0, 2.0])
    alias = fc.FloatTensor(src)
    alias[0] = 5.0
    assert src[0].item() == 5.0
    tsrc = torch.tensor([1.0, 2.0])
    torch.FloatTensor(tsrc)[0] = 5.0
    assert tsrc[0].item() == 5.0
    with pytest.raises(TypeError, match=r"\[FloatTensor\] expected a cpu flambeau.float32 tensor"):
        fc.FloatTensor(fc.tensor([1, 2]))
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.tensor([1, 2]))


def test_isinstance_as_torch():
    for lib in (fc, torch):
        x = lib.ones(2)
        assert isinstance(x, lib.FloatTensor) and not isinstance(x, lib.DoubleTensor)
        assert isinstance(x.double(), lib.DoubleTensor) and isinstance(x.long(), lib.LongTensor)
        assert not isinstance(3, lib.FloatTensor) and not isinstance([1.0], lib.FloatTensor)
        assert not issubclass(lib.FloatTensor, lib.Tensor)
        assert lib.FloatTensor.__name__ == "FloatTensor" and lib.FloatTensor.is_cuda is False


@pytest.mark.parametrize(
    "dtype",
    ["float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64", "bool", "complex64"],
)
def test_type_string(dtype):
    assert fc.ones(2, dtype=getattr(fc, dtype)).type() == torch.ones(2, dtype=getattr(torch, dtype)).type()


@pytest.mark.parametrize(
    "target",
    ["float64", "torch.LongTensor", "flambeau.IntTensor", "LongTensor", "BoolTensor", "float32"],
)
def test_type_conversion(target):
    def convert(lib, x):
        if target.endswith("Tensor") and "." not in target:
            return x.type(getattr(lib, target))
        if "." in target:
            return x.type(target.replace("flambeau.", "torch.") if lib is torch else target)
        return x.type(getattr(lib, target))

    f, t = convert(fc, fc.tensor([1.5, 0.0])), convert(torch, torch.tensor([1.5, 0.0]))
    assert dtype_name(f.dtype) == dtype_name(t.dtype) and f.tolist() == t.tolist()


def test_type_same_returns_self_and_errors():
    x = fc.ones(2)
    assert x.type(fc.float32) is x and x.type("torch.FloatTensor") is x
    assert x.type(dtype=fc.int32, non_blocking=True).dtype == fc.int32
    for bad in ["torch.Foo", "float", "torch.Float", "numpy.FloatTensor"]:
        with pytest.raises(ValueError, match=r"\[type\] invalid type"):
            x.type(bad)
        with pytest.raises(ValueError, match="invalid type"):
            torch.ones(2).type(bad)
    if not fc.cuda.is_available():  # a CUDA type needs a CUDA device, as in PyTorch
        with pytest.raises(RuntimeError):
            x.type("torch.cuda.FloatTensor")
    with pytest.raises(TypeError, match=r"\[type\] dtype must be a type, str, or dtype object"):
        x.type(3)
    with pytest.raises(TypeError, match="dtype must be a type, str, or dtype object"):
        torch.ones(2).type(3)


# ---- set_default_tensor_type (deprecated) ----


@pytest.mark.filterwarnings("ignore:.*set_default_tensor_type")
def test_set_default_tensor_type_matches_torch():
    try:
        for ours, theirs in (
            (fc.DoubleTensor, torch.DoubleTensor),
            ("torch.FloatTensor", "torch.FloatTensor"),
            ("torch.HalfTensor", "torch.HalfTensor"),
        ):
            fc.set_default_tensor_type(ours)
            torch.set_default_tensor_type(theirs)
            assert str(fc.get_default_dtype()).split(".")[-1] == str(torch.get_default_dtype()).split(".")[-1]
            assert fc.ones(1).dtype == fc.get_default_dtype()
        for bad in (fc.LongTensor, "torch.IntTensor"):
            with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
                fc.set_default_tensor_type(bad)
        with pytest.raises(TypeError, match="only floating-point types"):
            torch.set_default_tensor_type(torch.LongTensor)
        with pytest.raises(TypeError, match=r"\[set_default_tensor_type\] invalid type object"):
            fc.set_default_tensor_type(3)
        with pytest.warns(UserWarning, match=r"\[set_default_tensor_type\] set_default_tensor_type\(\) is deprecated"):
            fc.set_default_tensor_type(fc.FloatTensor)
    finally:
        fc.set_default_dtype(fc.float32)
        torch.set_default_dtype(torch.float32)
