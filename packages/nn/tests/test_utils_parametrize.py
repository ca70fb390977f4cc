"""nn.utils.parametrize, nn.utils.parametrizations (orthogonal, weight_norm, spectral_norm) and the hook-based
weight_norm / spectral_norm against PyTorch: parametrized values and the gradients reaching the originals,
state_dict keys, caching, removal, right_inverse, and the error paths."""

from __future__ import annotations

import copy
import warnings

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
from nn_testing import close, copy_params, fb, from_torch, npy, th

P = nn.utils.parametrize
TP = torch.nn.utils.parametrize


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class TSymmetric(torch.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.s = nn.Parameter(fc.tensor(2.0, dtype=fc.float64))

    def forward(self, x):
        return x * self.s


class TScale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.s = torch.nn.Parameter(torch.tensor(2.0, dtype=torch.float64))

    def forward(self, x):
        return x * self.s


def _linears(n_in, n_out, seed=0):
    torch.manual_seed(seed)
    theirs = torch.nn.Linear(n_in, n_out).double()
    ours = nn.Linear(n_in, n_out).double()
    copy_params(ours, theirs)
    return ours, theirs


def _compare_forward_backward(ours, theirs, n_in, rtol=1e-10, atol=1e-12):
    x = np.random.default_rng(0).standard_normal((5, n_in))
    yo, yt = ours(fb(x)), theirs(th(x))
    close(yo, yt, rtol, atol, "output")
    (yo**2).sum().backward()
    (yt**2).sum().backward()
    their_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        close(p.grad, their_params[name].grad, rtol * 10, atol * 10, f"grad of {name}")


def test_register_chain_state_dict_and_gradients():
    ours, theirs = _linears(3, 3)
    P.register_parametrization(ours, "weight", Symmetric())
    TP.register_parametrization(theirs, "weight", TSymmetric())
    P.register_parametrization(ours, "weight", Scale())
    TP.register_parametrization(theirs, "weight", TScale())
    assert type(ours).__name__ == "ParametrizedLinear" and isinstance(ours, nn.Linear)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    close(ours.parametrizations.weight.original, theirs.parametrizations.weight.original, 0, 0)
    close(ours.weight, theirs.weight, 0, 0)
    _compare_forward_backward(ours, theirs, 3)
    assert P.is_parametrized(ours) and P.is_parametrized(ours, "weight") and not P.is_parametrized(ours, "bias")
    assert P.type_before_parametrizations(ours) is nn.Linear


def test_assignment_calls_right_inverse_and_keeps_the_original_object():
    ours, theirs = _linears(3, 3)
    P.register_parametrization(ours, "weight", Symmetric())
    TP.register_parametrization(theirs, "weight", TSymmetric())
    original = ours.parametrizations.weight.original
    a = np.random.default_rng(1).standard_normal((3, 3))
    a = a + a.T
    ours.weight = fb(a)
    with torch.no_grad():
        theirs.weight = th(a)
    assert ours.parametrizations.weight.original is original
    close(ours.weight, theirs.weight, 1e-12, 0)
    close(original, theirs.parametrizations.weight.original, 1e-12, 0)


def test_cached():
    ours, _ = _linears(3, 3)
    P.register_parametrization(ours, "weight", Symmetric())
    assert ours.weight is not ours.weight
    with P.cached():
        w = ours.weight
        assert ours.weight is w
        with P.cached():
            assert ours.weight is w
    assert ours.weight is not w


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    ours, theirs = _linears(3, 3)
    P.register_parametrization(ours, "weight", Symmetric())
    TP.register_parametrization(theirs, "weight", TSymmetric())
    original = ours.parametrizations.weight.original
    P.remove_parametrizations(ours, "weight", leave_parametrized=leave)
    TP.remove_parametrizations(theirs, "weight", leave_parametrized=leave)
    assert type(ours) is nn.Linear and not hasattr(ours, "parametrizations")
    assert ours.weight is original and isinstance(ours.weight, nn.Parameter)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight"]
    close(ours.weight, theirs.weight, 0, 0)


def test_parametrize_errors_and_copy():
    ours, _ = _linears(3, 4)
    with pytest.raises(FlambeauError, match="does not have a parameter, a buffer, or a parametrized element"):
        P.register_parametrization(ours, "nope", Symmetric())

    class Drop(nn.Module):
        def forward(self, x):
            return x[:1]

    with pytest.raises(FlambeauError, match="may not change the shape"):
        P.register_parametrization(ours, "weight", Drop())
    assert "weight" in ours._parameters  # left as it was
    P.register_parametrization(ours, "weight", Drop(), unsafe=True)
    assert tuple(ours.weight.shape) == (1, 3)
    with pytest.raises(FlambeauError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(ours, "bias")
    clone = copy.deepcopy(ours)
    close(clone.weight, torch.tensor(npy(ours.weight)), 0, 0)
    assert clone.parametrizations.weight.original is not ours.parametrizations.weight.original


# ---- parametrizations.orthogonal ----


@pytest.mark.parametrize("trivialization", [True, False])
@pytest.mark.parametrize("orth_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_matches_torch(shape, orth_map, trivialization):
    ours, theirs = _linears(shape[1], shape[0], seed=3)
    nn.utils.parametrizations.orthogonal(ours, orthogonal_map=orth_map, use_trivialization=trivialization)
    torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map=orth_map, use_trivialization=trivialization)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        if key.endswith("base") and shape[0] != shape[1]:
            # A non-square weight is completed to a square base with random columns: only its own ones match.
            k = min(shape)
            value, mine = value[:, :k], ours.state_dict()[key][:, :k]
        else:
            mine = ours.state_dict()[key]
        close(mine, value, 1e-9, 1e-10, key)
    if trivialization and shape[0] != shape[1]:
        _copy_buffers(ours, theirs)  # the same random completion, so that the gradients can match
    q = npy(ours.weight)
    small = min(shape)
    gram = q @ q.T if shape[0] < shape[1] else q.T @ q
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)
    _compare_forward_backward(ours, theirs, shape[1], rtol=1e-8, atol=1e-10)


def test_orthogonal_load_state_dict_and_errors():
    ours, theirs = _linears(3, 3)
    nn.utils.parametrizations.orthogonal(ours)
    torch.nn.utils.parametrizations.orthogonal(theirs)
    with torch.no_grad():
        theirs.parametrizations.weight.original.add_(0.1)
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    close(ours.weight, theirs.weight, 1e-10, 1e-12)
    with pytest.raises(FlambeauError, match="Expected a matrix or batch of matrices"):
        nn.utils.parametrizations.orthogonal(nn.Linear(2, 2), "bias")
    with pytest.raises(FlambeauError, match='orthogonal_map has to be one of "matrix_exp"'):
        nn.utils.parametrizations.orthogonal(nn.Linear(2, 2), orthogonal_map="svd")
    with pytest.raises(FlambeauError, match="has no parameter or buffer with name 'w'"):
        nn.utils.parametrizations.orthogonal(nn.Linear(2, 2), "w")
    m = nn.Linear(3, 3)
    nn.utils.parametrizations.orthogonal(m, use_trivialization=False)
    with pytest.raises(NotImplementedError, match="not possible to assign to the matrix exponential"):
        m.weight = fc.eye(3)


# ---- parametrizations.weight_norm / spectral_norm ----


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_parametrization(dim):
    ours, theirs = _linears(4, 3)
    nn.utils.parametrizations.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        close(ours.state_dict()[key], value, 1e-12, 1e-12, key)
    _compare_forward_backward(ours, theirs, 4)
    nn.utils.parametrize.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    close(ours.weight, theirs.weight, 1e-12, 1e-12)


def _copy_buffers(ours, theirs):
    with fa.no_grad():
        for name, b in ours.named_buffers():
            b.copy_(from_torch(dict(theirs.named_buffers())[name]))


@pytest.mark.parametrize("module", ["linear", "conv", "conv_transpose"])
def test_spectral_norm_parametrization(module):
    torch.manual_seed(0)
    if module == "linear":
        ours, theirs = _linears(5, 4)
        x = np.random.default_rng(0).standard_normal((2, 5))
    else:
        cls, tcls = (nn.Conv2d, torch.nn.Conv2d) if module == "conv" else (nn.ConvTranspose2d, torch.nn.ConvTranspose2d)
        theirs = tcls(3, 2, 3).double()
        ours = cls(3, 2, 3).double()
        copy_params(ours, theirs)
        x = np.random.default_rng(0).standard_normal((1, 3, 5, 5))
    nn.utils.parametrizations.spectral_norm(ours, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(theirs, n_power_iterations=2)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_buffers(ours, theirs)
    for training in (True, True, False):
        ours.train(training)
        theirs.train(training)
        yo, yt = ours(fb(x)), theirs(th(x))
        close(yo, yt, 1e-9, 1e-11)
        for name, b in theirs.named_buffers():
            close(dict(ours.named_buffers())[name], b, 1e-9, 1e-11, name)
    (yo**2).sum().backward()
    (yt**2).sum().backward()
    close(ours.parametrizations.weight.original.grad, theirs.parametrizations.weight.original.grad, 1e-8, 1e-10)
    # The power method converges to the top singular value: sigma(weight) is 1.
    w = npy(ours.weight)
    w = np.moveaxis(w, 1, 0) if module == "conv_transpose" else w
    assert abs(np.linalg.svd(w.reshape(w.shape[0], -1), compute_uv=False)[0] - 1) < 0.2


def test_spectral_norm_parametrization_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), dim=3)
    with pytest.raises(FlambeauError, match="Expected n_power_iterations to be positive"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(FlambeauError, match="has no parameter or buffer with name 'w'"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), "w")
    m = nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), "bias")
    np.testing.assert_allclose(np.linalg.norm(npy(m.bias)), 1.0, rtol=1e-6)


# ---- hook-based weight_norm / spectral_norm ----


@pytest.mark.parametrize("dim", [0, 1, None])
def test_hook_weight_norm(dim):
    ours, theirs = _linears(4, 3)
    with pytest.warns(FutureWarning, match="deprecated"):
        nn.utils.weight_norm(ours, dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        close(ours.state_dict()[key], value, 1e-12, 1e-12, key)
    _compare_forward_backward(ours, theirs, 4)
    with pytest.raises(FlambeauError, match="Cannot register two weight_norm hooks"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nn.utils.weight_norm(ours)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    close(ours.weight, theirs.weight, 1e-12, 1e-12)
    with pytest.raises(FlambeauError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(ours)


def test_hook_spectral_norm():
    ours, theirs = _linears(5, 4)
    nn.utils.spectral_norm(ours)
    torch.nn.utils.spectral_norm(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _copy_buffers(ours, theirs)
    x = np.random.default_rng(0).standard_normal((2, 5))
    for training in (True, True, False):
        ours.train(training)
        theirs.train(training)
        yo, yt = ours(fb(x)), theirs(th(x))
        close(yo, yt, 1e-9, 1e-11)
        close(ours.weight_u, theirs.weight_u, 1e-9, 1e-11)
    (yo**2).sum().backward()
    (yt**2).sum().backward()
    close(ours.weight_orig.grad, theirs.weight_orig.grad, 1e-8, 1e-10)
    with pytest.raises(FlambeauError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(ours)
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    close(ours.weight, theirs.weight, 1e-9, 1e-11)
    with pytest.raises(FlambeauError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(ours)
    with pytest.raises(FlambeauError, match="Expected n_power_iterations to be positive"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
