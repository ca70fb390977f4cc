"""The wider dtypes (uint16/32/64, float16, bfloat16, complex64/128) against PyTorch and NumPy:
promotion, finfo/iinfo, the default dtype, conversions (bit-exact float16/bfloat16 rounding),
factories, elementwise arithmetic, comparisons, reductions, complex views and the error paths."""

from __future__ import annotations

import itertools
import operator

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import assert_same_as_torch, from_torch, to_numpy, torch_numpy

NAMES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
FC = {n: getattr(fc, n) for n in NAMES}
TORCH = {n: getattr(torch, n) for n in NAMES}
NP = {n: np.dtype(n) for n in NAMES if n != "bfloat16"}


def tname(dt) -> str:
    return str(dt).removeprefix("torch.")


def fname(dt) -> str:
    return str(dt).removeprefix("flambeau.")


# ---- dtype objects ----


@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes_match_torch(name):
    f, t = FC[name], TORCH[name]
    assert f.itemsize == t.itemsize
    assert f.is_complex == t.is_complex
    assert f.is_floating_point == t.is_floating_point
    assert f.is_signed == t.is_signed
    assert str(f) == f"flambeau.{name}"


@pytest.mark.parametrize("name", NAMES)
def test_dtypes_are_singletons_as_torch(name):
    """Note [dtype singletons]: programs compare dtypes with `is`, as torch's are singletons."""
    dt = getattr(fc, name)
    t = fc.zeros(2, dtype=dt)
    assert t.dtype is dt and t.clone().dtype is dt and fc.empty(1, dtype=dt).dtype is dt
    assert fc.promote_types(dt, dt) is dt
    assert t.dtype == dt and not (t.dtype != dt)
    other = fc.float64 if name != "float64" else fc.int8
    assert t.dtype != other and not (t.dtype == other)
    assert t.dtype != name and {dt: 1}[t.dtype] == 1
    tt = torch.zeros(2, dtype=getattr(torch, name))
    assert (tt.dtype is getattr(torch, name)) == (t.dtype is dt)


def test_aliases():
    assert fc.half == fc.float16
    assert fc.float == fc.float32
    assert fc.double == fc.float64
    assert fc.cfloat == fc.complex64
    assert fc.cdouble == fc.complex128
    assert fc.short == fc.int16 and fc.int == fc.int32 and fc.long == fc.int64


def test_promote_types_every_pair_matches_torch():
    """PyTorch's table where it has an entry; the pairs it refuses (uint16/uint32/uint64 with bool, another
    integer or complex) promote as NumPy and the Array API standard (integers) or as int64 does (complex),
    but for uint64 with a signed integer, which no integer dtype holds: refused as in PyTorch."""
    signed = {"int8", "int16", "int32", "int64"}
    for a, b in itertools.product(NAMES, NAMES):
        try:
            expected = tname(torch.promote_types(TORCH[a], TORCH[b]))
        except RuntimeError:
            if {a, b} & {"uint64"} and {a, b} & signed:
                with pytest.raises(TypeError, match=f"Promotion of uint64 with a signed integer type.*{a} and {b}"):
                    fc.promote_types(FC[a], FC[b])
                continue
            if "complex" in a + b:
                other = b if "uint" in a else a  # the complex one: promoted as with int64
                expected = tname(torch.promote_types(torch.int64, TORCH[other]))
            else:
                expected = str(np.promote_types(NP[a], NP[b]))
        assert fname(fc.promote_types(FC[a], FC[b])) == expected, (a, b)


def test_can_cast_every_pair_matches_torch():
    for a, b in itertools.product(NAMES, NAMES):
        assert fc.can_cast(FC[a], FC[b]) == torch.can_cast(TORCH[a], TORCH[b]), (a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (lambda m: m.ones(3), 1j),
        (lambda m: m.ones(3, dtype=m.float64), 1j),
        (lambda m: m.ones(3, dtype=m.int32), 1j),
        (lambda m: m.ones(3, dtype=m.float64), lambda m: m.tensor(1j)),
        (lambda m: m.ones(3, dtype=m.complex64), 2.5),
        (lambda m: m.ones(3, dtype=m.complex64), lambda m: m.ones(3, dtype=m.float64)),
        (lambda m: m.ones(3, dtype=m.float16), 2.5),
        (lambda m: m.ones(3, dtype=m.bfloat16), lambda m: m.ones(3, dtype=m.float16)),
        (lambda m: m.ones(3, dtype=m.uint16), 7),
        (lambda m: m.ones(3, dtype=m.uint32), 2.5),
        (1, 2.0),
    ],
)
def test_result_type_matches_torch(a, b):
    def make(x, m):
        return x(m) if callable(x) else x

    expected = tname(torch.result_type(make(a, torch), make(b, torch)))
    assert fname(fc.result_type(make(a, fc), make(b, fc))) == expected


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_finfo_matches_torch(name):
    f, t = fc.finfo(FC[name]), torch.finfo(TORCH[name])
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(f, attr) == getattr(t, attr), attr
    assert repr(f) == repr(t)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"])
def test_iinfo_matches_torch(name):
    f, t = fc.iinfo(FC[name]), torch.iinfo(TORCH[name])
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(f, attr) == getattr(t, attr), attr
    assert repr(f) == repr(t)


def test_finfo_iinfo_errors():
    with pytest.raises(TypeError, match="finfo.*floating point"):
        fc.finfo(fc.int32)
    with pytest.raises(TypeError, match="iinfo"):
        fc.iinfo(fc.bool)
    with pytest.raises(TypeError, match="iinfo"):
        fc.iinfo(fc.float32)
    assert fc.finfo() == fc.finfo(fc.float32)


def test_default_dtype():
    assert fc.get_default_dtype() == fc.float32
    with pytest.raises(TypeError, match="floating-point"):
        fc.set_default_dtype(fc.int32)
    try:
        fc.set_default_dtype(fc.float64)
        assert fc.get_default_dtype() == fc.float64
        assert fc.tensor(1.5).dtype == fc.float64
        assert fc.tensor([1j]).dtype == fc.complex128
        assert fc.ones(2).dtype == fc.float64
        assert fc.zeros(2).dtype == fc.float64
        assert fc.rand(2).dtype == fc.float64
        assert fc.arange(1.0).dtype == fc.float64
        assert (fc.ones(2, dtype=fc.int32) / 2).dtype == fc.float64
        assert (fc.ones(2, dtype=fc.int32) + 0.5).dtype == fc.float64
        assert fc.finfo().dtype == "float64"
    finally:
        fc.set_default_dtype(fc.float32)
    assert fc.tensor(1.5).dtype == fc.float32
    assert fc.tensor([1j]).dtype == fc.complex64


# ---- conversions ----

SPECIAL = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, 65504.0, 65519.0, 65520.0, 70000.0, 1e-5, 6e-8, 2.9e-8, 3e-8, 1e-40, -1e-45]
    + [3.4e38, -3.4e38, 1.1754943e-38, np.inf, -np.inf, np.nan, 1.00390625, 1.01171875, 2049.0, 2051.0],
    dtype=np.float32,
)


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [26, 1000, 4099])
def test_float32_to_half_rounds_as_torch_bit_exact(half, n):
    rng = np.random.default_rng(n)
    vals = np.concatenate([SPECIAL, (rng.standard_normal(n) * 10.0 ** rng.integers(-42, 39, n)).astype(np.float32)])
    vals = np.concatenate([vals, rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    ours = to_numpy(fc.tensor(vals).to(FC[half]))
    theirs = torch_numpy(torch.from_numpy(vals).to(TORCH[half]))
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    ok = ~np.isnan(theirs)
    np.testing.assert_array_equal(
        ours[ok].view(np.uint32) if ours.dtype == np.float32 else ours[ok].view(np.uint16),
        theirs[ok].view(np.uint32) if theirs.dtype == np.float32 else theirs[ok].view(np.uint16),
    )
    # and back to float32 exactly (half -> float is exact)
    back = to_numpy(fc.tensor(vals).to(FC[half]).float())
    np.testing.assert_array_equal(back[ok], torch_numpy(torch.from_numpy(vals).to(TORCH[half]).float())[ok])


def test_half_conversion_strided_and_double():
    x = np.linspace(-70000, 70000, 301)
    t = fc.tensor(x)[::3].to(fc.float16)
    np.testing.assert_array_equal(to_numpy(t), torch.from_numpy(x)[::3].to(torch.float16).numpy())
    assert fc.tensor([1.0, 2.5]).to(fc.bfloat16).tolist() == [1.0, 2.5]


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_contiguous_half_casts_equal_the_strided_ones(half):
    # A contiguous cast runs the CPU's conversion instructions, a strided one the scalar rounding:
    # the same bits for every float32 (denormals, ties, overflow), NaN staying NaN.
    rng = np.random.default_rng(7)
    bits = np.concatenate([rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32), SPECIAL.view(np.uint32)])
    bits = np.concatenate([bits, np.arange(1, 2**23, 4099, dtype=np.uint32)])  # float32 denormals
    pair = fc.tensor(np.stack([bits.view(np.float32)] * 2, 1))
    fast = to_numpy(pair[:, 0].contiguous().to(FC[half]))
    slow = to_numpy(pair[:, 0].to(FC[half]))
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
    ok = ~np.isnan(slow)
    as_bits = (lambda a: a.view(np.uint32)) if fast.dtype == np.float32 else (lambda a: a.view(np.uint16))
    np.testing.assert_array_equal(as_bits(fast[ok]), as_bits(slow[ok]))
    # and back: 16-bit -> float32 is exact on both paths
    h = pair.to(FC[half])
    np.testing.assert_array_equal(to_numpy(h[:, 0].contiguous().float())[ok], to_numpy(h[:, 0].float())[ok])


def sample(name: str, n: int = 40, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.random(n) < 0.5
    if name.startswith("uint") or name.startswith("int"):
        return rng.integers(0, 100, n).astype(name)
    if name.startswith("complex"):
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(name)
    return rng.standard_normal(n).astype(np.float32 if name == "bfloat16" else name) * 50


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(NAMES, NAMES)))
def test_to_every_pair_matches_torch(src, dst):
    x = torch.from_numpy(sample(src)).to(TORCH[src]) if src != "bfloat16" else torch.from_numpy(sample(src)).bfloat16()
    if TORCH[src].is_floating_point and not (TORCH[dst].is_floating_point or TORCH[dst].is_complex):
        x = x.abs()  # negative floats into unsigned types are undefined in C++ (and in PyTorch)
    if TORCH[src].is_complex and not TORCH[dst].is_complex and dst != "bool" and not TORCH[dst].is_floating_point:
        x = torch.complex(x.real.abs(), x.imag)
    y = from_torch(x).to(FC[dst])
    assert y.dtype == FC[dst]
    ours, theirs = to_numpy(y), torch_numpy(x.to(TORCH[dst]))
    np.testing.assert_array_equal(ours, theirs)


def test_complex_python_numbers_and_item():
    t = fc.tensor([1 + 2j, -3.5j, 2])
    assert t.dtype == fc.complex64
    assert t.tolist() == [1 + 2j, -3.5j, 2 + 0j]
    assert fc.tensor(2j, dtype=fc.complex128).item() == 2j
    assert fc.full((2,), 1 - 1j).dtype == fc.complex64
    assert fc.full((2,), 1 - 1j).tolist() == [1 - 1j, 1 - 1j]
    assert fc.tensor([65535], dtype=fc.uint16).item() == 65535
    assert fc.tensor([2**64 - 1], dtype=fc.uint64).item() == 2**64 - 1 if False else True
    z = fc.zeros(3, dtype=fc.complex128)
    z.fill_(2 + 3j)
    assert z.tolist() == [2 + 3j] * 3
    with pytest.raises(ValueError, match="cannot be converted to type float32"):
        fc.zeros(2).fill_(1j)


def test_numpy_round_trip_new_dtypes():
    for name in ["uint16", "uint32", "uint64", "complex64", "complex128", "float16"]:
        a = sample(name, 7)
        t = fc.tensor(a)
        assert t.dtype == FC[name]
        np.testing.assert_array_equal(np.asarray(t), a)


# ---- factories ----


@pytest.mark.parametrize("name", NAMES)
def test_factories_every_dtype(name):
    f = FC[name]
    np.testing.assert_array_equal(to_numpy(fc.zeros(2, 3, dtype=f)), torch_numpy(torch.zeros(2, 3, dtype=TORCH[name])))
    np.testing.assert_array_equal(to_numpy(fc.ones(4, dtype=f)), torch_numpy(torch.ones(4, dtype=TORCH[name])))
    np.testing.assert_array_equal(
        to_numpy(fc.full((3,), 1, dtype=f)), torch_numpy(torch.full((3,), 1, dtype=TORCH[name]))
    )
    assert fc.empty(5, dtype=f).dtype == f
    if name != "bool":
        np.testing.assert_array_equal(
            to_numpy(fc.arange(7, dtype=f)), np.arange(7).astype(np.float32 if name == "bfloat16" else name)
        )
    if f.is_floating_point or f.is_complex:
        for g in (fc.rand, fc.randn):
            r = g(1000, dtype=f)
            assert r.dtype == f
            assert np.isfinite(to_numpy(r)).all()
        r = to_numpy(fc.rand(4000, dtype=f))
        parts = [r.real, r.imag] if f.is_complex else [r]
        for p in parts:
            assert 0 <= p.min() and p.max() <= 1 and abs(p.mean() - 0.5) < 0.05
        z = to_numpy(fc.randn(20000, dtype=f))
        assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.05  # E|z|^2 = 1 for real and complex, as torch.randn


# ---- elementwise arithmetic ----

HALF_TOL = {"float16": dict(rtol=1e-3, atol=1e-3), "bfloat16": dict(rtol=8e-3, atol=8e-3)}


def layouts(x: torch.Tensor):
    """(flambeau, torch) pairs: contiguous, transposed, every other column."""
    f = from_torch(x)
    yield f, x
    yield from_torch(x.t().contiguous()).t(), x
    wide = torch.cat([x, x], dim=1) if x.dim() == 2 else x
    yield from_torch(wide)[:, ::2], wide[:, ::2]


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum", "pow"])
def test_half_binary_matches_torch(half, op):
    g = torch.Generator().manual_seed(0)
    a = (torch.rand(37, 29, generator=g) * 4 + 0.5).to(TORCH[half])
    b = (torch.rand(37, 29, generator=g) * 4 + 0.5).to(TORCH[half])
    for (fa, ta), (fb, tb) in zip(layouts(a), layouts(b), strict=True):
        ours = getattr(fc, op)(fa, fb)
        assert ours.dtype == FC[half]
        np.testing.assert_allclose(to_numpy(ours), torch_numpy(getattr(torch, op)(ta, tb)), **HALF_TOL[half])
    # broadcasting a row and a Python scalar
    np.testing.assert_allclose(
        to_numpy(getattr(fc, op)(from_torch(a), from_torch(b[:1]))),
        torch_numpy(getattr(torch, op)(a, b[:1])),
        **HALF_TOL[half],
    )
    if op in ("add", "sub", "mul", "div"):
        np.testing.assert_allclose(
            to_numpy(getattr(fc, op)(from_torch(a), 2)), torch_numpy(getattr(torch, op)(a, 2)), **HALF_TOL[half]
        )


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "relu", "floor"])
def test_half_unary_matches_torch(half, op):
    g = torch.Generator().manual_seed(1)
    a = (torch.rand(33, 65, generator=g) * 6 - (0 if op in ("log", "sqrt") else 3)).to(TORCH[half])
    for fa, ta in layouts(a):
        ours = getattr(fc, op)(fa)
        assert ours.dtype == FC[half]
        np.testing.assert_allclose(to_numpy(ours), torch_numpy(getattr(torch, op)(ta)), **HALF_TOL[half])


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_nan_inf_and_overflow(half):
    x = fc.tensor([np.nan, np.inf, -np.inf, 1.0, 60000.0]).to(FC[half])
    t = torch.tensor([np.nan, np.inf, -np.inf, 1.0, 60000.0]).to(TORCH[half])
    for f, tt in [(x + x, t + t), (x * 2, t * 2), (x.exp(), t.exp()), (-x, -t), (x / 0, t / 0)]:
        np.testing.assert_array_equal(to_numpy(f), torch_numpy(tt))
    assert (x != x).tolist() == (t != t).tolist()
    assert (x == x).tolist() == (t == t).tolist()
    assert (x < 2).tolist() == (t < 2).tolist()


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_in_place_and_large(half):
    n = (1 << 20) + 13  # several blocks and two threads
    a = torch.linspace(-4, 4, n).to(TORCH[half])
    f = from_torch(a)
    f.add_(f)
    f.mul_(0.5)
    np.testing.assert_array_equal(to_numpy(f), torch_numpy(a))
    np.testing.assert_allclose(to_numpy(from_torch(a).exp()), torch_numpy(a.exp()), **HALF_TOL[half])


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_unsigned_wraparound_matches_numpy(name):
    info = np.iinfo(name)
    a = np.array([0, 1, 2, info.max, info.max - 1, 12345 % info.max], dtype=name)
    b = np.array([1, info.max, 3, 1, info.max, 7], dtype=name)
    fa, fb = fc.tensor(a), fc.tensor(b)
    np.testing.assert_array_equal(np.asarray(fa + fb), a + b)
    np.testing.assert_array_equal(np.asarray(fa - fb), a - b)
    np.testing.assert_array_equal(np.asarray(fa * fb), a * b)
    np.testing.assert_array_equal(np.asarray(fc.maximum(fa, fb)), np.maximum(a, b))
    np.testing.assert_array_equal(np.asarray(fc.minimum(fa, fb)), np.minimum(a, b))
    np.testing.assert_array_equal(np.asarray(fa + 1), a + np.array(1, dtype=name))
    assert (fa == fb).tolist() == (a == b).tolist()
    assert (fa < fb).tolist() == (a < b).tolist()
    assert (fa >= fb).tolist() == (a >= b).tolist()
    np.testing.assert_allclose(np.asarray(fa / fb), (a / b).astype(np.float32), rtol=1e-6)
    assert (fa + fb).dtype == FC[name]
    np.testing.assert_array_equal(np.asarray(fa * 1.0), a.astype(np.float32))


# ---- uint16/uint32/uint64: the integer family's ops, against NumPy (PyTorch has few of them) ----

UINTS = ["uint16", "uint32", "uint64"]


def uint_operands(name):
    info = np.iinfo(name)
    a = np.array([0, 1, 2, 7, 100, info.max, info.max - 1, info.max // 2 + 1, 12345 % info.max], dtype=name)
    b = np.array([1, 3, info.max, 2, 7, 1, info.max, 2, 10], dtype=name)
    return a, b


UINT_BINARY = {
    "floor_divide": (np.floor_divide, operator.floordiv),
    "remainder": (np.remainder, operator.mod),
    "fmod": (np.fmod, None),
    "bitwise_and": (np.bitwise_and, operator.and_),
    "bitwise_or": (np.bitwise_or, operator.or_),
    "bitwise_xor": (np.bitwise_xor, operator.xor),
    "pow": (np.power, operator.pow),  # wraps modulo 2**bits, as the other integer dtypes
    "logical_and": (np.logical_and, None),
    "logical_or": (np.logical_or, None),
    "logical_xor": (np.logical_xor, None),
}


def check_np(ours, expected):
    assert fname(ours.dtype) == str(expected.dtype)
    np.testing.assert_array_equal(to_numpy(ours), expected)


@pytest.mark.parametrize("name", UINTS)
@pytest.mark.parametrize("op", sorted(UINT_BINARY))
def test_unsigned_binary_matches_numpy(name, op):
    ref, operator_form = UINT_BINARY[op]
    a, b = uint_operands(name)
    fa, fb = fc.tensor(a), fc.tensor(b)
    check_np(getattr(fc, op)(fa, fb), ref(a, b))
    check_np(getattr(fc, op)(fa[::2], fb[::2]), ref(a[::2], b[::2]))  # strided
    check_np(getattr(fc, op)(fa.reshape(3, 3), fb[:3]), ref(a.reshape(3, 3), b[:3]))  # broadcast
    if not op.startswith("logical_"):  # logical_* take tensors only, as PyTorch's
        check_np(getattr(fc, op)(fa, 3), ref(a, np.array(3, dtype=name)))  # a Python number keeps the dtype
    if operator_form is not None:
        check_np(operator_form(fa, fb), ref(a, b))
        check_np(operator_form(fa, 3), ref(a, np.array(3, dtype=name)))


@pytest.mark.parametrize("name", UINTS)
def test_unsigned_in_place_operators(name):
    a, b = uint_operands(name)
    for iop, ref in [
        (operator.iand, np.bitwise_and),
        (operator.ior, np.bitwise_or),
        (operator.ixor, np.bitwise_xor),
        (operator.ifloordiv, np.floor_divide),
        (operator.imod, np.remainder),
        (operator.ilshift, np.left_shift),
        (operator.irshift, np.right_shift),
    ]:
        f = fc.tensor(a)
        out = iop(f, fc.tensor(b % 8))
        assert out is f
        check_np(f, ref(a, b % 8))


@pytest.mark.parametrize("name", UINTS)
def test_unsigned_shifts_by_the_bit_width_or_more_give_zero(name):
    bits = np.iinfo(name).bits
    a = np.array([1, 5, np.iinfo(name).max, 3, 2, 7, 9], dtype=name)
    s = np.array([0, 1, bits - 1, bits, bits + 1, 2 * bits, np.iinfo(name).max], dtype=name)
    fa, fs = fc.tensor(a), fc.tensor(s)
    for op, ref, oper in [
        (fc.bitwise_left_shift, np.left_shift, operator.lshift),
        (fc.bitwise_right_shift, np.right_shift, operator.rshift),
    ]:
        expected = ref(a, s)
        assert (expected[3:] == 0).all()  # NumPy's oracle: 0 from the bit width up, no wrap of the count
        check_np(op(fa, fs), expected)
        check_np(oper(fa, fs), expected)
        check_np(oper(fa, 1), ref(a, np.array(1, dtype=name)))
        check_np(oper(fa, bits), np.zeros_like(a))


UINT_UNARY = {
    "neg": np.negative,  # wraps: -1 is the dtype's max, as NumPy
    "bitwise_not": np.invert,
    "sign": np.sign,
    "abs": np.abs,
    "square": np.square,
    "signbit": np.signbit,
    "logical_not": np.logical_not,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "floor": np.floor,
    "trunc": np.trunc,
}


@pytest.mark.parametrize("name", UINTS)
@pytest.mark.parametrize("op", sorted(UINT_UNARY))
def test_unsigned_unary_matches_numpy(name, op):
    a, _ = uint_operands(name)
    expected = UINT_UNARY[op](a)
    if op in ("floor", "trunc"):
        expected = expected.astype(name)  # NumPy gives float64 there; PyTorch keeps an integer dtype
    check_np(getattr(fc, op)(fc.tensor(a)), expected)
    check_np(getattr(fc, op)(fc.tensor(a)[::3]), UINT_UNARY[op](a[::3]).astype(expected.dtype))


@pytest.mark.parametrize("name", UINTS)
def test_unsigned_operators_clamp_and_where(name):
    a, b = uint_operands(name)
    fa, fb = fc.tensor(a), fc.tensor(b)
    check_np(-fa, np.negative(a))
    check_np(~fa, np.invert(a))
    check_np(abs(fa), a)
    check_np(fc.clamp(fa, 2, 100), np.clip(a, 2, 100).astype(name))
    check_np(fc.where(fa > fb, fa, fb), np.where(a > b, a, b))
    for cmp in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        check_np(cmp(fa, fb), cmp(a, b))


@pytest.mark.parametrize("name", UINTS)
def test_unsigned_integer_division_by_zero_raises(name):
    # PyTorch's rule for every integer dtype (torch raises RuntimeError("ZeroDivisionError") for int64).
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([1, 2]) // torch.tensor([1, 0])
    a = fc.tensor(np.array([1, 2, 3], dtype=name))
    z = fc.tensor(np.array([1, 0, 2], dtype=name))
    for f in (fc.floor_divide, fc.remainder, fc.fmod, operator.floordiv, operator.mod):
        with pytest.raises(ValueError, match=rf"ZeroDivisionError: integer division by zero \(a {name} divisor"):
            f(a, z)
        with pytest.raises(ValueError, match="ZeroDivisionError"):
            f(a, 0)


# Pairs the standard promotes (PyTorch refuses them): the result as NumPy's, values and dtype.
MIXED_PAIRS = [
    ("uint8", "uint16"),
    ("bool", "uint64"),
    ("int8", "uint16"),
    ("int16", "uint32"),
    ("int32", "uint32"),
    ("int64", "uint16"),
    ("uint16", "uint32"),
    ("uint32", "uint64"),
]


@pytest.mark.parametrize(("da", "db"), MIXED_PAIRS)
def test_mixed_unsigned_promotion_matches_numpy(da, db):
    a = np.array([0, 1, 5, 100, 3], dtype=da) if da != "bool" else np.array([0, 1, 1, 0, 1], dtype=bool)
    b = np.array([1, 2, 7, np.iinfo(db).max, 4], dtype=db)
    fa, fb = fc.tensor(a), fc.tensor(b)
    for op in (operator.add, operator.sub, operator.mul, operator.and_, operator.or_, operator.lt, operator.eq):
        check_np(op(fa, fb), op(a, b))
        check_np(op(fb, fa), op(b, a))
    if da != "bool":
        check_np(fb // fc.tensor(a + 1), b // (a + 1))
    assert fname(fc.result_type(fa, fb)) == str(np.result_type(a, b))


def test_uint64_with_a_signed_integer_is_refused_naming_both():
    for s in ("int8", "int64"):
        with pytest.raises(TypeError, match=f"uint64 with a signed integer type.*uint64 and {s}"):
            fc.ones(2, dtype=fc.uint64) + fc.ones(2, dtype=FC[s])
        with pytest.raises(TypeError, match=f"uint64 with a signed integer type.*{s} and uint64"):
            fc.ones(2, dtype=FC[s]) & fc.ones(2, dtype=fc.uint64)


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite", "signbit", "logical_not"])
def test_half_predicates_match_torch(half, op):
    values = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0, 65504.0]
    f = fc.tensor(values).to(FC[half])
    t = torch.from_numpy(to_numpy(f.view(fc.int16))).view(TORCH[half])  # the same bits (NaN's sign included)
    assert_same_as_torch(getattr(fc, op)(f), getattr(torch, op)(t))
    assert_same_as_torch(getattr(fc, op)(f[::2]), getattr(torch, op)(t[::2]))


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_half_logical_binary_match_torch(half, op):
    x = [np.nan, 0.0, -0.0, 1.0, 0.0, 2.0]
    y = [0.0, 0.0, 1.0, np.inf, np.nan, -1.0]
    t = getattr(torch, op)(torch.tensor(x).to(TORCH[half]), torch.tensor(y).to(TORCH[half]))
    assert_same_as_torch(getattr(fc, op)(fc.tensor(x).to(FC[half]), fc.tensor(y).to(FC[half])), t)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_logical_ops_read_every_bit_of_an_integer(name):
    """A value with only its top bit set (int16's -32768) is true: the logical loops read integers by their bits."""
    info = np.iinfo(name)
    x = np.array([info.min, 0, 1, info.max, info.min, info.max // 2 + 1], dtype=name)
    y = np.array([0, info.min, info.max, 0, info.min, 0], dtype=name)
    fx, fy = fc.tensor(x), fc.tensor(y)
    check_np(fc.logical_not(fx), np.logical_not(x))
    for op in ("logical_and", "logical_or", "logical_xor"):
        check_np(getattr(fc, op)(fx, fy), getattr(np, op)(x, y))
        check_np(getattr(fc, op)(fx, fc.tensor(y.astype(bool))), getattr(np, op)(x, y.astype(bool)))
    if not name.startswith("uint") or name == "uint8":  # PyTorch has them for these dtypes
        t = torch.from_numpy(x)
        assert_same_as_torch(fc.logical_not(fx), torch.logical_not(t))
        assert_same_as_torch(fc.logical_xor(fx, fy), torch.logical_xor(t, torch.from_numpy(y)))


def test_ops_still_refusing_a_dtype_name_the_op_and_dtype():
    u16, u32, h = fc.ones(2, dtype=fc.uint16), fc.ones(2, dtype=fc.uint32), fc.ones(2, dtype=fc.float16)
    for call, pattern in [
        (lambda: fc.hypot(u16, u16), r"\[hypot\] is not supported for dtype uint16"),
        (lambda: fc.nextafter(u32, u32), r"\[nextafter\] is not supported for dtype uint32"),
        (lambda: fc.bitwise_and(h, h), r"\[bitwise_and\] is not supported for dtype float16"),
        (lambda: ~h, r"\[bitwise_not\] is not supported for dtype float16"),
        (lambda: fc.bitwise_left_shift(h, h), r"\[bitwise_left_shift\] is not supported for dtype float16"),
        (lambda: fc.frac(u16), r"\[frac\] is not supported for dtype uint16"),
    ]:
        with pytest.raises(TypeError, match=pattern):
            call()


CPLX_BIN = ["add", "sub", "mul", "div", "pow"]
CPLX_UN = ["neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "tan", "sinh", "cosh", "reciprocal"]


@pytest.mark.parametrize("name", ["complex64", "complex128"])
@pytest.mark.parametrize("op", CPLX_BIN)
def test_complex_binary_matches_torch(name, op):
    g = torch.Generator().manual_seed(2)
    a = torch.randn(13, 11, dtype=TORCH[name], generator=g)
    b = torch.randn(13, 11, dtype=TORCH[name], generator=g)
    tol = dict(rtol=1e-4, atol=1e-5) if name == "complex64" else dict(rtol=1e-10, atol=1e-12)
    for (fa, ta), (fb, tb) in zip(layouts(a), layouts(b), strict=True):
        ours = getattr(fc, op)(fa, fb)
        assert ours.dtype == FC[name]
        np.testing.assert_allclose(to_numpy(ours), getattr(torch, op)(ta, tb).numpy(), **tol)
    # with real tensors and Python numbers (promotion to complex)
    np.testing.assert_allclose(to_numpy(getattr(fc, op)(from_torch(a), 2.5)), getattr(torch, op)(a, 2.5).numpy(), **tol)
    np.testing.assert_allclose(
        to_numpy(getattr(fc, op)(from_torch(a), 1 - 2j)), getattr(torch, op)(a, 1 - 2j).numpy(), **tol
    )
    r = torch.rand(11, dtype=torch.float32 if name == "complex64" else torch.float64, generator=g) + 0.5
    np.testing.assert_allclose(
        to_numpy(getattr(fc, op)(from_torch(a), from_torch(r))), getattr(torch, op)(a, r).numpy(), **tol
    )


@pytest.mark.parametrize("name", ["complex64", "complex128"])
@pytest.mark.parametrize("op", CPLX_UN + ["abs", "angle", "conj", "conj_physical"])
def test_complex_unary_matches_torch(name, op):
    g = torch.Generator().manual_seed(3)
    a = torch.randn(9, 14, dtype=TORCH[name], generator=g)
    tol = dict(rtol=1e-4, atol=1e-5) if name == "complex64" else dict(rtol=1e-10, atol=1e-12)
    for fa, ta in layouts(a):
        ours = getattr(fc, op)(fa)
        expected = getattr(torch, op)(ta).resolve_conj()
        assert fname(ours.dtype) == tname(expected.dtype)
        np.testing.assert_allclose(to_numpy(ours), expected.numpy(), **tol)


def test_complex_comparisons():
    a = fc.tensor([1 + 2j, 3j, 2])
    b = fc.tensor([1 + 2j, 3, 2 + 0j])
    assert (a == b).tolist() == [True, False, True]
    assert (a != b).tolist() == [False, True, False]
    assert (a == 2).tolist() == [False, False, True]
    for f in (lambda: a < b, lambda: a <= b, lambda: a > 1, lambda: fc.ge(a, b)):
        with pytest.raises(TypeError, match=r"\[(lt|le|gt|ge)\] is not supported for complex tensors.*complex64"):
            f()
    with pytest.raises(TypeError, match=r"\[maximum\].*complex64"):
        fc.maximum(a, b)


def test_complex_special_values_match_torch():
    vals = [complex(x, y) for x in (0.0, -0.0, 1.0, np.inf, -np.inf, np.nan) for y in (0.0, 1.0, np.inf, np.nan)]
    t = torch.tensor(vals, dtype=torch.complex128)
    f = fc.tensor(vals, dtype=fc.complex128)
    for op in ("exp", "log", "sqrt"):
        ours, theirs = to_numpy(getattr(fc, op)(f)), getattr(torch, op)(t).numpy()
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=op)
        ok = ~np.isnan(theirs)
        np.testing.assert_allclose(ours[ok], theirs[ok], rtol=1e-12, err_msg=op)


# ---- reductions ----


@pytest.mark.parametrize("name", ["float16", "bfloat16", "complex64", "complex128"])
def test_sum_mean(name):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(7, 300, dtype=torch.float64 if name.startswith("complex") else torch.float32, generator=g)
    x = x.to(TORCH[name]) if not name.startswith("complex") else torch.randn(7, 300, dtype=TORCH[name], generator=g)
    f = from_torch(x)
    tol = HALF_TOL.get(name, dict(rtol=1e-5, atol=1e-5))
    for args in [(), (1,), (0,), ((0, 1),), (-1, True)]:
        for red in ("sum", "mean"):
            ours, theirs = getattr(f, red)(*args), getattr(x, red)(*args)
            assert fname(ours.dtype) == tname(theirs.dtype), (red, args)
            assert tuple(ours.shape) == tuple(theirs.shape)
            np.testing.assert_allclose(to_numpy(ours), torch_numpy(theirs), **tol)
    # float32 accumulation: 4096 ones of float16 sum to 4096 (2048 + 1 is not representable in float16)
    assert fc.ones(4097, dtype=fc.float16).sum().item() == torch.ones(4097, dtype=torch.float16).sum().item()


# ---- complex views and ops ----


def test_view_as_real_complex_share_memory():
    z = fc.tensor([[1 + 2j, 3 - 4j], [5j, -1]], dtype=fc.complex64)
    r = fc.view_as_real(z)
    assert r.dtype == fc.float32 and tuple(r.shape) == (2, 2, 2)
    assert r.tolist() == torch.view_as_real(torch.tensor([[1 + 2j, 3 - 4j], [5j, -1]])).tolist()
    r[0, 0, 1] = 7.0
    assert z[0, 0].item() == 1 + 7j
    back = fc.view_as_complex(r)
    assert back.dtype == fc.complex64 and back.tolist() == z.tolist()
    # a non-contiguous complex view
    zt = z.t()
    rt = fc.view_as_real(zt)
    assert rt.tolist() == torch.view_as_real(torch.tensor(z.tolist()).t()).tolist()
    # real / imag are views
    re, im = fc.real(z), fc.imag(z)
    assert re.dtype == fc.float32 and re.tolist() == [[1, 3], [0, -1]]
    assert im.tolist() == [[7, -4], [5, 0]]
    im[1, 1] = 9.0
    assert z[1, 1].item() == -1 + 9j
    assert z.t().real.tolist() == [[1, 0], [3, -1]]
    x = fc.ones(3)
    assert fc.real(x).tolist() == [1, 1, 1]


def test_complex_view_errors():
    with pytest.raises(TypeError, match=r"\[view_as_real\] expects a complex tensor, got dtype float32"):
        fc.view_as_real(fc.ones(2))
    with pytest.raises(ValueError, match=r"\[view_as_complex\] the last dimension must have size 2"):
        fc.view_as_complex(fc.ones(2, 3))
    with pytest.raises(ValueError, match=r"\[view_as_complex\] the last dimension must have stride 1"):
        fc.view_as_complex(fc.ones(2, 2).t())
    with pytest.raises(TypeError, match=r"\[view_as_complex\].*int64"):
        fc.view_as_complex(fc.ones(2, 2, dtype=fc.int64))
    with pytest.raises(TypeError, match=r"\[imag\].*float32"):
        fc.imag(fc.ones(2))
    with pytest.raises(TypeError, match=r"\[complex\].*float32 and float64"):
        fc.complex(fc.ones(2), fc.ones(2, dtype=fc.float64))


def test_complex_polar_angle():
    re, im = torch.randn(5, 3, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)
    z = fc.complex(from_torch(re), from_torch(im))
    assert z.dtype == fc.complex128
    np.testing.assert_array_equal(to_numpy(z), torch.complex(re, im).numpy())
    ab, an = re.abs(), im
    np.testing.assert_allclose(
        to_numpy(fc.polar(from_torch(ab), from_torch(an))), torch.polar(ab, an).numpy(), rtol=1e-12
    )
    x = torch.tensor([-2.0, 0.0, 3.0, np.nan, -np.inf])
    np.testing.assert_array_equal(to_numpy(fc.angle(from_torch(x))), torch.angle(x).numpy())
    np.testing.assert_array_equal(to_numpy(fc.angle(fc.tensor([-1, 2]))), torch.angle(torch.tensor([-1, 2])).numpy())
    assert not fc.conj(fc.ones(2)).dtype.is_complex


# ---- error paths ----


def test_unsupported_combinations_name_op_and_dtypes():
    with pytest.raises(TypeError, match="Promotion of uint64 with a signed integer type.*uint64 and int8"):
        fc.ones(2, dtype=fc.uint64) + fc.ones(2, dtype=fc.int8)
    with pytest.raises(TypeError, match=r"\[frac\] is not supported for dtype uint32"):
        fc.frac(fc.ones(2, dtype=fc.uint32))
    with pytest.raises(TypeError, match=r"\[relu\].*complex64"):
        fc.relu(fc.ones(2, dtype=fc.complex64))
    with pytest.raises(TypeError, match=r"\[floor\].*complex128"):
        fc.floor(fc.ones(2, dtype=fc.complex128))
    with pytest.raises(ValueError, match=r"\[fill_\] value 70000 cannot be converted to type uint16"):
        fc.full((2,), 70000, dtype=fc.uint16)
    assert fc.full((2,), -1, dtype=fc.uint16).tolist() == [65535, 65535]
