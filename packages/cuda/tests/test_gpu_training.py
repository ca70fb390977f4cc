"""flambeau-cuda on a GPU: nn primitives vs the CPU, and an MLP training step that matches the CPU's.

Skipped with "no CUDA GPU" elsewhere.
"""

from __future__ import annotations

import pytest
from conftest import requires_gpu
from cuda_testing import assert_close

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_log_softmax_and_backward(dim):
    x = fb.randn(4, 7, dtype=fb.float64, requires_grad=True)
    y = fb.nn.functional.log_softmax(x, dim=dim)
    (y * fb.arange(7.0, dtype=fb.float64)).sum().backward()
    xc = x.detach().cuda().requires_grad_(True)
    yc = fb.nn.functional.log_softmax(xc, dim=dim)
    (yc * fb.arange(7.0, dtype=fb.float64).cuda()).sum().backward()
    assert_close(yc, y, 1e-10)
    assert_close(xc.grad, x.grad, 1e-10)


def test_embedding_and_backward():
    w = fb.randn(10, 3, requires_grad=True)
    idx = fb.tensor([[1, 4, 4], [9, 0, 1]])
    out = fb.nn.functional.embedding(idx, w)
    out.sum().backward()
    wc = w.detach().cuda().requires_grad_(True)
    outc = fb.nn.functional.embedding(idx.cuda(), wc)
    outc.sum().backward()
    assert_close(outc, out, 1e-5)
    assert_close(wc.grad, w.grad, 1e-5)
    with pytest.raises(IndexError, match="out of range"):
        fb.nn.functional.embedding(fb.tensor([10]).cuda(), wc)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_mlp_training_steps_match_cpu(momentum):
    fb.manual_seed(0)
    cpu = fb.nn.Sequential(fb.nn.Linear(8, 16), fb.nn.ReLU(), fb.nn.Linear(16, 3))
    gpu = fb.nn.Sequential(fb.nn.Linear(8, 16), fb.nn.ReLU(), fb.nn.Linear(16, 3))
    gpu.load_state_dict(cpu.state_dict())
    gpu.to("cuda")
    opt_c = fb.optim.SGD(cpu.parameters(), lr=0.1, momentum=momentum)
    opt_g = fb.optim.SGD(gpu.parameters(), lr=0.1, momentum=momentum)
    x, y = fb.randn(32, 8), fb.randn(32, 3)
    for _ in range(3):
        for model, opt, xx, yy in ((cpu, opt_c, x, y), (gpu, opt_g, x.cuda(), y.cuda())):
            opt.zero_grad()
            loss = fb.nn.functional.mse_loss(model(xx), yy)
            loss.backward()
            opt.step()
    for (name, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters(), strict=True):
        assert pg.is_cuda, name
        assert_close(pg, pc, 1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_and_nll_vs_cpu(reduction, weighted):
    x = fb.randn(6, 5, dtype=fb.float64, requires_grad=True)
    t = fb.tensor([0, 4, 2, -100, 1, 4])
    w = fb.rand(5, dtype=fb.float64) if weighted else None
    xc = x.detach().cuda().requires_grad_(True)
    wc = w.cuda() if weighted else None
    for fn in (
        fb.nn.functional.cross_entropy,
        lambda a, b, weight, reduction: fb.nn.functional.nll_loss(
            fb.nn.functional.log_softmax(a, 1), b, weight=weight, reduction=reduction
        ),
    ):
        x.grad = None
        xc.grad = None
        loss = fn(x, t, weight=w, reduction=reduction)
        lossc = fn(xc, t.cuda(), weight=wc, reduction=reduction)
        assert_close(lossc, loss, 1e-10)
        loss.sum().backward()
        lossc.sum().backward()
        assert_close(xc.grad, x.grad, 1e-10)
    with pytest.raises(IndexError, match="out of bounds"):
        fb.nn.functional.cross_entropy(xc, fb.tensor([0, 5, 0, 0, 0, 0]).cuda())


def test_classifier_training_steps_match_cpu():
    fb.manual_seed(1)
    cpu = fb.nn.Sequential(fb.nn.Linear(10, 32), fb.nn.ReLU(), fb.nn.Linear(32, 4))
    gpu = fb.nn.Sequential(fb.nn.Linear(10, 32), fb.nn.ReLU(), fb.nn.Linear(32, 4))
    gpu.load_state_dict(cpu.state_dict())
    gpu.to("cuda")
    opt_c = fb.optim.SGD(cpu.parameters(), lr=0.05)
    opt_g = fb.optim.SGD(gpu.parameters(), lr=0.05)
    x, y = fb.randn(64, 10), fb.randint(0, 4, (64,))
    for _ in range(3):
        for model, opt, xx, yy in ((cpu, opt_c, x, y), (gpu, opt_g, x.cuda(), y.cuda())):
            opt.zero_grad()
            fb.nn.functional.cross_entropy(model(xx), yy).backward()
            opt.step()
    for pc, pg in zip(cpu.parameters(), gpu.parameters(), strict=True):
        assert_close(pg, pc, 1e-4)
