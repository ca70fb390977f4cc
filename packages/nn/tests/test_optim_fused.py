"""Fused optimizer steps (Note [Optimizer step structure]) against torch.optim, step for step.

Every optimizer, with every option, in float32 and float64, over 10 steps on
the same parameters and the same gradients (odd shapes, a 0-d and an empty
parameter, a non-contiguous gradient, a parameter whose grad is None on some
steps); param groups with their own hyperparameters; state_dict round trips;
bad input.
"""

from __future__ import annotations

import types

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_core._C import _foreach_zero_, _fused_adagrad_, _fused_adam_, _fused_rmsprop_, _fused_sgd_
from nn_testing import assert_close, from_torch

SHAPES = [(5, 3), (7,), (), (2, 3, 4), (0, 3), (40000,)]
DTYPES = [torch.float32, torch.float64]


def _pair(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    theirs = [torch.nn.Parameter(torch.randn(s, generator=g, dtype=dtype)) for s in SHAPES]
    ours = [nn.Parameter(from_torch(p)) for p in theirs]
    return ours, theirs


def _grads(step, dtype):
    g = torch.Generator().manual_seed(100 + step)
    out = [torch.randn(s, generator=g, dtype=dtype) for s in SHAPES]
    # A non-contiguous gradient for the 3-D parameter.
    out[3] = torch.randn(4, 3, 2, generator=g, dtype=dtype).permute(2, 1, 0)
    return out


def _set_grads(ours, theirs, step, dtype):
    grads = _grads(step, dtype)
    for i, (o, t, gr) in enumerate(zip(ours, theirs, grads, strict=True)):
        if i == 1 and step % 3 == 1:  # this parameter has no grad on some steps: skipped
            o.grad, t.grad = None, None
            continue
        t.grad = gr.clone()
        og = from_torch(gr.contiguous())
        if i == 3:
            og = from_torch(gr.permute(2, 1, 0).contiguous()).permute(2, 1, 0)
            assert not og.is_contiguous()
        o.grad = og


def _run(make_ours, make_theirs, dtype, steps=10, rtol=None):
    ours, theirs = _pair(dtype)
    opt_o, opt_t = make_ours(ours), make_theirs(theirs)
    for step in range(steps):
        _set_grads(ours, theirs, step, dtype)
        opt_o.step()
        opt_t.step()
        tol = rtol or (2e-5 if dtype == torch.float32 else 1e-11)
        for o, t in zip(ours, theirs, strict=True):
            assert_close(o, t, rtol=tol, atol=tol)
    return opt_o, opt_t, ours, theirs


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.8, nesterov=True),
    dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01),
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.05, momentum=0.5, maximize=True, weight_decay=0.02),
    dict(lr=0.05, maximize=True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", SGD_CASES)
def test_sgd_every_option_matches_torch(kwargs, dtype):
    opt_o, opt_t, ours, theirs = _run(
        lambda ps: nn.optim.SGD(ps, **kwargs), lambda ps: torch.optim.SGD(ps, foreach=False, **kwargs), dtype
    )
    if kwargs.get("momentum", 0):
        for o, t in zip(ours, theirs, strict=True):
            assert_close(opt_o.state[o]["momentum_buffer"], opt_t.state[t]["momentum_buffer"], rtol=2e-5, atol=2e-5)


ADAM_CASES = [
    dict(),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.01, betas=(0.3, 0.4)),  # 1 - beta1 > 0.5: the other branch of lerp
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True),
    dict(lr=0.01, maximize=True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", ADAM_CASES)
def test_adam_every_option_matches_torch(kwargs, dtype):
    opt_o, opt_t, ours, theirs = _run(
        lambda ps: nn.optim.Adam(ps, **kwargs), lambda ps: torch.optim.Adam(ps, foreach=False, **kwargs), dtype
    )
    for o, t in zip(ours, theirs, strict=True):
        so, st = opt_o.state[o], opt_t.state[t]
        assert sorted(so) == sorted(st)
        assert so["step"].dtype == fc.float32 and so["step"].item() == st["step"].item()
        for k in so:
            assert_close(so[k], st[k], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.01, weight_decay=0.1, amsgrad=True), dict(maximize=True)])
def test_adamw_matches_torch(kwargs, dtype):
    opt_o, _, _, _ = _run(
        lambda ps: nn.optim.AdamW(ps, **kwargs), lambda ps: torch.optim.AdamW(ps, foreach=False, **kwargs), dtype
    )
    assert opt_o.param_groups[0]["decoupled_weight_decay"] is True


RMSPROP_CASES = [
    dict(),
    dict(lr=0.005, alpha=0.9, momentum=0.8),
    dict(lr=0.005, alpha=0.3),  # 1 - alpha > 0.5
    dict(lr=0.005, centered=True, weight_decay=0.05),
    dict(lr=0.005, centered=True, momentum=0.5, maximize=True),
    dict(lr=0.005, alpha=0.3, centered=True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", RMSPROP_CASES)
def test_rmsprop_every_option_matches_torch(kwargs, dtype):
    opt_o, opt_t, ours, theirs = _run(
        lambda ps: nn.optim.RMSprop(ps, **kwargs),
        lambda ps: torch.optim.RMSprop(ps, foreach=False, **kwargs),
        dtype,
        rtol=1e-4 if dtype == torch.float32 else 1e-10,
    )
    for o, t in zip(ours, theirs, strict=True):
        assert sorted(opt_o.state[o]) == sorted(opt_t.state[t])


ADAGRAD_CASES = [
    dict(),
    dict(lr=0.05, lr_decay=0.1, weight_decay=0.01, initial_accumulator_value=0.2),
    dict(lr=0.05, eps=1e-3, maximize=True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", ADAGRAD_CASES)
def test_adagrad_every_option_matches_torch(kwargs, dtype):
    _run(lambda ps: nn.optim.Adagrad(ps, **kwargs), lambda ps: torch.optim.Adagrad(ps, foreach=False, **kwargs), dtype)


def test_param_groups_with_different_hyperparameters_match_torch():
    for opt_o_cls, opt_t_cls, extra in [
        (nn.optim.SGD, torch.optim.SGD, dict(momentum=0.9)),
        (nn.optim.Adam, torch.optim.Adam, dict(amsgrad=True)),
        (nn.optim.RMSprop, torch.optim.RMSprop, dict(centered=True)),
        (nn.optim.Adagrad, torch.optim.Adagrad, dict(lr_decay=0.01)),
    ]:

        def groups(ps, extra=extra):
            return [
                {"params": ps[:2], "lr": 0.02},
                {"params": ps[2:4], "lr": 0.001, "weight_decay": 0.1},
                {"params": ps[4:], "maximize": True, **extra},
            ]

        _run(
            lambda ps, c=opt_o_cls, g=groups: c(g(ps), lr=0.01),
            lambda ps, c=opt_t_cls, g=groups: c(g(ps), lr=0.01),
            torch.float64,
        )


def test_sgd_mixed_first_step_inside_a_group():
    # One parameter gets its first gradient late: its buffer starts then (two fused calls that step).
    ours, theirs = _pair(torch.float64)
    opt_o = nn.optim.SGD(ours, lr=0.1, momentum=0.9, nesterov=True)
    opt_t = torch.optim.SGD(theirs, lr=0.1, momentum=0.9, nesterov=True)
    for step in range(5):
        _set_grads(ours, theirs, step, torch.float64)
        if step < 2:
            ours[0].grad, theirs[0].grad = None, None
        opt_o.step()
        opt_t.step()
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t, rtol=1e-12, atol=1e-12)


def test_state_dict_layout_and_round_trip_match_torch():
    for make_o, make_t in [
        (lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
        (lambda ps: nn.optim.Adam(ps, amsgrad=True), lambda ps: torch.optim.Adam(ps, amsgrad=True)),
        (lambda ps: nn.optim.AdamW(ps), lambda ps: torch.optim.AdamW(ps)),
        (
            lambda ps: nn.optim.RMSprop(ps, momentum=0.9, centered=True),
            lambda ps: torch.optim.RMSprop(ps, momentum=0.9, centered=True),
        ),
        (lambda ps: nn.optim.Adagrad(ps), lambda ps: torch.optim.Adagrad(ps)),
    ]:
        opt_o, opt_t, ours, theirs = _run(make_o, make_t, torch.float32, steps=3)
        sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
        assert list(sd_o["param_groups"][0]) == list(sd_t["param_groups"][0])
        assert sorted(sd_o["state"]) == sorted(sd_t["state"])
        for k in sd_t["state"]:
            assert sorted(sd_o["state"][k]) == sorted(sd_t["state"][k])
        # Load ours into a fresh optimizer over copies of the parameters: both continue identically.
        copies = [nn.Parameter(p.detach().clone()) for p in ours]
        opt_c = make_o(copies)
        opt_c.load_state_dict(sd_o)
        for step in range(3, 6):
            _set_grads(ours, theirs, step, torch.float32)
            for c, o in zip(copies, ours, strict=True):
                c.grad = None if o.grad is None else o.grad.clone()
            opt_o.step()
            opt_c.step()
            opt_t.step()
        for c, o, t in zip(copies, ours, theirs, strict=True):
            assert fc.equal(c, o) if hasattr(fc, "equal") else c.tolist() == o.tolist()
            assert_close(o, t, rtol=1e-4, atol=1e-5)


def test_state_dict_loads_into_torch_and_back():
    opt_o, opt_t, ours, theirs = _run(
        lambda ps: nn.optim.Adam(ps, lr=0.01),
        lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=False),
        torch.float32,
        steps=2,
    )
    sd = opt_o.state_dict()
    torch_sd = {
        "state": {
            k: {n: torch.from_numpy(np.array(memoryview(v))) for n, v in s.items()} for k, s in sd["state"].items()
        },
        "param_groups": sd["param_groups"],
    }
    opt_t.load_state_dict(torch_sd)
    assert opt_t.state[theirs[0]]["step"].item() == 2.0


def test_cache_rebuilds_when_state_is_edited():
    p = nn.Parameter(fc.ones(3))
    opt = nn.optim.SGD([p], lr=1.0, momentum=1.0)
    for _ in range(2):
        p.grad = fc.ones(3)
        opt.step()
    # buf = 2 after two steps; replace it by hand: the next step must use the new buffer.
    opt.state[p]["momentum_buffer"] = fc.full((3,), 10.0)
    before = p.tolist()
    p.grad = fc.ones(3)
    opt.step()
    assert opt.state[p]["momentum_buffer"].tolist() == [11.0] * 3
    assert p.tolist() == [b - 11.0 for b in before]


def test_optimizer_keeps_working_after_module_to_double():
    model = nn.Linear(3, 2)
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(fc.ones(4, 3)).sum().backward()
    opt.step()
    model.double()
    assert model.weight.dtype == fc.float64
    assert opt.state[model.weight]["momentum_buffer"].dtype == fc.float32
    opt.zero_grad()
    model(fc.ones(4, 3, dtype=fc.float64)).sum().backward()
    # a float32 buffer of a float64 parameter: PyTorch steps it (in-place ops promote), and so does the unfused
    # step (Note [Unfused optimizer steps]); the buffer stays float32, the parameter float64
    before = np.array(model.weight.tolist())
    buf = np.array(opt.state[model.weight]["momentum_buffer"].tolist(), dtype=np.float32)
    opt.step()
    buf = (buf * np.float32(0.9) + np.float32(4.0)).astype(np.float32)
    np.testing.assert_allclose(np.array(model.weight.tolist()), before - 0.1 * buf.astype(np.float64), rtol=1e-12)
    assert opt.state[model.weight]["momentum_buffer"].dtype == fc.float32


def test_zero_grad_set_to_none_false_is_one_call_and_detaches():
    ps = [nn.Parameter(fc.ones(3)), nn.Parameter(fc.ones(2, 2)), nn.Parameter(fc.ones(1))]
    opt = nn.optim.SGD(ps, lr=0.1)
    for p in ps[:2]:
        (p * 3).sum().backward()
    g0 = ps[0].grad
    opt.zero_grad(set_to_none=False)
    assert ps[0].grad is g0 and g0.tolist() == [0.0] * 3 and ps[1].grad.tolist() == [[0.0, 0.0]] * 2
    assert ps[2].grad is None


# ---- the fused ops themselves ----


def _sgd_kwargs(**kw):
    base = dict(
        weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False, maximize=False, is_first_step=False
    )
    base.update(kw)
    return base


def test_fused_ops_reject_bad_lists():
    p, g = [fc.ones(3), fc.ones(2)], [fc.ones(3), fc.ones(2)]
    with pytest.raises(ValueError, match=r"\[_fused_sgd_\] grads has 1 tensors, expected 2"):
        _fused_sgd_(p, g[:1], [], **_sgd_kwargs())
    with pytest.raises(
        ValueError, match=r"\[_fused_sgd_\] grads\[1\] has shape \(3,\) but params\[1\] has shape \(2,\)"
    ):
        _fused_sgd_(p, [fc.ones(3), fc.ones(3)], [], **_sgd_kwargs())
    with pytest.raises(TypeError, match=r"grads\[0\] has dtype float64 but params\[0\] has dtype float32"):
        _fused_sgd_(p, [fc.ones(3, dtype=fc.float64), fc.ones(2)], [], **_sgd_kwargs())
    with pytest.raises(TypeError, match=r"params\[0\] has dtype int64: only float32 and float64"):
        _fused_sgd_([fc.ones(3, dtype=fc.int64)], [fc.ones(3, dtype=fc.int64)], [], **_sgd_kwargs())
    with pytest.raises(ValueError, match="momentum=0.9 needs one momentum buffer per parameter"):
        _fused_sgd_(p, g, [], **_sgd_kwargs(momentum=0.9))
    with pytest.raises(ValueError, match=r"\[_fused_adam_\] state_steps\[0\] must hold one value"):
        _fused_adam_(
            [fc.ones(2)],
            [fc.ones(2)],
            [fc.zeros(2)],
            [fc.zeros(2)],
            [],
            [fc.zeros(2)],
            lr=0.1,
            beta1=0.9,
            beta2=0.99,
            weight_decay=0.0,
            eps=1e-8,
            amsgrad=False,
            maximize=False,
        )
    with pytest.raises(ValueError, match="amsgrad=True needs one max_exp_avg_sqs"):
        _fused_adam_(
            [fc.ones(2)],
            [fc.ones(2)],
            [fc.zeros(2)],
            [fc.zeros(2)],
            [],
            [fc.zeros(())],
            lr=0.1,
            beta1=0.9,
            beta2=0.99,
            weight_decay=0.0,
            eps=1e-8,
            amsgrad=True,
            maximize=False,
        )
    with pytest.raises(ValueError, match="centered=True needs one grad_avgs"):
        _fused_rmsprop_(
            [fc.ones(2)],
            [fc.ones(2)],
            [fc.zeros(2)],
            [],
            [],
            [fc.zeros(())],
            lr=0.1,
            alpha=0.9,
            eps=1e-8,
            weight_decay=0.0,
            momentum=0.0,
            centered=True,
            maximize=False,
        )
    with pytest.raises(ValueError, match=r"\[_fused_adagrad_\] state_sums has 0 tensors, expected 1"):
        _fused_adagrad_(
            [fc.ones(2)],
            [fc.ones(2)],
            [],
            [fc.zeros(())],
            lr=0.1,
            lr_decay=0.0,
            weight_decay=0.0,
            eps=1e-10,
            maximize=False,
        )
    with pytest.raises(TypeError):
        _fused_sgd_(fc.ones(3), g, [], **_sgd_kwargs())


def test_fused_ops_refuse_to_run_while_recording():
    p = nn.Parameter(fc.ones(3))
    with pytest.raises(RuntimeError, match=r"\[_fused_sgd_\] params require grad.*no_grad"):
        _fused_sgd_([p], [fc.ones(3)], [], **_sgd_kwargs())
    with fa.no_grad():
        _fused_sgd_([p], [fc.ones(3)], [], **_sgd_kwargs())
    assert p.tolist() == pytest.approx([0.9] * 3)
    with pytest.raises(RuntimeError, match="no_grad"):
        _foreach_zero_([p])


def test_fused_step_bumps_versions_and_writes_back_non_contiguous():
    base = fc.ones(4, 6)
    p = base[:, ::2]  # non-contiguous parameter view
    assert not p.is_contiguous()
    v0 = p._version if hasattr(p, "_version") else None
    _fused_sgd_([p], [fc.ones(4, 3)], [], **_sgd_kwargs(lr=0.5))
    assert base[:, 0].tolist() == [0.5] * 4 and base[:, 1].tolist() == [1.0] * 4
    if v0 is not None:
        assert p._version > v0


def test_foreach_zero_all_dtypes_and_layouts():
    ts = [fc.ones(3), fc.ones(2, 3, dtype=fc.int64), fc.ones(4, 4)[:, 1], fc.ones(0), fc.ones(70000, dtype=fc.float64)]
    _foreach_zero_(ts)
    for t in ts:
        assert float(t.abs().sum().item()) == 0.0


def test_large_parameter_threads_and_matches():
    # 300k elements: several chunks in parallel.
    fc.set_num_threads(2)
    g = torch.Generator().manual_seed(3)
    tp = [torch.nn.Parameter(torch.randn(300001, generator=g)), torch.nn.Parameter(torch.randn(17, generator=g))]
    op = [nn.Parameter(from_torch(p)) for p in tp]
    oo, ot = nn.optim.Adam(op, lr=0.01, amsgrad=True), torch.optim.Adam(tp, lr=0.01, amsgrad=True, foreach=False)
    for _ in range(3):
        grads = [torch.randn(p.shape, generator=g) for p in tp]
        for o, t, gr in zip(op, tp, grads, strict=True):
            t.grad, o.grad = gr, from_torch(gr)
        oo.step()
        ot.step()
    for o, t in zip(op, tp, strict=True):
        assert_close(o, t, rtol=2e-5, atol=2e-6)


# ---- bad input of the optimizers ----


@pytest.mark.parametrize(
    "make, exc, msg",
    [
        (lambda ps: nn.optim.SGD(ps, lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
        (lambda ps: nn.optim.Adam(ps, lr=-1.0), ValueError, "Invalid learning rate"),
        (lambda ps: nn.optim.AdamW(ps, betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0"),
        (lambda ps: nn.optim.RMSprop(ps, alpha=-1.0), ValueError, "Invalid alpha value"),
        (lambda ps: nn.optim.Adagrad(ps, lr_decay=-1.0), ValueError, "Invalid lr_decay value"),
        (lambda ps: nn.optim.SGD(ps, lr=0.1, nesterov=True), ValueError, "Nesterov momentum requires"),
        (lambda ps: nn.optim.SGD(ps, lr=0.1, differentiable=True), ValueError, "differentiable=True"),
        (lambda ps: nn.optim.SGD([ps[0], ps[0]], lr=0.1), ValueError, "duplicate parameters"),
        (lambda ps: nn.optim.SGD([{"lr": 0.1}], lr=0.1), KeyError, "'params' entry"),
        (lambda ps: nn.optim.SGD([ps[0] * 2], lr=0.1), ValueError, "non-leaf"),
        (lambda ps: nn.optim.SGD([1.0], lr=0.1), TypeError, "can only optimize Tensors"),
        (lambda ps: nn.optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
    ],
)
def test_optimizer_bad_input(make, exc, msg):
    ps = [nn.Parameter(fc.ones(2)), nn.Parameter(fc.ones(3))]
    with pytest.raises(exc, match=msg):
        make(ps)


def test_unknown_param_group_keys_are_kept_as_in_torch():
    p = nn.Parameter(fc.ones(2))
    opt = nn.optim.SGD([{"params": [p], "name": "encoder"}], lr=0.1)
    assert opt.param_groups[0]["name"] == "encoder"
    assert torch.optim.SGD([{"params": [torch.nn.Parameter(torch.ones(2))], "name": "e"}], lr=0.1)


# ---- a tensor lr (PyTorch's rules) ----

_FB = types.SimpleNamespace(optim=nn.optim, tensor=fc.tensor)
_TENSOR_LR = {
    "SGD": dict(momentum=0.9, weight_decay=0.01),
    "Adam": dict(weight_decay=0.01),
    "AdamW": dict(amsgrad=True),
    "RMSprop": dict(momentum=0.5, centered=True),
    "Adagrad": dict(lr_decay=0.01),
}


def _step_both(opt_o, opt_t, ours, theirs, steps, schedulers=()):
    """Steps both optimizers (then the schedulers) on the same gradients; the parameters agree after each."""
    for step in steps:
        _set_grads(ours, theirs, step, torch.float32)
        opt_o.step()
        opt_t.step()
        for sched in schedulers:
            sched.step()
        for o, t in zip(ours, theirs, strict=True):
            assert_close(o, t, rtol=2e-5, atol=2e-5)
        assert float(opt_o.param_groups[0]["lr"]) == float(opt_t.param_groups[0]["lr"])


@pytest.mark.parametrize("name", list(_TENSOR_LR))
def test_tensor_lr_with_a_scheduler_matches_torch(name):
    """The step reads the tensor each time; the scheduler fills the same tensor in place, as torch's does."""
    ours, theirs = _pair(torch.float32)
    opt_o = getattr(nn.optim, name)(ours, lr=fc.tensor(0.05), **_TENSOR_LR[name])
    opt_t = getattr(torch.optim, name)(theirs, lr=torch.tensor(0.05), foreach=False, **_TENSOR_LR[name])
    lr_o, lr_t = opt_o.param_groups[0]["lr"], opt_t.param_groups[0]["lr"]
    sched_o = nn.optim.lr_scheduler.CosineAnnealingLR(opt_o, T_max=6)
    sched_t = torch.optim.lr_scheduler.CosineAnnealingLR(opt_t, T_max=6)
    _step_both(opt_o, opt_t, ours, theirs, range(8), (sched_o, sched_t))
    assert opt_o.param_groups[0]["lr"] is lr_o and opt_t.param_groups[0]["lr"] is lr_t
    assert float(sched_o.get_last_lr()[0]) == float(sched_t.get_last_lr()[0])


def test_tensor_lr_state_dict_round_trips_as_in_torch():
    ours, theirs = _pair(torch.float32)
    opt_o = nn.optim.Adam(ours, lr=fc.tensor(0.01), betas=(fc.tensor(0.8), fc.tensor(0.99)))
    opt_t = torch.optim.Adam(
        theirs, lr=torch.tensor(0.01), betas=(torch.tensor(0.8), torch.tensor(0.99)), foreach=False
    )
    _step_both(opt_o, opt_t, ours, theirs, range(3))
    sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
    assert isinstance(sd_o["param_groups"][0]["lr"], fc.Tensor) and isinstance(
        sd_t["param_groups"][0]["lr"], torch.Tensor
    )
    assert float(sd_o["param_groups"][0]["lr"]) == float(sd_t["param_groups"][0]["lr"])
    # Loaded into optimizers made with a float lr: the groups take a tensor lr (a copy), as torch's do.
    ours2, theirs2 = (
        [nn.Parameter(p.detach().clone()) for p in ours],
        [torch.nn.Parameter(p.detach().clone()) for p in theirs],
    )
    opt_o2, opt_t2 = nn.optim.Adam(ours2, lr=0.5), torch.optim.Adam(theirs2, lr=0.5, foreach=False)
    opt_o2.load_state_dict(sd_o)
    opt_t2.load_state_dict(sd_t)
    lr_o, lr_t = opt_o2.param_groups[0]["lr"], opt_t2.param_groups[0]["lr"]
    assert isinstance(lr_o, fc.Tensor) and isinstance(lr_t, torch.Tensor)
    assert lr_o is not sd_o["param_groups"][0]["lr"] and lr_t is not sd_t["param_groups"][0]["lr"]
    assert float(lr_o) == float(lr_t) == pytest.approx(0.01)
    assert [float(b) for b in opt_o2.param_groups[0]["betas"]] == [float(b) for b in opt_t2.param_groups[0]["betas"]]
    _step_both(opt_o2, opt_t2, ours2, theirs2, range(3, 6))


@pytest.mark.parametrize(
    "build",
    [
        lambda lib, ps: lib.optim.SGD(ps, lr=lib.tensor([0.1, 0.2])),
        lambda lib, ps: lib.optim.SGD(ps, lr=lib.tensor(-0.5)),
        lambda lib, ps: lib.optim.Adagrad(ps, lr=lib.tensor([0.1, 0.2])),
        lambda lib, ps: lib.optim.RMSprop(ps, lr=lib.tensor([0.1, 0.2])),
        lambda lib, ps: lib.optim.Adam(ps, lr=lib.tensor(0.1), foreach=True),
        lambda lib, ps: lib.optim.AdamW(ps, lr=lib.tensor(0.1), foreach=True),
        lambda lib, ps: lib.optim.Adam(ps, betas=(lib.tensor(0.9), 0.99)),
        lambda lib, ps: lib.optim.Adam(ps, betas=(0, 0.99)),
        lambda lib, ps: lib.optim.Adam(ps, betas=(lib.tensor(0.9), lib.tensor(0.99)), foreach=True),
    ],
    ids=[
        "sgd-2-elements",
        "sgd-negative",
        "adagrad-2-elements",
        "rmsprop-2-elements",
        "adam-foreach",
        "adamw-foreach",
        "adam-mixed-betas",
        "adam-int-beta",
        "adam-tensor-betas-foreach",
    ],
)
def test_tensor_lr_errors_match_torch(build):
    with pytest.raises(ValueError) as theirs:
        build(torch, [torch.nn.Parameter(torch.ones(2))])
    with pytest.raises(ValueError) as ours:
        build(_FB, [nn.Parameter(fc.ones(2))])
    assert str(ours.value).split("] ", 1)[1] == str(theirs.value)


def test_adam_foreach_step_with_a_tensor_lr_set_later_raises_as_torch():
    for lib, p in ((_FB, nn.Parameter(fc.ones(2))), (torch, torch.nn.Parameter(torch.ones(2)))):
        opt = lib.optim.Adam([p], lr=0.1, foreach=True)
        opt.param_groups[0]["lr"] = lib.tensor(0.1)
        p.grad = lib.tensor([1.0, 1.0])
        with pytest.raises(RuntimeError, match=r"^(\[Adam.step\] )?lr as a Tensor is not supported for capturable"):
            opt.step()
