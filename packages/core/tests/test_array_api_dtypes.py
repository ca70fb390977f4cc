"""flambeau.array_api's data-type rules (flambeau_core/_array_api_dtypes.py) and the
uint16/uint32/uint64 support of its functions; NumPy (which follows the standard's
promotion table within a kind) and the standard's text are the oracles.

Each case here was a failure of the Array API test suite (data-apis/array-api-tests)
against flambeau.array_api.
"""

from __future__ import annotations

import itertools

import flambeau_core as fc
import flambeau_core.array_api as xp
import numpy as np
import pytest
from helpers import to_numpy

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float64", "complex64", "complex128"]
WIDE_UNSIGNED = ["uint16", "uint32", "uint64"]


def np_dtype(name: str) -> np.dtype:
    return np.dtype(name)


def xp_dtype(name: str):
    return getattr(xp, name)


# ---------------------------------------------------------------------------
# Promotion


# Signed with uint64 is outside the standard's table (NumPy gives float64): tested on its own below.
INT_PAIRS = [
    (a, b)
    for a, b in itertools.combinations_with_replacement(INTS, 2)
    if not ("uint64" in (a, b) and a.startswith("int") != b.startswith("int"))
]


@pytest.mark.parametrize(("a", "b"), INT_PAIRS)
def test_result_type_of_integers_follows_the_standard(a, b):
    expected = np.promote_types(np_dtype(a), np_dtype(b)).name
    assert xp.result_type(xp_dtype(a), xp_dtype(b)) == xp_dtype(expected)
    assert xp.result_type(xp_dtype(b), xp_dtype(a)) == xp_dtype(expected)


@pytest.mark.parametrize(
    ("a", "b"), list(itertools.combinations_with_replacement(["float32", "float64"] + FLOATS[2:], 2))
)
def test_result_type_of_floating_types_follows_the_standard(a, b):
    expected = np.promote_types(np_dtype(a), np_dtype(b)).name
    assert xp.result_type(xp_dtype(a), xp_dtype(b)) == xp_dtype(expected)


@pytest.mark.parametrize("signed", ["int8", "int16", "int32", "int64"])
def test_signed_with_uint64_promotes_to_int64(signed):
    # Not in the standard's table; flambeau keeps an integer type, the widest signed one (as for int64/uint32).
    assert xp.result_type(xp_dtype(signed), xp.uint64) == xp.int64
    assert xp.add(xp.asarray([-1], dtype=xp_dtype(signed)), xp.asarray([2], dtype=xp.uint64)).tolist() == [1]


def test_result_type_of_several_and_of_arrays_and_scalars():
    assert xp.result_type(xp.uint8, xp.int8, xp.uint16) == xp.int32
    assert xp.result_type(xp.ones(1, dtype=xp.uint16), xp.uint32) == xp.uint32
    # A Python scalar takes the array's dtype within its kind (the standard's rule).
    assert xp.result_type(xp.uint16, 3) == xp.uint16
    assert xp.result_type(xp.complex64, 1.0) == xp.complex64
    assert xp.result_type(xp.float64, 1j) == xp.complex128
    with pytest.raises(ValueError, match="result_type: at least one"):
        xp.result_type()
    with pytest.raises(TypeError, match="result_type: expected arrays, dtypes or Python scalars, got str"):
        xp.result_type(xp.int8, "int8")


def test_can_cast_follows_the_promotion_table():
    assert xp.can_cast(xp.uint8, xp.uint16) and xp.can_cast(xp.uint8, xp.int16)
    assert xp.can_cast(xp.uint32, xp.int64) and xp.can_cast(xp.float32, xp.complex64)
    assert not xp.can_cast(xp.uint16, xp.int16)  # NumPy: int32 is the smallest signed type holding uint16
    assert not xp.can_cast(xp.int64, xp.int8) and not xp.can_cast(xp.float64, xp.float32)
    assert not xp.can_cast(xp.complex64, xp.float64) and not xp.can_cast(xp.float32, xp.int64)
    assert xp.can_cast(xp.ones(1, dtype=xp.uint16), xp.uint64)
    with pytest.raises(TypeError, match="can_cast: expected dtypes"):
        xp.can_cast("int8", xp.int16)


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_numpy_and_gives_a_dtype(name):
    info = xp.finfo(xp_dtype(name))
    ref = np.finfo(np_dtype(name))
    assert isinstance(info.dtype, fc.dtype)
    assert info.dtype == xp_dtype(ref.dtype.name)  # the real component's dtype for complex types
    assert info.bits == ref.bits
    assert (info.eps, info.max, info.min, info.smallest_normal) == (
        float(ref.eps),
        float(ref.max),
        float(ref.min),
        float(ref.smallest_normal),
    )
    assert xp.finfo(xp.ones(1, dtype=xp_dtype(name))).dtype == info.dtype
    with pytest.raises(TypeError, match="finfo: expected a floating dtype"):
        xp.finfo(xp.int32)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_numpy_and_gives_a_dtype(name):
    info = xp.iinfo(xp_dtype(name))
    ref = np.iinfo(np_dtype(name))
    assert info.dtype == xp_dtype(name) and isinstance(info.dtype, fc.dtype)
    assert (info.bits, info.min, info.max) == (ref.bits, int(ref.min), int(ref.max))
    with pytest.raises(TypeError, match="iinfo: expected an integer dtype"):
        xp.iinfo(xp.float32)


def test_info_accepts_device_objects():
    info = xp.__array_namespace_info__()
    for device in info.devices():
        assert info.default_dtypes(device=device)["indexing"] == xp.int64
        assert "uint16" in info.dtypes(device=device, kind="unsigned integer")


# ---------------------------------------------------------------------------
# Binary functions across dtypes and with Python scalars


def arr(values, name):
    """A flambeau array and its NumPy twin (uint64 values from 2**63 up included)."""
    return xp.asarray(values, dtype=xp_dtype(name)), np.asarray(values, dtype=np_dtype(name))


@pytest.mark.parametrize(
    ("a", "b"), [("uint8", "uint16"), ("int8", "uint16"), ("uint16", "uint32"), ("int16", "uint32")]
)
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "equal", "less", "maximum"])
def test_binary_functions_promote_unsigned_types(a, b, name):
    x1, n1 = arr([1, 7, 100], a)
    x2, n2 = arr([3, 7, 9], b)
    out = getattr(xp, name)(x1, x2)
    expected = getattr(np, name)(n1, n2)
    assert out.dtype == xp_dtype(expected.dtype.name)
    np.testing.assert_array_equal(to_numpy(out), expected)


def test_minimum_of_float32_and_float64_is_float64():
    out = xp.minimum(xp.asarray([1.0], dtype=xp.float32), xp.asarray([2.0], dtype=xp.float64))
    assert out.dtype == xp.float64 and out.tolist() == [1.0]


@pytest.mark.parametrize("name", ["hypot", "atan2", "logaddexp", "copysign"])
def test_binary_functions_take_a_python_scalar_on_the_right(name):
    x = xp.asarray([3.0, -4.0], dtype=xp.float32)
    out = getattr(xp, name)(x, 2.0)
    assert out.dtype == xp.float32
    np.testing.assert_allclose(to_numpy(out), getattr(np, name)(np.float32([3.0, -4.0]), np.float32(2.0)), rtol=1e-6)


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_functions_take_a_python_bool(name):
    x = xp.asarray([True, False])
    out = getattr(xp, name)(x, True)
    np.testing.assert_array_equal(to_numpy(out), getattr(np, name)(np.array([True, False]), True))


def test_binary_functions_reject_other_operands():
    with pytest.raises(TypeError, match="add: at least one argument must be a flambeau Tensor"):
        xp.add(1, 2)
    with pytest.raises(TypeError, match="add: expected a Tensor or a Python scalar, got str"):
        xp.add(xp.ones(1), "1")


# ---------------------------------------------------------------------------
# uint16 / uint32 / uint64 (kernels lack them; the namespace computes them signed)

BIG = [0, 1, 5, 2**63 + 5, 2**64 - 1]


@pytest.mark.parametrize("name", WIDE_UNSIGNED)
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift"])
def test_unsigned_bitwise(name, op):
    top = 2 ** (np.iinfo(np_dtype(name)).bits) - 1
    values = [v for v in BIG if v <= top] + [top]
    x1, n1 = arr(values, name)
    x2, n2 = arr([3, 1, 2, 4, 1, 0][: len(values)], name)
    out = getattr(xp, op)(x1, x2)
    assert out.dtype == xp_dtype(name)
    np.testing.assert_array_equal(to_numpy(out), getattr(np, op)(n1, n2))


@pytest.mark.parametrize("name", ["uint16", "uint32"])
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "pow", "bitwise_right_shift"])
def test_unsigned_arithmetic_that_kernels_lack(name, op):
    x1, n1 = arr([0, 7, 200, 65535], name)
    x2, n2 = arr([3, 2, 9, 2], name)
    out = getattr(xp, op)(x1, x2)
    assert out.dtype == xp_dtype(name)
    np.testing.assert_array_equal(to_numpy(out), getattr(np, op)(n1, n2))


@pytest.mark.parametrize("name", WIDE_UNSIGNED)
@pytest.mark.parametrize("op", ["bitwise_invert", "negative", "square", "abs", "sign", "round"])
def test_unsigned_unary(name, op):
    x, n = arr([0, 1, 2, 300], name)
    ref = {"bitwise_invert": np.invert, "round": np.round}.get(op, getattr(np, op))
    with np.errstate(over="ignore"):
        expected = ref(n)
    out = getattr(xp, op)(x)
    assert out.dtype == xp_dtype(name)
    np.testing.assert_array_equal(to_numpy(out), expected)


@pytest.mark.parametrize("name", WIDE_UNSIGNED)
def test_unsigned_searching_sorting_and_sets(name):
    top = 2 ** (np.iinfo(np_dtype(name)).bits) - 1
    values = [5, top, 0, 5, 2]
    x, n = arr(values, name)
    assert int(xp.argmax(x)) == int(np.argmax(n)) and int(xp.argmin(x)) == int(np.argmin(n))
    assert int(xp.max(x)) == top and int(xp.min(x)) == 0
    assert xp.max(x).dtype == xp_dtype(name)
    np.testing.assert_array_equal(to_numpy(xp.unique_values(x)), np.unique(n))
    counts = xp.unique_counts(x)
    np.testing.assert_array_equal(to_numpy(counts.counts), np.unique(n, return_counts=True)[1])
    assert [t.tolist() for t in xp.nonzero(x)] == [a.tolist() for a in np.nonzero(n)]
    np.testing.assert_array_equal(to_numpy(xp.flip(x)), np.flip(n))
    np.testing.assert_array_equal(to_numpy(xp.roll(x, 2)), np.roll(n, 2))
    s, sn = arr(sorted(values), name)
    v, vn = arr([top, 3], name)
    np.testing.assert_array_equal(to_numpy(xp.searchsorted(s, v)), np.searchsorted(sn, vn))
    cond = xp.asarray([True, False, True, False, True])
    out = xp.where(cond, x, xp.asarray(1, dtype=xp.uint8))
    assert out.dtype == xp_dtype(name)
    np.testing.assert_array_equal(to_numpy(out), np.where(to_numpy(cond), n, np.uint8(1)))


@pytest.mark.parametrize("name", WIDE_UNSIGNED)
def test_unsigned_accumulations(name):
    x, n = arr([3, 4, 5], name)
    out = xp.cumulative_sum(x)
    assert out.dtype == xp.uint64
    np.testing.assert_array_equal(to_numpy(out), np.cumsum(n, dtype=np.uint64))
    out = xp.cumulative_sum(x, dtype=xp_dtype(name), include_initial=True)
    assert out.dtype == xp_dtype(name) and out.tolist() == [0, 3, 7, 12]
    assert xp.prod(x).dtype == xp.uint64 and int(xp.prod(x)) == 60


def test_small_integer_accumulations_keep_the_requested_dtype():
    x, n = arr([200, 100], "uint8")
    out = xp.cumulative_sum(x, dtype=xp.uint8)
    assert out.dtype == xp.uint8
    np.testing.assert_array_equal(to_numpy(out), np.cumsum(n, dtype=np.uint8))
    assert xp.prod(x).dtype == xp.uint64 and int(xp.prod(x)) == 20000
    assert xp.prod(x, dtype=xp.uint8).dtype == xp.uint8 and int(xp.prod(x, dtype=xp.uint8)) == 20000 % 256


def test_uint64_values_above_int64_build_exactly():
    x, n = arr([2**63, 2**64 - 1, 3], "uint64")
    assert x.tolist() == n.tolist()
    full = xp.full((2,), 2**64 - 1, dtype=xp.uint64)
    assert full.tolist() == [2**64 - 1] * 2
    like = xp.full_like(x, 2**63, dtype=xp.uint64)
    assert like.tolist() == [2**63] * 3


def test_repeat_takes_repeats_of_any_integer_dtype():
    x = xp.asarray([1, 2], dtype=xp.uint16)
    out = xp.repeat(x, xp.asarray([2, 1], dtype=xp.uint8))
    assert out.dtype == xp.uint16
    np.testing.assert_array_equal(to_numpy(out), np.repeat(np.uint16([1, 2]), [2, 1]))
    with pytest.raises(TypeError, match="repeat: repeats must be an int or an integer array"):
        xp.repeat(x, xp.asarray([1.0, 2.0]))


def test_round_of_complex_and_integer_arrays():
    z = np.array([2.5 - 1.5j, -0.5 + 3.7j], dtype=np.complex64)
    out = xp.round(xp.asarray(z))
    assert out.dtype == xp.complex64
    np.testing.assert_array_equal(to_numpy(out), np.round(z))
    out = xp.round(xp.asarray([3, -4], dtype=xp.int16))
    assert out.dtype == xp.int16 and out.tolist() == [3, -4]


# ---------------------------------------------------------------------------
# Products, joins and reductions: the standard's dtypes


@pytest.mark.parametrize("name", ["uint8", *WIDE_UNSIGNED])
def test_matrix_products_of_unsigned_types(name):
    a, na = arr([[1, 2], [3, 4]], name)
    b, nb = arr([[5, 250], [7, 8]], name)
    for got, expected in [
        (xp.matmul(a, b), na @ nb),
        (xp.linalg.matmul(a, b), na @ nb),
        (xp.tensordot(a, b, axes=1), np.tensordot(na, nb, axes=1)),
        (xp.vecdot(a, b), np.sum(na * nb, axis=-1, dtype=np_dtype(name))),
        (xp.linalg.outer(a[0], b[1]), np.outer(na[0], nb[1])),
    ]:
        assert got.dtype == xp_dtype(name)
        np.testing.assert_array_equal(to_numpy(got), expected)


def test_uint64_matmul_wraps_like_numpy():
    a, na = arr([[2**64 - 1, 1]], "uint64")
    b, nb = arr([[2], [3]], "uint64")
    np.testing.assert_array_equal(to_numpy(xp.matmul(a, b)), na @ nb)


def test_products_promote_their_operands():
    a = xp.asarray([[1.0, 2.0]], dtype=xp.float32)
    b = xp.asarray([[3.0], [4.0]], dtype=xp.float64)
    assert xp.matmul(a, b).dtype == xp.float64 and xp.matmul(a, b).tolist() == [[11.0]]
    assert xp.vecdot(xp.asarray([1, 2], dtype=xp.int8), xp.asarray([3, 4], dtype=xp.uint8)).dtype == xp.int16
    x = xp.linalg.solve(xp.asarray([[2.0]], dtype=xp.float32), xp.asarray([4.0], dtype=xp.float64))
    assert x.dtype == xp.float64 and x.tolist() == [2.0]


def test_concat_and_stack_promote():
    a, na = arr([1, 2], "uint16")
    b, nb = arr([3, 4], "uint8")
    out = xp.concat([a, b])
    assert out.dtype == xp.uint16
    np.testing.assert_array_equal(to_numpy(out), np.concatenate([na, nb]))
    out = xp.stack([a, b], axis=1)
    assert out.dtype == xp.uint16
    np.testing.assert_array_equal(to_numpy(out), np.stack([na, nb], axis=1))
    assert xp.concat([xp.ones(1, dtype=xp.int8), xp.ones(1, dtype=xp.uint16)], axis=None).dtype == xp.int32


@pytest.mark.parametrize("name", ["uint8", "int16", "float32", "complex64"])
def test_all_and_any_give_bool(name):
    x = xp.asarray([[0, 1], [2, 3]], dtype=xp_dtype(name))
    n = to_numpy(x)
    for fn in ("all", "any"):
        out = getattr(xp, fn)(x, axis=1)
        assert out.dtype == xp.bool
        np.testing.assert_array_equal(to_numpy(out), getattr(np, fn)(n, axis=1))
    assert xp.all(xp.asarray([float("nan")])).tolist() is True  # NaN is nonzero


def test_cross_broadcasts_and_promotes():
    a = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    b = np.array([0.0, 1.0, 0.0], dtype=np.float32)
    out = xp.linalg.cross(xp.asarray(a), xp.asarray(b))
    assert out.dtype == xp.float64
    np.testing.assert_array_equal(to_numpy(out), np.cross(a, b))
    assert xp.linalg.cross(xp.zeros((0, 3)), xp.asarray([1.0, 2.0, 3.0])).shape == (0, 3)
    with pytest.raises(ValueError, match="cross: axis 0 must have size 3"):
        xp.linalg.cross(xp.asarray(a), xp.asarray(a), axis=0)


@pytest.mark.parametrize("name", WIDE_UNSIGNED)
def test_clip_of_unsigned_types(name):
    top = 2 ** (np.iinfo(np_dtype(name)).bits) - 1
    x, n = arr([0, 7, top], name)
    out = xp.clip(x, min=3, max=top - 1)
    assert out.dtype == xp_dtype(name)
    np.testing.assert_array_equal(to_numpy(out), np.clip(n, 3, top - 1))
