"""The meta steps of the 2-d poolings and their backwards (one shape rule, pool::check_pool2d).

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
import torch.nn.functional as tf
from meta_helpers import TH, check_torch, cpu_tensor, meta_and_cpu, outcome

# ---- pooling: one shape rule (pool::check_pool2d) for every backend ----

# name: (flambeau_core call, torch call or None); both take the input x.
POOL_CALLS = {
    "max 2x2": (
        lambda x: fc.max_pool2d_with_indices(x, [2], [], [0], [1]),
        lambda x: tf.max_pool2d(x, 2, return_indices=True),
    ),
    "max dilated ceil": (
        lambda x: fc.max_pool2d_with_indices(x, [3, 2], [2, 1], [1, 0], [2, 1], True),
        lambda x: tf.max_pool2d(x, (3, 2), (2, 1), (1, 0), (2, 1), True, return_indices=True),
    ),
    "max pad too large": (lambda x: fc.max_pool2d_with_indices(x, [2], [], [2], [1]), None),
    "max kernel too large": (lambda x: fc.max_pool2d_with_indices(x, [9], [], [0], [1]), None),
    "max bad kernel_size": (lambda x: fc.max_pool2d_with_indices(x, [2, 2, 2], [], [0], [1]), None),
    "avg": (lambda x: fc.avg_pool2d(x, [3], [2], [1]), lambda x: tf.avg_pool2d(x, 3, 2, 1)),
    "avg ceil": (lambda x: fc.avg_pool2d(x, [2], [2], [0], True), lambda x: tf.avg_pool2d(x, 2, 2, 0, True)),
    "avg zero divisor": (lambda x: fc.avg_pool2d(x, [2], [2], [0], False, True, 0), None),
    "avg zero stride": (lambda x: fc.avg_pool2d(x, [2], [0], [0]), None),
    "adaptive avg": (lambda x: fc.adaptive_avg_pool2d(x, [3, 2]), lambda x: tf.adaptive_avg_pool2d(x, (3, 2))),
    "adaptive avg global": (lambda x: fc.adaptive_avg_pool2d(x, [1]), lambda x: tf.adaptive_avg_pool2d(x, 1)),
    "adaptive avg negative": (lambda x: fc.adaptive_avg_pool2d(x, [-1, 2]), None),
    "adaptive max": (
        lambda x: fc.adaptive_max_pool2d(x, [2, 3]),
        lambda x: tf.adaptive_max_pool2d(x, (2, 3), return_indices=True),
    ),
    "adaptive max three sizes": (lambda x: fc.adaptive_max_pool2d(x, [2, 3, 4]), None),
}


@pytest.mark.parametrize("call", list(POOL_CALLS))
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 5), (0, 2, 4, 4), (2, 0, 4, 4), (4, 4)])
def test_pooling(call, dtype, shape):
    ours, theirs = POOL_CALLS[call]
    meta, cpu = meta_and_cpu(ours, cpu_tensor(shape, dtype))
    assert meta == cpu, (call, dtype, shape, meta, cpu)
    if theirs is not None and dtype.startswith("float"):
        check_torch(theirs, cpu, torch.ones(shape, dtype=TH[dtype]))


def pool_grads(device):
    """The pooling backwards on good and bad arguments: (name, call) pairs."""
    g = fc.ones(2, 3, 3, 3, device=device)
    i = fc.zeros(2, 3, 3, 3, dtype=fc.int64, device=device)
    return [
        ("max", lambda: fc.max_pool_backward(g, i, [2, 3, 6, 6])),
        ("max int grad", lambda: fc.max_pool_backward(i, i, [2, 3, 6, 6])),
        ("max float indices", lambda: fc.max_pool_backward(g, g, [2, 3, 6, 6])),
        ("max rank", lambda: fc.max_pool_backward(g, i, [6, 6])),
        ("max leading", lambda: fc.max_pool_backward(g, i, [2, 4, 6, 6])),
        ("max shapes", lambda: fc.max_pool_backward(g, i[:, :, :2], [2, 3, 6, 6])),
        ("avg", lambda: fc.avg_pool2d_backward(g, [2, 3, 6, 6], [2], [2], [0], False, True, None)),
        ("avg wrong grad", lambda: fc.avg_pool2d_backward(g, [2, 3, 8, 8], [2], [2], [0], False, True, None)),
        ("avg divisor", lambda: fc.avg_pool2d_backward(g, [2, 3, 6, 6], [2], [2], [0], False, True, 0)),
        ("adaptive", lambda: fc.adaptive_avg_pool2d_backward(g, [2, 3, 7, 5])),
        ("adaptive rank", lambda: fc.adaptive_avg_pool2d_backward(g, [3, 7, 5])),
        ("adaptive int", lambda: fc.adaptive_avg_pool2d_backward(i, [2, 3, 7, 5])),
    ]


def test_pooling_backwards():
    for (name, on_cpu), (_, on_meta) in zip(pool_grads("cpu"), pool_grads("meta"), strict=True):
        assert outcome(on_meta) == outcome(on_cpu), name


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_pooling_checks_keep_their_messages(device):
    x = fc.ones(1, 2, 5, 5, device=device)
    with pytest.raises(NotImplementedError, match=r"^\[max_pool2d\] \"max_pool2d\" not implemented for 'Bool'"):
        fc.max_pool2d_with_indices(x.to(fc.bool), [2], [], [0], [1])
    with pytest.raises(fc.FlambeauError, match=r"^\[max_pool2d\] pad should be at most half"):
        fc.max_pool2d_with_indices(x, [2], [], [2], [1])
    with pytest.raises(NotImplementedError, match=r"^\[avg_pool2d\] \"avg_pool2d\" not implemented for 'Int'"):
        fc.avg_pool2d(x.to(fc.int32), [2], [], [0])
    with pytest.raises(fc.FlambeauError, match=r"^\[avg_pool2d\] divisor_override must be non-zero"):
        fc.avg_pool2d(x, [2], [], [0], False, True, 0)
    with pytest.raises(fc.FlambeauError, match=r"^\[adaptive_max_pool2d\] output_size must be non-negative"):
        fc.adaptive_max_pool2d(x, [-1])
    with pytest.raises(TypeError, match=r"^\[max_pool_backward\] indices must be int64, got dtype float32"):
        fc.max_pool_backward(x, x, [1, 2, 10, 10])
    with pytest.raises(
        fc.FlambeauError,
        match=r"^\[avg_pool2d_backward\] grad_output has shape \(1, 2, 5, 5\) but the forward output has shape",
    ):
        fc.avg_pool2d_backward(x, [1, 2, 4, 4], [2], [2], [0], False, True, None)
