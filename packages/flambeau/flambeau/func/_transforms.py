"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``.

Note [Transforms on one tape]
PyTorch's transforms give each level its own wrapper tensors; flambeau has one reverse-mode tape, so a
transform differentiates with respect to fresh nodes made from its inputs (``_differentiable_input``: a
view of an input that already has a graph, a detached leaf otherwise) and keeps a graph on its results
(``create_graph``) only when an enclosing computation can differentiate them: inside another transform,
or when an input requires grad. Fresh nodes keep nested transforms apart (``grad`` of a function that
calls ``grad`` of a closure over the same tensor gets each level's own derivative). At the top level a
result computed without a graph is detached, as PyTorch returns it. A tensor captured by closure that
requires grad, outside any transform, is treated as a constant (PyTorch would also track it).

``jvp`` runs ``func`` once on dual tensors (forward mode, flambeau_autograd.forward_ad) when it can: no
dual level is active already (forward mode has one level) and no input is a vmap-batched tensor.
Otherwise, and when an op of ``func`` has no forward formula, it falls back to the double-backward trick,
as ``jacfwd`` and ``linearize`` always do: with zero cotangents ``u`` that require grad, ``g = J^T u`` is
linear in ``u`` and the gradient of ``g`` along ``v`` with respect to ``u`` is ``J v`` (two backward
passes, but one graph serves every column of ``jacfwd`` and every call of ``linearize``'s ``jvp_fn``).
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import flambeau_core
from flambeau_autograd import forward_ad
from flambeau_autograd._C import _current_dual_level
from flambeau_autograd.functional import (
    _backward,
    _differentiable_input,
    _forward_jacobian,
    _jvp_from_vjp_graph,
    _linear_in_cotangent,
    _reverse_jacobian,
)
from flambeau_autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from flambeau_core import FlambeauError, Tensor

from flambeau.func import _vmap
from flambeau.func._pytree import spec_str, tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]

_state = threading.local()


def _depth() -> int:
    return getattr(_state, "depth", 0)


@contextmanager
def _transform_level() -> Iterator[None]:
    _state.depth = _depth() + 1
    try:
        yield
    finally:
        _state.depth -= 1


def _keeps_graph(*trees: Any) -> bool:
    """Whether results must stay differentiable (Note [Transforms on one tape])."""
    if not is_grad_enabled():
        return False
    if _depth() > 0:
        return True
    return any(isinstance(t, Tensor) and t.requires_grad for tree in trees for t in tree_flatten(tree)[0])


def _detach_tree(tree: Any) -> Any:
    return tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def _differentiable_tree(tree: Any, keep: bool, api: str) -> Any:
    def one(x: Any) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"[func.{api}] Thing passed to transform API must be Tensor, got {type(x).__name__}")
        if not (x.is_floating_point() or x.is_complex()):
            raise TypeError(
                f"[func.{api}] only floating-point or complex Tensors can be differentiated, got a Tensor of dtype "
                f"{x.dtype}"
            )
        return _differentiable_input(x, keep)

    return tree_map(one, tree)


def _normalize_argnums(argnums: Any, nargs: int, api: str) -> tuple[int, ...]:
    """The argnums as non-negative positions; a TypeError or FlambeauError as PyTorch words them."""
    many = isinstance(argnums, tuple)
    items = argnums if many else (argnums,)
    if not many and not isinstance(argnums, int) or isinstance(argnums, bool):
        raise TypeError(f"[func.{api}] argnums must be int or Tuple[int, ...], got: {type(argnums).__name__}")
    if many and not argnums:
        raise FlambeauError(f"[func.{api}] argnums must be non-empty")
    out = []
    for a in items:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"[func.{api}] argnum must be int, got: {type(a).__name__}")
        if not -nargs <= a < nargs:
            raise FlambeauError(f"[func.{api}] Got argnum={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise FlambeauError(f"[func.{api}] argnums elements must be unique, got {argnums}")
    return tuple(out)


def _split_aux(output: Any, has_aux: bool, api: str, call: str) -> tuple[Any, Any]:
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise FlambeauError(
            f"[func.{api}] {call}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return output


def _call_with_differentiable_args(
    func: Callable, args: tuple, kwargs: dict, argnums: Any, keep: bool, api: str
) -> tuple[Any, list, Any]:
    """``(func's output, the flat differentiable inputs, their spec)`` with ``args[argnums]`` made differentiable.

    The spec is that of ``args[argnums]`` for an int ``argnums``, of the tuple of those args otherwise."""
    positions = _normalize_argnums(argnums, len(args), api)
    new_args = list(args)
    for p in positions:
        new_args[p] = _differentiable_tree(args[p], keep, api)
    diff = new_args[positions[0]] if isinstance(argnums, int) else tuple(new_args[p] for p in positions)
    flat, spec = tree_flatten(diff)
    with enable_grad():
        output = func(*new_args, **kwargs)
    return output, flat, spec


def _zeros_for_none(grads: list, refs: list) -> list:
    return [flambeau_core.zeros_like(r) if g is None else g for g, r in zip(grads, refs, strict=True)]


def _flat_tensor_outputs(output: Any, api: str, call: str, batched: bool = False) -> tuple[list, Any]:
    """The output's leaves, each a Tensor (or, inside vmap, a BatchedTensor); else a clear error."""
    flat, spec = tree_flatten(output)
    if not flat:
        raise FlambeauError(
            f"[func.{api}] {call}: Expected f to be a function that has non-empty output (got output = {output})"
        )
    for o in flat:
        if not isinstance(o, (Tensor, _vmap.BatchedTensor) if batched else Tensor):
            raise TypeError(
                f"[func.{api}] {call}: expected f(*args) to return only tensors, got unsupported type "
                f"{type(o).__name__}"
            )
    return flat, spec


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning ``(gradient, value)`` of ``func``: the gradient of its scalar output with respect
    to the arguments at ``argnums``, and the output itself.

    Args:
        func: a function whose output is a scalar Tensor (or, with ``has_aux``, a tuple ``(scalar, aux)``).
        argnums: which positional argument(s) to differentiate; each may be a pytree (tuple, list, dict) of
            Tensors, and the gradient has the same structure (a tuple of them for a tuple ``argnums``).
        has_aux: ``func`` returns ``(output, aux)``; the result is then ``(gradient, (value, aux))``.

    Example:
        >>> import flambeau as fb
        >>> g, v = fb.func.grad_and_value(lambda x: (x**2).sum())(fb.tensor([1.0, 2.0]))
        >>> g.tolist(), v.item()
        ([2.0, 4.0], 5.0)
    """

    return _gradient_transform(func, argnums, has_aux, "grad_and_value")


def _gradient_transform(func: Callable, argnums: Any, has_aux: bool, api: str) -> Callable:
    """``grad_and_value``'s wrapper; ``api`` names the transform the user called in the errors."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = "grad_and_value(f)(*args)"  # PyTorch's words for both grad and grad_and_value
        if _batched_inside_vmap(args, kwargs):
            return _grad_inside_vmap(func, args, kwargs, argnums, has_aux, api, call, _VmapLevels())
        keep = _keeps_graph(args, kwargs)
        with _transform_level():
            output, flat_in, spec = _call_with_differentiable_args(func, args, kwargs, argnums, keep, api)
            output, aux = _split_aux(output, has_aux, api, call)
            if not isinstance(output, Tensor):
                raise TypeError(
                    f"[func.{api}] {call}: Expected f(*args) to return a Tensor, got {type(output).__name__}"
                )
            if output.dim() != 0:
                raise FlambeauError(
                    f"[func.{api}] {call}: Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            grads = _zeros_for_none(_backward([output], [None], flat_in, keep), flat_in)
        gradient = tree_unflatten(grads, spec)
        if not keep:
            output, aux = output.detach(), _detach_tree(aux)
        return (gradient, (output, aux)) if has_aux else (gradient, output)

    return wrapper


def _batched_inside_vmap(*trees: Any) -> bool:
    """Whether a transform is called inside ``vmap`` on a value batched at one of its levels."""
    return _vmap.current_level() is not None and any(isinstance(x, _vmap.BatchedTensor) for x in tree_flatten(trees)[0])


class _VmapLevels:
    """Note [transforms inside nested vmap]: the vmap levels a transform called inside ``vmap`` runs under,
    outermost first. Each input becomes one physical tensor with a dim per level in front (a level the input
    is not batched at is expanded: that level's samples share it, batch stride 0), the transform works on
    those, and its results are wrapped back in every level. No level's samples mix (each batching rule keeps
    them apart), so what Note [grad inside vmap] says of one level holds for all of them at once."""

    def __init__(self) -> None:
        self.levels = _vmap.active_levels()

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(size for _, size in self.levels)

    def physical(self, x: Any, api: str) -> Tensor:
        """``x`` as a tensor of shape ``sizes + sample shape``."""
        return self._peel(x, len(self.levels), api)

    def _peel(self, x: Any, k: int, api: str) -> Tensor:
        if k == 0:
            if isinstance(x, Tensor):
                return x
            if isinstance(x, _vmap.BatchedTensor):
                raise FlambeauError(f"[func.{api}] a batched tensor of a vmap call that has returned reached {api}")
            raise TypeError(f"[func.{api}] Thing passed to transform API must be Tensor, got {type(x).__name__}")
        level, size = self.levels[k - 1]
        if isinstance(x, _vmap.BatchedTensor) and x._level == level:
            return self._peel(x._value, k - 1, api)  # its dim k - 1 is this level's
        t = self._peel(x, k - 1, api)
        return t.unsqueeze(k - 1).expand(*t.shape[: k - 1], size, *t.shape[k - 1 :])

    def wrap(self, t: Tensor) -> Any:
        """A physical tensor (``sizes`` in front) as the value each sample of every level sees."""
        for level, _ in self.levels:
            t = _vmap.BatchedTensor(t, level)
        return t


def _batched_nodes(levels: _VmapLevels, api: str, physical: list) -> Callable[[Any], Any]:
    """The function making an input of a transform inside ``vmap`` a node to differentiate (Note [grad inside
    vmap]): a batched input's physical tensor, or an unbatched one expanded, each appended to ``physical``."""

    def differentiable(x: Any) -> Any:
        if isinstance(x, Tensor):
            node = levels.physical(_differentiable_tree(x, True, api), api)
        else:
            node = _differentiable_tree(levels.physical(x, api), True, api)
        physical.append(node)
        return levels.wrap(node)

    return differentiable


def _vjp_inside_vmap(func: Callable, primals: tuple, has_aux: bool, levels: _VmapLevels, call: str) -> tuple:
    """``vjp`` of a function of one sample, called on a batch inside ``vmap``: Note [grad inside vmap] with
    the cotangents given (one per sample) instead of ones."""
    physical: list[Tensor] = []
    differentiable = _batched_nodes(levels, "vjp", physical)
    with _transform_level(), enable_grad():
        new = tree_map(differentiable, primals)
        spec = tree_flatten(new)[1]
        output = func(*new)
        output, aux = _split_aux(output, has_aux, "vjp", call)
        flat_out, out_spec = _flat_tensor_outputs(output, "vjp", call, batched=True)
    outs = [levels.physical(o, "vjp") for o in flat_out]

    def vjp_fn(cotangents: Any, *, retain_graph: bool = True, create_graph: bool | None = None) -> tuple:
        flat_ct = _flat_cotangents(cotangents, flat_out, out_spec)
        cts = [levels.physical(c, "vjp") for c in flat_ct]
        with _transform_level(), enable_grad():
            grads = _backward(outs, cts, physical, _depth() > 0 if create_graph is None else create_graph)
        return tree_unflatten([levels.wrap(g) for g in _zeros_for_none(grads, physical)], spec)

    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def _jvp_inside_vmap(
    func: Callable, primals: tuple, tangents: tuple, has_aux: bool, levels: _VmapLevels, call: str
) -> Any:
    """``jvp`` of a function of one sample, called on a batch inside ``vmap``: one forward pass on the batch's
    dual tensors (the batching rules keep the samples apart, so each row's tangent is its sample's)."""
    if _current_dual_level() >= 0:
        raise NotImplementedError("[func.jvp] jvp inside vmap inside another jvp is not supported yet")
    flat_p, p_spec = tree_flatten(primals)
    flat_t = tree_flatten(tangents)[0]
    with _transform_level(), forward_ad.dual_level(), enable_grad():
        duals = []
        for p, t in zip(flat_p, flat_t, strict=True):
            # A shared primal stays one value expanded (the batching rules compute it once); its tangent may
            # still differ per sample (make_dual keeps such a tangent's own layout).
            pp, tt = levels.physical(p, "jvp"), levels.physical(t, "jvp")
            duals.append(levels.wrap(forward_ad.make_dual(pp, tt)))
        output = func(*tree_unflatten(duals, p_spec))
        output, aux = _split_aux(output, has_aux, "jvp", call)
        flat_out, out_spec = _flat_tensor_outputs(output, "jvp", call, batched=True)
        primal_out, tangent_out = [], []
        for o in flat_out:
            primal, tangent = forward_ad.unpack_dual(levels.physical(o, "jvp"))
            primal_out.append(levels.wrap(primal))
            tangent = flambeau_core.zeros_like(primal) if tangent is None else tangent
            tangent_out.append(levels.wrap(tangent))
        aux = tree_map(
            lambda a: (
                levels.wrap(forward_ad.unpack_dual(levels.physical(a, "jvp")).primal)
                if isinstance(a, _vmap.BatchedTensor)
                else a
            ),
            aux,
        )
    output, jvp_out = tree_unflatten(primal_out, out_spec), tree_unflatten(tangent_out, out_spec)
    return (output, jvp_out, aux) if has_aux else (output, jvp_out)


def _of_differentiated(func: Callable, args: tuple, positions: tuple[int, ...]) -> Callable:
    """``func`` as a function of the arguments at ``positions`` only, the others fixed to ``args``'s."""

    def of_diff(*values: Any) -> Any:
        new = list(args)
        for p, v in zip(positions, values, strict=True):
            new[p] = v
        return func(*new)

    return of_diff


def _jacobian_inside_vmap(
    func: Callable, args: tuple, argnums: Any, has_aux: bool, api: str, levels: _VmapLevels
) -> Any:
    """``jacrev``/``jacfwd`` of a function of one sample, called on a batch inside ``vmap``: one batched
    ``vjp`` per output element (jacrev) or one batched ``jvp`` per input element (jacfwd), each over the
    whole batch, the rows (columns) stacked into each sample's Jacobian."""
    call = f"{api}(f, ...)(*args)"
    positions = _normalize_argnums(argnums, len(args), api)
    diff = tuple(args[p] for p in positions)
    of_diff = _of_differentiated(func, args, positions)
    flat_in, diff_spec = tree_flatten(diff)
    in_spec = tree_flatten(args[positions[0]] if isinstance(argnums, int) else diff)[1]  # the Jacobian's inner layout
    if api == "jacrev":
        res = _vjp_inside_vmap(of_diff, diff, has_aux, levels, call)
        output, vjp_fn, aux = res if has_aux else (*res, None)
        flat_out, out_spec = tree_flatten(output)
        blocks = [[[] for _ in flat_in] for _ in flat_out]
        for k, o in enumerate(flat_out):
            for e in range(o.numel()):
                cts = [flambeau_core.zeros(tuple(q.shape), dtype=q.dtype, device=q.device) for q in flat_out]
                cts[k].view(-1)[e] = 1
                rows = tree_flatten(vjp_fn(tree_unflatten(cts, out_spec)))[0]
                for i, r in enumerate(rows):
                    blocks[k][i].append(r)
        jac = [[flambeau_core.stack(rs).reshape((*o.shape, *x.shape)) for rs, x in zip(row, flat_in, strict=True)]
               for row, o in zip(blocks, flat_out, strict=True)]  # fmt: skip
    else:
        columns: list = [[] for _ in flat_in]
        output = aux = None
        for i, x in enumerate(flat_in):
            for e in range(x.numel()):
                tangents = [flambeau_core.zeros(tuple(q.shape), dtype=q.dtype, device=q.device) for q in flat_in]
                tangents[i].view(-1)[e] = 1
                res = _jvp_inside_vmap(of_diff, diff, tree_unflatten(tangents, diff_spec), has_aux, levels, call)
                output, out_tangent, aux = res if has_aux else (*res, None)
                columns[i].append(tree_flatten(out_tangent)[0])
        flat_out, out_spec = tree_flatten(output)
        jac = [[flambeau_core.stack([c[k] for c in columns[i]], -1).reshape((*o.shape, *x.shape))
                for i, x in enumerate(flat_in)] for k, o in enumerate(flat_out)]  # fmt: skip
    jac = tree_unflatten([tree_unflatten(row, in_spec) for row in jac], out_spec)
    return (jac, aux) if has_aux else jac


def _grad_inside_vmap(
    func: Callable, args: tuple, kwargs: dict, argnums: Any, has_aux: bool, api: str, call: str, levels: _VmapLevels
) -> Any:
    """Note [grad inside vmap]: ``grad`` of a function of one sample, called on a batch inside ``vmap``.

    Autograd records the physical ops on the whole batch, and the samples do not mix (each batching rule
    keeps them apart), so the gradient of the sum of the per-sample outputs with respect to a batched
    input holds each sample's gradient in its row. An unbatched input (a parameter shared by the samples)
    is differentiated through an expanded view of it, one row per sample, so its gradient is per sample
    too; the batching rules see that view's batch stride of 0 and keep the forward a single GEMM
    (``_SharedRight`` in ``_vmap.py``)."""
    keep = _depth() > 0  # inside another transform (jacrev(grad(f)) by vmap): it differentiates the result
    positions = _normalize_argnums(argnums, len(args), api)
    physical: list[Tensor] = []
    differentiable = _batched_nodes(levels, api, physical)
    new_args = list(args)
    with _transform_level(), enable_grad():  # the expanded views are nodes of the graph, even under no_grad
        for p in positions:
            new_args[p] = tree_map(differentiable, args[p])
        diff = new_args[positions[0]] if isinstance(argnums, int) else tuple(new_args[p] for p in positions)
        spec = tree_flatten(diff)[1]
        output = func(*new_args, **kwargs)
        output, aux = _split_aux(output, has_aux, api, call)
        if not isinstance(output, (Tensor, _vmap.BatchedTensor)):
            raise TypeError(f"[func.{api}] {call}: Expected f(*args) to return a Tensor, got {type(output).__name__}")
        if output.dim() != 0:
            raise FlambeauError(
                f"[func.{api}] {call}: Expected f(*args) to return a scalar Tensor, got tensor with "
                f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
            )
        value = levels.physical(output, api)
        seed = flambeau_core.ones_like(value)
        grads = _zeros_for_none(_backward([value], [seed], physical, keep), physical)
    gradient = tree_unflatten([levels.wrap(g) for g in grads], spec)
    output = levels.wrap(value)
    return (gradient, (output, aux)) if has_aux else (gradient, output)


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of ``func``'s scalar output with respect to the arguments at
    ``argnums`` (with ``has_aux``: ``(gradient, aux)``). Composes with itself and the other transforms.

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor(0.5, dtype=fb.float64)
        >>> round(fb.func.grad(fb.sin)(x).item(), 6), round(fb.func.grad(fb.func.grad(fb.sin))(x).item(), 6)
        (0.877583, -0.479426)
        >>> fb.func.grad(lambda p, x: (p["w"] * x).sum())({"w": fb.ones(2)}, fb.tensor([3.0, 4.0]))["w"].tolist()
        [3.0, 4.0]
    """
    inner = _gradient_transform(func, argnums, has_aux, "grad")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gradient, value = inner(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def _flat_cotangents(cotangents: Any, flat_out: list, out_spec: Any) -> list:
    """vjp_fn's cotangents, flattened, after checking them against the outputs' structure and shapes."""
    flat_ct, ct_spec = tree_flatten(cotangents)
    if ct_spec != out_spec:
        raise FlambeauError(
            "[func.vjp] Expected pytree structure of cotangents to be the same as pytree structure of outputs to "
            f"the function. cotangents: {spec_str(ct_spec)}, primal output: {spec_str(out_spec)}"
        )
    for i, (ct, o) in enumerate(zip(flat_ct, flat_out, strict=True)):
        _check_cotangent(ct, o, i, "vjp")
    return flat_ct


def _check_cotangent(ct: Any, out: Tensor, i: int, api: str) -> None:
    if not isinstance(ct, (Tensor, _vmap.BatchedTensor)):
        raise TypeError(f"[func.{api}] cotangent {i} must be a Tensor, got {type(ct).__name__}")
    if tuple(ct.shape) != tuple(out.shape):
        raise FlambeauError(
            f"[func.{api}] Mismatch in shape: grad_output[{i}] has a shape of {tuple(ct.shape)} and output[{i}] "
            f"has a shape of {tuple(out.shape)}."
        )


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns the vector-Jacobian products, a tuple
    with one entry per primal (each shaped as its primal). With ``has_aux``: ``(output, vjp_fn, aux)``.

    ``cotangents`` has the structure of the output; ``vjp_fn`` may be called many times.

    Example:
        >>> import flambeau as fb
        >>> out, vjp_fn = fb.func.vjp(lambda x, y: x * y, fb.tensor([1.0, 2.0]), fb.tensor([3.0, 4.0]))
        >>> [g.tolist() for g in vjp_fn(fb.ones(2))]
        [[3.0, 4.0], [1.0, 2.0]]
    """
    call = "vjp(f, *primals)"
    if _batched_inside_vmap(primals):
        return _vjp_inside_vmap(func, primals, has_aux, _VmapLevels(), call)
    keep = _keeps_graph(primals)
    with _transform_level():
        output, flat_in, spec = _call_with_differentiable_args(
            func, primals, {}, tuple(range(len(primals))), keep, "vjp"
        )
        output, aux = _split_aux(output, has_aux, "vjp", call)
        flat_out, out_spec = _flat_tensor_outputs(output, "vjp", call)
        for o in flat_out:
            if not (o.is_floating_point() or o.is_complex()):
                raise TypeError(
                    f"[func.vjp] vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                    f"with dtype {o.dtype}"
                )

    def vjp_fn(cotangents: Any, *, retain_graph: bool = True, create_graph: bool | None = None) -> tuple:
        flat_ct = _flat_cotangents(cotangents, flat_out, out_spec)
        make_graph = (keep or _keeps_graph(cotangents)) if create_graph is None else create_graph
        with _transform_level():
            with enable_grad():
                grads = _backward(flat_out, flat_ct, flat_in, make_graph)
        return tree_unflatten(_zeros_for_none(grads, flat_in), spec)

    if not keep:
        output, aux = _detach_tree(output), _detach_tree(aux)
    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def _check_tangents(flat_t: list, flat_p: list, api: str) -> None:
    for i, (t, p) in enumerate(zip(flat_t, flat_p, strict=True)):
        if not isinstance(t, Tensor):
            raise TypeError(f"[func.{api}] Expected tangents to only contain Tensors, got {type(t).__name__}")
        for what, a, b in (("shape", tuple(t.shape), tuple(p.shape)), ("dtype", t.dtype, p.dtype)):
            if a != b:
                raise FlambeauError(
                    f"[func.{api}] tangent:{i} with {what} {a} in flattened pytree doesn't match the {what} {b} of "
                    "the corresponding primal."
                )


def _primals_tuple(primals: Any, api: str, call: str) -> None:
    if not isinstance(primals, tuple):
        raise TypeError(
            f"[func.{api}] {call}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )


_NO_FORWARD_FORMULA = ("forward-mode AD is not implemented", "defines no jvp")


def _jvp_by_dual_tensors(func: Callable, primals: tuple, flat_t: list, keep: bool, has_aux: bool, call: str) -> Any:
    """``(output, tangents of the flat tensor outputs, out_spec, aux)`` by one pass on dual tensors, or None
    when forward mode cannot run ``func`` here (module docstring)."""
    flat_p, p_spec = tree_flatten(primals)
    if _current_dual_level() >= 0 or not all(type(x) is Tensor for x in flat_p + flat_t):
        return None
    inputs = [p if keep else p.detach() for p in flat_p]
    try:
        with forward_ad.dual_level(), enable_grad():
            duals = [forward_ad.make_dual(p, t) for p, t in zip(inputs, flat_t, strict=True)]
            output = func(*tree_unflatten(duals, p_spec))
            output, aux = _split_aux(output, has_aux, "jvp", call)
            flat_out, out_spec = _flat_tensor_outputs(output, "jvp", call)
            unpacked = [forward_ad.unpack_dual(o) for o in flat_out]
            aux = tree_map(lambda a: forward_ad.unpack_dual(a).primal if isinstance(a, Tensor) else a, aux)
    except NotImplementedError as e:
        if not any(words in str(e) for words in _NO_FORWARD_FORMULA):
            raise
        reason = str(e).split(";")[0].split(": implement")[0]
        warnings.warn(f"[func.jvp] {reason}: computing the product by the double-backward trick instead", stacklevel=3)
        return None
    output = tree_unflatten([u.primal for u in unpacked], out_spec)
    return output, [u.tangent for u in unpacked], out_spec, aux


def jvp(func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False, has_aux: bool = False) -> tuple:
    """``(func(*primals), jvp_out)``: the Jacobian-vector product of ``func`` at ``primals`` along
    ``tangents`` (same structure as ``primals``); ``jvp_out`` has the structure of the output. With
    ``has_aux``: ``(output, jvp_out, aux)``.

    One forward pass on dual tensors, as PyTorch (falls back to the double-backward trick where forward
    mode cannot run: a nested ``jvp``, vmap-batched inputs, an op without a forward formula; see the
    module docstring).

    Example:
        >>> import flambeau as fb
        >>> out, t = fb.func.jvp(lambda x: x**3, (fb.tensor([1.0, 2.0]),), (fb.tensor([1.0, 0.5]),))
        >>> out.tolist(), t.tolist()
        ([1.0, 8.0], [3.0, 6.0])
    """
    call = "jvp(f, primals, tangents)"
    _primals_tuple(primals, "jvp", call)
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise FlambeauError(
            f"[func.jvp] {call}: Expected primals and tangents to have the same python structure. For example, if "
            f"primals is a tuple of 3 tensors, tangents also must be. Got primals with structure {spec_str(p_spec)} "
            f"and tangents with structure {spec_str(t_spec)}"
        )
    if not flat_p:
        raise FlambeauError(f"[func.jvp] {call}: Expected primals to contain at least one Tensor.")
    if _batched_inside_vmap((primals, tangents)):
        return _jvp_inside_vmap(func, primals, tangents, has_aux, _VmapLevels(), call)
    _check_tangents(flat_t, flat_p, "jvp")
    keep = _keeps_graph(primals, tangents)
    with _transform_level():
        forward = _jvp_by_dual_tensors(func, primals, flat_t, keep, has_aux, call)
    if forward is not None:
        output, tangent_out, out_spec, aux = forward
        flat_out = tree_flatten(output)[0]
    else:
        with _transform_level():
            output, flat_in, _ = _call_with_differentiable_args(
                func, primals, {}, tuple(range(len(primals))), keep, "jvp"
            )
            output, aux = _split_aux(output, has_aux, "jvp", call)
            flat_out, out_spec = _flat_tensor_outputs(output, "jvp", call)
            us, gs = _linear_in_cotangent(flat_out, flat_in)
            with enable_grad():
                tangent_out = _jvp_from_vjp_graph(us, gs, flat_t, keep)
    if strict and any(t is None for t in tangent_out):
        raise FlambeauError(
            "[func.jvp] jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. This is "
            "not allowed with strict=True."
        )
    jvp_out = tree_unflatten(_zeros_for_none(tangent_out, flat_out), out_spec)
    if not keep:
        output, aux = _detach_tree(output), _detach_tree(aux)
    return (output, jvp_out, aux) if has_aux else (output, jvp_out)


def linearize(func: Callable, *primals: Any) -> tuple:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at ``primals``,
    without running ``func`` again (the graph of ``J^T u`` is recorded once and kept by ``jvp_fn``).

    Example:
        >>> import flambeau as fb
        >>> out, jvp_fn = fb.func.linearize(fb.sin, fb.tensor([0.0, 1.0], dtype=fb.float64))
        >>> [round(v, 6) for v in jvp_fn(fb.ones(2, dtype=fb.float64)).tolist()]
        [1.0, 0.540302]
    """
    call = "linearize(f, *primals)"
    keep = _keeps_graph(primals)
    with _transform_level():
        output, flat_in, p_spec = _call_with_differentiable_args(
            func, primals, {}, tuple(range(len(primals))), keep, "linearize"
        )
        flat_out, out_spec = _flat_tensor_outputs(output, "linearize", call)
        us, gs = _linear_in_cotangent(flat_out, flat_in)

    def jvp_fn(*tangents: Any) -> Any:
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise FlambeauError(
                f"[func.linearize] Expected the tangents {spec_str(t_spec)} to have the same argspec as the primals "
                f"{spec_str(p_spec)}"
            )
        _check_tangents(flat_t, flat_in, "linearize")
        make_graph = keep or _keeps_graph(tangents)
        with _transform_level():
            with enable_grad():
                out = _jvp_from_vjp_graph(us, gs, flat_t, make_graph)
        return tree_unflatten(_zeros_for_none(out, flat_out), out_spec)

    return (output if keep else _detach_tree(output)), jvp_fn


def _jacobian_transform(
    func: Callable, argnums: Any, has_aux: bool, api: str, blocks_of: Callable[[list, list, bool], list]
) -> Callable:
    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        call = f"{api}(f, ...)(*args)"
        if _batched_inside_vmap(args):
            return _jacobian_inside_vmap(func, args, argnums, has_aux, api, _VmapLevels())
        keep = _keeps_graph(args)
        with _transform_level():
            output, flat_in, in_spec = _call_with_differentiable_args(func, args, {}, argnums, keep, api)
            output, aux = _split_aux(output, has_aux, api, call)
            flat_out, out_spec = _flat_tensor_outputs(output, api, call)
            with enable_grad():
                blocks = blocks_of(flat_out, flat_in, keep)
        jac_leaves = []
        for out, row in zip(flat_out, blocks, strict=True):
            filled = [
                flambeau_core.zeros(*out.shape, *x.shape, dtype=x.dtype, device=x.device) if b is None else b
                for x, b in zip(flat_in, row, strict=True)
            ]
            jac_leaves.append(tree_unflatten(filled, in_spec))
        jac = tree_unflatten(jac_leaves, out_spec)
        if has_aux:
            return jac, (aux if keep else _detach_tree(aux))
        return jac

    return wrapper


def jacrev(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    _preallocate_and_copy: bool = False,
) -> Callable:
    """A function returning the Jacobian of ``func`` with respect to the arguments at ``argnums``, by reverse
    mode: one backward pass over the function run on a batch of the output basis (Note [jacrev by vmap]),
    or, where an op has no batching rule or inside another transform, one backward pass per output element
    over a graph recorded once.

    For an output leaf of shape ``O`` and an input leaf of shape ``I`` the block has shape ``O + I``; the
    result has the output's structure, each leaf replaced by the input's structure (a tuple over ``argnums``
    when it is a tuple). With ``has_aux``: ``(jacobian, aux)``. ``chunk_size``: how many basis rows run
    in one batch (less memory), as vmap's.

    Example:
        >>> import flambeau as fb
        >>> fb.func.jacrev(lambda x: x**2)(fb.tensor([1.0, 2.0])).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise FlambeauError("[func.jacrev] jacrev: `chunk_size` should be greater than 0.")
    by_rows = _jacobian_transform(func, argnums, has_aux, "jacrev", _reverse_jacobian)

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        if _batched_inside_vmap(args):
            return _jacobian_inside_vmap(func, args, argnums, has_aux, "jacrev", _VmapLevels())
        batched = _jacrev_by_vmap(func, args, argnums, has_aux, chunk_size)
        return by_rows(*args) if batched is None else batched

    return wrapper


def _jacrev_by_vmap(
    func: Callable, args: tuple, argnums: Any, has_aux: bool, chunk_size: int | None, create_graph: bool = False
) -> Any:
    """Note [jacrev by vmap]: the Jacobian's rows as ``vmap`` over the output basis of ``grad`` of one output
    element (as torch.func.jacrev vmaps its vjp): the function runs once on a batch of the basis rows, and
    one backward pass over that batched graph gives every row (Note [grad inside vmap]), where the row-by-row
    path runs a backward pass per output element. Used at the top level only (not inside another
    transform or vmap, not when an input requires grad unless ``create_graph``: the rows then keep a graph
    to the inputs, for autograd.functional's ``create_graph``); None when it does not apply or an op of the
    function has no batching rule, and the row-by-row path runs instead."""
    if _depth() > 0 or _vmap.current_level() is not None or (_keeps_graph(args) and not create_graph):
        return None
    positions = _normalize_argnums(argnums, len(args), "jacrev")
    with no_grad():
        output = func(*args)
    output, aux = _split_aux(output, has_aux, "jacrev", "jacrev(f, ...)(*args)")
    flat_out, out_spec = tree_flatten(output)
    if not flat_out or not all(isinstance(o, Tensor) for o in flat_out):
        return None
    sizes = [o.numel() for o in flat_out]
    total = sum(sizes)
    diff_leaves = [tree_flatten(args[p])[0] for p in positions]
    if total < 2 or any(not isinstance(x, Tensor) or not x.is_floating_point() for xs in diff_leaves for x in xs):
        return None
    dtype, device = flat_out[0].dtype, flat_out[0].device
    if any(o.dtype != dtype or not o.is_floating_point() for o in flat_out):
        return None

    def one_row(position: Any, *inner_args: Any) -> Any:
        out = func(*inner_args)
        out = out[0] if has_aux else out
        leaves = tree_flatten(out)[0]
        flat = leaves[0].reshape(-1) if len(leaves) == 1 else flambeau_core.cat([o.reshape(-1) for o in leaves])
        # The output element itself (one gather over the batch), not its dot product with a basis row: the
        # same gradient without a product and a sum over the whole batch of outputs.
        return flat[position]

    shifted = tuple(p + 1 for p in positions)
    row_grad = grad(one_row, argnums=shifted if isinstance(argnums, tuple) else shifted[0])
    element = flambeau_core.arange(total, device=device)
    in_dims = (0,) + (None,) * len(args)
    try:
        with warnings.catch_warnings(), _transform_level() if create_graph else nullcontext():
            warnings.filterwarnings("error", message=".*no batching rule", category=UserWarning)
            rows = _vmap.vmap(row_grad, in_dims=in_dims, chunk_size=chunk_size)(element, *args)
    except (UserWarning, FlambeauError, TypeError, NotImplementedError):
        return None
    # rows: the input structure, each leaf [total, *input shape]; split per output leaf.
    flat_rows, in_spec = tree_flatten(rows)
    jac_leaves, start = [], 0
    for o, n in zip(flat_out, sizes, strict=True):
        blocks = [r[start : start + n].reshape(*o.shape, *r.shape[1:]) for r in flat_rows]
        jac_leaves.append(tree_unflatten(blocks, in_spec))
        start += n
    jac = tree_unflatten(jac_leaves, out_spec)
    return (jac, _detach_tree(aux)) if has_aux else jac


def jacfwd(
    func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable:
    """A function returning the Jacobian of ``func`` with respect to the arguments at ``argnums``: one forward
    pass on dual tensors whose tangents are the input basis, batched by ``vmap`` (as torch's); inside another
    transform, or where an op has no batching rule or forward formula, column by column (the double-backward
    trick; Note [Transforms on one tape]). Same value and layout as ``jacrev``; cheaper when the inputs have
    fewer elements than the outputs. ``randomness`` is checked and only matters under ``vmap``.

    Example:
        >>> import flambeau as fb
        >>> fb.func.jacfwd(lambda x: fb.stack([x.sum(), (x * x).sum(), x.prod()]))(fb.tensor([1.0, 2.0])).tolist()
        [[1.0, 1.0], [2.0, 4.0], [2.0, 1.0]]
    """
    if randomness not in ("error", "different", "same"):
        raise FlambeauError(
            f"[func.jacfwd] Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}"
        )
    by_columns = _jacobian_transform(func, argnums, has_aux, "jacfwd", _forward_jacobian)

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        batched = _jacfwd_by_vmap(func, args, argnums, has_aux)
        return by_columns(*args) if batched is None else batched

    return wrapper


def _jacfwd_by_vmap(func: Callable, args: tuple, argnums: Any, has_aux: bool) -> Any:
    """The Jacobian's columns as ``vmap`` over the input basis of ``jvp`` (as torch.func.jacfwd): the function
    runs once on dual tensors whose tangents are the basis rows, the primals shared (Note [jacrev by vmap] for
    the other direction). Top level only; None when it does not apply or an op has no batching rule or no
    forward formula, and the column-by-column path runs instead."""
    if has_aux or _depth() > 0 or _vmap.current_level() is not None or _keeps_graph(args):
        return None  # has_aux: the auxiliary output is the columns' shared one; the column path returns it
    if _current_dual_level() >= 0:
        return None
    positions = _normalize_argnums(argnums, len(args), "jacfwd")
    diff = tuple(args[p] for p in positions)
    flat_in, diff_spec = tree_flatten(diff)
    in_spec = tree_flatten(args[positions[0]] if isinstance(argnums, int) else diff)[1]
    if not flat_in or any(type(x) is not Tensor or not x.is_floating_point() for x in flat_in):
        return None
    sizes = [x.numel() for x in flat_in]
    total = sum(sizes)
    if total < 2 or len({x.dtype for x in flat_in}) > 1:
        return None

    of_diff = _of_differentiated(func, args, positions)

    def one_column(basis_row: Tensor) -> Any:
        tangents, start = [], 0
        for x, n in zip(flat_in, sizes, strict=True):
            tangents.append(basis_row[start : start + n].reshape(x.shape))
            start += n
        return jvp(of_diff, diff, tree_unflatten(tangents, diff_spec))[1]

    basis = flambeau_core.eye(total, dtype=flat_in[0].dtype, device=flat_in[0].device)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*no batching rule", category=UserWarning)
            columns = _vmap.vmap(one_column)(basis)
    except (UserWarning, FlambeauError, TypeError, NotImplementedError):
        return None
    flat_cols, out_spec = tree_flatten(columns)  # each [total, *output shape]
    jac_leaves = []
    for c in flat_cols:
        out_shape = tuple(c.shape[1:])
        blocks, start = [], 0
        for x, n in zip(flat_in, sizes, strict=True):
            block = c[start : start + n].reshape(*x.shape, *out_shape)
            blocks.append(block.permute(*range(x.dim(), block.dim()), *range(x.dim())).contiguous())
            start += n
        jac_leaves.append(tree_unflatten(blocks, in_spec))
    return tree_unflatten(jac_leaves, out_spec)


def _vectorized_jacobian(
    func: Callable, inputs: tuple, strategy: str, create_graph: bool, of_gradient: bool
) -> tuple[bool, list] | None:
    """autograd.functional's ``vectorize=True`` Jacobian (Note [vectorized jacobian] in
    flambeau_autograd.functional, which this package registers it with): ``jacrev``'s batched rows
    (Note [jacrev by vmap]) or ``jacfwd``'s batched columns, of ``func`` or (``of_gradient``) of its gradient.
    ``(outputs_is_tuple, blocks)`` with ``blocks[i][j]`` the block of output ``i`` and input ``j``; None where
    they cannot batch ``func``."""
    argnums = tuple(range(len(inputs)))
    target = grad(func, argnums) if of_gradient else func
    if strategy == "forward-mode":
        jac = _jacfwd_by_vmap(target, inputs, argnums, False)
    else:
        jac = _jacrev_by_vmap(target, inputs, argnums, False, None, create_graph)
    if jac is None:
        return None
    # a tuple over the inputs per output: jac itself for one Tensor output, its items for a tuple of outputs
    outputs_tuple = isinstance(jac[0], (tuple, list))
    return outputs_tuple, [list(row) for row in (jac if outputs_tuple else (jac,))]


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """A function returning the Hessian of a scalar ``func`` with respect to the arguments at ``argnums``:
    ``jacrev(jacrev(func, argnums), argnums)`` (reverse over reverse, the outer one by vmap where every op
    batches: Note [jacrev by vmap]; PyTorch runs forward over reverse).

    Example:
        >>> import flambeau as fb
        >>> fb.func.hessian(lambda x: (x**3).sum())(fb.tensor([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacrev(jacrev(func, argnums), argnums)
