"""fb.func.replace_all_batch_norm_modules_ against torch.func's on the same models."""

from __future__ import annotations

import doctest

import flambeau as fb
import flambeau.func._batch_norm_replacement
import numpy as np
import pytest
import torch
from func_testing import close


def _block(lib):
    """A model with batch norms at two depths (one with momentum=None) and an instance norm that tracks."""

    class Block(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = lib.nn.Conv2d(3, 4, 3)
            self.bn = lib.nn.BatchNorm2d(4, momentum=None)
            self.inner = lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(16, 5), lib.nn.BatchNorm1d(5))
            self.instance = lib.nn.InstanceNorm2d(4, track_running_stats=True)

        def forward(self, x):
            return self.inner(lib.relu(self.bn(self.instance(self.conv(x)))))

    return Block()


def _models():
    """The same model in flambeau and torch (torch's state loaded from flambeau's)."""
    fb.manual_seed(0)
    ours = _block(fb).double()
    theirs = _block(torch).double()
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def _train_step(model, lib, x):
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    out = model(x)
    (out * out).mean().backward()
    optimizer.step()
    return out


def test_replaced_model_trains_and_evaluates_as_torch():
    ours, theirs = _models()
    assert fb.func.replace_all_batch_norm_modules_(ours) is ours
    assert torch.func.replace_all_batch_norm_modules_(theirs) is theirs
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    for name in ("bn", "inner.2"):
        mod, tmod = ours.get_submodule(name), theirs.get_submodule(name)
        assert mod.track_running_stats is tmod.track_running_stats is False
        assert mod.running_mean is mod.running_var is mod.num_batches_tracked is None
    # instance norms are not batch norms: their running statistics stay, as in torch
    assert ours.instance.track_running_stats and ours.instance.running_mean is not None

    a = np.random.default_rng(0).standard_normal((6, 3, 4, 4))
    x, tx = fb.tensor(a), torch.tensor(a)
    close(_train_step(ours, fb, x), _train_step(theirs, torch, tx))
    close(_train_step(ours, fb, x), _train_step(theirs, torch, tx))
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        close(ours.state_dict()[k], v)
    # in eval mode a layer with no running statistics normalizes with the batch's, as in torch
    ours.eval()
    theirs.eval()
    with fb.no_grad(), torch.no_grad():
        close(ours(x), theirs(tx))


def test_root_itself_subclasses_and_every_batch_norm_kind_are_replaced():
    class MyNorm(fb.nn.BatchNorm1d):
        pass

    root = fb.nn.BatchNorm3d(2)
    root.add_module("sync", fb.nn.SyncBatchNorm(2))
    root.add_module("mine", MyNorm(2))
    root.add_module("lazy", fb.nn.LazyBatchNorm1d())
    root.add_module("untracked", fb.nn.BatchNorm1d(2, track_running_stats=False))
    fb.func.replace_all_batch_norm_modules_(root)
    for module in root.modules():
        assert module.track_running_stats is False
        assert module.running_mean is None and module.running_var is None and module.num_batches_tracked is None
    assert not [k for k in root.state_dict() if "running" in k or "num_batches" in k]
    x = fb.randn(3, 2)
    assert fb.func.replace_all_batch_norm_modules_(root.mine) is root.mine
    root.mine(x)
    root.lazy(x)  # the lazy layer still materializes its parameters
    assert tuple(root.lazy.weight.shape) == (2,) and root.lazy.running_mean is None


def test_replaced_model_runs_under_vmap_as_torch():
    fb.manual_seed(1)
    ours = fb.nn.Sequential(fb.nn.Linear(3, 4), fb.nn.BatchNorm1d(4)).double()
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).double()
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in ours.state_dict().items()})
    fb.func.replace_all_batch_norm_modules_(ours)
    torch.func.replace_all_batch_norm_modules_(theirs)
    a = np.random.default_rng(1).standard_normal((2, 5, 3))
    close(fb.func.vmap(ours)(fb.tensor(a)), torch.func.vmap(theirs)(torch.tensor(a)))


def test_replace_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match=r"\[func.replace_all_batch_norm_modules_\] root must be an nn.Module, got int"):
        fb.func.replace_all_batch_norm_modules_(3)


def test_batch_norm_replacement_docstring_examples_run():
    result = doctest.testmod(flambeau.func._batch_norm_replacement, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
