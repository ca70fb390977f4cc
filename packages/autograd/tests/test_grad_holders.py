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
