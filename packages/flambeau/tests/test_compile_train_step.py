"""fb.compile of a whole training step (Note [Captured backward]): zero_grad, forward, loss, backward() and
optimizer.step() replay as one program; eager flambeau and torch are the oracles, guard misses and fallbacks
say why."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau_nn.optim.optimizer import ParamState

pytestmark = pytest.mark.usefixtures("ext_root")

_MODELS_PY = Path(__file__).resolve().parents[3] / "benchmarks" / "models.py"
_spec = importlib.util.spec_from_file_location("flambeau_benchmark_models_step", _MODELS_PY)
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # dataclasses look their module up there
_spec.loader.exec_module(bench)
FW, TW = bench.framework("flambeau"), bench.framework("torch")


@pytest.fixture(autouse=True)
def _fresh():
    fb.compiler.reset()
    yield
    fb.compiler.reset()


def _twins(name, batch=16, optimizer=None):
    """Two benchmark trainers of ``name`` with the same weights and batch (eager, to be compiled)."""
    spec = bench.MODELS[name]
    fb.manual_seed(0)
    inputs = spec.make_inputs(FW, batch)
    trainers = []
    for _ in range(2):
        fb.manual_seed(1)
        t = bench.TrainStep(spec, FW, inputs=inputs)
        if optimizer is not None:
            t.optimizer = optimizer(t.model.parameters())
        trainers.append(t)
    return trainers


def _state(t):
    """Everything a step leaves behind: parameters, gradients, optimizer state, buffers."""
    out = [p.detach().clone() for p in t.model.parameters()]
    out += [p.grad.clone() for p in t.model.parameters()]
    for p in t.model.parameters():
        out += [v.clone() for v in t.optimizer.state[p].values() if isinstance(v, fb.Tensor)]
    return out + [b.clone() for b in t.model.buffers()]


def _assert_same(a, b, rtol=1e-5, atol=1e-6):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("compiled_model", [False, True], ids=["model", "compiled_model"])
@pytest.mark.parametrize("name", ["mlp", "ncf"])
def test_twenty_compiled_steps_equal_eager(name, compiled_model):
    """As the benchmark's fb.compile row: the step compiled, its model too (captured inline in the step)."""
    eager, compiled = _twins(name)
    if compiled_model:
        compiled.model = fb.compile(compiled.model)
    step = fb.compile(compiled.step)
    for _ in range(20):
        want, got = eager.step(), step()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
        _assert_same(_state(eager), _state(compiled))
    # The first step makes the momentum buffers (eager), the second is captured, the other 18 replay.
    assert len(step.graphs) == 1 and len(step.break_reasons) == 1
    ops = step.graphs[0].op_names()
    assert "backward" in ops and ops[-1] == "_fused_sgd_"


@pytest.mark.parametrize("name", ["mlp", "ncf"])
def test_compiled_steps_match_torch(name):
    """The same weights, batch and SGD with momentum in torch: parameters after 20 steps agree."""
    spec = bench.MODELS[name]
    fb.manual_seed(0)
    args, target = spec.make_inputs(FW, 16)
    fb.manual_seed(1)
    trainer = bench.TrainStep(spec, FW, inputs=(args, target))
    tmodel = spec.build(TW)
    with torch.no_grad():
        for tp, p in zip(tmodel.parameters(), trainer.model.parameters(), strict=True):
            tp.copy_(torch.from_numpy(p.detach().numpy()))
    targs = tuple(torch.from_numpy(a.numpy()) for a in args)
    ttrainer = bench.TrainStep(spec, TW, model=tmodel, inputs=(targs, torch.from_numpy(target.numpy())))
    step = fb.compile(trainer.step)
    for _ in range(20):
        np.testing.assert_allclose(step().item(), ttrainer.step().item(), rtol=1e-4)
    for p, tp in zip(trainer.model.parameters(), tmodel.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert len(step.graphs) == 1


def _loop(x, y, lin, opt, set_to_none=True):
    def step(x, y):
        opt.zero_grad(set_to_none=set_to_none)
        loss = fb.nn.functional.mse_loss(lin(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _pair(optimizer, batch_norm=False, **kw):
    out = []
    for _ in range(2):
        fb.manual_seed(3)
        norm = [fb.nn.BatchNorm1d(4)] if batch_norm else []  # running statistics in train mode, used in eval
        lin = fb.nn.Sequential(fb.nn.Linear(5, 4), *norm, fb.nn.Tanh(), fb.nn.Linear(4, 2))
        opt = optimizer(lin.parameters())
        out.append((lin, opt, _loop(None, None, lin, opt, **kw)))
    return out


def _batches(sizes):
    fb.manual_seed(4)
    return [(fb.randn(n, 5), fb.randn(n, 2)) for n in sizes]


def test_a_changed_lr_and_momentum_are_read_at_replay_not_new_captures():
    """Note [Live hyperparameters]: the fused op reads the group's lr and momentum when it replays; only the
    momentum's sign is guarded (it decides whether the step keeps buffers)."""
    (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=0.9))
    step = fb.compile(plain)
    for i, (x, y) in enumerate(_batches([8] * 10)):
        for opt in (opt_e, opt_c):
            opt.param_groups[0]["lr"] = 0.1 / (i + 1)
            opt.param_groups[0]["momentum"] = 0.9 - 0.05 * i
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    # The first step makes the momentum buffers (eager), the second is captured, the other 8 replay.
    assert len(step.graphs) == 1 and len(step.break_reasons) == 1
    (node,) = [n for n in step.graphs[0].nodes if n.name == "_fused_sgd_"]
    assert repr(node.kwargs["lr"]) == "group['lr']" and repr(node.kwargs["momentum"]) == "group['momentum']"
    for opt in (opt_e, opt_c):  # momentum 0: no buffer update, another graph
        opt.param_groups[0]["momentum"] = 0.0
    x, y = _batches([8])[0]
    np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    assert len(step.graphs) == 2


def test_a_new_batch_size_and_train_eval_are_new_entries():
    optimizer = lambda ps: fb.optim.SGD(ps, lr=0.05, momentum=0.5)  # noqa: E731
    (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(optimizer, batch_norm=True)
    step = fb.compile(plain)
    sizes = [8, 8, 8, 6, 6, 8, 8]
    for i, (x, y) in enumerate(_batches(sizes)):
        if i == 5:
            lin_e.eval(), lin_c.eval()
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-5)
    for a, b in zip(lin_e.state_dict().values(), lin_c.state_dict().values(), strict=True):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    # batch 8 train (after the first step made the buffers), batch 6 train, batch 8 eval
    assert len(step.graphs) == 3


def test_zero_grad_to_zero_and_adam_and_gradient_accumulation():
    """zero_grad(set_to_none=False) zeroes the .grad in place; Adam keeps step counts and two moments;
    a step without zero_grad accumulates into the existing .grad (guarded: the .grad exists at entry)."""
    for kw, optimizer in (
        ({"set_to_none": False}, lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)),
        ({}, lambda ps: fb.optim.Adam(ps, lr=1e-2)),
        ({}, lambda ps: fb.optim.AdamW(ps, lr=1e-2, weight_decay=0.1)),
    ):
        (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(optimizer, **kw)
        step = fb.compile(plain)
        for x, y in _batches([8] * 6):
            np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
        for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
            np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-6, atol=1e-7)
            for k, v in opt_e.state[a].items():
                w = opt_c.state[b][k]
                np.testing.assert_allclose(np.asarray(w), np.asarray(v), rtol=1e-6, atol=1e-7)
        assert len(step.graphs) >= 1, step.break_reasons

    lin = fb.nn.Linear(3, 1)
    twin = fb.nn.Linear(3, 1)
    twin.load_state_dict(lin.state_dict())
    x = fb.randn(4, 3)

    def accumulate(model, x):
        model(x).square().mean().backward()
        return model.weight.grad

    step = fb.compile(lambda x: accumulate(lin, x))
    for _ in range(4):
        np.testing.assert_allclose(step(x).numpy(), accumulate(twin, x).numpy(), rtol=1e-6)
    # One graph where .grad is None at entry (backward makes it), one where it exists (backward adds to it);
    # the capture never replays a graph with backward to check it (that would accumulate twice).
    assert len(step.graphs) == 2


def test_a_module_changed_after_the_capture_is_a_guard_miss_of_the_step():
    """The step's guard reuses the module check built before the capture (Note [Compile guards]): a submodule
    replaced, a parameter replaced or a module attribute changed afterwards is still a miss, and each is a
    new capture equal to eager."""
    (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(lambda ps: fb.optim.SGD(ps, lr=0.1))
    step = fb.compile(plain)
    for i, (x, y) in enumerate(_batches([8] * 8)):
        for lin in (lin_e, lin_c):
            if i == 3:
                lin[1] = fb.nn.Sigmoid()
            if i == 5:
                lin[2].bias = fb.nn.Parameter(fb.full((2,), 0.5))
            if i == 6:
                lin[0].in_features = 6  # read by nothing the step runs, but a module attribute all the same
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    # captured at steps 0 (no optimizer state: SGD without momentum keeps none), 3, 5 and 6
    assert len(step.graphs) == 4, step.break_reasons


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_a_parameter_frozen_or_unfrozen_after_the_capture_is_a_guard_miss(momentum):
    """Note [Compile guards]: a parameter's requires_grad is part of the guarded state. Frozen after the
    capture, the step must stop updating it (no gradient, the optimizer skips it), as eager does; unfrozen,
    it trains again. Each change is a new capture equal to eager, never a replay of the old graph."""
    (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=momentum))
    step = fb.compile(plain)
    for i, (x, y) in enumerate(_batches([8] * 9)):
        for lin in (lin_e, lin_c):
            if i == 3:
                lin[0].weight.requires_grad_(False)
            if i == 6:
                lin[0].weight.requires_grad_(True)
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
        for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
            np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
            assert (a.grad is None) == (b.grad is None)
    frozen = lin_c[0].weight.detach().clone()
    lin_c[0].weight.requires_grad_(False)
    step(*_batches([8])[0])
    np.testing.assert_array_equal(lin_c[0].weight.detach().numpy(), frozen.numpy())


def test_a_frozen_parameter_of_a_compiled_module_gives_outputs_without_grad():
    fb.manual_seed(0)
    lin = fb.nn.Linear(5, 2)
    compiled = fb.compile(lin)
    x = fb.randn(3, 5)
    assert compiled(x).requires_grad
    lin.weight.requires_grad_(False)
    lin.bias.requires_grad_(False)
    out = compiled(x)
    assert not out.requires_grad and out.grad_fn is None
    np.testing.assert_array_equal(out.numpy(), lin(x).numpy())


@pytest.mark.parametrize("set_to_none", [True, False])
def test_a_grad_the_step_drops_first_is_not_guarded(set_to_none):
    """zero_grad(set_to_none=True) drops every .grad before anything reads it: whether one was None at entry
    changes nothing the replay does, so it is not guarded (no recapture) and the step still equals eager.
    zero_grad(set_to_none=False) zeroes the .grad it reads: a .grad dropped between steps is a guard miss."""
    (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(
        lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=0.9), set_to_none=set_to_none
    )
    step = fb.compile(plain)
    for i, (x, y) in enumerate(_batches([8] * 7)):
        if i in (4, 5):  # a .grad dropped (or replaced) by hand between steps, in both runs
            for lin in (lin_e, lin_c):
                first = next(iter(lin.parameters()))
                first.grad = None if i == 4 else fb.full_like(first, 3.0)
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-6, atol=1e-7)
    source = step._last.program.source
    if set_to_none:
        assert len(step.graphs) == 1 and len(step.break_reasons) == 1  # the first step made the momentum
        # the .grad writes are attribute writes, and the reads zero_grad made only to test them are gone:
        # what is read is the four gradients the optimizer takes
        assert source.count(".grad = None") == 4
        assert len([line for line in source.splitlines() if line.endswith(".grad")]) == 4
    else:
        assert len(step.graphs) == 2  # the entry with a None .grad is a capture of its own


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (lambda lin, x: fb.autograd.grad(lin(x).sum(), lin.weight)[0], "runs autograd for gradients it returns"),
        (lambda lin, x: lin(x).sum().backward(create_graph=True), "create_graph=True"),
        (lambda lin, x: lin(x).sum().backward() or lin.weight.grad.sum().item(), "reads a tensor's value"),
    ],
)
def test_what_is_not_captured_runs_eagerly_with_its_reason(body, reason):
    fb.manual_seed(0)
    lin, twin = fb.nn.Linear(3, 2), fb.nn.Linear(3, 2)
    twin.load_state_dict(lin.state_dict())
    x = fb.randn(4, 3)
    step = fb.compile(lambda: body(lin, x))
    for _ in range(3):
        lin.zero_grad(), twin.zero_grad()
        got, want = step(), body(twin, x)
        if isinstance(want, fb.Tensor):
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
        assert (lin.weight.grad is None) == (twin.weight.grad is None)
        if twin.weight.grad is not None:
            np.testing.assert_allclose(lin.weight.grad.numpy(), twin.weight.grad.numpy())
    assert step.graphs == [] and reason in step.break_reasons[0]
    assert reason in fb.compiler.explain(lambda: body(lin, x))().break_reasons[0]
    with pytest.raises(fb.compiler.Unsupported, match=r"fullgraph=True, but .*" + reason.split()[0]):
        fb.compile(lambda: body(lin, x), fullgraph=True)()


def test_backward_into_an_input_that_requires_grad_runs_eagerly():
    lin = fb.nn.Linear(3, 2)

    def step(x):
        lin(x).sum().backward()
        return x.grad

    compiled = fb.compile(step)
    for _ in range(3):
        x = fb.ones(2, 3, requires_grad=True)
        np.testing.assert_allclose(compiled(x).numpy(), lin.weight.sum(0).expand(2, 3).detach().numpy(), rtol=1e-6)
    assert compiled.graphs == [] and "input tensor requires grad" in compiled.break_reasons[0]


def test_a_replaced_optimizer_or_batch_attribute_is_a_guard_miss():
    eager, compiled = _twins("mlp", batch=8)
    step = fb.compile(compiled.step)
    for i in range(6):
        if i == 3:  # a new batch of another size, assigned to the trainer
            fb.manual_seed(9)
            batch = bench.MODELS["mlp"].make_inputs(FW, 4)
            eager.args, eager.target = batch
            compiled.args, compiled.target = batch
        np.testing.assert_allclose(step().item(), eager.step().item(), rtol=1e-6)
    _assert_same(_state(eager), _state(compiled))
    assert len(step.graphs) == 2


class _StateSubclass(ParamState):
    """A ParamState subclass: the guard reads it through ``state.get``, as any other mapping."""


@pytest.mark.parametrize("state_type", [ParamState, _StateSubclass], ids=["ParamState", "subclass"])
def test_optimizer_state_changed_after_the_capture_is_a_guard_miss(state_type):
    """Note [Compile guards]: the optimizer's state is guarded entry by entry (a ParamState's entries found by
    a C dict lookup, a subclass's through ``state.get``): a momentum buffer replaced, a parameter's state
    dropped, or a parameter given a new state dict after the capture is a miss, and each is a new capture
    (or an eager first step) equal to eager."""
    (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=0.9))
    opt_e.state, opt_c.state = state_type(), state_type()
    step = fb.compile(plain)
    for i, (x, y) in enumerate(_batches([8] * 10)):
        for lin, opt in ((lin_e, opt_e), (lin_c, opt_c)):
            w, b = lin[0].weight, lin[0].bias
            if i == 3:
                opt.state[w]["momentum_buffer"] = opt.state[w]["momentum_buffer"] * 0.5
            if i == 5:
                del opt.state[b]
            if i == 7:
                opt.state[w] = {"momentum_buffer": fb.full_like(w, 0.25)}
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    for a, c in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
        np.testing.assert_allclose(c.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
        buf_e, buf_c = opt_e.state[a]["momentum_buffer"], opt_c.state[c]["momentum_buffer"]
        np.testing.assert_allclose(buf_c.numpy(), buf_e.numpy(), rtol=1e-6, atol=1e-7)
    # Step 0 makes the buffers (eager), step 1 captures; new captures at steps 3 and 7; at step 5 the bias's
    # buffer is made again (eager) and step 6 captures.
    assert len(step.graphs) == 4, step.break_reasons


def test_a_steady_step_reads_no_optimizer_state_through_python(monkeypatch):
    """The guard of a ParamState reads its entries in C: a replayed step calls no ParamState method."""
    (_, _, eager), (lin_c, opt_c, plain) = _pair(lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=0.9))
    step = fb.compile(plain)
    batches = _batches([8] * 5)
    for x, y in batches[:2]:  # the eager first step, then the capture
        step(x, y)
    reads = []
    for name in ("__getitem__", "__len__", "__contains__", "__iter__"):
        original = getattr(ParamState, name)
        monkeypatch.setattr(ParamState, name, lambda self, *a, _f=original, _n=name: reads.append(_n) or _f(self, *a))
    for x, y in batches[2:]:
        step(x, y)
    assert reads == []
    assert len(step.graphs) == 1, step.break_reasons


class _ScaleShift(fb.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = fb.nn.Linear(4, 4)
        self.scale = fb.nn.Parameter(fb.ones(4) * 1.5)
        self.shift = fb.nn.Parameter(fb.full((4,), 0.1))

    def forward(self, x):
        return (self.lin(x) * self.scale + self.shift).tanh()


def _scale_shift_steps():
    """Two (model, step) pairs with the same weights: the second to be compiled."""
    runs = []
    for _ in range(2):
        fb.manual_seed(0)
        m = _ScaleShift()
        opt = fb.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x, y, m=m, opt=opt):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        runs.append((m, step))
    return runs


def _train_scale_shift(steps, count):
    """``count`` steps of both pairs of :func:`_scale_shift_steps` on the same batches: losses and parameters
    equal; returns the compiled step."""
    (m_e, eager), (m_c, plain) = steps
    step = fb.compile(plain)
    for x, y in _batches([8] * count):
        x, y = x[:, :4], y.repeat(1, 2)
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    for a, b in zip(m_e.parameters(), m_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-6)
        if a.grad is not None:
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-5, atol=1e-6)
    return step


def test_a_step_whose_forward_fuses_with_parameters_equals_eager():
    """The fused run (mul, add, tanh, sub, pow) reads parameters the step then updates; its generated backward
    runs inside the replayed backward()."""
    step = _train_scale_shift(_scale_shift_steps(), 6)
    assert len(step.graphs) == 1
    assert [list(g.ops) for g in step.fused_groups[0]] == [["mul", "add", "tanh", "sub", "pow"]]


def test_the_check_replay_runs_after_the_eager_runs_values_are_dropped(monkeypatch):
    """Note [Check replay memory]: the forward's intermediates the capture recorded (here the linear's and the
    tanh's results) are no longer held when the check replay runs, so it reuses their memory; the step still
    equals eager and fuses."""
    import weakref

    from flambeau.compiler import _capture

    made: list[weakref.ref] = []
    record = _capture._Capture._record

    def spy(self, name, args, kwargs, result):
        if name in ("linear", "tanh"):
            made.append(weakref.ref(result))
        return record(self, name, args, kwargs, result)

    alive_at_check: list[int] = []
    check = _capture._step_disagrees

    def counted(*args):
        alive_at_check.append(sum(r() is not None for r in made))
        return check(*args)

    monkeypatch.setattr(_capture._Capture, "_record", spy)
    monkeypatch.setattr(_capture, "_step_disagrees", counted)
    step = _train_scale_shift(_scale_shift_steps(), 4)
    assert len(made) >= 2 and alive_at_check == [0]
    assert len(step.graphs) == 1 and step.fused_groups[0]


def test_a_step_the_check_refuses_keeps_no_fused_kernels(monkeypatch):
    """The fusion runs before the check replay; a graph the check refuses runs eagerly and drops its fusion."""
    from flambeau.compiler import _capture

    monkeypatch.setattr(_capture, "_step_disagrees", lambda *args: "refused by the test")
    step = _train_scale_shift(_scale_shift_steps(), 3)
    assert step.graphs == [] and step.fused_groups == [] and "refused by the test" in step.break_reasons


def test_a_compiled_optimizer_step_alone_captures_after_its_first_step():
    """The first step makes the momentum buffers (eager, kept under the state it ran in), so the second step,
    under the new state, is captured rather than served by that eager entry; backward runs outside."""
    fb.manual_seed(0)
    lin, twin = fb.nn.Linear(3, 2), fb.nn.Linear(3, 2)
    twin.load_state_dict(lin.state_dict())
    opt, opt_e = (fb.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (lin, twin))
    step = fb.compile(opt.step)
    x = fb.randn(4, 3)
    for _ in range(5):
        for model, o, run in ((lin, opt, step), (twin, opt_e, opt_e.step)):
            o.zero_grad()
            model(x).square().mean().backward()
            run()
    for a, b in zip(twin.parameters(), lin.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert len(step.graphs) == 1 and step.graphs[0].op_names() == ["Tensor.grad", "Tensor.grad", "_fused_sgd_"]
    assert len(step.break_reasons) == 1 and "changes a module's attributes" in step.break_reasons[0]


def _clipped_pair():
    runs = []
    for _ in range(2):
        fb.manual_seed(0)
        m = fb.nn.Sequential(fb.nn.Linear(5, 8), fb.nn.ReLU(), fb.nn.Linear(8, 2))
        opt = fb.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)

        def step(x, y, m=m, opt=opt):
            opt.zero_grad()
            loss = fb.nn.functional.mse_loss(m(x), y)
            loss.backward()
            fb.nn.utils.clip_grad_norm_(m.parameters(), 0.1)  # norms, a clamp, .to(dtype), mul_ of each .grad
            opt.step()
            return loss

        runs.append((m, step))
    return runs


def _train_both(runs, step):
    (m_e, eager), (m_c, _) = runs
    fb.manual_seed(1)
    for _ in range(6):
        x, y = fb.randn(4, 5), fb.randn(4, 2) * 10
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    for a, b in zip(m_e.parameters(), m_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_gradient_clipping_inside_the_step_equals_eager():
    runs = _clipped_pair()
    step = fb.compile(runs[1][1])
    _train_both(runs, step)
    assert len(step.graphs) == 1
    ops = step.graphs[0].op_names()
    assert ops.index("backward") < ops.index("to") < ops.index("_fused_sgd_")


def test_a_step_the_capture_misreads_runs_eagerly(monkeypatch):
    """The safety net: a graph holding backward() is replayed once at capture on copies of the parameters,
    gradients and optimizer state; a misread op (here x.to(dtype, **{}) with its keyword dict taken as an
    argument, as before the recorder's trailing dict was read) leaves the step eager, with the reason."""
    import flambeau.compiler._graph as graph_module

    monkeypatch.setattr(graph_module, "_KWARGS_LAST", set())
    runs = _clipped_pair()
    step = fb.compile(runs[1][1])
    _train_both(runs, step)
    assert step.graphs == []
    assert any("the capture failed (TypeError: [to]" in r for r in step.break_reasons)


class _BackwardInForward(fb.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = fb.nn.Linear(3, 1)

    def forward(self, x):
        loss = self.lin(x).square().mean()
        loss.backward()
        return loss


def test_backward_inside_a_compiled_modules_forward_runs_eagerly():
    fb.manual_seed(0)
    model, twin = _BackwardInForward(), _BackwardInForward()
    twin.load_state_dict(model.state_dict())
    compiled = fb.compile(model)
    x = fb.randn(4, 3)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x).item(), twin(x).item(), rtol=1e-6)
        np.testing.assert_allclose(model.lin.weight.grad.numpy(), twin.lin.weight.grad.numpy(), rtol=1e-6)
    graphs, reasons = compiled._compiled_call.graphs, compiled._compiled_call.break_reasons
    assert graphs == [] and "a module's forward runs backward()" in reasons[0]


def _decay(opt, args, kwargs):
    with fb.no_grad():
        for group in opt.param_groups:
            for p in group["params"]:
                p.mul_(0.99)


def test_step_hooks_registered_after_the_capture_are_a_guard_miss():
    """A hook's ops are recorded into the new capture (its Python side effects happen at capture only, as a
    module hook's); without the guard the old graph would replay without the hook's decay."""
    for register in ("own", "global"):
        (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=0.9))
        step = fb.compile(plain)
        batches = _batches([8] * 6)
        for x, y in batches[:3]:
            step(x, y), eager(x, y)
        if register == "own":
            handles = [opt.register_step_post_hook(_decay) for opt in (opt_e, opt_c)]
        else:
            handles = [fb.optim.optimizer.register_optimizer_step_post_hook(_decay)]
        try:
            for x, y in batches[3:]:
                np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
        finally:
            for h in handles:
                h.remove()
        for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
            np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
        assert len(step.graphs) == 2, register  # before the hook and with it
        assert step.graphs[1].op_names()[-1] == "mul_"


def test_a_step_with_dropout_draws_as_eager():
    """Dropout's mask is drawn afresh on every replay, from the same generator stream as eager's."""
    runs = []
    for _ in range(2):
        fb.manual_seed(0)
        m = fb.nn.Sequential(fb.nn.Linear(5, 16), fb.nn.ReLU(), fb.nn.Dropout(0.3), fb.nn.Linear(16, 2))
        opt = fb.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x, y, m=m, opt=opt):
            opt.zero_grad()
            loss = fb.nn.functional.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            return loss

        runs.append((m, step))
    (m_e, eager), (m_c, plain) = runs
    step = fb.compile(plain)
    for i, (x, y) in enumerate(_batches([8] * 6)):
        fb.manual_seed(100 + i)
        want = eager(x, y).item()
        fb.manual_seed(100 + i)
        np.testing.assert_allclose(step(x, y).item(), want, rtol=1e-6)
    for a, b in zip(m_e.parameters(), m_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert len(step.graphs) == 1 and "native_dropout" in step.graphs[0].op_names()


# ------------------------------------------------------------------------- LR schedulers (Note [Live hyperparameters])
_OPTIMIZERS = {
    "sgd": lambda lib, ps, lr: lib.optim.SGD(ps, lr=lr, momentum=0.9, weight_decay=1e-3),
    "adam": lambda lib, ps, lr: lib.optim.Adam(ps, lr=lr, weight_decay=1e-3),
    "adamw": lambda lib, ps, lr: lib.optim.AdamW(ps, lr=lr),
    "rmsprop": lambda lib, ps, lr: lib.optim.RMSprop(ps, lr=lr, momentum=0.5),
    "adagrad": lambda lib, ps, lr: lib.optim.Adagrad(ps, lr=lr),
}
_SCHEDULERS = {
    "step": lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.7),
    "cosine": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10),
    "onecycle": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=30),
    "lambda": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, lambda i: 1.0 / (1 + i)),
}
_CASES = [
    ("sgd", "step"),
    ("sgd", "cosine"),
    ("sgd", "onecycle"),  # cycles momentum too
    ("adam", "onecycle"),  # cycles betas[0]
    ("adamw", "cosine"),
    ("rmsprop", "lambda"),
    ("adagrad", "step"),
    ("adam", "lambda"),
]


def _torch_twin(lin):
    net = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for tp, p in zip(net.parameters(), lin.parameters(), strict=True):
            tp.copy_(torch.from_numpy(p.detach().numpy()))
    return net


def _scheduled(lib, params, opt_name, sched_name, tensor_lr):
    lr = lib.tensor(0.05) if tensor_lr else 0.05
    opt = _OPTIMIZERS[opt_name](lib, params, lr)
    return opt, _SCHEDULERS[sched_name](lib, opt)


@pytest.mark.parametrize("tensor_lr", [False, True], ids=["float_lr", "tensor_lr"])
@pytest.mark.parametrize(("opt_name", "sched_name"), _CASES, ids=[f"{o}-{s}" for o, s in _CASES])
def test_a_scheduler_stepping_every_iteration_never_recaptures(opt_name, sched_name, tensor_lr):
    """22 steps with the scheduler stepped after each: one capture, the values of eager flambeau and torch."""
    nets, opts, scheds = [], [], []
    for _ in range(2):
        fb.manual_seed(3)
        lin = fb.nn.Sequential(fb.nn.Linear(5, 4), fb.nn.Tanh(), fb.nn.Linear(4, 2))
        opt, sched = _scheduled(fb, lin.parameters(), opt_name, sched_name, tensor_lr)
        nets.append(lin), opts.append(opt), scheds.append(sched)
    tnet = _torch_twin(nets[0])
    topt, tsched = _scheduled(torch, tnet.parameters(), opt_name, sched_name, tensor_lr)
    lr_before = opts[1].param_groups[0]["lr"]
    eager = _loop(None, None, nets[0], opts[0])
    step = fb.compile(_loop(None, None, nets[1], opts[1]))
    captures = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no recompile-limit warning
        for x, y in _batches([8] * 22):
            got, want = step(x, y).item(), eager(x, y).item()
            captures.append(len(step.graphs) + len(step.break_reasons))  # one entry per capture
            topt.zero_grad()
            tloss = torch.nn.functional.mse_loss(tnet(torch.from_numpy(x.numpy())), torch.from_numpy(y.numpy()))
            tloss.backward()
            topt.step()
            np.testing.assert_allclose(got, want, rtol=1e-6)
            np.testing.assert_allclose(got, tloss.item(), rtol=1e-4)
            for s in (scheds[0], scheds[1], tsched):
                s.step()
    for a, b, t in zip(nets[0].parameters(), nets[1].parameters(), tnet.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(b.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(opts[1].param_groups[0]["lr"]), float(topt.param_groups[0]["lr"]), rtol=1e-6)
    # Captures: the first step (.grad is None at entry; most optimizers make their state, so it runs eagerly)
    # and the second; none after, whatever the lr.
    assert captures == [1] + [2] * 21, step.break_reasons
    assert len(step.graphs) == (2 if opt_name == "adagrad" else 1), step.break_reasons
    if tensor_lr:  # the scheduler filled the same tensor, which the replay read
        assert opts[1].param_groups[0]["lr"] is lr_before
    fused = [n for n in step.graphs[-1].nodes if n.name.startswith("_fused_")]
    assert len(fused) == 1 and repr(fused[0].kwargs["lr"]) == "group['lr']"


def test_a_step_that_uses_the_lr_itself_keeps_it_guarded_by_value():
    """A float lr the step function reads from the param group is a constant of its graph: guarded by value
    (a new capture per value, each equal to eager); a tensor lr read with .item() in the step is a break."""
    (lin_e, opt_e, _), (lin_c, opt_c, _) = _pair(lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=0.9))

    def make(lin, opt):
        def step(x, y):
            opt.zero_grad()
            loss = fb.nn.functional.mse_loss(lin(x), y) * (1 + opt.param_groups[0]["lr"])
            loss.backward()
            opt.step()
            return loss

        return step

    eager, step = make(lin_e, opt_e), fb.compile(make(lin_c, opt_c))
    for i, (x, y) in enumerate(_batches([8] * 5)):
        for opt in (opt_e, opt_c):
            opt.param_groups[0]["lr"] = 0.1 / (i + 1)
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert len(step.graphs) == 4  # one per lr after the first step

    lin = fb.nn.Linear(5, 2)
    opt = fb.optim.SGD(lin.parameters(), lr=fb.tensor(0.1))

    def reads(x, y):
        opt.zero_grad()
        loss = fb.nn.functional.mse_loss(lin(x), y) * opt.param_groups[0]["lr"].item()
        loss.backward()
        opt.step()
        return loss

    compiled = fb.compile(reads)
    for x, y in _batches([8] * 3):
        compiled(x, y)
    assert not compiled.graphs
    assert (
        compiled.break_reasons[-1]
        == "the function reads a tensor's value into Python (item): data-dependent control flow"
    )


def _lr_of(opt):
    """A user's helper, outside the compiled function's own code, reading the scheduled lr."""
    return opt.param_groups[0]["lr"]


def _warm_up(opt, i):
    """A user's helper writing the lr from inside the step (a warm-up)."""
    opt.param_groups[0]["lr"] = 0.1 * min(1.0, (i + 1) / 4)


@pytest.mark.parametrize("use", ["helper_reads_group", "scheduler_last_lr", "warm_up_inside"])
def test_settings_used_beyond_the_steps_own_code_stay_guarded_by_value(use):
    """Note [Live hyperparameters]: a helper reading the group, ``get_last_lr()`` or a write during the call
    make every setting guarded by value, so a value derived from the lr is never a stale constant."""
    (lin_e, opt_e, _), (lin_c, opt_c, _) = _pair(lambda ps: fb.optim.SGD(ps, lr=0.1, momentum=0.9))
    scheds = [fb.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5) for o in (opt_e, opt_c)]

    def make(lin, opt, sched):
        def step(x, y, i):
            opt.zero_grad()
            loss = fb.nn.functional.mse_loss(lin(x), y)
            if use == "helper_reads_group":
                scale = _lr_of(opt) * 2
            elif use == "scheduler_last_lr":
                scale = sched.get_last_lr()[0] * 2
            else:
                _warm_up(opt, i)
                scale = 1.0
            (loss * scale).backward()
            opt.step()
            return loss * scale

        return step

    eager = make(lin_e, opt_e, scheds[0])
    step = fb.compile(make(lin_c, opt_c, scheds[1]))
    for i, (x, y) in enumerate(_batches([8] * 6)):
        i_arg = 0 if use != "warm_up_inside" else i
        np.testing.assert_allclose(step(x, y, i_arg).item(), eager(x, y, i_arg).item(), rtol=1e-6)
        if use != "warm_up_inside":
            for s in scheds:
                s.step()
    for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    if use != "warm_up_inside":  # guarded by value: each new lr a new capture (not a replay with a stale scale)
        assert len(step.graphs) == 5, step.break_reasons


def test_a_composed_optimizer_with_a_tensor_lr_runs_eagerly_with_its_reason():
    """NAdam's step derives values from its lr in Python: its read of a tensor lr is a break, as before."""
    (lin_e, opt_e, eager), (lin_c, opt_c, plain) = _pair(lambda ps: fb.optim.NAdam(ps, lr=fb.tensor(0.01)))
    step = fb.compile(plain)
    for x, y in _batches([8] * 3):
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    assert not step.graphs
    assert "reads a tensor's value into Python" in step.break_reasons[-1]


@pytest.mark.parametrize("tensor_lr", [False, True], ids=["float_lr", "tensor_lr"])
def test_param_groups_with_their_own_schedules_replay_each_groups_lr(tensor_lr):
    lrs = (fb.tensor(0.05), fb.tensor(0.2)) if tensor_lr else (0.05, 0.2)
    pairs = []
    for _ in range(2):
        fb.manual_seed(3)
        lin = fb.nn.Sequential(fb.nn.Linear(5, 4), fb.nn.Tanh(), fb.nn.Linear(4, 2))
        groups = [{"params": lin[0].parameters(), "lr": lrs[0]}, {"params": lin[2].parameters(), "lr": lrs[1]}]
        opt = fb.optim.Adam(groups, lr=fb.tensor(0.1) if tensor_lr else 0.1)
        sched = fb.optim.lr_scheduler.LambdaLR(opt, [lambda i: 0.9**i, lambda i: 1.0 / (1 + i)])
        pairs.append((lin, opt, sched, _loop(None, None, lin, opt)))
    (lin_e, _, sched_e, eager), (lin_c, opt_c, sched_c, plain) = pairs
    step = fb.compile(plain)
    for x, y in _batches([8] * 12):
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
        sched_e.step(), sched_c.step()
    for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert len(step.graphs) == 1 and len(step.break_reasons) == 1
    nodes = [n for n in step.graphs[0].nodes if n.name == "_fused_adam_"]
    assert [n.kwargs["lr"].group is g for n, g in zip(nodes, opt_c.param_groups, strict=True)] == [True, True]


def test_parameters_with_their_own_gradient_dtype():
    """bfloat16 parameters whose gradients are float32 (grad_dtype): the capture's copies of the parameters
    keep that setting, so the compiled step equals eager (it raised assigning a float32 .grad to a copy)."""

    def make():
        fb.manual_seed(0)
        lin = fb.nn.Linear(4, 3).to(fb.bfloat16)
        for p in lin.parameters():
            p.grad_dtype = fb.float32
        return lin, fb.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)

    def train(lin, opt, x):
        opt.zero_grad()
        loss = lin(x).float().square().mean()
        loss.backward()
        opt.step()
        return loss

    (lin_e, opt_e), (lin_c, opt_c) = make(), make()
    step = fb.compile(lambda x: train(lin_c, opt_c, x))
    x = fb.randn(5, 4).to(fb.bfloat16)
    for _ in range(4):
        assert step(x).item() == train(lin_e, opt_e, x).item()
    for a, b in zip(lin_e.parameters(), lin_c.parameters(), strict=True):
        assert b.grad.dtype == fb.float32 and b.grad_dtype == fb.float32
        assert b.detach().float().tolist() == a.detach().float().tolist()
        assert b.grad.tolist() == a.grad.tolist()
