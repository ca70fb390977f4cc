"""Note [Structured kernels] for flip, tril/triu, masked_fill, cummax/cummin, logcumsumexp, angle, complex,
frexp, searchsorted, _cdist_euclidean, _sort_values and _dot_small: their table rules (the check step, dtype
and shape) and ONE CPU out kernel each (src/cpu/indexing/shape_kernels.cpp, reduce/scan.cpp,
elementwise/complex_ops.cpp, reduce/mode_frexp.cpp, reduce/sort.cpp, linalg/cdist.cpp, linalg/dot_small.cpp)
serve the functional, out= and in-place forms on the cpu and the simulated device; the meta device gives
shapes and dtypes without computing. Values, dtypes, shapes, out= resizing and dtype errors, strided and
aliasing outs, empty and 0-d inputs and the errors are checked against PyTorch 2.13."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from flambeau_core.testing import devices, kernel_trace

RNG = np.random.default_rng(5)


def sample(dtype: str, shape=(3, 4, 5)) -> np.ndarray:
    """Small values with ties (cummax/cummin's last index of a tie), negatives and, for floats, a NaN, an
    infinity and signed zeros."""
    a = RNG.integers(-3, 4, shape).astype(np.float64) * 0.5
    if dtype == "bool":
        return a > 0
    if dtype.startswith(("int", "uint")):
        return np.abs(a * 2).astype(dtype) if dtype.startswith("u") else (a * 2).astype(dtype)
    flat = a.reshape(-1)
    if flat.size > 4:
        flat[:4] = [np.nan, np.inf, -0.0, 0.0]
    return a.astype(np.float32 if dtype in ("float16", "bfloat16") else dtype)


def make(a: np.ndarray, dtype: str, device: str = "cpu"):
    return fc.tensor(a).to(getattr(fc, dtype)).to(device), torch.from_numpy(np.array(a)).to(getattr(torch, dtype))


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype in (torch.float16, torch.bfloat16) else t).numpy()
    t = t.cpu()
    return np.array((t.float() if t.dtype in (fc.float16, fc.bfloat16) else t).tolist()).reshape(tuple(t.shape))


def assert_same(got, expected: torch.Tensor, exact: bool = True) -> None:
    if isinstance(expected, (tuple, list)):
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e, exact)
        return
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(expected.shape)
    if exact:
        np.testing.assert_array_equal(npy(got), npy(expected))
    else:
        np.testing.assert_allclose(npy(got), npy(expected), rtol=1e-5, atol=1e-5)


# name -> (call(lib, x), dtypes, in-place method or None, exact). `x` is the (3, 4, 5) sample of each dtype;
# the second operands are made from it in each library.
def _mask(lib, x):
    return lib.tensor([True, False, False, True, False]).to(x.device)


def _seq(lib, x):
    return lib.sort(lib.flatten(x)[:7]).values


CASES = {
    "flip": (lambda L, x: L.flip(x, [0, -1]), ["float32", "int64", "bool", "bfloat16", "complex64"], None),
    "tril": (lambda L, x: L.tril(x, 1), ["float32", "int16", "bool", "float16"], "tril_"),
    "triu": (lambda L, x: L.triu(x, -1), ["float64", "uint8", "bool"], "triu_"),
    "masked_fill": (lambda L, x: L.masked_fill(x, _mask(L, x), 2), ["float32", "int32", "bool", "bfloat16"], None),
    "cummax": (lambda L, x: L.cummax(x, 1), ["float32", "float64", "int64", "uint8"], None),
    "cummin": (lambda L, x: L.cummin(x, -1), ["float32", "int8", "bool"], None),
    "logcumsumexp": (lambda L, x: L.logcumsumexp(x, 2), ["float32", "float64"], None),
    "angle": (lambda L, x: L.angle(x), ["float32", "float64", "int64", "complex64", "complex128"], None),
    "complex": (lambda L, x: L.complex(x, L.flip(x, [0])), ["float32", "float64"], None),
    "frexp": (lambda L, x: L.frexp(x), ["float32", "float64", "float16", "bfloat16"], None),
    "searchsorted": (lambda L, x: L.searchsorted(_seq(L, x), x, right=True), ["float32", "int64", "float64"], None),
}
PAIRS = [(n, d) for n, spec in CASES.items() for d in spec[1]]


def _tuple(r):
    return tuple(r) if isinstance(r, tuple) else r


def _outs_like(expected, device, shape=None):
    def one(e):
        return fc.empty(tuple(e.shape) if shape is None else shape, dtype=getattr(fc, str(e.dtype)[6:]), device=device)

    return tuple(one(e) for e in expected) if isinstance(expected, tuple) else one(expected)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize(("name", "dtype"), PAIRS)
def test_forms_match_torch(name, dtype, device):
    f, _, inplace = CASES[name]
    x, t = make(sample(dtype), dtype, device)
    expected = _tuple(f(torch, t))
    got = f(fc, x)
    assert_same(got, expected)
    assert (got[0] if isinstance(got, tuple) else got).device.type == device
    # out= of the result's shape and dtype: written in place (same memory), returned.
    if name not in ("masked_fill",):
        outs = _outs_like(expected, device)
        ptrs = [o.data_ptr() for o in outs] if isinstance(outs, tuple) else outs.data_ptr()
        r = _call_out(name, x, outs)
        assert (r[0] is outs[0] and r[1] is outs[1]) if isinstance(outs, tuple) else r is outs
        assert ([o.data_ptr() for o in outs] if isinstance(outs, tuple) else outs.data_ptr()) == ptrs
        assert_same(outs, expected)
        # Empty outs are resized silently (as torch).
        outs = _outs_like(expected, device, (0,))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _call_out(name, x, outs)
        assert_same(outs, expected)
    # In-place forms write self (the same memory) as torch.
    if inplace or name == "masked_fill":
        y = x.clone()
        ptr = y.data_ptr()
        ty = t.clone()
        if name == "masked_fill":
            r, e = y.masked_fill_(_mask(fc, y), 2), ty.masked_fill_(_mask(torch, ty), 2)
        else:
            r, e = getattr(y, inplace)(1), getattr(ty, inplace)(1)
        assert r is y and y.data_ptr() == ptr
        assert_same(y, e)


def _call_out(name, x, outs):
    """CASES[name]'s call with out=."""
    calls = {
        "flip": lambda: fc.flip(x, [0, -1], out=outs),
        "tril": lambda: fc.tril(x, 1, out=outs),
        "triu": lambda: fc.triu(x, -1, out=outs),
        "cummax": lambda: fc.cummax(x, 1, out=outs),
        "cummin": lambda: fc.cummin(x, -1, out=outs),
        "logcumsumexp": lambda: fc.logcumsumexp(x, 2, out=outs),
        "angle": lambda: fc.angle(x, out=outs),
        "complex": lambda: fc.complex(x, fc.flip(x, [0]), out=outs),
        "frexp": lambda: fc.frexp(x, out=outs),
        "searchsorted": lambda: fc.searchsorted(_seq(fc, x), x, right=True, out=outs),
    }
    return calls[name]()


@devices(types=("cpu", "sim"))
def test_private_kernels_match_torch(device):
    x1, t1 = make(RNG.standard_normal((2, 7, 5)), "float64", device)
    x2, t2 = make(RNG.standard_normal((2, 6, 5)), "float64", device)
    assert_same(_C._cdist_euclidean(x1, x2), torch.cdist(t1, t2), exact=False)
    s, ts = make(sample("float32", (4, 9)), "float32", device)
    for dim, desc in [(-1, False), (0, True), (1, True)]:
        assert_same(_C._sort_values(s, dim, desc), torch.sort(ts, dim=dim, descending=desc, stable=True).values)
    a, ta = make(RNG.standard_normal(17), "float32", device)
    b, tb = make(RNG.standard_normal(17), "float32", device)
    assert_same(fc.dot(a, b), torch.dot(ta, tb), exact=False)  # short vectors: the composite runs _dot_small
    assert_same(fc.dot(a[::2], b[::2]), torch.dot(ta[::2], tb[::2]), exact=False)


@pytest.mark.parametrize("name", [n for n in CASES if n != "masked_fill"])
def test_out_is_written_by_the_one_out_kernel(name):
    dtype = CASES[name][1][0]
    x, t = make(sample(dtype), dtype)
    expected = _tuple(CASES[name][0](torch, t))
    outs = _outs_like(expected, "cpu")
    # The second operands (complex's imag, searchsorted's sequence) are made before the trace.
    other = fc.flip(x, [0]) if name == "complex" else _seq(fc, x) if name == "searchsorted" else None
    with kernel_trace() as rows:
        if name == "complex":
            fc.complex(x, other, out=outs)
        elif name == "searchsorted":
            fc.searchsorted(other, x, right=True, out=outs)
        else:
            _call_out(name, x, outs)
    names = [r[0] for r in rows]
    assert names.count(name) == 1
    assert "copy_" not in names and "empty" not in names  # nothing computed elsewhere and copied
    assert_same(outs, expected)


def test_in_place_forms_run_the_out_kernel_on_self():
    for name, call in [("tril", lambda y: y.tril_(0)), ("masked_fill", lambda y: y.masked_fill_(y > 0, 1.0))]:
        y = fc.tensor(sample("float32", (4, 4)))
        if name == "masked_fill":
            mask = y > 0
            call = lambda y, m=mask: y.masked_fill_(m, 1.0)  # noqa: E731
        with kernel_trace() as rows:
            call(y)
        names = [r[0] for r in rows]
        assert names.count(name) == 1 and "empty" not in names, names


def test_strided_and_aliasing_outs():
    a = sample("float64", (4, 6))
    x, t = make(a, "float64")
    calls = [
        ("flip", lambda L, x, **kw: L.flip(x, [0, 1], **kw)),
        ("tril", lambda L, x, **kw: L.tril(x, 1, **kw)),
        ("triu", lambda L, x, **kw: L.triu(x, -1, **kw)),
        ("logcumsumexp", lambda L, x, **kw: L.logcumsumexp(x, 1, **kw)),
        ("angle", lambda L, x, **kw: L.angle(x, **kw)),
    ]
    for _name, f in calls:
        expected = f(torch, t)
        out = fc.zeros((6, 4), dtype=fc.float64).t()  # transposed: the values land in their elements
        assert f(fc, x, out=out) is out
        assert_same(out, expected)
        buf = fc.zeros((4, 12), dtype=fc.float64)
        f(fc, x, out=buf[:, ::2])  # every other column of a buffer
        assert_same(buf[:, ::2], expected)
        np.testing.assert_array_equal(npy(buf[:, 1::2]), 0)
        y = fc.tensor(a)
        f(fc, y, out=y)  # out= the input itself: every element read before it is written
        assert_same(y, expected)
    # Several results into transposed outs, and values= the input.
    expected = torch.cummax(t, 0)
    outs = (fc.zeros((6, 4), dtype=fc.float64).t(), fc.zeros((6, 4), dtype=fc.int64).t())
    fc.cummax(x, 0, out=outs)
    assert_same(outs, tuple(expected))
    y = fc.tensor(a)
    fc.cummax(y, 0, out=(y, fc.empty(0, dtype=fc.int64)))
    assert_same(y, expected.values)
    m, e = torch.frexp(t)
    outs = (fc.zeros((6, 4), dtype=fc.float64).t(), fc.zeros((6, 4), dtype=fc.int32).t())
    fc.frexp(x, out=outs)
    assert_same(outs, (m, e))
    # In place on a transposed self, and masked_fill_ with a mask that reads self.
    y = fc.tensor(a).t()
    y.tril_()
    assert_same(y, torch.from_numpy(a).t().tril())
    y = fc.tensor(a)
    y.masked_fill_(y > 0, 9.0)
    ty = torch.from_numpy(a.copy())
    assert_same(y, ty.masked_fill_(ty > 0, 9.0))


def _meta_calls(L, x):
    i = L.empty(3, 4, 5, dtype=L.int64, device="meta")
    yield L.flip(x, [0, 2])
    yield L.tril(x, 2)
    yield L.triu(x)
    yield L.masked_fill(x, L.empty(4, 5, dtype=L.bool, device="meta"), 1)
    if not x.dtype.is_complex:  # complex: TypeError on every device (torch's CPU kernels refuse it too)
        yield L.cummax(x, 1)
        yield L.cummin(x, 0)
    if x.dtype in (L.float32, L.float64):
        yield L.logcumsumexp(x, 2)
        yield L.frexp(x)
        yield L.complex(x, x)
    yield L.angle(x)
    yield L.angle(i)
    if not x.dtype.is_complex:
        yield L.searchsorted(L.empty(3, 4, 9, dtype=x.dtype, device="meta"), x)
        yield L.searchsorted(L.empty(9, dtype=x.dtype, device="meta"), x, out_int32=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
def test_meta_device_shapes_and_dtypes(dtype):
    t = torch.empty((3, 4, 5), dtype=getattr(torch, dtype), device="meta")
    x = fc.empty((3, 4, 5), dtype=getattr(fc, dtype), device="meta")
    got = list(_meta_calls(fc, x))
    expected = list(_meta_calls(torch, t))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        for gi, ei in zip(g if isinstance(g, tuple) else (g,), e if isinstance(e, tuple) else (e,), strict=True):
            assert gi.is_meta
            assert str(gi.dtype).removeprefix("flambeau.") == str(ei.dtype).removeprefix("torch.")
            assert tuple(gi.shape) == tuple(ei.shape)
    if x.dtype.is_complex:
        with pytest.raises(TypeError, match=r"\[cummax\] dtype complex64 is not supported"):
            fc.cummax(x, 1)
    # out= on the meta device: resized, nothing computed.
    out = fc.empty(0, device="meta", dtype=x.dtype)
    assert fc.flip(x, [1], out=out) is out and tuple(out.shape) == (3, 4, 5)
    f = fc.empty((3, 4, 5), device="meta")
    outs = (fc.empty(0, device="meta"), fc.empty(0, device="meta", dtype=fc.int32))
    fc.frexp(f, out=outs)
    assert [tuple(o.shape) for o in outs] == [(3, 4, 5)] * 2
    # The private kernels' rules.
    a = fc.empty(2, 7, 5, device="meta")
    assert tuple(_C._cdist_euclidean(a, fc.empty(2, 6, 5, device="meta")).shape) == (2, 7, 6)
    assert _C._sort_values(a, 1, False).is_meta and tuple(_C._sort_values(a, 1, False).shape) == (2, 7, 5)


def test_meta_device_raises_the_checks():
    x = fc.empty(3, 4, device="meta")
    with pytest.raises(RuntimeError, match=r"\[flip\] dim 0 appears multiple times"):
        fc.flip(x, [0, -2])
    with pytest.raises(RuntimeError, match=r"\[tril\] input must have at least 2 dims"):
        fc.tril(fc.empty(3, device="meta"))
    with pytest.raises(IndexError, match=r"\[cummax\]"):
        fc.cummax(x, 2)
    with pytest.raises(TypeError, match=r"\[frexp\]"):
        fc.frexp(fc.empty(3, dtype=fc.int64, device="meta"))
    with pytest.raises(RuntimeError, match=r"\[searchsorted\] side must be 'left' or 'right'"):
        fc.searchsorted(fc.empty(3, device="meta"), x, side="middle")
    with pytest.raises(RuntimeError, match=r"\[cdist\] expected inputs \(B, P, M\) and \(B, R, M\)"):
        _C._cdist_euclidean(x, x)


@pytest.mark.parametrize(
    ("name", "call", "bad"),
    [
        ("triu", lambda L, x, o: L.triu(x, 1, out=o), "float64"),
        ("tril", lambda L, x, o: L.tril(x, out=o), "float64"),
        ("logcumsumexp", lambda L, x, o: L.logcumsumexp(x, 0, out=o), "float64"),
        ("searchsorted", lambda L, x, o: L.searchsorted(L.sort(L.flatten(x)).values, x, out=o), "int32"),
        ("angle", lambda L, x, o: L.angle(x, out=o), "int64"),
    ],
)
def test_out_dtype_errors_and_resize_warnings(name, call, bad):
    x, t = make(sample("float32", (3, 4)), "float32")
    with pytest.raises(RuntimeError):
        call(torch, t, torch.empty(0, dtype=getattr(torch, bad)))
    with pytest.raises((TypeError, RuntimeError), match=rf"\[{name}\]"):
        call(fc, x, fc.empty(0, dtype=getattr(fc, bad)))
    expected = call(torch, t, None)
    # A non-empty out of another shape is resized with a warning, as torch.
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        call(torch, t, torch.empty(7, dtype=expected.dtype))
    out = fc.empty(7, dtype=getattr(fc, str(expected.dtype)[6:]))
    with warnings.catch_warnings(record=True) as fw:
        warnings.simplefilter("always")
        call(fc, x, out)
    assert len(tw) == len(fw) == 1
    assert_same(out, expected)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 4), (2, 0, 3)])
def test_empty_and_0d_inputs_as_torch(shape, device):
    a = sample("float32", shape)
    x, t = make(a, "float32", device)
    nd = len(shape)
    calls = [
        lambda L, x: L.flip(x, [0]) if x.dim() else L.flip(x, [-1]),
        lambda L, x: L.tril(x, 1),
        lambda L, x: L.triu(x, -1),
        lambda L, x: L.masked_fill(x, L.tensor(True) if L is torch else L.tensor(True, device=device), 3.0),
        lambda L, x: L.cummax(x, -1),
        lambda L, x: L.cummin(x, 0),
        lambda L, x: L.logcumsumexp(x, -1),
        lambda L, x: L.angle(x),
        lambda L, x: L.complex(x, x),
        lambda L, x: L.frexp(x),
        lambda L, x: L.searchsorted(L.arange(3.0) if L is torch else L.arange(3.0, device=device), x),
    ]
    for f in calls:
        try:
            expected = f(torch, t)
        except (RuntimeError, IndexError) as e:
            with pytest.raises(type(e) if isinstance(e, IndexError) else RuntimeError):
                f(fc, x)
            continue
        assert_same(f(fc, x), _tuple(expected))
    # A dim out of range: IndexError naming the op (torch's type; torch's cummax/cummin skip the check
    # when the input has elements of no dim, flambeau's check step does not).
    for name in ("cummax", "cummin", "logcumsumexp"):
        if name == "logcumsumexp" or nd == 0:
            with pytest.raises(IndexError):
                getattr(torch, name)(t, nd + 1)
        with pytest.raises(IndexError, match=rf"\[{name}\]"):
            getattr(fc, name)(x, nd + 1)
    with pytest.raises(IndexError):
        torch.flip(t, [nd + 1])
    with pytest.raises(IndexError, match=r"\[flip\]"):
        fc.flip(x, [nd + 1])


def test_errors_as_torch():
    """The checks the kernels made, now in the check step: torch's error type where it is RuntimeError or
    IndexError (flambeau's FlambeauError is a RuntimeError); the dtype errors are TypeErrors naming the op."""
    # (call, torch's error type, flambeau's, flambeau's message)
    cases = [
        (lambda L: L.flip(L.ones(2, 2), [0, 0]), RuntimeError, RuntimeError, r"\[flip\] dim 0 appears multiple times"),
        (lambda L: L.tril(L.ones(2)), RuntimeError, RuntimeError, r"\[tril\] input must have at least 2 dims"),
        (lambda L: L.triu(L.ones(())), RuntimeError, RuntimeError, r"\[triu\] input must have at least 2 dims"),
        (lambda L: L.cummax(L.ones(2), 3), IndexError, IndexError, r"\[cummax\] dimension 3 out of range"),
        (
            lambda L: L.searchsorted(L.ones(2, 2), L.ones(3, 2)),
            RuntimeError,
            RuntimeError,
            r"\[searchsorted\] sorted_sequence of shape \(2, 2\) and input of shape \(3, 2\)",
        ),
        (
            lambda L: L.searchsorted(L.ones(3), L.ones(2), side="mid"),
            RuntimeError,
            RuntimeError,
            r"\[searchsorted\] side must be 'left' or 'right', got 'mid'",
        ),
        (  # found in the sorter's values: the kernel's IndexError
            lambda L: L.searchsorted(L.arange(3), L.arange(2), sorter=L.tensor([0, 1, 5])),
            RuntimeError,
            IndexError,
            r"\[searchsorted\] sorter index 5 is out of range for size 3",
        ),
    ]
    for f, torch_kind, kind, msg in cases:
        with pytest.raises(torch_kind):
            f(torch)
        with pytest.raises(kind, match=msg):
            f(fc)
    typed = [
        (lambda L: L.logcumsumexp(L.ones(2, dtype=L.int64), 0), r"\[logcumsumexp\] expects a floating point tensor"),
        (lambda L: L.frexp(L.ones(2, dtype=L.int64)), r"\[frexp\] frexp: only supports floating-point dtypes"),
        (lambda L: L.complex(L.ones(2), L.ones(2, dtype=L.float64)), r"\[complex\] expects real and imag of one dtype"),
        (lambda L: L.masked_fill(L.ones(3), L.ones(3), 1), r"\[masked_fill\] mask must be a bool tensor"),
        (lambda L: L.cummax(L.ones(2, dtype=L.complex64), 0), r"\[cummax\] dtype complex64 is not supported"),
    ]
    for f, msg in typed:
        with pytest.raises((RuntimeError, NotImplementedError)):
            f(torch)
        with pytest.raises(TypeError, match=msg):
            f(fc)
    # Private kernels (messages naming the public op).
    with pytest.raises(TypeError, match=r"\[cdist\] expected two float32 or two float64 inputs"):
        _C._cdist_euclidean(fc.ones(1, 2, 3), fc.ones(1, 2, 3, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[sort\]"):
        _C._sort_values(fc.ones(3, dtype=fc.complex64), 0, False)
    with pytest.raises(IndexError, match=r"\[sort\]"):
        _C._sort_values(fc.ones(3), 1, False)
