"""flambeau-cuda's sort and topk on a GPU (Note [CUDA sort]) against the CPU: values and indices along any
dim, ascending/descending, largest/smallest, ties (stable), NaN, non-contiguous inputs, every supported dtype,
and argsort/msort/kthvalue (core's composites over them).

Skipped with "no CUDA GPU" elsewhere (tests/cpp/test_sort_math.cpp checks the row sort on the host).
"""

from __future__ import annotations

import pytest
from conftest import requires_gpu

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")


def _values(dtype, shape):
    fb.manual_seed(0)
    x = (fb.randn(*shape) * 3).round()  # many ties
    if dtype == fb.bool:
        return x > 0
    x = x.to(dtype)
    if dtype.is_floating_point:
        x[..., 0] = float("nan")
    return x


DTYPES = [fb.float32, fb.float64, fb.int64, fb.int32, fb.int16, fb.int8, fb.uint8, fb.bool]


def _same(a, b):
    assert a.cpu().tolist() == b.tolist() or str(a.cpu().tolist()) == str(b.tolist())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_cpu(dtype, dim, descending):
    x = _values(dtype, (5, 7, 3))
    v, i = fb.sort(x, dim=dim, descending=descending)
    vc, ic = fb.sort(x.cuda(), dim=dim, descending=descending)
    assert vc.device.type == "cuda" and ic.dtype == fb.int64
    _same(vc, v)
    _same(ic, i)
    _same(fb.argsort(x.cuda(), dim=dim, descending=descending), i)


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64, fb.int64, fb.int32])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 4, 7])
def test_topk_matches_cpu(dtype, largest, k):
    x = _values(dtype, (3, 7)).t()  # non-contiguous
    v, i = fb.topk(x, k, dim=0, largest=largest)
    vc, ic = fb.topk(x.cuda(), k, dim=0, largest=largest)
    _same(vc, v)
    _same(ic, i)


def test_sort_composites_and_errors():
    x = _values(fb.float64, (4, 9))
    _same(fb.msort(x.cuda()), fb.msort(x))
    kv, ki = fb.kthvalue(x.cuda(), 3, dim=1)
    ev, ei = fb.kthvalue(x, 3, dim=1)
    _same(kv, ev)
    _same(ki, ei)
    with pytest.raises(RuntimeError, match=r"\[topk\] k \(10\) is out of range"):
        fb.topk(x.cuda(), 10, dim=1)
    with pytest.raises(TypeError, match=r"\[sort\] with dtype complex64 is not yet implemented on CUDA"):
        fb.sort(fb.zeros(3, dtype=fb.complex64).cuda())
