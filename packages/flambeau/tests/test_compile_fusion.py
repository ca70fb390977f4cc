"""fb.compile's elementwise fusion: generated C++ kernels against eager flambeau and PyTorch (the oracles).

The kernels are built once into a module-wide folder; the functions below share kernels where they can
(the same ops on the same kinds of inputs give the same kernel text), since each build takes seconds.
"""

from __future__ import annotations

import os
import warnings

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau.compiler import _cpp_kernel, _fusion


@pytest.fixture(scope="module", autouse=True)
def _kernel_dir(tmp_path_factory):
    before = os.environ.get("FLAMBEAU_EXTENSIONS_DIR")
    os.environ["FLAMBEAU_EXTENSIONS_DIR"] = str(tmp_path_factory.mktemp("fused_kernels"))
    yield
    if before is None:
        del os.environ["FLAMBEAU_EXTENSIONS_DIR"]
    else:
        os.environ["FLAMBEAU_EXTENSIONS_DIR"] = before


@pytest.fixture(autouse=True)
def _fresh():
    fb.compiler.reset()
    yield
    fb.compiler.reset()


def to_torch(t):
    return torch.from_numpy(t.detach().numpy().copy())


def close(actual, expected, dtype=fb.float32):
    rtol, atol = (2e-5, 2e-6) if dtype == fb.float32 else (1e-12, 1e-12)
    a = actual.detach().numpy() if isinstance(actual, fb.Tensor) else actual.detach().numpy()
    e = expected.detach().numpy()
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def groups(compiled):
    cf = compiled._compiled_call if isinstance(compiled, fb.compiler.OptimizedModule) else compiled
    return [[g.ops for g in gs] for gs in cf.fused_groups]


# --------------------------------------------------------------------------- every op in one kernel
def every_op(M, x, y, c, b, s):
    """Each fusable op once, on x > 0 (log, sqrt), y, a bool c, a bias b and a 0-d tensor s."""
    F = M.nn.functional
    t = (x + y) * 0.5 - b
    t = t.sigmoid() + y.tanh()
    t = t * s
    u = F.gelu(t) + F.gelu(t, approximate="tanh")
    u = F.silu(u) - u.relu()
    v = x.log() + x.sqrt() - x.rsqrt() + x.exp() / (x + 1)
    w = M.maximum(u, v) - M.minimum(u, -v)
    w = M.where(c, w, y.abs()) + M.where(c, 0.25, w)
    w = w.clamp(-2.0, 3.0) + w.clamp(min=0.1) - w.clamp(max=0.2) + w.clamp_min(0.0) - w.clamp_max(1.0)
    w = w**2 - w.pow(3) + (w.abs() + 1) ** 0.5 + (w.abs() + 1) ** -1.5 + w.square()
    w = w.add(y, alpha=2).sub(x, alpha=0.5) - 3 / (x + 1)
    return w, u


def every_op_inputs(M, dtype, batch=6, width=5):
    g = np.random.default_rng(0)
    x = g.uniform(0.5, 1.5, (batch, width))
    y = g.normal(size=(batch, width))
    c = g.uniform(size=(batch, width)) > 0.5
    b = g.normal(size=(width,))
    return [
        M.tensor(x, dtype=dtype),
        M.tensor(y, dtype=dtype),
        M.tensor(c),
        M.tensor(b, dtype=dtype),
        M.tensor(0.7, dtype=dtype),
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_fusable_op_in_one_kernel_matches_eager_and_torch(dtype):
    fdt, tdt = getattr(fb, dtype), getattr(torch, dtype)
    args = every_op_inputs(fb, fdt)
    targs = [to_torch(a) for a in args]
    compiled = fb.compile(lambda *a: every_op(fb, *a))
    with fb.no_grad():
        compiled(*args)  # captured, fused
        w, u = compiled(*args)  # the fused kernel
        ew, eu = every_op(fb, *args)
    tw, tu = every_op(torch, *targs)
    assert w.dtype == fdt and tw.dtype == tdt
    close(w, ew, fdt)
    close(u, eu, fdt)
    close(w, tw, fdt)
    close(u, tu, fdt)
    (fused,) = groups(compiled)
    assert len(fused) == 1 and len(fused[0]) == len(compiled.graphs[0].nodes)


def transcendental(M, x):
    F = M.nn.functional
    return x.exp() * 2, x.sigmoid() * 2, x.tanh() * 2, F.gelu(x) * 2, F.silu(x) * 2, F.gelu(x, approximate="tanh") * 2


def test_float32_polynomials_match_torch_over_a_wide_range():
    # exp, tanh and erfc are the kernels' own vectorisable polynomials in float32: checked from the tails
    # (exp near float32's largest value, gelu's tiny negative tail) to tiny arguments (tanh(x) ~ x).
    tiny = np.geomspace(1e-30, 1e-2, 500)
    values = np.concatenate([np.linspace(-87.0, 88.0, 20011), tiny, -tiny]).astype(np.float32)
    x = fb.tensor(values)
    compiled = fb.compile(lambda x: transcendental(fb, x))
    with fb.no_grad():
        compiled(x)
        outs = compiled(x)
        eager = transcendental(fb, x)
    expected = transcendental(torch, torch.from_numpy(values))
    for out, e, t in zip(outs, eager, expected, strict=True):
        np.testing.assert_allclose(out.numpy(), e.numpy(), rtol=1e-5, atol=1e-30)
        # torch's float32 gelu flushes to -0 below x = -5 (it computes 1 + erf(x / sqrt(2))), where the values
        # are ~1e-7, and both gelus' 1 + tanh (or erf) near -1 cancel to a few ulp of 1 times x
        np.testing.assert_allclose(out.numpy(), t.numpy(), rtol=3e-6, atol=3e-6)
    assert len(groups(compiled)[0][0]) == 12


# --------------------------------------------------------------------------- bias + gelu, batch sizes
def bias_gelu(x, w, b, s, r):
    return fb.nn.functional.gelu(x @ w + b) * s + r


def bias_gelu_inputs(batch, seed=0):
    fb.manual_seed(seed)
    return fb.randn(batch, 8), fb.randn(8, 16), fb.randn(16), fb.randn(batch, 16), fb.randn(batch, 16)


def test_bias_gelu_is_one_kernel_and_another_batch_size_does_not_rebuild():
    compiled = fb.compile(bias_gelu)
    args = bias_gelu_inputs(4)
    with fb.no_grad():
        compiled(*args)
        out = compiled(*args)
    t = [to_torch(a) for a in args]
    close(out, torch.nn.functional.gelu(t[0] @ t[1] + t[2]) * t[3] + t[4])
    close(out, bias_gelu(*args))
    assert groups(compiled) == [[["add", "gelu", "mul", "add"]]]

    builds = _cpp_kernel.builds
    args = bias_gelu_inputs(33, seed=1)  # another batch size: a new capture, the same kernel
    with fb.no_grad():
        compiled(*args)
        out = compiled(*args)
    assert _cpp_kernel.builds == builds
    assert groups(compiled) == [[["add", "gelu", "mul", "add"]]] * 2
    close(out, bias_gelu(*args))


def test_large_input_runs_threaded_and_matches():
    # 2^20 elements: above the grain, so parallel_for splits the loop across threads.
    compiled = fb.compile(bias_gelu)
    fb.manual_seed(2)
    args = fb.randn(65536, 8), fb.randn(8, 16), fb.randn(16), fb.randn(65536, 16), fb.randn(65536, 16)
    with fb.no_grad():
        compiled(*args)
        out = compiled(*args)
    close(out, bias_gelu(*args))
    assert groups(compiled) == [[["add", "gelu", "mul", "add"]]]


def test_explain_lists_the_fused_kernels_and_config_turns_fusion_off(monkeypatch):
    args = bias_gelu_inputs(4)
    out = fb.compiler.explain(bias_gelu, *args)
    assert out.ops_per_graph == [["matmul", "add", "gelu", "mul", "add"]]
    assert out.fused_per_graph == [[["add", "gelu", "mul", "add"]]]
    assert "Graph 1: add, gelu, mul, add" in str(out)

    monkeypatch.setattr(fb.compiler.config, "fusion", False)
    out = fb.compiler.explain(bias_gelu, *args)
    assert out.fused_per_graph == [[]]
    compiled = fb.compile(bias_gelu)
    compiled(*args)
    close(compiled(*args), bias_gelu(*args))


# --------------------------------------------------------------------------- models
class ResidualBlock(fb.nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.fc1 = fb.nn.Linear(width, hidden)
        self.fc2 = fb.nn.Linear(hidden, width)
        self.scale = fb.nn.Parameter(fb.full((width,), 0.5))

    def forward(self, x):
        return fb.nn.functional.relu(x + self.fc2(fb.nn.functional.gelu(self.fc1(x))) * self.scale)


def torch_block(block, x):
    p = {k: to_torch(v) for k, v in block.state_dict().items()}
    F = torch.nn.functional
    h = F.gelu(F.linear(x, p["fc1.weight"], p["fc1.bias"]))
    return F.relu(x + F.linear(h, p["fc2.weight"], p["fc2.bias"]) * p["scale"])


def test_residual_mlp_forward_in_eval_matches_torch():
    fb.manual_seed(3)
    model = fb.nn.Sequential(ResidualBlock(12, 24), ResidualBlock(12, 24)).eval()
    compiled = fb.compile(model)
    x = fb.randn(5, 12)
    with fb.no_grad():
        compiled(x)
        out = compiled(x)
        expected = model(x)
    close(out, expected)
    close(out, torch_block(model[1], torch_block(model[0], to_torch(x))))
    assert groups(compiled) == [[["mul", "add", "relu"], ["mul", "add", "relu"]]]


def lstm_gates(M, i, f, g, o, c):
    c1 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h1 = o.sigmoid() * c1.tanh()
    return h1, c1


def test_lstm_cell_gates_are_one_kernel_with_two_outputs():
    fb.manual_seed(4)
    args = [fb.randn(3, 7) for _ in range(5)]
    compiled = fb.compile(lambda *a: lstm_gates(fb, *a))
    with fb.no_grad():
        compiled(*args)
        h, c = compiled(*args)
    th, tc = lstm_gates(torch, *[to_torch(a) for a in args])
    close(h, th)
    close(c, tc)
    assert groups(compiled) == [[["sigmoid", "mul", "sigmoid", "tanh", "mul", "add", "sigmoid", "tanh", "mul"]]]
    fused = compiled.fused_groups[0][0]
    assert len(fused.inputs) == 5 and len(fused.out_values) == 2

    # Gates cut from one tensor are strided views: not fused, still right.
    def from_gates(gates, c):
        return lstm_gates(fb, *gates.chunk(4, 1), c)

    gates, c0 = fb.randn(3, 28), fb.randn(3, 7)
    compiled = fb.compile(from_gates)
    with fb.no_grad():
        compiled(gates, c0)
        h, c = compiled(gates, c0)
    th, tc = lstm_gates(torch, *to_torch(gates).chunk(4, 1), to_torch(c0))
    close(h, th)
    close(c, tc)


def masked(M, x, y):
    m = x > 0
    return M.where(m, x, x * 0.01) + (x < y) * y, m, (x - y) != 0.5


def test_comparisons_fuse_as_conditions_factors_and_bool_outputs():
    fb.manual_seed(7)
    x, y = fb.randn(6, 5), fb.randn(6, 5)
    compiled = fb.compile(lambda x, y: masked(fb, x, y))
    with fb.no_grad():
        compiled(x, y)
        out, m, ne = compiled(x, y)
    t_out, t_m, t_ne = masked(torch, to_torch(x), to_torch(y))
    close(out, t_out)
    assert m.dtype == fb.bool and ne.dtype == fb.bool
    np.testing.assert_array_equal(m.numpy(), t_m.numpy())
    np.testing.assert_array_equal(ne.numpy(), t_ne.numpy())
    assert groups(compiled) == [[["gt", "mul", "where", "lt", "mul", "add", "sub", "ne"]]]


def test_an_in_place_op_between_runs_keeps_its_place():
    def f(x, y):
        a = (x * 3).exp()
        x.mul_(2)  # the second run reads the doubled x, the first the original
        return (a + x).relu() * y

    fb.manual_seed(8)
    base, y = fb.randn(4, 5), fb.randn(4, 5)
    compiled = fb.compile(f)
    with fb.no_grad():
        compiled(base.clone(), y)
        x = base.clone()
        out = compiled(x, y)
    tx = to_torch(base)
    expected = f(tx, to_torch(y))
    close(out, expected)
    close(x, tx)
    assert groups(compiled) == [[["mul", "exp"], ["add", "relu", "mul"]]]


def test_a_recorded_write_between_runs_keeps_its_place():
    def f(x, y):
        a = (x * 3).exp()
        a[0] = -1.0  # x[i] = v is an op of the graph: the second run reads the written a
        return (a + y).relu() * y

    fb.manual_seed(9)
    x, y = fb.randn(4, 5), fb.randn(4, 5)
    compiled = fb.compile(f)
    with fb.no_grad():
        compiled(x, y)
        out = compiled(x, y)
    close(out, f(to_torch(x), to_torch(y)))
    assert groups(compiled) == [[["mul", "exp"], ["add", "relu", "mul"]]]


def masked_scores(M, x, keep):
    """An attention-style mask: -inf where masked (exp gives 0 there), and a log that is NaN below zero."""
    s = M.where(keep, x * 0.5, float("-inf"))
    return s, s.exp() - 1, (x + 0.5).log() * 2


def test_results_with_inf_and_nan_are_fused():
    fb.manual_seed(10)
    x, keep = fb.randn(6, 5), fb.randn(6, 5) > 0
    compiled = fb.compile(lambda x, keep: masked_scores(fb, x, keep))
    with fb.no_grad():
        compiled(x, keep)
        scores, out, logs = compiled(x, keep)
    t_scores, t_out, t_logs = masked_scores(torch, to_torch(x), to_torch(keep))
    assert bool(scores.isinf().any()) and bool(logs.isnan().any())
    np.testing.assert_array_equal(scores.numpy(), t_scores.numpy())
    close(out, t_out)
    np.testing.assert_array_equal(np.isnan(logs.numpy()), np.isnan(t_logs.numpy()))
    np.testing.assert_allclose(logs.numpy(), t_logs.numpy(), rtol=2e-5, atol=2e-6)
    assert compiled.break_reasons == []
    assert groups(compiled) == [[["mul", "where", "exp", "sub", "add", "log", "mul"]]]


def layer_norm_and_softmax(x, w, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    y = (x - mu) * (var + 1e-5).rsqrt() * w + b
    e = (y - y.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def test_row_values_of_keepdim_reductions_fuse():
    fb.manual_seed(9)
    x, w, b = fb.randn(3, 4, 10), fb.randn(10), fb.randn(10)
    compiled = fb.compile(layer_norm_and_softmax)
    with fb.no_grad():
        compiled(x, w, b)
        out = compiled(x, w, b)
    close(out, layer_norm_and_softmax(*[to_torch(t) for t in (x, w, b)]))
    F = torch.nn.functional
    close(out, F.softmax(F.layer_norm(to_torch(x), (10,), to_torch(w), to_torch(b)), -1))
    # x - mu's second use sits alone between a reduction and the (3, 4, 1)-shaped run: not fused
    assert groups(compiled) == [[["sub", "pow"], ["add", "rsqrt"], ["mul", "mul", "add"], ["sub", "exp"]]]


def test_unsupported_broadcast_stays_eager():
    def f(x, mid):
        return ((x + mid).relu() * 2).exp()

    x, mid = fb.randn(4, 3, 5), fb.randn(3, 1)
    compiled = fb.compile(f)
    compiled(x, mid)
    out = compiled(x, mid)
    close(out, ((to_torch(x) + to_torch(mid)).relu() * 2).exp())
    assert groups(compiled) == [[["relu", "mul", "exp"]]]  # the (3, 1) middle dimension's add is not fused


# --------------------------------------------------------------------------- gradients
def test_inputs_requiring_grad_are_not_fused_and_gradients_match_torch():
    fb.manual_seed(5)
    x = fb.randn(4, 6, requires_grad=True)
    y = fb.randn(4, 6)

    def f(x, y):
        return (x * 2).sigmoid() * y.exp().tanh() + (y * 3).relu()

    compiled = fb.compile(f)
    compiled(x, y)
    out = compiled(x, y)
    out.sum().backward()
    tx = to_torch(x).requires_grad_(True)
    ty = to_torch(y)
    expected = f(tx, ty)
    expected.sum().backward()
    close(out, expected)
    close(x.grad, tx.grad)
    # Only the ops on y alone (no grad) are fused: exp and tanh, then mul and relu.
    assert groups(compiled) == [[["exp", "tanh"], ["mul", "relu"]]]


def test_a_parameter_that_starts_requiring_grad_after_capture_gets_its_gradient():
    fb.manual_seed(6)
    b = fb.nn.Parameter(fb.randn(16))
    b.requires_grad_(False)
    w = fb.randn(8, 16)

    def f(x, s, r):
        return fb.nn.functional.gelu(x @ w + b) * s + r

    x, s, r = fb.randn(4, 8), fb.randn(4, 16), fb.randn(4, 16)
    compiled = fb.compile(f)
    compiled(x, s, r)
    assert groups(compiled) == [[["add", "gelu", "mul", "add"]]]
    b.requires_grad_(True)  # the guards do not see this: the fused group must run its eager ops
    out = compiled(x, s, r)
    out.sum().backward()
    tb = to_torch(b).requires_grad_(True)
    expected = torch.nn.functional.gelu(to_torch(x) @ to_torch(w) + tb) * to_torch(s) + to_torch(r)
    expected.sum().backward()
    close(out, expected)
    close(b.grad, tb.grad)


# --------------------------------------------------------------------------- no compiler, failed build
def _forget_kernels(monkeypatch):
    monkeypatch.setattr(_cpp_kernel, "_loaded", {})
    monkeypatch.setattr(_cpp_kernel, "_failed", {})
    monkeypatch.setattr(_fusion, "_warned", False)


def test_missing_compiler_warns_once_and_runs_eager(monkeypatch):
    _forget_kernels(monkeypatch)
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    args = bias_gelu_inputs(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = fb.compile(bias_gelu)
        compiled(*args)
        out = compiled(*args)
        other = fb.compile(lambda *a: lstm_gates(fb, *a))
        lstm_args = [fb.randn(3, 7) for _ in range(5)]
        other(*lstm_args)
        h, c = other(*lstm_args)
    messages = [str(w.message) for w in caught if "[compile]" in str(w.message)]
    assert len(messages) == 1
    assert "a fused kernel could not be built" in messages[0] and "cannot run the C++ compiler" in messages[0]
    close(out, bias_gelu(*args))
    th, tc = lstm_gates(torch, *[to_torch(a) for a in lstm_args])
    close(h, th)
    close(c, tc)
    assert groups(compiled) == [[]] and groups(other) == [[]]


def test_failed_build_runs_eager(monkeypatch):
    _forget_kernels(monkeypatch)
    monkeypatch.setattr(_cpp_kernel, "CFLAGS", [*_cpp_kernel.CFLAGS, "-fno-such-option-for-a-test"])
    args = bias_gelu_inputs(4)
    compiled = fb.compile(bias_gelu)
    with pytest.warns(UserWarning, match=r"\[compile\] a fused kernel could not be built.*failed"):
        compiled(*args)
    close(compiled(*args), bias_gelu(*args))
    assert groups(compiled) == [[]]
