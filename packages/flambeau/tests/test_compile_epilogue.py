"""fb.compile's epilogue pass (compiler/_epilogue.py): batch norm folded into an eval convolution, activations in
place on linear, convolution and batch-norm results, a relu moved after its max pooling; against eager flambeau
and PyTorch (the oracles)."""

from __future__ import annotations

import shutil
import subprocess
import warnings

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau.compiler import _epilogue
from flambeau_core import _C

F = fb.nn.functional


# the generated kernels build into a fresh folder of this module's (conftest's ext_root)
pytestmark = pytest.mark.usefixtures("ext_root")


@pytest.fixture(autouse=True)
def _fresh():
    fb.compiler.reset()
    yield
    fb.compiler.reset()


def epilogues(compiled):
    return (
        compiled._compiled_call.epilogues if isinstance(compiled, fb.compiler.OptimizedModule) else compiled.epilogues
    )


def close(actual, expected, rtol=2e-5, atol=2e-6):
    a = actual.detach().numpy() if isinstance(actual, fb.Tensor) else actual.detach().numpy()
    np.testing.assert_allclose(a, expected.detach().numpy(), rtol=rtol, atol=atol)


def to_torch_module(fmodule, tmodule):
    tmodule.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in fmodule.state_dict().items()})
    return tmodule


# --------------------------------------------------------------------------- models, written for both libraries
def mlp(M):
    return M.nn.Sequential(
        M.nn.Linear(12, 16), M.nn.ReLU(), M.nn.Linear(16, 16), M.nn.Sigmoid(), M.nn.Linear(16, 8), M.nn.Tanh(),
        M.nn.Linear(8, 3),
    )  # fmt: skip


def make_convnet(M, conv_bias=False, affine=True, groups=1):
    class Block(M.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = M.nn.Conv2d(3, 8, 3, padding=1, bias=conv_bias)
            self.bn0 = M.nn.BatchNorm2d(8, affine=affine)
            self.conv1 = M.nn.Conv2d(8, 8, 3, padding=1, bias=conv_bias, groups=groups)
            self.bn1 = M.nn.BatchNorm2d(8, affine=affine)
            self.conv2 = M.nn.Conv2d(8, 8, 1, stride=2, bias=conv_bias)
            self.bn2 = M.nn.BatchNorm2d(8, affine=affine)
            self.head = M.nn.Linear(8, 4)

        def forward(self, x):
            h = M.nn.functional.relu(self.bn0(self.stem(x)))
            y = self.bn1(self.conv1(h))
            h = M.nn.functional.relu(y + h)  # a residual add then relu: the elementwise fusion's
            h = self.bn2(self.conv2(h)).relu()
            return self.head(h.mean((2, 3)))

    return Block()


def randomise_bn(model, seed=0):
    """Running statistics and affine parameters away from their initial 0/1, so a fold is not a no-op."""
    g = np.random.default_rng(seed)
    for m in model.modules():
        if isinstance(m, fb.nn.BatchNorm2d | fb.nn.BatchNorm1d | fb.nn.BatchNorm3d):
            n = m.num_features
            m.running_mean.copy_(fb.tensor(g.normal(size=n), dtype=fb.float32))
            m.running_var.copy_(fb.tensor(g.uniform(0.5, 2.0, size=n), dtype=fb.float32))
            if m.affine:
                with fb.no_grad():
                    m.weight.copy_(fb.tensor(g.uniform(0.5, 1.5, size=n), dtype=fb.float32))
                    m.bias.copy_(fb.tensor(g.normal(size=n), dtype=fb.float32))


# --------------------------------------------------------------------------- batch norm folded at eval
@pytest.mark.parametrize(("conv_bias", "affine", "groups"), [(False, True, 1), (True, True, 8), (True, False, 2)])
def test_eval_conv_batch_norm_is_one_convolution_and_matches_eager_and_torch(conv_bias, affine, groups):
    fb.manual_seed(0)
    model = make_convnet(fb, conv_bias, affine, groups)
    randomise_bn(model)
    model.eval()
    reference = to_torch_module(model, make_convnet(torch, conv_bias, affine, groups)).eval()
    compiled = fb.compile(model)
    x = fb.randn(2, 3, 8, 8)
    with fb.no_grad():
        expected = model(x)
        for _ in range(3):
            out = compiled(x)
            close(out, expected, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        close(out, reference(torch.from_numpy(x.numpy().copy())), rtol=1e-5, atol=1e-5)
    assert epilogues(compiled) == [
        [
            ("conv2d", "native_batch_norm", "relu"),
            ("conv2d", "native_batch_norm"),
            ("conv2d", "native_batch_norm", "relu"),
        ]
    ]
    graph_ops = [n.name for n in compiled._compiled_call._cache[next(iter(compiled._compiled_call._cache))][0]
                 .fusion.graph.nodes]  # fmt: skip
    assert "native_batch_norm" not in graph_ops and "conv2d" not in graph_ops


def test_the_fold_follows_parameter_and_statistics_changes():
    fb.manual_seed(1)
    model = make_convnet(fb)
    randomise_bn(model)
    compiled = fb.compile(model)
    opt = fb.optim.SGD(model.parameters(), lr=0.1)
    x = fb.randn(2, 3, 8, 8)
    for step in range(4):
        model.eval()
        with fb.no_grad():
            close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
        model.train()  # a training step moves the weights and the running statistics
        opt.zero_grad()
        compiled(x).square().mean().backward()
        opt.step()
        assert step == 0 or len(compiled._compiled_call.graphs) == 2  # eval and train, no recapture
    model.eval()
    other = make_convnet(fb)
    randomise_bn(other, seed=5)
    model.load_state_dict(other.state_dict())  # copies into the same tensors: new versions
    with fb.no_grad():
        close(compiled(x), other.eval()(x), rtol=1e-5, atol=1e-5)
        model.conv1.weight.set_(fb.randn(8, 8, 3, 3))  # new memory, the same parameter object
        expected = make_convnet(fb)
        expected.load_state_dict(model.state_dict())
        close(compiled(x), expected.eval()(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [1, 2])
def test_conv1d_and_conv2d_fold(dim):
    conv = getattr(fb.nn, f"Conv{dim}d")(2, 4, 3, padding=1)
    bn = getattr(fb.nn, f"BatchNorm{dim}d")(4)
    model = fb.nn.Sequential(conv, bn)
    randomise_bn(model)
    model.eval()
    compiled = fb.compile(model)
    x = fb.randn(2, 2, *([5] * dim))
    with fb.no_grad():
        close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
        close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert epilogues(compiled) == [[(f"conv{dim}d", "native_batch_norm")]]


def test_float64_fold_is_exact_to_float64_rounding():
    model = fb.nn.Sequential(fb.nn.Conv2d(3, 4, 3), fb.nn.BatchNorm2d(4)).double()
    for m in model.modules():
        if isinstance(m, fb.nn.BatchNorm2d):
            m.running_mean.copy_(fb.randn(4, dtype=fb.float64))
            m.running_var.copy_(fb.rand(4, dtype=fb.float64) + 0.5)
    model.eval()
    compiled = fb.compile(model)
    x = fb.randn(2, 3, 6, 6, dtype=fb.float64)
    with fb.no_grad():
        close(compiled(x), model(x), rtol=1e-12, atol=1e-12)
        close(compiled(x), model(x), rtol=1e-12, atol=1e-12)
    assert epilogues(compiled) == [[("conv2d", "native_batch_norm")]]


def test_eval_under_grad_mode_is_not_folded_and_its_gradients_match_eager():
    fb.manual_seed(2)
    model = make_convnet(fb)
    randomise_bn(model)
    model.eval()
    compiled = fb.compile(model)
    x = fb.randn(2, 3, 8, 8)
    compiled(x)
    model.zero_grad()
    compiled(x).sum().backward()
    got = {k: p.grad.clone() for k, p in model.named_parameters()}
    model.zero_grad()
    model(x).sum().backward()
    for k, p in model.named_parameters():
        close(got[k], p.grad, rtol=1e-5, atol=1e-6)
    assert all("conv2d" not in ep for eps in epilogues(compiled) for ep in eps)  # batch norm + relu only


def test_a_convolution_read_elsewhere_or_used_statistics_are_not_folded():
    conv, bn = fb.nn.Conv2d(3, 4, 3), fb.nn.BatchNorm2d(4)
    bn.eval()
    randomise_bn(bn)

    def both(x):
        y = conv(x)
        return bn(y) + y

    def stats(x):
        out, mean, invstd = fb.native_batch_norm(conv(x), bn.weight, bn.bias, bn.running_mean, bn.running_var,
                                                 False, 0.1, 1e-5)  # fmt: skip
        return out, mean, invstd

    x = fb.randn(2, 3, 6, 6)
    with fb.no_grad():
        for fn in (both, stats):
            compiled = fb.compile(fn)
            compiled(x)
            got = compiled(x)
            expected = fn(x)
            for a, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple)
                            else (expected,), strict=True):  # fmt: skip
                close(a, e)
            assert not any(ep[:2] == ("conv2d", "native_batch_norm") for eps in epilogues(compiled) for ep in eps)


def test_a_fold_that_disagrees_warns_and_runs_the_eager_ops(monkeypatch):
    real = _epilogue.FoldedConv._refold

    def wrong(self, *tensors):
        real(self, *tensors)
        self.bias = self.bias + 1.0

    monkeypatch.setattr(_epilogue.FoldedConv, "_refold", wrong)
    model = fb.nn.Sequential(fb.nn.Conv2d(3, 4, 3), fb.nn.BatchNorm2d(4)).eval()
    compiled = fb.compile(model)
    x = fb.randn(2, 3, 6, 6)
    with fb.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(x)
        close(compiled(x), model(x))
    assert any(
        "a batch norm folded into its convolution disagrees with the eager ops" in str(w.message) for w in caught
    )
    assert epilogues(compiled) == [[]]


def test_fusion_off_turns_the_pass_off(monkeypatch):
    monkeypatch.setattr(fb.compiler.config, "fusion", False)
    model = fb.nn.Sequential(fb.nn.Conv2d(3, 4, 3), fb.nn.BatchNorm2d(4), fb.nn.ReLU()).eval()
    compiled = fb.compile(model)
    with fb.no_grad():
        compiled(fb.randn(1, 3, 5, 5))
    assert epilogues(compiled) == [[]]


# --------------------------------------------------------------------------- activations in place
def test_mlp_activations_in_place_under_no_grad_match_torch():
    fb.manual_seed(3)
    model = mlp(fb)
    reference = to_torch_module(model, mlp(torch))
    compiled = fb.compile(model)
    x = fb.randn(5, 12)
    with fb.no_grad():
        compiled(x)
        out = compiled(x)
    with torch.no_grad():
        close(out, reference(torch.from_numpy(x.numpy().copy())))
    assert epilogues(compiled) == [[("linear", "relu"), ("linear", "sigmoid"), ("linear", "tanh")]]


def test_under_grad_activations_stay_out_of_place_and_gradients_match_torch():
    # Autograd's in-place form would clone the output: the pass leaves a training graph as captured.
    fb.manual_seed(3)
    model = mlp(fb)
    reference = to_torch_module(model, mlp(torch))
    compiled = fb.compile(model)
    x = fb.randn(5, 12, requires_grad=True)
    compiled(x)
    model.zero_grad()
    out = compiled(x)
    out.square().sum().backward()
    tx = torch.from_numpy(x.detach().numpy().copy()).requires_grad_(True)
    expected = reference(tx)
    expected.square().sum().backward()
    close(out, expected)
    close(x.grad, tx.grad)
    for (name, p), (tname, q) in zip(model.named_parameters(), reference.named_parameters(), strict=True):
        assert name == tname
        close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
    assert epilogues(compiled) == [[]]


def test_an_activation_whose_input_is_read_again_or_returned_stays_apart():
    lin = fb.nn.Linear(4, 4)

    def twice(x):
        y = lin(x)
        return y.relu() + y

    def returned(x):
        y = lin(x)
        return y.relu(), y

    x = fb.randn(3, 4)
    with fb.no_grad():
        for fn in (twice, returned):
            compiled = fb.compile(fn)
            compiled(x)
            got, expected = compiled(x), fn(x)
            for a, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple)
                            else (expected,), strict=True):  # fmt: skip
                close(a, e)
            assert epilogues(compiled) == [[]]


def test_an_integer_linear_keeps_its_out_of_place_sigmoid():
    w = fb.tensor([[1, -2, 3], [0, 1, -1]])

    def f(x):
        return fb.nn.functional.linear(x, w).sigmoid()  # int64 in, float32 out: no in-place form

    x = fb.tensor([[1, 2, 3], [-1, 0, 2]])
    compiled = fb.compile(f)
    with fb.no_grad():
        compiled(x)
        out = compiled(x)
    expected = torch.nn.functional.linear(torch.tensor([[1, 2, 3], [-1, 0, 2]]), torch.tensor(w.tolist())).sigmoid()
    close(out, expected)
    assert epilogues(compiled) == [[]]


def test_a_batch_norm_that_is_not_folded_gets_its_relu_in_place():
    model = fb.nn.Sequential(fb.nn.Linear(6, 4), fb.nn.BatchNorm1d(4), fb.nn.ReLU(), fb.nn.Linear(4, 2))
    randomise_bn(model)
    model.eval()
    reference = to_torch_module(model, torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.BatchNorm1d(4),
                                                           torch.nn.ReLU(), torch.nn.Linear(4, 2))).eval()  # fmt: skip
    compiled = fb.compile(model)
    x = fb.randn(5, 6)
    with fb.no_grad():
        compiled(x)
        out = compiled(x)
    with torch.no_grad():
        close(out, reference(torch.from_numpy(x.numpy().copy())))
    assert epilogues(compiled) == [[("native_batch_norm", "relu")]]


@pytest.mark.parametrize("model_name", ["mlp", "convnet"])
def test_training_with_folded_evals_in_between_matches_eager_for_20_steps(model_name):
    # Each step trains (loss, every gradient, the running statistics against eager), then evaluates under
    # no_grad: the folded convolutions re-fold from the parameters and statistics the step just changed.
    fb.manual_seed(4)
    make = mlp if model_name == "mlp" else make_convnet
    eager, model = make(fb), make(fb)
    model.load_state_dict(eager.state_dict())
    compiled = fb.compile(model)
    opts = [fb.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (eager, model)]
    shape = (8, 12) if model_name == "mlp" else (4, 3, 8, 8)
    data = [fb.randn(*shape) for _ in range(4)]
    for step in range(20):
        x = data[step % 4]
        losses = []
        for fn, opt in zip((eager, compiled), opts, strict=True):
            opt.zero_grad()
            loss = fn(x).square().mean()
            loss.backward()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
        for (name, p), q in zip(eager.named_parameters(), model.parameters(), strict=True):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
        for opt in opts:
            opt.step()
        for (name, b), c in zip(eager.named_buffers(), model.buffers(), strict=True):
            np.testing.assert_allclose(c.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
        eager.eval(), model.eval()
        with fb.no_grad():
            close(compiled(data[(step + 1) % 4]), eager(data[(step + 1) % 4]), rtol=1e-4, atol=1e-5)
        eager.train(), model.train()
    assert len(compiled._compiled_call.graphs) == 2  # one training graph, one eval graph: no recapture
    train_eps, eval_eps = epilogues(compiled)
    # Training: the batch norms whose result only a relu reads run as one node (Note [Batch norm relu]).
    assert train_eps == ([] if model_name == "mlp" else [("native_batch_norm", "relu")] * 2)
    if model_name == "mlp":
        assert eval_eps == [("linear", "relu"), ("linear", "sigmoid"), ("linear", "tanh")]
    else:
        assert eval_eps == [
            ("conv2d", "native_batch_norm", "relu"), ("conv2d", "native_batch_norm"),
            ("conv2d", "native_batch_norm", "relu"),
        ]  # fmt: skip


# --------------------------------------------------------------------------- a relu moved after its max pooling
def lenet(M):
    return M.nn.Sequential(
        M.nn.Conv2d(1, 4, 3, padding=1), M.nn.ReLU(), M.nn.MaxPool2d(2),
        M.nn.Conv2d(4, 6, 3), M.nn.ReLU(), M.nn.MaxPool2d(2, stride=1),  # overlapping windows
        M.nn.Flatten(), M.nn.Linear(6 * 3 * 3, 10), M.nn.ReLU(), M.nn.Linear(10, 3),
    )  # fmt: skip


def _trainer(M, model, x, y):
    opt = M.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = M.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _lenet_pair(seed=0):
    fb.manual_seed(seed)
    eager, model = lenet(fb), lenet(fb)
    model.load_state_dict(eager.state_dict())
    return eager, model


def test_relu_moves_after_max_pool_and_twenty_training_steps_equal_eager_and_torch():
    # The moved relu computes the same values and gradients (Note [Epilogue pass]): every step's loss, every
    # gradient and parameter equal eager flambeau's exactly (the same kernels), and torch's within rounding.
    eager, model = _lenet_pair()
    tmodel = to_torch_module(eager, lenet(torch))
    x, y = fb.randn(8, 1, 12, 12), fb.randint(0, 3, (8,))
    steps = [_trainer(fb, eager, x, y), fb.compile(_trainer(fb, model, x, y))]
    tstep = _trainer(torch, tmodel, torch.from_numpy(x.numpy().copy()), torch.from_numpy(y.numpy().copy()))
    for _ in range(20):
        want, got, theirs = steps[0](), steps[1](), tstep()
        assert got.item() == want.item()
        np.testing.assert_allclose(got.item(), theirs.item(), rtol=1e-4)
        for (name, p), q in zip(eager.named_parameters(), model.parameters(), strict=True):
            np.testing.assert_array_equal(q.grad.numpy(), p.grad.numpy(), err_msg=name)
            np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy(), err_msg=name)
    for p, tp in zip(model.parameters(), tmodel.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-3, atol=1e-5)
    compiled = steps[1]
    assert len(compiled.graphs) == 1  # the first step made the momentum buffers; the other 19 replay one graph
    assert epilogues(compiled) == [[("max_pool2d_with_indices", "relu")] * 2]


def test_the_moved_relu_replays_on_the_pooled_tensor():
    _, model = _lenet_pair()
    compiled = fb.compile(model)
    x = fb.randn(2, 1, 12, 12)
    compiled(x)
    (entry,) = [e for es in compiled._compiled_call._cache.values() for e in es]
    nodes = entry.fusion.graph.nodes
    names = [n.name for n in nodes]
    assert names[:5] == ["conv2d", "max_pool2d_with_indices", "relu", "conv2d", "max_pool2d_with_indices"]
    conv, pool, relu = nodes[:3]
    assert pool.args[0].index == conv.first_value and relu.args[0].index == pool.first_value
    # the relu's result is a value of its own, read by the next convolution
    assert nodes[3].args[0].index == relu.first_value != pool.first_value


@pytest.mark.parametrize("grad", [False, True])
def test_negative_tied_and_signed_zero_windows_give_eager_values_and_gradients(grad):
    # Windows whose maximum is not positive (the indices of relu(x) and x differ there), ties of a positive
    # maximum, zeros of both signs: the values and the input's gradient equal eager's exactly (zeros compare
    # equal whatever their sign), torch's too.
    def f(x):
        return F.max_pool2d(F.relu(x), 2) * 3.0

    base = [[-1.0, -3.0, 2.0, 2.0], [-0.5, -2.0, 1.0, 2.0], [0.0, -0.0, -1.0, -0.0], [-0.0, 0.0, 5.0, -4.0]]
    values = np.array([[base, np.negative(base)]], dtype=np.float32)  # (1, 2, 4, 4)
    compiled = fb.compile(f)
    grads = []
    for fn in (compiled, compiled, f):
        x = fb.tensor(values, requires_grad=grad)
        with fb.set_grad_enabled(grad):
            out = fn(x)
        if grad:
            out.backward(fb.arange(8.0).reshape(1, 2, 2, 2) - 3.0)
            grads.append(x.grad.numpy())
        grads.append(out.detach().numpy())
    tx = torch.tensor(values, requires_grad=grad)
    tout = torch.nn.functional.max_pool2d(torch.relu(tx), 2) * 3.0
    if grad:
        tout.backward(torch.arange(8.0).reshape(1, 2, 2, 2) - 3.0)
    n = len(grads) // 3
    for k in range(n):
        np.testing.assert_array_equal(grads[n + k], grads[2 * n + k])
    np.testing.assert_array_equal(grads[2 * n - 1], tout.detach().numpy())
    if grad:
        np.testing.assert_array_equal(grads[n], tx.grad.numpy())
    assert epilogues(compiled) == [[("max_pool2d_with_indices", "relu")]]


def test_nan_in_a_later_call_gives_eager_values_and_gradients():
    def f(x):
        return F.max_pool2d(F.relu(x), 2).sum()

    compiled = fb.compile(f)
    x = fb.randn(1, 1, 4, 4, requires_grad=True)
    compiled(x)
    data = fb.randn(1, 1, 4, 4)
    data[0, 0, 0, 1] = float("nan")
    data[0, 0, 2:, 2:] = -1.0
    outs, grads = [], []
    for fn in (compiled, f):
        x = data.clone().requires_grad_(True)
        out = fn(x)
        out.backward()
        outs.append(out.item())
        grads.append(x.grad.numpy())
    assert np.isnan(outs[0]) and np.isnan(outs[1])
    np.testing.assert_array_equal(grads[0], grads[1])
    assert epilogues(compiled) == [[("max_pool2d_with_indices", "relu")]]


def test_a_relu_whose_indices_or_result_are_read_or_a_padded_pooling_stays_before_it():
    def indices(x):
        out, idx = F.max_pool2d(F.relu(x), 2, return_indices=True)
        return out, idx  # the indices of relu(x) differ from those of x in a window with no positive value

    def read_again(x):
        r = F.relu(x)
        return F.max_pool2d(r, 2) + r[..., ::2, ::2]

    def padded(x):
        return F.max_pool2d(F.relu(x), 3, stride=2, padding=1)

    x = fb.randn(2, 3, 6, 6)
    x[0, 0, :2, :2] = -1.0
    for fn in (indices, read_again, padded):
        compiled = fb.compile(fn)
        compiled(x)
        got, want = compiled(x), fn(x)
        for a, e in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,),
                        strict=True):  # fmt: skip
            np.testing.assert_array_equal(a.numpy(), e.numpy())
        assert epilogues(compiled) == [[]], fn.__name__


# --------------------------------------------------------------------------- eval linear on a packed weight
def wide_mlp(M):
    return M.nn.Sequential(
        M.nn.Linear(200, 160), M.nn.ReLU(), M.nn.Linear(160, 128), M.nn.ReLU(), M.nn.Linear(128, 10),
    )  # fmt: skip


def own_gemm_packs():
    return _C._pack_linear_weight(fb.ones(32, 32)).numel() > 0


def same_bits(a, b):
    np.testing.assert_array_equal(a.numpy().view(np.int32), b.numpy().view(np.int32))


def test_packed_weight_gives_linears_bits():
    fb.manual_seed(0)
    for n, out_f, in_f in ((128, 512, 784), (128, 512, 512), (3, 40, 30), (200, 64, 100), (70, 130, 17)):
        x, w, b = fb.randn(n, in_f), fb.randn(out_f, in_f), fb.randn(out_f)
        packed = _C._pack_linear_weight(w)
        for bias in (b, None):
            same_bits(_C._linear_packed(x, w, packed, bias), F.linear(x, w, bias))
        # a packed copy that does not fit (empty, another weight's) is not read: linear runs
        same_bits(_C._linear_packed(x, w, fb.empty(0), b), F.linear(x, w, b))
    x, w = fb.randn(2, 3, 40), fb.randn(48, 40)  # leading dims folded into the rows, as linear does
    same_bits(_C._linear_packed(x, w, _C._pack_linear_weight(w), None), F.linear(x, w))
    assert _C._pack_linear_weight(fb.ones(8, 32)).numel() == 0  # below 16 rows: not packed
    assert _C._pack_linear_weight(fb.ones(32, 32, dtype=fb.float64)).numel() == 0


def test_eval_mlp_runs_on_packed_weights_refreshed_after_training_and_matches_torch():
    fb.manual_seed(5)
    model = wide_mlp(fb)
    reference = to_torch_module(model, wide_mlp(torch))
    compiled = fb.compile(model)
    opt = fb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = fb.randn(128, 200)
    with fb.no_grad():
        compiled(x)
        out = compiled(x)
        expected = model(x)
    same_bits(out, expected)
    with torch.no_grad():
        close(out, reference(torch.from_numpy(x.numpy().copy())))
    if own_gemm_packs():
        assert epilogues(compiled) == [[("linear_packed", "relu"), ("linear_packed", "relu")]]
    else:
        assert epilogues(compiled) == [[("linear", "relu"), ("linear", "relu")]]
    for _ in range(2):  # the optimizer changes the weights in place: the replay packs them again
        F.cross_entropy(model(x), fb.randint(0, 10, (128,))).backward()
        opt.step()
        opt.zero_grad()
        with fb.no_grad():
            same_bits(compiled(x), model(x))
    model.load_state_dict({k: v * 0.5 for k, v in model.state_dict().items()})  # new memory, same guards
    with fb.no_grad():
        same_bits(compiled(x), model(x))
        before = fb.backends.cpu.sgemm
        fb.backends.cpu.sgemm = "openblas"  # the own GEMM off after the capture: linear runs instead
        try:
            same_bits(compiled(x), model(x))
        finally:
            fb.backends.cpu.sgemm = before
    assert len(compiled._compiled_call.graphs) == 1


@pytest.mark.parametrize("affine", [True, False])
def test_training_step_batch_norm_relu_is_one_node_and_matches_eager(affine):
    # Note [Batch norm relu]: a whole training step (forward, backward, SGD) whose batch norms feed relus; the
    # node sums as core does, so every loss, gradient, parameter and running statistic stays eager's over the
    # steps (to the last bit but where the residual add + relu's fused kernel rounds otherwise).
    # Without weight and bias (affine=False) the pair is not rewritten and runs as eager's two ops.
    fb.manual_seed(5)
    eager, model = make_convnet(fb, affine=affine), make_convnet(fb, affine=affine)
    model.load_state_dict(eager.state_dict())
    opts = [fb.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (eager, model)]
    x = fb.randn(6, 3, 8, 8)

    class Step:  # a training step as the benchmark's (a bound method reading the model and optimizer)
        def __init__(self, m, opt):
            self.m, self.opt, self.x = m, opt, x

        def step(self):
            self.opt.zero_grad()
            loss = self.m(self.x).square().mean()
            loss.backward()
            self.opt.step()
            return loss

    step, compiled = Step(eager, opts[0]).step, fb.compile(Step(model, opts[1]).step)
    for _ in range(6):
        losses = step(), compiled()
        mine, theirs = (
            [loss, *(p.grad for p in m.parameters()), *m.parameters(), *m.buffers()]
            for loss, m in zip(losses[::-1], (model, eager), strict=True)
        )
        for a, b in zip(mine, theirs, strict=True):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert epilogues(compiled) == [[("native_batch_norm", "relu")] * 2 if affine else []]


def test_batch_norm_relu_kernel_reads_its_rows_as_vectors():
    # Note [Batch norm relu]: the node's row sums once took the element through a lambda capturing the row pointer
    # by reference and passed by reference: GCC kept the pointer in memory the reduction's lanes (also on the
    # stack) might alias, and vectorised the sums with gathers, one per element (3-6x eager's batch norm on an
    # AVX-512 CPU, where a gather is microcoded: fb.compile's MobileNet step 745 samples/s against eager's 1,022).
    # The loaded kernel's machine code must read its rows with plain vector loads.
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    from flambeau.compiler import _bn_relu

    _, name = _bn_relu._kernel_named()
    with open("/proc/self/maps") as maps:  # (an earlier test may have loaded another build of the same text)
        paths = {line.split()[-1] for line in maps if name in line}
    assert paths
    for path in paths:
        code = subprocess.run([objdump, "-d", path], capture_output=True, text=True, check=True).stdout
        assert "gather" not in code, path
        assert "vfmadd" in code or "mulps" in code, path  # the sums are vector arithmetic


def test_batch_norm_relu_agreement_is_recorded_and_reused_by_a_later_capture(monkeypatch):
    # Note [Batch norm relu agreement records]: the first capture checks each rewritten pair against eager's ops
    # and records the verdict; a later capture of the same shapes (a new process, here a reset compiler) takes
    # the record and skips the check, and still matches eager. With reuse_checks off every capture checks; a
    # check that fails records nothing and leaves the pair to eager's ops.
    from flambeau.compiler import _bn_relu

    checks = []
    real = _bn_relu._agrees

    def counted(*args):
        checks.append(args[1].shape)
        return real(*args)

    monkeypatch.setattr(_bn_relu, "_agrees", counted)
    x = fb.randn(5, 3, 11, 11)  # a size no other test of the module captures: no record yet

    def capture_and_compare(x=x):
        fb.manual_seed(7)
        eager, model = make_convnet(fb), make_convnet(fb)
        model.load_state_dict(eager.state_dict())

        class Step:  # a training step as the benchmark's
            def __init__(self, m):
                self.m, self.opt = m, fb.optim.SGD(m.parameters(), lr=0.05)

            def step(self):
                self.opt.zero_grad()
                loss = self.m(x).square().mean()
                loss.backward()
                self.opt.step()
                return loss

        step, compiled = Step(eager).step, fb.compile(Step(model).step)
        for _ in range(3):
            compiled()
            step()
        for a, b in zip([*model.parameters(), *model.buffers()], [*eager.parameters(), *eager.buffers()], strict=True):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
        for a, b in zip(model.parameters(), eager.parameters(), strict=True):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
        return epilogues(compiled)

    pairs = [[("native_batch_norm", "relu")] * 2]
    assert capture_and_compare() == pairs
    first = len(checks)
    assert first == 2  # one check per rewritten pair
    fb.compiler.reset()
    assert capture_and_compare() == pairs
    assert len(checks) == first  # both verdicts came from the records

    monkeypatch.setattr(fb.compiler.config, "reuse_checks", False)
    fb.compiler.reset()
    assert capture_and_compare() == pairs
    assert len(checks) == first + 2

    monkeypatch.setattr(fb.compiler.config, "reuse_checks", True)
    monkeypatch.setattr(_bn_relu, "_agrees", lambda *args: False)
    other = fb.randn(5, 3, 13, 13)  # no record for these images' size: the failing check decides
    fb.compiler.reset()
    assert capture_and_compare(other) == [[]]
    monkeypatch.setattr(_bn_relu, "_agrees", counted)
    fb.compiler.reset()
    assert capture_and_compare(other) == pairs  # nothing was recorded for the failed check: this one checks
    assert len(checks) == first + 4
