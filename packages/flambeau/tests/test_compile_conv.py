"""fb.compile's eval convolutions on packed weights (compiler/_conv.py): a folded convolution runs core's
_conv_packed, a block's relu(conv + shortcut) is one node; against eager flambeau, the unpacked folded
convolutions (the same bits) and PyTorch, and following weights changed between calls."""

from __future__ import annotations

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau_core import _C

pytestmark = pytest.mark.usefixtures("ext_root")


def resnet(M, width=16):
    """A stem and two ResNet blocks (an identity shortcut, then a strided 1x1 one)."""

    class Block(M.nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = M.nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = M.nn.BatchNorm2d(cout)
            self.conv2 = M.nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = M.nn.BatchNorm2d(cout)
            if stride != 1 or cin != cout:
                self.shortcut = M.nn.Sequential(M.nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                                M.nn.BatchNorm2d(cout))  # fmt: skip
            else:
                self.shortcut = M.nn.Identity()

        def forward(self, x):
            out = M.nn.functional.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return M.nn.functional.relu(out + self.shortcut(x))

    return M.nn.Sequential(
        M.nn.Conv2d(3, width, 3, padding=1, bias=False), M.nn.BatchNorm2d(width), M.nn.ReLU(),
        Block(width, width, 1), Block(width, 4 * width, 2),
    )  # fmt: skip


def randomise_bn(model, seed=0):
    g = np.random.default_rng(seed)
    with fb.no_grad():
        for m in model.modules():
            if isinstance(m, fb.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(fb.tensor(g.normal(size=n), dtype=fb.float32))
                m.running_var.copy_(fb.tensor(g.uniform(0.5, 2.0, size=n), dtype=fb.float32))
                m.weight.copy_(fb.tensor(g.uniform(0.5, 1.5, size=n), dtype=fb.float32))
                m.bias.copy_(fb.tensor(g.normal(size=n), dtype=fb.float32))


def graph_ops(compiled):
    cache = compiled._compiled_call._cache
    entry = cache[next(iter(cache))][0]
    return [n.name for n in (entry.fusion.graph if entry.fusion else entry.graph).nodes]


def build():
    fb.manual_seed(0)
    model = resnet(fb)
    randomise_bn(model)
    return model.eval()


def test_eval_convolutions_are_packed_and_residual_blocks_merged_with_eager_bits_and_torch_values():
    model = build()
    compiled = fb.compile(model)
    x = fb.randn(4, 3, 16, 16)
    with fb.no_grad():
        expected = model(x)
        for _ in range(3):
            out = compiled(x)
            np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)  # eager: unfolded
    ops = graph_ops(compiled)
    if _C._cpu_capability() == "avx512":  # elsewhere _conv_packed runs the separate ops (the same nodes)
        assert _C._pack_conv_weight(model[0].weight, 1).numel() > 0
    assert ops.count("conv_packed+add+relu") == 2 and ops.count("conv_packed+relu") == 3, ops
    assert "add" not in ops and "relu" not in ops and "fused_elementwise" not in ops
    reference = resnet(torch)
    reference.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    with torch.no_grad():
        ref = reference.eval()(torch.from_numpy(x.numpy().copy()))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("change", ["in place under no_grad", "load_state_dict", ".data assignment", "statistics"])
def test_a_weight_changed_between_calls_is_followed(change):
    model = build()
    compiled = fb.compile(model)
    x = fb.randn(2, 3, 16, 16)
    with fb.no_grad():
        compiled(x)
        compiled(x)
    conv = model[3].conv2  # a convolution merged with its block's residual add and relu
    with fb.no_grad():
        if change == "in place under no_grad":
            conv.weight.mul_(-1.5)
        elif change == "load_state_dict":
            other = resnet(fb)
            randomise_bn(other, seed=7)
            model.load_state_dict(other.state_dict())
        elif change == ".data assignment":
            conv.weight.data = fb.randn(*conv.weight.shape)
        else:
            model[3].bn2.running_var.mul_(3.0)
        expected = model(x)
        out = compiled(x)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)  # eager: unfolded
    assert len(compiled._compiled_call.graphs) == 1  # followed without a recapture


def test_grad_mode_eval_and_training_keep_the_eager_ops():
    model = build()
    compiled = fb.compile(model)
    x = fb.randn(2, 3, 16, 16)
    out = compiled(x)  # eval under grad mode: nothing folded, gradients flow
    out.sum().backward()
    ref = build()
    ref(x).sum().backward()
    np.testing.assert_allclose(model[0].weight.grad.numpy(), ref[0].weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert not any(op.startswith("conv_packed") for op in graph_ops(compiled))


def test_a_packed_convolution_that_disagrees_warns_and_keeps_the_eager_ops(monkeypatch):
    real = _C._conv_packed

    def wrong(*args):
        return real(*args) + 1.0

    monkeypatch.setattr(_C, "_conv_packed", wrong)
    model = build()
    compiled = fb.compile(model)
    x = fb.randn(2, 3, 16, 16)
    with fb.no_grad(), pytest.warns(UserWarning, match="a convolution on its packed weight disagrees"):
        compiled(x)
    monkeypatch.undo()
    with fb.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)
    assert not any(op.startswith("conv_packed") for op in graph_ops(compiled))
