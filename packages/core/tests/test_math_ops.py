"""Elementwise math, rounding, float checks, division and remainder, clamp, lerp,
logical and bitwise ops and their operators, against PyTorch 2.13 (CPU) as the
oracle: values, result dtypes (promotion), shapes (0-d, empty, broadcast,
non-contiguous) and errors."""

from __future__ import annotations

import math
import zlib

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import make_tensor

pytestmark = pytest.mark.on_devices

DT = {
    "bool": (fc.bool, torch.bool, np.bool_),
    "uint8": (fc.uint8, torch.uint8, np.uint8),
    "int8": (fc.int8, torch.int8, np.int8),
    "int16": (fc.int16, torch.int16, np.int16),
    "int32": (fc.int32, torch.int32, np.int32),
    "int64": (fc.int64, torch.int64, np.int64),
    "float32": (fc.float32, torch.float32, np.float32),
    "float64": (fc.float64, torch.float64, np.float64),
}
FC_NAME = {v[0]: k for k, v in DT.items()}
TH_NAME = {v[1]: k for k, v in DT.items()}
INTS = ["uint8", "int8", "int32", "int64"]
FLOATS = ["float32", "float64"]
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.5, math.inf, -math.inf, math.nan]
SHAPES = [(), (0,), (7,), (3, 4), (2, 3, 5)]
LAYOUTS = ["contiguous", "transposed", "sliced"]


def rng_for(*parts: str) -> np.random.Generator:
    """A generator seeded from the test's parameters (crc32: the same in every process)."""
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def values(shape, dtype, rng, *, nonzero=False):
    """Random values of dtype, with the special float values mixed in."""
    return np.asarray(_values(shape, dtype, rng, nonzero=nonzero))


def _values(shape, dtype, rng, *, nonzero=False):
    np_t = DT[dtype][2]
    if dtype == "bool":
        a = rng.random(shape) < 0.5
        return np.ones(shape, bool) if nonzero else a
    if dtype in INTS:
        lo = 1 if nonzero or dtype == "uint8" else -9
        a = rng.integers(lo, 10, size=shape)
        if nonzero:
            a = a * rng.choice([-1, 1], size=shape) if dtype != "uint8" else a
        return a.astype(np_t)
    a = rng.standard_normal(shape) * 2
    flat = a.reshape(-1)
    for i in range(min(len(SPECIAL), flat.size)):
        flat[rng.integers(flat.size)] = SPECIAL[i]
    return a.astype(np_t)


def pair(arr, layout="contiguous"):
    return make_tensor(arr, layout), torch.from_numpy(arr.copy())


def assert_same(f, t, *, rtol=None, atol=None):
    """flambeau tensor f equals torch tensor t: shape, dtype, values (NaNs equal)."""
    assert tuple(f.shape) == tuple(t.shape), f"shape {tuple(f.shape)} != {tuple(t.shape)}"
    assert FC_NAME[f.dtype] == TH_NAME[t.dtype], f"dtype {f.dtype} != {t.dtype}"
    got = np.array(f.tolist(), dtype=DT[FC_NAME[f.dtype]][2]).reshape(tuple(t.shape))
    want = t.numpy()
    if t.dtype.is_floating_point:
        r = rtol if rtol is not None else (2e-6 if t.dtype == torch.float32 else 1e-12)
        a = atol if atol is not None else (1e-6 if t.dtype == torch.float32 else 1e-12)
        np.testing.assert_allclose(got, want, rtol=r, atol=a, equal_nan=True)
        # signs of zeros and infinities agree too
        np.testing.assert_array_equal(np.signbit(got[np.isinf(want)]), np.signbit(want[np.isinf(want)]))
    else:
        np.testing.assert_array_equal(got, want)


def both(fc_fn, th_fn, *arrays, layout="contiguous", **tol):
    """Runs the op on both; if PyTorch raises, flambeau raises too (returns the error)."""
    fs, ts = zip(*(pair(a, layout) if isinstance(a, np.ndarray) else (a, a) for a in arrays), strict=True)
    try:
        want = th_fn(*ts)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        with pytest.raises((TypeError, ValueError)) as info:
            fc_fn(*fs)
        return e, info.value
    assert_same(fc_fn(*fs), want, **tol)
    return None


# ---- unary math ----

# The float-valued unary math of the shared list (Note [Elementwise math list]): a new entry is tested here
# with no edit of this file.
FLOAT_UNARY = [*fc._C._elementwise_math_ops()["float_unary"], "sqrt"]


def torch_fn(name):
    """PyTorch's function of an op: torch.<name>, or torch.special.<name> for the special_ ops."""
    return getattr(torch, name) if hasattr(torch, name) else getattr(torch.special, name.removeprefix("special_"))


ROUNDING = "floor ceil trunc round frac sign abs".split()

# PyTorch's port of Cephes drops the implicit leading 1 of these approximations' denominators: it is
# 1e-9..1e-6 off between 2 and 10 (flambeau follows Cephes; test_special_functions.py checks it against mpmath)
CEPHES_DENOMINATORS = {"special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
                       "special_airy_ai"}  # fmt: skip


@pytest.mark.parametrize("name", FLOAT_UNARY + ROUNDING + ["square", "isnan", "isinf", "isfinite", "nan_to_num"])
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", *FLOATS])
def test_unary_matches_torch(name, dtype):
    rng = rng_for(name, dtype)
    for shape in SHAPES:
        for layout in LAYOUTS if len(shape) >= 2 else ["contiguous"]:
            a = values(shape, dtype, rng)
            # float32: PyTorch's SLEEF and libm differ by an ulp or two; tan/large args more
            tol = {"rtol": 2e-5, "atol": 1e-5} if name in ("tan", "sinh", "cosh", "exp2", "expm1") else {}
            if name in CEPHES_DENOMINATORS:
                tol = {"rtol": 2e-5, "atol": 1e-6}
            err = both(getattr(fc, name), torch_fn(name), a, layout=layout, **tol)
            if err is not None:
                th_err, fc_err = err
                # PyTorch: NotImplementedError '"floor_vml_cpu" not implemented for 'Bool''
                assert isinstance(th_err, NotImplementedError), th_err
                assert isinstance(fc_err, TypeError) and f"[{name}]" in str(fc_err)
                assert dtype == "bool" or (name == "frac" and dtype in INTS)
            # method, in-place (float inputs: integer results can't be cast back; torch.special's
            # functions have neither) and out=
            if err is None and dtype in FLOATS and name not in ("isnan", "isinf", "isfinite"):
                f, t = pair(a, layout)
                if hasattr(torch.Tensor, name):
                    assert_same(getattr(f, name)(), getattr(t, name)(), **tol)
                    getattr(f, name + "_")()
                    getattr(t, name + "_")()
                    assert_same(f, t, **tol)
                else:
                    assert not hasattr(f, name) and not hasattr(f, name + "_")
                out = fc.empty(*shape, dtype=DT[dtype][0])
                r = getattr(fc, name)(make_tensor(a, layout), out=out)
                assert r is out
                assert_same(out, torch_fn(name)(torch.from_numpy(a)), **tol)


def test_unary_integer_inplace_is_an_error_when_the_result_is_float():
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tensor([1, 2]).sin_()
    with pytest.raises(TypeError, match=r"\[sin_\].*can't be cast"):
        fc.tensor([1, 2]).sin_()


def test_unary_edge_points():
    x = [0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300, 1e300, 0.999999, -0.999999, 1 - 1e-16]
    for name in FLOAT_UNARY:
        # digamma at -0.999999: PyTorch reflects with tan(pi (x - trunc x)) and is 6e-12 off there
        # (flambeau gives mpmath's -999999.5771842643; test_special.py checks the poles' neighbourhood)
        tol = {"rtol": 1e-10} if name == "digamma" else {}
        if name in CEPHES_DENOMINATORS:
            tol = {"rtol": 2e-5, "atol": 1e-6}
        both(getattr(fc, name), torch_fn(name), np.array(x), **tol)
    # round: half to even, and decimals
    r = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.345, 1234.5678, -0.0])
    for d in (0, 1, 2, -1, -2):
        both(lambda t, d=d: fc.round(t, decimals=d), lambda t, d=d: torch.round(t, decimals=d), r)
        both(lambda t, d=d: t.round(decimals=d), lambda t, d=d: t.round(decimals=d), r.astype(np.float32))
    both(fc.round, torch.round, np.array([3, -4]))
    e = both(lambda t: t.round(decimals=1), lambda t: t.round(decimals=1), np.array([3, -4]))
    assert e is not None and "[round]" in str(e[1])


def test_nan_to_num_arguments():
    a = np.array([math.nan, math.inf, -math.inf, 1.5, -2.0])
    for kw in ({}, {"nan": 1.0}, {"posinf": 9.0}, {"neginf": -9.0}, {"nan": -1.0, "posinf": 2.0, "neginf": 3.0}):
        for dt in FLOATS:
            both(lambda t, kw=kw: fc.nan_to_num(t, **kw), lambda t, kw=kw: torch.nan_to_num(t, **kw), a.astype(dt))
            f, t = pair(a.astype(dt))
            f.nan_to_num_(**kw)
            t.nan_to_num_(**kw)
            assert_same(f, t)
    both(fc.nan_to_num, torch.nan_to_num, np.array([1, 2, 3]))


# ---- binary math ----

DTYPE_PAIRS = [
    ("int64", "int64"),
    ("int32", "int64"),
    ("uint8", "int8"),
    ("bool", "int64"),
    ("bool", "bool"),
    ("int64", "float32"),
    ("float32", "float64"),
    ("float32", "float32"),
    ("float64", "float64"),
    ("int32", "float64"),
]
BROADCAST = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (3,)), ((0, 3), (3,)), ((5,), ())]


@pytest.mark.parametrize("name", ["atan2", "hypot", "fmod", "remainder", "floor_divide", "div_trunc", "div_floor"])
@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=["-".join(p) for p in DTYPE_PAIRS])
def test_binary_matches_torch(name, dtypes):
    rng = rng_for(name, dtypes)
    if name.startswith("div_"):
        mode = name[4:]
        fc_fn = lambda a, b: fc.div(a, b, rounding_mode=mode)  # noqa: E731
        th_fn = lambda a, b: torch.div(a, b, rounding_mode=mode)  # noqa: E731
    else:
        fc_fn, th_fn = getattr(fc, name), getattr(torch, name)
    for sa, sb in BROADCAST:
        for layout in ("contiguous", "transposed"):
            a, b = values(sa, dtypes[0], rng), values(sb, dtypes[1], rng, nonzero=True)
            err = both(fc_fn, th_fn, a, b, layout=layout)
            if err is not None:
                th_err, fc_err = err
                assert isinstance(th_err, NotImplementedError), th_err
                assert isinstance(fc_err, TypeError), fc_err
                assert "is not supported for dtype" in str(fc_err)


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide", "div"])
def test_binary_with_numbers_and_methods(name):
    a = np.array([[-7.5, 7.0, -0.0, 3.25], [1.0, -2.0, math.inf, math.nan]])
    ia = np.array([-7, 7, 0, 3, -1, 9])
    for other in (2, -3, 2.5, -0.75):
        both(lambda t, o=other: getattr(fc, name)(t, o), lambda t, o=other: getattr(torch, name)(t, o), a)
        both(lambda t, o=other: getattr(t, name)(o), lambda t, o=other: getattr(t, name)(o), ia)
    if name == "div":
        for mode in (None, "trunc", "floor"):
            both(lambda t, m=mode: t.div(3, rounding_mode=m), lambda t, m=mode: t.div(3, rounding_mode=m), ia)
            f, t = pair(a)
            f.div_(fc.tensor([2.0, -3.0, 0.5, 1.0]), rounding_mode=mode)
            t.div_(torch.tensor([2.0, -3.0, 0.5, 1.0]), rounding_mode=mode)
            assert_same(f, t)
        with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or 'floor' but found 'x'"):
            torch.div(torch.ones(2), 2, rounding_mode="x")
        with pytest.raises(ValueError, match="rounding_mode to be one of None, 'trunc', or 'floor' but found 'x'"):
            fc.div(fc.ones(2), 2, rounding_mode="x")
        return
    f, t = pair(a)
    getattr(f, name + "_")(fc.tensor([2.0, -3.0, 0.5, 1.0]))
    getattr(t, name + "_")(torch.tensor([2.0, -3.0, 0.5, 1.0]))
    assert_same(f, t)
    out = fc.empty(2, 4)
    getattr(fc, name)(fc.tensor(a, dtype=fc.float32), 2, out=out)
    assert_same(out, getattr(torch, name)(torch.tensor(a, dtype=torch.float32), 2))


def test_floor_divide_and_remainder_operators():
    a, b = np.array([-7, 7, -8, 5, 0]), np.array([2, -2, 3, -5, 7])
    af, bf = a.astype(np.float64) + 0.5, b.astype(np.float32)
    for x, y in ((a, b), (af, bf), (a, bf)):
        both(lambda p, q: p // q, lambda p, q: p // q, x, y)
        both(lambda p, q: p % q, lambda p, q: p % q, x, y)
        both(lambda p: p // 3, lambda p: p // 3, x)
        both(lambda p: 17 // p, lambda p: 17 // p, y)
        both(lambda p: -17 % p, lambda p: -17 % p, y)
        both(lambda p: 2.5 % p, lambda p: 2.5 % p, y)

    def iops(p, q):
        p = p.clone()
        p //= q
        p %= 3
        return p

    both(iops, iops, af, bf)
    # the float result of int // float can't be written back into the int tensor
    e = both(iops, iops, a, bf)
    assert e is not None and "can't be cast" in str(e[1])


def test_remainder_of_a_zero_takes_the_divisors_sign():
    # Python's and NumPy's modulo, the Array API's special cases and PyTorch's documentation ("the result has
    # the same sign as the divisor"); PyTorch 2.13's kernel keeps the dividend's sign for a zero result
    # (-0.0 % 5 is -0.0 there): the one place flambeau's `%` differs from torch's, on purpose.
    a = np.array([-0.0, 0.0, 0.0, -0.0, 4.0, -4.0, -6.0, 6.0])
    b = np.array([5.0, -5.0, 5.0, -5.0, 2.0, 2.0, -3.0, -3.0])
    for dtype in (fc.float32, fc.float64, fc.float16, fc.bfloat16):
        x, y = fc.tensor(a, dtype=dtype), fc.tensor(b, dtype=dtype)
        for got in (x % y, fc.remainder(x, y), x.clone().remainder_(y)):
            got = np.array(got.float().tolist())
            assert np.array_equal(got, np.remainder(a, b))
            assert np.array_equal(np.signbit(got), np.signbit(np.remainder(a, b))), dtype
    assert [math.copysign(1, v) for v in (fc.tensor([-0.0, 0.0]) % 5).tolist()] == [1.0, 1.0]
    assert [math.copysign(1, v) for v in (fc.tensor([-0.0, 0.0]) % -5).tolist()] == [-1.0, -1.0]


# A zero divisor is found in the data by the kernel: on a device asynchronously (raised by the next
# synchronous op, as on CUDA), so this error test is the cpu's.
@pytest.mark.on_devices(types=("cpu",))
def test_integer_division_by_zero_raises():
    for name in ("fmod", "remainder", "floor_divide"):
        for dt in ("int64", "int32", "uint8"):
            a = np.array([1, 2, 3], dtype=DT[dt][2])
            b = np.array([1, 0, 2], dtype=DT[dt][2])
            with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b))
            with pytest.raises(ValueError, match="ZeroDivisionError"):
                getattr(fc, name)(fc.tensor(a), fc.tensor(b))
            with pytest.raises(ValueError, match="ZeroDivisionError"):
                getattr(fc, name)(fc.tensor(a), 0)
    with pytest.raises(ValueError, match="ZeroDivisionError"):
        fc.tensor([1, 2]) // 0
    with pytest.raises(ValueError, match="ZeroDivisionError"):
        fc.tensor([1, 2]) % fc.tensor([0])
    with pytest.raises(ValueError, match="ZeroDivisionError"):
        fc.div(fc.tensor([1, 2]), 0, rounding_mode="trunc")
    # float division by zero is IEEE (inf, nan), as PyTorch
    z = np.array([0.0, -0.0, 0.0])
    for name in ("fmod", "remainder", "floor_divide"):
        both(getattr(fc, name), getattr(torch, name), np.array([1.0, -1.0, 0.0]), z)
    # a zero divisor in an empty tensor, and integer overflow, don't raise
    both(fc.floor_divide, torch.floor_divide, np.zeros((0,), np.int64), np.zeros((0,), np.int64))
    imin = np.array([np.iinfo(np.int64).min, np.iinfo(np.int32).min])
    both(fc.floor_divide, torch.floor_divide, imin, np.array([-1, -1]))
    both(fc.fmod, torch.fmod, imin, np.array([-1, -1]))
    both(fc.remainder, torch.remainder, imin, np.array([-1, -1]))


# ---- clamp and lerp ----


@pytest.mark.parametrize("dtype", ["int64", "int32", *FLOATS, "bool"])
def test_clamp_number_bounds(dtype):
    rng = np.random.default_rng(5)
    a = values((4, 5), dtype, rng)
    for lo, hi in ((-1, 1), (0.5, None), (None, 2), (-0.5, 1.5), (3, -3), (None, -math.inf), (math.nan, None)):
        both(lambda t, lo=lo, hi=hi: fc.clamp(t, lo, hi), lambda t, lo=lo, hi=hi: torch.clamp(t, lo, hi), a)
        both(lambda t, lo=lo, hi=hi: t.clamp(min=lo, max=hi), lambda t, lo=lo, hi=hi: t.clamp(min=lo, max=hi), a)
    if dtype != "bool":
        both(lambda t: t.clamp_min(1), lambda t: t.clamp_min(1), a, layout="transposed")
        both(lambda t: fc.clamp_max(t, 0), lambda t: torch.clamp_max(t, 0), a)
        f, t = pair(a)
        f.clamp_(-1, 1)
        t.clamp_(-1, 1)
        assert_same(f, t)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        torch.clamp(torch.ones(2))
    with pytest.raises(ValueError, match="at least one of min and max must not be None"):
        fc.clamp(fc.ones(2))


def test_clamp_tensor_bounds():
    rng = np.random.default_rng(6)
    a = values((3, 4), "float64", rng)
    lo = rng.standard_normal((4,)) - 1
    hi = rng.standard_normal((3, 1)) + 1
    hi[0, 0] = math.nan
    both(lambda t, p, q: fc.clamp(t, p, q), lambda t, p, q: torch.clamp(t, p, q), a, lo, hi)
    both(lambda t, p: t.clamp(min=p), lambda t, p: t.clamp(min=p), a, lo)
    both(lambda t, q: t.clamp(max=q), lambda t, q: t.clamp(max=q), a, hi)
    both(lambda t, p, q: t.clamp(p, q), lambda t, p, q: t.clamp(p, q), a, hi, lo)  # min > max: max
    both(lambda t, p: t.clamp(p), lambda t, p: t.clamp(p), values((3, 4), "int64", rng), np.array([1.5] * 4))


@pytest.mark.parametrize("dtype", FLOATS)
def test_lerp(dtype):
    rng = np.random.default_rng(7)
    s, e = values((3, 4), dtype, rng), rng.standard_normal((4,)).astype(dtype)
    for w in (0.0, 0.25, 0.5, 1.0, -2.0):
        both(lambda a, b, w=w: fc.lerp(a, b, w), lambda a, b, w=w: torch.lerp(a, b, w), s, e)
    w = rng.uniform(-1, 2, size=(3, 1)).astype(dtype)
    both(fc.lerp, torch.lerp, s, e, w)
    both(lambda a, b, c: a.lerp(b, c), lambda a, b, c: a.lerp(b, c), s, e, w, layout="transposed")
    f, t = pair(s)
    f.lerp_(fc.tensor(e), 0.3)
    t.lerp_(torch.from_numpy(e), 0.3)
    assert_same(f, t)
    e = both(fc.lerp, torch.lerp, s, e.astype(np.float64 if dtype == "float32" else np.float32), w)
    assert e is not None and "[lerp]" in str(e[1])


# ---- logical and bitwise ----


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=["-".join(p) for p in DTYPE_PAIRS])
def test_logical_matches_torch(name, dtypes):
    rng = rng_for(name, dtypes)
    for sa, sb in BROADCAST:
        a, b = values(sa, dtypes[0], rng), values(sb, dtypes[1], rng)
        a.reshape(-1)[: a.size // 2] = 0
        assert both(getattr(fc, name), getattr(torch, name), a, b, layout="transposed") is None
        assert both(lambda p, q: getattr(p, name)(q), lambda p, q: getattr(p, name)(q), a, b) is None


@pytest.mark.parametrize("dtype", ["bool", "int64", "uint8", *FLOATS])
def test_logical_not(dtype):
    a = values((3, 4), dtype, np.random.default_rng(1))
    a[0] = 0
    both(fc.logical_not, torch.logical_not, a, layout="sliced")
    both(lambda t: t.logical_not(), lambda t: t.logical_not(), np.asarray(a[0, 0]))


BITWISE = {
    "bitwise_and": lambda p, q: p & q,
    "bitwise_or": lambda p, q: p | q,
    "bitwise_xor": lambda p, q: p ^ q,
    "bitwise_left_shift": lambda p, q: p << q,
    "bitwise_right_shift": lambda p, q: p >> q,
}


@pytest.mark.parametrize("name", list(BITWISE))
@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=["-".join(p) for p in DTYPE_PAIRS])
def test_bitwise_matches_torch(name, dtypes):
    rng = rng_for(name, dtypes)
    op = BITWISE[name]
    for sa, sb in BROADCAST:
        a, b = values(sa, dtypes[0], rng), values(sb, dtypes[1], rng)
        if "shift" in name and dtypes[1] != "bool" and dtypes[1] in INTS:
            b = np.abs(b) % 8 if dtypes[1] != "uint8" else b % 8
        for fn_fc, fn_th in ((getattr(fc, name), getattr(torch, name)), (op, op)):
            err = both(fn_fc, fn_th, a, b)
            if err is not None:
                th_err, fc_err = err
                assert isinstance(fc_err, TypeError), fc_err
                assert f"[{name}] is not supported for dtype" in str(fc_err)
                assert "float" in str(fc_err) or ("shift" in name and "bool" in str(fc_err))


def test_bitwise_operators_numbers_inplace_and_errors():
    a = np.array([[12, -7, 0], [255, 3, -128]])
    for op in BITWISE.values():
        both(lambda p, op=op: op(p, 3), lambda p, op=op: op(p, 3), a)
        both(lambda p, op=op: op(5, p % 9), lambda p, op=op: op(5, p % 9), a)  # reflected
        both(lambda p, op=op: op(p, True), lambda p, op=op: op(p, True), a.astype(np.int32))
    both(lambda p: ~p, lambda p: ~p, a)
    both(lambda p: ~p, lambda p: ~p, a > 0)
    both(fc.bitwise_not, torch.bitwise_not, a.astype(np.uint8), layout="transposed")
    e = both(lambda p: ~p, lambda p: ~p, a * 0.5)
    assert e is not None and isinstance(e[1], TypeError) and "[bitwise_not]" in str(e[1])
    b = np.array([True, False, True])
    both(lambda p, q: p & q, lambda p, q: p & q, b, b[::-1].copy())
    both(lambda p, q: (p ^ q) | p, lambda p, q: (p ^ q) | p, b, b[::-1].copy())

    def iops(p, q):
        p = p.clone()
        p &= q
        p |= 6
        p ^= q
        p <<= 2
        p >>= 1
        return p

    both(iops, iops, a, a[::-1].copy())
    # a float operand with an integer tensor: error like PyTorch
    for op in BITWISE.values():
        e = both(lambda p, op=op: op(p, 1.5), lambda p, op=op: op(p, 1.5), a)
        assert e is not None and isinstance(e[1], TypeError)
    # shifts by the bit width or more, and by negative amounts, never crash
    sh = np.array([0, 1, 7, 8, 31, 32, 63, 64, 100, -1])
    for dt in ("int64", "int32", "int8", "uint8"):
        x = np.array([1, -1, 5, -128, 127, 3, 2, -2, 9, 4]).astype(DT[dt][2])
        both(lambda p, q: p << q, lambda p, q: p << q, x, sh.astype(DT[dt][2]))
        both(lambda p, q: p >> q, lambda p, q: p >> q, x, sh.astype(DT[dt][2]))


def test_out_and_inplace_forms_of_bitwise_and_logical():
    a, b = np.array([1, 2, 3, 0]), np.array([3, 0, 1, 0])
    for name in ["logical_and", "logical_or", "logical_xor", *BITWISE]:
        f, t = pair(a)
        getattr(f, name + "_")(fc.tensor(b))
        getattr(t, name + "_")(torch.from_numpy(b))
        assert_same(f, t)
        out = fc.empty(4, dtype=fc.bool if "logical" in name else fc.int64)
        getattr(fc, name)(fc.tensor(a), fc.tensor(b), out=out)
        assert_same(out, getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b)))
    f, t = pair(a)
    f.logical_not_()
    t.logical_not_()
    assert_same(f, t)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_round_decimals_of_16_bit_floats_matches_torch(dtype):
    """round(decimals=k) of float16/bfloat16 rounds in float32 (it used to read the 2-byte values as float64)."""
    values = [1.26, 2.5, 3.14159, 7.77, -0.051, 1000.5, 0.0]
    for decimals in (1, 2, -1):
        got = fc.round(fc.tensor(values, dtype=getattr(fc, dtype)), decimals=decimals)
        want = torch.round(torch.tensor(values, dtype=getattr(torch, dtype)), decimals=decimals)
        assert got.dtype == getattr(fc, dtype)
        assert got.float().tolist() == want.float().tolist(), (decimals, got.tolist(), want.tolist())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_binary_math_of_16_bit_floats_matches_torch(dtype):
    """The binary math list computes float16/bfloat16 in float32 and rounds once (PyTorch's opmath); exact
    where torch also rounds once, within one step of the 16-bit type for xlogy/xlog1py, which torch
    computes in the 16-bit type itself. nextafter stays refused: its step is the 16-bit type's own."""
    a = np.array([1.5, -2.25, 3.0, 0.5, -7.0, 100.0])
    b = np.array([0.75, 2.0, -1.5, -0.25, 3.0, 7.0])
    fa, fb_ = fc.tensor(a, dtype=getattr(fc, dtype)), fc.tensor(b, dtype=getattr(fc, dtype))
    ta, tb = torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b, dtype=getattr(torch, dtype))
    step = 2.0**-10 if dtype == "float16" else 2.0**-7
    for name in ["atan2", "copysign", "logaddexp", "hypot", "fmod", "remainder", "floor_divide", "xlogy"]:
        got, want = getattr(fc, name)(fa, fb_), getattr(torch, name)(ta, tb)
        assert got.dtype == fa.dtype, name
        g, w = np.array(got.float().tolist()), np.array(want.float().tolist())
        if name == "xlogy":
            np.testing.assert_allclose(g, w, rtol=2 * step, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)
    with pytest.raises(TypeError, match=rf"^\[nextafter\] is not supported for dtype {dtype}"):
        fc.nextafter(fa, fb_)
