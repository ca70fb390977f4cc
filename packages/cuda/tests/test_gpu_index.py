"""flambeau-cuda's advanced indexing on a GPU against the CPU: x[idx], x[mask], x[idx] = v, index_put_ with
accumulate (duplicates add up), masked_select and masked_scatter (core's composites over index/index_put_),
and the gradient of x[idx] (index_put_ with accumulate).

Skipped with "no CUDA GPU" elsewhere (test_index_host.py checks the same plan on cpu tensors).
"""

from __future__ import annotations

import pytest
from conftest import requires_gpu

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")


def _x():
    fb.manual_seed(0)
    return fb.randn(4, 5, 6, dtype=fb.float64)


@pytest.mark.parametrize(
    "key",
    [
        lambda: (fb.tensor([0, 2, -1]),),
        lambda: (slice(None), fb.tensor([[1, 4], [0, -5]])),
        lambda: (fb.tensor([0, 3]), slice(None), fb.tensor([5, 0])),
        lambda: (_x() > 0,),
        lambda: (slice(None), fb.tensor([1, 3]), slice(1, 4)),
    ],
)
def test_getitem_and_setitem_match_cpu(key):
    x, k = _x(), key()
    kc = tuple(t.cuda() if isinstance(t, fb.Tensor) else t for t in k)
    assert x.cuda()[kc].cpu().tolist() == x[k].tolist()
    y, yc = x.clone(), x.cuda()
    y[k] = 3.5
    yc[kc] = 3.5
    assert yc.cpu().tolist() == y.tolist()


def test_index_put_accumulate_and_masked_ops():
    x = fb.zeros(5, dtype=fb.float64).cuda()
    x.index_put_(
        (fb.tensor([0, 3, 0, 0]).cuda(),), fb.tensor([1.0, 2.0, 3.0, 4.0], dtype=fb.float64).cuda(), accumulate=True
    )
    assert x.cpu().tolist() == [8.0, 0.0, 0.0, 2.0, 0.0]
    a = _x()
    m = a > 0.5
    assert fb.masked_select(a.cuda(), m.cuda()).cpu().tolist() == fb.masked_select(a, m).tolist()
    src = fb.arange(120.0, dtype=fb.float64).reshape(4, 5, 6)
    assert a.cuda().masked_scatter(m.cuda(), src.cuda()).cpu().tolist() == a.masked_scatter(m, src).tolist()


def test_index_gradient_matches_cpu():
    x = _x().requires_grad_(True)
    idx = fb.tensor([0, 2, 2, 1])
    x[idx].sum().backward()
    xc = _x().cuda().requires_grad_(True)
    xc[idx.cuda()].sum().backward()
    assert xc.grad.cpu().tolist() == x.grad.tolist()


def test_index_errors():
    x = _x().cuda()
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for dimension 0 with size 4"):
        x[fb.tensor([0, 4]).cuda()]
