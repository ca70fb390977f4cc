"""fb.onnx.export of nn.RNN (tanh, relu), nn.GRU and nn.LSTM as ONNX RNN/GRU/LSTM nodes.

Multi-layer and bidirectional, batch_first both ways, with a dynamic sequence length and batch: ONNX Runtime
runs the file at other lengths and batch sizes than the example's and agrees with flambeau's forward and
with torch's (same weights).
"""

import flambeau as fb
import onnx
import pytest
import torch
from onnx_testing import assert_onnx_matches, export_checked, torch_twin

nn = fb.nn

LAYERS = {
    "rnn_tanh": (nn.RNN, torch.nn.RNN, {}, "RNN"),
    "rnn_relu": (nn.RNN, torch.nn.RNN, {"nonlinearity": "relu"}, "RNN"),
    "gru": (nn.GRU, torch.nn.GRU, {}, "GRU"),
    "lstm": (nn.LSTM, torch.nn.LSTM, {}, "LSTM"),
}


def sequence(steps, batch, features, batch_first):
    return fb.randn(batch, steps, features) if batch_first else fb.randn(steps, batch, features)


@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)], ids=["one_layer", "two_layers_bidir"])
@pytest.mark.parametrize("kind", list(LAYERS))
def test_recurrent_layer_with_dynamic_length_and_batch_agrees_with_torch(kind, layers, bidirectional, batch_first):
    fb.manual_seed(10)
    cls, torch_cls, extra, op_type = LAYERS[kind]
    args = dict(num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, **extra)
    model = cls(5, 6, **args)
    reference = torch_twin(model, torch_cls(5, 6, **args))
    seq, batch = (1, 0) if batch_first else (0, 1)
    outputs = ["out", "h"] + (["c"] if kind == "lstm" else [])
    dynamic = {"x": {seq: "seq", batch: "batch"}, "out": {seq: "seq", batch: "batch"}}
    dynamic |= {name: {1: "batch"} for name in outputs[1:]}
    data = export_checked(model, (sequence(4, 3, 5, batch_first),), ["x"], dynamic, output_names=outputs)
    nodes = [n.op_type for n in onnx.load_from_string(data).graph.node]
    assert nodes.count(op_type) == layers * (2 if bidirectional else 1)
    for steps, n in ((7, 2), (1, 5), (4, 3)):
        assert_onnx_matches(data, ["x"], model, [sequence(steps, n, 5, batch_first)], reference)


@pytest.mark.parametrize("opset", [13, 21])
def test_gru_with_an_initial_state_input_and_no_bias(opset):
    fb.manual_seed(11)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(4, 3, num_layers=2, bias=False, batch_first=True)

        def forward(self, x, h0):
            out, h = self.gru(x, h0)
            return out[:, -1], h

    model = Encoder()
    dynamic = {"x": {0: "batch", 1: "seq"}, "h0": {1: "batch"}}
    data = export_checked(model, (fb.randn(2, 5, 4), fb.randn(2, 2, 3)), ["x", "h0"], dynamic, opset_version=opset)
    for n, steps in ((3, 6), (1, 2)):
        assert_onnx_matches(data, ["x", "h0"], model, [fb.randn(n, steps, 4), fb.randn(2, n, 3)])


def test_a_packed_sequence_of_different_lengths_is_refused():
    lstm = nn.LSTM(3, 2)

    class Packed(nn.Module):
        def forward(self, x):
            packed = nn.utils.rnn.pack_padded_sequence(x, [3, 1])
            return lstm(packed)[1][0]

    with pytest.raises(fb.onnx.UnsupportedOperatorError, match=r"'_rnn_layer' .* sequences of different lengths"):
        fb.onnx.export(Packed(), (fb.randn(3, 2, 3),))


@pytest.mark.parametrize("kind", ["RNNCell", "GRUCell", "LSTMCell"])
def test_recurrent_cells_decompose_and_agree_with_torch(kind):
    # A cell is one step written with linear, chunk and the activations: no recurrent ONNX node.
    fb.manual_seed(12)
    model = getattr(nn, kind)(4, 3)
    reference = torch_twin(model, getattr(torch.nn, kind)(4, 3))
    outputs = ["h", "c"] if kind == "LSTMCell" else ["h"]
    dynamic = {"x": {0: "batch"}} | {name: {0: "batch"} for name in outputs}
    data = export_checked(model, (fb.randn(2, 4),), ["x"], dynamic, output_names=outputs)
    for n in (5, 1):
        assert_onnx_matches(data, ["x"], model, [fb.randn(n, 4)], reference)
