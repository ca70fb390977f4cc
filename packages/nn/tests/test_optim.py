"""Optimizers against torch.optim: same init, same gradients, same parameters after several steps."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from nn_testing import assert_close, copy_params, from_torch, to_numpy


def _models():
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    ours = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    copy_params(ours, theirs)
    return ours, theirs


def _batches(n=6):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(8, 4, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(n)]


def _train(ours, theirs, opt_o, opt_t, batches):
    for x, y in batches:
        opt_o.zero_grad()
        opt_t.zero_grad()
        nn.CrossEntropyLoss()(ours(from_torch(x)), from_torch(y)).backward()
        torch.nn.CrossEntropyLoss()(theirs(x), y).backward()
        opt_o.step()
        opt_t.step()


def _assert_same_params(ours, theirs, rtol=1e-5):
    their = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p, their[name], rtol=rtol, atol=1e-6)


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01),
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.05, momentum=0.5, maximize=True),
]


@pytest.mark.parametrize("kwargs", SGD_CASES)
def test_sgd_matches_torch(kwargs):
    ours, theirs = _models()
    _train(
        ours,
        theirs,
        nn.optim.SGD(ours.parameters(), **kwargs),
        torch.optim.SGD(theirs.parameters(), **kwargs),
        _batches(),
    )
    _assert_same_params(ours, theirs)


ADAM_CASES = [
    dict(),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, maximize=True),
]


@pytest.mark.parametrize("kwargs", ADAM_CASES)
def test_adam_matches_torch(kwargs):
    ours, theirs = _models()
    _train(
        ours,
        theirs,
        nn.optim.Adam(ours.parameters(), **kwargs),
        torch.optim.Adam(theirs.parameters(), foreach=False, **kwargs),
        _batches(),
    )
    _assert_same_params(ours, theirs)


@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.01, weight_decay=0.1, amsgrad=True)])
def test_adamw_matches_torch(kwargs):
    ours, theirs = _models()
    _train(
        ours,
        theirs,
        nn.optim.AdamW(ours.parameters(), **kwargs),
        torch.optim.AdamW(theirs.parameters(), foreach=False, **kwargs),
        _batches(),
    )
    _assert_same_params(ours, theirs)


RMSPROP_CASES = [
    dict(),
    dict(lr=0.005, alpha=0.9, momentum=0.8),
    dict(lr=0.005, centered=True, weight_decay=0.05),
    dict(lr=0.005, centered=True, momentum=0.5, maximize=True),
]


@pytest.mark.parametrize("kwargs", RMSPROP_CASES)
def test_rmsprop_matches_torch(kwargs):
    ours, theirs = _models()
    _train(
        ours,
        theirs,
        nn.optim.RMSprop(ours.parameters(), **kwargs),
        torch.optim.RMSprop(theirs.parameters(), foreach=False, **kwargs),
        _batches(),
    )
    _assert_same_params(ours, theirs, rtol=1e-4)


ADAGRAD_CASES = [dict(), dict(lr=0.05, lr_decay=0.1, weight_decay=0.01, initial_accumulator_value=0.2)]


@pytest.mark.parametrize("kwargs", ADAGRAD_CASES)
def test_adagrad_matches_torch(kwargs):
    ours, theirs = _models()
    opt_o = nn.optim.Adagrad(ours.parameters(), **kwargs)
    opt_t = torch.optim.Adagrad(theirs.parameters(), foreach=False, **kwargs)
    assert sorted(opt_o.state_dict()["state"][0]) == sorted(opt_t.state_dict()["state"][0]) == ["step", "sum"]
    _train(ours, theirs, opt_o, opt_t, _batches())
    _assert_same_params(ours, theirs)


def test_param_groups_with_own_hyperparameters_match_torch():
    ours, theirs = _models()
    opt_o = nn.optim.SGD(
        [{"params": ours[0].parameters()}, {"params": ours[2].parameters(), "lr": 0.3}], lr=0.1, momentum=0.9
    )
    opt_t = torch.optim.SGD(
        [{"params": theirs[0].parameters()}, {"params": theirs[2].parameters(), "lr": 0.3}], lr=0.1, momentum=0.9
    )
    assert [g["lr"] for g in opt_o.param_groups] == [0.1, 0.3]
    _train(ours, theirs, opt_o, opt_t, _batches(4))
    _assert_same_params(ours, theirs)


def test_add_param_group_and_frozen_params():
    ours, theirs = _models()
    opt_o = nn.optim.Adam(ours[0].parameters(), lr=0.01)
    opt_t = torch.optim.Adam(theirs[0].parameters(), lr=0.01)
    _train(ours, theirs, opt_o, opt_t, _batches(2))
    opt_o.add_param_group({"params": ours[2].parameters(), "lr": 0.02})
    opt_t.add_param_group({"params": theirs[2].parameters(), "lr": 0.02})
    _train(ours, theirs, opt_o, opt_t, _batches(3))
    _assert_same_params(ours, theirs)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt_o.add_param_group({"params": [ours[0].weight]})


def test_params_without_grad_are_skipped():
    p, q = nn.Parameter(fc.ones(2)), nn.Parameter(fc.ones(2))
    opt = nn.optim.Adam([p, q], lr=0.1)
    (p * 2).sum().backward()
    opt.step()
    assert q.tolist() == [1.0, 1.0] and q not in opt.state
    assert p.tolist() != [1.0, 1.0]


def test_step_with_closure_returns_loss():
    p = nn.Parameter(fc.tensor([3.0]))
    opt = nn.optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 9.0
    assert p.tolist() == [1.5]  # 3 - 0.25 * 6


def test_zero_grad():
    p = nn.Parameter(fc.ones(3))
    opt = nn.optim.SGD([p], lr=0.1)
    (p * 3).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_state_dict_format_and_round_trip():
    ours, theirs = _models()
    opt_o = nn.optim.Adam(ours.parameters(), lr=0.01)
    opt_t = torch.optim.Adam(theirs.parameters(), lr=0.01, foreach=False)
    batches = _batches(6)
    _train(ours, theirs, opt_o, opt_t, batches[:3])
    sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
    assert sorted(sd_o) == ["param_groups", "state"]
    assert sorted(sd_o["state"]) == sorted(sd_t["state"]) == [0, 1, 2, 3]
    assert sorted(sd_o["state"][0]) == sorted(sd_t["state"][0])
    assert sd_o["param_groups"][0]["params"] == sd_t["param_groups"][0]["params"]
    assert sd_o["state"][0]["step"].item() == sd_t["state"][0]["step"].item() == 3
    common = set(sd_o["param_groups"][0]) & set(sd_t["param_groups"][0])
    assert {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "params"} <= common
    assert_close(sd_o["state"][1]["exp_avg_sq"], sd_t["state"][1]["exp_avg_sq"])

    # a fresh model + optimizer loaded from the state dicts continues exactly like the original
    fresh = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    fresh.load_state_dict(ours.state_dict())
    opt_f = nn.optim.Adam(fresh.parameters(), lr=0.5)
    opt_f.load_state_dict(sd_o)
    assert opt_f.param_groups[0]["lr"] == 0.01
    assert opt_f.state[fresh[0].weight]["exp_avg"].data_ptr() != opt_o.state[ours[0].weight]["exp_avg"].data_ptr()
    for model, opt in ((ours, opt_o), (fresh, opt_f)):
        for x, y in batches[3:]:
            opt.zero_grad()
            nn.CrossEntropyLoss()(model(from_torch(x)), from_torch(y)).backward()
            opt.step()
    for (_, a), (_, b) in zip(ours.named_parameters(), fresh.named_parameters(), strict=True):
        assert (to_numpy(a) == to_numpy(b)).all()


def test_sgd_state_dict_round_trip():
    p = nn.Parameter(fc.ones(2))
    opt = nn.optim.SGD([p], lr=0.1, momentum=0.9)
    (p * 2).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert sd["state"][0]["momentum_buffer"].tolist() == [2.0, 2.0]
    q = nn.Parameter(fc.ones(2))
    opt2 = nn.optim.SGD([q], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.state[q]["momentum_buffer"].tolist() == [2.0, 2.0]
    assert opt2.param_groups[0]["momentum"] == 0.9


def test_load_state_dict_mismatch_errors():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    sd = nn.optim.SGD(a.parameters(), lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        nn.optim.SGD([{"params": [b.weight]}, {"params": [b.bias]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        nn.optim.SGD([b.weight], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        nn.optim.SGD([b.weight], lr=0.1).load_state_dict({"state": {}})


@pytest.mark.parametrize(
    "make,msg",
    [
        (lambda ps: nn.optim.SGD(ps, lr=-1), "Invalid learning rate: -1"),
        (lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
        (lambda ps: nn.optim.SGD(ps, lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
        (lambda ps: nn.optim.SGD(ps, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum"),
        (lambda ps: nn.optim.Adam(ps, lr=-0.1), "Invalid learning rate: -0.1"),
        (lambda ps: nn.optim.Adam(ps, eps=-1e-8), "Invalid epsilon value"),
        (lambda ps: nn.optim.Adam(ps, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
        (lambda ps: nn.optim.Adam(ps, betas=(0.9, -0.1)), "Invalid beta parameter at index 1"),
        (lambda ps: nn.optim.Adam(ps, weight_decay=-1), "Invalid weight_decay value"),
        (lambda ps: nn.optim.Adam([]), "empty parameter list"),
        (lambda ps: nn.optim.RMSprop(ps, alpha=-1), "Invalid alpha value: -1"),
        (lambda ps: nn.optim.RMSprop(ps, momentum=-1), "Invalid momentum value"),
        (lambda ps: nn.optim.Adagrad(ps, lr_decay=-1), "Invalid lr_decay value: -1"),
        (lambda ps: nn.optim.Adagrad(ps, initial_accumulator_value=-1), "Invalid initial_accumulator_value"),
    ],
)
def test_hyperparameter_validation(make, msg):
    with pytest.raises(ValueError, match=msg):
        make([nn.Parameter(fc.zeros(1))])


def test_params_type_errors():
    p = nn.Parameter(fc.zeros(1))
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        nn.optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        nn.optim.SGD([p, 3.0], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        nn.optim.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(ValueError, match="duplicate parameters"):
        nn.optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        nn.optim.SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match="floating-point"):
        nn.optim.SGD([fc.zeros(1, dtype=fc.int64)], lr=0.1)


def test_custom_optimizer_subclass():
    class SignSGD(nn.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, dict(lr=lr))

        def step(self, closure=None):
            import flambeau_autograd as fa

            with fa.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            sign = (p.grad > 0).to(p.dtype) - (p.grad < 0).to(p.dtype)
                            p.add_(sign, alpha=-group["lr"])

    p = nn.Parameter(fc.tensor([1.0, -1.0]))
    opt = SignSGD([p], lr=0.5)
    (p * p).sum().backward()
    opt.step()
    assert p.tolist() == [0.5, -0.5]
    assert opt.state_dict()["param_groups"] == [{"lr": 0.5, "params": [0]}]
    assert "SignSGD" in repr(opt) and "lr: 0.5" in repr(opt)


def test_state_dict_is_plain_dicts_as_torch():
    import pickle

    import flambeau_core as fc
    import flambeau_nn as nn

    model = nn.Linear(3, 2)
    opt = nn.optim.Adam(model.parameters(), lr=0.1)
    model(fc.ones(4, 3)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert type(sd["state"]) is dict and all(type(s) is dict for s in sd["state"].values())
    assert sd["state"][0]["exp_avg"] is opt.state[model.weight]["exp_avg"]  # tensors by reference, as torch
    # The containers pickle as builtins only (what torch's weights_only loader accepts), no class of ours.
    containers = {
        "state": {k: {n: None for n in st} for k, st in sd["state"].items()},
        "param_groups": sd["param_groups"],
    }
    assert b"flambeau" not in pickle.dumps(containers, protocol=2)
