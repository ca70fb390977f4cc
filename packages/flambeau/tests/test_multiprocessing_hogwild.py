"""fb.multiprocessing with nn: shared modules, Parameters across processes, Hogwild training."""

from __future__ import annotations

import flambeau as fb
import pytest

mp = fb.multiprocessing


def _data(seed: int, n: int = 64):
    g = fb.Generator().manual_seed(seed)
    x = fb.randn(n, 4, generator=g)
    w = fb.tensor([[1.0], [-2.0], [0.5], [3.0]])
    return x, x @ w + 0.25


def _model():
    fb.manual_seed(0)
    return fb.nn.Sequential(fb.nn.Linear(4, 16), fb.nn.Tanh(), fb.nn.Linear(16, 1))


def _loss(model, x, y) -> float:
    with fb.no_grad():
        return fb.nn.functional.mse_loss(model(x), y).item()


def _train(rank, model, steps):
    # Each process: its own shard, its own optimizer, the shared parameters (Hogwild).
    x, y = _data(seed=100 + rank)
    opt = fb.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        fb.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_two_processes_train_one_shared_model(method):
    model = _model()
    assert model.share_memory() is model
    params = list(model.parameters())
    assert all(p.is_shared() for p in params)
    ptrs = [p.data_ptr() for p in params]
    before = [p.detach().clone() for p in params]
    x, y = _data(seed=7, n=256)
    loss_before = _loss(model, x, y)
    mp.start_processes(_train, args=(model, 40), nprocs=2, start_method=method)
    # The parent's own Parameter objects changed in place: same memory, new values.
    assert [p.data_ptr() for p in model.parameters()] == ptrs
    assert all(not bool((p.detach() == b).all().item()) for p, b in zip(params, before, strict=True))
    assert _loss(model, x, y) < 0.5 * loss_before


def _check_parameter(q_in, q_out):
    p = q_in.get()
    q_out.put((type(p).__name__, p.requires_grad, p.is_leaf, p.is_shared()))
    with fb.no_grad():
        p.add_(1.0)
    q_out.put("written")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_parameter_arrives_as_a_shared_parameter(method):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_check_parameter, args=(q_in, q_out))
    proc.start()
    p = fb.nn.Parameter(fb.zeros(3))
    frozen = fb.nn.Parameter(fb.zeros(2), requires_grad=False)
    q_in.put(p)
    assert q_out.get(timeout=60) == ("Parameter", True, True, True)
    assert q_out.get(timeout=60) == "written"
    proc.join(60)
    assert proc.exitcode == 0
    assert p.tolist() == [1.0, 1.0, 1.0]
    back = mp.reduction.ForkingPickler.loads(mp.reduction.ForkingPickler.dumps(frozen))
    assert type(back) is fb.nn.Parameter and not back.requires_grad and back.data_ptr() == frozen.data_ptr()


def test_module_share_memory_covers_buffers_and_grads():
    m = fb.nn.BatchNorm1d(3)
    m(fb.randn(4, 3)).sum().backward()
    m.share_memory()
    assert all(p.is_shared() and p.grad.is_shared() for p in m.parameters())
    assert all(b.is_shared() for b in m.buffers())


def test_interop_memory_and_exports_with_share_memory():
    np = pytest.importorskip("numpy")
    a = np.arange(4, dtype=np.float32)
    t = fb.from_numpy(a)
    with pytest.raises(RuntimeError, match=r"\[share_memory_\] this tensor views memory that flambeau does not own"):
        t.share_memory_()
    # Memory handed out before the move (numpy(), __array_interface__, DLPack) stays valid: kept with the storage.
    u = fb.arange(4, dtype=fb.float32)
    views = [u.numpy(), np.asarray(u), np.from_dlpack(u)]
    u.share_memory_()
    u.fill_(7.0)
    assert u.is_shared() and all(v.tolist() == [0.0, 1.0, 2.0, 3.0] for v in views)
    assert np.from_dlpack(u).tolist() == [7.0] * 4
