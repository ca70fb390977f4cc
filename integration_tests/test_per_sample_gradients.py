"""Per-sample gradients of the six benchmark models (benchmarks/models.py) by flambeau.func.vmap of
flambeau.func.grad, against torch's gradient of each sample on its own (torch.func.grad) with the same
float64 weights and inputs; no op may run without a batching rule (a loop over the samples).

Each model is in eval mode (batch norm uses its running statistics, as per-sample gradients need: in
training mode one sample's batch statistics are not those of the batch). The batch is 3 samples; each
sample is a batch of one for the model (inputs unsqueezed in the model's batch dim)."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau.func import _vmap

_MODELS_PY = Path(__file__).resolve().parents[1] / "benchmarks" / "models.py"
_spec = importlib.util.spec_from_file_location("flambeau_benchmark_models_psg", _MODELS_PY)
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # dataclasses look their module up there
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("name", sorted(bench.MODELS))
def test_per_sample_gradients_match_torch_func(name):
    spec = bench.MODELS[name]
    fw_fb, fw_torch = bench.framework("flambeau"), bench.framework("torch")
    fb.manual_seed(0)
    model = spec.build(fw_fb).double().eval()
    twin = spec.build(fw_torch).double().eval()
    twin.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in model.state_dict().items()})
    args, target = spec.make_inputs(fw_fb, 3)
    args = tuple(a.double() if a.is_floating_point() else a for a in args)
    target = target.double() if target.is_floating_point() else target
    t_args = tuple(torch.tensor(a.numpy()) for a in args)
    t_target = torch.tensor(target.numpy())
    batch_dim = 1 if name == "lstm" else 0  # the language model takes (seq, batch)

    def loss_of(fw, module, params, buffers, call):
        def loss(p, *sample):
            *xs, t = sample
            out = call(module, (p, buffers), tuple(x.unsqueeze(batch_dim) for x in xs))
            return spec.loss(fw, out, t.unsqueeze(batch_dim))

        return loss

    params = {k: v.detach() for k, v in model.named_parameters()}
    t_params = {k: v.detach() for k, v in twin.named_parameters()}
    loss = loss_of(fw_fb, model, params, dict(model.named_buffers()), fb.func.functional_call)
    t_loss = loss_of(fw_torch, twin, t_params, dict(twin.named_buffers()), torch.func.functional_call)
    in_dims = (None,) + (batch_dim,) * (len(args) + 1)
    _vmap._warned.clear()  # vmap warns once per op and process: make this model's fallbacks visible
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = fb.func.vmap(fb.func.grad(loss), in_dims=in_dims)(params, *args, target)
    looped = {str(w.message).split("'")[1] for w in caught if "no batching rule" in str(w.message)}
    # Every op of every model has a batching rule: none runs once per sample (torch.func.vmap loops over
    # its recurrent layer kernel, "not yet implemented the batching rule for aten::mkldnn_rnn_layer").
    assert not looped, f"{name}: ops without a batching rule: {sorted(looped)}"
    # The oracle: torch's gradient of each sample on its own (torch.func.vmap itself fails on the float64
    # LSTM: "output with shape [1, 1024] doesn't match the broadcast shape").
    t_grad = torch.func.grad(t_loss)
    per_sample = [
        t_grad(t_params, *(a.select(batch_dim, i) for a in t_args), t_target.select(batch_dim, i)) for i in range(3)
    ]
    theirs = {k: torch.stack([g[k] for g in per_sample]) for k in per_sample[0]}
    assert list(ours) == list(theirs)
    for k in theirs:
        assert tuple(ours[k].shape) == tuple(theirs[k].shape) == (3, *params[k].shape)
        np.testing.assert_allclose(ours[k].numpy(), theirs[k].numpy(), rtol=1e-7, atol=1e-9, err_msg=k)
