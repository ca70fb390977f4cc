"""CUDA kernel coverage, checked on the host (no GPU needed).

One training step of the MLP and NCF benchmark models (benchmarks/models.py)
runs on the CPU under core's kernel trace (Note [Kernel trace] in
flambeau/dispatch.h), which records every op that reaches a device kernel.
Each of those ops must have a CUDA kernel, or a Generic one that serves every
device; Composite ops never reach the trace (the ops they call do). So this
fails as soon as a model needs an op that flambeau-cuda does not provide.

It also lists the elementwise ops that have a CPU kernel but no CUDA kernel
yet (ELEMENTWISE below is the inventory: core's shared elementwise list, read
from the registry, and the ops written by hand): that list may only shrink.
And it checks that the op lists of packages/cuda/README.md are the registry's
(tools/readme_ops.py writes them).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import flambeau_core as fc
import flambeau_cuda  # noqa: F401  (registers the CUDA kernels)
import pytest
from flambeau_core import _C
from flambeau_core.testing import kernel_trace

_MODELS_PY = Path(__file__).resolve().parents[3] / "benchmarks" / "models.py"


def _bench():
    if not _MODELS_PY.is_file():
        pytest.skip(f"benchmarks/models.py is not in this checkout ({_MODELS_PY})")
    name = "flambeau_benchmark_models"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _MODELS_PY)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def _readme_ops():
    path = Path(__file__).resolve().parents[1] / "tools" / "readme_ops.py"
    spec = importlib.util.spec_from_file_location("flambeau_cuda_readme_ops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def traced(fn) -> set[str]:
    """The ops `fn` dispatched to a CPU device kernel (its own or a Generic one)."""
    with kernel_trace() as rows:
        fn()
    return {op for op, device, _kind in rows if device == "cpu"}


def has_cuda_kernel(op: str) -> bool:
    return _C._has_kernel(op, "CUDA") or _C._has_kernel(op, "Generic")


def missing_on_cuda(ops: set[str]) -> list[str]:
    # Callers never branch on the device (a CPU fast path has a Generic kernel for the other
    # devices), so the ops a step dispatches on the CPU are the ones it dispatches on CUDA.
    return sorted(op for op in ops if not has_cuda_kernel(op))


def train_ops(model: str) -> set[str]:
    bench = _bench()
    fc.manual_seed(0)
    step = bench.TrainStep(bench.MODELS[model], bench.framework("flambeau"))
    step.step()  # the first step creates the momentum buffers

    def two_steps():
        step.step()
        step.step()

    return traced(two_steps)


@pytest.mark.parametrize("model", ["mlp", "ncf"])
def test_training_step_has_cuda_kernels(model):
    ops = train_ops(model)
    # The trace saw the whole step: forward, loss, backward and the optimizer.
    expected = {"linear", "_fused_sgd_"} | (
        {"embedding", "embedding_dense_backward", "cat", "binary_cross_entropy_with_logits_backward"}
        if model == "ncf"
        else {"_cross_entropy", "_cross_entropy_backward"}
    )
    assert expected <= ops, sorted(expected - ops)
    assert missing_on_cuda(ops) == [], f"{model}: ops without a CUDA kernel: {missing_on_cuda(ops)}"


def test_cpu_fast_paths_have_generic_kernels():
    # The one-pass CPU kernels autograd, nn and the composites call keep their CPU kernel; every other
    # device runs the Generic one (core's src/generic/), and the compositions of dispatched ops that
    # flambeau-cuda once registered as its own kernels live there too.
    fast_paths = {
        "_linear_backward",
        "_softmax",
        "_log_softmax",
        "_softmax_backward_data",
        "_log_softmax_backward_data",
    }
    composed = {
        *"mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy binary_cross_entropy_with_logits".split(),
        *"_cross_entropy nll_loss_nd".split(),
    }
    composed |= {f"{op}_backward" for op in composed} | {"masked_fill", "_fused_sgd_", "_foreach_zero_"}
    for op in sorted(fast_paths | composed):
        assert _C._has_kernel(op, "CPU") and _C._has_kernel(op, "Generic"), op
        assert not _C._has_kernel(op, "CUDA"), f"{op}: a composition of dispatched ops is a Generic kernel"
    assert _C._has_kernel("embedding", "CUDA")  # a real CUDA kernel stays in flambeau-cuda
    # The MLP step's linear backward is the one _linear_backward call on every device.
    assert "_linear_backward" in train_ops("mlp")


def test_trace_finds_a_missing_kernel():
    # cummax has no CUDA kernel yet: the check must name it.
    x = fc.randn(3, 5)
    ops = traced(lambda: fc.cummax(x, dim=1))
    assert "cummax" in ops
    assert "cummax" in missing_on_cuda(ops)


def test_convolution_training_has_cuda_kernels():
    # conv1d/conv2d and the transposed forms, forward and backward (input: a convolution of the other kind).
    import flambeau_nn.functional as F

    for fn, xs, ws in (
        (F.conv2d, (2, 4, 6, 5), (4, 2, 3, 3)),
        (F.conv1d, (2, 4, 7), (6, 2, 2)),
        (F.conv_transpose2d, (2, 4, 5, 5), (4, 3, 3, 3)),
    ):
        ops = traced(_forward_backward(lambda x, w, fn=fn: fn(x, w, groups=2, padding=1), xs, ws))
        assert {"convolution", "convolution_backward_weight"} <= ops, sorted(ops)
        assert missing_on_cuda(ops) == [], f"{fn.__name__}: ops without a CUDA kernel: {missing_on_cuda(ops)}"


@pytest.mark.parametrize(
    ("fn", "shape", "kw"),
    [
        ("max_pool2d", (2, 3, 6, 6), {"kernel_size": 2}),
        ("avg_pool2d", (2, 3, 6, 6), {"kernel_size": 3, "padding": 1}),
        ("adaptive_avg_pool2d", (2, 3, 6, 6), {"output_size": 2}),
        ("max_pool1d", (2, 3, 8), {"kernel_size": 2}),
        ("avg_pool1d", (2, 3, 8), {"kernel_size": 2}),
        ("adaptive_avg_pool1d", (2, 3, 8), {"output_size": 3}),
    ],
)
def test_pool_training_has_cuda_kernels(fn, shape, kw):
    import flambeau_nn.functional as F

    ops = traced(_forward_backward(getattr(F, fn), shape, **kw))
    assert ops, fn
    assert missing_on_cuda(ops) == [], f"{fn}: ops without a CUDA kernel: {missing_on_cuda(ops)}"


def test_advanced_indexing_has_cuda_kernels():
    x = fc.randn(4, 5)
    m = x > 0
    for fn in (
        lambda: x[fc.tensor([0, 2])],
        lambda: x[m],
        lambda: x.clone().__setitem__(fc.tensor([1, 3]), 2.0),
        lambda: fc.masked_select(x, m),
        lambda: x.masked_scatter(m, fc.randn(20)),
    ):
        ops = traced(fn)
        assert ops & {"index", "index_put_"}, sorted(ops)
        assert missing_on_cuda(ops) == [], f"ops without a CUDA kernel: {missing_on_cuda(ops)}"


def cpu_ops_without_cuda_kernel() -> list[str]:
    """Every op with a CPU kernel and neither a CUDA nor a Generic one (what a CUDA tensor cannot run yet)."""
    return sorted(op for op in _C._registered_ops() if _C._has_kernel(op, "CPU") and not has_cuda_kernel(op))


def test_ops_without_a_cuda_kernel_raise_not_implemented(capsys):
    from flambeau_cuda import _C as cuda_C

    missing = cpu_ops_without_cuda_kernel()
    with capsys.disabled():
        print(f"\n[cuda coverage] {len(missing)} ops with a CPU kernel have no CUDA kernel: {' '.join(missing)}")
    assert "convolution" not in missing and "convolution_backward_weight" not in missing
    assert not {"max_pool2d_with_indices", "max_pool_backward", "avg_pool2d", "adaptive_avg_pool2d"} & set(missing)
    assert not {
        "native_layer_norm",
        "native_layer_norm_backward",
        "native_batch_norm",
        "native_batch_norm_backward",
    } & set(missing)
    assert not {"sort", "topk", "index", "index_put_", "arange", "flip", "tril", "triu", "cumsum", "cumprod"} & set(
        missing
    )
    assert not {"_pad_nd", "_pad_nd_backward", "index_fill"} & set(missing)
    assert "cummax" in missing
    # A call of such an op on CUDA tensors reaches the host fallback, which CUDA refuses with this error.
    for op in missing:
        with pytest.raises(NotImplementedError, match=rf"^\[{op}\] is not yet implemented on CUDA"):
            cuda_C._host_fallback_error(op)


def test_trace_records_top_level_kernels_only():
    a = fc.randn(3, 4)
    ops = traced(lambda: (a + 1).t().sum())
    assert {"add", "sum", "transpose"} <= ops  # transpose: a Generic kernel
    assert traced(lambda: None) == set()
    # Off again: nothing is recorded outside a trace.
    assert _C._kernel_trace_stop() == []


def test_has_kernel_introspection():
    assert _C._has_kernel("add", "CPU") and _C._has_kernel("add", "CUDA")
    assert _C._has_kernel("transpose", "Generic") and not _C._has_kernel("transpose", "CPU")
    assert not _C._has_kernel("no_such_op", "CPU")
    assert "add" in _C._registered_ops()
    with pytest.raises(ValueError, match="unknown dispatch key 'TPU'"):
        _C._has_kernel("add", "TPU")


# The elementwise ops with a CPU kernel in core: the ops of core's shared list
# (Note [Elementwise math list] in flambeau/elementwise_math.h), read from the
# registry, whose CUDA kernels are expanded from the same lines; and the ops
# each backend writes by hand (src/cpu/unary.cpp, unary_math.cpp, binary.cpp,
# binary_math.cpp, ieee_math.cpp, bitwise.cpp, compare.cpp, activation.cpp,
# complex_ops.cpp, complex_widen.cpp).
HAND_WRITTEN_ELEMENTWISE = {
    # unary.cpp, unary_math.cpp
    *"abs exp log neg relu sigmoid sqrt tanh isnan isinf isfinite nan_to_num".split(),
    # binary.cpp, binary_math.cpp, ieee_math.cpp
    *"add sub mul div add_ sub_ mul_ div_ maximum minimum pow div_mode clamp signbit".split(),
    # bitwise.cpp, compare.cpp
    *"bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift".split(),
    *"logical_and logical_or logical_xor logical_not".split(),
    *"eq ne lt le gt ge where".split(),
    # activation.cpp
    *"gelu gelu_backward silu silu_backward mish mish_backward".split(),
    *"leaky_relu leaky_relu_backward elu elu_backward softplus softplus_backward".split(),
    *"hardtanh hardtanh_backward hardswish hardswish_backward".split(),
    *"hardsigmoid hardsigmoid_backward log_sigmoid log_sigmoid_backward".split(),
    *"softsign softsign_backward threshold_backward".split(),
    *"prelu _prelu_backward_input _prelu_backward_weight glu glu_backward".split(),
    # complex_ops.cpp, complex_widen.cpp
    *"angle complex conj_physical sgn".split(),
}
ELEMENTWISE = sorted(_readme_ops().shared_list_ops() | HAND_WRITTEN_ELEMENTWISE)


def test_shared_list_ops_have_every_kernel():
    # One line of the shared list gives the op its CPU and its CUDA kernel; none is also written by hand.
    ops = _readme_ops().shared_list_ops()
    assert {"sin", "erfinv", "floor", "sign", "atan2", "fmod", "floor_divide"} <= ops
    assert not ops & HAND_WRITTEN_ELEMENTWISE, sorted(ops & HAND_WRITTEN_ELEMENTWISE)
    assert [op for op in sorted(ops) if not (_C._has_kernel(op, "CPU") and _C._has_kernel(op, "CUDA"))] == []
    kinds = dict(_C._elementwise_math_ops()["binary"])
    assert kinds["atan2"] == "FloatValued" and kinds["hypot"] == "FloatOnly" and kinds["fmod"] == "Division"


# Still without a CUDA kernel: this set may only shrink (remove an op when its kernel lands).
KNOWN_MISSING = {"angle", "complex", "conj_physical"}  # complex-valued: CUDA has no complex elementwise yet


def test_elementwise_coverage(capsys):
    with_cpu = [op for op in ELEMENTWISE if _C._has_kernel(op, "CPU")]
    assert with_cpu == ELEMENTWISE, sorted(set(ELEMENTWISE) - set(with_cpu))
    missing = missing_on_cuda(set(with_cpu))
    with capsys.disabled():
        print(
            f"\n[cuda coverage] {len(with_cpu) - len(missing)} of {len(with_cpu)} elementwise ops with a CPU "
            f"kernel have a CUDA kernel; missing ({len(missing)}): {' '.join(missing)}"
        )
    assert set(missing) <= KNOWN_MISSING, f"lost CUDA kernels: {sorted(set(missing) - KNOWN_MISSING)}"


def _forward_backward(fn, *shapes, **kw):
    def run():
        xs = [fc.randn(*s).requires_grad_() for s in shapes]
        out = fn(*xs, **kw)
        out.backward(fc.ones(*out.shape))

    return run


ACTIVATION_CASES = {
    "relu": ((4, 6), {}),
    "gelu": ((4, 6), {"approximate": "tanh"}),
    "silu": ((4, 6), {}),
    "mish": ((4, 6), {}),
    "leaky_relu": ((4, 6), {"negative_slope": 0.2}),
    "elu": ((4, 6), {}),
    "softplus": ((4, 6), {}),
    "hardtanh": ((4, 6), {}),
    "hardswish": ((4, 6), {}),
    "hardsigmoid": ((4, 6), {}),
    "logsigmoid": ((4, 6), {}),
    "softsign": ((4, 6), {}),
    "glu": ((4, 6), {}),
    "sigmoid": ((4, 6), {}),
    "tanh": ((4, 6), {}),
}


@pytest.mark.parametrize("name", sorted(ACTIVATION_CASES))
def test_activation_training_has_cuda_kernels(name):
    import flambeau_nn.functional as F

    shape, kw = ACTIVATION_CASES[name]
    ops = traced(_forward_backward(getattr(F, name), shape, **kw))
    assert ops, name
    assert missing_on_cuda(ops) == [], f"{name}: ops without a CUDA kernel: {missing_on_cuda(ops)}"


def test_losses_and_prelu_training_have_cuda_kernels():
    import flambeau_nn.functional as F

    target = fc.rand(3, 5)
    cases = {
        "bce_with_logits": _forward_backward(lambda x: F.binary_cross_entropy_with_logits(x, target), (3, 5)),
        # weight and pos_weight are constants: PyTorch refuses to differentiate them, and so does flambeau.
        "bce_with_logits_weights": _forward_backward(
            lambda x: F.binary_cross_entropy_with_logits(x, target, weight=fc.rand(5), pos_weight=fc.rand(5)),
            (3, 5),
        ),
        "mse": _forward_backward(lambda x: F.mse_loss(x, target), (3, 5)),
        "l1": _forward_backward(lambda x: F.l1_loss(x, target), (3, 5)),
        "smooth_l1": _forward_backward(lambda x: F.smooth_l1_loss(x, target, beta=0.5), (3, 5)),
        "huber": _forward_backward(lambda x: F.huber_loss(x, target, delta=0.5), (3, 5)),
        "bce": _forward_backward(lambda x: F.binary_cross_entropy(x.sigmoid(), target), (3, 5)),
        "masked_fill": _forward_backward(lambda x: x.masked_fill(target > 0.5, 2.0), (3, 5)),
        "prelu": _forward_backward(F.prelu, (2, 3, 4), (3,)),
        "cat": _forward_backward(lambda a, b: fc.cat([a, b], 1).sum(), (2, 3), (2, 4)),
    }
    for name, run in cases.items():
        ops = traced(run)
        assert missing_on_cuda(ops) == [], f"{name}: ops without a CUDA kernel: {missing_on_cuda(ops)}"


def test_readme_op_lists_are_the_registry():
    tool = _readme_ops()
    lists = tool.op_lists()
    assert "add" in lists["cuda-ops"] and "cummax" in lists["cuda-missing"] and "sin" not in lists["cuda-ops"]
    assert lists["cuda-missing"] == cpu_ops_without_cuda_kernel()
    text = tool.README.read_text()
    assert tool.render(text, lists) == text, "packages/cuda/README.md's op lists are stale: run tools/readme_ops.py"


def test_readme_op_lists_notice_a_change():
    tool = _readme_ops()
    lists = tool.op_lists()
    text = tool.render(tool.README.read_text(), lists)
    fewer = {**lists, "cuda-ops": [op for op in lists["cuda-ops"] if op != "add"]}
    assert tool.render(text, fewer) != text
    with pytest.raises(ValueError, match=r"^\[readme_ops\] .* has no block 'cuda-ops'"):
        tool.render("no markers", lists)
