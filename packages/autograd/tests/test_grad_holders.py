"""The private introspection fb.compile's reuse of table gradients relies on (Note [Reused table gradients]):
``_leaf_has_hooks`` (would backward run a hook of this leaf?) and ``_holders`` (handles of a tensor object,
owners of its memory)."""

from __future__ import annotations

import flambeau_autograd  # noqa: F401 (registers autograd)
import flambeau_core as fc
from flambeau_autograd._C import _holders, _leaf_has_hooks


def test_leaf_has_hooks_sees_tensor_and_post_accumulate_hooks():
    plain, hooked, posted = (fc.zeros(3, requires_grad=True) for _ in range(3))
    assert not _leaf_has_hooks(plain) and not _leaf_has_hooks(fc.zeros(3))
    hooked.register_hook(lambda g: g)
    posted.register_post_accumulate_grad_hook(lambda p: None)
    assert _leaf_has_hooks(hooked) and _leaf_has_hooks(posted)
    (plain * 2).sum().backward()  # a backward alone (its AccumulateGrad node, no hooks) adds none
    assert not _leaf_has_hooks(plain)


def test_leaf_has_hooks_forgets_removed_hooks():
    for register in (
        lambda t: t.register_hook(lambda g: g),
        lambda t: t.register_post_accumulate_grad_hook(lambda p: None),
    ):
        x = fc.zeros(3, requires_grad=True)
        first, second = register(x), register(x)
        first.remove()
        assert _leaf_has_hooks(x)  # the second one remains
        second.remove()
        assert not _leaf_has_hooks(x)
        second.remove()  # a second remove() changes nothing
        assert not _leaf_has_hooks(x)
        third = register(x)  # a hook registered after all were removed counts again
        assert _leaf_has_hooks(x)
        third.remove()
        assert not _leaf_has_hooks(x)


def test_leaf_has_hooks_forgets_removed_node_hooks():
    x = fc.zeros(3, requires_grad=True)
    y = x * 2  # keeps x's AccumulateGrad node alive
    acc = y.grad_fn.next_functions[0][0]
    pre = acc.register_prehook(lambda g: g)
    post = acc.register_hook(lambda grad_inputs, grad_outputs: None)
    pre.remove()
    assert _leaf_has_hooks(x)
    post.remove()
    assert not _leaf_has_hooks(x)


def test_post_accumulate_hooks_run_after_a_removal():
    x = fc.ones(2, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append("a")).remove()
    x.register_post_accumulate_grad_hook(lambda p: seen.append("b"))
    (x * 2).sum().backward()
    assert seen == ["b"]


def test_holders_counts_handles_and_memory_owners():
    w = fc.zeros(4, 2, requires_grad=True)
    w.grad = fc.zeros(4, 2)
    g = w.grad
    assert _holders(g) == (3, 1)  # the .grad slot, the Python object, the call's argument
    kept = [g, g]  # more Python references: the same object
    assert _holders(g) == (3, 1)
    view = g[1:]
    assert _holders(g) == (3, 2)  # a view owns the memory too
    del view, kept
    x = fc.ones(4, 2, requires_grad=True)
    y = (x * g).sum()  # the graph saves g for x's gradient
    assert _holders(g) == (4, 1)
    del y
    assert _holders(g) == (3, 1)
    assert _holders(fc.zeros(2)) == (2, 1)
