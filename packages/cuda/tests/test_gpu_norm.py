"""flambeau-cuda's layer_norm and batch_norm on a GPU against the CPU: forward, backward (input, weight,
bias), the running statistics of batch_norm in training and their use in evaluation, float32 and float64.

Skipped with "no CUDA GPU" elsewhere (test_norm_host.py checks the same functions on cpu tensors).
"""

from __future__ import annotations

import pytest
from conftest import requires_gpu
from cuda_testing import assert_close

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")
F = pytest.importorskip("flambeau_nn.functional")


TOL = {fb.float32: 1e-4, fb.float64: 1e-10}


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64])
@pytest.mark.parametrize(("shape", "norm"), [((4, 7), (7,)), ((2, 3, 5), (3, 5)), ((3, 1, 6), (6,))])
def test_layer_norm_matches_cpu(shape, norm, dtype):
    fb.manual_seed(0)
    x = fb.randn(*shape, dtype=dtype, requires_grad=True)
    w = fb.randn(*norm, dtype=dtype, requires_grad=True)
    b = fb.randn(*norm, dtype=dtype, requires_grad=True)
    g = fb.randn(*shape, dtype=dtype)
    (F.layer_norm(x, norm, w, b) * g).sum().backward()
    xc, wc, bc = (t.detach().cuda().requires_grad_(True) for t in (x, w, b))
    yc = F.layer_norm(xc, norm, wc, bc)
    (yc * g.cuda()).sum().backward()
    assert_close(yc, F.layer_norm(x, norm, w, b), TOL[dtype])
    for a, c in ((xc, x), (wc, w), (bc, b)):
        assert_close(a.grad, c.grad, TOL[dtype])


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_module_train_and_eval_match_cpu(shape, dtype):
    fb.manual_seed(0)
    c = shape[1]
    bn = {2: fb.nn.BatchNorm1d, 3: fb.nn.BatchNorm1d, 4: fb.nn.BatchNorm2d}[len(shape)]
    cpu, gpu = bn(c).to(dtype), bn(c).to(dtype)
    with fb.no_grad():
        cpu.weight.copy_(fb.randn(c, dtype=dtype))
        cpu.bias.copy_(fb.randn(c, dtype=dtype))
    gpu.load_state_dict(cpu.state_dict())
    gpu.to("cuda")
    for _ in range(2):
        x = fb.randn(*shape, dtype=dtype, requires_grad=True)
        xc = x.detach().cuda().requires_grad_(True)
        g = fb.randn(*shape, dtype=dtype)
        y, yc = cpu(x), gpu(xc)
        (y * g).sum().backward()
        (yc * g.cuda()).sum().backward()
        assert_close(yc, y, TOL[dtype])
        assert_close(xc.grad, x.grad, TOL[dtype])
    assert_close(gpu.weight.grad, cpu.weight.grad, TOL[dtype])
    assert_close(gpu.bias.grad, cpu.bias.grad, TOL[dtype])
    assert_close(gpu.running_mean, cpu.running_mean, TOL[dtype])
    assert_close(gpu.running_var, cpu.running_var, TOL[dtype])
    cpu.eval()
    gpu.eval()
    x = fb.randn(*shape, dtype=dtype)
    assert_close(gpu(x.cuda()), cpu(x), TOL[dtype])
