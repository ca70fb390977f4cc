"""The device-generic kernels of the nn ops (src/generic/losses.cpp and nn_ops.cpp, the Generic key): the
CPU keeps its one-pass kernels and every other device without a kernel of its own runs these
compositions. On the sim device each op gives the CPU's values; on the meta device its shapes and dtypes;
their errors are the CPU kernel's, or name the device where only the generic kernel refuses."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from flambeau_core import _C
from flambeau_core.testing import assert_close_on, device_params, raises_when_run

SIM = device_params(("sim",))

# CPU fast paths with a Generic fallback, and the losses and nn steps written once from other ops.
FAST_PATHS = ["_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "_linear_backward"]
LOSSES = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "_cross_entropy",
    "nll_loss_nd",
]
GENERIC = FAST_PATHS + LOSSES + [f"{n}_backward" for n in LOSSES] + ["masked_fill", "_fused_sgd_", "_foreach_zero_"]


def fn(name: str):
    return getattr(fc, name, None) or getattr(_C, name)


def tensor(a, dtype=fc.float64):
    return fc.tensor(np.asarray(a), dtype=dtype)


def cases(dtype) -> list[tuple[str, str, tuple]]:
    """(case id, op name, CPU arguments): every generic op, each reduction, weights and broadcasting."""
    rng = np.random.default_rng(7)
    x, t = tensor(rng.standard_normal((4, 5)), dtype), tensor(rng.standard_normal((4, 5)), dtype)
    row = tensor(rng.standard_normal(5), dtype)  # a target or weight that broadcasts over the rows
    p, q = tensor(rng.uniform(0.05, 0.95, (4, 5)), dtype), tensor(rng.uniform(0, 1, (4, 5)), dtype)
    w, pw = tensor(rng.uniform(0.5, 2, 5), dtype), tensor(rng.uniform(0.5, 2, (4, 1)), dtype)
    cls = fc.tensor([1, 4, -100, 0])  # one row ignored
    cw = tensor(rng.uniform(0.5, 2, 5), dtype)
    out = []
    for r in (0, 1, 2):
        g = tensor(rng.standard_normal((4, 5)), dtype) if r == 0 else tensor(1.5, dtype)
        grow = tensor(rng.standard_normal(4), dtype) if r == 0 else tensor(1.5, dtype)
        out += [
            (f"mse-{r}", "mse_loss", (x, t, r)),
            (f"mse_backward-{r}", "mse_loss_backward", (g, x, t, r)),
            (f"l1-{r}", "l1_loss", (x, row, r) if r else (x, t, r)),
            (f"l1_backward-{r}", "l1_loss_backward", (g, x, t, r)),
            (f"smooth_l1-{r}", "smooth_l1_loss", (x, t, r, 0.5)),
            (f"smooth_l1_backward-{r}", "smooth_l1_loss_backward", (g, x, t, r, 0.5)),
            (f"huber-{r}", "huber_loss", (x, t, r, 0.7)),
            (f"huber_backward-{r}", "huber_loss_backward", (g, x, t, r, 0.7)),
            (f"bce-{r}", "binary_cross_entropy", (p, q, w if r != 1 else None, r)),
            (f"bce_backward-{r}", "binary_cross_entropy_backward", (g, p, q, w, r)),
            (f"bce_logits-{r}", "binary_cross_entropy_with_logits", (x, q, w, pw if r else None, r)),
            (f"bce_logits_backward-{r}", "binary_cross_entropy_with_logits_backward", (g, x, q, w, pw, r)),
            (f"cross_entropy-{r}", "_cross_entropy", (x, cls, cw if r != 2 else None, r, -100, 0.0)),
            (f"nll-{r}", "nll_loss_nd", (x, cls, cw, r, -100)),
            (f"nll_backward-{r}", "nll_loss_nd_backward", (grow, x, cls, cw, r, -100)),
        ]
        lse = _C._cross_entropy(x, cls, cw, r, -100, 0.0)[1]
        out.append((f"cross_entropy_backward-{r}", "_cross_entropy_backward", (grow, x, cls, lse, cw, r, -100, 0.0)))
    mask = x > 0.3
    out += [
        ("log_softmax", "log_softmax", (x, 1)),
        ("log_softmax_dim0", "log_softmax", (x, 0)),
        ("softmax", "softmax", (x, -1)),
        ("linear_backward", "_linear_backward", (t, x, tensor(rng.standard_normal((5, 5)), dtype), True, True, True)),
        ("masked_fill", "masked_fill", (x, mask, 2.0)),
        ("masked_fill_row_mask", "masked_fill", (x, row > 0, -1.0)),
    ]
    return out


def ids(dtype):
    return [c[0] for c in cases(dtype)]


def to(args, device):
    return tuple(a.to(device) if isinstance(a, fc.Tensor) else a for a in args)


def test_generic_kernels_serve_every_device_but_the_cpu():
    for op in GENERIC:
        assert _C._has_kernel(op, "Generic") and _C._has_kernel(op, "CPU"), op


@pytest.mark.parametrize("device", SIM)
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("index", range(len(cases(fc.float64))), ids=ids(fc.float64))
def test_values_on_a_device_are_the_cpus(device, dtype, index):
    _, name, args = cases(dtype)[index]
    tol = 1e-5 if dtype == fc.float32 else 1e-12
    expected = fn(name)(*args)
    assert_close_on(device, fn(name)(*to(args, device)), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("index", range(len(cases(fc.float64))), ids=ids(fc.float64))
def test_meta_gives_the_cpus_shapes_and_dtypes(index):
    _, name, args = cases(fc.float32)[index]

    def shapes(r):
        rs = r if isinstance(r, tuple) else (r,)
        return [(tuple(t.shape), t.dtype) for t in rs]

    result = fn(name)(*to(args, "meta"))
    assert all(t.device.type == "meta" for t in (result if isinstance(result, tuple) else (result,)))
    assert shapes(result) == shapes(fn(name)(*args))


@pytest.mark.parametrize("device", SIM)
def test_optimizer_steps_on_a_device_are_the_cpus(device):
    rng = np.random.default_rng(3)
    state = [[tensor(rng.standard_normal(s)) for s in ((3, 4), (5,))] for _ in range(3)]
    on_dev = [[t.to(device) for t in ts] for ts in state]
    for params, grads, bufs in (state, on_dev):
        for first in (True, False):
            _C._fused_sgd_(
                params,
                grads,
                bufs,
                weight_decay=0.1,
                momentum=0.9,
                lr=0.5,
                dampening=0.2,
                nesterov=True,
                maximize=False,
                is_first_step=first,
            )
    for a, b in zip(state[0] + state[2], on_dev[0] + on_dev[2], strict=True):
        assert_close_on(device, b, a, rtol=1e-12, atol=1e-12)
    _C._foreach_zero_(on_dev[1])
    assert all(not t.cpu().any().item() for t in on_dev[1])


def outcome(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001  (the error must be the same on both devices)
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("device", SIM)
def test_fast_path_errors_are_the_cpus(device):
    x, w = fc.randn(4, 5, dtype=fc.float64), fc.randn(3, 5, dtype=fc.float64)
    bad = [
        (fc.randn(4, 3, dtype=fc.float64), x, fc.randn(3, 4, dtype=fc.float64)),  # weight does not match input
        (fc.randn(4, 2, dtype=fc.float64), x, w),  # grad_output shape
        (fc.randn(4, 3), x.float(), w.float().int()),  # dtypes
        (fc.randn(4, 3, dtype=fc.float64), x[0], w),  # 1-D input
    ]
    for args in bad:
        cpu = outcome(lambda a=args: _C._linear_backward(*a, True, True, True))
        assert cpu is not None and cpu[1].startswith("[_linear_backward]"), cpu
        assert outcome(lambda a=args: _C._linear_backward(*to(a, device), True, True, True)) == cpu


@pytest.mark.parametrize("device", SIM)
def test_errors_on_a_device(device):
    x = fc.randn(3, 4, device=device)
    # The op table's check step refuses the dtype before any device kernel, with the CPU's words.
    with pytest.raises(
        TypeError,
        match=r"^\[huber_loss\] input must be a float16, bfloat16, float32 or float64 tensor, got dtype int64",
    ):
        fc.huber_loss(x.long(), x.long(), 1, 1.0)
    with pytest.raises(fc.FlambeauError, match=r"^\[huber_loss\] huber_loss does not support non-positive"):
        fc.huber_loss(x, x, 1, 0.0)
    with pytest.raises(fc.FlambeauError, match=r"^\[smooth_l1_loss\] reduction must be 0 \(none\), 1 \(mean\)"):
        fc.smooth_l1_loss(x, x, 3, 1.0)
    raises_when_run(
        fc.FlambeauError,
        r"^\[binary_cross_entropy\] all elements of input should be between",
        fc.binary_cross_entropy,
        x.abs() + 1,
        x.sigmoid(),
        None,
        1,
    )
    with pytest.raises(fc.FlambeauError, match=r"target shape \(3, 1\) must be the same as input shape \(3, 4\)"):
        fc.binary_cross_entropy_with_logits(x, x[:, :1], None, None, 1)
    with pytest.raises(fc.FlambeauError, match=r"pos_weight shape \(3,\) does not broadcast to the input shape"):
        fc.binary_cross_entropy_with_logits(x, x.sigmoid(), None, x[:, 0], 1)
    with pytest.raises(TypeError, match=r"^\[masked_fill\] mask must be a bool tensor"):
        fc.masked_fill(x, x, 1.0)


def test_errors_on_meta_skip_only_what_reads_values():
    x = fc.empty(3, 4, device="meta")
    # The values are not there: the range checks that read them are skipped (as PyTorch's meta functions).
    assert tuple(fc.binary_cross_entropy(x, x, None, 0).shape) == (3, 4)
    assert tuple(_C._cross_entropy(x, fc.empty(3, dtype=fc.int64, device="meta"), None, 0, -100, 0.0)[0].shape) == (3,)
    # Shapes broadcast (as PyTorch's mse_loss); the op table's shape rule refuses what cannot.
    with pytest.raises(fc.FlambeauError, match=r"^\[mse_loss\] shapes \(3, 4\) and \(5,\) cannot be broadcast"):
        fc.mse_loss(x, fc.empty(5, device="meta"), 1)
    # One sample of C logits: the op table's class-loss rule gives the CPU's 0-d result.
    one = fc.nll_loss_nd(x[0], fc.empty((), dtype=fc.int64, device="meta"), None, 1, -100)
    assert tuple(one.shape) == tuple(fc.nll_loss_nd(fc.zeros(4), fc.tensor(1), None, 1, -100).shape) == ()
