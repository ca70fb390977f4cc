"""fb.onnx.export of losses a model's forward computes: cross_entropy (class indices with ignore_index,
weights and label smoothing; class probabilities), nll_loss, mse_loss, l1_loss, binary_cross_entropy and
binary_cross_entropy_with_logits, each reduction; checked by ONNX Runtime on another batch size against
flambeau's forward and torch's (the same program on torch tensors)."""

import flambeau as fb
import pytest
from onnx_testing import Program, TorchProgram, assert_onnx_matches, export_checked


def loss_program(program):
    """The loss program as a flambeau module and a torch module (its F is the library's functional module)."""

    def run(lib, x, target):
        return program(lib, lib.nn.functional, x, target)

    return Program(run), TorchProgram(run)


def classes(n):
    target = fb.randint(0, 5, (n,))
    target[1] = -100  # an ignored target
    return target


# (program, target maker): x is (n, 5) scores
LOSSES = {
    "cross_entropy": (lambda lib, F, x, t: F.cross_entropy(x, t), classes),
    "cross_entropy_sum_weighted": (
        lambda lib, F, x, t: F.cross_entropy(x, t, weight=lib.arange(1, 6).float(), reduction="sum"), classes,
    ),
    "cross_entropy_none_ignore_3": (
        lambda lib, F, x, t: F.cross_entropy(x, t.clamp(min=0), ignore_index=3, reduction="none"), classes,
    ),
    "cross_entropy_smoothing": (lambda lib, F, x, t: F.cross_entropy(x, t, label_smoothing=0.2), classes),
    "cross_entropy_smoothing_sum": (
        lambda lib, F, x, t: F.cross_entropy(x, t, label_smoothing=0.1, reduction="sum"), classes,
    ),
    "cross_entropy_probabilities": (
        lambda lib, F, x, t: F.cross_entropy(x, t.softmax(-1), label_smoothing=0.1), lambda n: fb.randn(n, 5),
    ),
    "nll_loss": (lambda lib, F, x, t: F.nll_loss(F.log_softmax(x, 1), t), classes),
    "nll_loss_weighted_none": (
        lambda lib, F, x, t: F.nll_loss(x.log_softmax(1), t, weight=lib.arange(1, 6).float(), reduction="none"),
        classes,
    ),
    "mse_loss": (lambda lib, F, x, t: F.mse_loss(x, t), lambda n: fb.randn(n, 5)),
    "mse_loss_none": (lambda lib, F, x, t: F.mse_loss(x, t, reduction="none"), lambda n: fb.randn(n, 5)),
    "l1_loss_sum": (lambda lib, F, x, t: F.l1_loss(x, t, reduction="sum"), lambda n: fb.randn(n, 5)),
    "bce": (lambda lib, F, x, t: F.binary_cross_entropy(x.sigmoid(), t), lambda n: fb.rand(n, 5)),
    "bce_weighted_none": (
        lambda lib, F, x, t: F.binary_cross_entropy(x.sigmoid(), t, weight=t * 2, reduction="none"),
        lambda n: fb.rand(n, 5),
    ),
    "bce_with_logits": (
        lambda lib, F, x, t: F.binary_cross_entropy_with_logits(x * 30, t), lambda n: fb.rand(n, 5),
    ),  # large logits: the stable form
    "bce_with_logits_pos_weight_sum": (
        lambda lib, F, x, t: F.binary_cross_entropy_with_logits(
            x, t, pos_weight=lib.arange(1, 6).float(), reduction="sum"
        ),
        lambda n: fb.rand(n, 5),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_agrees_with_onnxruntime_and_torch(name):
    fb.manual_seed(30)
    program, make_target = LOSSES[name]
    model, reference = loss_program(program)
    data = export_checked(model, (fb.randn(4, 5), make_target(4)), ["x", "t"], {"x": {0: "n"}, "t": {0: "n"}})
    for n in (6, 3):
        assert_onnx_matches(data, ["x", "t"], model, [fb.randn(n, 5), make_target(n)], reference)


def test_cross_entropy_over_a_sequence_of_scores():
    fb.manual_seed(31)

    def program(lib, F, x, t):
        return F.cross_entropy(x.transpose(1, 2), t, reduction="mean")  # (N, C, T) scores, (N, T) targets

    model, reference = loss_program(program)
    dynamic = {"x": {0: "n", 1: "steps"}, "t": {0: "n", 1: "steps"}}
    data = export_checked(model, (fb.randn(2, 3, 5), fb.randint(0, 5, (2, 3))), ["x", "t"], dynamic)
    assert_onnx_matches(data, ["x", "t"], model, [fb.randn(4, 7, 5), fb.randint(0, 5, (4, 7))], reference)


def test_label_smoothing_with_class_weights_is_refused():
    def program(lib, F, x, t):
        return F.cross_entropy(x, t, weight=lib.ones(5), label_smoothing=0.1)

    with pytest.raises(fb.onnx.UnsupportedOperatorError, match=r"'_cross_entropy' .* label_smoothing together with"):
        fb.onnx.export(loss_program(program)[0], (fb.randn(2, 5), fb.tensor([1, 2])))
