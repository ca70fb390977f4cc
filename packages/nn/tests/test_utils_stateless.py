"""nn.utils.stateless.functional_call against PyTorch: replaced parameters and buffers, gradients to the given
tensors, the module left as it was, tied weights, strict mode."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
from nn_testing import close, copy_params, fb, th

call = nn.utils.stateless.functional_call


def _pair():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2)).double()
    ours = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).double()
    copy_params(ours, theirs)
    return ours, theirs


def test_functional_call_matches_torch_and_restores():
    ours, theirs = _pair()
    rng = np.random.default_rng(0)
    new = {"0.weight": rng.standard_normal((4, 3)), "2.bias": rng.standard_normal(2), "1.running_mean": np.ones(4)}
    fnew = {k: fb(v, requires_grad=k != "1.running_mean") for k, v in new.items()}
    tnew = {k: th(v, requires_grad=k != "1.running_mean") for k, v in new.items()}
    x = rng.standard_normal((5, 3))
    # The buffers not replaced (running_var, num_batches_tracked) update in training, as in PyTorch.
    kept = ("0.weight", "0.bias", "2.weight", "2.bias", "1.weight", "1.running_mean")
    before = {k: v.tolist() for k, v in ours.state_dict().items() if k in kept}
    for training in (True, False):
        ours.train(training)
        theirs.train(training)
        yo = call(ours, fnew, (fb(x),))
        yt = torch.func.functional_call(theirs, tnew, (th(x),))
        close(yo, yt, 1e-12, 1e-12)
    (yo**2).sum().backward()
    (yt**2).sum().backward()
    close(fnew["0.weight"].grad, tnew["0.weight"].grad, 1e-12, 1e-12)
    close(fnew["2.bias"].grad, tnew["2.bias"].grad, 1e-12, 1e-12)
    assert ours[0].weight.grad is None  # the module's own parameter was not used
    close(fnew["1.running_mean"], tnew["1.running_mean"], 1e-12, 1e-12)  # updated in training, as PyTorch
    after = {k: v.tolist() for k, v in ours.state_dict().items() if k in kept}
    assert before == after and isinstance(ours[0].weight, nn.Parameter)


def test_tied_weights_and_strict():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    w = fc.eye(2) * 2
    x = fc.ones(1, 2)
    assert call(m, {"a.weight": w}, x).tolist() == [[4.0, 4.0]]
    assert call(m, {"a.weight": w}, x, tie_weights=False).tolist() == ((x @ w.T) @ m.a.weight.detach().T).tolist()
    with pytest.raises(FlambeauError, match="which are tied"):
        call(m, {"a.weight": w, "b.weight": fc.eye(2)}, x)
    with pytest.raises(FlambeauError, match="Missing key\\(s\\): 'bias'"):
        call(nn.Linear(2, 2), {"weight": fc.eye(2)}, x, strict=True)
    with pytest.raises(FlambeauError, match="Unexpected key\\(s\\): 'c'"):
        call(nn.Linear(2, 2), {"weight": fc.eye(2), "bias": fc.zeros(2), "c": fc.zeros(1)}, x, strict=True)
    with pytest.raises(AttributeError, match=r"\[functional_call\] Linear has no submodule 'sub'"):
        call(nn.Linear(2, 2), {"sub.weight": fc.eye(2)}, x)
    with fa.no_grad():
        assert call(nn.Linear(2, 1), {"weight": fc.ones(1, 2), "bias": fc.zeros(1)}, args=x).tolist() == [[2.0]]
