"""optim.swa_utils against torch.optim.swa_utils: averaged parameters and buffers (SWA, EMA, custom averages),
update_bn on a model with BatchNorm, the SWALR lr sequence and state dict, bad input."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
import torch.optim.swa_utils as tswa
from flambeau_nn.optim import swa_utils as fswa
from nn_testing import assert_close, copy_params, from_torch


def _models():
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.BatchNorm1d(5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    ours = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 2))
    copy_params(ours, theirs)
    return ours, theirs


def _perturb(ours, theirs, step):
    """Gives both models the same new weights and BatchNorm statistics (as training would)."""
    g = torch.Generator().manual_seed(10 + step)
    with torch.no_grad(), fa.no_grad():
        for (_, p_o), (_, p_t) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
            p_t.add_(torch.randn(p_t.shape, generator=g))
            p_o.copy_(from_torch(p_t))
        x = torch.randn(8, 3, generator=g)
        theirs.train()
        ours.train()
        theirs(x)
        ours(from_torch(x))


def _assert_same_model(ours, theirs, rtol=1e-6):
    their_state = theirs.state_dict()
    for name, value in ours.state_dict().items():
        assert_close(value, their_state[name], rtol=rtol, atol=1e-6)


AVERAGES = {
    "swa": (dict(), dict()),
    "ema_multi": (dict(multi_avg_fn=fswa.get_ema_multi_avg_fn(0.9)), dict(multi_avg_fn=tswa.get_ema_multi_avg_fn(0.9))),
    "ema": (dict(avg_fn=fswa.get_ema_avg_fn(0.8)), dict(avg_fn=tswa.get_ema_avg_fn(0.8))),
    "swa_multi": (dict(multi_avg_fn=fswa.get_swa_multi_avg_fn()), dict(multi_avg_fn=tswa.get_swa_multi_avg_fn())),
    "swa_fn": (dict(avg_fn=fswa.get_swa_avg_fn()), dict(avg_fn=tswa.get_swa_avg_fn())),
}


# torch's get_swa_multi_avg_fn fails on integer buffers (num_batches_tracked) with use_buffers: not compared.
@pytest.mark.parametrize(
    "kind,use_buffers", [(k, b) for k in AVERAGES for b in (False, True) if (k, b) != ("swa_multi", True)]
)
def test_averaged_model_matches_torch(kind, use_buffers):
    ours, theirs = _models()
    kw_o, kw_t = AVERAGES[kind]
    avg_o = fswa.AveragedModel(ours, use_buffers=use_buffers, **kw_o)
    avg_t = tswa.AveragedModel(theirs, use_buffers=use_buffers, **kw_t)
    assert sorted(avg_o.state_dict()) == sorted(avg_t.state_dict())
    for step in range(6):
        _perturb(ours, theirs, step)
        avg_o.update_parameters(ours)
        avg_t.update_parameters(theirs)
        _assert_same_model(avg_o, avg_t)
    assert avg_o.n_averaged.item() == avg_t.n_averaged.item() == 6
    # The averaged model runs like the torch one.
    x = torch.randn(4, 3)
    avg_o.eval()
    avg_t.eval()
    assert_close(avg_o(from_torch(x)), avg_t(x).detach(), rtol=1e-5)


def test_swa_multi_avg_fn_averages_integer_buffers_by_truncation():
    avg, cur = [fc.tensor(3, dtype=fc.int64), fc.tensor([1.0])], [fc.tensor(10, dtype=fc.int64), fc.tensor([4.0])]
    fswa.get_swa_multi_avg_fn()(avg, cur, fc.tensor(2, dtype=fc.int64))
    assert avg[0].item() == 5 and avg[0].dtype == fc.int64  # 3 + 7 / 3 = 5.33
    assert avg[1].tolist() == [2.0]


def test_averaged_model_is_a_copy_and_rejects_two_average_functions():
    ours, _ = _models()
    avg = fswa.AveragedModel(ours)
    assert avg.module[0].weight is not ours[0].weight
    assert avg.n_averaged.dtype == fc.int64
    with pytest.raises(ValueError, match=r"\[AveragedModel\] Only one of avg_fn and multi_avg_fn"):
        fswa.AveragedModel(ours, avg_fn=fswa.get_swa_avg_fn(), multi_avg_fn=fswa.get_swa_multi_avg_fn())


@pytest.mark.parametrize("decay", [-0.1, 1.5])
def test_bad_decay(decay):
    for fn in (fswa.get_ema_avg_fn, fswa.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=f"Invalid decay value {decay}"):
            fn(decay)


def test_update_bn_matches_torch():
    ours, theirs = _models()
    for step in range(3):
        _perturb(ours, theirs, step)
    g = torch.Generator().manual_seed(5)
    batches = [(torch.randn(6, 3, generator=g) * 2 + 1, torch.zeros(6)) for _ in range(5)]
    theirs.eval()
    ours.eval()
    tswa.update_bn(batches, theirs)
    fswa.update_bn([(from_torch(x), from_torch(y)) for x, y in batches], ours)
    _assert_same_model(ours, theirs, rtol=1e-5)
    assert not ours.training and ours[1].momentum == theirs[1].momentum == 0.1
    assert ours[1].num_batches_tracked.item() == theirs[1].num_batches_tracked.item() == 5

    # Plain tensors as batches, and a model without BatchNorm is left alone.
    tswa.update_bn([x for x, _ in batches[:2]], theirs)
    fswa.update_bn([from_torch(x) for x, _ in batches[:2]], ours)
    _assert_same_model(ours, theirs, rtol=1e-5)
    lin = nn.Linear(2, 2)
    before = lin.weight.tolist()
    fswa.update_bn([fc.ones(3, 2)], lin)
    assert lin.weight.tolist() == before


def test_swa_on_an_averaged_model_then_update_bn():
    ours, theirs = _models()
    avg_o, avg_t = fswa.AveragedModel(ours), tswa.AveragedModel(theirs)
    for step in range(4):
        _perturb(ours, theirs, step)
        avg_o.update_parameters(ours)
        avg_t.update_parameters(theirs)
    batches = [torch.randn(5, 3) for _ in range(3)]
    tswa.update_bn(batches, avg_t)
    fswa.update_bn([from_torch(x) for x in batches], avg_o)
    _assert_same_model(avg_o, avg_t, rtol=1e-5)


SWALR_CASES = [
    dict(swa_lr=0.01),
    dict(swa_lr=[0.02, 0.005], anneal_epochs=4, anneal_strategy="linear"),
    dict(swa_lr=0.03, anneal_epochs=0),
    dict(swa_lr=0.2, anneal_epochs=7, anneal_strategy="cos"),
]


@pytest.mark.parametrize("kwargs", SWALR_CASES)
def test_swalr_matches_torch_with_state_dict_round_trip(kwargs):
    ps_o, ps_t = [nn.Parameter(fc.zeros(1)) for _ in range(2)], [torch.nn.Parameter(torch.zeros(1)) for _ in range(2)]
    opt_o = nn.optim.SGD([{"params": [ps_o[0]]}, {"params": [ps_o[1]], "lr": 0.05}], lr=0.1)
    opt_t = torch.optim.SGD([{"params": [ps_t[0]]}, {"params": [ps_t[1]], "lr": 0.05}], lr=0.1)
    s_o, s_t = fswa.SWALR(opt_o, **kwargs), tswa.SWALR(opt_t, **kwargs)
    for epoch in range(20):
        assert s_o.get_last_lr() == pytest.approx(s_t.get_last_lr(), rel=1e-13), epoch
        if epoch == 6:
            sd = s_t.state_dict()
            assert sorted(s_o.state_dict()) == sorted(sd)
            s_o.load_state_dict(dict(sd))
        opt_o.step()
        opt_t.step()
        s_o.step()
        s_t.step()


def test_swalr_bad_input():
    opt = nn.optim.SGD([nn.Parameter(fc.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match=r"\[SWALR\] anneal_strategy must be one of 'cos' or 'linear'"):
        fswa.SWALR(opt, swa_lr=0.01, anneal_strategy="step")
    with pytest.raises(ValueError, match=r"\[SWALR\] anneal_epochs must be equal or greater than 0, got -1"):
        fswa.SWALR(opt, swa_lr=0.01, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        fswa.SWALR(opt, swa_lr=[0.01, 0.02])
    assert set(tswa.__all__) <= set(dir(fswa))


def test_docstring_examples():
    import doctest

    assert doctest.testmod(fswa, verbose=False).failed == 0
