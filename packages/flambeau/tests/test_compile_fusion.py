"""fb.compile's elementwise fusion: generated C++ kernels against eager flambeau and PyTorch (the oracles).

The kernels are built once into a module-wide folder; the functions below share kernels where they can
(the same ops on the same kinds of inputs give the same kernel text), since each build takes seconds.
"""

from __future__ import annotations

import warnings

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau.compiler import _cpp_kernel, _fusion, _fusion_grad

# the generated kernels build into a fresh folder of this module's (conftest's ext_root)
pytestmark = pytest.mark.usefixtures("ext_root")


@pytest.fixture(autouse=True)
def _fresh():
    fb.compiler.reset()
    yield
    fb.compiler.reset()


def to_torch(t):
    return torch.from_numpy(t.detach().numpy().copy())


def close(actual, expected, dtype=fb.float32, atol=None):
    rtol, default_atol = (2e-5, 2e-6) if dtype == fb.float32 else (1e-12, 1e-12)
    atol = default_atol if atol is None else atol
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
    # NaN and the infinities as eager and torch give them: the kernels are built without trapping math, which lets GCC
    # vectorise the polynomials' NaN and range selects on AVX2 (as selects, not branches).
    tiny = np.geomspace(1e-30, 1e-2, 500)
    special = [np.nan, np.inf, -np.inf, 89.5, -104.5, -1e30, 1e30]
    values = np.concatenate([np.linspace(-87.0, 88.0, 20011), tiny, -tiny, special]).astype(np.float32)
    x = fb.tensor(values)
    compiled = fb.compile(lambda x: transcendental(fb, x))
    with fb.no_grad():
        compiled(x)
        outs = compiled(x)
        eager = transcendental(fb, x)
    # torch's vector gelu (erf form, AVX-512) makes NaN of +inf where its one-element (scalar) path gives +inf,
    # as flambeau does: the special values go to torch one at a time.
    bulk = transcendental(torch, torch.from_numpy(values[: -len(special)]))
    one_by_one = [transcendental(torch, torch.tensor([v], dtype=torch.float32)) for v in values[-len(special) :]]
    expected = [torch.cat([b, *(o[i] for o in one_by_one)]) for i, b in enumerate(bulk)]
    for out, e, t in zip(outs, eager, expected, strict=True):
        np.testing.assert_allclose(out.numpy(), e.numpy(), rtol=1e-5, atol=1e-30)  # NaN where eager has NaN
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
def weights_for(outs, seed=11):
    """A fixed, varied gradient per output (ones would hide a wrong formula's factor)."""
    g = np.random.default_rng(seed)
    return [g.uniform(-1.0, 1.0, tuple(o.shape)) for o in outs]


def run_grad(M, f, args, needs, weights=None):
    """f's outputs and the gradients of (outputs * weights).sum() for the arguments ``needs`` marks."""
    if M is torch:
        xs = [to_torch(a).requires_grad_(n) for a, n in zip(args, needs, strict=True)]
    else:
        xs = [a.detach().requires_grad_(n) for a, n in zip(args, needs, strict=True)]
    outs = f(*xs)
    outs = (outs,) if isinstance(outs, (fb.Tensor, torch.Tensor)) else tuple(outs)
    weights = weights_for(outs) if weights is None else weights
    loss = sum((o * M.tensor(w, dtype=o.dtype)).sum() for o, w in zip(outs, weights, strict=True) if o.requires_grad)
    loss.backward()
    return outs, [x.grad if n else None for x, n in zip(xs, needs, strict=True)]


def assert_grads(f, args, needs, dtype=fb.float32, torch_f=None, grad_atol=None):
    """The compiled f's replay (fused) against eager flambeau and PyTorch: outputs and gradients; returns it.
    ``grad_atol``: the gradients' absolute tolerance where a sum of many terms of mixed sign may round
    otherwise in another order (the default: ``close``'s)."""
    compiled = fb.compile(f)
    run_grad(fb, compiled, args, needs)  # captured and fused
    outs, grads = run_grad(fb, compiled, args, needs)  # the fused kernels and their backward
    eouts, egrads = run_grad(fb, f, args, needs)
    touts, tgrads = run_grad(torch, torch_f or f, args, needs)
    for o, e, t in zip(outs, eouts, touts, strict=True):
        assert o.requires_grad == e.requires_grad
        if o.dtype == fb.bool:
            assert np.array_equal(o.numpy(), e.numpy()) and np.array_equal(o.numpy(), t.numpy())
            continue
        close(o, e, dtype)
        close(o, t, dtype)
    for g, e, t in zip(grads, egrads, tgrads, strict=True):
        assert (g is None) == (e is None) == (t is None)
        if g is not None:
            close(g, e, dtype, grad_atol)
            close(g, t, dtype, grad_atol)
    return compiled, outs


def fused_nodes(out):
    """The names of the autograd nodes reachable from ``out``."""
    seen, stack, names = set(), [out.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        stack.extend(n for n, _ in node.next_functions)
    return names


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_fusable_op_under_grad_is_one_kernel_and_its_backward_matches_eager_and_torch(dtype):
    fdt = getattr(fb, dtype)
    args = every_op_inputs(fb, fdt)
    compiled, (w, u) = assert_grads(
        lambda *a: every_op(fb, *a), args, [True, True, False, True, True], fdt, lambda *a: every_op(torch, *a)
    )
    (fused,) = groups(compiled)
    assert len(fused) == 1 and len(fused[0]) == len(compiled.graphs[0].nodes)
    assert w.grad_fn.name() == "FusedElementwiseBackward" and u.grad_fn is w.grad_fn


def test_every_fused_backward_passes_gradcheck_and_gradgradcheck_in_float64():
    x, y, c, b, s = every_op_inputs(fb, fb.float64, batch=3, width=4)
    inputs = [t.requires_grad_(True) if t.dtype == fb.float64 else t for t in (x, y, c, b, s)]
    compiled = fb.compile(lambda *a: every_op(fb, *a))
    compiled(*inputs)
    assert len(groups(compiled)[0]) == 1
    assert fb.autograd.gradcheck(compiled, inputs)
    # create_graph=True: the node recomputes the eager ops and differentiates them (Note [Fused backward])
    assert fb.autograd.gradgradcheck(compiled, inputs)


def ties(M, x, y):
    """Every op with a tie rule, at its ties: maximum/minimum of equal values, clamp at its bounds, relu and
    abs at 0 (the gradients are PyTorch's: halves, passed at a bound, 0)."""
    t = M.maximum(x, y) * 2 + M.minimum(x, y) * 3 + x.clamp(-1.0, 1.0) * 5 + x.relu() * 7 + x.abs() * 11
    return t + y.clamp_min(0.5) * 13 + y.clamp_max(0.5) * 17 + M.where(x > y, x, y) * 19


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tie_rules_of_the_fused_backward_are_torchs(dtype):
    fdt = getattr(fb, dtype)
    x = fb.tensor([[-1.0, 0.0, 1.0, 0.5, 2.0, -2.0], [0.25, -0.25, 1.0, -1.0, 0.0, 3.0]], dtype=fdt)
    y = fb.tensor([[-1.0, 0.0, 0.5, 0.5, 3.0, -3.0], [0.25, 0.5, 1.0, 0.5, -0.5, 0.5]], dtype=fdt)
    compiled, _ = assert_grads(lambda x, y: ties(fb, x, y), [x, y], [True, True], fdt, lambda x, y: ties(torch, x, y))
    assert len(groups(compiled)[0]) == 1


def test_maximum_minimum_of_nan_pass_the_gradient_to_both_as_torch():
    nan = float("nan")
    x = fb.tensor([[nan, 1.0, 2.0, 3.0, nan, -1.0]])
    y = fb.tensor([[1.0, nan, 2.0, 0.0, nan, 4.0]])
    compiled, _ = assert_grads(
        lambda x, y: fb.maximum(x, y) * 2 + fb.minimum(x, y) * 3,
        [x, y],
        [True, True],
        torch_f=lambda x, y: torch.maximum(x, y) * 2 + torch.minimum(x, y) * 3,
    )
    assert len(groups(compiled)[0]) == 1


def broadcast(M, x, b, row, s):
    return ((x + b) * s - row).tanh() * row + (x * s).sigmoid() - b


@pytest.mark.parametrize("shapes", [((16,), (5, 1), ()), ((1, 16), (5, 1), (1,)), ((16,), (5, 1), (1, 1))])
def test_broadcast_inputs_get_their_gradients_summed_to_their_shape(shapes):
    fb.manual_seed(7)
    b_shape, row_shape, s_shape = shapes
    args = [fb.randn(5, 16), fb.randn(*b_shape), fb.randn(*row_shape), fb.randn(*s_shape)]
    compiled, (out,) = assert_grads(
        lambda *a: broadcast(fb, *a), args, [True] * 4, torch_f=lambda *a: broadcast(torch, *a)
    )
    assert len(groups(compiled)[0]) == 1 and out.grad_fn.name() == "FusedElementwiseBackward"
    # float64, tight, with a gradcheck of the broadcast reductions
    args64 = [a.double().requires_grad_(True) for a in args]
    assert_grads(lambda *a: broadcast(fb, *a), args64, [True] * 4, fb.float64, lambda *a: broadcast(torch, *a))
    assert fb.autograd.gradcheck(fb.compile(lambda *a: broadcast(fb, *a)), args64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_broadcast_gradients_reduced_in_the_kernel_over_several_blocks_of_rows(dtype):
    # 2051 rows of 24 (blocks of 682 rows, the last one short), and a flat group of 20,001 elements with a
    # one-element input (rows of 8,192 elements, the last one short): the kernel's per-block sums
    fdt = getattr(fb, dtype)
    fb.manual_seed(12)
    args = [
        fb.randn(2051, 24, dtype=fdt),
        fb.randn(24, dtype=fdt),
        fb.randn(2051, 1, dtype=fdt),
        fb.randn(1, dtype=fdt),
    ]
    # The one-element inputs' gradients sum 20,001 to 49,224 terms of mixed sign (their magnitudes add up to
    # thousands, the sums to ~4): the kernel's blocks, eager's and torch's vector widths round them apart by
    # up to ~1e-3 in float32 (5e-4 between the compiled and eager flat case on AMD Zen 3, AVX2).
    sums_atol = 2e-3 if dtype == "float32" else None
    compiled, _ = assert_grads(
        lambda *a: broadcast(fb, *a), args, [True] * 4, fdt, lambda *a: broadcast(torch, *a), sums_atol
    )
    (fg,) = compiled.fused_groups[0]
    (bw,) = fg.backwards.values()
    assert bw.reduced == {1: "bias", 2: "scalar", 3: "row"} and (bw.nrows, bw.nblocks) == (2051, 4)

    def flat(M, x, s):
        return ((x * s).tanh() + x) * s - x

    flat_args = [fb.randn(20001, dtype=fdt), fb.tensor(0.3, dtype=fdt)]
    compiled, _ = assert_grads(
        lambda *a: flat(fb, *a), flat_args, [True, True], fdt, lambda *a: flat(torch, *a), sums_atol
    )
    (fg,) = compiled.fused_groups[0]
    (bw,) = fg.backwards.values()
    assert bw.reduced == {1: "scalar"} and (bw.nrows, bw.nblocks) == (3, 2)


def partial(M, x, y):
    a = (x * 2).sigmoid() * y.exp().tanh() + (y * 3).relu()
    return a, y.exp() * 2, x > y


def test_inputs_without_grad_and_outputs_no_gradient_reaches_match_eager():
    fb.manual_seed(5)
    args = [fb.randn(4, 6), fb.randn(4, 6)]
    for needs in ([True, False], [False, True], [True, True]):
        fb.compiler.reset()
        compiled, (a, e, m) = assert_grads(
            lambda x, y: partial(fb, x, y), args, needs, torch_f=lambda x, y: partial(torch, x, y)
        )
        assert groups(compiled) == [
            [["mul", "sigmoid", "exp", "tanh", "mul", "mul", "relu", "add", "exp", "mul", "gt"]]
        ]
        # an output no gradient reaches does not require grad, as in eager (a comparison's never does)
        assert e.requires_grad == needs[1] and not m.requires_grad and a.requires_grad


def reuse(x, b, w):
    h = x * x.sigmoid() + x * 0.5 - b  # x read three times in the group
    return h.sum(-1) + (h @ w).sum(-1) + h.amax(-1)  # the group's output used three times after it


def test_a_tensor_read_twice_in_a_group_and_an_output_used_twice_after_it():
    fb.manual_seed(8)
    args = [fb.randn(6, 8), fb.randn(8), fb.randn(8, 3)]
    for dtype in (fb.float32, fb.float64):
        fb.compiler.reset()
        typed = [a.to(dtype) for a in args]
        compiled, (out,) = assert_grads(reuse, typed, [True, True, True], dtype)
        assert groups(compiled) == [[["sigmoid", "mul", "mul", "add", "sub"]]]
        assert "FusedElementwiseBackward" in fused_nodes(out)


def test_lstm_gates_two_outputs_and_an_output_also_read_in_the_group_get_gradients():
    fb.manual_seed(4)
    args = [fb.randn(3, 7) for _ in range(5)]
    compiled, (h, c) = assert_grads(
        lambda *a: lstm_gates(fb, *a), args, [True] * 5, torch_f=lambda *a: lstm_gates(torch, *a)
    )
    assert len(groups(compiled)[0]) == 1 and h.grad_fn is c.grad_fn
    # c1 is an output and the input of a later op of the group: its gradient is both contributions; and
    # with only h used, c's gradient is absent (zeros)
    for use_c in (True, False):
        xs = [a.detach().requires_grad_(True) for a in args]
        h, c = compiled(*xs)
        (h.sum() + (c * 3).sum() if use_c else h.sum()).backward()
        txs = [to_torch(a).requires_grad_(True) for a in args]
        th, tc = lstm_gates(torch, *txs)
        (th.sum() + (tc * 3).sum() if use_c else th.sum()).backward()
        for x, t in zip(xs, txs, strict=True):
            close(x.grad, t.grad)


def torch_bias_gelu(x, w, b, s, r):
    return torch.nn.functional.gelu(x @ w + b) * s + r


def powers(M, x, y):
    """pow by each exponent of the forward's table and a general one, on x > 0."""
    t = x**0 + x**1 + x**-1 + x**0.5 + x**-0.5 + x**2 + x**3 + x**2.5 + x ** (-1.25)
    return t * y.sigmoid()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_comparisons_as_factors_and_every_pow_exponent_under_grad(dtype):
    fdt = getattr(fb, dtype)
    fb.manual_seed(14)
    x, y = fb.randn(5, 6, dtype=fdt), fb.randn(5, 6, dtype=fdt)
    compiled, (a, m, ne) = assert_grads(
        lambda *t: masked(fb, *t), [x, y], [True, True], fdt, lambda *t: masked(torch, *t)
    )
    assert groups(compiled) == [[["gt", "mul", "where", "lt", "mul", "add", "sub", "ne"]]]
    assert a.requires_grad and not m.requires_grad and not ne.requires_grad
    pos = x.abs() + 0.5
    compiled, _ = assert_grads(lambda *t: powers(fb, *t), [pos, y], [True, True], fdt, lambda *t: powers(torch, *t))
    assert len(groups(compiled)[0]) == 1


def test_the_backward_saves_only_the_inputs_its_formulas_read_and_checks_their_versions():
    args = list(bias_gelu_inputs(4))
    needs = [True, True, True, False, True]
    compiled, _ = assert_grads(bias_gelu, args, needs, torch_f=torch_bias_gelu)
    (fg,) = compiled.fused_groups[0]
    (bw,) = fg.backwards.values()
    # inputs: x @ w, b, s, r; gelu' reads x @ w + b, the mul reads s; the residual r is not saved, and its
    # gradient is the output's as it comes (no kernel store)
    assert fg.ops == ["add", "gelu", "mul", "add"] and bw.reads == [0, 1, 2]
    assert bw.passthrough == {3: 0} and bw.stored == [0, 1]
    x, w, b, s, r = [a.detach().requires_grad_(n) for a, n in zip(args, needs, strict=True)]
    out = compiled(x, w, b, s, r)
    with fb.no_grad():
        s.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_operands_of_an_add_share_one_stored_gradient_that_accumulates_apart():
    rng = np.random.default_rng(3)
    a0, b0 = (rng.standard_normal((64, 33)).astype(np.float32) for _ in range(2))

    def f(a, b):
        return (a + b).relu() * 2.0

    compiled = fb.compile(f)
    a, b = (fb.tensor(v).requires_grad_(True) for v in (a0, b0))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a0, b0))
    for _ in range(3):
        compiled(a, b).sum().backward()
        f(ta, tb).sum().backward()
        assert a.grad is not b.grad
        np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
        np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy())
        with fb.no_grad():
            a.grad.mul_(0.5)  # one leaf's gradient changed in place leaves the other's alone
        with torch.no_grad():
            ta.grad.mul_(0.5)
    (fg,) = compiled.fused_groups[0]
    (bw,) = fg.backwards.values()
    assert bw.stored == [0] and bw.alias == {1: 0}
    # The per-thread loop reads the arrays through __restrict locals (a pointer captured by reference is
    # reloaded every iteration, which kept the pool's copy of the loop from vectorising).
    assert "T* __restrict L_d0 = d0;" in bw.text and "L_d0[i] = D0;" in bw.text


def test_a_fused_runs_agreement_is_recorded_and_reused_by_a_later_capture(monkeypatch):
    # Note [Fused agreement records]: the first capture checks the fused run (forward, and backward under
    # grad) against the eager ops and records the verdict; a later capture of the same shapes (a new process,
    # here a reset compiler) takes the record and skips both checks, and still matches eager. With
    # reuse_checks off every capture checks; a check that fails records nothing and leaves the ops unfused.
    checks = []
    real_fw, real_bw = _fusion._agrees, _fusion._grads_agree
    monkeypatch.setattr(_fusion, "_agrees", lambda *a: checks.append("forward") or real_fw(*a))
    monkeypatch.setattr(_fusion, "_grads_agree", lambda *a: checks.append("backward") or real_bw(*a))

    def f(x, b):
        return ((x * 0.5 + b).sigmoid() * x).sum()

    def capture_and_compare(rows):
        fb.manual_seed(3)
        x, b = fb.randn(rows, 9, requires_grad=True), fb.randn(9)  # sizes no other test captures
        compiled = fb.compile(f)
        for _ in range(2):
            x.grad = None
            compiled(x, b).backward()
        mine = x.grad.numpy().copy()
        x.grad = None
        f(x, b).backward()
        np.testing.assert_allclose(mine, x.grad.numpy(), rtol=1e-6, atol=1e-7)
        return len(groups(compiled)[0])

    assert capture_and_compare(37) == 1
    assert checks == ["forward", "backward"]
    fb.compiler.reset()
    assert capture_and_compare(37) == 1
    assert checks == ["forward", "backward"]  # both verdicts came from the record

    monkeypatch.setattr(fb.compiler.config, "reuse_checks", False)
    fb.compiler.reset()
    assert capture_and_compare(37) == 1
    assert checks == ["forward", "backward"] * 2

    monkeypatch.setattr(fb.compiler.config, "reuse_checks", True)

    def disagrees(*_args):
        checks.append("failed")
        return False

    monkeypatch.setattr(_fusion, "_grads_agree", disagrees)
    monkeypatch.setattr(_fusion, "_warned", False)
    fb.compiler.reset()
    with pytest.warns(UserWarning, match="fused backward"):
        assert capture_and_compare(41) == 0  # another shape: no record, the failing check decides
    monkeypatch.setattr(_fusion, "_grads_agree", lambda *a: checks.append("backward") or real_bw(*a))
    fb.compiler.reset()
    assert capture_and_compare(41) == 1  # nothing was recorded for the failed check: this one checks
    assert checks[-2:] == ["forward", "backward"]


def test_a_fused_kernel_includes_only_light_headers():
    # Parsing <cmath>, <algorithm> or <atomic> costs more than compiling the kernel (Note [Fused kernel]): a
    # cold capture waits for its kernels' builds.
    body = _cpp_kernel.loop_body(
        ["const T t0 = fb_gelu(a0[i]) + fb_log(fb_fabs(a0[i]));", "o0[i] = t0;"], [], True, False
    )
    text, _ = _cpp_kernel.source(body, "const T* __restrict a0, T* __restrict o0, const double* __restrict c", "float")
    includes = [line for line in text.splitlines() if line.startswith("#include")]
    assert includes == ["#include <bit>", "#include <cstdint>", "#include <flambeau/parallel_chunks.h>",
                        "#include <flambeau/abi.h>"]  # fmt: skip
    code = "\n".join(line.split("//")[0] for line in text.splitlines())
    assert "std::" not in code.replace("std::bit_cast", "")  # <bit> is light, <cmath> is not


def test_restrict_locals_are_made_inside_the_per_thread_lambda_only():
    body = (
        "  const T x1 = a1[0];\n"
        "  flambeau::parallel_for(0, n, g, [&](int64_t b, int64_t e) {\n"
        "    for (int64_t i = b; i < e; ++i) d0[i] = a0[i] * x1 * c[2];\n"
        "  });\n"
    )
    sig = "const T* __restrict a0, const T* __restrict a1, T* __restrict d0, const double* __restrict c"
    out = _cpp_kernel._restrict_in_lambda(body, sig)
    assert out.startswith("  const T x1 = a1[0];\n")  # the hoisted load keeps the argument
    assert (
        "[[maybe_unused]] const T* __restrict L_a0 = a0;" in out and "[[maybe_unused]] T* __restrict L_d0 = d0;" in out
    )
    assert "L_d0[i] = L_a0[i] * x1 * c[2];" in out  # c (the sizes and numbers) is read as it was


def test_double_backward_through_a_fused_group_matches_eager_and_torch():
    fb.manual_seed(9)
    x, b = fb.randn(4, 5, dtype=fb.float64), fb.randn(5, dtype=fb.float64)

    def f(x, b):
        return (fb.nn.functional.gelu(x * b, approximate="tanh") + x).tanh() * b

    compiled = fb.compile(f)
    results = []
    for fn in (compiled, compiled, f):
        xg, bg = x.detach().requires_grad_(True), b.detach().requires_grad_(True)
        out = fn(xg, bg)
        gx, gb = fb.autograd.grad(out.sum(), [xg, bg], create_graph=True)
        assert gx.requires_grad and gb.requires_grad
        ggx, ggb = fb.autograd.grad((gx * gx).sum() + gb.sum(), [xg, bg])
        results.append([gx, gb, ggx, ggb])
    tx, tb = to_torch(x).requires_grad_(True), to_torch(b).requires_grad_(True)
    tout = (torch.nn.functional.gelu(tx * tb, approximate="tanh") + tx).tanh() * tb
    tgx, tgb = torch.autograd.grad(tout.sum(), [tx, tb], create_graph=True)
    expected = [tgx, tgb, *torch.autograd.grad((tgx * tgx).sum() + tgb.sum(), [tx, tb])]
    for mine, eager, theirs in zip(results[1], results[2], expected, strict=True):
        close(mine, eager, fb.float64)
        close(mine, theirs, fb.float64)
    assert groups(compiled) == [[["mul", "gelu", "add", "tanh", "mul"]]]


@pytest.mark.parametrize("requires_grad", [False, True])
def test_forward_mode_ad_through_a_fused_group_runs_its_eager_ops(requires_grad):
    import flambeau.autograd.forward_ad as fwad
    import torch.autograd.forward_ad as tfwad

    fb.manual_seed(13)
    x, tangent = fb.randn(4, 5), fb.randn(4, 5)

    def h(x):
        return (x.sigmoid() * x).tanh() * 2

    compiled = fb.compile(h)
    compiled(x)  # captured outside a dual level: fused
    assert groups(compiled) == [[["sigmoid", "mul", "tanh", "mul"]]]
    with fwad.dual_level():
        out = compiled(fwad.make_dual(x.detach().requires_grad_(requires_grad), tangent))
        mine = fwad.unpack_dual(out).tangent
    with tfwad.dual_level():
        expected = tfwad.unpack_dual(h(tfwad.make_dual(to_torch(x), to_torch(tangent)))).tangent
    close(mine, expected)


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
    b.requires_grad_(True)  # the guards do not see this: the group builds the backward of b on this call
    out = compiled(x, s, r)
    assert out.grad_fn.name() == "FusedElementwiseBackward"
    out.sum().backward()
    tb = to_torch(b).requires_grad_(True)
    expected = torch.nn.functional.gelu(to_torch(x) @ to_torch(w) + tb) * to_torch(s) + to_torch(r)
    expected.sum().backward()
    close(out, expected)
    close(b.grad, tb.grad)
    (fg,) = compiled.fused_groups[0]
    assert list(fg.backwards) == [(False, True, False, False)]


class TrainNet(fb.nn.Module):
    """An MLP block with gelu, a bias, a residual scale and a layer norm written out: elementwise chains."""

    def __init__(self, width=16, hidden=32):
        super().__init__()
        self.w1 = fb.nn.Parameter(fb.randn(width, hidden) * width**-0.5)
        self.b1 = fb.nn.Parameter(fb.randn(hidden) * 0.1)
        self.fc2 = fb.nn.Linear(hidden, width)
        self.scale = fb.nn.Parameter(fb.full((width,), 0.5))
        self.gain = fb.nn.Parameter(fb.ones(width))
        self.shift = fb.nn.Parameter(fb.zeros(width))

    def forward(self, x):
        h = fb.nn.functional.gelu(x @ self.w1 + self.b1)
        y = self.fc2(h) * self.scale + x
        mean = y.mean(-1, keepdim=True)
        var = ((y - mean) ** 2).mean(-1, keepdim=True)
        rstd = fb.rsqrt(var + 1e-5)
        return (y - mean) * rstd * self.gain + self.shift


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_compiled_training_loop_matches_eager_step_for_step(dtype):
    fdt = getattr(fb, dtype)
    fb.manual_seed(10)
    eager = TrainNet().to(fdt)
    model = TrainNet().to(fdt)
    model.load_state_dict(eager.state_dict())
    compiled = fb.compile(model)
    opts = [fb.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (eager, model)]
    data = [(fb.randn(8, 16, dtype=fdt), fb.randn(8, 16, dtype=fdt)) for _ in range(4)]
    rtol = 1e-4 if fdt == fb.float32 else 1e-10
    for step in range(20):
        x, target = data[step % 4]
        losses = []
        for fn, opt in zip((eager, compiled), opts, strict=True):
            opt.zero_grad()
            loss = ((fn(x) - target) ** 2).mean()
            loss.backward()
            losses.append(loss)
        np.testing.assert_allclose(losses[1].item(), losses[0].item(), rtol=rtol)
        for (name, p), q in zip(eager.named_parameters(), model.parameters(), strict=True):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=rtol, atol=rtol * 0.1, err_msg=name)
        for opt in opts:
            opt.step()
        for p, q in zip(eager.parameters(), model.parameters(), strict=True):
            np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=rtol, atol=rtol * 0.1)
    fused = groups(compiled)[0]
    assert fused == [["add", "gelu"], ["mul", "add"], ["sub", "pow"], ["add", "rsqrt"], ["sub", "mul", "mul", "add"]]
    out = compiled(data[0][0])
    assert "FusedElementwiseBackward" in fused_nodes(out)


def test_a_fused_backward_that_cannot_be_built_leaves_the_group_eager(monkeypatch):
    monkeypatch.setattr(_fusion, "_warned", False)

    def fail(self):
        raise RuntimeError("no compiler for a test")

    monkeypatch.setattr(_fusion_grad.Backward, "build", fail)
    args = list(bias_gelu_inputs(4))
    needs = [True, True, True, False, True]
    with pytest.warns(UserWarning, match=r"\[compile\] a fused backward kernel could not be built.*for a test"):
        compiled, out = assert_grads(bias_gelu, args, needs, torch_f=torch_bias_gelu)
    assert groups(compiled) == [[]]


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
