"""LBFGS against torch.optim.LBFGS on the Rosenbrock function, with and without the strong-Wolfe line search."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from nn_testing import assert_close, from_torch, to_numpy


def _rosenbrock(x, y):
    # Summed over the pieces: x and y are two parameters of the same shape.
    return ((1 - x) ** 2 + 100 * (y - x**2) ** 2).sum()


def _setup(dtype, kwargs, start=(-1.5, 2.0), n=3):
    xs = torch.tensor([start[0] + 0.1 * i for i in range(n)], dtype=dtype)
    ys = torch.tensor([start[1] - 0.2 * i for i in range(n)], dtype=dtype)
    theirs = [torch.nn.Parameter(xs.clone()), torch.nn.Parameter(ys.clone())]
    ours = [nn.Parameter(from_torch(xs)), nn.Parameter(from_torch(ys))]
    opt_o = nn.optim.LBFGS(ours, **kwargs)
    opt_t = torch.optim.LBFGS(theirs, **kwargs)

    def closure_o():
        opt_o.zero_grad()
        loss = _rosenbrock(*ours)
        loss.backward()
        return loss

    def closure_t():
        opt_t.zero_grad()
        loss = _rosenbrock(*theirs)
        loss.backward()
        return loss

    return ours, theirs, opt_o, opt_t, closure_o, closure_t


CASES = [
    dict(),
    dict(line_search_fn="strong_wolfe"),
    dict(lr=0.1, max_iter=5, history_size=3),
    dict(line_search_fn="strong_wolfe", history_size=4, max_iter=8, tolerance_change=1e-12),
    dict(lr=0.5, max_iter=4, max_eval=6, line_search_fn="strong_wolfe"),
]


@pytest.mark.parametrize("kwargs", CASES)
def test_rosenbrock_float64_matches_torch_step_for_step(kwargs):
    ours, theirs, opt_o, opt_t, closure_o, closure_t = _setup(torch.float64, kwargs)
    for step in range(12):
        loss_o = opt_o.step(closure_o)
        loss_t = opt_t.step(closure_t)
        assert loss_o.item() == pytest.approx(loss_t.item(), rel=1e-9, abs=1e-14), step
        for o, t in zip(ours, theirs, strict=True):
            assert_close(o, t, rtol=1e-8, atol=1e-10)
        s_o, s_t = opt_o.state[ours[0]], opt_t.state[theirs[0]]
        assert (s_o["func_evals"], s_o["n_iter"]) == (s_t["func_evals"], s_t["n_iter"]), step
    assert sorted(opt_o.state_dict()["state"][0]) == sorted(opt_t.state_dict()["state"][0])
    assert opt_o.state_dict()["param_groups"] == opt_t.state_dict()["param_groups"]


def test_strong_wolfe_converges_to_the_minimum_like_torch():
    ours, theirs, opt_o, opt_t, closure_o, closure_t = _setup(torch.float64, dict(line_search_fn="strong_wolfe"))
    for _ in range(30):
        opt_o.step(closure_o)
        opt_t.step(closure_t)
    np.testing.assert_allclose(to_numpy(ours[0]), np.ones(3), atol=1e-5)
    np.testing.assert_allclose(to_numpy(ours[1]), np.ones(3), atol=1e-5)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t, rtol=1e-8, atol=1e-10)
    assert opt_o.state[ours[0]]["func_evals"] == opt_t.state[theirs[0]]["func_evals"]


@pytest.mark.parametrize("kwargs,steps", [(dict(max_iter=1), 5), (dict(max_iter=1, line_search_fn="strong_wolfe"), 12)])
def test_rosenbrock_float32_matches_torch(kwargs, steps):
    # float32 roundings of the dot products differ by ulps between libraries and the iteration is
    # chaotic on Rosenbrock: compare one iteration per step, for as long as the paths stay together.
    ours, theirs, opt_o, opt_t, closure_o, closure_t = _setup(torch.float32, kwargs)
    for _ in range(steps):
        opt_o.step(closure_o)
        opt_t.step(closure_t)
        for o, t in zip(ours, theirs, strict=True):
            assert_close(o, t, rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_continues_identically():
    kwargs = dict(line_search_fn="strong_wolfe", history_size=5)
    ours, theirs, opt_o, opt_t, closure_o, closure_t = _setup(torch.float64, kwargs)
    for _ in range(2):
        opt_o.step(closure_o)
        opt_t.step(closure_t)
    # torch's LBFGS state (tensors and lists of tensors) into a fresh flambeau LBFGS
    sd_t = opt_t.state_dict()

    def conv(v):
        if isinstance(v, torch.Tensor):
            return from_torch(v)
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    fresh = [nn.Parameter(from_torch(t)) for t in theirs]
    opt_f = nn.optim.LBFGS(fresh, **kwargs)
    opt_f.load_state_dict(
        {
            "state": {k: {n: conv(v) for n, v in s.items()} for k, s in sd_t["state"].items()},
            "param_groups": sd_t["param_groups"],
        }
    )

    def closure_f():
        opt_f.zero_grad()
        loss = _rosenbrock(*fresh)
        loss.backward()
        return loss

    for _ in range(3):
        opt_f.step(closure_f)
        opt_t.step(closure_t)
        for o, t in zip(fresh, theirs, strict=True):
            assert_close(o, t, rtol=1e-8, atol=1e-10)


def test_stops_at_once_when_the_gradient_is_tiny():
    p = nn.Parameter(fc.tensor([1.0, 1.0], dtype=fc.float64))
    opt = nn.optim.LBFGS([p])

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 0.0
    assert opt.state[p]["func_evals"] == 1 and opt.state[p]["n_iter"] == 0


@pytest.mark.parametrize(
    "make,exc,msg",
    [
        (lambda ps: nn.optim.LBFGS(ps, lr=-1.0), ValueError, r"\[LBFGS\] Invalid learning rate: -1.0"),
        (lambda ps: nn.optim.LBFGS(ps, line_search_fn="armijo"), ValueError, r"only 'strong_wolfe' is supported"),
        (
            lambda ps: nn.optim.LBFGS([{"params": ps[:1]}, {"params": ps[1:]}]),
            ValueError,
            r"\[LBFGS\] LBFGS doesn't support per-parameter options",
        ),
        (lambda ps: nn.optim.LBFGS(ps).step(None), ValueError, r"\[LBFGS\] step\(\) needs a closure"),
        (
            lambda ps: nn.optim.LBFGS(ps[:1]).add_param_group({"params": ps[1:]}),
            ValueError,
            "doesn't support per-parameter options",
        ),
    ],
)
def test_bad_input(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make([nn.Parameter(fc.zeros(2)), nn.Parameter(fc.zeros(2))])


def test_loading_casts_the_history_to_the_params_dtype_as_torch():
    kwargs = dict(history_size=4)
    _, theirs, _, opt_t, _, closure_t = _setup(torch.float64, kwargs)
    for _ in range(2):
        opt_t.step(closure_t)
    sd_t = opt_t.state_dict()
    state = {
        k: {
            n: [from_torch(x) for x in v] if isinstance(v, list) and v and isinstance(v[0], torch.Tensor) else v
            for n, v in s.items()
        }
        for k, s in sd_t["state"].items()
    }
    state[0] = {n: from_torch(v) if isinstance(v, torch.Tensor) else v for n, v in state[0].items()}
    p32 = [nn.Parameter(fc.zeros(3)), nn.Parameter(fc.zeros(3))]
    opt = nn.optim.LBFGS(p32, **kwargs)
    opt.load_state_dict({"state": state, "param_groups": sd_t["param_groups"]})
    loaded = opt.state[p32[0]]
    assert all(t.dtype == fc.float32 for t in loaded["old_dirs"] + loaded["old_stps"])
    assert loaded["d"].dtype == fc.float32 and loaded["n_iter"] == sd_t["state"][0]["n_iter"]
    t32 = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(3))]
    opt_t32 = torch.optim.LBFGS(t32, **kwargs)
    opt_t32.load_state_dict(sd_t)
    assert all(t.dtype == torch.float32 for t in opt_t32.state[t32[0]]["old_dirs"])
