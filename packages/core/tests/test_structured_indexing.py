"""Note [Structured kernels] for the indexing family (src/cpu/indexing/indexing.cpp, shape_kernels.cpp,
embedding.cpp, out_writes.h): gather, scatter (src, value, reduce), scatter_add, scatter_reduce, index,
index_select, index_add, index_copy, index_fill, cat, embedding and embedding_dense_backward run their meta
step and one out kernel in the functional, out= and in-place forms, on the cpu and the simulated device
(and cuda where present) and on the meta device. Values against PyTorch 2.13; out= written by the kernel
(no copy in the kernel trace); strided and aliasing out; out-of-range indices (the exception and message
PyTorch gives, never a write outside the output), empty indices and 0-d inputs; a seeded random loop."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import devices, kernel_trace, raises_when_run
from test_structured_reductions import npy, sample

RNG = np.random.default_rng(11)


def make(a: np.ndarray, dtype: str, device: str = "cpu"):
    return fc.tensor(a).to(getattr(fc, dtype)).to(device), torch.from_numpy(np.array(a)).to(getattr(torch, dtype))


def index(values, device: str = "cpu"):
    a = np.asarray(values, dtype=np.int64)
    return fc.tensor(a).to(device), torch.from_numpy(a)


def assert_same(got, expected: torch.Tensor, tol: float = 0.0) -> None:
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(expected.shape)
    if tol:
        np.testing.assert_allclose(npy(got), npy(expected), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(npy(got), npy(expected))


def cases(device: str):
    """(name, flambeau call, torch call, tolerance): each op's call with its arguments made on `device`;
    `call(lib, out=None)` runs the functional or out= form."""
    x, tx = make(sample("float32", (4, 5)), "float32", device)
    i2, ti2 = index([[0, 3, 1, 3, 2], [2, 0, 0, 1, 3]], device)  # duplicates along dim 0
    src, tsrc = make(sample("float32", (2, 5)), "float32", device)
    il, til = index([3, 0, 3], device)
    s3, ts3 = make(sample("float32", (4, 3)), "float32", device)
    w, tw = make(sample("float64", (7, 3)), "float64", device)
    e, te = index([[6, 0], [2, 6]], device)
    g, tg = make(sample("float64", (2, 2, 3)), "float64", device)
    iv, tiv = index([[0, 3, 1, 4], [2, 0, 0, 1]], device)
    a = {"fc": (x, i2, src, il, s3, w, e, g, iv), "torch": (tx, ti2, tsrc, til, ts3, tw, te, tg, tiv)}

    def mk(fn):
        return lambda lib, **kw: fn(lib, *a["fc" if lib is fc else "torch"], **kw)

    out = [
        ("gather", mk(lambda L, x, i, *r, **kw: L.gather(x, 0, i, **kw)), 0.0),
        ("scatter", mk(lambda L, x, i, s, *r, **kw: L.scatter(x, 0, i, s, **kw)), 0.0),
        ("scatter_value", mk(lambda L, x, i, s, il, s3, w, e, g, iv, **kw: L.scatter(x, 1, iv, 2.5, **kw)), 0.0),
        ("scatter_multiply", mk(lambda L, x, i, s, *r, **kw: L.scatter(x, 0, i, s, reduce="multiply", **kw)), 0.0),
        ("scatter_add", mk(lambda L, x, i, s, *r, **kw: L.scatter_add(x, 0, i, s, **kw)), 1e-6),
        ("index_select", mk(lambda L, x, i, s, il, *r, **kw: L.index_select(x, 1, il, **kw)), 0.0),
        ("index_add", mk(lambda L, x, i, s, il, s3, *r, **kw: L.index_add(x, 1, il, s3, alpha=2, **kw)), 1e-6),
        ("index_copy", mk(lambda L, x, i, s, il, s3, *r, **kw: L.index_copy(x, 1, il[1:], s3[:, 1:], **kw)), 0.0),
        ("cat", mk(lambda L, x, i, s, *r, **kw: L.cat([x, s, x[:1]], 0, **kw)), 0.0),
    ]
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            out.append(
                (
                    f"scatter_reduce_{reduce}_{inc}",
                    mk(
                        lambda L, x, i, s, *r, red=reduce, inc=inc, **kw: L.scatter_reduce(
                            x, 0, i, s, red, include_self=inc, **kw
                        )
                    ),
                    1e-6,
                )
            )
    return out, a


def fc_torch(device):
    cs, a = cases(device)
    return {name: (call, tol) for name, call, tol in cs}, a


NAMES = [c[0] for c in cases("cpu")[0]]


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("name", NAMES)
def test_functional_and_out_forms_match_torch(name, device):
    table, _ = fc_torch(device)
    call, tol = table[name]
    expected = call(torch)
    got = call(fc)
    assert got.device.type == device
    assert_same(got, expected, tol)
    # out= of the result's shape and dtype is written in place, an empty one is resized.
    out = fc.empty(tuple(expected.shape), dtype=got.dtype, device=device)
    ptr = out.data_ptr()
    assert call(fc, out=out) is out
    assert out.data_ptr() == ptr
    assert_same(out, expected, tol)
    out = fc.empty((0,), dtype=got.dtype, device=device)
    assert call(fc, out=out) is out
    assert_same(out, expected, tol)


INPLACE = {
    "scatter_": lambda L, x, i, s, il, s3: x.scatter_(0, i, s),
    "scatter_value_": lambda L, x, i, s, il, s3: x.scatter_(1, i[:, :4] % 5, -1.0),
    "scatter_add_": lambda L, x, i, s, il, s3: x.scatter_add_(0, i, s),
    "scatter_reduce_": lambda L, x, i, s, il, s3: x.scatter_reduce_(0, i, s, "mean", include_self=False),
    "index_add_": lambda L, x, i, s, il, s3: x.index_add_(1, il, s3, alpha=-1),
    "index_copy_": lambda L, x, i, s, il, s3: x.index_copy_(1, il[1:], s3[:, 1:]),
    "index_fill_": lambda L, x, i, s, il, s3: x.index_fill_(1, il, 7.0),
}


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_forms_write_self(name, device):
    _, a = fc_torch(device)
    x, i, s, il, s3 = a["fc"][:5]
    tx, ti, ts, til, ts3 = a["torch"][:5]
    x, tx = x.clone(), tx.clone()
    INPLACE[name](torch, tx, ti, ts, til, ts3)
    ptr, v0 = x.data_ptr(), x._version
    assert INPLACE[name](fc, x, i, s, il, s3) is x
    assert x.data_ptr() == ptr and x._version > v0
    assert_same(x, tx, 1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_out_is_written_by_the_out_kernel(name):
    table, _ = fc_torch("cpu")
    call, _ = table[name]
    expected = call(fc)
    out = fc.empty(tuple(expected.shape), dtype=expected.dtype)
    with kernel_trace() as rows:
        call(fc, out=out)
    names = [r[0] for r in rows]
    assert "copy_" not in names and "empty" not in names and "clone" not in names, names
    np.testing.assert_array_equal(npy(out), npy(expected))


def test_inplace_form_runs_no_copy():
    x, t = make(sample("float32", (4, 5)), "float32")
    i, ti = index([[0, 3, 1, 3, 2]])
    j, tj = index([1])
    s = fc.ones(1, 5)
    with kernel_trace() as rows:
        x.scatter_add_(0, i, s)
        x.index_fill_(1, j, 2.0)
    assert sorted(r[0] for r in rows) == ["index_fill", "scatter_add"]  # no copy, no clone
    assert_same(x, t.scatter_add_(0, ti, torch.ones(1, 5)).index_fill_(1, tj, 2.0))


@pytest.mark.parametrize("name", NAMES)
def test_strided_out(name):
    table, _ = fc_torch("cpu")
    call, tol = table[name]
    expected = call(torch)
    if expected.dim() != 2:
        return
    rows, cols = expected.shape
    out = fc.zeros((cols, rows), dtype=fc.float32).t()  # a transposed out: the values land in its elements
    assert call(fc, out=out) is out
    assert_same(out, expected, tol)


def test_out_or_source_sharing_memory_with_the_inputs():
    a = sample("float64", (4, 5))
    # out= self: the scatter family starts from self, which the out already holds.
    x, t = make(a, "float64")
    assert fc.scatter_add(x, 0, fc.tensor([[1, 1, 0, 2, 3]]), x[:1].clone(), out=x) is x
    t.scatter_add_(0, torch.tensor([[1, 1, 0, 2, 3]]), t[:1].clone())
    assert_same(x, t)
    # In place with self as the source: every value is read before it is overwritten (torch refuses the
    # overlap for index_add_; its result on a copy of the source is the oracle).
    x, t = make(a, "float64")
    x.index_add_(0, fc.tensor([3, 0, 1, 2]), x)
    t.index_add_(0, torch.tensor([3, 0, 1, 2]), t.clone())
    assert_same(x, t)
    x, t = make(a, "float64")
    x.index_copy_(1, fc.tensor([4, 3, 2, 1, 0]), x)
    t.index_copy_(1, torch.tensor([4, 3, 2, 1, 0]), t.clone())
    assert_same(x, t)
    # The index itself as out (an int64 self): the indices are read before out is written.
    v = fc.tensor([2, 0, 1])
    assert fc.gather(fc.tensor([10, 11, 12]), 0, v, out=v) is v
    assert v.tolist() == [12, 10, 11]
    # cat into one of its inputs' memory (torch refuses it): the parts are read first.
    y = fc.tensor([1.0, 2.0, 3.0, 4.0])
    fc.cat([y[2:], y[:2]], 0, out=y)
    assert y.tolist() == [3.0, 4.0, 1.0, 2.0]


@pytest.mark.parametrize("name", NAMES)
def test_meta_device_shapes_and_dtypes(name):
    table, a = fc_torch("cpu")
    call, _ = table[name]
    expected = call(torch)
    metas = tuple(t.to("meta") for t in a["fc"])  # the call reads a["fc"]: its tensors on the meta device
    saved = a["fc"]
    a["fc"] = metas
    try:
        r = call(fc)
        assert r.is_meta
        assert str(r.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
        assert tuple(r.shape) == tuple(expected.shape)
        out = fc.empty((0,), dtype=r.dtype, device="meta")
        assert call(fc, out=out) is out
        assert tuple(out.shape) == tuple(expected.shape)
    finally:
        a["fc"] = saved


def test_meta_device_embedding_index_and_masks():
    w = fc.empty(7, 3, device="meta")
    i = fc.empty(2, 4, dtype=fc.int64, device="meta")
    assert tuple(fc.embedding(w, i).shape) == (2, 4, 3)
    assert tuple(fc.embedding_dense_backward(fc.empty(2, 4, 3, device="meta"), i, 7, -1, False).shape) == (7, 3)
    x = fc.empty(5, 6, device="meta")
    assert tuple(x[fc.empty(3, dtype=fc.int64, device="meta")].shape) == (3, 6)
    tm = torch.empty(5, 6, device="meta")
    with pytest.raises(NotImplementedError):
        tm[torch.empty(5, 6, dtype=torch.bool, device="meta")]
    with pytest.raises(NotImplementedError, match=r"\[index\] indexing with a bool mask"):
        x[fc.empty(5, 6, dtype=fc.bool, device="meta")]


@devices(types=("cpu", "sim", "cuda"))
def test_advanced_indexing_with_masks_and_indices(device):
    a = sample("float32", (4, 5, 3))
    x, t = make(a, "float32", device)
    m = RNG.standard_normal((4, 5)) > 0
    mu = RNG.standard_normal(4) > 0
    assert_same(x[fc.tensor(m).to(device)], t[torch.from_numpy(m)])
    assert_same(x[fc.tensor(mu).to(device)], t[torch.from_numpy(mu)])
    assert_same(x[:, fc.tensor(m[0]).to(device)], t[:, torch.from_numpy(m[0])])
    i, ti = index([3, -1, 0], device)
    j, tj = index([[4], [0]], device)
    assert_same(x[i], t[ti])
    assert_same(x[:, j, 1], t[:, tj, 1])
    assert_same(x[i, j], t[ti, tj])
    assert_same(x[fc.tensor(m).to(device), 2], t[torch.from_numpy(m), 2])
    none = fc.zeros(4, 5, dtype=fc.bool).to(device)
    assert_same(x[none], t[torch.zeros(4, 5, dtype=torch.bool)])


@devices(types=("cpu", "sim", "cuda"))
def test_embedding_and_backward_match_torch(device):
    w, tw = make(sample("float32", (9, 4)), "float32", device)
    i, ti = index([[8, 0, 3], [3, 3, 1]], device)
    assert_same(fc.embedding(w, i), torch.embedding(tw, ti))
    g, tg = make(sample("float32", (2, 3, 4)), "float32", device)
    for pad in (-1, 3):
        for scale in (False, True):
            expected = torch.ops.aten.embedding_dense_backward(tg, ti, 9, pad, scale)
            assert_same(fc.embedding_dense_backward(g, i, 9, pad, scale), expected, 1e-6)
    for dtype in ("float16", "bfloat16"):
        gh, tgh = make(sample("float32", (2, 3, 4)), dtype, device)
        expected = torch.ops.aten.embedding_dense_backward(tgh.float(), ti, 9, -1, False).to(tgh.dtype)
        assert_same(fc.embedding_dense_backward(gh, i, 9, -1, False), expected)


@devices(types=("cpu", "sim", "cuda"))
def test_out_of_range_indices_raise_as_torch(device):
    x, t = make(sample("float32", (3, 4)), "float32", device)
    bad, tbad = index([[0, 5, 1, 0]], device)
    # torch: RuntimeError for gather/scatter (its message follows the op's name here), IndexError for the
    # others; flambeau raises IndexError for all of them, with torch's words.
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        torch.gather(t, 0, tbad)
    gather_msg = r"^\[gather\] index 5 is out of bounds for dimension 0 with size 3"
    raises_when_run(IndexError, gather_msg, fc.gather, x, 0, bad)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        t.scatter_add(0, tbad, t[:1])
    scatter_msg = r"^\[scatter_add\] index 5 is out of bounds for dimension 0 with size 3"
    raises_when_run(IndexError, scatter_msg, lambda *a: x.scatter_add(0, bad, x[:1]), x)
    neg, tneg = index([-1], device)
    with pytest.raises(IndexError):
        torch.index_select(t, 0, tneg)
    select_msg = r"^\[index_select\] index -1 is out of range for dimension 0 with size 3"
    raises_when_run(IndexError, select_msg, fc.index_select, x, 0, neg)
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with size 4"):
        t.index_add(1, torch.tensor([4]), t[:, :1])
    four = index([4], device)[0]
    add_msg = r"^\[index_add\] index 4 is out of range for dimension 1 with size 4"
    raises_when_run(IndexError, add_msg, lambda *a: x.index_add(1, four, x[:, :1]), x)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        t[torch.tensor([5])]
    with pytest.raises(IndexError, match=r"^\[index\] index 5 is out of bounds for dimension 0 with size 3"):
        x[index([5], device)[0]]
    w, tw = make(sample("float32", (3, 2)), "float32", device)
    with pytest.raises(IndexError):
        torch.embedding(tw, torch.tensor([3]))
    embedding_msg = r"^\[embedding\] index 3 is out of range for an embedding table of 3 rows"
    raises_when_run(IndexError, embedding_msg, fc.embedding, w, index([3], device)[0])
    # The in-place form leaves self unchanged when an index is bad (every index is checked first).
    y = x.clone()
    with pytest.raises((IndexError, RuntimeError)):
        y.scatter_(0, bad, fc.ones(1, 4, device=device))
        y.cpu()
    assert_same(y, t)


def test_empty_index_and_0_d_inputs_as_torch():
    x, t = make(sample("float32", (3, 4)), "float32")
    e, te = index(np.zeros((0, 4)), "cpu")
    assert_same(fc.gather(x, 0, e), torch.gather(t, 0, te))
    assert_same(x.scatter_add(0, e, x[:0]), t.scatter_add(0, te, t[:0]))
    assert_same(x.scatter_reduce(0, e, x[:0], "amax"), t.scatter_reduce(0, te, t[:0], "amax"))
    k, tk = index(np.zeros(0), "cpu")
    assert_same(fc.index_select(x, 1, k), torch.index_select(t, 1, tk))
    assert_same(x.index_add(1, k, x[:, :0]), t.index_add(1, tk, t[:, :0]))
    assert_same(x[k], t[tk])
    assert_same(fc.embedding(x, k), torch.embedding(t, tk))
    assert_same(fc.cat([x[:0], x[:0]]), torch.cat([t[:0], t[:0]]))
    assert_same(fc.cat([fc.empty(0), x]), torch.cat([torch.empty(0), t]))
    # 0-d: one index, a 0-d result; a 0-d self's dim 0.
    s, ts = make(np.array(2.5, dtype=np.float32), "float32")
    z, tz = index(0, "cpu")
    assert_same(fc.index_select(s, 0, z), torch.index_select(ts, 0, tz))
    assert_same(fc.gather(s, 0, z), torch.gather(ts, 0, tz))
    assert_same(s.scatter(0, z, fc.tensor(7.0)), ts.scatter(0, tz, torch.tensor(7.0)))
    assert_same(s.index_fill(0, z, 1.0), ts.index_fill(0, tz, 1.0))
    assert_same(fc.embedding(x, z), torch.embedding(t, tz))
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        torch.cat([ts, ts])
    with pytest.raises((RuntimeError, ValueError), match=r"\[cat\] zero-dimensional tensor cannot be concatenated"):
        fc.cat([s, s])


def test_random_loop_against_torch():
    """Random shapes, dims, dtypes and indices (a third of them out of range): each op gives torch's
    values, or raises where torch raises."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(v) for v in rng.integers(0, 5, nd))
        dtype = str(rng.choice(["float32", "float64", "int64", "int32"]))
        x, t = make(sample(dtype, shape), dtype)
        dim = int(rng.integers(-nd, nd))
        n = shape[dim]
        ishape = list(shape)
        ishape[dim] = int(rng.integers(0, 4))
        lo, hi = (-2, n + 2) if rng.random() < 0.33 else (0, max(n, 1))
        iv = rng.integers(lo, hi, ishape) if n or lo < 0 else np.zeros(ishape, dtype=np.int64)
        i, ti = index(iv)
        s, ts = make(sample(dtype, ishape), dtype)
        k = iv.reshape(-1)[:3] if n else np.zeros(0, dtype=np.int64)  # (torch checks no index of an empty source)
        kk, tkk = index(k)
        sshape = list(shape)
        sshape[dim] = len(k)
        s2, ts2 = make(sample(dtype, sshape), dtype)
        ops = [
            (lambda L, x, i, s, kk, s2, dim=dim: L.gather(x, dim, i)),
            (lambda L, x, i, s, kk, s2, dim=dim: x.scatter(dim, i, s)),
            (lambda L, x, i, s, kk, s2, dim=dim: x.scatter_add(dim, i, s)),
            (lambda L, x, i, s, kk, s2, dim=dim: x.scatter_reduce(dim, i, s, "amax", include_self=False)),
            (lambda L, x, i, s, kk, s2, dim=dim: L.index_select(x, dim, kk)),
            (lambda L, x, i, s, kk, s2, dim=dim: x.index_add(dim, kk, s2)),
            (lambda L, x, i, s, kk, s2, dim=dim: x.index_fill(dim, kk, 3)),
            (lambda L, x, i, s, kk, s2, dim=dim: L.cat([x, s], dim)),
        ]
        for op in ops:
            try:
                expected = op(torch, t, ti, ts, tkk, ts2)
            except (IndexError, RuntimeError):
                with pytest.raises((IndexError, RuntimeError)):
                    op(fc, x, i, s, kk, s2)
                continue
            assert_same(op(fc, x, i, s, kk, s2), expected, 1e-5 if dtype.startswith("float") else 0.0)
