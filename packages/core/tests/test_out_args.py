"""out= against PyTorch 2.13: every op that takes out= in PyTorch takes it here,
with PyTorch's rules (Note [out= dtypes] in codegen/gen_core.py, Note [out= resizing] and
copy_to_out in src/python/arg_parser.cpp, Note [Factory out=] in bind_factories.cpp):

* the values written and the returned object (out itself, or out=(a, b) as a named tuple);
* out's dtype: accepted or refused as PyTorch does, per op: cast when the result casts to it
  (exp, add, stack, outer, ...), computed in out's dtype (sum, prod, cumsum, linspace, the
  factories), exactly the result's (mm, matmul, softmax, argmax, where, linalg, tuple outs),
  bool/uint8 only (all/any). A refusal is a TypeError (flambeau's documented class for dtype
  errors; PyTorch's RuntimeError) naming the op and both dtypes;
* out of another shape is resized (a UserWarning unless it was empty);
* out on another device raises; out aliasing an input gives the right values.

The autograd rule (out= never records) is tested in packages/nn/tests/test_outargs_autograd.py.
"""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch

F = [[0.5, -1.25, 2.0], [3.5, 0.75, -2.5]]
SQ = [[2.0, 0.5, 0.25], [0.5, 3.0, 0.125], [0.25, 0.125, 4.0]]


def T(m, values, dtype="float32"):
    return m.tensor(np.asarray(values).tolist(), dtype=getattr(m, dtype))


# (id, call(m, out)): the op called with out=out (out=None: the plain call, for the result's shape).
CASES = [
    ("sum dim", lambda m, out: m.sum(T(m, F), 1, out=out)),
    ("sum int32", lambda m, out: m.sum(T(m, [[1, 2], [3, 4]], "int32"), 0, out=out)),
    ("sum keepdim", lambda m, out: m.sum(T(m, F), 0, True, out=out)),
    ("nansum", lambda m, out: m.nansum(T(m, F), 1, out=out)),
    ("mean", lambda m, out: m.mean(T(m, F), 0, out=out)),
    ("prod dim", lambda m, out: m.prod(T(m, F), 1, out=out)),
    ("cumsum", lambda m, out: m.cumsum(T(m, F), 1, out=out)),
    ("cumsum int32", lambda m, out: m.cumsum(T(m, [1, 2, 3], "int32"), 0, out=out)),
    ("cumprod", lambda m, out: m.cumprod(T(m, F), 0, out=out)),
    ("all", lambda m, out: m.all(T(m, F), 1, out=out)),
    ("any", lambda m, out: m.any(T(m, [[0, 0], [0, 2]], "int64"), 1, out=out)),
    ("argmax", lambda m, out: m.argmax(T(m, F), 1, out=out)),
    ("argmin", lambda m, out: m.argmin(T(m, F), 0, out=out)),
    ("argsort", lambda m, out: m.argsort(T(m, F), stable=True, out=out)),
    ("mm", lambda m, out: m.mm(T(m, F), T(m, F).t(), out=out)),
    ("mm int64", lambda m, out: m.mm(T(m, [[1, 2], [3, 4]], "int64"), T(m, [[1, 0], [2, 1]], "int64"), out=out)),
    ("bmm", lambda m, out: m.bmm(T(m, [F, F]), T(m, [F, F]).transpose(1, 2), out=out)),
    ("matmul 2-d", lambda m, out: m.matmul(T(m, F), T(m, F).t(), out=out)),
    ("matmul 1-d", lambda m, out: m.matmul(T(m, F), T(m, [1.0, 2.0, 3.0]), out=out)),
    ("matmul batched", lambda m, out: m.matmul(T(m, [F, F]), T(m, F).t(), out=out)),
    ("where", lambda m, out: m.where(T(m, F) > 0, T(m, F), T(m, F) * 2, out=out)),
    ("where promoted", lambda m, out: m.where(T(m, F) > 0, T(m, F), T(m, F, "float64"), out=out)),
    ("softmax", lambda m, out: m.softmax(T(m, F), 1, out=out)),
    ("log_softmax", lambda m, out: m.log_softmax(T(m, F), 0, out=out)),
    ("softmax dtype", lambda m, out: m.softmax(T(m, F), 1, dtype=m.float64, out=out)),
    ("stack", lambda m, out: m.stack([T(m, F), T(m, F) * 3], 1, out=out)),
    ("stack int", lambda m, out: m.stack([T(m, [1, 2], "int32"), T(m, [3, 4], "int32")], out=out)),
    ("cat", lambda m, out: m.cat([T(m, F), T(m, F)], out=out)),
    ("exp", lambda m, out: m.exp(T(m, F), out=out)),
    ("add", lambda m, out: m.add(T(m, F), 2, out=out)),
    ("add int", lambda m, out: m.add(T(m, [1, 2], "int32"), T(m, [3, 4], "int32"), out=out)),
    ("dot", lambda m, out: m.dot(T(m, [1.0, 2.0, 3.0]), T(m, [0.5, -1.0, 2.0]), out=out)),
    ("mv", lambda m, out: m.mv(T(m, F), T(m, [1.0, 2.0, 3.0]), out=out)),
    ("outer", lambda m, out: m.outer(T(m, [1.0, 2.0]), T(m, [0.5, -1.0, 2.0]), out=out)),
    ("ger", lambda m, out: m.ger(T(m, [1.0, 2.0]), T(m, [0.5, -1.0, 2.0]), out=out)),
    ("inner", lambda m, out: m.inner(T(m, F), T(m, F), out=out)),
    ("matrix_power", lambda m, out: m.matrix_power(T(m, SQ), 3, out=out)),
    ("chain_matmul", lambda m, out: m.chain_matmul(T(m, SQ), T(m, SQ), T(m, SQ), out=out)),
    ("linalg.matmul", lambda m, out: m.linalg.matmul(T(m, F), T(m, F).t(), out=out)),
    ("linalg.vecdot", lambda m, out: m.linalg.vecdot(T(m, F), T(m, F), out=out)),
    ("linalg.inv", lambda m, out: m.linalg.inv(T(m, SQ), out=out)),
    ("linalg.det", lambda m, out: m.linalg.det(T(m, SQ), out=out)),
    ("nonzero", lambda m, out: m.nonzero(T(m, F) > 1, out=out)),
    ("linspace", lambda m, out: m.linspace(0, 4.5, 4, out=out)),
    ("logspace", lambda m, out: m.logspace(0, 1, 3, out=out)),
    ("zeros", lambda m, out: m.zeros(2, 3, out=out)),
    ("ones", lambda m, out: m.ones((3,), out=out)),
    ("full", lambda m, out: m.full((2, 2), 1.5, out=out)),
    ("empty", lambda m, out: m.empty(2, out=out).zero_()),
    ("arange", lambda m, out: m.arange(0, 5, 2, out=out)),
    ("arange float", lambda m, out: m.arange(0.0, 3.0, out=out)),
    # out= of these was there; its dtype rule is now PyTorch's (exact for most of them)
    ("abs", lambda m, out: m.abs(T(m, F), out=out)),
    ("abs int", lambda m, out: m.abs(T(m, [[-1, 2]], "int64"), out=out)),
    ("floor", lambda m, out: m.floor(T(m, F), out=out)),
    ("round", lambda m, out: m.round(T(m, F), out=out)),
    ("neg", lambda m, out: m.neg(T(m, F), out=out)),
    ("sign", lambda m, out: m.sign(T(m, F), out=out)),
    ("amax", lambda m, out: m.amax(T(m, F), 1, out=out)),
    ("max", lambda m, out: m.max(T(m, F), out=out)),
    ("min int", lambda m, out: m.min(T(m, [[3, 1]], "int64"), out=out)),
    ("tril", lambda m, out: m.tril(T(m, F), out=out)),
    ("signbit", lambda m, out: m.signbit(T(m, F), out=out)),
    ("searchsorted", lambda m, out: m.searchsorted(T(m, [0.0, 1.0, 2.0]), T(m, F), out=out)),
    ("quantile", lambda m, out: m.quantile(T(m, F), 0.25, 1, out=out)),
    ("norm", lambda m, out: m.norm(T(m, F), 2, 1, out=out)),
    ("take_along_dim", lambda m, out: m.take_along_dim(T(m, F), T(m, [[0, 2, 1]], "int64"), 1, out=out)),
    ("eq", lambda m, out: m.eq(T(m, F), 0.5, out=out)),
    ("linalg.matrix_rank", lambda m, out: m.linalg.matrix_rank(T(m, SQ), out=out)),
    ("fft.fft", lambda m, out: m.fft.fft(T(m, F), out=out)),
    ("fft.irfft", lambda m, out: m.fft.irfft(T(m, F), out=out)),
]
# The result dtype's out, others of a wider/narrower kind, bool, complex.
OUT_DTYPES = ["same", "float64", "float32", "int64", "int32", "uint8", "bool", "complex64", "complex128"]


def _run(m, call, dtype, shape):
    out = None if dtype is None else m.empty(tuple(shape), dtype=getattr(m, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's complex-to-real cast warning
        r = call(m, out)
    return r, out


@pytest.mark.parametrize("odt", OUT_DTYPES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_out_dtype_and_values_match_torch(case, odt):
    name, call = case
    plain = call(torch, None)
    ref_plain = call(fc, None)
    assert str(ref_plain.dtype).split(".")[-1] == str(plain.dtype).split(".")[-1], (ref_plain.dtype, plain.dtype)
    dtype = str(plain.dtype).split(".")[-1] if odt == "same" else odt
    if name == "all" and dtype == "uint8":
        pytest.skip("PyTorch 2.13 writes 0 for all(float32 input, out=uint8), a bug: flambeau writes 1")
    if name.startswith("arange") and dtype.startswith("complex"):
        pytest.skip("flambeau's arange has complex dtypes, PyTorch's CPU kernel does not (docs/design/dtypes.md)")
    if name == "nansum" and dtype.startswith("complex"):
        pytest.skip("PyTorch has no complex nansum kernel for out=; flambeau casts the float32 result into it")
    shape = tuple(plain.shape)
    try:
        theirs, tout = _run(torch, call, dtype, shape)
        torch_error = None
    except (RuntimeError, TypeError, ValueError) as e:
        torch_error = e
    if torch_error is not None:
        with pytest.raises((TypeError, RuntimeError)) as info:
            _run(fc, call, dtype, shape)
        msg = str(info.value)
        assert msg.startswith("["), msg
        if isinstance(info.value, TypeError):
            assert dtype in msg, msg  # names out's dtype
        return
    ours, fout = _run(fc, call, dtype, shape)
    assert ours is fout, name  # out itself comes back
    assert str(fout.dtype).split(".")[-1] == dtype
    assert tuple(fout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(
        np.asarray(fout.tolist(), dtype=complex if "complex" in dtype else float),
        np.asarray(tout.tolist(), dtype=complex if "complex" in dtype else float),
        rtol=1e-6 if dtype != "float64" else 1e-12,
        atol=1e-6,
    )


@pytest.mark.parametrize(
    "case", [c for c in CASES if c[0] in ("sum dim", "mm", "where", "stack", "dot", "zeros", "cumsum")], ids=str
)
def test_out_of_another_shape_is_resized(case):
    _, call = case
    plain = call(fc, None)
    shape = tuple(plain.shape)
    # A non-empty out of another shape: resized, with a UserWarning naming the op.
    big = fc.empty(7, 5, dtype=plain.dtype)
    with pytest.warns(UserWarning, match=r"^\[\w+\] An output with one or more elements was resized"):
        r = call(fc, big)
    assert r is big and tuple(big.shape) == shape
    assert big.tolist() == plain.tolist()
    # An empty one: silently.
    empty = fc.empty(0, dtype=plain.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = call(fc, empty)
    assert r is empty and tuple(empty.shape) == shape and empty.tolist() == plain.tolist()
    assert empty.is_contiguous()


def test_out_into_a_non_contiguous_view():
    base = fc.zeros(3, 4)
    view = base.t()[:, :2]  # (4, 2), strided
    fc.mm(T(fc, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]), T(fc, [[1.0, 0.0], [0.0, 1.0]]), out=view)
    tb = torch.zeros(3, 4)
    torch.mm(torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]), torch.eye(2), out=tb.t()[:, :2])
    assert base.tolist() == tb.tolist()


@pytest.mark.parametrize(
    ("call", "op", "words"),
    [
        (lambda: fc.mean(T(fc, F), 0, out=fc.empty(3, dtype=fc.int64)), "mean", ["float32", "int64", "can't be cast"]),
        (lambda: fc.mm(T(fc, F), T(fc, F).t(), out=fc.empty(2, 2, dtype=fc.float64)), "mm", ["float32", "float64"]),
        (lambda: fc.argmax(T(fc, F), 0, out=fc.empty(3, dtype=fc.int32)), "argmax", ["int64", "int32"]),
        (lambda: fc.all(T(fc, F), 0, out=fc.empty(3)), "all", ["float32"]),
        (lambda: fc.sum(T(fc, F), 0, dtype=fc.float64, out=fc.empty(3)), "sum", ["float64", "float32"]),
        (lambda: fc.exp(T(fc, F), out=fc.empty(2, 3, dtype=fc.int64)), "exp", ["float32", "int64", "can't be cast"]),
        (lambda: fc.stack([T(fc, F)], out=fc.empty(1, 2, 3, dtype=fc.int64)), "stack", ["float32", "int64"]),
        (lambda: fc.zeros(2, dtype=fc.float32, out=fc.empty(2, dtype=fc.float64)), "zeros", ["float32", "float64"]),
        (lambda: fc.dot(T(fc, [1.0]), T(fc, [1.0]), out=fc.empty((), dtype=fc.float64)), "dot", ["float64"]),
        (lambda: fc.linalg.vecdot(T(fc, F), T(fc, F), out=fc.empty(2, dtype=fc.int64)), "linalg.vecdot", ["int64"]),
        (lambda: fc.cumsum(T(fc, F), 0, dtype=fc.float64, out=fc.empty(2, 3)), "cumsum", ["float64", "float32"]),
        (lambda: fc.linspace(0, 1, 3, dtype=fc.float64, out=fc.empty(3)), "linspace", ["float64", "float32"]),
    ],
)
def test_refused_out_dtype_names_op_and_dtypes(call, op, words):
    with pytest.raises(TypeError) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(f"[{op}]"), msg
    for w in words:
        assert w in msg, (w, msg)


def test_computed_in_out_dtype_as_torch():
    # sum/cumsum/prod into an integer out cast the input first (PyTorch): 0.5 + 0.5 + 0.7 -> 0.
    v = [0.5, 0.5, 0.7]
    for op in ("sum", "cumsum", "prod"):
        o_fc, o_t = (
            fc.empty(3 if op == "cumsum" else (), dtype=fc.int64),
            torch.empty(3 if op == "cumsum" else (), dtype=torch.int64),
        )
        getattr(fc, op)(fc.tensor(v), 0, out=o_fc)
        getattr(torch, op)(torch.tensor(v), 0, out=o_t)
        assert o_fc.tolist() == o_t.tolist(), op
    # and the dtype= keyword now accepts a float input into an integer dtype, as PyTorch
    assert fc.sum(fc.tensor(v), dtype=fc.int64).item() == torch.sum(torch.tensor(v), dtype=torch.int64).item()
    assert fc.prod(fc.tensor(v), dtype=fc.int64).item() == torch.prod(torch.tensor(v), dtype=torch.int64).item()
    # mean into a float64 out sums in float64
    x = [1e8, 1.0, -1e8, 1.0]
    om, ot = fc.empty((), dtype=fc.float64), torch.empty((), dtype=torch.float64)
    fc.mean(fc.tensor(x), 0, out=om)
    torch.mean(torch.tensor(x), 0, out=ot)
    assert om.item() == ot.item()


# Ops returning several tensors: out=(a, b, ...), each of its result's dtype exactly.
TUPLE_CASES = [
    ("max dim", lambda m, out: m.max(T(m, F), 1, out=out), [("float32", (2,)), ("int64", (2,))]),
    ("min dim", lambda m, out: m.min(T(m, F), 0, out=out), [("float32", (3,)), ("int64", (3,))]),
    ("sort", lambda m, out: m.sort(T(m, F), 1, out=out), [("float32", (2, 3)), ("int64", (2, 3))]),
    ("topk", lambda m, out: m.topk(T(m, F), 2, out=out), [("float32", (2, 2)), ("int64", (2, 2))]),
    ("linalg.qr", lambda m, out: m.linalg.qr(T(m, SQ), out=out), [("float32", (3, 3)), ("float32", (3, 3))]),
    ("qr", lambda m, out: m.qr(T(m, SQ), out=out), [("float32", (3, 3)), ("float32", (3, 3))]),
    ("linalg.slogdet", lambda m, out: m.linalg.slogdet(T(m, SQ), out=out), [("float32", ()), ("float32", ())]),
    ("slogdet", lambda m, out: m.slogdet(T(m, SQ), out=out), [("float32", ()), ("float32", ())]),
    ("linalg.eigh", lambda m, out: m.linalg.eigh(T(m, SQ), out=out), [("float32", (3,)), ("float32", (3, 3))]),
]


def _abs_close(a, b):
    # (eigenvector / Q signs may differ between LAPACK builds: compare magnitudes for those)
    np.testing.assert_allclose(np.abs(np.asarray(a.tolist())), np.abs(np.asarray(b.tolist())), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", TUPLE_CASES, ids=[c[0] for c in TUPLE_CASES])
def test_tuple_outs(case):
    name, call, spec = case
    outs_fc = tuple(fc.empty(0, dtype=getattr(fc, d)) for d, _ in spec)
    outs_t = tuple(torch.empty(0, dtype=getattr(torch, d)) for d, _ in spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r_fc = call(fc, outs_fc)
        r_t = call(torch, outs_t)
    assert all(a is b for a, b in zip(r_fc, outs_fc, strict=True)), name
    assert type(r_fc).__name__ == type(r_t).__name__ or hasattr(r_fc, "_fields")
    for a, b, (_, shape) in zip(outs_fc, outs_t, spec, strict=True):
        assert tuple(a.shape) == tuple(b.shape) == shape
        _abs_close(a, b)
    # A wrong dtype in the tuple: refused by both.
    bad = (fc.empty(0, dtype=fc.float64),) + outs_fc[1:]
    bad_t = (torch.empty(0, dtype=torch.float64),) + outs_t[1:]
    with pytest.raises(RuntimeError):
        call(torch, bad_t)
    with pytest.raises(TypeError, match=r"float64"):
        call(fc, bad)
    # A tuple of the wrong length, or a tensor instead of a tuple.
    with pytest.raises(TypeError, match=rf"{name.split()[0]}.*tuple of {len(spec)} tensors"):
        call(fc, outs_fc[:1])


def test_svd_and_lstsq_tuple_outs():
    A = T(fc, [[2.0, 0.5], [0.5, 3.0], [1.0, 1.0]])
    At = torch.tensor([[2.0, 0.5], [0.5, 3.0], [1.0, 1.0]])
    outs = tuple(fc.empty(0) for _ in range(3))
    r = fc.linalg.svd(A, full_matrices=False, out=outs)
    assert r.S is outs[1]
    _abs_close(outs[1], torch.linalg.svdvals(At))
    outs = tuple(fc.empty(0) for _ in range(3))
    r = fc.svd(A, out=outs)
    assert r.V is outs[2] and tuple(outs[2].shape) == (2, 2)
    B = T(fc, [[1.0], [2.0], [3.0]])
    lo = (fc.empty(0), fc.empty(0), fc.empty(0, dtype=fc.int64), fc.empty(0))
    r = fc.linalg.lstsq(A, B, out=lo)
    assert r.solution is lo[0]
    _abs_close(lo[0], torch.linalg.lstsq(At, torch.tensor([[1.0], [2.0], [3.0]])).solution)


def test_random_ops_take_out():
    g = fc.Generator().manual_seed(0)
    for call, dtype, shape in [
        (lambda o: fc.rand(2, 3, generator=g, out=o), fc.float64, (2, 3)),
        (lambda o: fc.randn(4, out=o), fc.float32, (4,)),
        (lambda o: fc.randint(5, (3, 2), out=o), fc.float32, (3, 2)),
        (lambda o: fc.randint(2, 5, (3,), out=o), fc.int32, (3,)),
        (lambda o: fc.randperm(6, out=o), fc.int64, (6,)),
        (lambda o: fc.normal(fc.zeros(3), fc.ones(3), out=o), fc.float64, (3,)),
        (lambda o: fc.normal(0.0, 1.0, (2,), out=o), fc.float64, (2,)),
        (lambda o: fc.bernoulli(fc.full((4,), 0.5), out=o), fc.float64, (4,)),
    ]:
        o = fc.empty(0, dtype=dtype)
        r = call(o)
        assert r is o and o.dtype == dtype and tuple(o.shape) == shape
    o = fc.empty(0, dtype=fc.int64)
    fc.randperm(6, out=o)
    assert sorted(o.tolist()) == list(range(6))
    o = fc.empty(0, dtype=fc.float32)
    fc.randint(2, 5, (50,), out=o)
    assert all(2 <= v < 5 and v == int(v) for v in o.tolist())


def test_out_aliasing_an_input():
    # The result is computed before out is written (a new buffer), so out may be an input.
    for op, args in [
        ("cumsum", lambda x: (x, 0)),
        ("add", lambda x: (x, x)),
        ("softmax", lambda x: (x, 0)),
        ("mm", lambda x: (x, x)),
        ("matmul", lambda x: (x, x)),
        ("exp", lambda x: (x,)),
    ]:
        x = fc.arange(4.0).reshape(2, 2)
        want = getattr(fc, op)(*args(x.clone())).tolist()
        r = getattr(fc, op)(*args(x), out=x)
        assert r is x and x.tolist() == want, op
        xt = torch.arange(4.0).reshape(2, 2)
        if op not in ("mm", "matmul"):  # (PyTorch's BLAS path writes out first: its result is garbage)
            getattr(torch, op)(*args(xt), out=xt)
            np.testing.assert_allclose(np.asarray(x.tolist()), np.asarray(xt.tolist()), rtol=1e-6)
    # out a view of an input, resized-free
    x = fc.arange(4.0).reshape(2, 2)
    fc.mean(x, 0, out=x[0])
    assert x.tolist() == [[1.0, 2.0], [2.0, 3.0]]
    # sort into its own input
    x = fc.tensor([3.0, 1.0, 2.0])
    fc.sort(x, out=(x, fc.empty(0, dtype=fc.int64)))
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_out_on_another_device_raises():
    from flambeau_core.testing import skip_reason

    why = skip_reason("sim")
    if why:
        pytest.skip(why)
    sim = "sim"
    x = fc.tensor([1.0, 2.0])
    for call in (
        lambda o: fc.sum(x, 0, out=o),
        lambda o: fc.exp(x, out=o),
        lambda o: fc.mm(x[None], x[:, None], out=o),
        lambda o: fc.dot(x, x, out=o),
    ):
        o = fc.empty(0, device=sim)
        with pytest.raises(RuntimeError, match=r"out= is on sim"):
            call(o)


def test_out_must_be_a_tensor():
    with pytest.raises(TypeError):
        fc.sum(fc.ones(2), 0, out=[1.0])
    with pytest.raises(TypeError, match=r"\[dot\] out= must be a Tensor"):
        fc.dot(fc.ones(2), fc.ones(2), out=3)
    with pytest.raises(TypeError, match=r"\[zeros\] out= must be a Tensor"):
        fc.zeros(2, out=3)


def test_vecdot_conjugates_complex_as_torch():
    x = [[1 + 2j, 3 - 1j], [0.5j, 2.0]]
    y = [[2 - 1j, 1j], [1.0, 1 + 1j]]
    ours = fc.linalg.vecdot(fc.tensor(x), fc.tensor(y))
    theirs = torch.linalg.vecdot(torch.tensor(x), torch.tensor(y))
    np.testing.assert_allclose(np.asarray(ours.tolist()), np.asarray(theirs.tolist()), rtol=1e-6)


def test_integer_linspace_and_dot_dtypes_as_torch():
    for dt in ("int64", "int32", "uint8"):
        a = fc.linspace(0, 4.5, 4, dtype=getattr(fc, dt)).tolist()
        assert a == torch.linspace(0, 4.5, 4, dtype=getattr(torch, dt)).tolist(), dt
        d = fc.dot(fc.tensor([1, 2, 3], dtype=getattr(fc, dt)), fc.tensor([4, 5, 6], dtype=getattr(fc, dt)))
        t = torch.dot(
            torch.tensor([1, 2, 3], dtype=getattr(torch, dt)), torch.tensor([4, 5, 6], dtype=getattr(torch, dt))
        )
        assert d.item() == t.item() and str(d.dtype).split(".")[-1] == dt
    with pytest.raises(TypeError, match=r"^\[dot\].*bool"):
        fc.dot(fc.tensor([True]), fc.tensor([True]))
    with pytest.raises(TypeError, match=r"^\[linspace\].*bool"):
        fc.linspace(0, 1, 3, dtype=fc.bool)
