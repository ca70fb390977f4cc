"""The meta steps of convolution and its weight gradient (one rule, conv::check_and_output_shape).

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
from meta_helpers import cpu_tensor, meta_and_cpu

# ---- convolution: one rule (conv::check_and_output_shape) for the cpu, CUDA and meta ----

# (input shape, weight shape, bias, stride, padding, dilation, transposed, output_padding, groups)
CONV_CASES = [
    ((2, 4, 7, 6), (6, 4, 3, 3), True, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
    ((2, 4, 7, 6), (6, 2, 3, 2), False, [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
    ((2, 4, 9), (4, 3, 3), True, [2], [1], [1], True, [1], 1),
    ((1, 4, 5, 5), (4, 2, 2, 2), False, [2, 2], [0, 0], [1, 1], True, [0, 1], 2),
    ((2, 4, 2, 2), (6, 4, 3, 3), False, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),  # kernel too large
    ((2, 4, 7, 6), (6, 3, 3, 3), False, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),  # channels
    ((2, 4, 7, 6), (6, 4, 3, 3), False, [0, 1], [0, 0], [1, 1], False, [0, 0], 1),  # stride 0
    ((4, 7, 6), (6, 4, 3, 3), False, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),  # unbatched
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_convolution(case, dtype):
    sx, sw, has_bias, *params = case
    out_channels = sw[1] * params[-1] if params[3] else sw[0]
    b = cpu_tensor((out_channels,), dtype) if has_bias else None
    meta, cpu = meta_and_cpu(lambda x, w, b: fc.convolution(x, w, b, *params), cpu_tensor(sx, dtype),
                             cpu_tensor(sw, dtype), b)  # fmt: skip
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok":
        theirs = torch.convolution(torch.ones(sx), torch.ones(sw), None, *params)
        assert tuple(theirs.shape) == cpu[1][0]
        for grad_shape, expected in [(cpu[1][0], ("ok", (sw, dtype))), ((1, 1, 1), ("error", "FlambeauError"))]:
            meta, cpu_grad = meta_and_cpu(lambda g, x: fc._C._convolution_backward_weight(g, x, list(sw), *params),
                                          cpu_tensor(grad_shape, dtype), cpu_tensor(sx, dtype))  # fmt: skip
            assert meta == cpu_grad, (meta, cpu_grad)
            assert cpu_grad[:2] == expected, cpu_grad


def test_convolution_backward_weight_checks():
    x, g = fc.ones(2, 4, 7, 6), fc.ones(2, 6, 5, 4)
    for device in ["cpu", "meta"]:
        x, g = x.to(device), g.to(device)
        with pytest.raises(fc.FlambeauError, match=r"^\[convolution_backward_weight\] weight_size \[6, 4, 3\]"):
            fc._C._convolution_backward_weight(g, x, [6, 4, 3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        with pytest.raises(TypeError, match=r"^\[convolution_backward_weight\] grad_output type \(float64\)"):
            fc._C._convolution_backward_weight(
                g.to(fc.float64), x, [6, 4, 3, 3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1
            )
        with pytest.raises(fc.FlambeauError, match=r"expected grad_output of size \[2, 6, 5, 4\], got \[2, 6, 5, 5\]"):
            fc._C._convolution_backward_weight(g[..., :1].expand(2, 6, 5, 5), x, [6, 4, 3, 3], [1, 1], [0, 0], [1, 1],
                                           False, [0, 0], 1)  # fmt: skip
