"""Records of passed check replays (Note [Checked captures] in flambeau/compiler/_checked.py): a capture with
the fingerprint of an earlier passed check skips its replay; anything that could make the replay differ
checks by replay again. Eager flambeau and torch are the oracles of the trained values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau.compiler import _capture, _checked

RECORD = "a record of an earlier check"
# Why a step's first call runs eagerly: the optimizer makes its momentum buffers.
_BROKE = (
    "the function changes a module's attributes (training mode, parameters, submodules, settings) or a global or "
    "closure value it reads (such as a list it appends to)"
)


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    """Each test its own disk cache (no record of another test's step), unfused graphs (no kernel builds)."""
    monkeypatch.setenv("FLAMBEAU_EXTENSIONS_DIR", str(tmp_path / "ext"))
    monkeypatch.setattr(fb.compiler.config, "fusion", False)
    fb.compiler.reset()
    yield
    fb.compiler.reset()


def _records():
    from flambeau import _cpp_extension as ext

    folder = Path(ext._extensions_root()) / "compile_checked"
    return sorted(folder.glob("*.json")) if folder.exists() else []


def _trainer(hidden=5, hook=None):
    """(model, step(x, y)) of a small MLP with SGD and momentum; ``hook(model)`` runs at the end of a step."""
    fb.manual_seed(0)
    model = fb.nn.Sequential(fb.nn.Linear(3, hidden), fb.nn.Tanh(), fb.nn.Linear(hidden, 2))
    opt = fb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        if hook is not None:
            hook(model)
        return loss

    return model, step


def _batches(n):
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32))
            for _ in range(n)]  # fmt: skip


def _captured(plain):
    """``fb.compile(plain)`` called twice on one batch (the first call makes the momentum buffers, the second
    captures)."""
    step = fb.compile(plain)
    x, y = (fb.tensor(a) for a in _batches(1)[0])
    step(x, y), step(x, y)
    return step


def _train_against_torch(step, model, n=4):
    """``n`` steps of the compiled ``step`` against torch's same model and optimizer: losses and weights equal."""
    ref = torch.nn.Sequential(*(torch.nn.Linear(m.in_features, m.out_features) if isinstance(m, fb.nn.Linear)
                                else torch.nn.Tanh() for m in model))  # fmt: skip
    with torch.no_grad():
        for p, q in zip(ref.parameters(), model.parameters(), strict=True):
            p.copy_(torch.from_numpy(q.detach().numpy().copy()))
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for x, y in _batches(n):
        got = step(fb.tensor(x), fb.tensor(y))
        opt.zero_grad(set_to_none=True)
        want = ((ref(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
        want.backward()
        opt.step()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    for p, q in zip(ref.parameters(), model.parameters(), strict=True):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_second_capture_of_the_same_step_takes_the_record_and_equals_torch():
    model, plain = _trainer()
    step = fb.compile(plain)
    _train_against_torch(step, model)
    assert step.checks == ["replayed"] and len(_records()) == 1
    model, plain = _trainer()  # the same code, model and batch shapes: the same fingerprint
    step = fb.compile(plain)
    _train_against_torch(step, model)
    assert step.checks == [RECORD] and len(step.graphs) == 1 and len(_records()) == 1


def test_a_capture_from_a_state_that_needed_no_copies_makes_none():
    """Note [Checked captures]'s hints: the first step's capture (it breaks: the optimizer makes its buffers)
    and the second's (its check has a record) needed no copies the second time, so the third time none are made."""
    before = _capture.copies_made
    assert _captured(_trainer()[1]).checks == ["replayed"]
    assert _capture.copies_made - before == 2
    assert _captured(_trainer()[1]).checks == [RECORD]
    before = _capture.copies_made
    model, plain = _trainer()
    step = fb.compile(plain)
    _train_against_torch(step, model)
    assert step.checks == [RECORD] and _capture.copies_made == before


def _step_doubling_on(model, opt, cfg):
    """A training step whose graph depends on a setting its object holds (``cfg.double``), outside any hint's key."""

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = ((model(x) - y) ** 2).mean()
        if cfg.double:
            loss = loss * 2
        loss.backward()
        opt.step()
        return loss

    return step


def test_a_wrong_hint_costs_a_capture_never_a_wrong_result():
    """The same code from the same state, but a setting its object holds (not in the hint's key) changes the
    graph: the capture without copies finds no record, so that call is eager and the next captures with copies."""
    import types

    def make(double):
        fb.manual_seed(0)
        model = fb.nn.Sequential(fb.nn.Linear(3, 5), fb.nn.Tanh(), fb.nn.Linear(5, 2))
        opt = fb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return model, _step_doubling_on(model, opt, types.SimpleNamespace(double=double))

    assert _captured(make(False)[1]).checks == ["replayed"]
    (eager_model, eager), (model, plain) = make(True), make(True)
    step = fb.compile(plain)
    before = _capture.copies_made
    for k, (x, y) in enumerate(_batches(4)):
        x, y = fb.tensor(x), fb.tensor(y)
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
        assert len(step.graphs) == (1 if k >= 2 else 0)  # the second call ran eagerly, the third captured
    assert _capture.copies_made - before == 1 and step.checks == ["replayed"] and step.break_reasons == [_BROKE]
    assert "mul" in step.graphs[0].op_names()
    for p, q in zip(eager_model.parameters(), model.parameters(), strict=True):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6)


def test_explain_checks_a_step_whatever_its_hint():
    """explain captures once: with a hint from a step of the same code and state but another graph, its one
    capture still makes copies, so it reports the graph (a capture without copies would have none to report)."""
    import types

    def make(double):
        fb.manual_seed(0)
        model = fb.nn.Linear(3, 2)
        opt = fb.optim.SGD(model.parameters(), lr=0.1)
        return _step_doubling_on(model, opt, types.SimpleNamespace(double=double))

    x, y = (fb.tensor(a) for a in _batches(1)[0])
    first = fb.compile(make(False))
    first(x, y), first(x, y)  # the first call makes the .grad tensors (eager), the second captures
    assert first.checks == ["replayed"] and len(_records()) == 1
    other = make(True)
    other(x, y)  # eager: the state the hint of the first's capture names
    out = fb.compiler.explain(other, x, y)
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    ops = first.graphs[0].op_names()
    after = ops.index("mean") + 1  # the loss doubled
    assert out.ops_per_graph[0] == [*ops[:after], "mul", *ops[after:]]


def test_a_record_is_never_used_by_another_model():
    assert _captured(_trainer()[1]).checks == ["replayed"]
    assert _captured(_trainer()[1]).checks == [RECORD]
    model, plain = _trainer(hidden=6)  # another width: another graph
    step = fb.compile(plain)
    _train_against_torch(step, model)
    assert step.checks == ["replayed"] and len(_records()) == 2


def test_a_step_that_runs_other_code_replays_its_check():
    """The same graph, but the step also runs a Python helper (it computes nothing on tensors): the eager run's
    calls differ from those of the recorded check, so the check replays."""
    seen = []
    assert _captured(_trainer()[1]).checks == ["replayed"]
    model, plain = _trainer(hook=lambda m: seen.append(1) if len(seen) > 100 else None)
    step = fb.compile(plain)
    _train_against_torch(step, model)
    assert step.checks == ["replayed"] and len(_records()) == 2


def test_a_hidden_write_through_numpy_is_caught_although_a_record_of_the_same_graph_exists():
    """Both steps hand a parameter's memory to NumPy (unseen by the op recorder and the version counters); only
    the second writes through it. The graphs and the Python calls are the same, so only a replay shows the
    write: a step that calls a built-in outside Python's and flambeau's own never uses a record."""
    writes = []

    def touch(model):
        a = np.asarray(model[2].bias.detach())
        if writes:
            a += 1.0

    step = _captured(_trainer(hook=touch)[1])
    assert len(step.checks) == 1 and step.checks[0].startswith("replayed (the step calls numpy.asarray")
    assert _records() == []
    writes.append(True)
    model, plain = _trainer(hook=touch)
    eager_model, eager = _trainer(hook=touch)
    step = fb.compile(plain)
    for x, y in _batches(3):
        x, y = fb.tensor(x), fb.tensor(y)
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-6)
    assert step.graphs == [] and "does not leave the parameters" in step.break_reasons[-1]
    for p, q in zip(eager_model.parameters(), model.parameters(), strict=True):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6)


def test_a_check_that_refuses_the_step_still_refuses_it_after_a_record(monkeypatch):
    """A record stands for the check it recorded: another check (here one that refuses) is a new fingerprint."""
    assert _captured(_trainer()[1]).checks == ["replayed"] and len(_records()) == 1
    monkeypatch.setattr(_capture, "_step_disagrees", lambda *args: "refused by the test")
    step = _captured(_trainer()[1])
    # The second call's capture took no copies (the hint of the first step's capture from that state) and found
    # no record for the other check: eager, captured again by the third call, with copies, and refused.
    assert step.graphs == [] and step.break_reasons == [_BROKE]
    step(*(fb.tensor(a) for a in _batches(1)[0]))
    assert step.graphs == [] and "refused by the test" in step.break_reasons
    assert len(_records()) == 1


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "is damaged"),
        (json.dumps({"format": _checked.FORMAT, "fingerprint": "0" * 40}), "does not hold its own fingerprint"),
        (json.dumps({"format": _checked.FORMAT + 1}), "does not hold its own fingerprint"),
        (None, "cannot be read (IsADirectoryError"),
        (b"\xff\xfe\x00garbage", "cannot be read (UnicodeDecodeError"),
    ],
    ids=["damaged", "another fingerprint", "another format", "unreadable", "not text"],
)
def test_a_bad_record_falls_back_to_the_replay_with_the_reason(content, why):
    assert _captured(_trainer()[1]).checks == ["replayed"]
    (path,) = _records()
    for hint in path.parent.glob("*.hint"):  # (so the second call makes copies: a capture that can replay)
        hint.unlink()
    path.unlink()
    if content is None:
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    model, plain = _trainer()
    step = fb.compile(plain)
    _train_against_torch(step, model)
    (checked,) = step.checks
    assert checked.startswith("replayed (the record ") and why in checked and str(path) in checked
    if content is not None:  # the passed replay wrote the record again, whole
        assert json.loads(path.read_text())["fingerprint"] == path.stem
        assert _captured(_trainer()[1]).checks == [RECORD]


def test_no_records_when_reuse_checks_is_off(monkeypatch):
    monkeypatch.setattr(fb.compiler.config, "reuse_checks", False)
    for _ in range(2):
        model, plain = _trainer()
        step = fb.compile(plain)
        _train_against_torch(step, model)
        assert step.checks == ["replayed"]
    assert _records() == []


def test_another_profiler_replays_and_writes_no_record():
    calls = []

    def profiler(frame, event, arg):
        calls.append(event)

    model, plain = _trainer()
    step = fb.compile(plain)
    sys.setprofile(profiler)
    try:
        _train_against_torch(step, model, n=2)
    finally:
        sys.setprofile(None)
    assert step.checks == [
        "replayed (another profiler was installed (sys.setprofile), so the calls could not be watched)"
    ]
    assert _records() == [] and "call" in calls


def test_a_step_that_replaces_the_watch_replays_and_writes_no_record():
    """A step installing a profiler of its own (here none) stops the watch: what it called after is unknown."""
    model, plain = _trainer(hook=lambda m: sys.setprofile(None))
    step = fb.compile(plain)
    _train_against_torch(step, model, n=3)
    assert step.checks == [
        "replayed (another profiler was installed (sys.setprofile), so the calls could not be watched)"
    ]
    assert _records() == []


def test_a_forward_takes_the_record_too():
    """A module's forward (checked by one replay of the forward, no copies) uses records the same way."""
    x = fb.randn(4, 3)
    for checked in ("replayed", RECORD):
        fb.manual_seed(0)
        model = fb.nn.Sequential(fb.nn.Linear(3, 5), fb.nn.Tanh())
        compiled = fb.compile(model)
        fb.manual_seed(0)
        ref = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh())
        with torch.no_grad():
            for p, q in zip(ref.parameters(), model.parameters(), strict=True):
                p.copy_(torch.from_numpy(q.detach().numpy().copy()))
        for _ in range(2):
            np.testing.assert_allclose(
                compiled(x).detach().numpy(), ref(torch.from_numpy(x.numpy())).detach().numpy(), rtol=1e-5, atol=1e-6
            )
        assert compiled._compiled_call.checks == [checked]


def test_a_record_is_used_by_another_process(tmp_path):
    """What the record is for: a new process, the same program, the cache of the first."""
    script = tmp_path / "step.py"
    script.write_text(
        textwrap.dedent(
            """
            import flambeau as fb
            fb.compiler.config.fusion = False
            fb.manual_seed(0)
            model = fb.nn.Sequential(fb.nn.Linear(3, 4), fb.nn.Tanh(), fb.nn.Linear(4, 1))
            opt = fb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            x, y = fb.randn(8, 3), fb.randn(8, 1)

            def step():
                opt.zero_grad(set_to_none=True)
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                opt.step()
                return loss

            compiled = fb.compile(step)
            losses = [compiled().item() for _ in range(4)]
            print(compiled.checks[0])
            print(repr(losses))
            """
        )
    )
    env = {**os.environ, "FLAMBEAU_EXTENSIONS_DIR": str(tmp_path / "ext")}
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]  # fmt: skip
    (first, losses_a), (second, losses_b) = (r.stdout.splitlines()[-2:] for r in runs)
    assert (first, second) == ("replayed", RECORD)
    np.testing.assert_allclose(eval(losses_b), eval(losses_a), rtol=1e-6)  # noqa: S307 (our own repr of floats)


def test_code_digests_follow_the_code_not_the_process():
    def f(x):
        return x + 1.5

    def g(x):
        return x + 2.5

    def h(x):
        return {"a", "b"} if x else frozenset({"c", "d"})

    assert _checked._code_digest(f.__code__) != _checked._code_digest(g.__code__)
    assert _checked._code_digest(f.__code__) == _checked._code_digest(f.__code__.replace())
    # a frozenset constant's text is sorted: its iteration order follows string hashing (PYTHONHASHSEED)
    assert _checked._plain_const(frozenset({"b", "a"})) == "frozenset(str:'a',str:'b')"
    assert _checked._code_digest(h.__code__) == _checked._code_digest(h.__code__.replace())
    assert _checked.environment() == _checked.environment()


@pytest.mark.parametrize(
    ("fn", "why"),
    [
        (np.asarray, "numpy.asarray, a built-in outside"),
        (fb.ones(1).data_ptr, "data_ptr, which hands out a tensor's memory"),
    ],
)
def test_builtins_that_may_touch_memory_unseen_have_no_stable_description(fn, why):
    with pytest.raises(_checked._Opaque, match=why):
        _checked._builtin_name(fn)
    assert _checked._builtin_name(len) == "builtins.len"
