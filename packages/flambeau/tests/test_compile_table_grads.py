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
    def __init__(self, lib, state, u, i, y, padding_idx=None, sgd=None):
        self.lib = lib
        self.model = _model(lib, padding_idx)
        if next(iter(state.values())).dtype == np.float64:
            self.model.double()
        self.model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        self.u, self.i, self.y = lib.tensor(u), lib.tensor(i), lib.tensor(y)
        self.optimizer = lib.optim.SGD(self.model.parameters(), **(sgd or {"lr": 0.1, "momentum": 0.9}))

    def step(self):
        self.optimizer.zero_grad(set_to_none=True)
        out = self.model(self.u, self.i)
        loss = self.lib.nn.functional.binary_cross_entropy_with_logits(out, self.y)
        loss.backward()
        self.optimizer.step()
        return loss


def _trainers(padding_idx=None, seed=0, batch=BATCH, sgd=None, dtype=np.float32):
    rng = np.random.default_rng(seed)
    state = {
        "users.weight": rng.standard_normal((USERS, DIM)).astype(dtype),
        "items.weight": rng.standard_normal((ITEMS, DIM)).astype(dtype),
        "head.weight": rng.standard_normal((1, 2 * DIM)).astype(dtype) * 0.3,
        "head.bias": np.zeros(1, dtype),
    }
    u = rng.integers(0, USERS, batch)
    i = rng.integers(0, ITEMS, batch)
    y = rng.integers(0, 2, batch).astype(dtype)
    fbs = [Trainer(fb, state, u, i, y, padding_idx, sgd) for _ in range(2)]
    return fbs, Trainer(torch, state, u, i, y, padding_idx, sgd)


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


def test_the_setting_is_part_of_a_checked_capture_record(tmp_path, monkeypatch):
    """A record of a check replay passed with the tables' reuse on does not stand for one with it off. The
    records go to a disk cache of the test's own: no earlier test, nor an earlier run of this one in the same
    environment, left a record of its graph (with the shared cache a second run found one at the first
    capture)."""
    monkeypatch.setenv("FLAMBEAU_EXTENSIONS_DIR", str(tmp_path / "ext"))
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


def _fused_op_sizes(step):
    """Records how many parameters the step's fused SGD op gets on each call (the tables the kernel steps are
    not among them, Note [Table SGD])."""
    from flambeau.compiler._table_grads import TableSgd

    sizes = []
    (sgd,) = [v for v in step._last.program.run.__globals__.values() if isinstance(v, TableSgd)]
    op = sgd.op
    sgd.op = lambda params, *a, **k: (sizes.append(len(params)), op(params, *a, **k))[1]
    return sizes


@pytest.mark.parametrize(
    "sgd",
    [
        {"lr": 0.1, "momentum": 0.9},
        {"lr": 0.05, "momentum": 0.9, "nesterov": True},
        {"lr": 0.1, "momentum": 0.5, "dampening": 0.3, "weight_decay": 0.01},
        {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1, "maximize": True},
        {"lr": 0.1, "momentum": 0.8, "nesterov": True, "weight_decay": 0.05},
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_tables_step_by_the_kernel_with_eager_bits_for_each_sgd_setting(sgd, dtype):
    """Both tables step in the kernel, which reads only the gradient rows the batch wrote (the others are 0 in
    eager's dense gradient): parameters, gradients and momentum buffers are eager's bits and torch's values."""
    (eager, compiled), oracle = _trainers(sgd=sgd, dtype=dtype)
    step = fb.compile(compiled.step)
    for _ in range(3):
        assert step().item() == eager.step().item()
        oracle.step()
    sizes = _fused_op_sizes(step)
    for _ in range(8):
        want, got, ref = eager.step(), step(), oracle.step()
        assert got.item() == want.item()
        np.testing.assert_allclose(got.item(), ref.item(), rtol=1e-5)
        _assert_equal(eager, compiled)
        for x, y in zip(_state(compiled), _state(oracle), strict=True):
            np.testing.assert_allclose(x.numpy(), y.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert sizes == [2] * 8  # the head's weight and bias; the tables stepped by the kernel


def test_batches_of_two_sizes_alternating_equal_eager():
    """Two captures (a batch of 64 and one of 40) alternate on the same tables: each drops the buffer the other
    made the table's gradient, and every step keeps eager's values."""
    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    rng = np.random.default_rng(7)
    batches = {
        t: {n: (t.u.new_zeros(n), t.i.new_zeros(n), t.y.new_zeros(n)) for n in (BATCH, 40)} for t in (eager, compiled)
    }
    for k in range(12):
        n = BATCH if k % 2 == 0 else 40
        u, i = fb.tensor(rng.integers(0, USERS, n)), fb.tensor(rng.integers(0, ITEMS, n))
        y = fb.tensor(rng.integers(0, 2, n).astype(np.float32))
        for t in (eager, compiled):
            t.u, t.i, t.y = batches[t][n]
            t.u.copy_(u), t.i.copy_(i), t.y.copy_(y)
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)
    assert len(step.graphs) == 2  # one capture per batch size, replayed in turn
    assert _tables_reused(step)


def test_the_step_moves_the_versions_as_eager():
    """The kernel writes the tables and their momentum buffers through pointers; their version counters still
    move, so a graph that saved a table before the step refuses to backward, as in eager."""
    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    for _ in range(4):
        step(), eager.step()
    errors = []
    for t, run in ((eager, eager.step), (compiled, step)):
        w = t.model.users.weight
        buf = t.optimizer.state[w]["momentum_buffer"]
        versions = w._version, buf._version
        y = (w * w).sum()  # saves the table
        run()
        assert w._version > versions[0] and buf._version > versions[1]
        with pytest.raises(RuntimeError) as e:
            y.backward()
        errors.append(type(e.value))
    assert errors[0] is errors[1]
    _assert_equal(eager, compiled)


def test_the_cat_of_the_lookups_is_one_gather_with_eager_values(monkeypatch):
    """Note [Table cat]: the step's cat of the two lookups is written by the kernel's gather, straight into the
    cat's rows; the tables read their columns of its gradient. Every value stays eager's."""
    from flambeau.compiler._table_grads import TableCat

    gathered = []
    gather = TableCat._gather
    monkeypatch.setattr(TableCat, "_gather", lambda self: (gathered.append(1), gather(self))[1])
    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    for _ in range(8):
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)
    assert len(gathered) >= 5  # the replayed calls


def test_an_index_out_of_range_raises_eagers_error_and_changes_nothing():
    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    for _ in range(4):
        assert step().item() == eager.step().item()

    def values(t):  # parameters and momentum buffers
        params = list(t.model.parameters())
        return [p.detach().clone() for p in params] + [t.optimizer.state[p]["momentum_buffer"].clone() for p in params]

    before = values(compiled)
    errors = []
    for t, run in ((eager, eager.step), (compiled, step)):
        t.i[5] = ITEMS + 2
        with pytest.raises(IndexError) as e:
            run()
        errors.append(str(e.value))
        assert all(p.grad is None for p in t.model.parameters())  # zero_grad ran, backward did not
        t.i[5] = 1
    assert errors[0] == errors[1]
    for x, y in zip(before, values(compiled), strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    for _ in range(3):  # and the steps go on
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)


class SharedLookupTrainer(Trainer):
    """A lookup read by the cat and by a term of the loss: the cat cannot be the gather alone."""

    def step(self):
        self.optimizer.zero_grad(set_to_none=True)
        e = self.model.users(self.u)
        x = self.lib.cat([e, self.model.items(self.i)], 1)
        loss = self.lib.nn.functional.binary_cross_entropy_with_logits(self.model.head(x).flatten(), self.y)
        loss = loss + 0.01 * e.square().mean()
        loss.backward()
        self.optimizer.step()
        return loss


def test_a_lookup_read_besides_the_cat_equals_eager():
    (eager, compiled), _ = _trainers()
    for t in (eager, compiled):
        t.__class__ = SharedLookupTrainer
    step = fb.compile(compiled.step)
    for _ in range(6):
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)


def test_the_ops_take_over_from_the_kernel_with_eager_values(monkeypatch):
    """Where the kernel stops being available mid-run, the captured ops continue on the buffer it wrote (the rows
    of its last call zeroed first)."""
    import flambeau.compiler._table_grads as tg

    (eager, compiled), _ = _trainers()
    step = fb.compile(compiled.step)
    for _ in range(4):
        assert step().item() == eager.step().item()
    monkeypatch.setattr(tg, "_kernel", lambda dtype: None)
    for _ in range(4):
        assert step().item() == eager.step().item()
        _assert_equal(eager, compiled)
