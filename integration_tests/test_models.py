"""The benchmark models (benchmarks/models.py) compute what PyTorch computes.

For each model, one definition is built for both frameworks; PyTorch's
initial weights are copied into the flambeau model through its state_dict
(flambeau_interop's torch bridge), both get the same inputs, and then:

- the state_dict keys, shapes and dtypes are the same;
- the loss and every parameter's gradient of a training step match;
- after the SGD step (momentum 0.9), the parameters and the buffers (the
  batch-norm running statistics and counters) match, and so does the loss of
  a second step (which uses the momentum buffers);
- the eval-mode output (no grad) of the trained models matches.

All in float32, within float32 tolerance.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from flambeau_interop.torch_bridge import state_dict_from_torch

_MODELS_PY = Path(__file__).resolve().parents[1] / "benchmarks" / "models.py"
_spec = importlib.util.spec_from_file_location("flambeau_benchmark_models", _MODELS_PY)
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # dataclasses look their module up there
_spec.loader.exec_module(bench)

# The models whose layers flambeau has today (the others need Conv2d, BatchNorm2d,
# pooling, Embedding, LSTM or binary_cross_entropy_with_logits).
TESTED = ["mlp"]


def to_torch(t) -> torch.Tensor:
    return torch.from_numpy(t.detach().numpy().copy())


def to_fb(fb, t: torch.Tensor):
    return fb.from_numpy(t.detach().numpy().copy())


def assert_close(actual_fb, expected: torch.Tensor, what: str, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    actual = to_torch(actual_fb)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    if not expected.is_floating_point():
        assert torch.equal(actual, expected), f"{what}: {actual} != {expected}"
        return
    # Float32 sums in a different order: the absolute tolerance scales with the tensor's magnitude.
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol * scale, msg=lambda m: f"{what}: {m}")


def test_every_model_is_listed():
    assert set(TESTED) <= set(bench.MODELS)


@pytest.mark.parametrize("name", TESTED)
def test_model_matches_pytorch(fb, name):
    spec = bench.MODELS[name]
    fw_torch, fw_fb = bench.framework("torch"), bench.framework("flambeau")
    torch.manual_seed(0)
    t_model = spec.build(fw_torch)
    f_model = spec.build(fw_fb)

    t_state, f_state = t_model.state_dict(), f_model.state_dict()
    assert list(f_state) == list(t_state)
    for key, value in t_state.items():
        assert tuple(f_state[key].shape) == tuple(value.shape), key
        assert str(f_state[key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key
    result = f_model.load_state_dict(state_dict_from_torch(t_state, copy=True))
    assert not result.missing_keys and not result.unexpected_keys

    t_args, t_target = spec.inputs(fw_torch)
    f_inputs = (tuple(to_fb(fb, a) for a in t_args), to_fb(fb, t_target))
    t_step = bench.TrainStep(spec, fw_torch, t_model, (t_args, t_target))
    f_step = bench.TrainStep(spec, fw_fb, f_model, f_inputs)

    # One step, taken apart: loss and gradients, then the update.
    for step in (t_step, f_step):
        step.optimizer.zero_grad(set_to_none=True)
    t_loss, f_loss = t_step.forward_loss(), f_step.forward_loss()
    assert_close(f_loss.detach(), t_loss.detach(), "loss", rtol=1e-5)
    t_loss.backward()
    f_loss.backward()
    f_params = dict(f_model.named_parameters())
    t_params = dict(t_model.named_parameters())
    assert list(f_params) == list(t_params)
    for key, t_param in t_params.items():
        assert f_params[key].grad is not None, f"{key}: no gradient"
        assert_close(f_params[key].grad, t_param.grad, f"gradient of {key}")
    t_step.optimizer.step()
    f_step.optimizer.step()

    f_state = f_model.state_dict()
    for key, value in t_model.state_dict().items():
        assert_close(f_state[key], value, f"{key} after one step")

    # A second step uses the momentum buffers.
    assert_close(f_step.step().detach(), t_step.step().detach(), "loss of the second step", rtol=1e-5)

    t_model.eval()
    f_model.eval()
    assert_close(f_step.infer(), t_step.infer(), "eval output")
