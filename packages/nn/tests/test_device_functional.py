"""nn.functional forward and backward on every device (flambeau_core.testing.devices: cpu, sim, cuda).

Each case builds leaf tensors from fixed values on the device under test and
on the cpu, runs the functional forward, backpropagates a fixed upstream
gradient, and compares the outputs and every leaf's gradient (device, shape,
dtype, value) with the cpu run; the cpu run itself is checked against PyTorch
in the per-area tests (test_activations_losses.py, test_conv.py, ...).
"""

import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
from flambeau_core.testing import assert_close_on, devices

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6))
W = RNG.standard_normal((3, 6))
BIAS = RNG.standard_normal((3,))
IMG = RNG.standard_normal((2, 3, 6, 5))
KERNEL = RNG.standard_normal((4, 3, 3, 3))
SEQ = RNG.standard_normal((2, 5, 6))
TARGET = np.array([0, 2, 1, 2])
PROBS = RNG.uniform(0.05, 0.95, (4, 6))


def _leaf(values, device, dtype):
    return fc.tensor(np.asarray(values).tolist(), dtype=dtype, device=device).requires_grad_()


def _const(values, device, dtype=None):
    return fc.tensor(np.asarray(values).tolist(), dtype=dtype, device=device)


# name -> (leaves (arrays), forward(device, dtype, *leaves))
CASES = {
    "linear": ((X, W, BIAS), lambda d, dt, x, w, b: F.linear(x, w, b)),
    "relu_gelu_silu": ((X,), lambda d, dt, x: F.relu(x) + F.gelu(x) + F.silu(x)),
    "sigmoid_tanh": ((X,), lambda d, dt, x: F.sigmoid(x) * F.tanh(x)),
    "leaky_relu_elu": ((X,), lambda d, dt, x: F.leaky_relu(x, 0.1) - F.elu(x)),
    "hardtanh_softplus": ((X,), lambda d, dt, x: F.hardtanh(x, -0.5, 0.5) + F.softplus(x)),
    "softmax": ((X,), lambda d, dt, x: F.softmax(x, dim=1)),
    "log_softmax": ((SEQ,), lambda d, dt, x: F.log_softmax(x, dim=-1)),
    "cross_entropy": ((X[:, :3],), lambda d, dt, x: F.cross_entropy(x, _const(TARGET, d))),
    "cross_entropy_none_smoothing": (
        (X[:, :3],),
        lambda d, dt, x: F.cross_entropy(x, _const(TARGET, d), reduction="none", label_smoothing=0.1),
    ),
    "nll_loss": ((X[:, :3],), lambda d, dt, x: F.nll_loss(F.log_softmax(x, 1), _const(TARGET, d))),
    "mse_l1": ((X, W[:1]), lambda d, dt, x, y: F.mse_loss(x, y.expand(4, 6)) + F.l1_loss(x, y.expand(4, 6))),
    "smooth_l1_huber": ((X,), lambda d, dt, x: F.smooth_l1_loss(x, x.detach() * 0.5) + F.huber_loss(x, x * 0)),
    "bce_logits": ((X,), lambda d, dt, x: F.binary_cross_entropy_with_logits(x, _const(PROBS, d, dt))),
    "bce": ((PROBS,), lambda d, dt, p: F.binary_cross_entropy(p, _const(PROBS[::-1].copy(), d, dt))),
    "conv2d": ((IMG, KERNEL), lambda d, dt, x, k: F.conv2d(x, k, stride=1, padding=1)),
    "max_pool2d": ((IMG,), lambda d, dt, x: F.max_pool2d(x, 2)),
    "avg_pool2d": ((IMG,), lambda d, dt, x: F.avg_pool2d(x, 2, stride=1)),
    "adaptive_avg_pool2d": ((IMG,), lambda d, dt, x: F.adaptive_avg_pool2d(x, (2, 2))),
    "layer_norm": ((SEQ,), lambda d, dt, x: F.layer_norm(x, (6,))),
    "batch_norm_train": ((IMG,), lambda d, dt, x: F.batch_norm(x, None, None, training=True)),
    "group_norm": ((IMG,), lambda d, dt, x: F.group_norm(x, 3)),
    "embedding": ((W,), lambda d, dt, w: F.embedding(_const([[0, 2], [1, 1]], d), w)),
    "dropout_eval": ((X,), lambda d, dt, x: F.dropout(x, 0.5, training=False)),
    "pad": ((IMG,), lambda d, dt, x: F.pad(x, (1, 2, 0, 1))),
    "interpolate": ((IMG,), lambda d, dt, x: F.interpolate(x, scale_factor=2, mode="nearest")),
}


def _run(name, device, dtype):
    arrays, fn = CASES[name]
    leaves = [_leaf(a, device, dtype) for a in arrays]
    out = fn(device, dtype, *leaves)
    upstream = fc.tensor(np.linspace(-1, 1, max(out.numel(), 1)).reshape(tuple(out.shape)).tolist(), dtype=dtype)
    out.backward(upstream.to(device))
    return out.detach(), [leaf.grad for leaf in leaves]


@devices
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_forward_backward_on_device(device, dtype, name):
    out, grads = _run(name, device, dtype)
    ref_out, ref_grads = _run(name, "cpu", dtype)
    tol = 1e-5 if dtype == fc.float32 else 1e-11
    assert_close_on(device, out, ref_out, rtol=tol, atol=tol)
    for g, r in zip(grads, ref_grads, strict=True):
        assert g is not None
        assert_close_on(device, g, r, rtol=tol, atol=tol)


@devices
def test_module_training_step_on_device(device):
    """A Linear-ReLU-Linear step with SGD+momentum: parameters and grads stay on the device and match the cpu."""
    results = []
    for d in (device, "cpu"):
        fc.manual_seed(3)
        import flambeau_nn as nn

        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(d)
        opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if hasattr(nn, "optim") else None
        x = _const(X, d, fc.float32)
        for _ in range(2):
            if opt is not None:
                opt.zero_grad()
            loss = F.cross_entropy(model(x), _const(TARGET, d))
            loss.backward()
            if opt is not None:
                opt.step()
        results.append((loss.detach(), [p.detach() for p in model.parameters()]))
    (loss, params), (ref_loss, ref_params) = results
    assert_close_on(device, loss, ref_loss, rtol=1e-5, atol=1e-6)
    for p, r in zip(params, ref_params, strict=True):
        assert_close_on(device, p, r, rtol=1e-5, atol=1e-6)
