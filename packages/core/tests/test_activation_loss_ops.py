"""The activation and loss kernels of core (no autograd): forward values and
the fused backward kernels against PyTorch 2.13 (CPU), float32/float64,
shapes 0-d, empty, odd and large (multi-threaded), non-contiguous layouts,
every ISA loop the CPU has, and errors."""

from __future__ import annotations

import os
import subprocess
import sys

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

FDT = {"float32": (fc.float32, torch.float32, 2e-5, 2e-6), "float64": (fc.float64, torch.float64, 1e-10, 1e-12)}


def fct(a, dt):
    return fc.tensor(np.ascontiguousarray(a)).to(dt)


# (name, core forward, core backward(grad, x), torch function)
UNARY = [
    ("gelu", fc.gelu, fc.gelu_backward, TF.gelu),
    (
        "gelu_tanh",
        lambda x: fc.gelu(x, approximate="tanh"),
        lambda g, x: fc.gelu_backward(g, x, approximate="tanh"),
        lambda x: TF.gelu(x, approximate="tanh"),
    ),
    ("silu", fc.silu, fc.silu_backward, TF.silu),
    ("mish", fc.mish, fc.mish_backward, TF.mish),
    (
        "leaky_relu",
        lambda x: fc.leaky_relu(x, 0.2),
        lambda g, x: fc.leaky_relu_backward(g, x, 0.2),
        lambda x: TF.leaky_relu(x, 0.2),
    ),
    (
        "elu",
        lambda x: fc.elu(x, 0.7, 1.2, 0.9),
        lambda g, x: fc.elu_backward(g, x, 0.7, 1.2, 0.9),
        lambda x: torch.ops.aten.elu(x, 0.7, 1.2, 0.9),
    ),
    (
        "softplus",
        lambda x: fc.softplus(x, 1.5, 4.0),
        lambda g, x: fc.softplus_backward(g, x, 1.5, 4.0),
        lambda x: TF.softplus(x, 1.5, 4.0),
    ),
    (
        "hardtanh",
        lambda x: fc.hardtanh(x, -0.5, 2.0),
        lambda g, x: fc.hardtanh_backward(g, x, -0.5, 2.0),
        lambda x: TF.hardtanh(x, -0.5, 2.0),
    ),
    ("hardswish", fc.hardswish, fc.hardswish_backward, TF.hardswish),
    ("hardsigmoid", fc.hardsigmoid, fc.hardsigmoid_backward, TF.hardsigmoid),
    ("log_sigmoid", fc.log_sigmoid, fc.log_sigmoid_backward, TF.logsigmoid),
    ("softsign", fc.softsign, fc.softsign_backward, TF.softsign),
    ("relu", fc.relu, lambda g, x: fc.threshold_backward(g, fc.relu(x), 0.0), torch.relu),
]
SHAPES = [(), (0,), (7,), (3, 5), (2, 3, 4, 5), (70001,)]


def _input(shape, seed=0):
    x = np.asarray(np.random.default_rng(seed).standard_normal(shape) * 4)
    x[np.abs(x) < 1e-3] = 0.25  # away from the kinks
    return x


def _check(name, fwd, bwd, tfn, x, dtype, layout="contiguous"):
    fdt, tdt, rtol, atol = FDT[dtype]
    g = np.random.default_rng(1).standard_normal(x.shape)
    xf, gf = fct(x, fdt), fct(g, fdt)
    if layout == "transposed" and x.ndim >= 2:
        xf = fct(np.swapaxes(x, 0, 1), fdt).transpose(0, 1)
    xt = torch.tensor(x, dtype=tdt, requires_grad=True)
    yt = tfn(xt)
    yt.backward(torch.tensor(g, dtype=tdt))
    np.testing.assert_allclose(to_numpy(fwd(xf)), yt.detach().numpy(), rtol=rtol, atol=atol, err_msg=name)
    # PyTorch's hardsigmoid_backward multiplies by the float32 constant 1.0f / 6.0f even in float64.
    brtol = 1e-7 if name == "hardsigmoid" and dtype == "float64" else rtol * 10
    np.testing.assert_allclose(to_numpy(bwd(gf, xf)), xt.grad.numpy(), rtol=brtol, atol=atol * 10, err_msg=name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name,fwd,bwd,tfn", UNARY, ids=[u[0] for u in UNARY])
def test_unary_forward_and_backward(name, fwd, bwd, tfn, shape, dtype):
    _check(name, fwd, bwd, tfn, _input(shape), dtype)


@pytest.mark.parametrize("name,fwd,bwd,tfn", UNARY, ids=[u[0] for u in UNARY])
def test_unary_transposed(name, fwd, bwd, tfn):
    for d in FDT:
        _check(name, fwd, bwd, tfn, _input((5, 6, 3)), d, "transposed")


def test_unary_outputs_keep_dtype_and_shape():
    for name, fwd, bwd, _ in UNARY:
        x = fc.zeros(2, 3, dtype=fc.float64)
        assert fwd(x).dtype == fc.float64 and tuple(fwd(x).shape) == (2, 3), name
        assert bwd(x, x).dtype == fc.float64, name


@pytest.mark.parametrize("name,fwd,bwd,tfn", UNARY[:-1], ids=[u[0] for u in UNARY[:-1]])
def test_unary_rejects_integer_input(name, fwd, bwd, tfn):
    with pytest.raises(TypeError, match="float32 or float64"):
        fwd(fc.tensor([1, 2]))


# The cpu's kernels per ISA, in child processes: a test of the host.
@pytest.mark.on_devices(types=("cpu",))
def test_every_cpu_capability_gives_the_same_values():
    """The loops compiled for base, AVX2 and AVX-512 agree (each run in a child process)."""
    code = (
        "import flambeau_core as fc, numpy as np\n"
        "x = fc.tensor(np.linspace(-30, 30, 4001)).to(fc.float32)\n"
        "out = [np.array(memoryview(f(x))) for f in (fc.gelu, fc.silu, fc.mish, fc.softplus, fc.log_sigmoid, fc.elu)]\n"
        "out.append(np.array(memoryview(fc.gelu_backward(fc.ones_like(x), x))))\n"
        "print(fc._C._cpu_capability()); np.save(__import__('sys').argv[1], np.stack(out))\n"
    )
    results = {}
    for cap in ("base", "avx2", "avx512"):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fb_act_{os.getpid()}_{cap}.npy")
        env = dict(os.environ, FLAMBEAU_CPU_CAPABILITY=cap)
        r = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True, check=True)
        results[r.stdout.strip()] = np.load(path)
        os.remove(path)
    ref = next(iter(results.values()))
    for cap, v in results.items():
        np.testing.assert_allclose(v, ref, rtol=1e-6, atol=1e-7, err_msg=cap)


# ---- losses (forward kernels; reductions 0 none, 1 mean, 2 sum) ----


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("shape", [(), (0,), (9,), (40000, 3)])
def test_pointwise_loss_kernels(shape, reduction, dtype):
    fdt, tdt, rtol, atol = FDT[dtype]
    names = {0: "none", 1: "mean", 2: "sum"}
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal(shape), rng.standard_normal(shape)
    p, q = rng.uniform(0.01, 0.99, shape), rng.uniform(0, 1, shape)
    cases = [
        (
            fc.mse_loss(fct(x, fdt), fct(t, fdt), reduction),
            TF.mse_loss(torch.tensor(x, dtype=tdt), torch.tensor(t, dtype=tdt), reduction=names[reduction]),
        ),
        (
            fc.l1_loss(fct(x, fdt), fct(t, fdt), reduction),
            TF.l1_loss(torch.tensor(x, dtype=tdt), torch.tensor(t, dtype=tdt), reduction=names[reduction]),
        ),
        (
            fc.smooth_l1_loss(fct(x, fdt), fct(t, fdt), reduction, 0.5),
            TF.smooth_l1_loss(
                torch.tensor(x, dtype=tdt), torch.tensor(t, dtype=tdt), reduction=names[reduction], beta=0.5
            ),
        ),
        (
            fc.huber_loss(fct(x, fdt), fct(t, fdt), reduction, 0.5),
            TF.huber_loss(
                torch.tensor(x, dtype=tdt), torch.tensor(t, dtype=tdt), reduction=names[reduction], delta=0.5
            ),
        ),
        (
            fc.binary_cross_entropy(fct(p, fdt), fct(q, fdt), None, reduction),
            TF.binary_cross_entropy(torch.tensor(p, dtype=tdt), torch.tensor(q, dtype=tdt), reduction=names[reduction]),
        ),
        (
            fc.binary_cross_entropy_with_logits(fct(x, fdt), fct(q, fdt), None, None, reduction),
            TF.binary_cross_entropy_with_logits(
                torch.tensor(x, dtype=tdt), torch.tensor(q, dtype=tdt), reduction=names[reduction]
            ),
        ),
    ]
    for ours, theirs in cases:
        assert ours.dtype == fdt
        np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=rtol * 10, atol=atol * 10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5,), (6, 7), (3, 4, 5), (2, 3, 2, 2), (700, 1000)])
def test_cross_entropy_and_nll_kernels(shape, dtype):
    fdt, tdt, rtol, atol = FDT[dtype]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    t = rng.integers(0, c, tshape)
    for red, name in ((0, "none"), (1, "mean"), (2, "sum")):
        out, lse = fc._C._cross_entropy(fct(x, fdt), fc.tensor(t), None, red, -100, 0.0)
        ref = TF.cross_entropy(torch.tensor(x, dtype=tdt), torch.tensor(t), reduction=name)
        np.testing.assert_allclose(to_numpy(out), ref.numpy(), rtol=rtol * 10, atol=atol * 10)
        nl = fc.nll_loss_nd(fct(x, fdt), fc.tensor(t), None, red, -100)
        np.testing.assert_allclose(
            to_numpy(nl),
            TF.nll_loss(torch.tensor(x, dtype=tdt), torch.tensor(t), reduction=name).numpy(),
            rtol=rtol,
            atol=atol,
        )
    xt = torch.tensor(x, dtype=tdt)
    lse_ref = torch.logsumexp(xt, dim=1 if len(shape) > 1 else 0).reshape(-1)
    np.testing.assert_allclose(to_numpy(lse), lse_ref.numpy(), rtol=rtol, atol=atol)


# Target out of range is found by the kernel: on a device, asynchronously (raised
# by the next synchronous op, as on CUDA), so the error types are the cpu's.
@pytest.mark.on_devices(types=("cpu",))
def test_loss_kernel_errors():
    x = fc.zeros(4, 10)
    with pytest.raises(IndexError, match="cross_entropy: target 12 is out of bounds for 10 classes"):
        fc._C._cross_entropy(x, fc.tensor([0, 12, 1, 2]), None, 1, -100, 0.0)
    with pytest.raises(IndexError, match="nll_loss: target -3 is out of bounds for 10 classes"):
        fc.nll_loss_nd(x, fc.tensor([0, -3, 1, 2]), None, 1, -100)
    with pytest.raises(fc.FlambeauError, match="reduction"):
        fc.mse_loss(x, x, 3)
    with pytest.raises(TypeError, match="int64"):
        fc._C._cross_entropy(x, fc.tensor([0, 1, 1, 2], dtype=fc.int32), None, 1, -100, 0.0)
    with pytest.raises(fc.FlambeauError, match=r"\(4, 10\).*\(4,\).*\(5,\)"):
        fc.nll_loss_nd(x, fc.tensor([0, 1, 1, 2, 3]), None, 1, -100)
    with pytest.raises(fc.FlambeauError, match="between 0 and 1"):
        fc.binary_cross_entropy(fc.tensor([-0.1]), fc.tensor([0.0]), None, 1)
    with pytest.raises(TypeError, match="float32 or float64"):
        fc.mse_loss(fc.tensor([1, 2]), fc.tensor([1, 2]), 1)


# ---- relu's backward on bfloat16 (autocast): the gradient where x > threshold, selected on the 16-bit values ----


def bf16_pair(shape, seed):
    t = torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32)).bfloat16()
    return fc.tensor(t.float().numpy()).to(fc.bfloat16), t


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("shape", [(0,), (7,), (3, 5), (64, 1000)])
@pytest.mark.parametrize("th", [0.0, 0.5, -1.0])
def test_threshold_backward_bfloat16_is_exact(shape, th, layout):
    x, tx = bf16_pair(shape, 0)
    g, tg = bf16_pair(shape, 1)
    if x.numel() > 2:
        tx.view(-1)[1] = float("nan")  # NaN is not <= threshold: the gradient passes, as in PyTorch
        tx.view(-1)[2] = th  # equal to the threshold: zero
        x = fc.tensor(tx.float().numpy()).to(fc.bfloat16)
    if layout == "transposed" and len(shape) == 2:
        x, tx, g, tg = x.t(), tx.t(), g.t(), tg.t()
    got = fc.threshold_backward(g, x, th)
    want = torch.ops.aten.threshold_backward(tg, tx, th)
    assert got.dtype == fc.bfloat16 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(to_numpy(got), want.float().numpy())
    ref = fc.threshold_backward(g.to(fc.float32), x.to(fc.float32), th)  # float32 on the same values
    np.testing.assert_array_equal(to_numpy(got), to_numpy(ref))


@pytest.mark.on_devices(types=("cpu",))  # the simulated device raises the broadcast error asynchronously
def test_threshold_backward_bfloat16_errors():
    x = fc.ones(3, dtype=fc.bfloat16)
    with pytest.raises(ValueError, match=r"^\[threshold_backward\]"):
        fc.threshold_backward(fc.ones(4, dtype=fc.bfloat16), x, 0.0)
    with pytest.raises(TypeError, match=r"^\[threshold_backward\]"):
        fc.threshold_backward(fc.ones(3, dtype=fc.int64), x, 0.0)
