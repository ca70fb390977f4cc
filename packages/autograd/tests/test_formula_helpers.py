"""The gradient helpers that call one fused op (src/formula_helpers.h): log_softmax's and softmax's
backward call _log_softmax_backward_data / _softmax_backward_data, linear's calls _linear_backward, on
every device; the dispatcher picks the CPU's one-pass kernel or the Generic composition of the others.
Gradients against PyTorch 2.13 on the CPU and against the CPU's on the other devices."""

from __future__ import annotations

import flambeau_autograd  # noqa: F401  (registers the Autograd kernels)
import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import assert_close_on, device_params, kernel_trace

SIM_AND_META = device_params(("sim",)) + [pytest.param("meta", id="meta")]

# (id, flambeau fn, torch fn, input shapes, the fused op its backward calls)
CASES = [
    ("log_softmax", lambda x: x.log_softmax(1), lambda x: x.log_softmax(1), [(4, 6)], "_log_softmax_backward_data"),
    ("log_softmax0", lambda x: x.log_softmax(0), lambda x: x.log_softmax(0), [(4, 6)], "_log_softmax_backward_data"),
    ("softmax", lambda x: x.softmax(-1), lambda x: x.softmax(-1), [(2, 3, 5)], "_softmax_backward_data"),
    ("linear", fc.linear, torch.nn.functional.linear, [(4, 6), (3, 6), (3,)], "_linear_backward"),
    ("linear_3d", fc.linear, torch.nn.functional.linear, [(2, 4, 6), (3, 6), (3,)], "_linear_backward"),
    ("linear_no_bias", fc.linear, torch.nn.functional.linear, [(4, 6), (3, 6)], "_linear_backward"),
]


def inputs(shapes, dtype):
    rng = np.random.default_rng(len(shapes))
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def grads(fn, arrays, device, dtype):
    xs = [fc.tensor(a, dtype=dtype, device=device).requires_grad_() for a in arrays]
    out = fn(*xs)
    g = fc.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=dtype, device=device)
    out.backward(g)
    return out, [x.grad for x in xs]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("name", "fn", "tfn", "shapes", "fused"), CASES, ids=[c[0] for c in CASES])
def test_cpu_gradients_are_pytorchs(name, fn, tfn, shapes, fused, dtype):
    arrays = inputs(shapes, dtype)
    with kernel_trace() as rows:
        out, ours = grads(fn, arrays, "cpu", getattr(fc, dtype))
    assert [fused, "cpu", "own"] in rows, rows
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    tout = tfn(*ts)
    tout.backward(torch.tensor(np.linspace(-1, 1, tout.numel()).reshape(tout.shape), dtype=tout.dtype))
    tol = 1e-5 if dtype == "float32" else 1e-12
    for g, t in zip(ours, ts, strict=True):
        np.testing.assert_allclose(np.array(g.tolist()), t.grad.numpy(), rtol=tol, atol=tol)


# linear has no meta rule yet (its _linear_backward does: test_generic_nn_kernels.py in core), so the meta
# device runs the softmax cases only.
OTHER_DEVICE_CASES = [
    pytest.param(dev.values[0], *case, id=f"{case[0]}-{dev.values[0]}", marks=dev.marks)
    for dev in SIM_AND_META
    for case in CASES
    if not (dev.values[0] == "meta" and case[4] == "_linear_backward")
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("device", "name", "fn", "tfn", "shapes", "fused"), OTHER_DEVICE_CASES)
def test_other_devices_call_the_same_op(name, fn, tfn, shapes, fused, dtype, device):
    arrays = inputs(shapes, dtype)
    fdt = getattr(fc, dtype)
    with kernel_trace() as rows:
        out, ours = grads(fn, arrays, device, fdt)
    # No device branch in the helper: the same fused op, served by the device's kernel (the sim's asynchronous
    # one, the meta step) or the Generic one (_linear_backward on the sim).
    assert any(r[:2] == [fused, device] for r in rows), rows
    cpu_out, cpu_grads = grads(fn, arrays, "cpu", fdt)
    tol = 1e-5 if dtype == "float32" else 1e-12
    if device == "meta":
        for g, c in zip([out, *ours], [cpu_out, *cpu_grads], strict=True):
            assert g.device.type == "meta" and tuple(g.shape) == tuple(c.shape) and g.dtype == c.dtype
        return
    assert_close_on(device, out, cpu_out, rtol=tol, atol=tol)
    for g, c in zip(ours, cpu_grads, strict=True):
        assert_close_on(device, g, c, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", device_params(("sim",)))
def test_double_backward_keeps_the_composed_formulas(device):
    # create_graph records the backward: the differentiable compositions, not the fused op, on every device.
    x = fc.tensor(np.linspace(-2, 2, 12).reshape(3, 4), device=device).requires_grad_()
    (g,) = flambeau_autograd.grad(x.log_softmax(1)[:, 0].sum(), [x], create_graph=True)
    (gg,) = flambeau_autograd.grad(g.pow(2).sum(), [x])
    tx = torch.tensor(np.linspace(-2, 2, 12).reshape(3, 4), requires_grad=True)
    (tg,) = torch.autograd.grad(tx.log_softmax(1)[:, 0].sum(), [tx], create_graph=True)
    (tgg,) = torch.autograd.grad(tg.pow(2).sum(), [tx])
    np.testing.assert_allclose(np.array(gg.cpu().tolist()), tgg.numpy(), rtol=1e-12, atol=1e-12)
