"""Note [Structured kernels] for the losses (src/cpu/loss/loss.cpp): binary_cross_entropy,
binary_cross_entropy_with_logits, mse_loss, l1_loss, smooth_l1_loss, huber_loss, nll_loss_nd, their
backwards and _cross_entropy_backward run their meta step and one out kernel in the functional and
out= forms, on every device (cpu, the simulated device, cuda) and on the meta device (a reduced loss
is a 0-d out, reduction none an elementwise one). Values against PyTorch 2.13 (torch.ops.aten, or
torch.autograd for the backwards aten does not have), out= written by the kernel with no copy,
strided and aliasing out, errors with torch's exception types and empty inputs."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from flambeau_core import _C
from flambeau_core.testing import devices, kernel_trace

RNG = np.random.default_rng(11)
REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}
POINTWISE = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
]
# A pointwise loss's extra argument after reduction (beta, delta).
EXTRA = {"smooth_l1_loss": (0.7,), "huber_loss": (1.3,)}


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.array(memoryview(t.cpu().contiguous()))


def pair(a: np.ndarray, device: str = "cpu"):
    return fc.tensor(a).to(device), torch.from_numpy(np.array(a))


def pointwise_inputs(name: str, shape, dtype: str):
    """(x, target, weight, pos_weight) as NumPy arrays: probabilities for bce, logits otherwise."""
    x = RNG.standard_normal(shape) * 2
    if name == "binary_cross_entropy":
        x = 1 / (1 + np.exp(-x))
    binary = name.startswith("binary")
    t = RNG.random(shape) if binary else RNG.standard_normal(shape) * 2
    w = RNG.random(shape) + 0.5 if binary else None
    pw = RNG.random(shape[-1:]) + 0.5 if name == "binary_cross_entropy_with_logits" else None
    return [None if a is None else a.astype(dtype) for a in (x, t, w, pw)]


def side_args(name: str, w, pw) -> tuple:
    """The arguments between target and reduction: weight (bce), weight and pos_weight (with logits)."""
    if name == "binary_cross_entropy":
        return (w,)
    if name == "binary_cross_entropy_with_logits":
        return (w, pw)
    return ()


def torch_pointwise(name: str, x, t, w, pw, red: int):
    r = REDUCTIONS[red]
    if name == "binary_cross_entropy":
        return F.binary_cross_entropy(x, t, w, reduction=r)
    if name == "binary_cross_entropy_with_logits":
        return F.binary_cross_entropy_with_logits(x, t, w, reduction=r, pos_weight=pw)
    if name == "smooth_l1_loss":
        return F.smooth_l1_loss(x, t, reduction=r, beta=EXTRA[name][0])
    if name == "huber_loss":
        return F.huber_loss(x, t, reduction=r, delta=EXTRA[name][0])
    return getattr(F, name)(x, t, reduction=r)


def tol(dtype: str) -> dict:
    return {"rtol": 2e-5, "atol": 2e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-13}


def check_out_forms(fn, args: tuple, expected: torch.Tensor, dtype: str, device: str):
    """fn(*args) matches torch; out= of the result's shape is written in place, an empty one is
    resized; both hold the functional form's values bit for bit."""
    got = fn(*args)
    assert got.device.type == device and str(got.dtype) == f"flambeau.{dtype}"
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(npy(got), npy(expected), **tol(dtype))
    out = fc.empty(tuple(expected.shape), dtype=got.dtype, device=device)
    ptr = out.data_ptr()
    assert fn(*args, out=out) is out
    assert out.data_ptr() == ptr
    np.testing.assert_array_equal(npy(out), npy(got))
    out = fc.empty((0,), dtype=got.dtype, device=device)
    assert fn(*args, out=out) is out
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(npy(out), npy(got))


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("name", POINTWISE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("red", [0, 1, 2])
def test_pointwise_losses_and_backwards_match_torch(name, dtype, red, device):
    shape = (6, 5)
    x, t, w, pw = pointwise_inputs(name, shape, dtype)
    fx, tx = pair(x, device)
    ft, tt = pair(t, device)
    fw, tw = pair(w, device) if w is not None else (None, None)
    fpw, tpw = pair(pw, device) if pw is not None else (None, None)
    extra = EXTRA.get(name, ())
    tx.requires_grad_(True)
    expected = torch_pointwise(name, tx, tt, tw, tpw, red)
    fwd = getattr(fc, name)
    check_out_forms(fwd, (fx, ft, *side_args(name, fw, fpw), red, *extra), expected, dtype, device)
    # The backward against torch.autograd's gradient of the same forward.
    g = RNG.standard_normal(shape if red == 0 else ()).astype(dtype)
    fg, tg = pair(g, device)
    (expected_grad,) = torch.autograd.grad(expected, tx, tg)
    bwd = getattr(fc, name + "_backward")
    check_out_forms(bwd, (fg, fx, ft, *side_args(name, fw, fpw), red, *extra), expected_grad, dtype, device)


def class_inputs(shape, dtype: str, ignore: bool):
    c = shape[1] if len(shape) >= 2 else shape[0]
    rows = (shape[0], *shape[2:]) if len(shape) >= 2 else ()
    x = RNG.standard_normal(shape).astype(dtype)
    target = RNG.integers(0, c, size=rows)
    if ignore and target.size:
        target.flat[::3] = -100
    weight = (RNG.random(c) + 0.5).astype(dtype)
    return x, target, weight, rows


CLASS_SHAPES = [(7, 4), (5,), (3, 4, 2, 3), (0, 4)]


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("red", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_and_backward_match_torch(shape, dtype, red, weighted, device):
    x, target, weight, rows = class_inputs(shape, dtype, ignore=True)
    if device == "cuda" and len(shape) != 2:
        # CUDA's Generic nll_loss takes (N, C) input and says so for other forms.
        with pytest.raises(NotImplementedError, match=r"(?i)\[nll_loss_nd\].*not yet implemented on cuda"):
            fc.nll_loss_nd(fc.tensor(x, device=device), fc.tensor(target, device=device), None, red, -100)
        return
    logp = x - np.log(np.exp(x).sum(axis=1 if len(shape) >= 2 else 0, keepdims=True))
    fx, tx = pair(logp, device)
    ft, tt = pair(target, device)
    fw, tw = pair(weight, device) if weighted else (None, None)
    tx.requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.ops.aten.nll_loss_nd(tx, tt, tw, red, -100)
    check_out_forms(fc.nll_loss_nd, (fx, ft, fw, red, -100), expected, dtype, device)
    g = RNG.standard_normal(rows if red == 0 else ()).astype(dtype)
    fg, tg = pair(g, device)
    (expected_grad,) = torch.autograd.grad(expected, tx, tg)
    check_out_forms(fc.nll_loss_nd_backward, (fg, fx, ft, fw, red, -100), expected_grad, dtype, device)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("red", [0, 1, 2])
@pytest.mark.parametrize(
    ("weighted", "smoothing", "probs"), [(False, 0.0, False), (True, 0.2, False), (True, 0.1, True)]
)
def test_cross_entropy_and_backward_match_torch(shape, dtype, red, weighted, smoothing, probs, device):
    x, target, weight, rows = class_inputs(shape, dtype, ignore=not probs)
    if probs:
        p = RNG.random(shape)
        target = (p / p.sum(axis=1 if len(shape) >= 2 else 0, keepdims=True)).astype(dtype)
    if device == "cuda" and (len(shape) != 2 or smoothing or probs):
        # CUDA's Generic cross entropy takes (N, C) input and class indices without smoothing.
        with pytest.raises(NotImplementedError, match=r"(?i)\[_cross_entropy\].*not yet implemented on cuda"):
            _C._cross_entropy(fc.tensor(x, device=device), fc.tensor(target, device=device), None, red, -100, smoothing)
        return
    fx, tx = pair(x, device)
    ft, tt = pair(target, device)
    fw, tw = pair(weight, device) if weighted else (None, None)
    tx.requires_grad_(True)
    expected = F.cross_entropy(tx, tt, tw, reduction=REDUCTIONS[red], label_smoothing=smoothing)
    loss, lse = _C._cross_entropy(fx, ft, fw, red, -100, smoothing)
    assert loss.device.type == device and lse.device.type == device
    assert tuple(loss.shape) == tuple(expected.shape) and str(loss.dtype) == f"flambeau.{dtype}"
    np.testing.assert_allclose(npy(loss), npy(expected), **tol(dtype))
    # lse: each row's log-sum-exp over the classes (rows in the target's order); 0 for an ignored row.
    rows_x = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1]) if x.ndim >= 2 else x.reshape(1, -1)
    expected_lse = torch.logsumexp(torch.from_numpy(rows_x), 1).numpy()
    kept = np.ones(len(expected_lse), bool) if probs else (np.asarray(target).reshape(-1) != -100)
    assert tuple(lse.shape) == (len(expected_lse),)
    np.testing.assert_allclose(npy(lse)[kept], expected_lse[kept], **tol(dtype))
    np.testing.assert_array_equal(npy(lse)[~kept], 0)
    # out=(loss, lse) of the results' shapes is written in place, empty ones are resized: the same bits.
    outs = (
        fc.empty(tuple(loss.shape), dtype=loss.dtype, device=device),
        fc.empty(tuple(lse.shape), dtype=lse.dtype, device=device),
    )
    ptrs = [o.data_ptr() for o in outs]
    r = _C._cross_entropy(fx, ft, fw, red, -100, smoothing, out=outs)
    assert r[0] is outs[0] and r[1] is outs[1] and [o.data_ptr() for o in outs] == ptrs
    outs2 = (fc.empty((0,), dtype=loss.dtype, device=device), fc.empty((0,), dtype=lse.dtype, device=device))
    _C._cross_entropy(fx, ft, fw, red, -100, smoothing, out=outs2)
    for got in (outs, outs2):
        np.testing.assert_array_equal(npy(got[0]), npy(loss))
        np.testing.assert_array_equal(npy(got[1]), npy(lse))
    g = RNG.standard_normal(rows if red == 0 else ()).astype(dtype)
    fg, tg = pair(g, device)
    (expected_grad,) = torch.autograd.grad(expected, tx, tg)
    args = (fg, fx, ft, lse, fw, red, -100, smoothing)
    check_out_forms(_C._cross_entropy_backward, args, expected_grad, dtype, device)


def every_loss_call(x, t, g, red):
    """(name, fn, args) of each converted op on (4, 6) float64 operands, g the loss's gradient."""
    p = fc.sigmoid(x)
    u = fc.sigmoid(t)
    logp = fc.log_softmax(x, 1)
    k = fc.tensor([0, 5, 2, 1])
    gr = g if red != 0 else g[:, 0].contiguous()
    _, lse = _C._cross_entropy(x, k, None, red, -100, 0.0)
    return [
        ("binary_cross_entropy", fc.binary_cross_entropy, (p, u, None, red)),
        ("binary_cross_entropy_backward", fc.binary_cross_entropy_backward, (g, p, u, None, red)),
        ("binary_cross_entropy_with_logits", fc.binary_cross_entropy_with_logits, (x, u, None, None, red)),
        (
            "binary_cross_entropy_with_logits_backward",
            fc.binary_cross_entropy_with_logits_backward,
            (g, x, u, None, None, red),
        ),
        ("mse_loss", fc.mse_loss, (x, t, red)),
        ("mse_loss_backward", fc.mse_loss_backward, (g, x, t, red)),
        ("l1_loss", fc.l1_loss, (x, t, red)),
        ("l1_loss_backward", fc.l1_loss_backward, (g, x, t, red)),
        ("smooth_l1_loss", fc.smooth_l1_loss, (x, t, red, 0.5)),
        ("smooth_l1_loss_backward", fc.smooth_l1_loss_backward, (g, x, t, red, 0.5)),
        ("huber_loss", fc.huber_loss, (x, t, red, 2.0)),
        ("huber_loss_backward", fc.huber_loss_backward, (g, x, t, red, 2.0)),
        ("nll_loss_nd", fc.nll_loss_nd, (logp, k, None, red, -100)),
        ("nll_loss_nd_backward", fc.nll_loss_nd_backward, (gr, logp, k, None, red, -100)),
        ("_cross_entropy_backward", _C._cross_entropy_backward, (gr, x, k, lse, None, red, -100, 0.0)),
    ]


def operands(red: int):
    x = fc.tensor(RNG.standard_normal((4, 6)))
    t = fc.tensor(RNG.standard_normal((4, 6)))
    g = fc.tensor(RNG.standard_normal((4, 6) if red == 0 else ()))
    return x, t, g


@pytest.mark.parametrize("red", [0, 1])
def test_out_is_written_by_the_out_kernel(red):
    x, t, g = operands(red)
    for name, fn, args in every_loss_call(x, t, g, red):
        expected = fn(*args)
        out = fc.empty(tuple(expected.shape), dtype=expected.dtype)
        with kernel_trace() as rows:
            fn(*args, out=out)
        # One kernel, the op's own: no result computed elsewhere and copied in.
        assert rows == [[name, "cpu", "own"]], (name, rows)
        np.testing.assert_array_equal(npy(out), npy(expected))
    k = fc.tensor([0, 5, 2, 1])
    loss, lse = _C._cross_entropy(x, k, None, red, -100, 0.1)
    outs = (fc.empty(tuple(loss.shape), dtype=fc.float64), fc.empty((4,), dtype=fc.float64))
    with kernel_trace() as rows:
        _C._cross_entropy(x, k, None, red, -100, 0.1, out=outs)
    assert rows == [["_cross_entropy", "cpu", "own"]], rows
    np.testing.assert_array_equal(npy(outs[0]), npy(loss))
    np.testing.assert_array_equal(npy(outs[1]), npy(lse))


def test_functional_form_allocates_once():
    x, t, g = operands(0)
    for name, fn, args in every_loss_call(x, t, g, 0):
        with kernel_trace() as rows:
            fn(*args)
        assert [r[0] for r in rows] == [name], (name, rows)


def test_strided_and_aliasing_out():
    x, t, g = operands(0)
    for _name, fn, args in every_loss_call(x, t, g, 0):
        expected = fn(*args)
        if expected.dim() == 2:
            # A transposed out: the values land in its elements.
            out = fc.zeros(tuple(reversed(expected.shape)), dtype=fc.float64).t()
            assert fn(*args, out=out) is out
            np.testing.assert_array_equal(npy(out), npy(expected))
        else:
            # Every other element of a buffer.
            buf = fc.zeros(2 * expected.shape[0], dtype=fc.float64)
            out = buf[::2]
            assert fn(*args, out=out) is out
            np.testing.assert_array_equal(npy(out), npy(expected))
            np.testing.assert_array_equal(npy(buf)[1::2], 0)
    # _cross_entropy into strided outs, into a view of its input, and into two views of one buffer.
    k = fc.tensor([0, 5, 2, 1])
    loss, lse = _C._cross_entropy(x, k, None, 0, -100, 0.0)
    buf = fc.zeros(8, dtype=fc.float64)
    y = x.clone()
    for outs in [(buf[::2], buf[1::2]), (fc.empty(4, dtype=fc.float64), y[:, 0]), (buf[:4], buf[:4])]:
        _C._cross_entropy(y, k, None, 0, -100, 0.0, out=outs)
        if outs[0].data_ptr() != outs[1].data_ptr():
            np.testing.assert_array_equal(npy(outs[0]), npy(loss))
        np.testing.assert_array_equal(npy(outs[1]), npy(lse))
        y = x.clone()
    # out is an input of the result's shape (the gradient, the input itself): every value is read
    # before out is written (torch leaves such aliasing undefined; the result on untouched operands
    # is the oracle).
    for name, fn, args in every_loss_call(x, t, g, 0):
        expected = fn(*args)
        for i, a in enumerate(args):
            if isinstance(a, fc.Tensor) and a.dtype == fc.float64 and tuple(a.shape) == tuple(expected.shape):
                own = [b.clone() if isinstance(b, fc.Tensor) else b for b in args]
                assert fn(*own, out=own[i]) is own[i]
                np.testing.assert_array_equal(npy(own[i]), npy(expected), err_msg=f"{name} out=args[{i}]")


@pytest.mark.parametrize("red", [0, 1, 2])
def test_meta_device_shapes_and_dtypes(red):
    m = {s: fc.empty(s, dtype=fc.float32, device="meta") for s in [(3, 4), (), (3,)]}
    tm = {s: torch.empty(s, device="meta") for s in m}
    k = fc.empty((3,), dtype=fc.int64, device="meta")
    tk = torch.empty((3,), dtype=torch.long, device="meta")
    g, tg = (m[(3, 4)], tm[(3, 4)]) if red == 0 else (m[()], tm[()])
    gr, tgr = (m[(3,)], tm[(3,)]) if red == 0 else (m[()], tm[()])
    x, tx = m[(3, 4)], tm[(3, 4)]
    aten = torch.ops.aten
    bce, bce_b, bcel = fc.binary_cross_entropy, fc.binary_cross_entropy_backward, fc.binary_cross_entropy_with_logits
    pairs = [
        (bce(x, x, None, red), aten.binary_cross_entropy(tx, tx, None, red)),
        (bce_b(g, x, x, None, red), aten.binary_cross_entropy_backward(tg, tx, tx, None, red)),
        (bcel(x, x, None, None, red), aten.binary_cross_entropy_with_logits(tx, tx, None, None, red)),
        (fc.mse_loss(x, x, red), aten.mse_loss(tx, tx, red)),
        (fc.mse_loss_backward(g, x, x, red), aten.mse_loss_backward(tg, tx, tx, red)),
        (fc.l1_loss(x, x, red), aten.l1_loss(tx, tx, red)),
        (fc.smooth_l1_loss(x, x, red, 1.0), aten.smooth_l1_loss(tx, tx, red, 1.0)),
        (fc.smooth_l1_loss_backward(g, x, x, red, 1.0), aten.smooth_l1_loss_backward(tg, tx, tx, red, 1.0)),
        (fc.huber_loss(x, x, red, 1.0), aten.huber_loss(tx, tx, red, 1.0)),
        (fc.huber_loss_backward(g, x, x, red, 1.0), aten.huber_loss_backward(tg, tx, tx, red, 1.0)),
        (fc.nll_loss_nd(x, k, None, red, -100), aten.nll_loss_nd(tx, tk, None, red, -100)),
    ]  # fmt: skip
    # The backwards aten does not have: the input's shape, as on the cpu.
    same_as_x = [
        fc.binary_cross_entropy_with_logits_backward(g, x, x, None, None, red),
        fc.l1_loss_backward(g, x, x, red),
        fc.nll_loss_nd_backward(gr, x, k, None, red, -100),
        _C._cross_entropy_backward(gr, x, k, m[(3,)], None, red, -100, 0.0),
    ]
    for got, expected in pairs + [(r, tx) for r in same_as_x]:
        assert got.is_meta and got.dtype == fc.float32
        assert tuple(got.shape) == tuple(expected.shape)
    loss, lse = _C._cross_entropy(x, k, None, red, -100, 0.0)
    expected = aten.nll_loss_nd(tx, tk, None, red, -100)
    assert loss.is_meta and lse.is_meta and tuple(loss.shape) == tuple(expected.shape) and tuple(lse.shape) == (3,)
    out = fc.empty((0,), device="meta")
    assert fc.mse_loss(x, x, red, out=out) is out
    assert tuple(out.shape) == ((3, 4) if red == 0 else ())


def test_errors_name_the_op_with_torch_types():
    a, b = np.ones((2, 3)), np.ones((4,))
    fx, tx = pair(a)
    fb, tb = pair(b)
    # Shapes that do not broadcast (torch: RuntimeError).
    with pytest.raises(RuntimeError):
        torch.ops.aten.mse_loss(tx, tb, 1)
    with pytest.raises(RuntimeError, match=r"^\[mse_loss\] shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        fc.mse_loss(fx, fb, 1)
    with pytest.raises(RuntimeError, match=r"^\[huber_loss_backward\] shapes"):
        fc.huber_loss_backward(fc.ones(()), fx, fb, 1, 1.0)
    # A gradient of the wrong shape (torch's backward broadcasts it; flambeau names it).
    with pytest.raises(ValueError, match=r"^\[mse_loss_backward\] grad_output shape \(3,\) does not match"):
        fc.mse_loss_backward(fc.ones(3, dtype=fc.float64), fx, fx, 0)
    # An integer input (torch: NotImplementedError, a RuntimeError; flambeau: TypeError, its dtype errors).
    with pytest.raises(RuntimeError):
        torch.ops.aten.mse_loss(tx.long(), tx.long(), 1)
    with pytest.raises(
        TypeError, match=r"^\[l1_loss\] input must be a float16, bfloat16, float32 or float64 tensor, got dtype int64"
    ):
        fc.l1_loss(fx.to(fc.int64), fx, 1)
    # A bad reduction (torch: RuntimeError).
    with pytest.raises(RuntimeError):
        torch.ops.aten.mse_loss(tx, tx, 5)
    with pytest.raises(RuntimeError, match=r"^\[smooth_l1_loss\] reduction must be 0 \(none\), 1 \(mean\) or 2"):
        fc.smooth_l1_loss(fx, fx, 5, 1.0)
    with pytest.raises(RuntimeError, match=r"^\[nll_loss\] reduction must be"):
        fc.nll_loss_nd(fx, fc.tensor([0, 1]), None, 3, -100)
    # nll_loss's target shape (torch: ValueError) and dtype (torch: RuntimeError).
    with pytest.raises(ValueError):
        torch.ops.aten.nll_loss_nd(tx, torch.tensor([0, 1, 1]), None, 1, -100)
    with pytest.raises(ValueError, match=r"^\[nll_loss\] input shape \(2, 3\) needs target shape \(2,\), got \(3,\)"):
        fc.nll_loss_nd(fx, fc.tensor([0, 1, 1]), None, 1, -100)
    with pytest.raises(RuntimeError):
        torch.ops.aten.nll_loss_nd(tx, torch.tensor([0.0, 1.0]), None, 1, -100)
    with pytest.raises(TypeError, match=r"^\[nll_loss\] target must hold int64 class indices"):
        fc.nll_loss_nd(fx, fc.tensor([0.0, 1.0]), None, 1, -100)
    # A class index out of range (torch: IndexError).
    with pytest.raises(IndexError):
        torch.ops.aten.nll_loss_nd(tx, torch.tensor([0, 3]), None, 1, -100)
    with pytest.raises(IndexError, match=r"nll_loss: target 3 is out of bounds for 3 classes"):
        fc.nll_loss_nd(fx, fc.tensor([0, 3]), None, 1, -100, out=fc.empty(()))
    # bce: probabilities outside [0, 1] (torch: RuntimeError), also through out=.
    with pytest.raises(RuntimeError):
        torch.ops.aten.binary_cross_entropy(tx * 2, tx, None, 1)
    with pytest.raises(ValueError, match=r"^\[binary_cross_entropy\] all elements of input should be between 0 and 1"):
        fc.binary_cross_entropy(fx * 2, fx, None, 1, out=fc.empty((), dtype=fc.float64))
    # out= of a dtype the result cannot cast to (torch: RuntimeError).
    with pytest.raises(RuntimeError):
        torch.ops.aten.mse_loss.out(tx, tx, 1, out=torch.empty((), dtype=torch.long))
    with pytest.raises((TypeError, RuntimeError), match=r"\[mse_loss\]"):
        fc.mse_loss(fx, fx, 1, out=fc.empty((), dtype=fc.int64))


def test_out_of_another_float_dtype_is_cast_as_torch():
    a, b = RNG.standard_normal((3, 5)).astype(np.float32), RNG.standard_normal((3, 5)).astype(np.float32)
    (fa, ta), (fb, tb) = pair(a), pair(b)
    expected = torch.ops.aten.mse_loss.out(ta, tb, 1, out=torch.empty((), dtype=torch.float64))
    out = fc.empty((), dtype=fc.float64)
    assert fc.mse_loss(fa, fb, 1, out=out) is out
    assert out.dtype == fc.float64
    np.testing.assert_allclose(npy(out), npy(expected), rtol=1e-6)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_empty_inputs_as_torch(shape):
    a = np.zeros(shape)
    fx, tx = pair(a)
    for red in (0, 1, 2):
        for name in POINTWISE:
            extra = EXTRA.get(name, ())
            side = side_args(name, None, None)
            expected = torch_pointwise(name, tx, tx, None, None, red)
            got = getattr(fc, name)(fx, fx, *side, red, *extra)
            assert tuple(got.shape) == tuple(expected.shape)
            np.testing.assert_array_equal(npy(got), npy(expected))  # nan for a mean, 0 for a sum
            g = fc.zeros(shape if red == 0 else (), dtype=fc.float64)
            grad = getattr(fc, name + "_backward")(g, fx, fx, *side, red, *extra)
            assert tuple(grad.shape) == shape and grad.dtype == fc.float64
    if shape == (0, 4):
        k, tk = pair(np.zeros(shape[:1], dtype=np.int64))
        for red in (0, 1, 2):
            expected = torch.ops.aten.nll_loss_nd(tx, tk, None, red, -100)
            got = fc.nll_loss_nd(fx, k, None, red, -100, out=fc.empty((0,), dtype=fc.float64))
            assert tuple(got.shape) == tuple(expected.shape)
            np.testing.assert_array_equal(npy(got), npy(expected))
