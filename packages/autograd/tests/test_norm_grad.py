"""native_group_norm's gradients against PyTorch 2.13.0 and gradcheck (float64), including those that
reach the input through its mean and rstd outputs (differentiable outputs, as PyTorch's); native_batch_norm's
in training and evaluation mode (which saves no statistics, as PyTorch's: its gradient reads the running ones),
reverse and forward mode."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_autograd.forward_ad as fwAD
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(8)
X = RNG.standard_normal((2, 6, 3))
W = RNG.standard_normal(6)
B = RNG.standard_normal(6)


def _outputs_and_gradients_match(fo, to, fb_in, th_in, seed):
    """The three outputs (shapes and values), then the gradients of (input, weight, bias) given (any leading
    part of them) of the first output weighted by a random cotangent."""
    for i in range(3):
        assert fo[i].shape == tuple(to[i].shape)
        np.testing.assert_allclose(to_np(fo[i]), to[i].detach().numpy(), rtol=1e-7, atol=1e-9)
    w = np.random.default_rng(seed).standard_normal(tuple(to[0].shape))
    (fo[0] * fb_tensor(w)).sum().backward()
    (to[0] * torch.tensor(w)).sum().backward()
    for name, a, b in zip(("input", "weight", "bias"), fb_in, th_in, strict=False):
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=name)


def test_group_norm_gradients_match_torch():
    fb_in = [fb_tensor(a, requires_grad=True) for a in (X, W, B)]
    th_in = [torch.tensor(a, requires_grad=True) for a in (X, W, B)]
    fo = fc.native_group_norm(*fb_in, 2, 6, 3, 3, 1e-5)
    to = torch.native_group_norm(*th_in, 2, 6, 3, 3, 1e-5)
    _outputs_and_gradients_match(fo, to, fb_in, th_in, seed=1)


def test_group_norm_statistics_gradcheck():
    """Against finite differences: PyTorch 2.13's own backward drops the statistics' gradients outside
    create_graph (its gradcheck of native_group_norm's rstd fails), so torch is no oracle here."""

    def stats(x):
        _, mean, rstd = fc.native_group_norm(x, None, None, 2, 6, 3, 2, 0.5)
        return mean * 0.3 + rstd

    assert ag.gradcheck(stats, [fb_tensor(X, requires_grad=True)])
    assert ag.gradgradcheck(stats, [fb_tensor(X, requires_grad=True)])


BN_X = RNG.standard_normal((4, 3, 5))
BN_RM = RNG.standard_normal(3)
BN_RV = RNG.random(3) + 0.5


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_gradients_match_torch(training, affine):
    arrays = (BN_X, W[:3], B[:3]) if affine else (BN_X,)
    fb_in = [fb_tensor(a, requires_grad=True) for a in arrays]
    th_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    f_w, f_b = (fb_in[1], fb_in[2]) if affine else (None, None)
    t_w, t_b = (th_in[1], th_in[2]) if affine else (None, None)
    frm, frv, trm, trv = fb_tensor(BN_RM), fb_tensor(BN_RV), torch.tensor(BN_RM), torch.tensor(BN_RV)
    fo = fc.native_batch_norm(fb_in[0], f_w, f_b, frm, frv, training, 0.3, 1e-3)
    to = torch.native_batch_norm(th_in[0], t_w, t_b, trm, trv, training, 0.3, 1e-3)
    # (evaluation mode: (0,) statistics, as torch's)
    _outputs_and_gradients_match(fo, to, fb_in, th_in, seed=2)
    np.testing.assert_allclose(to_np(frm), trm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_np(frv), trv.numpy(), rtol=1e-12)


def test_batch_norm_eval_gradients_gradcheck():
    rm, rv = fb_tensor(BN_RM), fb_tensor(BN_RV)

    def f(x, w, b):
        return fc.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5)[0]

    inputs = [fb_tensor(a, requires_grad=True) for a in (BN_X, W[:3], B[:3])]
    assert ag.gradcheck(f, inputs)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_forward_mode_matches_torch(training):
    import torch.autograd.forward_ad as tfwAD

    tangents = [np.random.default_rng(k).standard_normal(a.shape) for k, a in enumerate((BN_X, W[:3]))]
    with fwAD.dual_level():
        x = fwAD.make_dual(fb_tensor(BN_X), fb_tensor(tangents[0]))
        w = fwAD.make_dual(fb_tensor(W[:3]), fb_tensor(tangents[1]))
        out = fc.native_batch_norm(x, w, None, fb_tensor(BN_RM), fb_tensor(BN_RV), training, 0.1, 1e-5)[0]
        got = to_np(fwAD.unpack_dual(out).tangent)
    with tfwAD.dual_level():
        x = tfwAD.make_dual(torch.tensor(BN_X), torch.tensor(tangents[0]))
        w = tfwAD.make_dual(torch.tensor(W[:3]), torch.tensor(tangents[1]))
        out = torch.native_batch_norm(x, w, None, torch.tensor(BN_RM), torch.tensor(BN_RV), training, 0.1, 1e-5)[0]
        want = tfwAD.unpack_dual(out).tangent.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_batch_norm_training_backward_after_a_later_training_forward():
    # Training updates the running statistics in place; its gradient does not read them, so a second
    # forward before the backward (gradient accumulation) is fine, as in torch.
    rm, rv = fb_tensor(BN_RM), fb_tensor(BN_RV)
    trm, trv = torch.tensor(BN_RM), torch.tensor(BN_RV)
    x, tx = fb_tensor(BN_X, requires_grad=True), torch.tensor(BN_X, requires_grad=True)
    a = fc.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)[0]
    b = fc.native_batch_norm(x * 2.0, None, None, rm, rv, True, 0.1, 1e-5)[0]
    ta = torch.native_batch_norm(tx, None, None, trm, trv, True, 0.1, 1e-5)[0]
    tb = torch.native_batch_norm(tx * 2.0, None, None, trm, trv, True, 0.1, 1e-5)[0]
    g = fb_tensor(np.random.default_rng(3).standard_normal(BN_X.shape))
    ((a + b * b) * g).sum().backward()
    ((ta + tb * tb) * torch.tensor(to_np(g))).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_batch_norm_eval_backward_checks_the_running_statistics_version():
    # Evaluation mode's gradient reads the running statistics: changed in place before the backward, they
    # raise as torch's do (RuntimeError, "modified by an inplace operation").
    rm, rv = fb_tensor(BN_RM), fb_tensor(BN_RV)
    x = fb_tensor(BN_X, requires_grad=True)
    out = fc.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)[0]
    rm.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    trm, trv = torch.tensor(BN_RM), torch.tensor(BN_RV)
    tx = torch.tensor(BN_X, requires_grad=True)
    tout = torch.native_batch_norm(tx, None, None, trm, trv, False, 0.1, 1e-5)[0]
    trm.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tout.sum().backward()
