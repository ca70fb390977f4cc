"""Higher-level derivatives built on ``grad``: ``vjp``, ``jacobian``, ``hessian``.

Example:
    >>> import flambeau_core as fc
    >>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)
    >>> jacobian(lambda t: t * t, x).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    >>> hessian(lambda t: (t ** 3).sum(), x).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flambeau_core

__all__ = ["vjp", "jacobian", "hessian"]


def _prepare(x: Any) -> Any:
    return x.detach().requires_grad_()


def vjp(fn: Callable, inputs: Any, v: Any = None, create_graph: bool = False) -> tuple:
    """Returns ``(fn(inputs), v^T J)`` for one tensor input and one tensor output
    (``v`` defaults to 1 for a scalar output)."""
    from flambeau_autograd import grad

    x = _prepare(inputs)
    out = fn(x)
    (g,) = grad(out, x, v, create_graph=create_graph, allow_unused=True, materialize_grads=True)
    return (out if create_graph else out.detach()), g


def jacobian(fn: Callable, inputs: Any, create_graph: bool = False) -> Any:
    """The Jacobian of ``fn`` at ``inputs`` (one tensor in, one tensor out), of
    shape ``out.shape + inputs.shape``: one backward per output element."""
    from flambeau_autograd import grad

    x = _prepare(inputs)
    out = fn(x)
    n = out.numel()
    if n == 0 or not out.requires_grad:  # out does not depend on x
        return flambeau_core.zeros(*out.shape, *x.shape, dtype=x.dtype)
    rows = []
    flat_out = out.reshape(n)
    for k in range(n):
        (g,) = grad(flat_out[k], x, retain_graph=True, create_graph=create_graph, materialize_grads=True)
        rows.append(g.reshape(x.numel()))
    return flambeau_core.stack(rows, 0).reshape(tuple(out.shape) + tuple(x.shape))


def hessian(fn: Callable, inputs: Any) -> Any:
    """The Hessian of a scalar function ``fn`` at ``inputs``: the Jacobian of its gradient."""
    from flambeau_autograd import grad

    def gradient(t: Any) -> Any:
        (g,) = grad(fn(t), t, create_graph=True, materialize_grads=True)
        return g

    return jacobian(gradient, inputs)
