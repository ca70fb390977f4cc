"""Gradients through fb.sparse (COO tensors) against torch: to the values and to the dense operand."""

from __future__ import annotations

import flambeau as fb
import numpy as np
import pytest
import torch


def _fb(t: torch.Tensor, requires_grad: bool = False) -> fb.Tensor:
    out = fb.tensor(t.detach().numpy())
    return out.requires_grad_(True) if requires_grad else out


# Local: the meta-package's tests have no shared helper module, and only this file compares this way.
def _close(ours: fb.Tensor, theirs: torch.Tensor) -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def _coo(seed: int, m: int, k: int, nnz: int):
    g = torch.Generator().manual_seed(seed)
    indices = torch.stack([torch.randint(0, m, (nnz,), generator=g), torch.randint(0, k, (nnz,), generator=g)])
    values = torch.randn(nnz, generator=g, dtype=torch.float64)
    dense = torch.randn(k, 3, generator=g, dtype=torch.float64)
    return indices, values, dense


@pytest.mark.parametrize("spelling", ["sparse.mm", "mm", "spmm", "matmul_operator"])
@pytest.mark.parametrize("nnz", [0, 1, 9, 30])  # 30 > 5x4 entries: duplicates for sure
def test_mm_backward_to_values_and_dense_matches_torch(spelling, nnz):
    i, v, d = _coo(seed=nnz, m=5, k=4, nnz=nnz)
    tv, td = v.clone().requires_grad_(), d.clone().requires_grad_()
    ov, od = _fb(v, True), _fb(d, True)
    weight = torch.linspace(-1, 1, 15, dtype=torch.float64).reshape(5, 3)
    theirs = torch.sparse.mm(torch.sparse_coo_tensor(i, tv, (5, 4)), td)
    a = fb.sparse_coo_tensor(_fb(i), ov, (5, 4))
    ours = {
        "sparse.mm": lambda: fb.sparse.mm(a, od),
        "mm": lambda: fb.mm(a, od),
        "spmm": lambda: fb.spmm(a, od),
        "matmul_operator": lambda: a @ od,
    }[spelling]()
    _close(ours, theirs)
    (theirs * weight).sum().backward()
    (ours * _fb(weight)).sum().backward()
    _close(od.grad, td.grad)
    _close(ov.grad, tv.grad)
    assert a.requires_grad and a.grad is not None
    _close(a.grad.to_dense(), torch.sparse_coo_tensor(i, tv.grad, (5, 4)).to_dense())


def test_coalesce_to_dense_and_sum_backward_match_torch():
    i, v, _ = _coo(seed=3, m=3, k=3, nnz=12)
    tv, ov = v.clone().requires_grad_(), _fb(v, True)
    weight = torch.arange(9, dtype=torch.float64).reshape(3, 3)
    t = torch.sparse_coo_tensor(i, tv, (3, 3)).coalesce()
    o = fb.sparse_coo_tensor(_fb(i), ov, (3, 3)).coalesce()
    ((t.to_dense() * weight).sum() + torch.sparse.sum(t) * 2).backward()
    ((o.to_dense() * _fb(weight)).sum() + fb.sparse.sum(o) * 2).backward()
    _close(ov.grad, tv.grad)


def test_to_sparse_backward_reaches_the_dense_tensor():
    x = torch.tensor([[0.0, 2.0, 0.0], [1.5, 0.0, -3.0]], dtype=torch.float64)
    ox = _fb(x, True)
    other = torch.ones(3, 2, dtype=torch.float64)
    # torch: the gradient of a dense tensor through to_sparse() and sparse.mm is masked to its nonzeros.
    tx = x.clone().requires_grad_()
    torch.sparse.mm(tx.to_sparse(), other).sum().backward()
    fb.sparse.mm(ox.to_sparse(), _fb(other)).sum().backward()
    _close(ox.grad, tx.grad.to_dense())


def test_gradcheck_of_a_graph_convolution():
    # out = A @ (X @ W): the gradient with respect to W and the adjacency values, by finite differences.
    i = fb.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 2, 0]])
    values = fb.tensor([0.5, 0.5, 0.25, 0.25, 1.0, 2.0], dtype=fb.float64, requires_grad=True)
    x = fb.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]], dtype=fb.float64)
    w = fb.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], dtype=fb.float64, requires_grad=True)

    def gcn(values, w):
        return fb.sparse.mm(fb.sparse_coo_tensor(i, values, (3, 3)), x @ w)

    assert fb.autograd.gradcheck(gcn, (values, w))


def test_mm_and_matmul_keep_their_dense_forms():
    a, b = fb.ones(2, 3), fb.ones(3, 2)
    out = fb.empty(2, 2)
    assert fb.mm(a, b, out=out) is out and out.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert fb.matmul(a, fb.ones(3)).tolist() == [3.0, 3.0]
    s = fb.sparse_coo_tensor([[0], [1]], [2.0], (2, 3))
    with pytest.raises(TypeError, match=r"\[mm\] out= is not supported with a sparse first operand"):
        fb.mm(s, b, out=out)
    with pytest.raises(RuntimeError, match=r"\[mm\] shapes"):
        fb.mm(a, a)


def test_on_the_simulated_device_as_on_the_cpu():
    # Device-generic: made of core ops only, a sparse tensor works wherever its values live.
    fb.utils.register_sim()
    i, v, d = _coo(seed=11, m=4, k=3, nnz=10)
    results = {}
    for device in ("cpu", "sim"):
        values, dense = _fb(v).to(device).requires_grad_(), _fb(d).to(device).requires_grad_()
        a = fb.sparse_coo_tensor(_fb(i), values, (4, 3))
        assert a.device.type == device and a._indices().device.type == device
        out = fb.sparse.mm(a, dense) + fb.sparse.sum(a.coalesce(), dim=1).to_dense().unsqueeze(1)
        out.sum().backward()
        results[device] = [t.cpu().tolist() for t in (out, values.grad, dense.grad, a.coalesce().to_dense())]
    assert results["sim"] == results["cpu"]
