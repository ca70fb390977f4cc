"""fb.func.functionalize and fb.func.debug_unwrap against torch.func's on the same inputs."""

from __future__ import annotations

import doctest

import flambeau as fb
import flambeau.func._eager_transforms
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
from func_testing import close, pair


def _mutates_input_and_intermediate(x, y):
    flat = y.view(-1)
    flat.add_(1)  # a mutation of an input through a view
    z = x * 2
    z.mul_(3)  # a mutation of an intermediate
    return z, y


def test_functionalize_writes_input_mutations_back_as_torch():
    rng = np.random.default_rng(0)
    (x, tx), (y, ty) = pair(rng, 2, 3), pair(rng, 2, 3)
    out = fb.func.functionalize(_mutates_input_and_intermediate)(x, y)
    tout = torch.func.functionalize(_mutates_input_and_intermediate)(tx, ty)
    close(out, tout)
    close((x, y), (tx, ty))
    # the mutated input that is returned is not the caller's tensor (torch's neither)
    assert out[1] is not y and tout[1] is not ty
    out[1].fill_(7.0)
    tout[1].fill_(7.0)
    close(y, ty)


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_functionalize_outputs_alias_only_unmutated_inputs_as_torch(remove):
    cases = {
        "identity": lambda t: t,
        "view": lambda t: t.view(-1),
        "row": lambda t: t[1],
        "transpose": lambda t: t.t(),
        "mutated view": lambda t: t.add_(1).view(-1),
        "mutated identity": lambda t: t.mul_(2),
    }
    for name, fn in cases.items():
        x, tx = fb.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
        out = fb.func.functionalize(fn, remove=remove)(x)
        tout = torch.func.functionalize(fn, remove=remove)(tx)
        close(out, tout)
        close(x, tx)
        assert (out is x) == (tout is tx), name
        out.fill_(-1.0)
        tout.fill_(-1.0)
        close(x, tx)  # the caller's tensor changes exactly when torch's does


def test_functionalize_view_of_a_strided_input_is_the_same_view_as_torch():
    x, tx = fb.arange(12.0).reshape(3, 4).t(), torch.arange(12.0).reshape(3, 4).t()
    out = fb.func.functionalize(lambda t: t[1:, ::2])(x)
    tout = torch.func.functionalize(lambda t: t[1:, ::2])(tx)
    close(out, tout)
    assert out.stride() == tout.stride() and out.storage_offset() == tout.storage_offset()


def test_functionalize_takes_pytrees_keywords_and_other_arguments():
    def f(d, n, *, out):
        d["a"].add_(n)
        out.copy_(d["b"] * n)
        return {"sum": (d["a"] + out).sum()}

    a, b, o = fb.zeros(2), fb.ones(2), fb.zeros(2)
    ta, tb, to = torch.zeros(2), torch.ones(2), torch.zeros(2)
    close(
        fb.func.functionalize(f)({"a": a, "b": b}, 3, out=o), torch.func.functionalize(f)({"a": ta, "b": tb}, 3, out=to)
    )
    close((a, b, o), (ta, tb, to))


def test_functionalize_differentiates_through_mutations_as_torch():
    def f(a):
        a.mul_(2)
        b = a.clone()
        b.add_(a)
        return (b * b).sum()

    rng = np.random.default_rng(1)
    w, tw = pair(rng, 3)
    w.requires_grad_(True)
    tw.requires_grad_(True)
    a, ta = w * 1.0, tw * 1.0  # non-leaf inputs: a mutation of them is recorded
    fb.func.functionalize(f)(a).backward()
    torch.func.functionalize(f)(ta).backward()
    close(w.grad, tw.grad)
    close(a.detach(), ta.detach())


def test_functionalize_mutating_a_leaf_that_requires_grad_raises_as_torch():
    w, tw = fb.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    words = "a leaf Variable that requires grad is being used in an in-place operation"
    with pytest.raises(RuntimeError, match=words):
        torch.func.functionalize(lambda a: a.add_(1))(tw)
    with pytest.raises(RuntimeError, match=words):
        fb.func.functionalize(lambda a: a.add_(1))(w)
    assert w.tolist() == tw.tolist() == [1.0, 1.0]


def test_functionalize_composes_with_grad_as_torch():
    def f(x):
        y = x.clone()
        y.sin_()
        return y.sum()

    x, tx = pair(np.random.default_rng(2), 4)
    close(fb.func.grad(fb.func.functionalize(f))(x), torch.func.grad(torch.func.functionalize(f))(tx))


def test_functionalize_composes_with_vmap_as_torch():
    def f(x):
        x.add_(1)
        return x * 2

    for outer, inner in [("vmap", "functionalize"), ("functionalize", "vmap")]:
        x, tx = pair(np.random.default_rng(5), 3, 2)
        ours = getattr(fb.func, outer)(getattr(fb.func, inner)(f))(x)
        theirs = getattr(torch.func, outer)(getattr(torch.func, inner)(f))(tx)
        close(ours, theirs)
        close(x, tx)


def test_functionalize_refuses_an_unknown_remove_as_torch():
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        torch.func.functionalize(lambda t: t, remove="views")
    with pytest.raises(
        FlambeauError, match=r"^\[func.functionalize\] .*received invalid argument for remove=views"
    ) as info:
        fb.func.functionalize(lambda t: t, remove="views")
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)
    assert "mutations_and_views" in str(info.value)


def test_debug_unwrap_gives_the_batch_as_torch():
    x, tx = pair(np.random.default_rng(3), 5, 3)
    seen, tseen = [], []
    out = fb.func.vmap(lambda t: seen.append(fb.func.debug_unwrap(t)) or t * 2)(x)
    torch.func.vmap(lambda t: tseen.append(torch.func.debug_unwrap(t)) or t * 2)(tx)
    close(seen[0], tseen[0])
    close(out, tx * 2)


def test_debug_unwrap_inside_a_nested_vmap_as_torch():
    x, tx = pair(np.random.default_rng(4), 2, 3, 4)

    def record(unwrap, seen):
        def f(t):
            y = t * 2  # an op's result, batched like its input
            seen.append((unwrap(y), unwrap(y, recurse=False), unwrap(unwrap(y, recurse=False))))
            return y

        return f

    seen, tseen = [], []
    fb.func.vmap(fb.func.vmap(record(fb.func.debug_unwrap, seen)))(x)
    torch.func.vmap(torch.func.vmap(record(torch.func.debug_unwrap, tseen)))(tx)
    full, one_level, twice = seen[0]
    tfull, tone_level, ttwice = tseen[0]
    close(full, tfull)
    close(twice, ttwice)
    # one level unwrapped is still batched over the outer vmap: a sample of it has torch's shape
    assert isinstance(one_level, fb.func._vmap.BatchedTensor)
    assert tuple(one_level.shape) == tuple(tone_level.shape) == (3, 4)


def test_debug_unwrap_returns_other_values_as_they_are():
    x = fb.ones(2)
    assert fb.func.debug_unwrap(x) is x
    assert fb.func.debug_unwrap(x, recurse=False) is x
    assert fb.func.debug_unwrap(3.0) == 3.0
    seen = []
    fb.func.grad(lambda t: seen.append(fb.func.debug_unwrap(t)) or (t * t).sum())(x)
    assert isinstance(seen[0], fb.Tensor) and seen[0].tolist() == [1.0, 1.0]


def test_eager_transforms_docstring_examples_run():
    result = doctest.testmod(flambeau.func._eager_transforms, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
