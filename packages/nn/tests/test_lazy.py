"""The Lazy* layers (LazyLinear, LazyConv*/LazyConvTranspose* 1d-3d, LazyBatchNorm*, LazyInstanceNorm*) against
PyTorch's: placeholders before the first forward, the eager class, shapes, init statistics and state_dict keys
after it, values and gradients with copied weights, loading a checkpoint into a lazy model, and errors."""

from __future__ import annotations

import math

import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from nn_testing import compare_forward_backward, copy_params, from_torch, to_numpy

CASES = [
    ("LazyLinear", (5,), {}, (3, 7)),
    ("LazyLinear", (2,), dict(bias=False), (2, 3, 4)),
    ("LazyConv1d", (4, 3), dict(stride=2, padding=1), (2, 3, 9)),
    ("LazyConv2d", (6, 3), dict(groups=2, padding="same"), (2, 4, 6, 5)),
    ("LazyConv3d", (4, 2), dict(bias=False), (1, 3, 4, 4, 3)),
    ("LazyConv2d", (4, 3), {}, (3, 6, 6)),  # unbatched
    ("LazyConvTranspose1d", (4, 3), dict(stride=2, output_padding=1), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3), dict(stride=2, padding=1, groups=2), (2, 6, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), dict(stride=2), (1, 3, 2, 3, 2)),
    ("LazyBatchNorm1d", (), {}, (4, 3, 5)),
    ("LazyBatchNorm2d", (), dict(momentum=0.3), (4, 3, 5, 2)),
    ("LazyBatchNorm3d", (), dict(affine=False), (2, 3, 2, 3, 2)),
    ("LazyInstanceNorm1d", (), dict(affine=False, track_running_stats=False), (2, 3, 6)),
    ("LazyInstanceNorm2d", (), dict(track_running_stats=False), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {}, (2, 3, 2, 3, 4)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", CASES)
def test_lazy_matches_torch(name, args, kwargs, shape):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert isinstance(ours.weight, nn.UninitializedParameter) == isinstance(
        theirs.weight, torch.nn.UninitializedParameter
    )
    x = torch.randn(*shape)
    ours(from_torch(x))
    theirs(x)
    assert type(ours).__name__ == type(theirs).__name__
    assert not ours.has_uninitialized_params() if hasattr(ours, "has_uninitialized_params") else True
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert tuple(ours.state_dict()[k].shape) == tuple(v.shape), k
    assert repr(ours) == repr(theirs)
    with torch.no_grad():
        for p in theirs.parameters():
            p.normal_()
    copy_params(ours, theirs)
    for k, b in theirs.named_buffers():
        getattr(ours, k).copy_(from_torch(b))
    compare_forward_backward(ours, theirs, [x], rtol=1e-4, atol=1e-5)


def test_init_statistics_after_materialization():
    m = nn.LazyLinear(300)
    m(fc.ones(1, 48))
    bound = 1 / math.sqrt(48)
    w = to_numpy(m.weight)
    assert 0.95 * bound < abs(w).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    c = nn.LazyConv2d(64, 3, groups=2)
    c(fc.ones(1, 8, 5, 5))
    assert abs(to_numpy(c.weight)).max() <= 1 / math.sqrt(4 * 9)
    bn = nn.LazyBatchNorm2d()
    bn.eval()
    bn(fc.ones(2, 5, 3, 3))
    assert bn.weight.tolist() == [1.0] * 5 and bn.running_var.tolist() == [1.0] * 5


def test_load_state_dict_materializes_nested_lazy_modules():
    src = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(), torch.nn.Linear(16, 2)
    )
    dst = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(2))
    dst.load_state_dict({k: from_torch(v) for k, v in src.state_dict().items()})
    assert [type(m).__name__ for m in dst] == ["Conv2d", "BatchNorm2d", "Flatten", "Linear"]
    assert dst[0].in_channels == 3 and dst[3].in_features == 16 and dst[1].num_features == 4
    src.eval()
    dst.eval()
    compare_forward_backward(dst, src, [torch.randn(2, 3, 4, 4)], rtol=1e-4, atol=1e-5)


def test_optimizer_after_the_dry_run_trains():
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
    x, y = fc.randn(16, 3), fc.randn(16, 1)
    model(x)  # the dry run: materialise first, then hand the real parameters to the optimizer
    opt = nn.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]


def test_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[LazyConv2d\] in_channels \(3\) must be divisible by groups \(2\)"):
        nn.LazyConv2d(4, 3, groups=2)(fc.ones(1, 3, 5, 5))
    with pytest.raises(fc.FlambeauError, match=r"\[LazyConv3d\] expected a 4-D or 5-D input"):
        nn.LazyConv3d(4, 3)(fc.ones(1, 3, 5))
    with pytest.raises(TypeError, match=r"\[LazyLinear\] the first forward needs a Tensor"):
        nn.LazyLinear(3)([1.0, 2.0])
