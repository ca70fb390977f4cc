"""flambeau.array_api against the Array API standard (2024.12), NumPy as the oracle.

Inputs come from hypothesis's own Array API strategies
(``hypothesis.extra.array_api``), driven by flambeau's namespace: they build
the arrays through ``xp.asarray``/``xp.zeros``/``xp.full`` and check the
namespace's dtypes and ``finfo``/``iinfo`` on the way.
"""

from __future__ import annotations

import math

import flambeau_core as fc
import flambeau_core.array_api as xp
import numpy as np
import pytest
from helpers import to_numpy
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

xps = make_strategies_namespace(xp, api_version="2024.12")

REAL_FLOATS = st.sampled_from([xp.float32, xp.float64])


# Not helpers.assert_matches: the array-API results are checked by value only, atol = rtol by dtype.
def close(got, expected, dtype) -> None:
    rtol = 1e-5 if dtype == xp.float32 else 1e-12
    np.testing.assert_allclose(to_numpy(got), expected, rtol=rtol, atol=rtol, equal_nan=True)


# ---------------------------------------------------------------------------
# The namespace itself


def test_tensor_array_namespace_is_this_module():
    x = fc.ones(2)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")
    assert xp.__array_api_version__ == "2024.12"


def test_namespace_info():
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    assert info.default_device() == fc.device("cpu")
    assert info.devices() == [fc.device("cpu")]
    defaults = info.default_dtypes()
    assert defaults["real floating"] == xp.float32 and defaults["integral"] == xp.int64
    assert defaults["indexing"] == xp.int64
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    assert info.dtypes(kind="bool") == {"bool": xp.bool}
    assert set(info.dtypes(kind=("real floating", "bool"))) == {"float32", "float64", "bool"}
    with pytest.raises(ValueError, match="unknown device"):
        info.dtypes(device="cuda:3")


def test_constants():
    assert xp.e == math.e and xp.pi == math.pi and math.isinf(xp.inf) and math.isnan(xp.nan)
    assert xp.newaxis is None
    x = xp.asarray([1.0, 2.0])
    assert x[xp.newaxis].shape == (1, 2)


def test_isdtype_kinds_and_errors():
    assert xp.isdtype(xp.float32, "real floating")
    assert xp.isdtype(xp.int8, ("signed integer", "bool"))
    assert xp.isdtype(xp.uint8, "unsigned integer") and xp.isdtype(xp.uint8, "integral")
    assert not xp.isdtype(xp.bool, "numeric")
    assert xp.isdtype(xp.int64, xp.int64) and not xp.isdtype(xp.int64, xp.int32)
    with pytest.raises(ValueError, match="unknown kind 'floating'"):
        xp.isdtype(xp.float32, "floating")
    with pytest.raises(TypeError, match="expected a dtype"):
        xp.isdtype("float32", "real floating")


# ---------------------------------------------------------------------------
# asarray copy semantics


def test_asarray_copy_semantics():
    x = xp.asarray([1.0, 2.0, 3.0])
    same = xp.asarray(x)
    assert same is x  # copy=None: no copy when none is needed
    forced = xp.asarray(x, copy=True)
    forced[0] = 9.0
    assert x.tolist()[0] == 1.0
    assert xp.asarray(x, copy=False) is x
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(x, dtype=xp.float64, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    assert xp.asarray(x, dtype=xp.float64).dtype == xp.float64


def test_asarray_shares_a_buffer_without_copy():
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    shared = xp.asarray(memoryview(buf).cast("f"), copy=False)
    assert shared.dtype == xp.float32
    buf[0:4] = np.float32(7.0).tobytes()
    assert shared.tolist()[0] == 7.0
    copied = xp.asarray(memoryview(buf).cast("f"))
    buf[0:4] = np.float32(1.0).tobytes()
    assert copied.tolist()[0] == 7.0


def test_asarray_scalars_and_nesting():
    assert xp.asarray(True).dtype == xp.bool
    assert xp.asarray(3).dtype == xp.int64
    assert xp.asarray(3.5).dtype == xp.float32
    assert xp.asarray([[1, 2], [3, 4]]).shape == (2, 2)


def test_asarray_uint64_scalars_in_sequences_match_numpy():
    # 0-d uint64 arrays and NumPy uint64 scalars, 2**63 and above included, as elements of a sequence
    big = xp.asarray(2**63, dtype=xp.uint64)
    got = xp.asarray([[np.uint64(2**64 - 1)], [np.uint64(5)]])
    want = np.asarray([[np.uint64(2**64 - 1)], [np.uint64(5)]])
    assert got.dtype == xp.uint64 and want.dtype == np.uint64 and got.tolist() == want.tolist()
    # Python ints next to them are weak scalars, as in the standard's promotion (NumPy's list inference
    # reads them as int64 and gives float64)
    for obj in ([big, 3], (np.uint64(2**63), 2**64 - 1)):
        got = xp.asarray(obj)
        assert got.dtype == xp.uint64
        assert got.tolist() == np.asarray(obj, dtype=np.uint64).tolist()
    assert xp.asarray([big], dtype=xp.uint64).tolist() == [2**63]
    # next to a float, or into a float dtype: the float value (NumPy's float64 here)
    got = xp.asarray([big, 1.5], dtype=xp.float64)
    assert got.tolist() == np.asarray([np.uint64(2**63), 1.5]).tolist()
    assert xp.asarray([big, 1.5]).dtype == xp.float32  # the default float, as for [2**62, 1.5]
    assert xp.asarray([big], dtype=xp.float32).tolist() == [2.0**63]
    # a signed dtype cannot hold it: core's overflow error
    with pytest.raises(fc.FlambeauError, match="does not fit in int64"):
        xp.asarray([big], dtype=xp.int64)
    # a small 0-d uint64 array still gives uint64
    assert xp.asarray([xp.asarray(7, dtype=xp.uint64)]).dtype == xp.uint64


# ---------------------------------------------------------------------------
# Element-wise functions against NumPy on hypothesis arrays

UNARY_FLOAT = {
    "abs": np.abs,
    "ceil": np.ceil,
    "exp": np.exp,
    "expm1": np.expm1,
    "floor": np.floor,
    "negative": np.negative,
    "positive": np.positive,
    "round": np.round,
    "sign": np.sign,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "square": np.square,
    "trunc": np.trunc,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "signbit": np.signbit,
}


@settings(max_examples=25, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(UNARY_FLOAT)))
def test_unary_matches_numpy(data, name):
    dtype = data.draw(REAL_FLOATS)
    x = data.draw(xps.arrays(dtype=dtype, shape=xps.array_shapes(max_dims=3, max_side=5)))
    expected = UNARY_FLOAT[name](to_numpy(x))
    got = getattr(xp, name)(x)
    assert tuple(got.shape) == expected.shape
    if expected.dtype == np.bool_:
        assert to_numpy(got).tolist() == expected.tolist()
    else:
        assert got.dtype == x.dtype
        close(got, expected, dtype)


BINARY_FLOAT = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "copysign": np.copysign,
    "logaddexp": np.logaddexp,
    "nextafter": np.nextafter,
    "less": np.less,
    "greater_equal": np.greater_equal,
    "equal": np.equal,
}


@settings(max_examples=25, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(BINARY_FLOAT)))
def test_binary_matches_numpy_with_broadcasting(data, name):
    dtype = data.draw(REAL_FLOATS)
    s1, s2 = data.draw(xps.mutually_broadcastable_shapes(2, max_dims=3, max_side=4)).input_shapes
    x1 = data.draw(xps.arrays(dtype=dtype, shape=s1))
    x2 = data.draw(xps.arrays(dtype=dtype, shape=s2))
    with np.errstate(all="ignore"):
        expected = BINARY_FLOAT[name](to_numpy(x1), to_numpy(x2))
    got = getattr(xp, name)(x1, x2)
    assert tuple(got.shape) == expected.shape
    if expected.dtype == np.bool_:
        assert to_numpy(got).tolist() == expected.tolist()
    else:
        close(got, expected, dtype)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_integer_arithmetic_wraps_like_numpy(data):
    dtype = data.draw(st.sampled_from([xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8]))
    shape = data.draw(xps.array_shapes(max_dims=2, max_side=4))
    x1 = data.draw(xps.arrays(dtype=dtype, shape=shape))
    x2 = data.draw(xps.arrays(dtype=dtype, shape=shape))
    for name in ("add", "subtract", "multiply", "bitwise_and", "bitwise_xor"):
        expected = getattr(np, name)(to_numpy(x1), to_numpy(x2))
        assert to_numpy(getattr(xp, name)(x1, x2)).tolist() == expected.tolist(), name
    assert to_numpy(xp.bitwise_invert(x1)).tolist() == np.invert(to_numpy(x1)).tolist()


def test_python_scalar_operands():
    x = xp.asarray([1.0, 2.0], dtype=xp.float64)
    assert xp.add(x, 1).dtype == xp.float64
    assert xp.multiply(2, x).tolist() == [2.0, 4.0]
    assert xp.subtract(1.5, x).tolist() == [0.5, -0.5]
    with pytest.raises(TypeError, match="at least one argument"):
        xp.add(1, 2)


def test_clip():
    x = xp.asarray([-2.0, 0.5, 3.0, math.nan])
    assert to_numpy(xp.clip(x, min=-1.0, max=1.0)).tolist()[:3] == [-1.0, 0.5, 1.0]
    assert math.isnan(xp.clip(x, min=-1.0).tolist()[3])
    bounds = xp.asarray([0.0, 0.0, 0.0, 0.0])
    assert xp.clip(x, max=bounds).tolist()[:3] == [-2.0, 0.0, 0.0]
    assert xp.clip(x).tolist()[:3] == [-2.0, 0.5, 3.0]


# ---------------------------------------------------------------------------
# Reductions: the standard's axis rules


@settings(max_examples=40, deadline=None)
@given(data=st.data(), name=st.sampled_from(["sum", "mean", "prod", "max", "min", "var", "std", "all", "any"]))
def test_reductions_match_numpy(data, name):
    dtype = data.draw(REAL_FLOATS)
    x = data.draw(
        xps.arrays(
            dtype=dtype,
            shape=xps.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
            elements={"allow_nan": False, "min_value": -100, "max_value": 100},
        )
    )
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1) | xps.valid_tuple_axes(x.ndim, min_size=1))
    keepdims = data.draw(st.booleans())
    expected = getattr(np, name)(to_numpy(x), axis=axis, keepdims=keepdims)
    got = getattr(xp, name)(x, axis=axis, keepdims=keepdims)
    assert tuple(got.shape) == np.shape(expected)
    if name in ("all", "any"):
        assert to_numpy(got).tolist() == np.asarray(expected).tolist()
    else:
        rtol = 1e-4 if dtype == xp.float32 else 1e-10
        np.testing.assert_allclose(to_numpy(got), expected, rtol=rtol, atol=rtol * 100)


def test_reduction_over_no_axes_keeps_every_element():
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert xp.sum(x, axis=()).tolist() == x.tolist()
    assert xp.max(x, axis=()).tolist() == x.tolist()
    assert xp.var(x, axis=()).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert xp.sum(xp.asarray(5.0)).tolist() == 5.0


def test_reduction_dtypes_follow_the_standard():
    i8 = xp.asarray([100, 100], dtype=xp.int8)
    assert xp.sum(i8).dtype == xp.int64 and xp.sum(i8).tolist() == 200
    assert xp.sum(i8, dtype=xp.int8).dtype == xp.int8
    assert xp.sum(xp.asarray([True, True])).tolist() == 2


def test_var_std_default_to_no_correction():
    x = xp.asarray([1.0, 2.0, 3.0, 4.0])
    assert xp.var(x).tolist() == pytest.approx(np.var([1, 2, 3, 4]))
    assert xp.std(x, correction=1).tolist() == pytest.approx(np.std([1, 2, 3, 4], ddof=1))


def test_reduction_axis_errors():
    x = xp.zeros((2, 3))
    with pytest.raises(IndexError, match="axis 2 is out of range"):
        xp.sum(x, axis=2)
    with pytest.raises(ValueError, match="repeated axis"):
        xp.sum(x, axis=(0, -2))


# ---------------------------------------------------------------------------
# Manipulation


def test_concat_stack_and_axis_none():
    a, b = xp.asarray([[1, 2]]), xp.asarray([[3, 4]])
    assert xp.concat([a, b]).tolist() == [[1, 2], [3, 4]]
    assert xp.concat([a, b], axis=1).tolist() == [[1, 2, 3, 4]]
    assert xp.concat([a, b], axis=None).tolist() == [1, 2, 3, 4]
    assert xp.stack([a, b], axis=-1).shape == (1, 2, 2)
    assert [t.tolist() for t in xp.unstack(xp.asarray([[1, 2], [3, 4]]), axis=1)] == [[1, 3], [2, 4]]


def test_squeeze_follows_the_standard():
    x = xp.zeros((1, 3, 1))
    assert xp.squeeze(x, axis=0).shape == (3, 1)
    assert xp.squeeze(x, axis=(0, 2)).shape == (3,)
    with pytest.raises(ValueError, match="axis 1 has size 3, not 1"):
        xp.squeeze(x, axis=1)


def test_expand_dims_permute_reshape():
    x = xp.asarray([[1, 2, 3]])
    assert xp.expand_dims(x, axis=-1).shape == (1, 3, 1)
    with pytest.raises(IndexError, match="out of range"):
        xp.expand_dims(x, axis=4)
    assert xp.permute_dims(x, (1, 0)).shape == (3, 1)
    assert xp.matrix_transpose(x).shape == (3, 1)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        xp.matrix_transpose(xp.asarray([1, 2]))
    view = xp.reshape(x, (3,), copy=False)
    view[0] = 9
    assert x.tolist()[0][0] == 9
    with pytest.raises(ValueError, match="needs a copy"):
        xp.reshape(xp.permute_dims(xp.zeros((2, 3)), (1, 0)), (6,), copy=False)


def test_broadcast_and_diff():
    a, b = xp.broadcast_arrays(xp.zeros((2, 1)), xp.ones((3,)))
    assert a.shape == b.shape == (2, 3)
    assert xp.broadcast_to(xp.asarray([1, 2]), (3, 2)).tolist() == [[1, 2]] * 3
    x = xp.asarray([1, 4, 9, 16])
    assert xp.diff(x).tolist() == [3, 5, 7]
    assert xp.diff(x, n=2).tolist() == [2, 2]
    assert xp.diff(x, prepend=xp.asarray([0])).tolist() == [1, 3, 5, 7]


def test_argmax_argmin_axis_none():
    x = xp.asarray([[1.0, 5.0], [7.0, 2.0]])
    assert xp.argmax(x).tolist() == 2
    assert xp.argmax(x, axis=1).tolist() == [1, 0]
    assert xp.argmax(x, keepdims=True).shape == (1, 1)


def test_astype_and_result_type():
    x = xp.asarray([1.5, 2.5])
    y = xp.astype(x, xp.int32)
    assert y.dtype == xp.int32 and y.tolist() == [1, 2]
    same = xp.astype(x, xp.float32, copy=False)
    assert same is x
    assert xp.astype(x, xp.float32) is not x
    assert xp.result_type(xp.int8, xp.uint8) == xp.int16
    assert xp.result_type(x, 1) == xp.float32
    assert xp.result_type(xp.asarray([1], dtype=xp.int8), 1.0) == xp.float32
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.float64, xp.int32)


def test_to_device_and_device():
    x = xp.asarray([1.0])
    assert x.to_device("cpu").device == fc.device("cpu")
    assert xp.device(x) == fc.device("cpu")
    with pytest.raises(ValueError, match="stream"):
        xp.to_device(x, "cpu", stream=1)
    assert complex(xp.asarray(2.0)) == 2 + 0j


# ---------------------------------------------------------------------------
# Sorting, sets, searching, cumulative sums


def test_sort_and_argsort_follow_the_standard():
    x = xp.asarray([3.0, 1.0, 2.0, 1.0])
    assert xp.sort(x).tolist() == [1.0, 1.0, 2.0, 3.0]
    assert xp.sort(x, descending=True).tolist() == [3.0, 2.0, 1.0, 1.0]
    assert xp.argsort(x).tolist() == [1, 3, 2, 0]  # stable by default: ties keep their order


def test_unique_family():
    x = xp.asarray([[3, 1], [3, 2]])
    values, indices, inverse, counts = xp.unique_all(x)
    assert values.tolist() == [1, 2, 3]
    assert indices.tolist() == [1, 3, 0]
    assert inverse.shape == x.shape and inverse.tolist() == [[2, 0], [2, 1]]
    assert counts.tolist() == [1, 1, 2]
    assert xp.unique_values(x).tolist() == [1, 2, 3]
    assert xp.unique_counts(x).counts.tolist() == [1, 1, 2]
    assert xp.unique_inverse(x).inverse_indices.tolist() == [[2, 0], [2, 1]]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_unique_family_complex_matches_numpy(dtype):
    # no complex kernel (PyTorch's unique refuses complex too): the namespace's, ordered as NumPy's
    # (real part, then imaginary part)
    a = np.array([[1 + 1j, 2j, 1 + 1j], [-1 + 0j, 2j, 1 - 1j], [0j, 1 + 1j, -1 + 0j]], dtype=dtype)
    values, indices, inverse, counts = xp.unique_all(xp.asarray(a.tolist(), dtype=getattr(xp, dtype)))
    want = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    assert values.dtype == getattr(xp, dtype) and inverse.shape == a.shape
    for g, w in zip((values, indices, inverse, counts), want, strict=True):
        np.testing.assert_array_equal(to_numpy(g), w.reshape(g.shape))
    # every NaN is its own value (the standard's rule; NumPy's equal_nan=False)
    nans = xp.asarray([complex(math.nan, 0), complex(math.nan, 0), 1j], dtype=getattr(xp, dtype))
    got = xp.unique_counts(nans)
    assert got.counts.tolist() == [1, 1, 1] and len(np.unique(to_numpy(nans), equal_nan=False)) == 3
    assert xp.unique_values(xp.asarray([], dtype=getattr(xp, dtype))).dtype == getattr(xp, dtype)


def test_searching():
    x = xp.asarray([[0, 2], [3, 0]])
    rows, cols = xp.nonzero(x)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    with pytest.raises(ValueError, match="0-d"):
        xp.nonzero(xp.asarray(1))
    assert xp.count_nonzero(x).tolist() == 2
    assert xp.count_nonzero(x, axis=0).tolist() == [1, 1]
    s = xp.asarray([1.0, 2.0, 2.0, 3.0])
    assert xp.searchsorted(s, xp.asarray([2.0])).tolist() == [1]
    assert xp.searchsorted(s, xp.asarray([2.0]), side="right").tolist() == [3]
    with pytest.raises(ValueError, match="side"):
        xp.searchsorted(s, s, side="middle")


@given(
    x=xps.arrays(dtype=xps.real_dtypes(), shape=st.tuples(st.integers(1, 4), st.integers(1, 5)), unique=True),
    data=st.data(),
)
@settings(max_examples=40, deadline=None)
def test_top_k_matches_numpy(x, data):
    # distinct values (the standard leaves the order of ties open); NumPy's sort as the oracle
    axis = data.draw(st.sampled_from([-1, 0, 1, None]), label="axis")
    mode = data.draw(st.sampled_from(["largest", "smallest"]), label="mode")
    a = to_numpy(x)
    assume(not (a.dtype.kind == "f" and np.isnan(a).any()))  # (NaN has no place in NumPy's order to compare)
    flat = a.reshape(-1) if axis is None else a
    ax = -1 if axis is None else axis
    k = data.draw(st.integers(0, flat.shape[ax]), label="k")
    values, indices = xp.top_k(x, k, axis=axis, mode=mode)
    order = np.argsort(-flat if mode == "largest" and flat.dtype.kind == "f" else flat, axis=ax, kind="stable")
    if mode == "largest" and flat.dtype.kind != "f":
        order = np.flip(np.argsort(flat, axis=ax, kind="stable"), axis=ax)
    want_idx = np.take(order, np.arange(k), axis=ax)
    assert values.dtype == x.dtype and indices.dtype == xp.int64
    np.testing.assert_array_equal(to_numpy(indices), want_idx)
    np.testing.assert_array_equal(to_numpy(values), np.take_along_axis(flat, want_idx, axis=ax))


def test_top_k_defaults_bool_and_errors():
    x = xp.asarray([[3, 1, 4], [1, 5, 9]])
    values, indices = xp.top_k(x, 2)  # axis=-1, mode="largest"
    assert values.tolist() == [[4, 3], [9, 5]] and indices.tolist() == [[2, 0], [2, 1]]
    assert xp.top_k(xp.asarray([False, True, False]), 1)[1].tolist() == [1]
    with pytest.raises(ValueError, match="top_k: mode must be 'largest' or 'smallest', got 'max'"):
        xp.top_k(x, 1, mode="max")
    with pytest.raises(ValueError, match=r"top_k: k=4 is out of range for an axis of size 3"):
        xp.top_k(x, 4)
    with pytest.raises(ValueError, match=r"top_k: k=-1 is out of range"):
        xp.top_k(x, -1)
    with pytest.raises(TypeError, match="top_k: k must be an int, got float"):
        xp.top_k(x, 1.0)
    with pytest.raises(IndexError, match="top_k: axis 2 is out of range for a 2-d array"):
        xp.top_k(x, 1, axis=2)
    with pytest.raises(ValueError, match="top_k: not defined for a 0-d array"):
        xp.top_k(xp.asarray(1.0), 1)


def test_cumulative_sum_and_prod():
    x = xp.asarray([1, 2, 3], dtype=xp.int8)
    out = xp.cumulative_sum(x)
    assert out.dtype == xp.int64 and out.tolist() == [1, 3, 6]
    assert xp.cumulative_sum(x, include_initial=True).tolist() == [0, 1, 3, 6]
    assert xp.cumulative_prod(x, include_initial=True).tolist() == [1, 1, 2, 6]
    m = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert xp.cumulative_sum(m, axis=1).tolist() == [[1.0, 3.0], [3.0, 7.0]]
    with pytest.raises(ValueError, match="axis is required"):
        xp.cumulative_sum(m)


def test_manipulation_breadth():
    x = xp.asarray([[1, 2], [3, 4]])
    assert xp.flip(x).tolist() == [[4, 3], [2, 1]]
    assert xp.flip(x, axis=0).tolist() == [[3, 4], [1, 2]]
    assert xp.roll(x, 1).tolist() == [[4, 1], [2, 3]]
    assert xp.roll(x, 1, axis=1).tolist() == [[2, 1], [4, 3]]
    assert xp.repeat(xp.asarray([1, 2]), 2).tolist() == [1, 1, 2, 2]
    assert xp.tile(xp.asarray([1, 2]), (2,)).tolist() == [1, 2, 1, 2]
    assert xp.moveaxis(xp.zeros((2, 3, 4)), 0, -1).shape == (3, 4, 2)
    assert xp.take(xp.asarray([5, 6, 7]), xp.asarray([2, 0])).tolist() == [7, 5]
    assert xp.take(x, xp.asarray([1]), axis=1).tolist() == [[2], [4]]
    assert xp.take_along_axis(x, xp.asarray([[1], [0]]), axis=1).tolist() == [[2], [3]]
    assert xp.tril(x).tolist() == [[1, 0], [3, 4]] and xp.triu(x, k=1).tolist() == [[0, 2], [0, 0]]
    assert xp.eye(2, 3, k=1).tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert xp.linspace(0.0, 1.0, 4, endpoint=False).tolist() == [0.0, 0.25, 0.5, 0.75]
    gx, gy = xp.meshgrid(xp.asarray([1, 2]), xp.asarray([3, 4, 5]))
    assert gx.shape == (3, 2) and gy.shape == (3, 2)
    assert xp.full_like(x, 7).tolist() == [[7, 7], [7, 7]]


# ---------------------------------------------------------------------------
# The linalg extension


def test_linalg_extension_against_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4,))
    xa = xp.asarray(a.tolist(), dtype=xp.float64)
    xb = xp.asarray(b.tolist(), dtype=xp.float64)
    la = xp.linalg
    np.testing.assert_allclose(to_numpy(la.det(xa)), np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(to_numpy(la.inv(xa)), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    # A 1-d x2 is one vector, solved against every matrix of the batch.
    np.testing.assert_allclose(to_numpy(la.solve(xa, xb)), np.linalg.solve(a, b[None, :, None])[..., 0], rtol=1e-10)
    np.testing.assert_allclose(to_numpy(la.vector_norm(xb, ord=1)), np.abs(b).sum(), rtol=1e-12)
    expected = np.linalg.norm(a, axis=(-2, -1), keepdims=True)
    np.testing.assert_allclose(to_numpy(la.matrix_norm(xa, keepdims=True)), expected)
    np.testing.assert_allclose(to_numpy(la.trace(xa, offset=1)), np.trace(a, offset=1, axis1=-2, axis2=-1), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(la.svdvals(xa)), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    q, r = la.qr(xa)
    np.testing.assert_allclose(to_numpy(q @ r), a, rtol=1e-10, atol=1e-12)
    assert la.diagonal(xa).shape == (3, 4)
    assert la.cross(xp.asarray([1.0, 0.0, 0.0]), xp.asarray([0.0, 1.0, 0.0])).tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="size 3"):
        la.cross(xb, xb)
    with pytest.raises(ValueError, match="mode"):
        la.qr(xa, mode="r")


def test_fft_extension_helpers():
    assert xp.fft.fftfreq(4).tolist() == [0.0, 0.25, -0.5, -0.25]
    assert xp.fft.rfftfreq(4, d=0.5).tolist() == [0.0, 0.5, 1.0]
    assert xp.fft.fftshift(xp.asarray([0, 1, 2, 3])).tolist() == [2, 3, 0, 1]
    assert xp.fft.ifftshift(xp.fft.fftshift(xp.asarray([0, 1, 2]))).tolist() == [0, 1, 2]


def test_fft_extension_transforms():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 8))
    c = a + 1j * rng.standard_normal((3, 8))
    x = xp.asarray(a)
    z = fc.complex(xp.asarray(c.real.copy()), xp.asarray(c.imag.copy()))

    def close(got, want):
        np.testing.assert_allclose(np.asarray(got.tolist()).reshape(want.shape), want, rtol=1e-10, atol=1e-10)

    for norm in ("backward", "ortho", "forward"):
        close(xp.fft.fft(z, norm=norm), np.fft.fft(c, norm=norm))
        close(xp.fft.ifft(z, n=5, axis=0, norm=norm), np.fft.ifft(c, n=5, axis=0, norm=norm))
        close(xp.fft.rfft(x, norm=norm), np.fft.rfft(a, norm=norm))
        close(xp.fft.irfft(z, n=9, norm=norm), np.fft.irfft(c, n=9, norm=norm))
        close(xp.fft.hfft(z, norm=norm), np.fft.hfft(c, norm=norm))
        close(xp.fft.ihfft(x, norm=norm), np.fft.ihfft(a, norm=norm))
        close(xp.fft.fftn(z, s=(4, 6), axes=(1, 0), norm=norm), np.fft.fftn(c, s=(4, 6), axes=(1, 0), norm=norm))
        close(xp.fft.ifftn(z, norm=norm), np.fft.ifftn(c, norm=norm))
        close(xp.fft.rfftn(x, axes=(0, 1), norm=norm), np.fft.rfftn(a, axes=(0, 1), norm=norm))
        close(xp.fft.irfftn(z, s=(3, 10), norm=norm), np.fft.irfftn(c, s=(3, 10), norm=norm))
    assert xp.fft.fft(xp.asarray(a.astype(np.float32))).dtype == xp.complex64
    with pytest.raises(IndexError, match="fft.fft: Dimension out of range"):
        xp.fft.fft(x, axis=2)


def test_module_docstring_example():
    import doctest

    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner()
    for test in finder.find(xp, "flambeau.array_api"):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
