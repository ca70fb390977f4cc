"""Hogwild with flambeau_data.multiprocessing: processes train one model whose parameters are shared memory.

The model here is a linear regression whose weight and bias are two views of
one shared storage (as a flat parameter buffer is), trained with hand-written
gradients (flambeau-data depends on core only). Sending it to a spawned
process carries two tensors of one segment in one message: the descriptor
must travel once (a spawning popen refuses it twice: "bad value(s) in
fds_to_keep").
"""

from __future__ import annotations

import flambeau_core as fc
import pytest
from flambeau_data import multiprocessing as fmp


class LinearModel:
    """y = x @ weight + bias, both parameters views of one flat buffer."""

    def __init__(self, features: int) -> None:
        g = fc.Generator().manual_seed(0)
        self.flat = fc.randn(features + 1, generator=g)
        self.weight = self.flat[:features].view(features, 1)
        self.bias = self.flat[features:]

    def share_memory(self) -> LinearModel:
        self.flat.share_memory_()
        return self

    def __call__(self, x: fc.Tensor) -> fc.Tensor:
        return x @ self.weight + self.bias


def _data(seed: int, n: int = 128) -> tuple[fc.Tensor, fc.Tensor]:
    g = fc.Generator().manual_seed(seed)
    x = fc.randn(n, 4, generator=g)
    return x, x @ fc.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25


def _loss(model: LinearModel, x: fc.Tensor, y: fc.Tensor) -> float:
    return ((model(x) - y) ** 2).mean().item()


def train(rank: int, model: LinearModel, steps: int) -> None:
    # Each process: its own shard, plain SGD on the shared parameters, no locks (Hogwild).
    x, y = _data(seed=100 + rank)
    n = x.shape[0]
    for _ in range(steps):
        residual = model(x) - y
        model.weight.sub_(0.05 * (2.0 / n) * (x.t() @ residual))
        model.bias.sub_(0.05 * (2.0 / n) * residual.sum(0))


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_hogwild_two_processes_train_one_shared_model(no_leaks, method):
    model = LinearModel(4).share_memory()
    assert model.weight.is_shared() and model.bias.is_shared()
    ptr, before = model.flat.data_ptr(), model.flat.clone()
    x, y = _data(seed=7, n=256)
    loss_before = _loss(model, x, y)
    ctx = fmp.get_context(method)
    processes = [ctx.Process(target=train, args=(rank, model, 100)) for rank in range(2)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(120)
    assert [p.exitcode for p in processes] == [0, 0]
    # The parent's own tensors changed in place: same memory, new values, a trained model.
    assert model.flat.data_ptr() == ptr
    assert bool((model.flat != before).all().item())
    assert _loss(model, x, y) < 0.01 * loss_before


def _report_views(q_in, q_out):
    a, b, c = q_in.get()
    q_out.put((a._storage_ptr == b._storage_ptr == c._storage_ptr, a.tolist(), b.tolist(), c.tolist()))
    c.fill_(-1.0)
    q_out.put("written")


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_views_of_one_storage_in_one_message_arrive_viewing_one_storage(no_leaks, method):
    ctx = fmp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_report_views, args=(q_in, q_out))
    proc.start()
    t = fc.arange(6, dtype=fc.float32)
    q_in.put((t[:2], t[2:], t[4:]))
    assert q_out.get(timeout=60) == (True, [0.0, 1.0], [2.0, 3.0, 4.0, 5.0], [4.0, 5.0])
    assert q_out.get(timeout=60) == "written"
    proc.join(60)
    assert proc.exitcode == 0
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, -1.0, -1.0]
