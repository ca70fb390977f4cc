"""Nested containers of tensors (pytrees): tuples, lists, dicts and namedtuples, flattened to their leaves.

``None`` is a node with no leaves (a function may return it as part of its aux data); anything else that
is not a container is a leaf.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# A spec is None for a leaf, or (container type, dict keys or None, child specs).
TreeSpec = Any


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """``(leaves, spec)`` with the leaves in depth-first order; ``tree_unflatten(leaves, spec)`` rebuilds it."""
    leaves: list = []

    def walk(node: Any) -> TreeSpec:
        if node is None:
            return (type(None), None, ())
        if isinstance(node, dict):
            return (dict, tuple(node), tuple(walk(v) for v in node.values()))
        if isinstance(node, (tuple, list)):
            return (type(node), None, tuple(walk(v) for v in node))
        leaves.append(node)
        return None

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """The tree of ``spec`` with ``leaves`` in place of its leaves (the inverse of ``tree_flatten``)."""
    it = iter(leaves)

    def build(s: TreeSpec) -> Any:
        if s is None:
            return next(it)
        kind, keys, children = s
        if kind is type(None):
            return None
        values = [build(c) for c in children]
        if kind is dict:
            return dict(zip(keys, values, strict=True))
        if issubclass(kind, tuple) and hasattr(kind, "_fields"):
            return kind(*values)
        return kind(values)

    return build(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def spec_str(spec: TreeSpec) -> str:
    """A short readable form of a spec for error messages: ``(*, {'a': *})``."""
    if spec is None:
        return "*"
    kind, keys, children = spec
    if kind is type(None):
        return "None"
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {spec_str(c)}" for k, c in zip(keys, children, strict=True)) + "}"
    inner = ", ".join(spec_str(c) for c in children)
    if kind is list:
        return f"[{inner}]"
    if kind is tuple:
        return f"({inner},)" if len(children) == 1 else f"({inner})"
    return f"{kind.__name__}({inner})"
