"""The opsperf2 area against PyTorch 2.13 (and NumPy): in-place forms and out= of the elementwise ops
that write straight into the destination (Note [Output hint]): values, aliasing, views,
non-contiguous destinations, the version counter, and the fallbacks with their errors (a dtype or
shape that does not fit); the complex product along a dim in independent lanes; complex multiply
with the plain formula (kron); the iterator's row walk over broadcast shapes split across threads."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch


def to_numpy(t: fc.Tensor) -> np.ndarray:
    if t.dtype in (fc.bfloat16, fc.float16):
        t = t.float()
    return np.array(memoryview(t.contiguous()))


def from_numpy(a: np.ndarray, dtype: str) -> fc.Tensor:
    if dtype in ("float16", "bfloat16"):
        return fc.tensor(a.astype(np.float32)).to(getattr(fc, dtype))
    return fc.tensor(a.astype(getattr(np, dtype)))


def to_torch(a: np.ndarray, dtype: str) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(getattr(torch, dtype))


def torch_numpy(x: torch.Tensor) -> np.ndarray:
    return (x.float() if x.dtype in (torch.bfloat16, torch.float16) else x).numpy()


RNG = np.random.default_rng(7)
UNARY = ["relu", "neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "atan", "expm1", "log1p"]
UNARY += ["erf", "rsqrt", "reciprocal", "floor", "ceil", "trunc", "round", "frac", "sign"]
POSITIVE = {"log", "sqrt", "rsqrt", "log1p"}
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def sample(shape, name: str) -> np.ndarray:
    a = RNG.standard_normal(shape) * 2
    return np.abs(a) + 0.1 if name in POSITIVE else a


def layouts(a: np.ndarray, dtype: str):
    """(name, destination tensor, the matching numpy view) for several layouts of one 2-D array."""
    yield "contiguous", from_numpy(a, dtype), lambda b: b
    yield "transposed", from_numpy(a.T.copy(), dtype).t(), lambda b: b
    yield "column slice", from_numpy(a, dtype)[:, 1::2], lambda b: b[:, 1::2]


def tol(dtype: str) -> dict:
    return {"float16": {"rtol": 2e-3, "atol": 2e-3}, "bfloat16": {"rtol": 1.6e-2, "atol": 1.6e-2}}.get(
        dtype, {"rtol": 1e-6, "atol": 1e-6}
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_inplace_writes_self(name, dtype):
    a = sample((9, 14), name)
    for layout, x, view in layouts(a, dtype):
        before = x.clone()
        expected = getattr(fc, name)(before)  # the out-of-place op: the same kernel, the same values
        v0 = x._version
        r = getattr(x, name + "_")()
        assert r is x, layout
        assert x._version == v0 + 1, layout
        np.testing.assert_array_equal(to_numpy(x), to_numpy(expected), err_msg=layout)
        t = to_torch(view(a), dtype)
        getattr(t, name + "_")()
        np.testing.assert_allclose(to_numpy(x), torch_numpy(t), **tol(dtype), err_msg=layout)


def test_inplace_on_a_view_writes_the_base():
    a = sample((6, 8), "exp")
    x = fc.tensor(a.astype(np.float32))
    x[2:5, ::3].exp_()
    expected = a.astype(np.float32)
    expected[2:5, ::3] = np.exp(expected[2:5, ::3])
    np.testing.assert_allclose(to_numpy(x), expected, rtol=1e-6)


def test_inplace_complex_and_integer():
    z = RNG.standard_normal((5, 7)) + 1j * RNG.standard_normal((5, 7))
    x = fc.tensor(z.astype(np.complex64))
    assert x.neg_() is x
    np.testing.assert_array_equal(to_numpy(x), -z.astype(np.complex64))
    x.exp_()
    np.testing.assert_allclose(to_numpy(x), np.exp(-z), rtol=1e-5)
    i = fc.tensor(np.arange(-6, 6, dtype=np.int64).reshape(3, 4))
    i.abs_().neg_()
    np.testing.assert_array_equal(to_numpy(i), -np.abs(np.arange(-6, 6).reshape(3, 4)))


def test_inplace_errors_keep_self():
    i = fc.tensor(np.arange(6, dtype=np.int64))
    with pytest.raises(TypeError, match=r"exp_.*Float.*Long|exp_.*float32.*int64"):
        i.exp_()
    np.testing.assert_array_equal(to_numpy(i), np.arange(6))
    b = fc.tensor(np.ones((3,), np.float32)).expand(4, 3)
    with pytest.raises((RuntimeError, ValueError)):
        b.relu_()


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]


BINARY_CASES = [(n, d) for n in BINARY for d in ["float32", "float64", "float16", "bfloat16"]]
BINARY_CASES += [(n, "complex64") for n in ["add", "sub", "mul", "div"]]  # maximum/minimum/pow: real only


@pytest.mark.parametrize("name,dtype", BINARY_CASES)
def test_binary_out_writes_out(name, dtype):
    a, b = RNG.standard_normal((7, 10)), RNG.standard_normal((1, 10))
    if name == "pow":
        a = np.abs(a) + 0.5
    if dtype == "complex64":
        a, b = a + 1j * RNG.standard_normal(a.shape), b + 1j * RNG.standard_normal(b.shape)
    fa, fb_ = from_numpy(a, dtype), from_numpy(b, dtype)
    expected = getattr(fc, name)(fa, fb_)
    ta, tb = to_torch(a, dtype), to_torch(b, dtype)
    theirs = getattr(torch, name)(ta, tb)
    for layout, out in [
        ("contiguous", fc.empty((7, 10), dtype=getattr(fc, dtype))),
        ("transposed", fc.empty((10, 7), dtype=getattr(fc, dtype)).t()),
        ("strided", fc.empty((7, 20), dtype=getattr(fc, dtype))[:, ::2]),
    ]:
        v0 = out._version
        r = getattr(fc, name)(fa, fb_, out=out)
        assert r is out, layout
        assert out._version > v0
        np.testing.assert_array_equal(to_numpy(out), to_numpy(expected), err_msg=layout)
        np.testing.assert_allclose(to_numpy(out), torch_numpy(theirs), **tol(dtype), err_msg=layout)


def test_out_aliasing_inputs():
    a = RNG.standard_normal((8, 9)).astype(np.float32)
    x = fc.tensor(a)
    assert fc.mul(x, x, out=x) is x  # out is both inputs
    np.testing.assert_array_equal(to_numpy(x), a * a)
    x = fc.tensor(a)
    fc.add(x[1:], x[:-1], out=x[:-1])  # partially overlapping: reads the old values
    np.testing.assert_array_equal(to_numpy(x)[:-1], a[1:] + a[:-1])
    x = fc.tensor(a)
    fc.sub(x, x.t()[:8, :8].contiguous().t()[:, :1], out=x)  # broadcast other into x
    t = torch.from_numpy(a.copy())
    torch.sub(t, t.t()[:8, :8].contiguous().t()[:, :1], out=t)
    np.testing.assert_array_equal(to_numpy(x), t.numpy())
    x = fc.tensor(a)
    fc.exp(x.t(), out=x.t())
    np.testing.assert_allclose(to_numpy(x), np.exp(a), rtol=1e-6)


def test_out_fallbacks_match_torch():
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    x, t = fc.tensor(a), torch.from_numpy(a.copy())
    # A wider out dtype: computed in float32, then cast (as PyTorch).
    o = fc.empty((4, 5), dtype=fc.float64)
    assert fc.mul(x, x, out=o) is o
    np.testing.assert_array_equal(to_numpy(o), (a * a).astype(np.float64))
    # Inputs that broadcast to less than out's shape: out is resized (with PyTorch's warning), not
    # broadcast into.
    o = fc.empty((3, 4, 5))
    to = torch.empty((3, 4, 5))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fc.add(x, x, out=o)
    assert any("resized" in str(m.message) for m in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.add(t, t, out=to)
    assert tuple(o.shape) == tuple(to.shape) == (4, 5)
    np.testing.assert_array_equal(to_numpy(o), a + a)
    # Empty out: resized silently.
    o = fc.empty((0,))
    fc.sin(x, out=o)
    np.testing.assert_allclose(to_numpy(o), np.sin(a), rtol=1e-6)
    # Errors: a float result into an integer out; out of the wrong device is covered in test_devices.
    oi = fc.empty((4, 5), dtype=fc.int64)
    with pytest.raises(TypeError, match="add"):
        fc.add(x, x, out=oi)
    with pytest.raises(TypeError, match="exp"):
        fc.exp(x, out=oi)
    # An expanded out: PyTorch refuses to write it; so do we.
    oe = fc.empty((1, 5)).expand(4, 5)
    with pytest.raises((RuntimeError, ValueError)):
        fc.add(x, x, out=oe)
    with pytest.raises(RuntimeError):
        torch.add(t, t, out=torch.empty((1, 5)).expand(4, 5))


def test_integer_inputs_float_out():
    i = fc.tensor(np.arange(12, dtype=np.int64).reshape(3, 4))
    o = fc.empty((3, 4))
    assert fc.div(i, 3, out=o) is o
    np.testing.assert_allclose(to_numpy(o), np.arange(12).reshape(3, 4) / 3, rtol=1e-6)
    assert fc.sqrt(i, out=o) is o
    np.testing.assert_allclose(to_numpy(o), np.sqrt(np.arange(12).reshape(3, 4)), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 33, 257, 1000])
def test_prod_complex_lanes(dtype, n):
    z = (RNG.standard_normal((5, n)) + 1j * RNG.standard_normal((5, n))) * (0.3 + 1.4 / np.sqrt(n))
    ours = fc.tensor(z.astype(dtype)).prod(1)
    theirs = torch.from_numpy(z.astype(dtype)).prod(1)
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-4 if dtype == "complex64" else 1e-10)
    ours = fc.tensor(z.T.copy().astype(dtype)).prod(0)  # along dim 0: made rows first
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-4 if dtype == "complex64" else 1e-10)
    ours = fc.tensor(z.astype(dtype)).t().prod(0, keepdim=True)  # non-contiguous input
    assert tuple(ours.shape) == (1, 5)
    np.testing.assert_allclose(to_numpy(ours)[0], theirs.numpy(), rtol=1e-4 if dtype == "complex64" else 1e-10)


def test_prod_complex_special_values():
    z = np.array([[1 + 1j, np.nan + 0j, 2j], [np.inf + 0j, 1 + 0j, 2 + 0j], [0j, 3 + 1j, 1 - 1j]])
    z = np.tile(z, (1, 7))  # past the lanes
    ours = to_numpy(fc.tensor(z).prod(1))
    theirs = torch.from_numpy(z).prod(1).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))
    fin = np.isfinite(theirs)
    np.testing.assert_allclose(ours[fin], theirs[fin], rtol=1e-12)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_mul_and_kron(dtype):
    a = RNG.standard_normal((13, 1, 7)) + 1j * RNG.standard_normal((13, 1, 7))
    b = RNG.standard_normal((4, 1)) + 1j * RNG.standard_normal((4, 1))
    ours = fc.mul(fc.tensor(a.astype(dtype)), fc.tensor(b.astype(dtype)))
    theirs = torch.mul(torch.from_numpy(a.astype(dtype)), torch.from_numpy(b.astype(dtype)))
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-6 if dtype == "complex64" else 1e-14)
    a, b = a[:, 0, :], b[:, :1] @ np.ones((1, 3))
    ours = fc.kron(fc.tensor(a.astype(dtype)), fc.tensor(b.astype(dtype)))
    theirs = torch.kron(torch.from_numpy(a.astype(dtype)), torch.from_numpy(b.astype(dtype)))
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-6 if dtype == "complex64" else 1e-14)


@pytest.mark.parametrize(
    "sa,sb",
    [((40, 1, 200, 1), (1, 13, 1, 11)), ((3, 1, 5), (1, 4, 1)), ((700, 1, 3), (1, 1000, 3)), ((2, 3), (3,))],
)
def test_iterator_rows_over_threads(sa, sb):
    """Broadcast shapes whose rows are short and whose thread chunks start inside a row."""
    prev = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        a, b = RNG.standard_normal(sa).astype(np.float32), RNG.standard_normal(sb).astype(np.float32)
        np.testing.assert_array_equal(to_numpy(fc.add(fc.tensor(a), fc.tensor(b))), a + b)
        np.testing.assert_allclose(to_numpy(fc.atan2(fc.tensor(a), fc.tensor(b))), np.arctan2(a, b), rtol=1e-6)
        x = fc.tensor(np.broadcast_to(a, np.broadcast_shapes(sa, sb)).copy())
        x.mul_(fc.tensor(b))
        np.testing.assert_array_equal(to_numpy(x), a * b)
    finally:
        fc.set_num_threads(prev)


def ulp_distance_16(ours: fc.Tensor, theirs: torch.Tensor) -> np.ndarray:
    """|difference| in units in the last place between two 16-bit float tensors (finite, same sign)."""

    def bits(v: np.ndarray) -> np.ndarray:  # float32 values exactly representable in the 16-bit type
        if ours.dtype == fc.float16:
            return v.astype(np.float16).view(np.int16).astype(np.int64)
        return (v.astype(np.float32).view(np.int32) >> 16).astype(np.int64)

    return np.abs(bits(to_numpy(ours)) - bits(torch_numpy(theirs)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_exp_fused_matches_torch(dtype):
    """The fused 16-bit exp (degree-5 polynomial in float32 registers): within one ulp of
    PyTorch's (float32 exp then rounded) everywhere, exact on the special values, over every tail
    length of the 16-lane loop; strided inputs take the blocked float32 route and agree too."""
    hi = 11.5 if dtype == "float16" else 90.0
    lo = -18.0 if dtype == "float16" else -105.0
    x = np.concatenate([np.linspace(lo, hi, 20011), RNG.standard_normal(5000) * 3])
    t = torch.from_numpy(x.astype(np.float32)).to(getattr(torch, dtype))
    f = fc.tensor(x.astype(np.float32)).to(getattr(fc, dtype))
    ours, theirs = fc.exp(f), torch.exp(t)
    o, th = to_numpy(ours), torch_numpy(theirs)
    np.testing.assert_array_equal(np.isinf(o), np.isinf(th))
    np.testing.assert_array_equal(o == 0, th == 0)
    fin = np.isfinite(th) & (th != 0)
    assert ulp_distance_16(ours, theirs)[fin].max() <= 1
    assert (ulp_distance_16(ours, theirs)[fin] != 0).mean() < 0.01
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-8, -1e-8, 88.8, -88.0, -87.5, -100.0], np.float32)
    for n in range(1, 34):  # every tail length, the special values at every lane position
        xs = np.resize(special, n)
        ours = to_numpy(fc.exp(fc.tensor(xs).to(getattr(fc, dtype))))
        theirs = torch_numpy(torch.exp(torch.from_numpy(xs).to(getattr(torch, dtype))))
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        ok = ~np.isnan(theirs)
        np.testing.assert_allclose(ours[ok], theirs[ok], rtol=1e-2, atol=0)
    # Non-contiguous input and output (the blocked float32 loop), and out= / in-place forms.
    f2 = fc.tensor(x[:4000].astype(np.float32).reshape(40, 100)).to(getattr(fc, dtype))
    t2 = torch.from_numpy(x[:4000].astype(np.float32).reshape(40, 100)).to(getattr(torch, dtype))
    np.testing.assert_allclose(
        to_numpy(fc.exp(f2.t())), torch_numpy(torch.exp(t2.t())), rtol=8e-3 if dtype == "bfloat16" else 1e-3
    )
    g = f2.clone()
    g.exp_()
    np.testing.assert_array_equal(to_numpy(g), to_numpy(fc.exp(f2)))


@pytest.mark.parametrize("n", [1, 5, 63, 64, 65, 100, 127, 128, 129, 1000, 1023, 4096, 5000])
def test_float32_arg_extremum_rows(n):
    """max/min/argmax/argmin along the last dim of float32 rows (the AVX-512 register loop for
    64 <= n): first index of ties, first NaN, maxima in the masked tail, non-contiguous input."""
    rng = np.random.default_rng(n)
    for trial in range(12):
        x = rng.standard_normal((7, n)).astype(np.float32)
        if trial % 3 == 0:
            x = np.round(x)  # many ties
        if trial % 4 == 1:
            x[rng.integers(0, 7), rng.integers(0, n)] = np.nan
            x[rng.integers(0, 7), rng.integers(0, n)] = np.nan
        if trial % 4 == 2:
            x[:, -1] = 100.0  # the best in the tail
            x[:, 0] = -100.0
        if trial % 4 == 3:
            x[:, :] = -0.0
            x[:, n // 2] = 0.0  # signed zeros compare equal: the first index wins
        t = torch.from_numpy(x)
        f = fc.tensor(x)
        for fn in ("max", "min"):
            v, i = getattr(f, fn)(-1)
            tv, ti = getattr(t, fn)(-1)
            np.testing.assert_array_equal(to_numpy(i), ti.numpy())
            np.testing.assert_array_equal(to_numpy(v), tv.numpy())
        np.testing.assert_array_equal(to_numpy(f.argmax(-1)), t.argmax(-1).numpy())
        np.testing.assert_array_equal(to_numpy(f.argmin(-1)), t.argmin(-1).numpy())
    xt = np.ascontiguousarray(rng.standard_normal((n, 3)).astype(np.float32))
    np.testing.assert_array_equal(to_numpy(fc.tensor(xt).t().argmax(-1)), torch.from_numpy(xt).t().argmax(-1).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "bool"])
def test_gather_last_dim_one_pass(dtype):
    """gather along a contiguous last dim checks each index in the copying pass: values vs torch,
    and an out-of-range index anywhere in a row (negative, n, huge) raises IndexError naming it."""
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((33, 50)) * 10).astype(dtype)
    idx = rng.integers(0, 50, size=(33, 17))
    ours = fc.tensor(a).gather(1, fc.tensor(idx))
    np.testing.assert_array_equal(to_numpy(ours), torch.from_numpy(a).gather(1, torch.from_numpy(idx)).numpy())
    for bad in (-1, 50, 2**62):
        for where in ((0, 0), (32, 16), (17, 8)):
            j = idx.copy()
            j[where] = bad
            with pytest.raises(IndexError, match=rf"gather.*index {bad} is out of bounds for dimension 1 with size 50"):
                fc.tensor(a).gather(1, fc.tensor(j))
