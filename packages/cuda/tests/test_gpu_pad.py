"""flambeau-cuda's _pad_nd and its backward on a GPU against the CPU (F.pad, every mode, dtypes, negative pads,
gradients). Skipped with "no CUDA GPU" elsewhere; the same code is checked on the host by test_pad_host.py."""

from __future__ import annotations

import pytest
from conftest import requires_gpu

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")
F = pytest.importorskip("flambeau_nn.functional")


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64, fb.int64, fb.bool])
@pytest.mark.parametrize("pad", [[1, 2], [-1, 2, 0, 3], [1, 0, 2, 1, 0, 2]], ids=str)
def test_constant_pad_matches_cpu(pad, dtype):
    fb.manual_seed(0)
    x = (fb.randn(2, 3, 4, 5) * 3).round()
    x = (x > 0) if dtype == fb.bool else x.to(dtype)
    x = x.transpose(1, 3)
    got = F.pad(x.cuda(), pad, value=1.0)
    assert got.device.type == "cuda"
    assert got.cpu().tolist() == F.pad(x, pad, value=1.0).tolist()


@pytest.mark.parametrize(
    ("mode", "shape", "pad"),
    [
        ("constant", (2, 3, 5), [2, -1]),
        ("reflect", (2, 3, 5), [2, 1]),
        ("reflect", (1, 2, 4, 5), [1, 3, 2, 0]),
        ("replicate", (2, 4, 5), [0, 6, 3, 2]),
        ("replicate", (1, 2, 3, 2, 2), [2, 1, 0, 3, 1, 1]),
        ("circular", (1, 2, 4, 5), [1, 2, 3, 0]),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", [fb.float32, fb.float64])
def test_pad_modes_and_gradients_match_cpu(mode, shape, pad, dtype):
    fb.manual_seed(1)
    x = fb.randn(*shape, dtype=dtype)
    xc = x.cuda().requires_grad_(True)
    xh = x.clone().requires_grad_(True)
    yc, yh = F.pad(xc, pad, mode=mode), F.pad(xh, pad, mode=mode)
    assert yc.cpu().tolist() == yh.tolist()
    g = fb.randn(*yh.shape, dtype=dtype)
    (yc * g.cuda()).sum().backward()
    (yh * g).sum().backward()
    assert xc.grad.device.type == "cuda"
    tol = 1e-5 if dtype == fb.float32 else 1e-12
    assert (xc.grad.cpu() - xh.grad).abs().max().item() <= tol
