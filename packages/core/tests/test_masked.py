"""flambeau.masked's functions against PyTorch 2.13's torch.masked: every function over masks of the
input's shape and broadcast ones, no mask, fully masked-out slices (the identities, NaN, index 0), inf and
NaN in the input, dims, keepdim, dtype, integer inputs, and the error paths."""

from __future__ import annotations

import itertools
import math

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import from_torch, to_numpy, torch_numpy

pytestmark = pytest.mark.on_devices

FM = fc.masked
TM = torch.masked
TOL = {
    torch.float16: (2e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (2e-5, 2e-6),
    torch.float64: (1e-10, 1e-12),
}

SHAPE = (3, 4, 5)
# masks of the input's shape and of every shape that broadcasts to it (torch.masked's own sample masks)
MASK_SHAPES = [SHAPE, (3, 4, 1), (3, 1, 5), (1, 4, 5), (4, 5), (5,)]


def sample(shape=SHAPE, dtype=torch.float64, seed=0, special=False):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
        if special:
            flat = x.view(-1)
            flat[1], flat[7], flat[12] = math.inf, -math.inf, math.nan
        return x
    return torch.randint(-5, 6, shape, generator=g).to(dtype)


def masks(shape=SHAPE, seed=1):
    """None, random masks of each broadcastable shape, all-True, and one with a fully masked-out row."""
    g = torch.Generator().manual_seed(seed)
    yield None
    for s in MASK_SHAPES if len(shape) == 3 else [shape]:
        yield torch.rand(s, generator=g) < 0.5
    yield torch.ones(shape, dtype=torch.bool)
    m = torch.rand(shape, generator=g) < 0.6
    m[0] = False  # the first slice along dim 0 entirely masked out
    if m.dim() > 1:
        m[..., 0] = False
    yield m


def convert(v):
    if isinstance(v, torch.Tensor):
        return from_torch(v)
    if isinstance(v, torch.dtype):
        return getattr(fc, str(v).removeprefix("torch."))
    return v


def assert_like(ours, theirs, what=""):
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    assert str(ours.dtype).removeprefix("flambeau.") == str(theirs.dtype).removeprefix("torch."), (
        f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    )
    got, want = to_numpy(ours), torch_numpy(theirs)
    if theirs.dtype.is_floating_point:
        rtol, atol = TOL.get(theirs.dtype, (1e-5, 1e-6))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check(name, x, *args, **kwargs):
    theirs = getattr(TM, name)(x, *args, **kwargs)
    ours = getattr(FM, name)(convert(x), *[convert(a) for a in args], **{k: convert(v) for k, v in kwargs.items()})
    assert_like(ours, theirs, f"masked.{name}{args} {kwargs.get('keepdim', '')} mask={kwargs.get('mask') is not None}")
    return ours


REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp"]


@pytest.mark.parametrize("special", [False, True], ids=["finite", "inf_nan"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_match_torch(name, dtype, special):
    x = sample(dtype=dtype, special=special)
    if name == "prod":
        x = x * 0.5 + 1  # products of 60 numbers stay in range
    for mask in masks():
        for dim in [None, 0, -1, (0, 2), (2, 0, 1)]:
            for keepdim in (False, True):
                check(name, x, dim, keepdim=keepdim, mask=mask)


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=["int64", "int32", "uint8"])
def test_integer_inputs_match_torch(name, dtype):
    x = sample(dtype=dtype).abs() if dtype == torch.uint8 else sample(dtype=dtype)
    for mask in masks():
        for dim in [None, 1] if name.startswith("arg") else [None, 1, (0, 2)]:
            check(name, x, dim, keepdim=False, mask=mask)


def test_sum_and_prod_dtype():
    x = sample(dtype=torch.int16)
    m = torch.rand(SHAPE, generator=torch.Generator().manual_seed(3)) < 0.5
    assert check("sum", x, 1, mask=m).dtype == fc.int64
    check("sum", x, 1, dtype=torch.float64, mask=m)
    check("prod", sample(dtype=torch.float32) * 0.5 + 1, (0, 1), dtype=torch.float64, mask=m)
    check("sum", sample(dtype=torch.bool), 2, mask=m)


def test_reductions_of_a_zero_dimensional_input():
    x = torch.tensor(2.5, dtype=torch.float64)
    for name in REDUCTIONS:
        for mask in (None, torch.tensor(True), torch.tensor(False)):
            check(name, x, mask=mask)
    for mask in (torch.tensor(True), torch.tensor(False)):
        check("argmax", x, mask=mask)
        check("norm", x, 2.0, mask=mask)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_extrema_match_torch(name):
    for dtype, special in [(torch.float64, False), (torch.float32, True)]:
        x = sample(dtype=dtype, special=special)
        for mask in masks():
            for dim in [None, 0, 2, -2]:
                for keepdim in (False, True):
                    check(name, x, dim, keepdim=keepdim, mask=mask)
            check(name, x, 1, dtype=torch.int64, mask=mask)


def test_median_matches_torch():
    for dtype, special in [(torch.float64, False), (torch.float32, True)]:
        x = sample(dtype=dtype, special=special)
        for mask in masks():
            for dim, keepdim in itertools.product([0, -1, 1], [False, True]):
                check("median", x, dim, keepdim=keepdim, mask=mask)
    # an integer input is reduced in float32 and comes back in its dtype when no row is fully masked out
    x = sample(dtype=torch.int64)
    m = torch.ones(SHAPE, dtype=torch.bool)
    m[:, :, 1] = False
    assert check("median", x, 2, mask=m).dtype == fc.int64
    check("median", sample(dtype=torch.float32), 1, dtype=torch.float64, mask=m)  # a float result keeps its dtype


@pytest.mark.parametrize("ord", [2.0, 1, 3.5, math.inf, -math.inf, 0])
def test_norm_matches_torch(ord):
    for dtype in (torch.float32, torch.float64):
        x = sample(dtype=dtype)
        for mask in masks():
            for dim in [None, 1, (0, 2)]:
                check("norm", x, ord, dim, keepdim=dim == 1, mask=mask)
    check("norm", sample(dtype=torch.float32), 2.0, 1, dtype=torch.float64, mask=None)


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_match_torch(name):
    for dtype in (torch.float32, torch.float64):
        x = sample(dtype=dtype)
        for mask in masks():
            for dim, keepdim in itertools.product([None, 0, -1, (0, 2)], [False, True]):
                check(name, x, dim, keepdim=keepdim, mask=mask)
            check(name, x, 1, False, mask=mask)
            for correction in (0, 2, 2.5):
                check(name, x, (1, 2), correction=correction, mask=mask)
    # integer inputs give float32; a slice of one masked-in element with correction 1 gives NaN or inf
    check(name, sample(dtype=torch.int64), 1, mask=masks().__next__())
    m = torch.zeros(SHAPE, dtype=torch.bool)
    m[:, 0, :] = True
    check(name, sample(), 1, mask=m)
    check(name, sample(special=True), 2, mask=m)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_normalizations_match_torch(name):
    for dtype, special in [(torch.float32, False), (torch.float64, False), (torch.float64, True)]:
        x = sample(dtype=dtype, special=special)
        for mask in masks():
            for dim in (0, 1, -1):
                check(name, x, dim, mask=mask)
        check(name, x, 1, dtype=torch.float64, mask=None)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative_ops_match_torch(name):
    for dtype in (torch.float32, torch.float64, torch.int64, torch.int32):
        x = sample(dtype=dtype)
        if name == "cumprod" and dtype.is_floating_point:
            x = x * 0.5 + 1
        for mask in masks():
            for dim in (0, 2, -2):
                check(name, x, dim, mask=mask)
        check(name, x, 1, dtype=torch.float64, mask=None)


@pytest.mark.parametrize("ord", [2.0, 1, math.inf, -math.inf, 0])
def test_normalize_matches_torch(ord):
    for dtype in (torch.float32, torch.float64):
        x = sample(dtype=dtype)
        for mask in masks():
            for dim in (0, -1):
                check("normalize", x, ord, dim, mask=mask)
        check("normalize", x, ord, 1, eps=1e3, mask=None)


def test_logaddexp_matches_torch():
    for dtype in (torch.float32, torch.float64):
        a, b = sample(dtype=dtype, seed=4), sample(dtype=dtype, seed=5)
        for ma, mb in zip(masks(seed=6), masks(seed=7), strict=True):
            ours = FM.logaddexp(convert(a), convert(b), input_mask=convert(ma), other_mask=convert(mb))
            assert_like(ours, TM.logaddexp(a, b, input_mask=ma, other_mask=mb), "logaddexp")
    # computed in the inputs' dtype, then converted
    ours = FM.logaddexp(convert(a), convert(b), dtype=fc.float32)
    assert_like(ours, TM.logaddexp(a, b, dtype=torch.float32), "logaddexp dtype")


def test_fully_masked_identities():
    """The values the module docstring promises for a slice with every element masked out."""
    x = fc.tensor([[1.0, 2.0], [3.0, 4.0]])
    off = fc.tensor([[True, True], [False, False]])
    assert FM.sum(x, 1, mask=off).tolist() == [3.0, 0.0]
    assert FM.prod(x, 1, mask=off).tolist() == [2.0, 1.0]
    assert FM.amax(x, 1, mask=off).tolist() == [2.0, -math.inf]
    assert FM.amin(x, 1, mask=off).tolist() == [1.0, math.inf]
    assert FM.argmax(x, 1, mask=off).tolist() == [1.0, 0.0]
    assert math.isnan(FM.mean(x, 1, mask=off).tolist()[1])
    assert FM.norm(x, -math.inf, 1, mask=off).tolist() == [1.0, math.inf]
    assert FM.cumsum(x, 1, mask=off).tolist() == [[1.0, 3.0], [0.0, 0.0]]


def test_mask_of_another_dtype_is_read_as_bool():
    x = sample()
    m = (torch.rand(SHAPE, generator=torch.Generator().manual_seed(9)) < 0.5).to(torch.int64)
    check("sum", x, 1, mask=m)
    check("amax", x, 2, mask=m.to(torch.float32))


def test_signatures_are_torchs():
    import inspect

    for name in FM.__all__:
        ours = inspect.signature(getattr(FM, name))
        theirs = inspect.signature(getattr(TM, name))
        assert [(p.name, p.kind) for p in ours.parameters.values()] == [
            (p.name, p.kind) for p in theirs.parameters.values()
        ], name
        for p in ours.parameters.values():
            assert p.default == theirs.parameters[p.name].default, (name, p.name)
    # everything but the MaskedTensor class and its helpers
    assert set(FM.__all__) == set(TM.__all__) - {
        "MaskedTensor",
        "masked_tensor",
        "as_masked_tensor",
        "is_masked_tensor",
    }


# ---- errors ----


def test_mask_errors():
    x = fc.zeros([2, 3])
    with pytest.raises(
        IndexError, match=r"^\[masked\.sum\] expected a mask broadcastable to the input's shape \(2, 3\)"
    ):
        FM.sum(x, mask=fc.ones([1, 2, 3], dtype=fc.bool))
    with pytest.raises(IndexError):
        TM.sum(torch.zeros(2, 3), mask=torch.ones(1, 2, 3, dtype=torch.bool))
    with pytest.raises(RuntimeError, match=r"^\[masked\.amax\] the mask of shape \(4,\) cannot be broadcast"):
        FM.amax(x, mask=fc.ones([4], dtype=fc.bool))
    with pytest.raises(RuntimeError):
        TM.amax(torch.zeros(2, 3), mask=torch.ones(4, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"^\[masked\.mean\] expected mask to be a Tensor \(bool\) or None, got list"):
        FM.mean(x, mask=[True, False, True])
    with pytest.raises(TypeError, match=r"^\[masked\.softmax\] expected input to be a Tensor, got list"):
        FM.softmax([1.0, 2.0], 0)
    with pytest.raises(TypeError, match=r"^\[masked\.logaddexp\] expected other to be a Tensor"):
        FM.logaddexp(x, 1.0)
    with pytest.raises(IndexError, match=r"^\[masked\.logaddexp\] expected a other_mask broadcastable"):
        FM.logaddexp(x, x, other_mask=fc.ones([1, 2, 3], dtype=fc.bool))


def test_dim_errors():
    x = fc.zeros([2, 3])
    with pytest.raises(
        IndexError, match=r"^\[masked\.sum\] Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"
    ):
        FM.sum(x, 2)
    with pytest.raises(IndexError):
        TM.sum(torch.zeros(2, 3), 2)
    with pytest.raises(RuntimeError, match=r"^\[masked\.amin\] dim=-2 appears multiple times in the list of dims"):
        FM.amin(x, (0, -2))
    with pytest.raises(RuntimeError):
        TM.amin(torch.zeros(2, 3), (0, -2))
    with pytest.raises(IndexError, match=r"^\[masked\.softmax\] Dimension out of range"):
        FM.softmax(x, -3)
    with pytest.raises(IndexError, match=r"^\[masked\.argmax\] Dimension out of range"):
        FM.argmax(x, 5)
    with pytest.raises(TypeError, match=r"^\[masked\.cumsum\] dim must be an int, got NoneType"):
        FM.cumsum(x, None)
    with pytest.raises(TypeError, match=r"^\[masked\.sum\] dim must be an int or a sequence of ints"):
        FM.sum(x, "rows")


def test_value_errors():
    with pytest.raises(
        ValueError, match=r"^\[masked\.mean\] Could not infer output dtype\. Input dtype must be .* Got: .*int64"
    ):
        FM.mean(fc.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"Optional dtype must be"):
        FM.mean(fc.tensor([1.0, 2.0]), dtype=fc.int32)
    with pytest.raises(ValueError):
        TM.mean(torch.tensor([1, 2, 3]))
    m = fc.tensor([[True, False], [False, False]])
    with pytest.raises(
        ValueError, match=r"^\[masked\.median\] expects no fully masked out rows if dtype is not floating point"
    ):
        FM.median(fc.tensor([[1, 2], [3, 4]]), 1, mask=m)
    with pytest.raises(ValueError):
        TM.median(torch.tensor([[1, 2], [3, 4]]), 1, mask=torch.tensor([[True, False], [False, False]]))
    with pytest.raises(RuntimeError, match=r"^\[masked\.var\] Only one of unbiased and correction may be given"):
        FM.var(fc.zeros([3]), 0, True, correction=1)
    with pytest.raises(TypeError, match=r"^\[masked\.amax\] has no identity for bool input"):
        FM.amax(fc.tensor([True, False]), mask=fc.tensor([True, False]))


@pytest.mark.parametrize("name", ["sum", "amax", "amin", "argmax", "mean", "var", "std", "softmax"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_half_precision_inputs_match_torch(name, dtype):
    x = sample(dtype=dtype)
    for mask in masks():
        check(name, x, 1, mask=mask)


def test_torchs_private_mask_helpers():
    """torch.masked._input_mask/_output_mask, which PyTorch's own test wrappers call."""
    x = sample()
    for mask in list(masks())[1:]:
        assert_like(FM._input_mask(convert(x), mask=convert(mask)), TM._input_mask(x, mask=mask), "_input_mask")
        for name, args in [("sum", (1,)), ("amax", ((0, 2),)), ("norm", (2.0, 1)), ("softmax", (2,)), ("median", ())]:
            ours = FM._output_mask(getattr(FM, name), convert(x), *args, mask=convert(mask), keepdim=True)
            theirs = TM._output_mask(getattr(TM, name), x, *args, mask=mask, keepdim=True)
            assert_like(ours, theirs, f"_output_mask {name}")
    with pytest.raises(ValueError, match=r"^\[masked\._input_mask\] requires an explicit mask"):
        FM._input_mask(convert(x))
    with pytest.raises(ValueError, match=r"^\[masked\._output_mask\] expected a masked function"):
        FM._output_mask(len, convert(x), mask=convert(mask))
