"""Training on the simulated device (Note [Simulated device]): autograd, nn and the
optimizers run unchanged on a plug-in device, and match the cpu.

An MLP is moved with Module.to("sim"); its forward, backward and an SGD step run
through the host fallback on the sim stream; values and gradients are compared
with the same model on the cpu.
"""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def sim(fb):
    return fb.utils.register_sim(num_devices=2)


def _mlp(fb, seed):
    fb.manual_seed(seed)
    return fb.nn.Sequential(fb.nn.Linear(13, 32), fb.nn.ReLU(), fb.nn.Linear(32, 5))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mlp_forward_backward_step_on_sim_matches_cpu(fb, sim, dtype):
    dt = getattr(fb, dtype)
    cpu_model = _mlp(fb, 0).to(dt)
    sim_model = _mlp(fb, 0).to(dt).to("sim:1")
    assert all(p.device == "sim:1" for p in sim_model.parameters())
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 13))
    target = rng.integers(0, 5, size=7)
    xs = fb.tensor(x.tolist(), dtype=dt)
    ts = fb.tensor(target.tolist())
    opt_cpu = fb.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    opt_sim = fb.optim.SGD(sim_model.parameters(), lr=0.1, momentum=0.9)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for _ in range(3):
        losses = []
        for model, opt, device in ((cpu_model, opt_cpu, "cpu"), (sim_model, opt_sim, "sim:1")):
            opt.zero_grad()
            out = model(xs.to(device))
            assert out.device == device
            loss = fb.nn.functional.cross_entropy(out, ts.to(device))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=tol)
    for pc, ps in zip(cpu_model.parameters(), sim_model.parameters(), strict=True):
        assert ps.grad.device == "sim:1"
        np.testing.assert_allclose(np.array(ps.grad.cpu().tolist()), np.array(pc.grad.tolist()), rtol=1e-4, atol=tol)
        np.testing.assert_allclose(np.array(ps.cpu().tolist()), np.array(pc.tolist()), rtol=1e-4, atol=tol)
    assert sim_model.to("cpu")[0].weight.device == "cpu"


def test_numpy_of_a_device_tensor_says_cpu(fb, sim):
    t = fb.ones(3, device="sim")
    with pytest.raises(TypeError, match=r"can't convert a tensor on sim:0 to NumPy; call \.cpu\(\) first"):
        t.numpy()
    assert t.cpu().numpy().tolist() == [1.0, 1.0, 1.0]


def test_dlpack_of_a_sim_tensor_is_an_ext_device(fb, sim):
    # A plug-in device exports as kDLExtDev, never as a CUDA GPU, so a consumer
    # refuses it instead of reading host pages as device memory.
    from flambeau_interop.dlpack_abi import kDLExtDev

    t = fb.ones(3, device="sim:1")
    assert t.__dlpack_device__() == (kDLExtDev, 1)
    with pytest.raises((BufferError, RuntimeError, TypeError, ValueError)):
        np.from_dlpack(t)
    with pytest.raises(BufferError, match=r"sim:1 to DLPack device"):
        fb.from_dlpack(t)


def test_fb_sim_and_cuda_namespaces(fb, sim):
    assert fb.sim is sim and fb.device_module("sim") is sim
    # True only on a machine with flambeau-cuda and a GPU; either way the two agree.
    assert fb.cuda.is_available() is (fb.cuda.device_count() > 0)
    for name in (
        "is_available device_count current_device set_device synchronize Stream Event current_stream "
        "default_stream stream memory_allocated max_memory_allocated memory_reserved memory_stats "
        "memory_snapshot empty_cache"
    ).split():
        assert callable(getattr(fb.sim, name)) and callable(getattr(fb.cuda, name)), name
    assert callable(fb.memory.timeline) and callable(fb.memory._record_memory_history)


def test_mlp_training_step_launches_asynchronously(fb, sim):
    """Note [Asynchronous sim kernels]: forward, backward and the SGD step return while the stream is held."""
    import flambeau_sim as sim_pkg
    from flambeau_sim import _C

    model = _mlp(fb, 0).to("sim")
    cpu_model = _mlp(fb, 0)
    rng = np.random.default_rng(2)
    x = fb.tensor(rng.standard_normal((7, 13)).tolist())
    target = fb.tensor(rng.integers(0, 5, size=7).tolist())
    xs, ts = x.to("sim"), target.to("sim")  # copies before the latch (they wait)
    opt = fb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt_cpu = fb.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        before = dict(_C._sync_ops())
        stream = sim.current_stream()
        latch = sim_pkg.block_stream(stream)
        try:
            opt.zero_grad()
            loss = fb.nn.functional.cross_entropy(model(xs), ts)
            loss.backward()
            opt.step()
            waited = {k: v - before.get(k, 0) for k, v in _C._sync_ops().items() if v != before.get(k, 0)}
            assert waited == {}, f"waited for the device: {waited}"
            assert stream.query() is False
        finally:
            latch.release()
        sim.synchronize()
        opt_cpu.zero_grad()
        cpu_loss = fb.nn.functional.cross_entropy(cpu_model(x), target)
        cpu_loss.backward()
        opt_cpu.step()
        np.testing.assert_allclose(loss.item(), cpu_loss.item(), rtol=1e-5)
    for p, pc in zip(model.parameters(), cpu_model.parameters(), strict=True):
        np.testing.assert_allclose(np.array(p.cpu().tolist()), np.array(pc.tolist()), rtol=1e-4, atol=1e-6)
