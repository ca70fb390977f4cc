"""Normalization layers, embeddings and dropout against PyTorch: values, gradients, running statistics,
modules' state_dict and defaults, gradcheck in float64, and error paths."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.utils.prune
from flambeau_core.testing import raises_when_run
from nn_testing import assert_close, copy_params, from_torch, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="group_norm, dropout: no flambeau-cuda kernel yet")

DTYPES = [(fc.float32, torch.float32, 1e-4), (fc.float64, torch.float64, 1e-9)]


def _pair(x: torch.Tensor, requires_grad: bool = True):
    ours = from_torch(x)
    if requires_grad:
        ours.requires_grad_(True)
    return ours, x.detach().clone().requires_grad_(requires_grad)


def _backward_both(yo, yt):
    g = torch.randn(yt.shape, dtype=yt.dtype)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()


def _grads_match(pairs, rtol):
    for o, t in pairs:
        assert_close(o.grad, t.grad, rtol=rtol, atol=rtol)


# ---- batch norm (functional) ----
@pytest.mark.parametrize("shape", [(8, 3), (4, 5, 7), (3, 4, 5, 6), (2, 3, 1, 1), (17, 16, 8, 8)])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_values_and_gradients(shape, dt, affine):
    fdt, tdt, tol = dt
    x = torch.randn(shape, dtype=tdt) * 2 + 1
    xo, xt = _pair(x)
    c = shape[1]
    wo, wt = _pair(torch.rand(c, dtype=tdt) + 0.5) if affine else (None, None)
    bo, bt = _pair(torch.randn(c, dtype=tdt)) if affine else (None, None)
    rmo, rvo = fc.zeros(c, dtype=fdt), fc.ones(c, dtype=fdt)
    rmt, rvt = torch.zeros(c, dtype=tdt), torch.ones(c, dtype=tdt)
    yo = F.batch_norm(xo, rmo, rvo, wo, bo, training=True, momentum=0.2)
    yt = torch.nn.functional.batch_norm(xt, rmt, rvt, wt, bt, training=True, momentum=0.2)
    assert_close(yo, yt, rtol=tol, atol=tol)
    assert_close(rmo, rmt, rtol=tol, atol=tol)
    assert_close(rvo, rvt, rtol=tol, atol=tol)
    assert yo.grad_fn.name() == "NativeBatchNormBackward0"
    _backward_both(yo, yt)
    _grads_match([(xo, xt)] + ([(wo, wt), (bo, bt)] if affine else []), tol * 10)


@pytest.mark.parametrize("dt", DTYPES)
def test_batch_norm_eval_gradients(dt):
    fdt, tdt, tol = dt
    x = torch.randn(4, 3, 5, dtype=tdt)
    xo, xt = _pair(x)
    wo, wt = _pair(torch.rand(3, dtype=tdt) + 0.5)
    bo, bt = _pair(torch.randn(3, dtype=tdt))
    rm, rv = torch.randn(3, dtype=tdt), torch.rand(3, dtype=tdt) + 0.5
    yo = F.batch_norm(xo, from_torch(rm), from_torch(rv), wo, bo, training=False)
    yt = torch.nn.functional.batch_norm(xt, rm, rv, wt, bt, training=False)
    assert_close(yo, yt, rtol=tol, atol=tol)
    _backward_both(yo, yt)
    _grads_match([(xo, xt), (wo, wt), (bo, bt)], tol * 10)


def test_batch_norm_noncontiguous_input_and_gradient():
    x = torch.randn(5, 4, 6)
    xo = from_torch(x.permute(2, 1, 0).contiguous()).permute(2, 1, 0)
    assert not xo.is_contiguous()
    xo.requires_grad_(True)
    xt = x.clone().requires_grad_(True)
    yo = F.batch_norm(xo, None, None, training=True)
    yt = torch.nn.functional.batch_norm(xt, None, None, training=True)
    assert_close(yo, yt, rtol=1e-4, atol=1e-5)
    _backward_both(yo, yt)
    _grads_match([(xo, xt)], 1e-3)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 4)])
def test_batch_norm_gradcheck(training, shape):
    x = fc.randn(*shape, dtype=fc.float64).requires_grad_(True)
    w = (fc.rand(shape[1], dtype=fc.float64) + 0.5).requires_grad_(True)
    b = fc.randn(shape[1], dtype=fc.float64).requires_grad_(True)
    rm, rv = fc.randn(shape[1], dtype=fc.float64), fc.rand(shape[1], dtype=fc.float64) + 0.5

    def fn(x, w, b):
        return F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=training)

    assert fa.gradcheck(fn, (x, w, b))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (0, 3, 4)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_an_empty_input(shape, training):
    # torch: an empty copy of any number of dims, the running statistics untouched, zero gradients for the
    # weight and bias (through their first element)
    c = shape[1] if len(shape) > 1 else 0
    xo, xt = _pair(torch.zeros(shape, dtype=torch.float64))
    rmo, rmt = _pair(torch.full((c,), 0.5, dtype=torch.float64), requires_grad=False)
    rvo, rvt = _pair(torch.full((c,), 2.0, dtype=torch.float64), requires_grad=False)
    if c:
        (wo, wt), (bo, bt) = _pair(torch.randn(c, dtype=torch.float64)), _pair(torch.randn(c, dtype=torch.float64))
    else:
        wo = wt = bo = bt = None
    yo = F.batch_norm(xo, rmo, rvo, wo, bo, training=training)
    yt = torch.nn.functional.batch_norm(xt, rmt, rvt, wt, bt, training=training)
    assert tuple(yo.shape) == tuple(yt.shape) == shape
    yo.sum().backward()
    yt.sum().backward()
    _grads_match([(xo, xt)] + ([(wo, wt), (bo, bt)] if c else []), 1e-12)
    assert_close(rmo, rmt, rtol=0, atol=0)
    assert_close(rvo, rvt, rtol=0, atol=0)
    # a weight with no first element to scale by: IndexError, as torch's select
    with pytest.raises(IndexError):
        F.batch_norm(fc.zeros(0), None, None, fc.zeros(0), training=training)
    with pytest.raises(IndexError):
        torch.nn.functional.batch_norm(torch.zeros(0), None, None, torch.zeros(0), training=training)


def test_batch_norm_errors():
    with pytest.raises(
        ValueError, match=r"Expected more than 1 value per channel when training, got input size \[1, 16\]"
    ):
        F.batch_norm(fc.randn(1, 16), None, None, training=True)
    with pytest.raises(ValueError, match="eps must be positive during training"):
        F.batch_norm(fc.randn(4, 3), None, None, training=True, eps=0.0)
    with pytest.raises(ValueError, match=r"\[BatchNorm2d\] expected input with 16 channels.*\(2, 8, 4, 4\)"):
        nn.BatchNorm2d(16)(fc.randn(2, 8, 4, 4))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input"):
        nn.BatchNorm2d(3)(fc.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input"):
        nn.BatchNorm1d(3)(fc.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\).*got shape \(4,\)"):
        F.batch_norm(fc.randn(2, 3), None, None, fc.ones(4), training=True)
    with pytest.raises(ValueError, match=r"expected an input of at least 2 dims \(N, C, ...\), got shape \(3,\)"):
        F.batch_norm(fc.randn(3), None, None, training=True)


# ---- batch norm modules ----
@pytest.mark.parametrize(
    "ours_cls, theirs_cls, shape",
    [
        (nn.BatchNorm1d, torch.nn.BatchNorm1d, (6, 4)),
        (nn.BatchNorm1d, torch.nn.BatchNorm1d, (6, 4, 5)),
        (nn.BatchNorm2d, torch.nn.BatchNorm2d, (3, 4, 5, 5)),
    ],
)
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_module_several_steps(ours_cls, theirs_cls, shape, momentum):
    ours, theirs = ours_cls(4, momentum=momentum), theirs_cls(4, momentum=momentum)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
        theirs.bias.normal_()
    copy_params(ours, theirs)
    for step in range(4):
        x = torch.randn(shape) * (step + 1) + step
        xo, xt = _pair(x)
        yo, yt = ours(xo), theirs(xt)
        assert_close(yo, yt, rtol=1e-4, atol=1e-5)
        _backward_both(yo, yt)
        _grads_match([(xo, xt), (ours.weight, theirs.weight), (ours.bias, theirs.bias)], 1e-3)
    assert_close(ours.running_mean, theirs.running_mean, rtol=1e-5)
    assert_close(ours.running_var, theirs.running_var, rtol=1e-5)
    assert ours.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 4
    ours.eval()
    theirs.eval()
    x = torch.randn(shape)
    assert_close(ours(from_torch(x)), theirs(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_batch_norm_module_gradients_over_two_forwards_then_one_backward(mode):
    # Gradient accumulation: both forwards' gradients, training updating the running statistics in between
    # (its gradient does not read them), evaluation reading them (saved: native_batch_norm saves no
    # statistics of its own in evaluation mode, as torch's).
    ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
        theirs.bias.normal_()
        theirs.running_mean.normal_()
        theirs.running_var.uniform_(0.5, 2.0)
    copy_params(ours, theirs)
    ours.running_mean.copy_(from_torch(theirs.running_mean))
    ours.running_var.copy_(from_torch(theirs.running_var))
    getattr(ours, mode)()
    getattr(theirs, mode)()
    xo, xt = _pair(torch.randn(4, 3, 5, 5))
    yo = ours(xo) + ours(xo * 3.0) ** 2
    yt = theirs(xt) + theirs(xt * 3.0) ** 2
    assert_close(yo, yt, rtol=1e-4, atol=1e-4)
    _backward_both(yo, yt)
    _grads_match([(xo, xt), (ours.weight, theirs.weight), (ours.bias, theirs.bias)], 1e-3)
    assert_close(ours.running_mean, theirs.running_mean, rtol=1e-5)
    assert_close(ours.running_var, theirs.running_var, rtol=1e-5)


@pytest.mark.on_devices(types=("cpu", "sim"))  # the CUDA kernel takes float32 and float64
@pytest.mark.parametrize("shape", [(8, 4, 6, 6), (16, 4)])
def test_batch_norm_module_on_bfloat16_input(shape):
    # What autocast gives a BatchNorm after a lowered convolution: a bfloat16 input, float32 parameters and
    # running statistics (Note [Batch norm's mixed precision]); the gradients keep each tensor's dtype.
    ours = nn.BatchNorm2d(4) if len(shape) == 4 else nn.BatchNorm1d(4)
    theirs = torch.nn.BatchNorm2d(4) if len(shape) == 4 else torch.nn.BatchNorm1d(4)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
        theirs.bias.normal_()
    copy_params(ours, theirs)
    bf16 = {"rtol": 2**-7, "atol": 2**-7}
    for step in range(3):
        x = (torch.randn(shape) * (step + 1) + step).bfloat16()
        xo, xt = _pair(x)
        yo, yt = ours(xo), theirs(xt)
        assert yo.dtype == fc.bfloat16 and yt.dtype == torch.bfloat16
        assert_close(yo, yt, **bf16)
        _backward_both(yo, yt)
        assert xo.grad.dtype == fc.bfloat16 and ours.weight.grad.dtype == fc.float32
        assert_close(xo.grad, xt.grad, rtol=2**-6, atol=2**-6)
        # per-channel sums of bfloat16 products: float32 accumulation in both, in different orders
        for o, t in ((ours.weight, theirs.weight), (ours.bias, theirs.bias)):
            assert_close(o.grad, t.grad, rtol=1e-2, atol=1e-2, scale_atol=True)
        ours.zero_grad()
        theirs.zero_grad()
    assert ours.running_mean.dtype == fc.float32
    assert_close(ours.running_mean, theirs.running_mean, rtol=1e-5)
    assert_close(ours.running_var, theirs.running_var, rtol=1e-5)
    ours.eval()
    theirs.eval()
    x = torch.randn(shape).bfloat16()
    assert_close(ours(from_torch(x)), theirs(x), **bf16)


def test_batch_norm_module_state_dict_and_defaults():
    for ours, theirs in [(nn.BatchNorm1d(5), torch.nn.BatchNorm1d(5)), (nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3))]:
        assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
        for k, v in theirs.state_dict().items():
            assert_close(ours.state_dict()[k], v)
            assert ours.state_dict()[k].dtype == fc.int64 if k == "num_batches_tracked" else fc.float32
        assert (ours.eps, ours.momentum, ours.affine, ours.track_running_stats) == (1e-5, 0.1, True, True)
        assert repr(ours) == repr(theirs)
    ours, theirs = (
        nn.BatchNorm2d(3, affine=False, track_running_stats=False),
        torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False),
    )
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys()) == []
    x = torch.randn(2, 3, 4, 4)
    ours.eval()
    theirs.eval()
    assert_close(ours(from_torch(x)), theirs(x), rtol=1e-4, atol=1e-5)  # batch statistics even in eval
    # a PyTorch checkpoint loads
    t = torch.nn.BatchNorm2d(3)
    t.train()
    t(torch.randn(4, 3, 2, 2))
    o = nn.BatchNorm2d(3)
    o.load_state_dict({k: from_torch(v) for k, v in t.state_dict().items()})
    assert_close(o.running_var, t.running_var)
    assert o.num_batches_tracked.item() == 1


def test_batch_norm_module_track_running_stats_false_in_training():
    ours, theirs = nn.BatchNorm1d(3, track_running_stats=False), torch.nn.BatchNorm1d(3, track_running_stats=False)
    x = torch.randn(5, 3)
    assert_close(ours(from_torch(x)), theirs(x), rtol=1e-4, atol=1e-5)
    assert ours.running_mean is None and ours.num_batches_tracked is None


# ---- layer norm / group norm / instance norm ----
@pytest.mark.parametrize("shape, norm", [((4, 7), (7,)), ((2, 3, 5), (3, 5)), ((3, 300), 300)])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("affine, bias", [(True, True), (True, False), (False, False)])
def test_layer_norm_module(shape, norm, dt, affine, bias):
    fdt, tdt, tol = dt
    ours = nn.LayerNorm(norm, elementwise_affine=affine, bias=bias, dtype=fdt)
    theirs = torch.nn.LayerNorm(norm, elementwise_affine=affine, bias=bias, dtype=tdt)
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
    with torch.no_grad():
        for p in theirs.parameters():
            p.normal_()
    copy_params(ours, theirs)
    xo, xt = _pair(torch.randn(shape, dtype=tdt) * 3 + 2)
    yo, yt = ours(xo), theirs(xt)
    assert_close(yo, yt, rtol=tol, atol=tol)
    _backward_both(yo, yt)
    _grads_match([(xo, xt)] + list(zip(ours.parameters(), theirs.parameters(), strict=True)), tol * 10)


def test_layer_norm_noncontiguous_and_gradcheck():
    x = torch.randn(6, 4)
    xo = from_torch(x.t().contiguous()).transpose(0, 1).requires_grad_(True)
    xt = x.clone().requires_grad_(True)
    yo, yt = F.layer_norm(xo, (4,)), torch.nn.functional.layer_norm(xt, (4,))
    assert_close(yo, yt, rtol=1e-4, atol=1e-5)
    _backward_both(yo, yt)
    _grads_match([(xo, xt)], 1e-3)
    x = fc.randn(3, 5, dtype=fc.float64).requires_grad_(True)
    w = fc.randn(5, dtype=fc.float64).requires_grad_(True)
    b = fc.randn(5, dtype=fc.float64).requires_grad_(True)
    assert fa.gradcheck(lambda x, w, b: F.layer_norm(x, (5,), w, b), (x, w, b))


def test_layer_norm_errors():
    with pytest.raises(ValueError, match=r"normalized_shape=\(4,\).*\(2, 5\)"):
        nn.LayerNorm(4)(fc.randn(2, 5))


@pytest.mark.parametrize("shape, groups", [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4), 4), ((2, 8, 3, 3), 1)])
@pytest.mark.parametrize("dt", DTYPES)
def test_group_norm_module(shape, groups, dt):
    fdt, tdt, tol = dt
    ours = nn.GroupNorm(groups, shape[1], dtype=fdt)
    theirs = torch.nn.GroupNorm(groups, shape[1], dtype=tdt)
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
    with torch.no_grad():
        for p in theirs.parameters():
            p.normal_()
    copy_params(ours, theirs)
    xo, xt = _pair(torch.randn(shape, dtype=tdt) * 2 + 1)
    yo, yt = ours(xo), theirs(xt)
    assert_close(yo, yt, rtol=tol, atol=tol)
    _backward_both(yo, yt)
    _grads_match([(xo, xt)] + list(zip(ours.parameters(), theirs.parameters(), strict=True)), tol * 10)


def test_group_norm_gradcheck_and_errors():
    x = fc.randn(2, 4, 3, dtype=fc.float64).requires_grad_(True)
    w = fc.randn(4, dtype=fc.float64).requires_grad_(True)
    b = fc.randn(4, dtype=fc.float64).requires_grad_(True)
    assert fa.gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    with pytest.raises(ValueError, match=r"divisible by num_groups.*\(2, 6, 4\).*num_groups=4"):
        F.group_norm(fc.randn(2, 6, 4), 4)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)


@pytest.mark.parametrize(
    "ours_cls, theirs_cls, shape",
    [
        (nn.InstanceNorm1d, torch.nn.InstanceNorm1d, (3, 4, 6)),
        (nn.InstanceNorm2d, torch.nn.InstanceNorm2d, (2, 4, 3, 5)),
        (nn.InstanceNorm2d, torch.nn.InstanceNorm2d, (4, 3, 5)),
    ],
)
@pytest.mark.parametrize("affine, track", [(False, False), (True, True)])
def test_instance_norm_module(ours_cls, theirs_cls, shape, affine, track):
    ours = ours_cls(4, affine=affine, track_running_stats=track)
    theirs = theirs_cls(4, affine=affine, track_running_stats=track)
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
    if affine:
        with torch.no_grad():
            for p in theirs.parameters():
                p.normal_()
        copy_params(ours, theirs)
    for step in range(3):
        xo, xt = _pair(torch.randn(shape) * 2 + step)
        yo, yt = ours(xo), theirs(xt)
        assert_close(yo, yt, rtol=1e-4, atol=1e-5)
        _backward_both(yo, yt)
        _grads_match([(xo, xt)] + list(zip(ours.parameters(), theirs.parameters(), strict=True)), 1e-3)
    if track:
        assert_close(ours.running_mean, theirs.running_mean, rtol=1e-5, atol=1e-6)
        assert_close(ours.running_var, theirs.running_var, rtol=1e-5, atol=1e-6)
        ours.eval()
        theirs.eval()
        x = torch.randn(shape)
        assert_close(ours(from_torch(x)), theirs(x), rtol=1e-4, atol=1e-5)


def test_instance_norm_gradcheck():
    x = fc.randn(2, 3, 4, dtype=fc.float64).requires_grad_(True)
    w = fc.randn(3, dtype=fc.float64).requires_grad_(True)
    b = fc.randn(3, dtype=fc.float64).requires_grad_(True)
    assert fa.gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(fc.randn(2, 3, 1))


# ---- embedding ----
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("freq", [False, True])
def test_embedding_values_and_gradients(dt, padding_idx, freq):
    fdt, tdt, tol = dt
    w = torch.randn(10, 6, dtype=tdt)
    idx = torch.randint(0, 10, (7, 5))
    idx[0, 0] = 9
    idx[1, 1] = 2
    wo, wt = _pair(w)
    yo = F.embedding(from_torch(idx), wo, padding_idx=padding_idx, scale_grad_by_freq=freq)
    yt = torch.nn.functional.embedding(idx, wt, padding_idx=padding_idx, scale_grad_by_freq=freq)
    assert_close(yo, yt, rtol=tol, atol=tol)
    _backward_both(yo, yt)
    _grads_match([(wo, wt)], tol)


def test_embedding_gradcheck():
    w = fc.randn(6, 3, dtype=fc.float64).requires_grad_(True)
    idx = fc.tensor([[0, 2, 2], [5, 1, 0]])
    # (the padding row gets no gradient by definition, so gradcheck uses a padding_idx not picked)
    assert fa.gradcheck(lambda w: F.embedding(idx, w, padding_idx=4), (w,))
    assert fa.gradcheck(lambda w: F.embedding(idx, w, scale_grad_by_freq=False), (w,))


def test_embedding_module_defaults_and_padding():
    fc.manual_seed(0)
    e = nn.Embedding(1000, 16, padding_idx=-2)
    assert e.padding_idx == 998
    wv = to_numpy(e.weight)
    assert (wv[998] == 0).all()
    assert abs(wv.mean()) < 0.02 and abs(wv.std() - 1) < 0.02  # N(0, 1)
    assert list(e.state_dict().keys()) == list(torch.nn.Embedding(1000, 16).state_dict().keys())
    assert repr(e) == repr(torch.nn.Embedding(1000, 16, padding_idx=-2))
    y = e(fc.tensor([998, 3, 998]))
    y.sum().backward()
    g = to_numpy(e.weight.grad)
    assert (g[998] == 0).all() and (g[3] == 1).all()


def test_embedding_from_pretrained_and_max_norm():
    w = torch.randn(5, 3) * 4
    ours = nn.Embedding.from_pretrained(from_torch(w))
    theirs = torch.nn.Embedding.from_pretrained(w.clone())
    assert not ours.weight.requires_grad
    idx = torch.tensor([1, 3])
    assert_close(ours(from_torch(idx)), theirs(idx))
    ours = nn.Embedding.from_pretrained(from_torch(w), freeze=False, max_norm=1.0)
    theirs = torch.nn.Embedding.from_pretrained(w.clone(), freeze=False, max_norm=1.0)
    assert ours.weight.requires_grad
    assert_close(ours(from_torch(idx)), theirs(idx), rtol=1e-5)
    assert_close(ours.weight, theirs.weight, rtol=1e-5)  # rows renormalized in place


def test_embedding_module_reparametrized_and_concatenated():
    # forward reads the weight from _parameters; pruned / weight-normed, the weight is an attribute.
    torch.manual_seed(0)
    idx = torch.randint(0, 12, (9,))
    for wrap_ours, wrap_theirs in [
        (
            lambda m: nn.utils.prune.l1_unstructured(m, "weight", 0.4),
            lambda m: torch.nn.utils.prune.l1_unstructured(m, "weight", 0.4),
        ),
        (lambda m: nn.utils.weight_norm(m), lambda m: torch.nn.utils.weight_norm(m)),
    ]:
        theirs = torch.nn.Embedding(12, 5)
        ours = nn.Embedding(12, 5)
        ours.weight.data.copy_(from_torch(theirs.weight.detach()))
        wrap_ours(ours)
        wrap_theirs(theirs)
        assert "weight" not in ours._parameters
        assert_close(ours(from_torch(idx)), theirs(idx), rtol=1e-6, atol=1e-6)
    # Two embeddings concatenated (each gets a column slice of cat's gradient), as in NCF.
    eu_t, ei_t = torch.nn.Embedding(50, 8), torch.nn.Embedding(30, 8)
    eu, ei = nn.Embedding(50, 8), nn.Embedding(30, 8)
    copy_params(eu, eu_t)
    copy_params(ei, ei_t)
    u, i = torch.randint(0, 50, (64,)), torch.randint(0, 30, (64,))
    proj = torch.randn(16, 3)
    yt = torch.cat([eu_t(u), ei_t(i)], dim=1) @ proj
    yo = fc.cat([eu(from_torch(u)), ei(from_torch(i))], dim=1) @ from_torch(proj)
    assert_close(yo, yt, rtol=1e-5, atol=1e-6)
    yt.square().sum().backward()
    yo.square().sum().backward()
    assert_close(eu.weight.grad, eu_t.weight.grad, rtol=1e-5, atol=1e-5)
    assert_close(ei.weight.grad, ei_t.weight.grad, rtol=1e-5, atol=1e-5)


def test_embedding_errors():
    e = nn.Embedding(10, 3)
    with pytest.raises(TypeError, match=r"\[embedding\] input must hold integer indices.*float32"):
        e(fc.tensor([1.0, 2.0]))
    raises_when_run(IndexError, "index 10 is out of range for an embedding table of 10 rows", e, fc.tensor([[1, 10]]))
    with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(10, 3, padding_idx=10)
    with pytest.raises(ValueError, match="2-dimensional"):
        nn.Embedding.from_pretrained(fc.randn(3))
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.Embedding(10, 3, sparse=True)


# ---- embedding bag ----
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_bag_values_and_gradients(mode, padding_idx):
    w = torch.randn(12, 5, dtype=torch.float64)
    idx = torch.randint(0, 12, (20,))
    idx[2] = 3
    offsets = torch.tensor([0, 3, 3, 9, 15])
    wo, wt = _pair(w)
    kw = dict(mode=mode, padding_idx=padding_idx)
    yo = F.embedding_bag(from_torch(idx), wo, from_torch(offsets), **kw)
    yt = torch.nn.functional.embedding_bag(idx, wt, offsets, **kw)
    assert_close(yo, yt, rtol=1e-10, atol=1e-12)
    _backward_both(yo, yt)
    _grads_match([(wo, wt)], 1e-9)


def test_embedding_bag_per_sample_weights_2d_input_and_gradcheck():
    w = torch.randn(9, 4, dtype=torch.float64)
    idx = torch.randint(0, 9, (3, 4))
    psw = torch.rand(3, 4, dtype=torch.float64)
    wo, wt = _pair(w)
    po, pt = _pair(psw)
    yo = F.embedding_bag(from_torch(idx), wo, mode="sum", per_sample_weights=po)
    yt = torch.nn.functional.embedding_bag(idx, wt, mode="sum", per_sample_weights=pt)
    assert_close(yo, yt, rtol=1e-10, atol=1e-12)
    _backward_both(yo, yt)
    _grads_match([(wo, wt), (po, pt)], 1e-9)
    w2 = fc.randn(9, 4, dtype=fc.float64).requires_grad_(True)
    p2 = fc.rand(3, 4, dtype=fc.float64).requires_grad_(True)
    ii = from_torch(idx)
    assert fa.gradcheck(lambda w, p: F.embedding_bag(ii, w, mode="sum", per_sample_weights=p), (w2, p2))
    assert fa.gradcheck(lambda w: F.embedding_bag(ii, w, mode="mean"), (w2,))


def test_embedding_bag_module_and_errors():
    ours, theirs = (
        nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True),
        torch.nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True),
    )
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
    copy_params(ours, theirs)
    idx, off = torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 2, 6])
    assert_close(ours(from_torch(idx), from_torch(off)), theirs(idx, off))
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        ours(fc.tensor([1, 2]), fc.tensor([1, 2]))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        ours(fc.tensor([[1, 2]]), fc.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        ours(fc.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(fc.tensor([[1, 2]]), fc.randn(5, 2), per_sample_weights=fc.ones(1, 2))
    with pytest.raises(TypeError, match="integer indices"):
        ours(fc.tensor([1.0]), fc.tensor([0]))


# ---- dropout ----
def test_dropout_fused_gradient_and_inplace():
    x = fc.randn(35, 20, 256).requires_grad_(True)
    y = F.dropout(x, 0.3)
    assert y.grad_fn.name() == "NativeDropoutBackward0"
    y.sum().backward()
    kept = to_numpy(y) != 0
    np.testing.assert_allclose(to_numpy(x.grad), np.where(kept, 1 / 0.7, 0), rtol=1e-6)
    z = fc.randn(100, 50)
    before = to_numpy(z).copy()
    out = F.dropout(z, 0.5, inplace=True)
    assert out is z
    v = to_numpy(z)
    np.testing.assert_allclose(v[v != 0], before[v != 0] * 2, rtol=1e-6)
    assert F.dropout(z, 0.5, training=False) is z


def test_dropout_gradcheck_with_fixed_seed():
    x = fc.randn(4, 5, dtype=fc.float64).requires_grad_(True)

    def fn(x):
        fc.manual_seed(7)
        return F.dropout(x, 0.4)

    assert fa.gradcheck(fn, (x,))

    def fn2(x):
        fc.manual_seed(7)
        return F.dropout2d(x.reshape(2, 2, 5, 1), 0.4)

    assert fa.gradcheck(fn2, (x,))


@pytest.mark.parametrize(
    "cls, shape",
    [
        (nn.Dropout1d, (8, 16, 10)),
        (nn.Dropout1d, (16, 10)),
        (nn.Dropout2d, (8, 16, 4, 4)),
        (nn.Dropout3d, (4, 8, 2, 2, 2)),
    ],
)
def test_channel_dropout_modules(cls, shape):
    d = cls(0.5)
    x = fc.randn(*shape).requires_grad_(True)
    y = d(x)
    yv, xv = to_numpy(y), to_numpy(x)
    assert yv.shape == shape
    flat_y = yv.reshape(-1, int(np.prod(shape[-(len(shape) - 2 if len(shape) > 2 else 1) :])))
    flat_x = xv.reshape(flat_y.shape)
    for ry, rx in zip(flat_y, flat_x, strict=True):
        assert (ry == 0).all() or np.allclose(ry, rx * 2)
    y.sum().backward()
    assert ((to_numpy(x.grad) == 0) == (yv == 0)).all()
    d.eval()
    if len(shape) > 2:
        assert d(x) is x
    assert (to_numpy(d(x)) == xv).all()
    assert repr(d) == repr(getattr(torch.nn, cls.__name__)(0.5))


def test_dropout2d_warns_like_torch():
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        F.dropout2d(fc.randn(2, 3, 4))
    with pytest.raises(ValueError, match="Expected 2D or 3D input"):
        F.dropout1d(fc.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout2d(-0.5)
