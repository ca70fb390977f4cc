"""Transposed convolutions at the edge of the pointwise fast path, against
PyTorch 2.13 (CPU): 1x1 kernels with stride 1 and no padding but
output_padding > 0 (the output is larger than the input, so the columns are
not the image itself), with dilation, groups, batch 1 and > 1, 1-D and 2-D,
float32 and float64, non-contiguous inputs: the values, with and without bias
(the gradients: packages/nn/tests/test_conv_transpose_edge_grad.py)."""

from __future__ import annotations

import zlib

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

DT = {"float32": (torch.float32, np.float32), "float64": (torch.float64, np.float64)}
TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def noncontig(a: np.ndarray) -> fc.Tensor:
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    t = fc.tensor(wide)[..., ::2]
    assert not t.is_contiguous()
    return t


# (N, C_in, spatial, C_out per group, kernel, stride, padding, output_padding, dilation, groups)
CASES = [
    (1, 2, (1,), 3, (1,), (1,), (0,), (1,), (2,), 1),  # the reported case
    (1, 2, (5,), 3, (1,), (1,), (0,), (1,), (2,), 1),
    (3, 2, (4,), 3, (1,), (1,), (0,), (1,), (3,), 1),
    (1, 4, (3,), 1, (1,), (1,), (0,), (2,), (3,), 2),
    (2, 3, (7,), 2, (1,), (1,), (0,), (0,), (1,), 1),  # the pointwise path proper
    (1, 2, (3, 4), 3, (1, 1), (1, 1), (0, 0), (1, 0), (2, 1), 1),
    (1, 2, (3, 4), 3, (1, 1), (1, 1), (0, 0), (0, 1), (1, 2), 1),
    (1, 2, (2, 3), 2, (1, 1), (1, 1), (0, 0), (1, 1), (2, 2), 1),
    (2, 4, (3, 3), 2, (1, 1), (1, 1), (0, 0), (1, 2), (2, 3), 2),
    (5, 3, (2, 5), 1, (1, 1), (1, 1), (0, 0), (1, 1), (3, 2), 3),  # depthwise (the direct kernels)
    (1, 3, (4, 4), 2, (1, 1), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (2, 2, (3, 3), 3, (1, 2), (1, 1), (0, 0), (1, 1), (2, 2), 1),  # not 1x1: im2col path, for reference
    (1, 2, (3, 3), 3, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("contig", [True, False])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, (c[0], c[1], *c[2], *c[7], *c[8]))))
def test_conv_transpose_output_padding_matches_torch(case, dtype, contig):
    N, Cin, sp, Cog, k, s, p, op, d, G = case
    tdt, ndt = DT[dtype]
    rng = np.random.default_rng(zlib.crc32(repr((case, dtype)).encode()))
    x = rng.standard_normal((N, Cin, *sp)).astype(ndt)
    w = rng.standard_normal((Cin, Cog, *k)).astype(ndt)
    b = rng.standard_normal(Cog * G).astype(ndt)
    tconv = torch.nn.functional.conv_transpose1d if len(sp) == 1 else torch.nn.functional.conv_transpose2d
    ty = tconv(
        torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=s, padding=p, output_padding=op, groups=G, dilation=d
    )

    fx = fc.tensor(x) if contig else noncontig(x)
    fw = fc.tensor(w) if contig else noncontig(w)
    args = (list(s), list(p), list(d), True, list(op), G)
    y = fc.convolution(fx, fw, fc.tensor(b), *args)
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(to_numpy(y), ty.numpy(), **TOL[dtype])
    y0 = fc.convolution(fx, fw, None, *args)
    np.testing.assert_allclose(to_numpy(y0), ty.numpy() - b.reshape(-1, *([1] * len(sp))), **TOL[dtype])


def test_output_padding_must_be_below_stride_or_dilation():
    x, w = fc.zeros(1, 2, 3), fc.zeros(2, 3, 1)
    with pytest.raises(fc.FlambeauError, match="output_padding"):
        fc.convolution(x, w, None, [1], [0], [1], True, [1], 1)
