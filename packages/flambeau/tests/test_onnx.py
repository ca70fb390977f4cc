"""flambeau.onnx.export: the benchmark models exported, checked by onnx and run by ONNX Runtime.

The oracle is flambeau's own forward pass on new inputs (another batch size, through dynamic_axes);
ONNX Runtime must agree within float32 tolerance.
"""

import io

import flambeau as fb
import numpy as np
import onnx
import pytest
from onnx_testing import Program, TorchProgram, assert_onnx_matches, export_checked, run_onnx

nn = fb.nn
F = fb.nn.functional


def conv_bn(cin, cout, kernel, stride=1, groups=1):
    conv = nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False)
    return [conv, nn.BatchNorm2d(cout)]


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv_bn(cin, cout, 3, stride)
        self.conv2, self.bn2 = conv_bn(cout, cout, 3)
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(*conv_bn(cin, cout, 1, stride))
        else:
            self.shortcut = nn.Identity()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def lenet5():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10),
    )  # fmt: skip


def resnet8():
    return nn.Sequential(
        *conv_bn(3, 16, 3), nn.ReLU(), BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )  # fmt: skip


def mobilenet():
    def separable(cin, cout, stride):
        return nn.Sequential(*conv_bn(cin, cin, 3, stride, groups=cin), nn.ReLU(), *conv_bn(cin, cout, 1), nn.ReLU())

    return nn.Sequential(
        *conv_bn(3, 32, 3), nn.ReLU(), separable(32, 64, 1), separable(64, 128, 2), separable(128, 128, 1),
        separable(128, 256, 2), separable(256, 256, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10),
    )  # fmt: skip


class NCF(nn.Module):
    def __init__(self):
        super().__init__()
        self.user_embedding = nn.Embedding(1000, 64)
        self.item_embedding = nn.Embedding(500, 64)
        self.mlp = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, users, items):
        x = fb.cat([self.user_embedding(users), self.item_embedding(items)], dim=1)
        return self.mlp(x).flatten()


class TextClassifier(nn.Module):
    """Embedding, LayerNorm, a GELU feed-forward, dropout, mean over tokens, log-softmax."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(100, 16)
        self.norm = nn.LayerNorm(16)
        self.ff = nn.Linear(16, 32)
        self.dropout = nn.Dropout(0.5)
        self.head = nn.Linear(32, 4)

    def forward(self, tokens):
        h = self.dropout(F.gelu(self.ff(self.norm(self.embedding(tokens)))))
        return F.log_softmax(self.head(h.mean(dim=1)), dim=-1)


def randn(*shape):
    return fb.randn(*shape)


# (build, example inputs, new inputs with another batch size, the dynamic input dims)
MODELS = {
    "mlp": (mlp, lambda n: (randn(n, 784),)),
    "lenet5": (lenet5, lambda n: (randn(n, 1, 28, 28),)),
    "resnet8": (resnet8, lambda n: (randn(n, 3, 32, 32),)),
    "mobilenet": (mobilenet, lambda n: (randn(n, 3, 32, 32),)),
    "ncf": (NCF, lambda n: (fb.randint(0, 1000, (n,)), fb.randint(0, 500, (n,)))),
    "text": (TextClassifier, lambda n: (fb.randint(0, 100, (n, 7)),)),
}


def trained_statistics(model, inputs):
    """A few training-mode forward passes, so batch norm's running statistics are not the defaults."""
    model.train()
    with fb.no_grad():
        for _ in range(2):
            model(*inputs)
    model.eval()


@pytest.mark.parametrize("name", list(MODELS))
def test_model_exports_and_onnxruntime_agrees_on_another_batch_size(name):
    fb.manual_seed(0)
    build, make_inputs = MODELS[name]
    model = build()
    trained_statistics(model, make_inputs(4))
    example = make_inputs(3)
    names = [f"in{i}" for i in range(len(example))]
    dynamic = {n: {0: "batch"} for n in names} | {"out": {0: "batch"}}
    buffer = io.BytesIO()
    proto = fb.onnx.export(model, example, buffer, input_names=names, output_names=["out"], dynamic_axes=dynamic)
    onnx.checker.check_model(proto, full_check=True)
    loaded = onnx.load_from_string(buffer.getvalue())
    assert loaded == proto
    assert [i.name for i in loaded.graph.input] == names and [o.name for o in loaded.graph.output] == ["out"]
    assert loaded.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    # Parameters and buffers are initializers named as in state_dict.
    assert {i.name for i in loaded.graph.initializer} >= {k for k in model.state_dict() if "num_batches" not in k}
    assert model.training is False
    for batch in (5, 3):
        new = make_inputs(batch)
        with fb.no_grad():
            expected = model(*new).numpy()
        (got,) = run_onnx(buffer.getvalue(), names, new)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_export_restores_training_mode_and_writes_a_path(tmp_path):
    fb.manual_seed(1)
    model = lenet5()
    assert model.training
    path = tmp_path / "lenet.onnx"
    fb.onnx.export(model, (randn(2, 1, 28, 28),), str(path))
    assert model.training
    proto = onnx.load(str(path))
    assert [i.name for i in proto.graph.input] == ["input"] and [o.name for o in proto.graph.output] == ["output"]
    assert [n.op_type for n in proto.graph.node] == [
        "Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm", "Relu", "Gemm", "Relu", "Gemm",
    ]  # fmt: skip
    # Without dynamic_axes the shapes are the example's.
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [2, 1, 28, 28]
    x = randn(2, 1, 28, 28)
    with fb.no_grad():
        model.eval()
        expected = model(x).numpy()
    np.testing.assert_allclose(run_onnx(path.read_bytes(), ["input"], [x])[0], expected, rtol=1e-4, atol=1e-5)


def test_default_input_names_are_the_forward_parameters_and_the_opset_is_recorded():
    proto = fb.onnx.export(NCF(), (fb.randint(0, 10, (2,)), fb.randint(0, 10, (2,))), opset_version=17)
    assert [i.name for i in proto.graph.input] == ["users", "items"]
    assert proto.opset_import[0].version == 17
    assert fb.onnx.is_in_onnx_export() is False


class Functional(nn.Module):
    """Operators, Python numbers, views and functions the benchmark models do not use."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(fb.randn(6, 4))

    def forward(self, x):
        seen = fb.onnx.is_in_onnx_export()
        y = (2 * x - 1) / 3 + x.sigmoid() * x.tanh()
        y = y.view(y.size(0), 2, 3).permute(0, 2, 1).reshape(-1, 6)
        y = fb.matmul(y, self.w).transpose(0, 1).t()
        y = F.softmax(y, dim=1) + F.silu(y) + F.leaky_relu(y, 0.2) + F.gelu(y, approximate="tanh")
        z = fb.cat([y.unsqueeze(1), y.unsqueeze(1)], dim=1).squeeze(2)
        return z.sum(dim=1) * float(seen), F.avg_pool2d(x.view(-1, 1, 2, 3), (2, 1), stride=1)


def test_operators_numbers_and_views_and_two_outputs():
    fb.manual_seed(2)
    model = Functional()
    x = randn(4, 6)
    proto = fb.onnx.export(model, (x,), input_names=["x"], dynamic_axes={"x": [0], "output_0": [0]})
    onnx.checker.check_model(proto, full_check=True)
    assert [o.name for o in proto.graph.output] == ["output_0", "output_1"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"
    new = randn(5, 6)
    fb.onnx._exporting = True  # the traced forward saw is_in_onnx_export() == True
    try:
        with fb.no_grad():
            expected = [t.numpy() for t in model(new)]
    finally:
        fb.onnx._exporting = False
    got = run_onnx(proto.SerializeToString(), ["x"], [new])
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_constants_are_folded():
    class WithConstant(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(fb.randn(3, 2))

        def forward(self, x):
            return x @ (self.w.t() * 2).t()  # ops on the weight alone are computed at export

    model = WithConstant()
    x = randn(4, 3)
    folded = fb.onnx.export(model, (x,))
    assert [n.op_type for n in folded.graph.node] == ["MatMul"]
    unfolded = fb.onnx.export(model, (x,), do_constant_folding=False)
    assert [n.op_type for n in unfolded.graph.node] == ["Transpose", "Mul", "Transpose", "MatMul"]
    with fb.no_grad():
        expected = model(x).numpy()
    for proto in (folded, unfolded):
        np.testing.assert_allclose(run_onnx(proto.SerializeToString(), ["x"], [x])[0], expected, rtol=1e-5)


def test_export_params_false_makes_the_parameters_inputs():
    model = nn.Linear(3, 2)
    proto = fb.onnx.export(model, (randn(1, 3),), export_params=False)
    assert [i.name for i in proto.graph.input] == ["input", "weight", "bias"]
    assert len(proto.graph.initializer) == 0


# ------------------------------------------------------------------ errors
def test_an_op_with_no_onnx_mapping_names_the_op_and_the_opset():
    class Sorts(nn.Module):
        def forward(self, x):
            return x.cumsum(0)

    with pytest.raises(fb.onnx.UnsupportedOperatorError) as info:
        fb.onnx.export(Sorts(), (randn(3),), opset_version=17)
    assert str(info.value) == (
        "[onnx.export] Exporting the operator 'cumsum' to ONNX opset version 17 is not supported"
    )
    assert isinstance(info.value, fb.onnx.OnnxExporterError) and isinstance(info.value, RuntimeError)


def test_an_unmappable_result_of_a_mapped_op_names_the_op():
    class Indices(nn.Module):
        def forward(self, x):
            out, idx = F.max_pool2d(x, 2, return_indices=True)
            return out + idx.float()

    with pytest.raises(fb.onnx.UnsupportedOperatorError, match="'max_pool2d_with_indices' to ONNX opset version 18"):
        fb.onnx.export(Indices(), (randn(1, 1, 4, 4),))


def test_data_dependent_control_flow_is_refused():
    class Branches(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x

    with pytest.raises(fb.onnx.OnnxExporterError, match=r"Tensor.__bool__\): data-dependent control flow"):
        fb.onnx.export(Branches(), (randn(3),))

    class Reads(nn.Module):
        def forward(self, x):
            return x * x.max().item()

    with pytest.raises(fb.onnx.OnnxExporterError, match=r"Tensor.item\)"):
        fb.onnx.export(Reads(), (randn(3),))


def test_bad_arguments():
    model = nn.Linear(2, 2)
    x = randn(1, 2)
    with pytest.raises(ValueError, match=r"\[onnx.export\] opset_version must be in \[13, 21\], got 7"):
        fb.onnx.export(model, (x,), opset_version=7)
    with pytest.raises(TypeError, match=r"opset_version must be an int, got str"):
        fb.onnx.export(model, (x,), opset_version="17")
    with pytest.raises(ValueError, match=r"dynamic_axes names 'y', which is neither an input nor an output"):
        fb.onnx.export(model, (x,), dynamic_axes={"y": {0: "n"}})
    with pytest.raises(ValueError, match=r"dynamic_axes\['input'\] has axis 2, but 'input' has 2 dims"):
        fb.onnx.export(model, (x,), dynamic_axes={"input": [2]})
    with pytest.raises(TypeError, match=r"args must be a Tensor or a tuple, got list"):
        fb.onnx.export(model, [x])
    with pytest.raises(ValueError, match=r"args must contain at least one Tensor input"):
        fb.onnx.export(model, ())
    with pytest.raises(TypeError, match=r"model must be a Module or a callable, got int"):
        fb.onnx.export(3, (x,))
    with pytest.raises(TypeError, match=r"unsupported arguments: \['custom_translation_table'\]"):
        fb.onnx.export(model, (x,), custom_translation_table={})
    with pytest.raises(fb.onnx.OnnxExporterError, match=r"eval mode only, got training=<TrainingMode.TRAINING"):
        fb.onnx.export(model, (x,), training=fb.onnx.TrainingMode.TRAINING)
    with pytest.raises(ValueError, match=r"got 2 input names for 1 inputs"):
        fb.onnx.export(model, (x,), input_names=["a", "b"])
    with pytest.raises(TypeError, match=r"f must be a path or a binary file object, got int"):
        fb.onnx.export(model, (x,), 3)
    with pytest.raises(fb.onnx.OnnxExporterError, match=r"must return a Tensor or a \(nested\) tuple/list"):
        fb.onnx.export(lambda t: 3, (x,))


class Reductions(nn.Module):
    def forward(self, x):
        values, indices = x.max(dim=1, keepdim=True)
        low = fb.min(x, 1).values
        return (
            values + x.amax(dim=0) - x.mean(dim=(0, 1), keepdim=True) + x.sum(1, keepdim=True),
            indices,
            low * x.max() + fb.maximum(x, x * 0.5).sum(),
        )


@pytest.mark.parametrize("opset", [17, 18])
def test_reductions_and_max_min_agree_with_onnxruntime(opset):
    fb.manual_seed(3)
    x = randn(4, 5)
    proto = fb.onnx.export(Reductions(), (x,), opset_version=opset, dynamic_axes={"x": {0: "n"}}, input_names=["x"])
    onnx.checker.check_model(proto, full_check=True)
    with fb.no_grad():
        expected = [t.numpy() for t in Reductions()(x)]
    got = run_onnx(proto.SerializeToString(), ["x"], [x])
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


class LanguageModel(nn.Module):
    """The LSTM benchmark model, smaller: embedding, 2-layer LSTM (sequence-first), decoder."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 8)
        self.lstm = nn.LSTM(8, 12, num_layers=2)
        self.decoder = nn.Linear(12, 50)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.embedding(tokens))
        return self.decoder(out), h, c


def test_lstm_language_model_agrees_with_onnxruntime_at_other_lengths_and_batch_sizes():
    fb.manual_seed(4)
    model = LanguageModel()
    tokens = fb.randint(0, 50, (7, 3))
    dynamic = {"tokens": {0: "seq", 1: "batch"}, "output_0": {0: "seq", 1: "batch"}}
    dynamic |= {"output_1": {1: "batch"}, "output_2": {1: "batch"}}
    proto = fb.onnx.export(model, (tokens,), input_names=["tokens"], dynamic_axes=dynamic)
    onnx.checker.check_model(proto, full_check=True)
    assert [n.op_type for n in proto.graph.node].count("LSTM") == 2
    for steps, batch in ((7, 3), (12, 3), (4, 5), (1, 1)):
        new = fb.randint(0, 50, (steps, batch))
        with fb.no_grad():
            model.eval()
            expected = [t.numpy() for t in model(new)]
        got = run_onnx(proto.SerializeToString(), ["tokens"], [new])
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "mode,pad,opset",
    [("constant", (1, 2, 0, 1), 18), ("constant", (-1, 2), 18), ("reflect", (2, 1, 1, 1), 18),
     ("replicate", (1, 0, 2, 2), 13), ("circular", (1, 2, 1, 0), 19)],
)  # fmt: skip
def test_pad_modes_agree_with_torch(mode, pad, opset):
    def program(lib, x):
        return lib.nn.functional.pad(x, pad, mode=mode, **({"value": 0.5} if mode == "constant" else {}))

    model = Program(program)
    data = export_checked(model, (randn(2, 3, 4, 5),), ["x"], {"x": {0: "batch"}}, opset_version=opset)
    assert_onnx_matches(data, ["x"], model, [randn(4, 3, 4, 5)], TorchProgram(program))


def test_circular_pad_needs_opset_19():
    def circular(x):
        return F.pad(x, (1, 1), mode="circular")

    with pytest.raises(fb.onnx.UnsupportedOperatorError, match=r"'_pad_nd' to ONNX opset version 18 .* opset 19"):
        fb.onnx.export(circular, (randn(1, 2, 3),))
