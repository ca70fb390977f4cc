"""The optimizers that compose core ops per parameter (Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop, SparseAdam)
against torch.optim, step for step.

Same initial parameters and gradients (odd shapes, a 0-d and an empty parameter,
a parameter whose grad is None on some steps), float32 and float64, every option
that changes the math; param groups with their own hyperparameters;
state_dict layout and interchange with torch both ways; bad input.
"""

from __future__ import annotations

import doctest
import importlib

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from nn_testing import assert_close, copy_params, from_torch, to_torch

SHAPES = [(5, 3), (7,), (), (2, 3, 4), (0, 3)]
DTYPES = [torch.float32, torch.float64]
STEPS = 20


def _pair(dtype, seed=0, shapes=SHAPES):
    g = torch.Generator().manual_seed(seed)
    theirs = [torch.nn.Parameter(torch.randn(s, generator=g, dtype=dtype)) for s in shapes]
    ours = [nn.Parameter(from_torch(p)) for p in theirs]
    return ours, theirs


def _set_grads(ours, theirs, step, dtype):
    g = torch.Generator().manual_seed(100 + step)
    for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        grad = torch.randn(t.shape, generator=g, dtype=dtype) + 0.3 * t.detach()
        if i == 1 and step % 3 == 1:  # no grad on some steps: this param is skipped
            o.grad, t.grad = None, None
            continue
        t.grad = grad.clone()
        o.grad = from_torch(grad)


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)


def _assert_same(ours, theirs, dtype, step):
    for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        try:
            assert_close(o, t, **_tol(dtype))
        except AssertionError as e:
            raise AssertionError(f"param {i} differs after step {step}") from e


def _assert_same_state(opt_o, opt_t, dtype):
    sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
    assert sorted(sd_o["state"]) == sorted(sd_t["state"])
    for k, st in sd_t["state"].items():
        assert sorted(sd_o["state"][k]) == sorted(st), k
        for name, value in st.items():
            ours = sd_o["state"][k][name]
            if isinstance(value, torch.Tensor):
                assert str(ours.dtype).split(".")[-1] == str(value.dtype).split(".")[-1], (k, name)
                assert_close(ours, value, **_tol(dtype))
            else:
                assert ours == value
    for g_o, g_t in zip(sd_o["param_groups"], sd_t["param_groups"], strict=True):
        assert sorted(g_o) == sorted(g_t)
        assert {k: v for k, v in g_o.items() if k != "foreach"} == {k: v for k, v in g_t.items() if k != "foreach"}


def _run(name, kwargs, dtype, steps=STEPS):
    # Adafactor divides by the parameter's size (PyTorch's too raises on an empty one).
    ours, theirs = _pair(dtype, shapes=SHAPES[:-1] if name == "Adafactor" else SHAPES)
    opt_o = getattr(nn.optim, name)(ours, **kwargs)
    opt_t = getattr(torch.optim, name)(theirs, foreach=False, **kwargs)
    for step in range(steps):
        _set_grads(ours, theirs, step, dtype)
        opt_o.step()
        opt_t.step()
        _assert_same(ours, theirs, dtype, step)
    _assert_same_state(opt_o, opt_t, dtype)


CASES = {
    "Adadelta": [
        dict(),
        dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1),
        dict(maximize=True, weight_decay=0.05),
    ],
    "Adamax": [dict(), dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), dict(maximize=True)],
    "NAdam": [
        dict(),
        dict(lr=0.01, weight_decay=0.1),
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
        dict(betas=(0.7, 0.9), momentum_decay=0.01, maximize=True),
    ],
    "RAdam": [
        dict(),
        dict(lr=0.01, weight_decay=0.1),
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
        dict(betas=(0.8, 0.9), eps=1e-6, maximize=True),
    ],
    "ASGD": [
        dict(),
        dict(lr=0.05, lambd=1e-3, alpha=0.5, t0=5, weight_decay=0.1),
        dict(t0=0, maximize=True),
    ],
    "Rprop": [dict(), dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)), dict(maximize=True)],
    "Adafactor": [
        dict(),
        dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0, weight_decay=0.1),
        dict(eps=(None, 1e-4), maximize=True),
    ],
}
PARAMS = [(name, kw) for name, cases in CASES.items() for kw in cases]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name,kwargs", PARAMS)
def test_matches_torch_step_for_step(name, kwargs, dtype):
    _run(name, kwargs, dtype)


@pytest.mark.parametrize("name", [n for n in CASES if n != "Adafactor"])
def test_capturable_accepted_same_math(name):
    ours, theirs = _pair(torch.float64)
    opt_o = getattr(nn.optim, name)(ours, capturable=True)
    opt_t = getattr(torch.optim, name)(theirs, foreach=False)
    for step in range(5):
        _set_grads(ours, theirs, step, torch.float64)
        opt_o.step()
        opt_t.step()
    _assert_same(ours, theirs, torch.float64, 5)
    assert opt_o.param_groups[0]["capturable"] is True


@pytest.mark.parametrize("name", list(CASES))
def test_param_groups_and_add_param_group_match_torch(name):
    dtype = torch.float64
    ours, theirs = _pair(dtype, shapes=[*SHAPES[:-1], (4, 2)])
    extra = CASES[name][1]
    opt_o = getattr(nn.optim, name)([{"params": ours[:2]}, {"params": ours[2:4], **extra}])
    opt_t = getattr(torch.optim, name)([{"params": theirs[:2]}, {"params": theirs[2:4], **extra}], foreach=False)
    for step in range(STEPS):
        if step == 6:
            opt_o.add_param_group({"params": ours[4:], "lr": 0.002})
            opt_t.add_param_group({"params": theirs[4:], "lr": 0.002})
        _set_grads(ours, theirs, step, dtype)
        opt_o.step()
        opt_t.step()
        _assert_same(ours, theirs, dtype, step)
    _assert_same_state(opt_o, opt_t, dtype)


def _torch_state_into_ours(sd_t):
    return {
        "state": {
            k: {n: from_torch(v) if isinstance(v, torch.Tensor) else v for n, v in st.items()}
            for k, st in sd_t["state"].items()
        },
        "param_groups": sd_t["param_groups"],
    }


def _our_state_into_torch(sd_o):
    return {
        "state": {
            k: {n: to_torch(v) if isinstance(v, fc.Tensor) else v for n, v in st.items()}
            for k, st in sd_o["state"].items()
        },
        "param_groups": sd_o["param_groups"],
    }


@pytest.mark.parametrize("name", [*CASES, "Adam", "AdamW", "SGD", "RMSprop", "Adagrad"])
def test_state_dict_interchange_with_torch_both_ways(name):
    dtype = torch.float64
    kwargs = {"SGD": dict(lr=0.05, momentum=0.9), "RMSprop": dict(momentum=0.5, centered=True)}.get(name, {})
    ours, theirs = _pair(dtype, shapes=[*SHAPES[:-1], (4, 2)])
    opt_o = getattr(nn.optim, name)(ours, **kwargs)
    opt_t = getattr(torch.optim, name)(theirs, foreach=False, **kwargs)
    for step in range(5):
        _set_grads(ours, theirs, step, dtype)
        opt_o.step()
        opt_t.step()

    # Each side's state dict loads into a fresh optimizer of the other library and of its own (loading
    # casts the state to the params' dtype in both, e.g. NAdam's mu_product); the four continue alike.
    sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
    runs = []
    for sd_ours, sd_torch in ((_torch_state_into_ours(sd_t), sd_t), (sd_o, _our_state_into_torch(sd_o))):
        fresh_o = [nn.Parameter(from_torch(t)) for t in theirs]
        fresh_t = [torch.nn.Parameter(t.detach().clone()) for t in theirs]
        loaded_o = getattr(nn.optim, name)(fresh_o, lr=123.0)
        loaded_o.load_state_dict(sd_ours)
        loaded_t = getattr(torch.optim, name)(fresh_t, lr=123.0, foreach=False)
        loaded_t.load_state_dict(sd_torch)
        runs.append((fresh_o, fresh_t, loaded_o, loaded_t))
    for step in range(5, 12):
        for fresh_o, fresh_t, loaded_o, loaded_t in runs:
            _set_grads(fresh_o, fresh_t, step, dtype)
            loaded_o.step()
            loaded_t.step()
            _assert_same(fresh_o, fresh_t, dtype, step)
    for _, _, loaded_o, loaded_t in runs:
        _assert_same_state(loaded_o, loaded_t, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6), dict(lr=0.01, maximize=True)])
def test_sparse_adam_matches_torch_on_sparse_gradients(kwargs, dtype):
    g = torch.Generator().manual_seed(3)
    weight_t = torch.nn.Parameter(torch.randn(10, 4, generator=g, dtype=dtype))
    bias_t = torch.nn.Parameter(torch.randn(6, generator=g, dtype=dtype))
    weight_o, bias_o = nn.Parameter(from_torch(weight_t)), nn.Parameter(from_torch(bias_t))
    opt_o = nn.optim.SparseAdam([weight_o, bias_o], **kwargs)
    opt_t = torch.optim.SparseAdam([weight_t, bias_t], **kwargs)
    for step in range(STEPS):
        rows = torch.randperm(10, generator=g)[: 1 + step % 4]  # the rows a batch touched
        dense = torch.zeros(10, 4, dtype=dtype)
        dense[rows] = torch.randn(len(rows), 4, generator=g, dtype=dtype)
        weight_t.grad = dense.to_sparse()
        weight_o.grad = from_torch(dense)
        if step % 5 == 2:
            bias_t.grad, bias_o.grad = None, None
        else:
            b = torch.randn(6, generator=g, dtype=dtype) * (torch.rand(6, generator=g) > 0.5)
            bias_t.grad, bias_o.grad = b.to_sparse(), from_torch(b)
        opt_o.step()
        opt_t.step()
        _assert_same([weight_o, bias_o], [weight_t, bias_t], dtype, step)
    sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
    assert sd_o["state"][0]["step"] == sd_t["state"][0]["step"] == STEPS
    assert sd_o["state"][1]["step"] == sd_t["state"][1]["step"]
    assert_close(sd_o["state"][0]["exp_avg_sq"], sd_t["state"][0]["exp_avg_sq"], **_tol(dtype))
    assert sorted(sd_o["param_groups"][0]) == sorted(sd_t["param_groups"][0])


MLP_CASES = [
    ("Adadelta", dict(lr=0.5)),
    ("Adamax", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("ASGD", dict(lr=0.05, t0=3)),
    ("Rprop", dict(lr=0.01)),
    ("Adafactor", dict(lr=0.05)),
    ("Muon", dict(lr=0.02)),
]


@pytest.mark.parametrize("name,kwargs", MLP_CASES)
def test_training_an_mlp_matches_torch(name, kwargs):
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    ours = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    copy_params(ours, theirs)
    pick = (lambda m: [p for p in m.parameters() if p.dim() == 2]) if name == "Muon" else (lambda m: m.parameters())
    opt_o = getattr(nn.optim, name)(pick(ours), **kwargs)
    opt_t = getattr(torch.optim, name)(pick(theirs), **kwargs)
    g = torch.Generator().manual_seed(1)
    for _ in range(8):
        x, y = torch.randn(8, 4, generator=g), torch.randint(0, 3, (8,), generator=g)

        def closure_o(x=x, y=y):
            opt_o.zero_grad()
            loss = nn.CrossEntropyLoss()(ours(from_torch(x)), from_torch(y))
            loss.backward()
            return loss

        def closure_t(x=x, y=y):
            opt_t.zero_grad()
            loss = torch.nn.CrossEntropyLoss()(theirs(x), y)
            loss.backward()
            return loss

        loss_o, loss_t = opt_o.step(closure_o), opt_t.step(closure_t)
        assert loss_o.item() == pytest.approx(loss_t.item(), rel=1e-5)
    their = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        assert_close(p, their[n], rtol=1e-4, atol=1e-5)


MUON_SHAPES = [(5, 3), (3, 5), (4, 4)]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(lr=0.02),
        dict(lr=0.02, nesterov=False, momentum=0.9, weight_decay=0.0),
        dict(lr=0.01, adjust_lr_fn="match_rms_adamw", ns_steps=3, ns_coefficients=(3.0, -3.2, 1.2)),
    ],
)
def test_muon_matches_torch(kwargs):
    # The Newton-Schulz iteration runs at bfloat16 precision in both libraries, rounded at the same points.
    ours, theirs = _pair(torch.float32, shapes=MUON_SHAPES)
    opt_o = nn.optim.Muon(ours, **kwargs)
    opt_t = torch.optim.Muon(theirs, **kwargs)
    start = [to_torch(o).clone() for o in ours]
    for step in range(10):
        _set_grads(ours, theirs, step, torch.float32)
        ours[1].grad = from_torch(theirs[1].grad) if theirs[1].grad is not None else None
        opt_o.step()
        opt_t.step()
    for o, t, s0 in zip(ours, theirs, start, strict=True):
        moved_o, moved_t = to_torch(o) - s0, t.detach() - s0
        assert torch.linalg.norm(moved_o - moved_t) <= 1e-5 * torch.linalg.norm(moved_t)
    sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
    assert sorted(sd_o["state"][0]) == sorted(sd_t["state"][0]) == ["momentum_buffer"]
    assert sorted(sd_o["param_groups"][0]) == sorted(sd_t["param_groups"][0])


def test_muon_newton_schulz_orthogonalizes():
    from flambeau_nn.optim.muon import zeropower_via_newtonschulz

    g = torch.Generator().manual_seed(4)
    for shape in [(6, 4), (4, 6)]:
        x = torch.randn(shape, generator=g)
        ours = to_torch(zeropower_via_newtonschulz(from_torch(x), (3.4445, -4.775, 2.0315), 5, 1e-7))
        from torch.optim._muon import _zeropower_via_newtonschulz

        theirs = _zeropower_via_newtonschulz(x, (3.4445, -4.775, 2.0315), 5, 1e-7).float()
        assert torch.allclose(ours, theirs, rtol=1e-6, atol=1e-6)
        # Singular values near 1 (the quintic's band is about [0.7, 1.2]).
        sv = torch.linalg.svdvals(ours)
        assert (sv > 0.6).all() and (sv < 1.3).all()


def test_zero_grad_set_to_none_and_closure():
    p = nn.Parameter(fc.tensor([1.0, -2.0]))
    opt = nn.optim.NAdam([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 5.0
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None
    before = p.tolist()
    opt.step()  # no grads: nothing moves
    assert p.tolist() == before


def test_optimizers_keep_working_after_state_edit():
    p = nn.Parameter(fc.tensor([1.0, 2.0]))
    opt = nn.optim.Adamax([p], lr=0.1)
    p.grad = fc.tensor([1.0, 1.0])
    opt.step()
    opt.state[p]["exp_avg"] = fc.zeros(2)  # replaced state tensor is the one used next
    opt.step()
    assert opt.state[p]["exp_avg"].tolist() == pytest.approx([0.1, 0.1])


@pytest.mark.parametrize(
    "make,exc,msg",
    [
        (lambda ps: nn.optim.Adadelta(ps, lr=-1.0), ValueError, r"\[Adadelta\] Invalid learning rate: -1.0"),
        (lambda ps: nn.optim.Adadelta(ps, rho=1.5), ValueError, r"\[Adadelta\] Invalid rho value: 1.5"),
        (lambda ps: nn.optim.Adadelta(ps, eps=-1), ValueError, r"Invalid epsilon value"),
        (lambda ps: nn.optim.Adamax(ps, betas=(1.0, 0.9)), ValueError, r"\[Adamax\] Invalid beta parameter at index 0"),
        (lambda ps: nn.optim.Adamax(ps, weight_decay=-0.1), ValueError, r"Invalid weight_decay value: -0.1"),
        (lambda ps: nn.optim.NAdam(ps, betas=(0.9, 1.0)), ValueError, r"\[NAdam\] Invalid beta parameter at index 1"),
        (lambda ps: nn.optim.NAdam(ps, momentum_decay=-1), ValueError, r"Invalid momentum_decay value: -1"),
        (lambda ps: nn.optim.NAdam(ps, betas=0.9), ValueError, r"\[NAdam\] betas must be a pair"),
        (lambda ps: nn.optim.RAdam(ps, lr=-0.5), ValueError, r"\[RAdam\] Invalid learning rate"),
        (lambda ps: nn.optim.ASGD(ps, weight_decay=-1), ValueError, r"\[ASGD\] Invalid weight_decay value"),
        (lambda ps: nn.optim.Rprop(ps, etas=(1.2, 0.5)), ValueError, r"\[Rprop\] Invalid eta values: 1.2, 0.5"),
        (lambda ps: nn.optim.SparseAdam(ps, lr=0.0), ValueError, r"\[SparseAdam\] Invalid learning rate: 0.0"),
        (lambda ps: nn.optim.SparseAdam(ps, eps=0.0), ValueError, r"\[SparseAdam\] Invalid epsilon value"),
        (lambda ps: nn.optim.RAdam(ps, lr="fast"), TypeError, r"\[RAdam\] lr must be a float"),
        (lambda ps: nn.optim.NAdam(ps, nesterov=True), TypeError, r"unexpected keyword argument 'nesterov'"),
        (lambda ps: nn.optim.Adamax(ps, differentiable=True), ValueError, r"\[Adamax\] differentiable=True"),
        (lambda ps: nn.optim.RAdam(ps, lr=fc.tensor([0.1, 0.2])), ValueError, r"Tensor lr must be 1-element"),
        (lambda ps: nn.optim.Adafactor(ps, beta2_decay=0.5), ValueError, r"\[Adafactor\] beta2_decay should be <= 0"),
        (lambda ps: nn.optim.Adafactor(ps, d=0.5), ValueError, r"\[Adafactor\] Clipping threshold d should be >= 1"),
        (lambda ps: nn.optim.Adafactor(ps, eps=(-1.0, 1e-3)), ValueError, r"epsilon1 should be >= 0"),
        (lambda ps: nn.optim.Muon(ps), ValueError, r"\[Muon\] Muon only supports 2D parameters"),
        (lambda ps: nn.optim.Muon([nn.Parameter(fc.zeros(2, 2))], momentum=-1), ValueError, r"momentum should be >= 0"),
        (
            lambda ps: nn.optim.Muon([nn.Parameter(fc.zeros(2, 2))], adjust_lr_fn="x"),
            ValueError,
            r"Adjust learning rate function x is not supported",
        ),
    ],
)
def test_bad_hyperparameters(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make([nn.Parameter(fc.zeros(2))])


def test_bad_state_dict():
    p = nn.Parameter(fc.zeros(2))
    opt = nn.optim.RAdam([p])
    with pytest.raises(ValueError, match=r"\[load_state_dict\].*'state' and 'param_groups'"):
        opt.load_state_dict({"param_groups": []})
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt.load_state_dict({"state": {}, "param_groups": [{"lr": 0.1, "params": [0, 1]}]})


def test_tensor_lr_is_read_each_step():
    p_o, p_t = nn.Parameter(fc.tensor([1.0, 2.0])), torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    opt_o = nn.optim.RAdam([p_o], lr=fc.tensor(0.1))
    opt_t = torch.optim.RAdam([p_t], lr=torch.tensor(0.1), foreach=False)
    for _ in range(8):
        p_o.grad, p_t.grad = fc.tensor([0.5, -1.0]), torch.tensor([0.5, -1.0])
        opt_o.step()
        opt_t.step()
    assert_close(p_o, p_t)


@pytest.mark.parametrize(
    "module",
    [
        "adadelta",
        "adamax",
        "nadam",
        "radam",
        "asgd",
        "rprop",
        "sparse_adam",
        "adagrad",
        "adafactor",
        "muon",
        "lbfgs",
        "optimizer",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(f"flambeau_nn.optim.{module}"), verbose=False)
    assert result.failed == 0


def test_float64_sums_match_numpy_oracle():
    # Adadelta's first step from zero state has a closed form: delta = sqrt(eps)/sqrt((1-rho) g^2 + eps) * g.
    g = np.array([0.5, -3.0, 2.0])
    p = nn.Parameter(fc.zeros(3, dtype=fc.float64))
    p.grad = fc.tensor(g)
    nn.optim.Adadelta([p], lr=1.0, rho=0.9, eps=1e-6).step()
    expected = -np.sqrt(1e-6) / np.sqrt(0.1 * g * g + 1e-6) * g
    np.testing.assert_allclose(np.array(p.tolist()), expected, rtol=1e-12)


def test_step_and_state_dict_hooks_like_torch():
    import pickle

    from flambeau_nn.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    events = []
    p_o, p_t = nn.Parameter(fc.tensor([1.0, 2.0])), torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    runs = []
    for lib, p, opt_cls in (("flambeau", p_o, nn.optim.RAdam), ("torch", p_t, torch.optim.RAdam)):
        log = []
        opt = opt_cls([p], lr=0.1)
        handles = [
            opt.register_step_pre_hook(lambda o, a, k, log=log: log.append("pre")),
            opt.register_step_post_hook(lambda o, a, k, log=log: log.append("post")),
            opt.register_state_dict_pre_hook(lambda o, log=log: log.append("sd_pre")),
            opt.register_state_dict_post_hook(lambda o, sd, log=log: {**sd, "extra": 1}),
            opt.register_load_state_dict_pre_hook(lambda o, sd, log=log: log.append("load_pre")),
            opt.register_load_state_dict_post_hook(lambda o, log=log: log.append("load_post"), prepend=True),
        ]
        p.grad = fc.tensor([1.0, 1.0]) if lib == "flambeau" else torch.tensor([1.0, 1.0])
        opt.step()
        sd = opt.state_dict()
        assert sd["extra"] == 1
        opt.load_state_dict({k: v for k, v in sd.items() if k != "extra"})
        handles[0].remove()
        opt.step()
        runs.append(log)
    assert runs[0] == runs[1] == ["pre", "post", "sd_pre", "load_pre", "load_post", "post"]

    # global hooks see every optimizer; a pre hook may replace the arguments
    handle = register_optimizer_step_pre_hook(lambda o, a, k: events.append(type(o).__name__))
    handle2 = register_optimizer_step_post_hook(lambda o, a, k: events.append("after"))
    opt = nn.optim.Adamax([p_o])
    opt.step()
    handle.remove()
    handle2.remove()
    opt.step()
    assert events == ["Adamax", "after"]
    bad = opt.register_step_pre_hook(lambda o, a, k: "oops")
    with pytest.raises(ValueError, match=r"\[Adamax.step\] a step pre hook must return None or a tuple"):
        opt.step()
    bad.remove()
    # hooks are not pickled (they may be lambdas); the copy works and has none
    opt.register_step_post_hook(lambda o, a, k: None)
    copy = pickle.loads(pickle.dumps(opt))
    assert len(copy._optimizer_step_post_hooks) == 0 and copy.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
