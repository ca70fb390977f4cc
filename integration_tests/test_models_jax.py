"""The JAX versions of the benchmark models (benchmarks/models_jax.py) compute what PyTorch computes.

``train_models.py --peers jax`` times them against flambeau; the comparison is
fair only if they are the same models. For each model, PyTorch's initial
weights are copied into the JAX parameters through NumPy (the parameters are
keyed by PyTorch's ``state_dict`` names), both get the same batch, and then
the losses of three SGD-momentum steps, the parameters and batch-norm running
statistics after them, and (MLP, ResNet-8) the eval-mode outputs match. The
JAX initialiser gives PyTorch's parameter names, shapes and scales, and its
model's loss goes down.

JAX is a benchmark-only dependency (``nox -s bench`` installs it, the test
environments do not): without it the tests skip, saying so.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

jax = pytest.importorskip("jax", reason="jax is a benchmark-only dependency (nox -s bench installs it)")

_BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, _BENCH / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _load("flambeau_benchmark_models", "models.py")
bench_jax = _load("flambeau_benchmark_models_jax", "models_jax.py")


def test_every_model_is_there():
    assert bench_jax.MODELS == tuple(bench.MODELS)
    for name, spec in bench.MODELS.items():
        assert bench_jax.BATCH[name] == spec.batch


def _torch_step(name: str):
    torch.manual_seed(0)
    return bench.TrainStep(bench.MODELS[name], bench.framework("torch"))


def _numpy_state(model: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("name", list(bench.MODELS))
def test_same_training_steps_as_torch(name):
    t_step = _torch_step(name)
    m = bench_jax.JaxModel(name)
    params, buffers = bench_jax.from_state_dict(_numpy_state(t_step.model))
    batch = (tuple(jax.numpy.asarray(a.numpy()) for a in t_step.args), jax.numpy.asarray(t_step.target.numpy()))
    opt_state = m.opt_state(params, buffers)
    for step in range(3):
        t_loss = float(t_step.step().detach())
        params, opt_state, loss = m.step(params, opt_state, batch)
        # the first step is the same computation on the same weights; later ones add the momentum buffers
        assert float(loss) == pytest.approx(t_loss, rel=1e-5, abs=1e-6), f"{name}: loss of step {step}"
    after = _numpy_state(t_step.model)
    for key, value in {**params, **opt_state[1]}.items():
        np.testing.assert_allclose(np.asarray(value), after[key], rtol=1e-3, atol=1e-4, err_msg=f"{name}: {key}")
    if bench.MODELS[name].eval_benchmark:
        t_step.model.eval()
        with torch.no_grad():
            expected = t_step.model(*t_step.args).numpy()
        actual = np.asarray(m.infer(params, opt_state[1], batch[0]))
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4, err_msg=f"{name}: eval output")


@pytest.mark.parametrize("name", list(bench.MODELS))
def test_own_initialisation_has_torch_names_scales_and_learns(name):
    t_state = _numpy_state(_torch_step(name).model)
    m = bench_jax.JaxModel(name)
    params, (momentum, buffers) = m.init(jax.random.PRNGKey(0))
    expected = {k: v for k, v in t_state.items() if not k.endswith("num_batches_tracked")}
    assert sorted({**params, **buffers}) == sorted(expected)
    for key, value in {**params, **buffers}.items():
        value, reference = np.asarray(value), expected[key]
        assert value.shape == reference.shape and value.dtype == reference.dtype, key
        if reference.size > 1 and reference.min() == reference.max():  # batch norm's ones and zeros
            np.testing.assert_array_equal(value, reference, err_msg=key)
        elif value.size >= 1000:  # the same distribution: the same spread and, for the uniform ones, bound
            assert value.std() == pytest.approx(reference.std(), rel=0.1), key
            if not key.endswith("embedding.weight"):
                assert np.abs(value).max() == pytest.approx(np.abs(reference).max(), rel=0.05), key
    batch = m.inputs(jax.random.PRNGKey(1))
    opt_state = (momentum, buffers)
    losses = []
    for _ in range(5):
        params, opt_state, loss = m.step(params, opt_state, batch)
        losses.append(float(loss))
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], f"{name}: losses {losses}"
