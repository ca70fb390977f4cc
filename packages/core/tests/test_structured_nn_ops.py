"""Note [Structured kernels] for prelu, glu, dropout, embedding_bag and _linear_backward: prelu and its two
backwards, glu and glu_backward, native_dropout, _feature_dropout, native_dropout_backward, _embedding_bag
and its two backwards, and _linear_backward run their meta step (src/meta/nn_layer_rules.cpp) and one out
kernel, on the cpu and the simulated device, and only the meta step on the meta device. Values against
PyTorch 2.13 (torch.ops.aten, torch.autograd for gradients), glu's out= written by the kernel with no copy
(resized as PyTorch, dtype errors), strided and aliasing outs, empty inputs and errors with torch's
exception types."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from flambeau_core import _C
from flambeau_core.testing import devices, kernel_trace

RNG = np.random.default_rng(5)
aten = torch.ops.aten


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.array(memoryview(t.cpu().contiguous()))


def pair(a: np.ndarray, device: str = "cpu"):
    return fc.tensor(a).to(device), torch.from_numpy(np.array(a))


def tol(dtype: str) -> dict:
    return {"rtol": 2e-5, "atol": 2e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-13}


def close(got, expected, dtype: str):
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype) == f"flambeau.{dtype}"
    np.testing.assert_allclose(npy(got), npy(expected), **tol(dtype))


def trace(fn):
    """The kernels fn runs, as (op, device, origin) rows."""
    with kernel_trace() as rows:
        fn()
    return rows


# ---- prelu ----

PRELU_SHAPES = [(5,), (3, 4), (2, 3, 4, 5), (0, 3), (2, 3, 0)]


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("shape", PRELU_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_prelu_and_backwards_match_torch(shape, dtype, per_channel, device):
    ch = shape[1] if len(shape) >= 2 else 1
    fx, tx = pair(RNG.standard_normal(shape).astype(dtype), device)
    fw, tw = pair((RNG.random(ch if per_channel else 1) + 0.1).astype(dtype), device)
    tx.requires_grad_(True)
    tw.requires_grad_(True)
    expected = F.prelu(tx, tw)
    got = fc.prelu(fx, fw)
    assert got.device.type == device
    close(got, expected, dtype)
    fg, tg = pair(RNG.standard_normal(shape).astype(dtype), device)
    gx, gw = torch.autograd.grad(expected, (tx, tw), tg)
    close(_C._prelu_backward_input(fg, fx, fw), gx, dtype)
    close(_C._prelu_backward_weight(fg, fx, fw), gw, dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_prelu_low_precision_is_the_float32_result_rounded(dtype):
    x = fc.tensor(RNG.standard_normal((2, 3, 5)).astype(np.float32))
    w = fc.tensor(np.array([0.25, -0.5, 1.5], dtype=np.float32))
    dt = getattr(fc, dtype)
    got = fc.prelu(x.to(dt), w.to(dt))
    expected = fc.prelu(x.to(dt).to(fc.float32), w.to(dt).to(fc.float32)).to(dt)
    assert got.dtype == dt
    np.testing.assert_array_equal(npy(got.to(fc.float32)), npy(expected.to(fc.float32)))
    tgot = F.prelu(
        torch.from_numpy(npy(x)).to(getattr(torch, dtype)), torch.from_numpy(npy(w)).to(getattr(torch, dtype))
    )
    np.testing.assert_array_equal(npy(got.to(fc.float32)), tgot.float().numpy())


def test_prelu_errors_with_torch_types():
    x, tx = pair(np.ones((2, 3, 4), dtype=np.float32))
    with pytest.raises(RuntimeError):
        torch.prelu(tx.long(), torch.tensor([1]))
    with pytest.raises(TypeError, match=r"^\[prelu\] input must be a float16, bfloat16, float32 or float64 tensor"):
        fc.prelu(x.to(fc.int64), fc.tensor([1]))
    with pytest.raises(RuntimeError):
        torch.prelu(tx, torch.ones(2))
    with pytest.raises(ValueError, match=r"^\[prelu\] mismatch of parameter numbers and input channel size"):
        fc.prelu(x, fc.ones(2))
    with pytest.raises(ValueError, match=r"^\[prelu\] weight must be 0-D or 1-D, got shape \(3, 1\)"):
        fc.prelu(x, fc.ones((3, 1)))
    with pytest.raises(TypeError, match=r"^\[prelu\] weight dtype float64 must match the input dtype float32"):
        fc.prelu(x, fc.ones(3, dtype=fc.float64))
    with pytest.raises(ValueError, match=r"^\[prelu_backward\] grad_output shape \(2, 3\) does not match input"):
        _C._prelu_backward_input(fc.ones((2, 3)), x, fc.ones(3))
    with pytest.raises(ValueError, match=r"^\[prelu_backward\] grad_output shape"):
        _C._prelu_backward_weight(fc.ones((2, 3)), x, fc.ones(3))
    # The meta device makes the same checks.
    with pytest.raises(ValueError, match=r"^\[prelu\] mismatch of parameter numbers"):
        fc.prelu(x.to("meta"), fc.ones(2, device="meta"))


# ---- glu ----


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize(("shape", "dim"), [((4,), 0), ((3, 4), -1), ((6, 3), 0), ((2, 4, 6), 1), ((0, 4), 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_glu_and_backward_match_torch(shape, dim, dtype, device):
    fx, tx = pair(RNG.standard_normal(shape).astype(dtype), device)
    tx.requires_grad_(True)
    expected = F.glu(tx, dim)
    got = fc.glu(fx, dim)
    assert got.device.type == device
    close(got, expected, dtype)
    # out= of the result's shape is written in place; an empty one is resized silently.
    out = fc.empty(tuple(expected.shape), dtype=got.dtype, device=device)
    ptr = out.data_ptr()
    assert fc.glu(fx, dim, out=out) is out and out.data_ptr() == ptr
    np.testing.assert_array_equal(npy(out), npy(got))
    out = fc.empty((0,), dtype=got.dtype, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fc.glu(fx, dim, out=out) is out
    np.testing.assert_array_equal(npy(out), npy(got))
    fg, tg = pair(RNG.standard_normal(tuple(expected.shape)).astype(dtype), device)
    (gx,) = torch.autograd.grad(expected, tx, tg)
    close(_C.glu_backward(fg, fx, dim), gx, dtype)
    close(_C.glu_backward(fg, fx, dim), aten.glu_backward(tg, tx.detach(), dim), dtype)


def test_glu_out_runs_the_kernel_once_with_no_copy():
    x = fc.tensor(RNG.standard_normal((4, 6)))
    expected = fc.glu(x, 1)
    out = fc.empty((4, 3), dtype=fc.float64)
    rows = trace(lambda: fc.glu(x, 1, out=out))
    assert rows == [["glu", "cpu", "own"]], rows
    np.testing.assert_array_equal(npy(out), npy(expected))
    assert [r[0] for r in trace(lambda: fc.glu(x, 1))] == ["glu"]


def test_glu_out_resize_warns_and_dtype_errors_as_torch():
    fx, tx = pair(RNG.standard_normal((4, 6)))
    # A non-empty out of another shape is resized with a warning (torch prints its warning from C++).
    assert tuple(aten.glu.out(tx, 1, out=torch.empty(5, dtype=torch.float64)).shape) == (4, 3)
    out = fc.empty(5, dtype=fc.float64)
    with pytest.warns(UserWarning):
        fc.glu(fx, 1, out=out)
    assert tuple(out.shape) == (4, 3)
    np.testing.assert_array_equal(npy(out), npy(fc.glu(fx, 1)))
    # An out of a dtype the result cannot be cast to (torch: RuntimeError).
    with pytest.raises(RuntimeError):
        aten.glu.out(tx, 1, out=torch.empty((4, 3), dtype=torch.long))
    with pytest.raises((TypeError, RuntimeError), match=r"\[glu\]"):
        fc.glu(fx, 1, out=fc.empty((4, 3), dtype=fc.int64))


def test_glu_strided_and_aliasing_out():
    x = fc.tensor(RNG.standard_normal((4, 6)))
    expected = fc.glu(x, 1)
    out = fc.zeros((3, 4), dtype=fc.float64).t()
    assert fc.glu(x, 1, out=out) is out
    np.testing.assert_array_equal(npy(out), npy(expected))
    buf = fc.zeros(24, dtype=fc.float64)
    out = buf[::2].reshape(4, 3)
    assert fc.glu(x, 1, out=out) is out
    np.testing.assert_array_equal(npy(out), npy(expected))
    np.testing.assert_array_equal(npy(buf)[1::2], 0)
    # out is a view of the input: every input value is read before out is written.
    y = x.clone()
    assert fc.glu(y, 1, out=y[:, :3]) is not None
    np.testing.assert_array_equal(npy(y[:, :3]), npy(expected))


def test_glu_errors_with_torch_types():
    fx, tx = pair(np.ones((3, 5)))
    with pytest.raises(RuntimeError):
        F.glu(tx, 1)
    with pytest.raises(ValueError, match=r"^\[glu\] halving dimension must be even, but dimension 1 is size 5"):
        fc.glu(fx, 1)
    with pytest.raises(IndexError):
        F.glu(tx, 2)
    with pytest.raises(IndexError, match=r"^\[glu\]"):
        fc.glu(fx, 2)
    with pytest.raises(RuntimeError):
        F.glu(torch.tensor(1.0), 0)
    with pytest.raises(ValueError, match=r"^\[glu\] glu does not support scalars"):
        fc.glu(fc.tensor(1.0), 0)
    with pytest.raises(
        TypeError, match=r"^\[glu\] input must be a float16, bfloat16, float32 or float64 tensor, got dtype int64"
    ):
        fc.glu(fc.ones(4, dtype=fc.int64), 0)
    with pytest.raises(ValueError, match=r"^\[glu_backward\] grad_output shape \(3, 4\) does not match the output"):
        _C.glu_backward(fc.ones((3, 4), dtype=fc.float64), fc.ones((3, 4), dtype=fc.float64), 1)


# ---- dropout ----


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("shape", [(7,), (30, 40), (2, 3, 4), (0, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_native_dropout_as_torch(shape, dtype, p, device):
    fx, tx = pair((RNG.random(shape) + 0.5).astype(dtype), device)
    fc.manual_seed(17)
    out, mask = _C.native_dropout(fx, p, True)
    assert out.device.type == device and mask.dtype == fc.bool and tuple(mask.shape) == shape
    m = npy(mask)
    scale = 1.0 / (1.0 - p) if p < 1 else 0.0
    expected = npy(tx) * m * np.asarray(scale, dtype=dtype)
    np.testing.assert_allclose(npy(out), expected, **tol(dtype))
    if p == 0.0:
        assert m.all()
    if p == 1.0:
        assert not m.any()
    # The same seed draws the same decisions, on every device, and leaves the generator where it was.
    fc.manual_seed(17)
    out2, mask2 = _C.native_dropout(fx.to("cpu"), p, True)
    np.testing.assert_array_equal(npy(mask2), m)
    np.testing.assert_array_equal(npy(out2), npy(out))
    # Evaluation: a copy and an all-true mask (torch's too).
    tout, tmask = aten.native_dropout(tx, p, False)
    out, mask = _C.native_dropout(fx, p, False)
    np.testing.assert_array_equal(npy(out), npy(tout))
    np.testing.assert_array_equal(npy(mask), npy(tmask))
    # The backward against torch's, for this mask.
    fg, tg = pair(RNG.standard_normal(shape).astype(dtype), device)
    fc.manual_seed(3)
    _, mask = _C.native_dropout(fx, 0.5, True)
    tmask = torch.from_numpy(npy(mask))
    close(_C.native_dropout_backward(fg, mask, 2.0), aten.native_dropout_backward(tg, tmask, 2.0), dtype)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 3, 2), (0, 3, 4), (2, 3, 0)])
def test_feature_dropout_drops_whole_channels(shape, device):
    fx, _ = pair(RNG.random(shape) + 0.5, device)
    fc.manual_seed(23)
    out, mask = _C._feature_dropout(fx, 0.5)
    assert tuple(mask.shape) == (*shape[:2], *([1] * (len(shape) - 2))) and mask.dtype == fc.bool
    expected = npy(fx) * npy(mask) * 2.0
    np.testing.assert_array_equal(npy(out), expected)
    fc.manual_seed(23)
    np.testing.assert_array_equal(npy(_C._feature_dropout(fx.to("cpu"), 0.5)[1]), npy(mask))
    # Its backward broadcasts the (N, C, 1, ...) mask (torch.nn.functional.dropout2d's gradient).
    g = fc.tensor(RNG.standard_normal(shape)).to(device)
    np.testing.assert_array_equal(npy(_C.native_dropout_backward(g, mask, 2.0)), npy(g) * npy(mask) * 2.0)


def test_dropout_strided_and_aliasing_outputs():
    # Transposed input: the result keeps the input's shape and values in order.
    x = fc.tensor(RNG.random((5, 8)) + 0.5).t()
    fc.manual_seed(1)
    out, mask = _C.native_dropout(x, 0.5, True)
    np.testing.assert_array_equal(npy(out), npy(x) * npy(mask) * 2.0)
    # native_dropout_backward's out kernel into a strided out and a view of its gradient.
    g = fc.tensor(RNG.standard_normal((5, 8))).t()
    expected = _C.native_dropout_backward(g, mask, 2.0)
    np.testing.assert_array_equal(npy(expected), npy(g) * npy(mask) * 2.0)
    fc.manual_seed(1)
    y = fc.tensor(RNG.random((4, 6)) + 0.5)
    r1 = _C.native_dropout(y, 0.25, True)
    fc.manual_seed(1)
    r2 = _C.native_dropout(y.clone(), 0.25, True)
    np.testing.assert_array_equal(npy(r1[0]), npy(r2[0]))


def test_dropout_errors_with_torch_types():
    fx, tx = pair(np.ones(3))
    with pytest.raises(RuntimeError):
        aten.native_dropout(tx, 1.5, True)
    with pytest.raises(ValueError, match=r"^\[dropout\] dropout probability has to be between 0 and 1, but got 1.5"):
        _C.native_dropout(fx, 1.5, True)
    with pytest.raises(
        TypeError, match=r"^\[dropout\] input must be a float16, bfloat16, float32 or float64 tensor, got dtype int64"
    ):
        _C.native_dropout(fc.ones(3, dtype=fc.int64), 0.5, True)
    with pytest.raises(ValueError, match=r"^\[feature_dropout\] Feature dropout requires at least 2 dimensions"):
        _C._feature_dropout(fx, 0.5)
    with pytest.raises(TypeError, match=r"^\[dropout_backward\] mask must be a bool tensor, got dtype int64"):
        _C.native_dropout_backward(fx, fc.ones(3, dtype=fc.int64), 2.0)
    with pytest.raises(ValueError, match=r"^\[dropout_backward\] mask shape \(2,\) does not match grad shape \(3,\)"):
        _C.native_dropout_backward(fx, fc.ones(2, dtype=fc.bool), 2.0)
    with pytest.raises(ValueError, match=r"^\[dropout\] dropout probability"):
        _C.native_dropout(fx.to("meta"), -0.5, True)


# ---- embedding_bag ----

BAGS = [([1, 2, 4, 5, 4, 3], [0, 2, 2, 5]), ([3, 3, 0], [0]), ([], [0, 0]), ([2, 9, 9, 1, 0], [0, 1, 2, 3, 4])]


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize(("idx", "offs"), BAGS)
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_bag_and_backwards_match_torch(idx, offs, mode, dtype, device):
    fw, tw = pair(RNG.standard_normal((10, 3)).astype(dtype), device)
    fi, ti = pair(np.asarray(idx, dtype=np.int64), device)
    fo, to = pair(np.asarray(offs, dtype=np.int64), device)
    out, offset2bag, bag_size, max_indices = _C._embedding_bag(fw, fi, fo, False, mode, False, None, False, -1)
    texp = aten._embedding_bag(tw, ti, to, False, mode, False, None, False, -1)
    close(out, texp[0], dtype)
    assert tuple(offset2bag.shape) == (len(idx),) and offset2bag.dtype == fc.int64
    if mode != 0:  # torch's sum leaves bag_size unset
        np.testing.assert_array_equal(npy(bag_size), npy(texp[2]))
    if mode == 2:  # an empty bag's row holds -1 here, 0 in torch
        full = npy(bag_size) > 0
        np.testing.assert_array_equal(npy(max_indices)[full], npy(texp[3])[full])
        assert (npy(max_indices)[~full] == -1).all()
    else:
        assert tuple(max_indices.shape) == (0,)
    # The weight's gradient against torch.autograd's.
    tw.requires_grad_(True)
    texp = aten._embedding_bag(tw, ti, to, False, mode, False, None, False, -1)
    fg, tg = pair(RNG.standard_normal(tuple(texp[0].shape)).astype(dtype), device)
    (gw,) = torch.autograd.grad(texp[0], tw, tg)
    got = _C._embedding_bag_backward(fg, fi, offset2bag, bag_size, max_indices, 10, False, mode, None, -1)
    close(got, gw, dtype)
    if mode == 0:
        fp, tp = pair(RNG.random(len(idx)).astype(dtype), device)
        tp.requires_grad_(True)
        texp = aten._embedding_bag(tw.detach(), ti, to, False, 0, False, tp, False, -1)
        (gp,) = torch.autograd.grad(texp[0], tp, tg)
        r = _C._embedding_bag(fw, fi, fo, False, 0, False, fp, False, -1)
        close(r[0], texp[0], dtype)
        close(_C._embedding_bag_per_sample_weights_backward(fg, fw, fi, r[1], 0, -1), gp, dtype)


def test_embedding_bag_errors_with_torch_types():
    fw, tw = pair(np.ones((10, 3), dtype=np.float32))
    fi, ti = pair(np.array([1, 2, 3]))
    with pytest.raises(RuntimeError):
        aten._embedding_bag(tw, ti, torch.tensor([1]), False, 0, False, None, False, -1)
    with pytest.raises(ValueError, match=r"^\[embedding_bag\] offsets\[0\] has to be 0"):
        _C._embedding_bag(fw, fi, fc.tensor([1]))
    # An index out of range: torch's RuntimeError (embedding's is its IndexError, as flambeau's), in every
    # mode; the backwards raise the same for the indices they are given.
    for mode in (0, 1, 2):
        for bad in (10, -1):
            with pytest.raises(RuntimeError, match="not in the valid range|idx < num_embeddings") as expected:
                aten._embedding_bag(tw, torch.tensor([1, bad]), torch.tensor([0]), False, mode, False, None, False, -1)
            with pytest.raises(type(expected.value)) as got:
                _C._embedding_bag(fw, fc.tensor([1, bad]), fc.tensor([0]), False, mode)
            assert type(got.value) is fc.FlambeauError
            assert str(got.value) == (
                f"[embedding_bag] index {bad} is out of range for an embedding table of 10 rows (valid indices: 0..9)"
            )
    with pytest.raises(IndexError):
        aten.embedding(tw, torch.tensor([1, 10]))
    with pytest.raises(IndexError, match=r"^\[embedding\] index 10 is out of range for an embedding table of 10"):
        fc.embedding(fw, fc.tensor([1, 10]))
    bad, o2b = fc.tensor([1, 10]), fc.zeros(2, dtype=fc.int64)
    with pytest.raises(fc.FlambeauError, match=r"^\[embedding_bag_backward\] index 10 is out of range .* 10 rows"):
        _C._embedding_bag_backward(fc.ones((1, 3)), bad, o2b, fc.full([1], 2, dtype=fc.int64),
                                   fc.empty(0, dtype=fc.int64), 10, False, 0, None, -1)  # fmt: skip
    with pytest.raises(
        fc.FlambeauError, match=r"^\[embedding_bag_per_sample_weights_backward\] index 10 is out of range"
    ):
        _C._embedding_bag_per_sample_weights_backward(fc.ones((1, 3)), fw, bad, o2b, 0, -1)
    with pytest.raises(ValueError, match=r"^\[embedding_bag\] mode must be 0 \(sum\), 1 \(mean\) or 2 \(max\)"):
        _C._embedding_bag(fw, fi, fc.tensor([0]), False, 3)
    with pytest.raises(ValueError, match=r"^\[embedding_bag\] per_sample_weights was not None"):
        _C._embedding_bag(fw, fi, fc.tensor([0]), False, 1, False, fc.ones(3))
    with pytest.raises(NotImplementedError, match=r"^\[embedding_bag\] sparse=True"):
        _C._embedding_bag(fw, fi, fc.tensor([0]), False, 0, True)
    with pytest.raises(TypeError, match=r"^\[embedding_bag\] offsets must be an int64 or int32 tensor"):
        _C._embedding_bag(fw, fi, fc.tensor([0.0]))
    with pytest.raises(ValueError, match=r"^\[embedding_bag_backward\] inconsistent shapes"):
        _C._embedding_bag_backward(fc.ones((2, 3)), fi, fc.zeros(2, dtype=fc.int64), fc.ones(2, dtype=fc.int64),
                                   fc.empty(0, dtype=fc.int64), 10, False, 0, None, -1)  # fmt: skip
    with pytest.raises(ValueError, match=r"^\[embedding_bag_per_sample_weights_backward\] per_sample_weights are only"):
        _C._embedding_bag_per_sample_weights_backward(fc.ones((1, 3)), fw, fi, fc.zeros(3, dtype=fc.int64), 1, -1)
    # torch refuses an integer grad too (NotImplementedError there; a dtype error is TypeError here): the
    # kernel computes float32/float64 only, and an int64 grad once returned its output's uninitialised memory
    for bad_dtype in (fc.int64, fc.float16):
        with pytest.raises(TypeError, match=r"^\[embedding_bag_per_sample_weights_backward\] grad must be a float32"):
            _C._embedding_bag_per_sample_weights_backward(
                fc.ones((1, 3), dtype=bad_dtype), fw, fi, fc.zeros(3, dtype=fc.int64), 0, -1
            )


# ---- _linear_backward ----


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize(("n", "i", "o"), [(4, 5, 3), (0, 3, 2), (3, 0, 2), (3, 2, 0), (70, 90, 130)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_backward_matches_torch(n, i, o, dtype, device):
    fx, tx = pair(RNG.standard_normal((n, i)).astype(dtype), device)
    fw, tw = pair(RNG.standard_normal((o, i)).astype(dtype), device)
    fb, tb = pair(RNG.standard_normal(o).astype(dtype), device)
    for t in (tx, tw, tb):
        t.requires_grad_(True)
    y = F.linear(tx, tw, tb)
    fg, tg = pair(RNG.standard_normal((n, o)).astype(dtype), device)
    expected = torch.autograd.grad(y, (tx, tw, tb), tg)
    got = _C._linear_backward(fg, fx, fw, True, True, True)
    # Each gradient is a sum of products, which two BLAS libraries add in different orders: each result may
    # be off by up to (terms) x eps of the sum of its terms' magnitudes (a result that cancels to near zero
    # is not within a relative tolerance of another order's).
    ag, ax, aw = (np.abs(npy(t).astype(np.float64)) for t in (tg, tx, tw))
    magnitudes = (ag @ aw, ag.T @ ax, ag.sum(0))
    for g, e, mag, terms in zip(got, expected, magnitudes, (o, n, n), strict=True):
        assert g.device.type == device
        assert tuple(g.shape) == tuple(e.shape) and str(g.dtype) == f"flambeau.{dtype}"
        bound = max(terms, 1) * np.finfo(dtype).eps * mag
        np.testing.assert_array_less(np.abs(npy(g) - npy(e)), bound + np.finfo(dtype).tiny)
    # Each gradient only when asked: the others are undefined (None). Alone, a product is split over the
    # threads as gemm() splits it, in the full call each runs whole on one thread: the same bits where the
    # GEMM's sums do not depend on the split (OpenBLAS's dgemm), within the summation bound where they may
    # (float32: a block narrower than the own sgemm's minimum goes to OpenBLAS's sgemm while the whole
    # product runs on the own one, on an AVX-512 CPU; OpenBLAS's sgemm's own blocking elsewhere).
    for mask in [(True, False, False), (False, True, False), (False, False, True), (False, False, False)]:
        part = _C._linear_backward(fg, fx, fw, *mask)
        for asked, g, full, mag, terms in zip(mask, part, got, magnitudes, (o, n, n), strict=True):
            if not asked:
                assert g is None
            elif dtype == "float64":
                np.testing.assert_array_equal(npy(g), npy(full))
            else:
                bound = 2 * max(terms, 1) * np.finfo(dtype).eps * mag
                np.testing.assert_array_less(np.abs(npy(g) - npy(full)), bound + np.finfo(dtype).tiny)


def test_linear_backward_of_transposed_operands_and_errors():
    x = fc.tensor(RNG.standard_normal((6, 4)))
    w = fc.tensor(RNG.standard_normal((3, 4)))
    g = fc.tensor(RNG.standard_normal((3, 6))).t()
    expected = _C._linear_backward(g.contiguous(), x, w, True, True, True)
    for a, b in zip(_C._linear_backward(g, x, w.t().contiguous().t(), True, True, True), expected, strict=True):
        np.testing.assert_array_equal(npy(a), npy(b))
    with pytest.raises(ValueError, match=r"^\[_linear_backward\] grad_output must have shape \(6, 3\)"):
        _C._linear_backward(fc.ones((6, 2), dtype=fc.float64), x, w, True, True, True)
    with pytest.raises(TypeError, match=r"^\[_linear_backward\] supports float32, float64 and bfloat16, got grad_o"):
        _C._linear_backward(fc.ones((6, 3), dtype=fc.int64), x.to(fc.int64), w.to(fc.int64), True, True, True)
    with pytest.raises(ValueError, match=r"^\[_linear_backward\] weight must be 2-D"):
        _C._linear_backward(fc.ones((6, 3), dtype=fc.float64), x, fc.ones(4, dtype=fc.float64), True, True, True)


# ---- the meta device ----


def test_meta_device_shapes_and_dtypes():
    m = lambda *s, dt=fc.float32: fc.empty(s, dtype=dt, device="meta")  # noqa: E731
    t = lambda *s, dt=torch.float32: torch.empty(s, dtype=dt, device="meta")  # noqa: E731
    pairs = [
        (fc.prelu(m(2, 3, 4), m(3)), aten._prelu_kernel(t(2, 3, 4), t(3, 1))),
        (_C._prelu_backward_input(m(2, 3, 4), m(2, 3, 4), m(3)), t(2, 3, 4)),
        (_C._prelu_backward_weight(m(2, 3, 4), m(2, 3, 4), m(3)), t(3)),
        (fc.glu(m(4, 6), 1), aten.glu(t(4, 6), 1)),
        (_C.glu_backward(m(4, 3), m(4, 6), 1), aten.glu_backward(t(4, 3), t(4, 6), 1)),
        (_C.native_dropout_backward(m(4, 6), m(4, 6, dt=fc.bool), 2.0),
         aten.native_dropout_backward(t(4, 6), t(4, 6, dt=torch.bool), 2.0)),
    ]  # fmt: skip
    for got, expected in pairs:
        assert got.is_meta and str(got.dtype) == str(expected.dtype).replace("torch", "flambeau")
        assert tuple(got.shape) == tuple(expected.shape)
    for got, expected in [
        (_C.native_dropout(m(4, 6), 0.5, True), aten.native_dropout(t(4, 6), 0.5, True)),
        (_C._feature_dropout(m(4, 6, 2, 2), 0.5), (t(4, 6, 2, 2), t(4, 6, 1, 1, dt=torch.bool))),
        (
            _C._embedding_bag(m(10, 3), m(6, dt=fc.int64), m(4, dt=fc.int64), False, 2),
            aten._embedding_bag(t(10, 3), t(6, dt=torch.long), t(4, dt=torch.long), False, 2),
        ),
        (
            _C._linear_backward(m(5, 3), m(5, 4), m(3, 4), True, True, True),
            (t(5, 4), t(3, 4), t(3)),
        ),
    ]:
        for g, e in zip(got, expected, strict=True):
            assert g.is_meta and str(g.dtype) == str(e.dtype).replace("torch", "flambeau")
            assert tuple(g.shape) == tuple(e.shape)
    # _linear_backward's gradients not asked for stay None on the meta device too.
    assert _C._linear_backward(m(5, 3), m(5, 4), m(3, 4), False, True, False)[0] is None
    assert tuple(_C._embedding_bag_backward(m(4, 3), m(6, dt=fc.int64), m(6, dt=fc.int64), m(4, dt=fc.int64),
                                            m(0, dt=fc.int64), 10, False, 0, None, -1).shape) == (10, 3)  # fmt: skip
    out = fc.empty((0,), device="meta")
    assert fc.glu(m(4, 6), 0, out=out) is out and tuple(out.shape) == (2, 6)


# ---- empty inputs ----


def test_empty_inputs_as_torch():
    for shape in [(0,), (0, 4), (3, 0, 2)]:
        fx, tx = pair(np.zeros(shape, dtype=np.float32))
        ch = shape[1] if len(shape) >= 2 else 1
        got = fc.prelu(fx, fc.ones(max(ch, 1)) if ch else fc.ones(1))
        assert tuple(got.shape) == shape
        gw = _C._prelu_backward_weight(fx, fx, fc.ones(1))
        np.testing.assert_array_equal(npy(gw), npy(F.prelu(tx, torch.ones(1)).sum().reshape(1) * 0))
        out, mask = _C.native_dropout(fx, 0.5, True)
        assert tuple(out.shape) == shape and tuple(mask.shape) == shape
    fx, tx = pair(np.zeros((0, 4)))
    close(fc.glu(fx, 1), F.glu(tx, 1), "float64")
    got = _C._embedding_bag(fc.ones((3, 2)), fc.tensor([], dtype=fc.int64), fc.tensor([], dtype=fc.int64))
    expected = aten._embedding_bag(
        torch.ones(3, 2), torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long)
    )
    assert [tuple(g.shape) for g in got[:1]] == [tuple(e.shape) for e in expected[:1]]
