"""fb.compile of a training step with embedding tables (Note [Reused table gradients]): the replay keeps each
table's gradient buffer and zeroes only the rows it wrote; every value stays eager's (and torch's), and
the buffer is dropped whenever anyone else could see it change."""

from __future__ import annotations

import flambeau as fb
import numpy as np
import pytest
import torch

pytestmark = pytest.mark.usefixtures("ext_root")

USERS, ITEMS, DIM, BATCH = 50, 30, 8, 64


@pytest.fixture(autouse=True)
def _fresh():
    fb.compiler.reset()
    yield
    fb.compiler.reset()
    fb.compiler.config.reuse_table_grads = True


def _model(lib, padding_idx=None):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.users = nn.Embedding(USERS, DIM, padding_idx=padding_idx)
            self.items = nn.Embedding(ITEMS, DIM)
            self.head = nn.Linear(2 * DIM, 1)

        def forward(self, u, i):
            return self.head(lib.cat([self.users(u), self.items(i)], 1)).flatten()

    return Net()


class Trainer:
    def __init__(self, lib, state, u, i, y, padding_idx=None):
        self.lib = lib
        self.model = _model(lib, padding_idx)
        self.model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        self.u, self.i, self.y = lib.tensor(u), lib.tensor(i), lib.tensor(y)
        self.optimizer = lib.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)

    def step(self):
        self.optimizer.zero_grad(set_to_none=True)
        out = self.model(self.u, self.i)
        loss = self.lib.nn.functional.binary_cross_entropy_with_logits(out, self.y)
        loss.backward()
        self.optimizer.step()
        return loss


def _trainers(padding_idx=None, seed=0, batch=BATCH):
    rng = np.random.default_rng(seed)
    state = {
        "users.weight": rng.standard_normal((USERS, DIM)).astype(np.float32),
        "items.weight": rng.standard_normal((ITEMS, DIM)).astype(np.float32),
        "head.weight": rng.standard_normal((1, 2 * DIM)).astype(np.float32) * 0.3,
        "head.bias": np.zeros(1, np.float32),
    }
    u = rng.integers(0, USERS, batch)
    i = rng.integers(0, ITEMS, batch)
    y = rng.integers(0, 2, batch).astype(np.float32)
    return [Trainer(fb, state, u, i, y, padding_idx) for _ in range(2)], Trainer(torch, state, u, i, y, padding_idx)


def _state(t):
    params = list(t.model.parameters())
    out = [p.detach().clone() for p in params] + [p.grad.clone() for p in params]
    return out + [t.optimizer.state[p]["momentum_buffer"].clone() for p in params]


def _assert_equal(eager, compiled):
    for x, y in zip(_state(eager), _state(compiled), strict=True):
        np.testing.assert_array_equal(y.numpy(), x.numpy())


def _tables_reused(step):
    return ".clear()" in step._last.program.source and ".forward(" in step._last.program.source


def test_twenty_steps_equal_eager_bit_for_bit_and_torch_with_the_buffer_reused():
    (eager, compiled), oracle = _trainers()
    step = fb.compile(compiled.step)
    weight = compiled.model.users.weight
    seen = []
    for k in range(20):
        want, got, ref = eager.step(), step(), oracle.step()
        assert got.item() == want.item()
        _assert_equal(eager, compiled)
        for x, y in zip(_state(compiled), _state(oracle), strict=True):
            np.testing.assert_allclose(x.numpy(), y.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.item(), ref.item(), rtol=1e-5)
        if k >= 2:  # replayed steps: the table's gradient is the same buffer from step to step
            seen.append(id(weight.grad))
    assert _tables_reused(step)
    assert len(set(seen)) == 1


def test_new_indices_written_into_the_same_index_tensors_equal_eager():
    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    rng = np.random.default_rng(5)
    for _ in range(12):
        u = fb.tensor(rng.integers(0, USERS, BATCH))
        i = fb.tensor(rng.integers(0, ITEMS, BATCH))
        for t in (eager, compiled):
            t.u.copy_(u)
            t.i.copy_(i)
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)
    assert _tables_reused(step)


@pytest.mark.parametrize("hold", ["reference", "view", "saved_for_backward", "changed_in_place"])
def test_a_gradient_someone_else_holds_is_left_as_it_was(hold):
    """Held, viewed, saved by a graph or changed in place after the step: the next step makes a new buffer."""
    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    for _ in range(4):
        eager.step(), step()
    w = compiled.model.users.weight
    before = w.grad.clone()
    x = fb.ones(USERS, DIM, requires_grad=True)
    if hold == "reference":
        kept = w.grad
    elif hold == "view":
        kept = w.grad[1:]
        before = before[1:]
    elif hold == "saved_for_backward":
        y = (x * w.grad).sum()  # saves the gradient for x's
        kept = None
    else:
        w.grad.mul_(2)
        eager.model.users.weight.grad.mul_(2)
        kept = None
    assert step().item() == eager.step().item()
    _assert_equal(eager, compiled)
    if kept is not None:
        np.testing.assert_array_equal(kept.numpy(), before.numpy())
        assert w.grad is not kept
    if hold == "saved_for_backward":
        y.backward()  # no version error: the saved gradient was not written over
        np.testing.assert_array_equal(x.grad.numpy(), before.numpy())
    for _ in range(3):  # and it reuses again afterwards
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)


@pytest.mark.parametrize("kind", ["tensor_hook", "post_accumulate_hook", "hook_on_another_leaf"])
def test_a_hook_registered_after_the_capture_runs_as_in_eager(kind):
    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    for _ in range(3):
        eager.step(), step()
    calls = []

    def register(t):
        users, head = t.model.users.weight, t.model.head.weight
        if kind == "tensor_hook":
            users.register_hook(lambda g: (calls.append(1), g * 2)[1])
        elif kind == "post_accumulate_hook":

            def halve(p):
                calls.append(1)
                p.grad.mul_(0.5)

            users.register_post_accumulate_grad_hook(halve)
        else:  # reads the table's gradient while backward runs
            head.register_post_accumulate_grad_hook(
                lambda p: calls.append(None if users.grad is None else float(users.grad.abs().sum()))
            )

    register(eager)
    register(compiled)
    for _ in range(4):
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)
    assert len(calls) == 8
    if kind == "hook_on_another_leaf":  # eager's and the replay's reads alternate, and agree
        assert calls[::2] == calls[1::2]


def test_padding_idx_and_the_setting_off_run_the_captured_ops():
    (eager, compiled), _ = _trainers(padding_idx=3)
    step = fb.compile(compiled.step)
    for _ in range(6):
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)
    source = step._last.program.source
    assert "users" not in source and source.count(".forward(") == 1  # only the items table is reused

    fb.compiler.reset()
    fb.compiler.config.reuse_table_grads = False
    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    for _ in range(6):
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)
    assert not _tables_reused(step)


class LookupTrainer(Trainer):
    """A step on the users table alone: its lookup read twice (the gradients add up) or returned."""

    case = "read_twice"

    def step(self):
        self.optimizer.zero_grad(set_to_none=True)
        e = self.model.users(self.u)
        if self.case == "read_twice":
            e = e * self.model.users(self.u)
        loss = e.square().mean()
        loss.backward()
        self.optimizer.step()
        return loss, e


@pytest.mark.parametrize("case", ["read_twice", "returned"])
def test_a_table_read_twice_or_a_lookup_returned_is_not_reused(case):
    """A lookup the step returns must keep its history; a table read twice sums two lookups' gradients: the
    captured ops run, with eager's values."""
    (eager, compiled), _ = _trainers()
    for t in (eager, compiled):
        t.__class__ = LookupTrainer
        t.case = case
    got = fb.compile(compiled.step)
    for _ in range(6):
        (a, _), (b, eb) = eager.step(), got()
        assert a.item() == b.item()
        assert eb.grad_fn is not None and not eb.is_leaf
        np.testing.assert_array_equal(compiled.model.users.weight.grad.numpy(), eager.model.users.weight.grad.numpy())
        np.testing.assert_array_equal(
            compiled.model.users.weight.detach().numpy(), eager.model.users.weight.detach().numpy()
        )
    assert got._last.program is not None, got.break_reasons
    assert ".forward(" not in got._last.program.source


def test_the_setting_is_part_of_a_checked_capture_record():
    """A record of a check replay passed with the tables' reuse on does not stand for one with it off (a
    batch size of this test's own: no earlier test of the module left a record of its graph)."""
    checks = []
    for reuse in (True, True, False, False):
        fb.compiler.reset()
        fb.compiler.config.reuse_table_grads = reuse
        (_, compiled), _ = _trainers(batch=BATCH + 3)
        step = fb.compile(compiled.step)
        for _ in range(3):
            step()
        checks.append(step.checks)
    assert checks == [["replayed"], ["a record of an earlier check"], ["replayed"], ["a record of an earlier check"]]
