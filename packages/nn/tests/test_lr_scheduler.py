"""Every learning-rate scheduler against torch.optim.lr_scheduler: the lr (and momentum) sequence over
~30 epochs, state_dict round trips mid-way and interchange with torch's, bad input."""

from __future__ import annotations

import copy
import math
import warnings

import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from flambeau_nn.optim import lr_scheduler as ours_sched
from torch.optim import lr_scheduler as torch_sched

EPOCHS = 30


def _optimizers(kind="SGD", groups=2, **kwargs):
    """A flambeau and a torch optimizer over matching params, with ``groups`` param groups of lrs 0.1, 0.05, ..."""
    ps_o = [nn.Parameter(fc.zeros(2)) for _ in range(groups)]
    ps_t = [torch.nn.Parameter(torch.zeros(2)) for _ in range(groups)]
    lrs = [0.1 / (i + 1) for i in range(groups)]
    opt_o = getattr(nn.optim, kind)([{"params": [p], "lr": lr} for p, lr in zip(ps_o, lrs, strict=True)], **kwargs)
    opt_t = getattr(torch.optim, kind)([{"params": [p], "lr": lr} for p, lr in zip(ps_t, lrs, strict=True)], **kwargs)
    return opt_o, opt_t


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


def _assert_same(opt_o, opt_t, s_o, s_t, epoch):
    assert s_o.get_last_lr() == pytest.approx(s_t.get_last_lr(), rel=1e-13, abs=1e-16), epoch
    assert [g["lr"] for g in opt_o.param_groups] == pytest.approx([g["lr"] for g in opt_t.param_groups], rel=1e-13)
    assert _momenta(opt_o) == pytest.approx(_momenta(opt_t), rel=1e-13)


def _step(opt_o, opt_t, s_o, s_t, metric=None):
    opt_o.step()
    opt_t.step()
    if metric is None:
        s_o.step()
        s_t.step()
    else:
        s_o.step(metric)
        s_t.step(metric)


def _lambda(epoch):
    return 0.95**epoch


def _mult(epoch):
    return 0.9 if epoch % 3 else 1.1


CASES = [
    ("LambdaLR", dict(lr_lambda=_lambda)),
    ("LambdaLR", dict(lr_lambda=[_lambda, lambda e: 1.0 / (e + 1)])),
    ("MultiplicativeLR", dict(lr_lambda=_mult)),
    ("StepLR", dict(step_size=4, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[3, 8, 8, 20], gamma=0.3)),
    ("ConstantLR", dict()),
    ("ConstantLR", dict(factor=0.25, total_iters=7)),
    ("LinearLR", dict()),
    ("LinearLR", dict(start_factor=0.1, end_factor=0.6, total_iters=12)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("PolynomialLR", dict()),
    ("PolynomialLR", dict(total_iters=20, power=2.5)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.001)),
    ("CosineAnnealingLR", dict(T_max=30)),
    ("CosineAnnealingWarmRestarts", dict(T_0=4)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.002)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3, step_size_down=5, mode="triangular2")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4, mode="exp_range", gamma=0.95)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4, scale_fn=lambda x: 0.5**x, scale_mode="iterations")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4, cycle_momentum=False)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=EPOCHS + 1)),
    ("OneCycleLR", dict(max_lr=[0.5, 0.3], epochs=5, steps_per_epoch=7, anneal_strategy="linear")),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=EPOCHS + 1, three_phase=True, pct_start=0.2)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=EPOCHS + 1, cycle_momentum=False, div_factor=10.0)),
]


def _make(name, kwargs, opt):
    return getattr(ours_sched if isinstance(opt, nn.optim.Optimizer) else torch_sched, name)(opt, **kwargs)


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_lr_sequence_matches_torch(name, kwargs, kind):
    opt_o, opt_t = _optimizers(kind, **({"momentum": 0.9} if kind == "SGD" else {}))
    s_o, s_t = _make(name, kwargs, opt_o), _make(name, kwargs, opt_t)
    for epoch in range(EPOCHS):
        _assert_same(opt_o, opt_t, s_o, s_t, epoch)
        _step(opt_o, opt_t, s_o, s_t)
    _assert_same(opt_o, opt_t, s_o, s_t, EPOCHS)


def _plain(value):
    """A state dict value without the callables (they are not part of the comparison)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not callable(v)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_state_dict_same_keys_as_torch_and_round_trip_mid_way(name, kwargs):
    opt_o, opt_t = _optimizers("SGD", momentum=0.9)
    s_o, s_t = _make(name, kwargs, opt_o), _make(name, kwargs, opt_t)
    for _ in range(EPOCHS // 2):
        _step(opt_o, opt_t, s_o, s_t)
    sd_o, sd_t = s_o.state_dict(), s_t.state_dict()
    assert sorted(sd_o) == sorted(sd_t)
    assert _plain(sd_o) == _plain(sd_t)  # the same Python float formulas: the values are equal, not just close

    # A new flambeau scheduler loads torch's state (and a new torch one loads ours); all four continue alike.
    opt_o2, opt_t2 = _optimizers("SGD", momentum=0.9)
    s_o2, s_t2 = _make(name, kwargs, opt_o2), _make(name, kwargs, opt_t2)
    opt_o2.load_state_dict(opt_o.state_dict())
    opt_t2.load_state_dict(opt_t.state_dict())
    s_o2.load_state_dict(copy.deepcopy(sd_t))
    s_t2.load_state_dict(copy.deepcopy(sd_o))
    for epoch in range(EPOCHS // 2, EPOCHS):
        _step(opt_o, opt_t, s_o, s_t)
        _step(opt_o2, opt_t2, s_o2, s_t2)
        _assert_same(opt_o, opt_t, s_o, s_t, epoch)
        _assert_same(opt_o2, opt_t, s_o2, s_t, epoch)
        _assert_same(opt_o, opt_t2, s_o, s_t2, epoch)


PLATEAU = [
    dict(),
    dict(mode="max", factor=0.5, patience=2),
    dict(patience=1, threshold=0.1, threshold_mode="abs", cooldown=2),
    dict(mode="max", patience=0, threshold=0.05, threshold_mode="rel", cooldown=1, min_lr=[0.02, 0.001]),
    dict(patience=2, factor=0.5, min_lr=0.03, eps=1e-3),
]


def _metrics():
    # Improves, plateaus, improves a little (within and beyond the thresholds), then rises.
    values = [1.0, 0.8, 0.7, 0.7, 0.69, 0.695, 0.7, 0.6, 0.6, 0.59, 0.5, 0.5, 0.5, 0.55, 0.6]
    return values + [0.6 - 0.01 * i * (-1) ** i for i in range(EPOCHS - len(values))]


@pytest.mark.parametrize("kwargs", PLATEAU)
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    opt_o, opt_t = _optimizers("SGD")
    s_o = ours_sched.ReduceLROnPlateau(opt_o, **kwargs)
    s_t = torch_sched.ReduceLROnPlateau(opt_t, **kwargs)
    for epoch, metric in enumerate(_metrics()):
        _step(opt_o, opt_t, s_o, s_t, metric)
        _assert_same(opt_o, opt_t, s_o, s_t, epoch)
        assert (s_o.num_bad_epochs, s_o.cooldown_counter, s_o.best) == (
            s_t.num_bad_epochs,
            s_t.cooldown_counter,
            s_t.best,
        )
        if epoch == 12:  # round trip through torch's state dict mid-way
            sd = s_t.state_dict()
            assert sorted(s_o.state_dict()) == sorted(sd)
            fresh = ours_sched.ReduceLROnPlateau(opt_o)
            fresh.load_state_dict(sd)
            s_o = fresh
    assert s_o.get_last_lr() != [0.1, 0.05] or kwargs == {}  # the lr did move in the non-default cases


def test_reduce_lr_on_plateau_accepts_a_tensor_metric():
    opt_o, opt_t = _optimizers("SGD", groups=1)
    s_o = ours_sched.ReduceLROnPlateau(opt_o, patience=0)
    s_t = torch_sched.ReduceLROnPlateau(opt_t, patience=0)
    for m in [1.0, 2.0, 3.0]:
        s_o.step(fc.tensor(m))
        s_t.step(torch.tensor(m))
    assert s_o.get_last_lr() == pytest.approx(s_t.get_last_lr())


def _sequential(opt):
    mod = ours_sched if isinstance(opt, nn.optim.Optimizer) else torch_sched
    warm = mod.LinearLR(opt, start_factor=0.2, total_iters=5)
    cos = mod.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
    step = mod.StepLR(opt, step_size=3, gamma=0.5)
    return mod.SequentialLR(opt, [warm, cos, step], milestones=[5, 15])


def _chained(opt):
    mod = ours_sched if isinstance(opt, nn.optim.Optimizer) else torch_sched
    return mod.ChainedScheduler([mod.ConstantLR(opt, factor=0.5, total_iters=6), mod.ExponentialLR(opt, gamma=0.93)])


@pytest.mark.parametrize("make", [_sequential, _chained], ids=["SequentialLR", "ChainedScheduler"])
def test_composite_schedulers_match_torch_with_state_dict_round_trip(make):
    opt_o, opt_t = _optimizers("SGD")
    s_o, s_t = make(opt_o), make(opt_t)
    for epoch in range(EPOCHS):
        _assert_same(opt_o, opt_t, s_o, s_t, epoch)
        if epoch == 12:
            sd_o, sd_t = s_o.state_dict(), s_t.state_dict()
            assert sorted(sd_o) == sorted(sd_t)
            assert [sorted(s) for s in sd_o["_schedulers"]] == [sorted(s) for s in sd_t["_schedulers"]]
            # PyTorch's resume order: scheduler first, then the optimizer's state, then the scheduler's.
            opt_o2, _ = _optimizers("SGD")
            s_o = make(opt_o2)
            opt_o2.load_state_dict(opt_o.state_dict())
            s_o.load_state_dict(copy.deepcopy(sd_t))
            opt_o = opt_o2
        _step(opt_o, opt_t, s_o, s_t)


def test_epoch_argument_uses_the_closed_form_with_a_warning():
    for name, kwargs in [("StepLR", dict(step_size=3, gamma=0.5)), ("ExponentialLR", dict(gamma=0.9))]:
        opt_o, opt_t = _optimizers("SGD")
        s_o, s_t = _make(name, kwargs, opt_o), _make(name, kwargs, opt_t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s_t.step(7)
        with pytest.warns(UserWarning, match="epoch parameter"):
            s_o.step(7)
        assert s_o.get_last_lr() == pytest.approx(s_t.get_last_lr(), rel=1e-13)


def test_warm_restarts_fractional_epochs_match_torch():
    opt_o, opt_t = _optimizers("SGD")
    s_o = ours_sched.CosineAnnealingWarmRestarts(opt_o, T_0=3, T_mult=2)
    s_t = torch_sched.CosineAnnealingWarmRestarts(opt_t, T_0=3, T_mult=2)
    for i in range(40):
        epoch = i * 0.37
        s_o.step(epoch)
        s_t.step(epoch)
        assert s_o.get_last_lr() == pytest.approx(s_t.get_last_lr(), rel=1e-13)


def test_get_lr_outside_step_warns_and_base_names_exist():
    opt_o, _ = _optimizers("SGD")
    s = ours_sched.StepLR(opt_o, step_size=2)
    with pytest.warns(UserWarning, match="get_last_lr"):
        s.get_lr()
    assert issubclass(ours_sched._LRScheduler, ours_sched.LRScheduler)
    assert set(torch_sched.__all__) <= set(dir(ours_sched))


def test_resume_with_last_epoch_matches_torch():
    opt_o, opt_t = _optimizers("SGD")
    for opt in (opt_o, opt_t):
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
    s_o = ours_sched.CosineAnnealingLR(opt_o, T_max=10, last_epoch=4)
    s_t = torch_sched.CosineAnnealingLR(opt_t, T_max=10, last_epoch=4)
    for epoch in range(10):
        _assert_same(opt_o, opt_t, s_o, s_t, epoch)
        _step(opt_o, opt_t, s_o, s_t)


@pytest.mark.parametrize(
    "make,exc,msg",
    [
        (lambda o: ours_sched.StepLR(o, step_size=0), ValueError, r"\[StepLR\] step_size must be a positive int"),
        (lambda o: ours_sched.StepLR(object(), step_size=1), TypeError, "is not an Optimizer"),
        (lambda o: ours_sched.LambdaLR(o, [_lambda]), ValueError, r"\[LambdaLR\] Expected 2 lr_lambdas, but got 1"),
        (lambda o: ours_sched.MultiplicativeLR(o, 0.5), TypeError, "lr_lambda should be a function"),
        (lambda o: ours_sched.ConstantLR(o, factor=2.0), ValueError, r"\[ConstantLR\] .*between 0 and 1"),
        (lambda o: ours_sched.LinearLR(o, start_factor=0), ValueError, r"\[LinearLR\] Starting multiplicative"),
        (lambda o: ours_sched.LinearLR(o, end_factor=1.5), ValueError, r"\[LinearLR\] Ending multiplicative"),
        (lambda o: ours_sched.CosineAnnealingLR(o, T_max=0), ValueError, r"\[CosineAnnealingLR\] T_max"),
        (lambda o: ours_sched.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "positive integer T_0"),
        (lambda o: ours_sched.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError, "T_mult >= 1"),
        (lambda o: ours_sched.ReduceLROnPlateau(o, factor=1.0), ValueError, r"Factor should be < 1.0"),
        (lambda o: ours_sched.ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown"),
        (lambda o: ours_sched.ReduceLROnPlateau(o, threshold_mode="x"), ValueError, "threshold mode x is unknown"),
        (lambda o: ours_sched.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
        (lambda o: ours_sched.CyclicLR(o, 0.01, 0.1, mode="zigzag"), ValueError, "mode is invalid"),
        (lambda o: ours_sched.CyclicLR(o, [0.1], 0.2), ValueError, "base_lr must have the same length"),
        (lambda o: ours_sched.OneCycleLR(o, 0.1), ValueError, "You must define either total_steps"),
        (lambda o: ours_sched.OneCycleLR(o, 0.1, total_steps=0), ValueError, "positive integer total_steps"),
        (lambda o: ours_sched.OneCycleLR(o, 0.1, total_steps=5, pct_start=1.5), ValueError, "pct_start"),
        (lambda o: ours_sched.OneCycleLR(o, 0.1, total_steps=5, anneal_strategy="x"), ValueError, "anneal_strategy"),
        (lambda o: ours_sched.SequentialLR(o, [], milestones=[]), ValueError, "at least one scheduler"),
        (lambda o: ours_sched.ChainedScheduler([]), ValueError, "at least one scheduler"),
        (
            lambda o: ours_sched.SequentialLR(o, [ours_sched.ReduceLROnPlateau(o)], milestones=[]),
            ValueError,
            "does not support `ReduceLROnPlateau`",
        ),
        (
            lambda o: ours_sched.SequentialLR(o, [ours_sched.StepLR(o, 2)], milestones=[3]),
            ValueError,
            "one more than the number of milestone",
        ),
    ],
)
def test_bad_input(make, exc, msg):
    opt_o, _ = _optimizers("SGD")
    with pytest.raises(exc, match=msg):
        make(opt_o)


def test_cycle_momentum_needs_momentum_and_onecycle_stops_at_total_steps():
    opt = nn.optim.Adagrad([nn.Parameter(fc.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        ours_sched.CyclicLR(opt, 0.01, 0.1)
    opt_o, _ = _optimizers("SGD", momentum=0.9)
    s = ours_sched.OneCycleLR(opt_o, 0.1, total_steps=3)
    for _ in range(3):
        opt_o.step()
        s.step()
    with pytest.raises(ValueError, match=r"Tried to step 4 times. The specified number of total steps is 3"):
        s.step()
    assert math.isfinite(s.get_last_lr()[0])


def test_stepping_the_scheduler_before_the_optimizer_warns():
    opt_o, _ = _optimizers("SGD")
    s = ours_sched.ExponentialLR(opt_o, gamma=0.5)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        s.step()
    opt2, _ = _optimizers("SGD")
    s2 = ours_sched.ExponentialLR(opt2, gamma=0.5)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s2.step()
