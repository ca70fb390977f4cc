"""Epilogues of GEMMs and convolutions in a captured graph: batch norm folded into an eval convolution, an
activation applied in place on a linear's or convolution's fresh result, an eval linear on a packed weight, a
relu moved after its max pooling.

Note [Epilogue pass]
:func:`fold` runs on a captured graph (Note [Captured graph]) before the elementwise fusion (Note
[Elementwise fusion] in ``_fusion.py``) and rewrites four patterns (the first two each into one node):

* **Batch norm folded into a convolution** (eval, no grad): ``conv1d``/``conv2d(x, W, b, ...)`` whose result only
  ``native_batch_norm(., gamma, beta, running_mean, running_var, training=False, momentum, eps)`` reads,
  both under ``no_grad``, the batch norm's two statistics outputs unused. With ``s = gamma / sqrt(running_var
  + eps)``, batch norm of the convolution is the convolution with weight ``W * s`` (per output channel) and
  bias ``(b - running_mean) * s + beta``: one convolution, no pass over its output. The folded weight and
  bias (:class:`FoldedConv`) are computed in float64 on the first call and again whenever one of the seven
  tensors changed (its version counter or its memory: an optimizer step, ``load_state_dict``, ``set_``),
  so a replay always reads the current parameters and statistics. At capture the folded convolution runs
  once on the recorded inputs against the recorded batch-norm result (the check replay's tolerance); a
  disagreement leaves the two ops as they were, with a warning.
* **An activation in place on a fresh result** (no grad): ``linear``, a convolution, a folded one or a batch
  norm whose (first) result only a following ``relu``, ``sigmoid`` or ``tanh`` reads (and the function does
  not return) becomes one node that calls the op and then the activation's in-place form on its output
  (:class:`InPlaceActivation`): the output is activated while its last tiles are still in cache, and no
  second output is allocated (a 128x512 float32 ``relu`` is about 20 us, ``relu_`` on the same tensor
  4.5 us). Under grad mode the two ops stay apart: autograd's in-place form of an op's output costs more
  than the out-of-place one it would replace (measured: ``relu_`` of a ``linear`` or ``native_batch_norm``
  result under grad clones the output and records a copy), so a training step gains nothing from it; a real
  training epilogue needs a fused op with its own backward in core (``linear`` with an activation, whose
  backward masks the gradient while reducing the bias's).

* **A linear on its packed weight** (no grad): a float32 CPU ``linear(x, W, b)`` of a constant weight (a
  parameter) calls core's ``_linear_packed`` on a copy of ``W^T`` packed by ``_pack_linear_weight``
  (:class:`PackedLinear`; core's Note [Packed linear weight]): the own GEMM then skips the transposition of
  ``W``'s panels that ``linear`` does on every call (about 4% of the benchmark MLP's eval call). The copy is
  made on the first call and again whenever ``W`` changed (its version counter or its memory), as the
  folded convolution's weight is; where the own GEMM cannot take ``W`` (no AVX-512, the setting
  ``backends.cpu.sgemm = 'openblas'``, a dimension below 16) the node stays ``linear``, and a call the own
  GEMM would not run (too few rows, the setting changed since) runs ``linear`` inside ``_linear_packed``.
  The values are ``linear``'s bits (the same kernel, the same order of each sum); at capture the node runs
  once against the recorded result all the same. An activation that follows applies in place on its
  result, as on ``linear``'s.

* **A relu moved after the max pooling it feeds** (training and eval): ``relu(x)`` whose result only
  ``max_pool2d_with_indices(., kernel, stride, padding=0, dilation, ceil_mode)`` reads, the pooling's indices
  unused by the graph, becomes the pooling of ``x`` and then the ``relu`` of its output. A max commutes with
  a non-decreasing function, so the values are the same (NaN stays NaN: both ops propagate it; a window of
  zeros of both signs may give the other zero), and so are the gradients: where a window's maximum is
  positive both orders pick its first position and pass its gradient; where it is not, both give zeros
  (relu's gradient at a non-positive value is zero, and a position no positive maximum comes from gets
  only those zeros). The relu and its backward then run on the pooled tensor (a quarter of a 2x2 pooling's
  input: LeNet-5's two relus), and no full-size relu output is allocated. Only the indices differ (the first
  maximum of ``x`` rather than of ``relu(x)`` in an all-negative window), which is why a graph that reads them
  is left as captured. At capture the rewritten pair runs once on the recorded input against the recorded
  pooling result; a disagreement leaves the ops as they were.

Then each folded 2-D convolution runs on a packed weight, a residual ``add`` then ``relu`` after it in the
kernel's stores (Note [Packed eval convolution] in ``_conv.py``). Everything else is left to the elementwise
fusion or runs as captured. ``fb.compiler.config.fusion = False`` turns this pass off too.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import flambeau_core as fc
from flambeau_core import _C
from flambeau_core._C import _set_grad_enabled

from ._bn_relu import rewrite as _bn_relu_rewrite
from ._conv import rewrite as _conv_rewrite
from ._fusion import _remap as _fusion_remap
from ._graph import Graph, Node, Ref

Tensor = fc.Tensor

_CONVS = ("conv1d", "conv2d", "conv3d")
_PRODUCERS = ("linear", "linear_packed", *_CONVS, "conv_bn_folded", "native_batch_norm")
_IN_PLACE = {"relu": fc.relu_, "sigmoid": fc.sigmoid_, "tanh": fc.tanh_}
_FLOATS = (fc.float32, fc.float64)
_MAX_POOL = "max_pool2d_with_indices"
# Below these a linear runs on OpenBLAS, not on the own GEMM that reads a packed weight (sgemm.cpp's kMinRows
# and kMinMacs): no packed copy for it.
_PACK_MIN_ROWS, _PACK_MIN_MACS = 8, 1 << 21


class FoldedConv:
    """A convolution with a batch norm folded in (Note [Epilogue pass]): called with the seven tensors.

    ``conv`` is the recorded convolution callable, ``rest`` its arguments after the bias (stride, padding,
    dilation, groups), ``eps`` the batch norm's.
    """

    __slots__ = ("conv", "rest", "eps", "key", "weight", "bias")

    def __init__(self, conv: Callable[..., Tensor], rest: tuple[Any, ...], eps: float) -> None:
        self.conv, self.rest, self.eps = conv, rest, eps
        self.key: tuple[Any, ...] | None = None
        self.weight: Tensor | None = None
        self.bias: Tensor | None = None

    def _refold(self, w: Tensor, b: Tensor | None, gamma: Tensor | None, beta: Tensor | None, mean: Tensor,
                var: Tensor) -> None:  # fmt: skip
        grad = fc.is_grad_enabled()
        _set_grad_enabled(False)
        try:
            scale = (var.double() + self.eps).rsqrt()
            if gamma is not None:
                scale = scale * gamma.double()
            shift = -mean.double() if b is None else b.double() - mean.double()
            shift = shift * scale
            if beta is not None:
                shift = shift + beta.double()
            shape = [scale.shape[0]] + [1] * (w.dim() - 1)
            self.weight = (w.double() * scale.reshape(shape)).to(w.dtype).contiguous()
            self.bias = shift.to(w.dtype).contiguous()
        finally:
            _set_grad_enabled(grad)

    def current(self, w: Tensor, b: Tensor | None, gamma: Tensor | None, beta: Tensor | None, mean: Tensor,
                var: Tensor) -> tuple[Tensor, Tensor]:  # fmt: skip
        """The folded weight and bias of these tensors, refolded if one of them changed since the last call."""
        key = tuple(None if t is None else (t._version, t.data_ptr()) for t in (w, b, gamma, beta, mean, var))
        if key != self.key:
            self._refold(w, b, gamma, beta, mean, var)
            self.key = key
        return self.weight, self.bias

    def __call__(self, x: Tensor, w: Tensor, b: Tensor | None, gamma: Tensor | None, beta: Tensor | None,
                 mean: Tensor, var: Tensor) -> Tensor:  # fmt: skip
        weight, bias = self.current(w, b, gamma, beta, mean, var)
        return self.conv(x, weight, bias, *self.rest)

    def __repr__(self) -> str:
        return f"FoldedConv({getattr(self.conv, '__name__', self.conv)}, eps={self.eps})"


class PackedLinear:
    """``linear(x, w, b)`` on a packed copy of ``w``'s transpose (Note [Epilogue pass]; core's Note [Packed
    linear weight]): packed on the first call and again whenever ``w`` changed (its version counter or
    its memory), so a replay reads the current weight."""

    __slots__ = ("key", "packed")

    def __init__(self) -> None:
        self.key: tuple[int, int] | None = None
        self.packed: Tensor | None = None

    def __call__(self, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
        key = (w._version, w.data_ptr())
        if key != self.key:
            self.packed, self.key = _C._pack_linear_weight(w), key
        return _C._linear_packed(x, w, self.packed, b)

    def __repr__(self) -> str:
        return "PackedLinear()"


class InPlaceActivation:
    """``op(*args, **kwargs)`` with ``activation_`` applied in place on its result, or (``single`` false) on
    its result's first element (a batch norm's output, beside its statistics) (Note [Epilogue pass])."""

    __slots__ = ("op", "activation", "single")

    def __init__(self, op: Callable[..., Any], activation: Callable[[Tensor], Tensor], single: bool) -> None:
        self.op, self.activation, self.single = op, activation, single

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.single:
            return self.activation(self.op(*args, **kwargs))
        result = self.op(*args, **kwargs)
        self.activation(result[0])
        return result

    def __repr__(self) -> str:
        return f"InPlaceActivation({getattr(self.op, '__name__', self.op)}, {self.activation.__name__})"


@dataclass
class Epilogue:
    """One rewrite of the pass, for ``explain``: the op names it merged."""

    ops: tuple[str, ...]


@dataclass
class Folded:
    """The rewritten graph, its values (the recorded tensors, renumbered as the graph) and the rewrites."""

    graph: Graph
    values: list[Tensor]
    epilogues: list[Epilogue] = field(default_factory=list)


def _uses(graph: Graph) -> Counter[int]:
    """How many times each value is read (by a node's arguments; the function's result counts twice)."""
    uses: Counter[int] = Counter()

    def see(weight: int) -> Callable[[Ref], Ref]:
        def count(r: Ref) -> Ref:
            if r.kind == "value":
                uses[r.index] += weight
            return r

        return count

    for node in graph.nodes:
        _fusion_remap((node.args, node.kwargs), see(1))
    _fusion_remap(graph.output, see(2))  # never folded away: the caller sees it
    return uses


def _sole_value(node: Node) -> int | None:
    return node.first_value if node.results == [()] else None


def _const_or_none(a: Any) -> bool:
    return a is None or (isinstance(a, Ref) and a.kind == "const")


def _bn_relu(graph: Graph, i: int, uses: Counter[int], tensor_of: Callable[[Ref], Tensor]) -> Node | None:
    """Note [Batch norm relu]: one node for nodes i (a training batch norm) and i + 1 (the relu of its
    result, its only reader), or ``None``."""
    bn, relu = graph.nodes[i], graph.nodes[i + 1]
    if bn.name != "native_batch_norm" or relu.name != "relu" or not bn.grad_enabled or not relu.grad_enabled:
        return None
    if bn.kwargs or relu.kwargs or len(bn.args) != 8 or len(bn.results) != 3 or _sole_value(relu) is None:
        return None
    v = bn.first_value
    if relu.args != (Ref("value", v),) or uses[v] != 1 or uses[v + 1] or uses[v + 2]:
        return None
    found = _bn_relu_rewrite(bn, tensor_of)
    if found is None:
        return None
    target, args = found
    return Node("batch_norm_relu", target, args, {}, True, relu.first_value, [()])


def _bn_fold(graph: Graph, i: int, uses: Counter[int], tensor_of: Callable[[Ref], Tensor]) -> Node | None:
    """The folded node replacing nodes i (a convolution) and i + 1 (its eval batch norm), or ``None``."""
    conv, bn = graph.nodes[i], graph.nodes[i + 1]
    if conv.name not in _CONVS or bn.name != "native_batch_norm" or conv.grad_enabled or bn.grad_enabled:
        return None
    v = _sole_value(conv)
    if v is None or uses[v] != 1 or conv.kwargs or bn.kwargs or len(conv.args) < 3 or len(bn.args) != 8:
        return None
    x, w, b = conv.args[:3]
    src, gamma, beta, mean, var, training, _, eps = bn.args
    if src != Ref("value", v) or training is not False or not isinstance(eps, (int, float)):
        return None
    if len(bn.results) != 3 or any(uses[bn.first_value + k] for k in (1, 2)):
        return None
    if not (isinstance(x, Ref) and isinstance(w, Ref) and w.kind == "const"):
        return None
    if not all(_const_or_none(t) for t in (b, gamma, beta)) or not all(
        isinstance(t, Ref) and t.kind == "const" for t in (mean, var)
    ):
        return None
    tensors = [None if t is None else tensor_of(t) for t in (w, b, gamma, beta, mean, var)]
    out = tensor_of(Ref("value", v))
    if out.dtype not in _FLOATS or not out.is_cpu or any(t is not None and t.dtype != out.dtype for t in tensors):
        return None
    if tensors[0].dim() < 3 or any(t is not None and t.shape != (out.shape[1],) for t in tensors[1:]):
        return None
    folded = FoldedConv(conv.target, tuple(conv.args[3:]), float(eps))
    args = (x, w, b, gamma, beta, mean, var)
    mine = folded(tensor_of(x), *tensors)
    theirs = tensor_of(Ref("value", bn.first_value))
    from ._capture import _close

    if mine.shape != theirs.shape or mine.dtype != theirs.dtype or not _close(theirs, mine):
        warnings.warn(
            "[compile] a batch norm folded into its convolution disagrees with the eager ops; they run instead",
            stacklevel=5,
        )
        return None
    return Node("conv_bn_folded", folded, args, {}, False, bn.first_value, [()])


def _packed_linear(node: Node, tensor_of: Callable[[Ref], Tensor]) -> Node | None:
    """``node`` (a no-grad float32 ``linear`` of a constant weight) on a packed weight, or ``None``."""
    if node.name != "linear" or node.grad_enabled or node.kwargs or len(node.args) not in (2, 3):
        return None
    if node.results != [()] or not all(isinstance(a, Ref) for a in node.args[:2]):
        return None
    x, w = node.args[:2]
    b = node.args[2] if len(node.args) == 3 else None
    if w.kind != "const" or not (b is None or (isinstance(b, Ref) and b.kind == "const")):
        return None
    weight, recorded = tensor_of(w), tensor_of(Ref("value", node.first_value))
    if weight.dtype != fc.float32 or not weight.is_cpu or recorded.dtype != fc.float32 or recorded.dim() != 2:
        return None
    rows, (out_f, in_f) = recorded.shape[0], weight.shape
    if rows < _PACK_MIN_ROWS or rows * out_f * in_f < _PACK_MIN_MACS:  # linear would not run the own GEMM
        return None
    packed = PackedLinear()
    grad = fc.is_grad_enabled()
    _set_grad_enabled(False)
    try:
        mine = packed(tensor_of(x), weight, None if b is None else tensor_of(b))
    finally:
        _set_grad_enabled(grad)
    if packed.packed is None or packed.packed.numel() == 0:  # the own GEMM cannot take it: linear stays
        return None
    from ._capture import _close

    if mine.shape != recorded.shape or not _close(recorded, mine):
        warnings.warn(
            "[compile] a linear on its packed weight disagrees with linear; linear runs instead", stacklevel=5
        )
        return None
    return Node("linear_packed", packed, node.args, {}, False, node.first_value, [()])


def _activation(producer: Node, node: Node, uses: Counter[int], tensor_of: Callable[[Ref], Tensor]) -> Node | None:
    """``producer`` with ``node`` (an activation, the only reader of its first result) applied in place."""
    if producer.name not in _PRODUCERS or node.name not in _IN_PLACE or producer.grad_enabled or node.grad_enabled:
        return None
    if producer.results not in ([()], [(0,), (1,), (2,)]):
        return None
    v = producer.first_value
    if uses[v] != 1 or node.args != (Ref("value", v),) or node.kwargs or node.results != [()]:
        return None
    # In place only on a fresh floating result of the activation's dtype (an integer linear's sigmoid is float).
    result, activated = tensor_of(Ref("value", v)), tensor_of(Ref("value", node.first_value))
    if not result.is_floating_point() or result.dtype != activated.dtype or result.shape != activated.shape:
        return None
    operands: list[Tensor] = []
    _fusion_remap((producer.args, producer.kwargs), lambda r: operands.append(tensor_of(r)) or r)
    if any(t._storage_ptr == result._storage_ptr for t in operands):
        return None
    single = producer.results == [()]
    return Node(
        f"{producer.name}+{node.name}_",
        InPlaceActivation(producer.target, _IN_PLACE[node.name], single),
        producer.args,
        producer.kwargs,
        producer.grad_enabled,
        node.first_value if single else producer.first_value,
        producer.results,
    )


def _relu_after_pool(
    relu: Node, pool: Node, uses: Counter[int], tensor_of: Callable[[Ref], Tensor]
) -> tuple[Node, Tensor] | None:
    """Note [Epilogue pass]: ``pool`` (a max pooling reading only ``relu``'s result, its indices unused) run
    on ``relu``'s input, and that pooling's recorded-input result; ``None`` where the pair does not qualify."""
    if relu.name != "relu" or pool.name != _MAX_POOL or relu.grad_enabled != pool.grad_enabled:
        return None
    v = _sole_value(relu)
    if v is None or uses[v] != 1 or relu.kwargs or pool.kwargs or len(relu.args) != 1 or len(pool.args) != 6:
        return None
    x, padding = relu.args[0], pool.args[3]
    if not isinstance(x, Ref) or pool.args[0] != Ref("value", v) or pool.results != [(0,), (1,)]:
        return None
    if uses[pool.first_value + 1] or type(padding) not in (list, tuple) or any(p != 0 for p in padding):
        return None
    source, recorded = tensor_of(x), tensor_of(Ref("value", pool.first_value))
    if source.dtype not in _FLOATS or not source.is_cpu or tensor_of(Ref("value", v)).dtype != source.dtype:
        return None
    grad = fc.is_grad_enabled()
    _set_grad_enabled(False)
    try:
        pooled = pool.target(source, *pool.args[1:])[0]
        same = pooled.shape == recorded.shape and bool((pooled.relu() == recorded).all())
    finally:
        _set_grad_enabled(grad)
    if not same:  # (NaN != NaN: a pooling over NaN keeps the captured order, as does any surprise)
        return None
    moved = Node(pool.name, pool.target, (x, *pool.args[1:]), {}, pool.grad_enabled, pool.first_value, pool.results)
    return moved, pooled


def fold(graph: Graph, inputs: list[Tensor], values: list[Tensor]) -> Folded | None:
    """Note [Epilogue pass]: the graph with its conv + batch norm pairs folded, activations in place and relus
    moved after their max pooling.

    ``values`` are the tensors the capture recorded, one per :class:`Ref` ``("value", i)``; ``None`` when
    nothing was rewritten. Value numbers are kept (a merged node takes its last node's), so ``values``
    stays valid for the rewritten graph; a moved relu's result is a new value at the end (the pooling's
    output before the relu, computed at capture, takes the pooling's first number).
    """

    def tensor_of(r: Ref) -> Tensor:
        return (
            inputs[r.index] if r.kind == "input" else graph.constants[r.index] if r.kind == "const" else values[r.index]
        )

    uses = _uses(graph)
    values = list(values)
    if len(values) != graph.num_values:  # (one recorded tensor per value: a moved relu appends its own)
        return None
    rename: dict[int, int] = {}  # an activation's value -> its producer's first (a batch norm's three results)

    def renamed(node: Node) -> Node:
        if not rename:
            return node
        args, kwargs = _remap(node.args, rename), _remap(node.kwargs, rename)
        return Node(node.name, node.target, args, kwargs, node.grad_enabled, node.first_value, node.results)

    nodes: list[Node] = []
    epilogues: list[Epilogue] = []
    i = 0
    while i < len(graph.nodes):
        node = renamed(graph.nodes[i])
        moved = _relu_after_pool(node, graph.nodes[i + 1], uses, tensor_of) if i + 1 < len(graph.nodes) else None
        if moved is not None:
            pool, pooled = moved
            new = len(values)  # the relu's result: a new value (the pooling's first number is its input now)
            relu = Node(node.name, node.target, (Ref("value", pool.first_value),), {}, node.grad_enabled, new, [()])
            values.append(values[pool.first_value])  # relu(pool(x)) is the recorded pooling result
            values[pool.first_value] = pooled
            rename[pool.first_value] = new
            nodes += [pool, relu]
            epilogues.append(Epilogue((pool.name, node.name)))
            i += 2
            continue
        merged = _bn_relu(graph, i, uses, tensor_of) if i + 1 < len(graph.nodes) else None
        if merged is not None:
            epilogues.append(Epilogue(("native_batch_norm", "relu")))
            nodes.append(merged)
            i += 2
            continue
        merged = _bn_fold(graph, i, uses, tensor_of) if i + 1 < len(graph.nodes) else None
        if merged is not None:
            epilogues.append(Epilogue((node.name, "native_batch_norm")))
            nodes.append(merged)
            i += 2
            continue
        act = _activation(nodes[-1], node, uses, tensor_of) if nodes else None
        if act is not None:
            last = nodes.pop()
            if last.name in ("conv_bn_folded", "linear_packed"):
                epilogues[-1] = Epilogue((*epilogues[-1].ops, node.name))
            else:
                epilogues.append(Epilogue((last.name, node.name)))
            if act.first_value != node.first_value:
                rename[node.first_value] = act.first_value
                values[act.first_value] = values[node.first_value]
            nodes.append(act)
            i += 1
            continue
        packed = _packed_linear(node, tensor_of)
        if packed is not None:
            epilogues.append(Epilogue(("linear_packed",)))
            node = packed
        nodes.append(node)
        i += 1
    nodes = _conv_rewrite(nodes, _remap(graph.output, rename) if rename else graph.output, tensor_of)
    if not epilogues:
        return None
    out = Graph(num_inputs=graph.num_inputs, constants=graph.constants, nodes=nodes, num_values=len(values))
    out.output = _remap(graph.output, rename) if rename else graph.output
    return Folded(out, values, epilogues)


def _remap(obj: Any, rename: dict[int, int]) -> Any:
    return _fusion_remap(obj, lambda r: Ref("value", rename[r.index]) if r.kind == "value" and r.index in rename else r)
