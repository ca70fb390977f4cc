"""Eval convolutions on a packed weight, with a block's residual add and relu in the kernel's stores.

Note [Packed eval convolution]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
After the epilogue pass (Note [Epilogue pass] in ``_epilogue.py``) has folded each eval batch norm into its
convolution, :func:`rewrite` turns every such 2-D float32 convolution (``conv_bn_folded``, with or without
its relu applied in place) into one call of core's ``_conv_packed`` on a copy of the folded weight packed by
``_pack_conv_weight`` (core's Note [Packed convolution weight]): the direct kernel then skips the packing of
the weight it does on every call, and applies the relu as it stores each output instead of a second pass.

A ResNet block's ``relu(conv(x) + shortcut)`` (the convolution's result read only by the ``add``, the sum
only by the ``relu``) becomes one node at the relu's place: the kernel adds the shortcut's value and applies
the relu as it stores each output, so neither the sum nor the relu makes a pass over the activation.

The folded weight is refolded whenever one of its tensors changed (``FoldedConv``: version counters and
memory), and packed again whenever the folded weight is a new tensor, so a call always reads the current
parameters and statistics. The values are the separate ops' bits (the same kernel and order of sums; the
addition and relu on the stored value). At capture each rewritten node runs once on the recorded inputs
against the recorded result; a disagreement leaves the nodes as they were, with a warning. Without AVX-512
the weight is not packed, and ``_conv_packed`` runs core's AVX2 direct kernel with the same residual and relu
in its stores (core's Note [AVX2 direct convolution]); where neither kernel takes a call (a layout or a size
it does not run), ``_conv_packed`` runs the separate ops itself.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import flambeau_core as fc
from flambeau_core import _C
from flambeau_core._C import _set_grad_enabled

from ._graph import Graph, Node, Ref

Tensor = fc.Tensor

_ADDS = ("add", "__add__", "add_tensor")


class PackedConv:
    """A folded convolution (``FoldedConv``) called through ``_conv_packed``, with a residual and a relu
    (Note [Packed eval convolution]); called with the folded node's seven tensors and the residual."""

    __slots__ = ("folded", "relu", "stride", "padding", "dilation", "groups", "source", "packed")

    def __init__(self, folded: Any, relu: bool, stride: list[int], padding: list[int], dilation: list[int],
                 groups: int) -> None:  # fmt: skip
        self.folded, self.relu = folded, relu
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.source: Tensor | None = None  # the folded weight packed
        self.packed: Tensor | None = None

    def __call__(self, x: Tensor, w: Tensor, b: Tensor | None, gamma: Tensor | None, beta: Tensor | None,
                 mean: Tensor, var: Tensor, residual: Tensor | None = None) -> Tensor:  # fmt: skip
        weight, bias = self.folded.current(w, b, gamma, beta, mean, var)
        if weight is not self.source:
            self.packed, self.source = _C._pack_conv_weight(weight, self.groups), weight
        return _C._conv_packed(
            x, weight, self.packed, bias, self.stride, self.padding, self.dilation, self.groups, residual, self.relu
        )

    def __repr__(self) -> str:
        return f"PackedConv(relu={self.relu})"


def _pair(v: Any, default: int) -> list[int] | None:
    """A 2-D convolution's stride/padding/dilation as two ints, or ``None`` (a string padding, ...)."""
    if v is None:
        return [default, default]
    if type(v) is int:
        return [v, v]
    if type(v) in (list, tuple) and len(v) in (1, 2) and all(type(e) is int for e in v):
        return [v[0], v[-1]]
    return None


def _packed(node: Node, tensor_of: Callable[[Ref], Tensor]) -> PackedConv | None:
    """The :class:`PackedConv` of a ``conv_bn_folded`` node (with its relu in place or not), or ``None``."""
    from ._epilogue import FoldedConv, InPlaceActivation

    target, relu = node.target, False
    if isinstance(target, InPlaceActivation) and target.single and target.activation is fc.relu_:
        target, relu = target.op, True
    if not isinstance(target, FoldedConv) or getattr(target.conv, "__name__", "") != "conv2d":
        return None
    rest = list(target.rest) + [None] * (4 - len(target.rest))
    if len(rest) != 4:
        return None
    stride, padding, dilation = _pair(rest[0], 1), _pair(rest[1], 0), _pair(rest[2], 1)
    groups = 1 if rest[3] is None else rest[3]
    if stride is None or padding is None or dilation is None or type(groups) is not int:
        return None
    w = tensor_of(node.args[1])
    if w.dtype != fc.float32 or w.dim() != 4 or not w.is_cpu:
        return None
    return PackedConv(target, relu, stride, padding, dilation, groups)


def _agrees(node: Node, recorded: Tensor, tensor_of: Callable[[Ref], Tensor]) -> bool:
    """Whether ``node`` run on the recorded inputs gives the recorded result (Note [Packed eval convolution])."""
    from ._capture import _close

    args = [None if a is None else tensor_of(a) for a in node.args]
    grad = fc.is_grad_enabled()
    _set_grad_enabled(False)
    try:
        mine = node.target(*args)
    finally:
        _set_grad_enabled(grad)
    ok = mine.shape == recorded.shape and mine.dtype == recorded.dtype and _close(recorded, mine)
    if not ok:
        warnings.warn(
            "[compile] a convolution on its packed weight disagrees with the eager ops; they run instead",
            stacklevel=6,
        )
    return ok


def rewrite(nodes: list[Node], output: Any, tensor_of: Callable[[Ref], Tensor]) -> list[Node]:
    """Note [Packed eval convolution]: ``nodes`` with their folded eval convolutions on packed weights and
    each ``relu(conv + shortcut)`` merged into its convolution (the nodes' names say which)."""
    if not hasattr(_C, "_conv_packed"):  # a core built before the packed convolution
        return nodes
    out: list[Node] = []
    packed_any = False
    for node in nodes:
        packed = _packed(node, tensor_of) if not node.grad_enabled and node.results == [()] else None
        if packed is not None:
            new = Node(f"conv_packed{'+relu' if packed.relu else ''}", packed, node.args, {}, False,
                       node.first_value, [()])  # fmt: skip
            if _agrees(new, tensor_of(Ref("value", node.first_value)), tensor_of):
                out.append(new)
                packed_any = True
                continue
        out.append(node)
    return _residuals(out, output, tensor_of) if packed_any else nodes


def _residuals(nodes: list[Node], output: Any, tensor_of: Callable[[Ref], Tensor]) -> list[Node]:
    """Each ``relu(add(conv, shortcut))`` of a packed convolution without relu as one node at the relu's place."""
    from ._epilogue import _uses

    graph = Graph(num_inputs=0, constants=[], nodes=nodes, num_values=0)
    graph.output = output
    uses = _uses(graph)
    producer = {n.first_value: k for k, n in enumerate(nodes) if n.results == [()]}
    drop: set[int] = set()
    merged: dict[int, Node] = {}
    for k in range(len(nodes) - 1):
        add, relu = nodes[k], nodes[k + 1]
        if add.name not in _ADDS or relu.name != "relu" or add.grad_enabled or relu.grad_enabled:
            continue
        if add.kwargs or len(add.args) != 2 or relu.kwargs or relu.args != (Ref("value", add.first_value),):
            continue
        if add.results != [()] or relu.results != [()] or uses[add.first_value] != 1:
            continue
        for a, s in (add.args, add.args[::-1]):
            if not (isinstance(a, Ref) and a.kind == "value" and isinstance(s, Ref) and s.kind != "const"):
                continue
            c = producer.get(a.index)
            if c is None or c in drop or uses[a.index] != 1:
                continue
            conv = nodes[c]
            if not isinstance(conv.target, PackedConv) or conv.target.relu:
                continue
            # The convolution moves to the relu's place: nothing between may write a tensor in place.
            if any(n.name.endswith("_") and "+" not in n.name for n in nodes[c + 1 : k]):
                continue
            result, shortcut = tensor_of(a), tensor_of(s)
            if shortcut.shape != result.shape or shortcut.dtype != result.dtype or not shortcut.is_contiguous():
                continue
            t = conv.target
            fused = PackedConv(t.folded, True, t.stride, t.padding, t.dilation, t.groups)
            new = Node("conv_packed+add+relu", fused, (*conv.args, s), {}, False, relu.first_value, [()])
            if not _agrees(new, tensor_of(Ref("value", relu.first_value)), tensor_of):
                continue
            drop |= {c, k}
            merged[k + 1] = new
            break
    return [merged.get(k, n) for k, n in enumerate(nodes) if k not in drop]
