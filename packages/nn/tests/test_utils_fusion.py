"""nn.utils fusion (conv/linear + eval batch norm), skip_init and the conv weight memory-format conversion,
against PyTorch on the same weights and statistics."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
from nn_testing import close, copy_params, fb, from_torch, th


def _bn_pair(cls, tcls, n, seed):
    torch.manual_seed(seed)
    theirs = tcls(n).double()
    with torch.no_grad():
        theirs.running_mean.normal_()
        theirs.running_var.uniform_(0.5, 2.0)
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = cls(n).double()
    copy_params(ours, theirs)
    with fa.no_grad():
        ours.running_mean.copy_(from_torch(theirs.running_mean))
        ours.running_var.copy_(from_torch(theirs.running_var))
    return ours.eval(), theirs.eval()


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_fuse_conv_bn_eval(transpose, bias):
    torch.manual_seed(1)
    cls, tcls = (nn.ConvTranspose2d, torch.nn.ConvTranspose2d) if transpose else (nn.Conv2d, torch.nn.Conv2d)
    theirs = tcls(3, 4, 3, bias=bias).double().eval()
    ours = cls(3, 4, 3, bias=bias).double().eval()
    copy_params(ours, theirs)
    bn, tbn = _bn_pair(nn.BatchNorm2d, torch.nn.BatchNorm2d, 4, 2)
    fused = nn.utils.fuse_conv_bn_eval(ours, bn, transpose=transpose)
    tfused = torch.nn.utils.fuse_conv_bn_eval(theirs, tbn, transpose=transpose)
    close(fused.weight, tfused.weight, 1e-12, 1e-12)
    close(fused.bias, tfused.bias, 1e-12, 1e-12)
    assert isinstance(fused.weight, nn.Parameter) and fused is not ours
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6))
    close(fused(fb(x)), tbn(theirs(th(x))), 1e-10, 1e-12)


def test_fuse_linear_bn_eval_and_weights():
    torch.manual_seed(3)
    theirs = torch.nn.Linear(5, 4).double().eval()
    ours = nn.Linear(5, 4).double().eval()
    copy_params(ours, theirs)
    bn, tbn = _bn_pair(nn.BatchNorm1d, torch.nn.BatchNorm1d, 4, 4)
    fused = nn.utils.fuse_linear_bn_eval(ours, bn)
    x = np.random.default_rng(1).standard_normal((3, 5))
    close(fused(fb(x)), tbn(theirs(th(x))), 1e-10, 1e-12)
    w, b = nn.utils.fuse_linear_bn_weights(ours.weight, None, bn.running_mean, bn.running_var, 1e-5, bn.weight, bn.bias)
    tw, tb = torch.nn.utils.fuse_linear_bn_weights(
        theirs.weight, None, tbn.running_mean, tbn.running_var, 1e-5, tbn.weight, tbn.bias
    )
    close(w, tw, 1e-12, 1e-12)
    close(b, tb, 1e-12, 1e-12)
    with pytest.raises(FlambeauError, match="Fusion only for eval"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(5, 4), bn)
    with pytest.raises(FlambeauError, match="linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(5, 3).eval(), bn)


def test_skip_init_and_memory_format():
    m = nn.utils.skip_init(nn.Linear, 6, 2, bias=False)
    assert tuple(m.weight.shape) == (2, 6) and m.bias is None

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(FlambeauError, match="Module must support a 'device' arg"):
        nn.utils.skip_init(NoDevice, 3)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Sequential(nn.ConvTranspose2d(3, 2, 2)), nn.Linear(2, 2))
    before = [fc.tensor(p.tolist()) for p in model.parameters()]
    nn.utils.convert_conv2d_weight_memory_format(model, fc.channels_last)
    assert model[0].weight.is_contiguous(memory_format=fc.channels_last)
    assert model[2][0].weight.is_contiguous(memory_format=fc.channels_last)
    for a, b in zip(before, model.parameters(), strict=True):
        assert a.tolist() == b.tolist()
    conv3 = nn.utils.convert_conv3d_weight_memory_format(nn.Conv3d(2, 3, 2), fc.channels_last_3d)
    assert conv3.weight.is_contiguous(memory_format=fc.channels_last_3d)
