"""Shared helpers of the fb.onnx.export tests: export and check a model, run it in ONNX Runtime, compare.

The oracles are flambeau's own forward pass on new inputs (other sizes, through dynamic_axes) and, where the
module exists in torch, torch's forward with the same weights.
"""

import io

import flambeau as fb
import numpy as np
import onnx
import onnxruntime as ort
import torch


def export_checked(model, example, names, dynamic=None, **kwargs):
    """Exports `model` on `example`, checks the file with onnx's full checker and returns its bytes."""
    buffer = io.BytesIO()
    proto = fb.onnx.export(model, example, buffer, input_names=names, dynamic_axes=dynamic, **kwargs)
    onnx.checker.check_model(proto, full_check=True)
    return buffer.getvalue()


def run_onnx(data, names, inputs):
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {n: t.numpy() for n, t in zip(names, inputs, strict=True)})


def outputs_of(result):
    """A model's (nested) tuple of tensor outputs, flattened in export's order."""
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in outputs_of(r)]
    return [result]


def assert_onnx_matches(data, names, model, inputs, torch_model=None, rtol=1e-4, atol=1e-5):
    """ONNX Runtime's outputs on `inputs` agree with flambeau's forward (and torch's, same weights)."""
    model.eval()
    with fb.no_grad():
        expected = [t.numpy() for t in outputs_of(model(*inputs))]
    got = run_onnx(data, names, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    if torch_model is not None:
        torch_model.eval()
        with torch.no_grad():
            reference = [t.numpy() for t in outputs_of(torch_model(*[torch.from_numpy(t.numpy()) for t in inputs]))]
        for g, r in zip(got, reference, strict=True):
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)


def torch_twin(model, torch_model):
    """`torch_model` with `model`'s weights and buffers (same state_dict keys)."""
    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()}
    torch_model.load_state_dict(state)
    return torch_model


def _program_module(base, lib):
    class Program(base):
        """A module whose forward is ``program(lib, *inputs)``: the same program as a flambeau and a torch module."""

        def __init__(self, program):
            super().__init__()
            self.program = program

        def forward(self, *inputs):
            return self.program(lib, *inputs)

    return Program


Program = _program_module(fb.nn.Module, fb)
TorchProgram = _program_module(torch.nn.Module, torch)
