"""out= and autograd, against PyTorch 2.13 (Note [out= and autograd] in
flambeau-core's src/python/arg_parser.cpp): an op called with out= is not
differentiable, so when grad mode records and an input (or out itself)
requires grad it raises a RuntimeError naming the op, as PyTorch's
"functions with out=... arguments don't support automatic differentiation";
under no_grad (or when nothing requires grad) it writes out as usual.
"""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fb
import pytest
import torch

X = [[0.5, -1.25, 2.0], [3.5, 0.75, -2.5]]

# (id, call(m, x, out)): x is a (2, 3) float tensor that may require grad.
CALLS = [
    ("exp", lambda m, x, out: m.exp(x, out=out)),
    ("add", lambda m, x, out: m.add(x, 1, out=out)),
    ("sum", lambda m, x, out: m.sum(x, 0, out=out)),
    ("mean", lambda m, x, out: m.mean(x, 1, out=out)),
    ("cumsum", lambda m, x, out: m.cumsum(x, 1, out=out)),
    ("mm", lambda m, x, out: m.mm(x, x.t(), out=out)),
    ("matmul", lambda m, x, out: m.matmul(x, x.t(), out=out)),
    ("softmax", lambda m, x, out: m.softmax(x, 1, out=out)),
    ("where", lambda m, x, out: m.where(x > 0, x, 0.0 * x, out=out)),
    ("stack", lambda m, x, out: m.stack([x, x], out=out)),
    ("dot", lambda m, x, out: m.dot(x[0], x[1], out=out)),
    ("outer", lambda m, x, out: m.outer(x[0], x[1], out=out)),
    ("linalg.vecdot", lambda m, x, out: m.linalg.vecdot(x, x, out=out)),
    ("linalg.inv", lambda m, x, out: m.linalg.inv(x[:, :2], out=out)),
]


def _name(case):
    return case[0].split(".")[-1]


@pytest.mark.parametrize("case", CALLS, ids=[c[0] for c in CALLS])
def test_input_requiring_grad_raises_as_torch(case):
    name, call = case
    xt = torch.tensor(X, requires_grad=True)
    if name == "softmax":
        # PyTorch records a node that raises at backward (softmax.out is composite there):
        # flambeau refuses at the call, as for every other op.
        tout = torch.empty(0)
        call(torch, xt, tout)
        with pytest.raises(RuntimeError):
            tout.sum().backward()
    else:
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            call(torch, xt, torch.empty(0))
    x = fb.tensor(X, requires_grad=True)
    out = fb.empty(0)
    with pytest.raises(RuntimeError, match=r"functions with out=\.\.\. arguments don't support automatic") as info:
        call(fb, x, out)
    assert str(info.value).startswith(f"[{name}]") or str(info.value).startswith(f"[{case[0]}]"), str(info.value)
    assert not isinstance(info.value, fb.FlambeauError)  # PyTorch's RuntimeError, a state error
    assert out.grad_fn is None and not out.requires_grad


@pytest.mark.parametrize("case", CALLS, ids=[c[0] for c in CALLS])
def test_under_no_grad_out_is_written(case):
    _, call = case
    x = fb.tensor(X, requires_grad=True)
    xt = torch.tensor(X, requires_grad=True)
    with fa.no_grad():
        out = fb.empty(0)
        r = call(fb, x, out)
    with torch.no_grad():
        tout = torch.empty(0)
        call(torch, xt, tout)
    assert r is out and not out.requires_grad and out.grad_fn is None
    assert tuple(out.shape) == tuple(tout.shape)
    torch.testing.assert_close(torch.tensor(out.tolist()), tout, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CALLS[:6], ids=[c[0] for c in CALLS[:6]])
def test_out_requiring_grad_raises_as_torch(case):
    _, call = case
    tout = torch.zeros(1, requires_grad=True)
    with pytest.raises(RuntimeError):
        call(torch, torch.tensor(X), tout)
    out = fb.zeros(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        call(fb, fb.tensor(X), out)


def test_factory_out_requiring_grad_raises():
    with pytest.raises(RuntimeError):
        torch.zeros(2, out=torch.zeros(2, requires_grad=True))
    with pytest.raises(RuntimeError, match=r"^\[zeros\] functions with out="):
        fb.zeros(2, out=fb.zeros(2, requires_grad=True))


def test_tuple_out_with_grad_raises():
    x = fb.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^\[sort\] functions with out="):
        fb.sort(x, out=(fb.empty(0), fb.empty(0, dtype=fb.int64)))
    A = fb.tensor([[2.0, 0.5], [0.5, 3.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^\[linalg.qr\] functions with out="):
        fb.linalg.qr(A, out=(fb.empty(0), fb.empty(0)))
    At = torch.tensor([[2.0, 0.5], [0.5, 3.0]], requires_grad=True)
    with pytest.raises(RuntimeError):
        torch.linalg.qr(At, out=(torch.empty(0), torch.empty(0)))


def test_without_out_still_differentiable():
    x = fb.tensor(X, requires_grad=True)
    fb.sum(fb.mm(x, x.t())).backward()
    xt = torch.tensor(X, requires_grad=True)
    torch.sum(torch.mm(xt, xt.t())).backward()
    torch.testing.assert_close(torch.tensor(x.grad.tolist()), xt.grad)
