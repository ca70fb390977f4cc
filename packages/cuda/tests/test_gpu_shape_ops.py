"""flambeau-cuda's arange, flip, tril and triu on a GPU against the CPU. Skipped with "no CUDA GPU" elsewhere."""

from __future__ import annotations

import pytest
from conftest import requires_gpu

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")


@pytest.mark.parametrize("args", [(5,), (2, 11, 3), (1.5, -2.0, -0.25), (0,), (-(2**40), -(2**40) + 7, 2)], ids=str)
@pytest.mark.parametrize("dtype", [None, fb.float32, fb.float64, fb.int64, fb.int32])
def test_arange_matches_cpu(args, dtype):
    if dtype is not None and not dtype.is_floating_point and any(isinstance(a, float) for a in args):
        pytest.skip("float steps with an integer dtype")
    kw = {} if dtype is None else {"dtype": dtype}
    got = fb.arange(*args, device="cuda", **kw)
    assert got.device.type == "cuda"
    assert got.cpu().tolist() == fb.arange(*args, **kw).tolist()


def test_flip_tril_triu_match_cpu():
    fb.manual_seed(0)
    x = fb.randn(3, 4, 5)
    assert fb.flip(x.cuda(), [0, 2]).cpu().tolist() == fb.flip(x, [0, 2]).tolist()
    for d in (-2, 0, 1):
        assert fb.tril(x.cuda(), d).cpu().tolist() == fb.tril(x, d).tolist()
        assert fb.triu(x.cuda(), d).cpu().tolist() == fb.triu(x, d).tolist()


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64, fb.int64, fb.int32, fb.bool])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod_match_cpu(dtype, dim):
    fb.manual_seed(0)
    x = (fb.rand(3, 4, 5) + 0.5).to(dtype) if dtype != fb.bool else fb.rand(3, 4, 5) > 0.5
    x = x.transpose(0, 2)  # not contiguous
    for fn in (fb.cumsum, fb.cumprod):
        got, expected = fn(x.cuda(), dim), fn(x, dim)
        assert got.dtype == expected.dtype
        tol = 1e-5 if dtype == fb.float32 else 1e-12
        for a, b in zip(got.cpu().flatten().tolist(), expected.flatten().tolist(), strict=True):
            assert abs(a - b) <= tol * max(1.0, abs(b))
