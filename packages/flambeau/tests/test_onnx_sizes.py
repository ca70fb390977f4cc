"""fb.onnx.export of sizes a model computes from its inputs' shapes, and of tensors it makes inside forward.

With dynamic_axes, sizes such as x.size(0) become Shape nodes (Note [Sizes from a second trace] in
flambeau/onnx/_graph.py); factories whose shape follows the input's become ConstantOfShape or Range; other
tensors made in forward are constants, with a warning. ONNX Runtime runs the files at other sizes.
"""

import warnings

import flambeau as fb
import numpy as np
import onnx
import pytest
from onnx_testing import assert_onnx_matches, export_checked, run_onnx

nn = fb.nn


class Flattens(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.head = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        h = self.conv(x)
        flat = h.view(h.size(0), -1)  # the flatten of the benchmark models, written with a computed size
        b, c, hh, w = h.shape
        # Sizes that are equal in the example (a batch of 4, 4 channels, 4 rows) must not be confused.
        rows = h.permute(0, 2, 3, 1).reshape(b * hh * w, c).view(b, hh * w, c)
        return self.head(flat), rows.mean(1), h.reshape(-1, c, hh * w).transpose(1, 2).reshape(b, hh, w, c)


@pytest.mark.parametrize("opset", [13, 18])  # Shape + Gather before opset 15, Shape(start, end) from it
def test_sizes_from_shapes_follow_the_batch(opset):
    fb.manual_seed(50)
    model = Flattens()
    data = export_checked(model, (fb.randn(4, 4, 4, 4),), ["x"], {"x": {0: "batch"}}, opset_version=opset)
    assert "Shape" in [n.op_type for n in onnx.load_from_string(data).graph.node]
    for n in (1, 3, 7):
        assert_onnx_matches(data, ["x"], model, [fb.randn(n, 4, 4, 4)])


class Positions(nn.Module):
    """A sequence model making tensors in forward from its input's sizes."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(20, 8)
        self.positions = nn.Embedding(64, 8)

    def forward(self, ids):
        n, steps = ids.size(0), ids.size(1)
        h = self.tokens(ids) + self.positions(fb.arange(steps))  # an arange of the length
        start = fb.zeros(n, 1, 8)  # a fill of the batch
        h = fb.cat([start, h[:, :-1] * fb.ones(1, steps - 1, 1)], dim=1)
        half = h[:, : steps // 2]  # a slice end from a size
        return h.sum(1), half.mean(1), fb.full((n, steps), 2.5).sum(1)


@pytest.mark.parametrize("opset", [13, 21])
def test_factories_whose_shape_follows_the_input_are_rebuilt(opset):
    fb.manual_seed(51)
    model = Positions()
    dynamic = {"ids": {0: "n", 1: "steps"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every tensor made in forward is rebuilt: nothing is a constant
        data = export_checked(model, (fb.randint(0, 20, (3, 6)),), ["ids"], dynamic, opset_version=opset)
    ops = [n.op_type for n in onnx.load_from_string(data).graph.node]
    assert "Range" in ops and "ConstantOfShape" in ops
    for n, steps in ((2, 10), (5, 4), (1, 2)):
        assert_onnx_matches(data, ["ids"], model, [fb.randint(0, 20, (n, steps))])


def test_a_tensor_made_in_forward_is_a_constant_with_a_warning_unless_its_values_follow_the_sizes():
    class Noisy(nn.Module):
        def forward(self, x):
            return x + fb.randn(3)  # the same numbers in both runs (they start from one random state)

    x = fb.randn(2, 3)
    fb.manual_seed(5)
    with pytest.warns(UserWarning, match=r"constants in the file, fixed to the values of this run: a \(3,\) tensor"):
        fb.onnx.export(Noisy(), (x,), input_names=["x"], dynamic_axes={"x": [0]})
    after_export = fb.randn(4)
    fb.manual_seed(5)
    Noisy()(x)
    np.testing.assert_array_equal(after_export.numpy(), fb.randn(4).numpy())  # the generator moved as by one run

    class Parity(nn.Module):
        def forward(self, x):
            return x + fb.full((3,), float(x.size(0) % 2))  # values from a size: 1 here, 0 at twice the batch

    with pytest.raises(fb.onnx.OnnxExporterError, match=r"a \(3,\) tensor inside forward whose values follow"):
        fb.onnx.export(Parity(), (fb.randn(3, 3),), input_names=["x"], dynamic_axes={"x": [0]})

    class Fixed(nn.Module):
        def forward(self, x):
            return x * fb.full((3,), 2.0) + fb.arange(3).float()  # the arange is seen through the folded cast

    with pytest.warns(UserWarning, match=r"constants in the file.*a \(3,\) tensor filled with 2.0.*\(3,\) arange"):
        proto = fb.onnx.export(Fixed(), (fb.randn(2, 3),))
    x = fb.randn(2, 3)
    np.testing.assert_allclose(run_onnx(proto.SerializeToString(), ["x"], [x])[0], (x * 2 + fb.arange(3)).numpy())


def test_a_factory_with_a_dynamic_shape_and_other_values_is_refused():
    class Identity(nn.Module):
        def forward(self, x):
            return x @ fb.eye(x.size(1))

    with pytest.raises(fb.onnx.OnnxExporterError, match=r"makes a tensor inside forward whose shape follows"):
        fb.onnx.export(Identity(), (fb.randn(2, 3),), input_names=["x"], dynamic_axes={"x": [0, 1]})


def test_a_model_that_only_runs_at_the_example_size_exports_fixed_sizes_with_a_warning():
    class Fixed(nn.Module):
        def forward(self, x):
            if x.size(0) != 2:
                raise ValueError("batch of 2 only")
            return x.view(2, -1)

    with pytest.warns(UserWarning, match=r"sizes .* are fixed in the file.*ValueError: batch of 2 only"):
        proto = fb.onnx.export(Fixed(), (fb.randn(2, 3, 2),), input_names=["x"], dynamic_axes={"x": [0]})
    onnx.checker.check_model(proto, full_check=True)
