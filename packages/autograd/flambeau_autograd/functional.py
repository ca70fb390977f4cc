"""Higher-order derivatives of Python functions, as ``torch.autograd.functional``:
``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp``.

Each takes ``func`` and ``inputs`` (a Tensor or a tuple of Tensors) and returns results that keep
PyTorch's conventions: a Tensor where the function takes (or returns) one Tensor, a tuple where it
takes (or returns) a tuple. Without ``create_graph`` the results are detached.

Modes, as PyTorch's: ``vjp``, ``vhp`` and the reverse-mode ``jacobian`` run backward passes over a graph
recorded once; ``jvp`` and ``hvp`` are the double-backward trick (the gradient of ``u -> v^T J^T u``), which
needs every op's backward to be differentiable itself; the forward-mode ``jacobian`` (and forward-over-reverse
``hessian``) runs ``func`` on dual tensors (``flambeau_autograd.forward_ad``).

Note [vectorized jacobian]
``vectorize=True`` batches a Jacobian's passes, as PyTorch's: reverse mode gets every row from one
backward pass (over ``func`` run once on the batch of output basis vectors: Note [jacrev by vmap] in
``flambeau.func``), forward mode every column from one forward pass on dual tensors whose tangents are the
batch of input basis vectors. The batching is ``vmap``'s, which lives in the meta-package above this one:
``flambeau.func`` registers its batched Jacobians here on import (``_register_vectorized_jacobian``).
Without them, or where they cannot batch ``func`` (an op with no batching rule), ``vectorize=True`` runs one
pass per output (input) element, with the same values. ``flambeau.func`` is built on this module's helpers.

Example:
    >>> import flambeau_core as fc
    >>> x = fc.tensor([1.0, 2.0], dtype=fc.float64)
    >>> jacobian(lambda t: t * t, x).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    >>> hessian(lambda t: (t**3).sum(), x).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flambeau_core
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

from flambeau_autograd import _C, forward_ad
from flambeau_autograd.grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

# The batched Jacobians flambeau.func registers (Note [vectorized jacobian]); None without the meta-package.
_vectorized_jacobian: Callable[..., Any] | None = None


def _register_vectorized_jacobian(fn: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """Makes ``fn`` compute ``vectorize=True`` Jacobians (Note [vectorized jacobian]); returns the one it
    replaces (None: unregisters).

    ``fn(func, inputs, strategy, create_graph, of_gradient)`` gets ``inputs`` as a tuple of Tensors and
    returns ``(outputs_is_tuple, blocks)`` with ``blocks[i][j]`` the Jacobian of output ``i`` with respect to
    input ``j`` (shape ``outputs[i].shape + inputs[j].shape``), or None where it cannot batch ``func`` (the
    element-by-element passes run instead). ``of_gradient``: the Jacobian of the gradient of the scalar
    ``func`` (its Hessian), the gradient being a tuple over the inputs. With ``create_graph`` the blocks keep
    a graph to ``inputs`` (which then require grad). The meta-package ``flambeau`` registers
    ``flambeau.func``'s batched ``jacrev``/``jacfwd`` when it is imported.

    Example:
        >>> import flambeau_core as fc
        >>> previous = _register_vectorized_jacobian(None)  # vectorize=True now runs the per-element passes
        >>> jacobian(lambda t: t * t, fc.tensor([1.0, 2.0]), vectorize=True).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
        >>> _ = _register_vectorized_jacobian(previous)
    """
    global _vectorized_jacobian
    previous, _vectorized_jacobian = _vectorized_jacobian, fn
    return previous


# --- helpers shared with flambeau.func -------------------------------------------------------


def _differentiable_input(x: Tensor, keep_graph: bool) -> Tensor:
    """A fresh node to differentiate with respect to: a view of ``x`` (so a graph above ``x`` stays
    connected) when ``keep_graph`` and ``x`` requires grad, else a detached leaf that requires grad.

    A fresh node even when ``x`` already requires grad: differentiating with respect to ``x`` itself would
    mix in every other use of ``x`` in the function (perturbation confusion in nested transforms)."""
    if keep_graph and x.requires_grad:
        return x.view_as(x)
    leaf = x.detach().requires_grad_()
    tangent = _C._unpack_dual(x)[1]  # a dual tensor's tangent stays with it (forward over reverse)
    return leaf if tangent is None else _C._make_dual(leaf, tangent)


def _backward(
    outputs: Sequence[Tensor], grad_outputs: Sequence[Tensor | None], inputs: Sequence[Tensor], create_graph: bool
) -> list:
    """The gradients of ``outputs`` with respect to ``inputs`` (None where independent); the graph is kept.

    Outputs that do not require grad are left out (their gradient contribution is zero)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs, strict=True) if o.requires_grad]
    if not pairs:
        return [None] * len(inputs)
    outs, grads = zip(*pairs, strict=True)
    return list(_C._run_backward(list(outs), list(grads), True, bool(create_graph), list(inputs), True, False))


def _reverse_jacobian(outputs: Sequence[Tensor], inputs: Sequence[Tensor], create_graph: bool) -> list:
    """``blocks[i][j]``, the Jacobian of ``outputs[i]`` with respect to ``inputs[j]`` (shape
    ``outputs[i].shape + inputs[j].shape``), or None where ``outputs[i]`` does not depend on ``inputs[j]``.

    One backward pass per output element over the graph recorded once (the basis rows of an identity as
    the output gradients): without batched gradients (vmap), that is the fewest passes reverse mode needs."""
    blocks = []
    for out in outputs:
        m = out.numel()
        if not out.requires_grad or m == 0:
            blocks.append([None if m else flambeau_core.zeros(*out.shape, *x.shape, dtype=x.dtype) for x in inputs])
            continue
        basis = flambeau_core.eye(m, dtype=out.dtype, device=out.device)
        rows = [
            _C._run_backward([out], [basis[k].view(out.shape)], True, bool(create_graph), list(inputs), True, False)
            for k in range(m)
        ]
        row_blocks = []
        for j, x in enumerate(inputs):
            column = [r[j] for r in rows]
            if all(g is None for g in column):
                row_blocks.append(None)
                continue
            zero = None
            for k, g in enumerate(column):
                if g is None:
                    zero = flambeau_core.zeros_like(x) if zero is None else zero
                    column[k] = zero
            row_blocks.append(flambeau_core.stack(column, 0).reshape(*out.shape, *x.shape))
        blocks.append(row_blocks)
    return blocks


def _linear_in_cotangent(outputs: Sequence[Tensor], inputs: Sequence[Tensor]) -> tuple[list, list]:
    """The double-backward trick's first half: ``(u, g)`` with ``u`` zero cotangents (leaves that require
    grad) for the outputs and ``g = J^T u`` built with a graph, so that the gradient of ``g`` with respect
    to ``u`` along ``v`` is the Jacobian-vector product ``J v``."""
    us = [flambeau_core.zeros_like(o).requires_grad_() for o in outputs]
    with enable_grad():
        gs = _backward(outputs, us, inputs, create_graph=True)
    return us, gs


def _jvp_from_vjp_graph(us: list, gs: list, tangents: Sequence[Tensor], create_graph: bool) -> list:
    """``J v`` per output (None where an output does not depend on the inputs) from ``_linear_in_cotangent``."""
    pairs = [(g, t) for g, t in zip(gs, tangents, strict=True) if g is not None and g.requires_grad]
    if not pairs:
        return [None] * len(us)
    gs_used, ts = zip(*pairs, strict=True)
    return list(_C._run_backward(list(gs_used), list(ts), True, bool(create_graph), us, True, False))


def _forward_jacobian(outputs: Sequence[Tensor], inputs: Sequence[Tensor], create_graph: bool) -> list:
    """Like ``_reverse_jacobian``, column by column: one backward pass per input element over the linear
    graph of ``J^T u`` (cheaper than rows when the inputs have fewer elements than the outputs)."""
    us, gs = _linear_in_cotangent(outputs, inputs)
    columns: list[list] = [[] for _ in outputs]  # columns[i][j]: the block of output i, input j, or None
    for j, x in enumerate(inputs):
        n = x.numel()
        g = gs[j]
        if g is None or not g.requires_grad or n == 0:
            for i, out in enumerate(outputs):
                columns[i].append(None if n else flambeau_core.zeros(*out.shape, *x.shape, dtype=out.dtype))
            continue
        basis = flambeau_core.eye(n, dtype=x.dtype, device=x.device)
        cols = [
            _C._run_backward([g], [basis[k].view(x.shape)], True, bool(create_graph), us, True, False) for k in range(n)
        ]
        for i, out in enumerate(outputs):
            per = [c[i] for c in cols]
            if all(t is None for t in per):
                columns[i].append(None)
                continue
            zero = flambeau_core.zeros_like(out)
            per = [zero if t is None else t for t in per]
            # stacked along the last dim: out.shape + (n,), then the input's shape
            columns[i].append(flambeau_core.stack(per, -1).reshape(*out.shape, *x.shape))
    return columns


def _forward_jacobian_by_duals(
    func: Callable, inputs: Sequence[Tensor], fn_name: str
) -> tuple[bool, tuple, list] | None:
    """``(outputs_is_tuple, outputs, blocks)`` (``blocks`` as ``_reverse_jacobian``'s) by forward mode, one pass
    on dual tensors per input element (``func`` runs once per element, its tangent a basis vector); None when
    a dual level is active already (forward mode has one level: the caller differentiates another way)."""
    if _C._current_dual_level() >= 0:
        return None
    outputs_tuple, outputs = None, None
    columns: list[list[list]] = []  # columns[j][k]: the output tangents for element k of input j
    for j, x in enumerate(inputs):
        basis = flambeau_core.eye(x.numel(), dtype=x.dtype, device=x.device)
        columns.append([])
        for k in range(x.numel()):
            with forward_ad.dual_level():
                args = list(inputs)
                args[j] = forward_ad.make_dual(x, basis[k].view(x.shape))
                outputs_tuple, duals = _as_tuple(func(*args), "outputs of the user-provided function", fn_name)
                unpacked = [forward_ad.unpack_dual(d) for d in duals]
            outputs = tuple(u.primal for u in unpacked)
            columns[j].append([u.tangent for u in unpacked])
    if outputs is None:  # no input has an element: func runs once for the outputs' shapes
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    blocks = []
    for i, out in enumerate(outputs):
        row = []
        for x, cols in zip(inputs, columns, strict=True):
            per = [c[i] for c in cols]
            if not per or all(t is None for t in per):
                row.append(None)
                continue
            zero = flambeau_core.zeros_like(out)
            per = [zero if t is None else t for t in per]
            row.append(flambeau_core.stack(per, -1).reshape(*out.shape, *x.shape))
        blocks.append(row)
    return outputs_tuple, outputs, blocks


# --- torch.autograd.functional ------------------------------------------------------------------


def _as_tuple(value: Any, what: str, fn_name: str) -> tuple[bool, tuple]:
    """``(was_a_tuple, value as a tuple of Tensors)``; a TypeError for anything else."""
    if isinstance(value, Tensor):
        return False, (value,)
    if isinstance(value, (tuple, list)):
        for i, el in enumerate(value):
            if not isinstance(el, Tensor):
                raise TypeError(
                    f"[autograd.functional.{fn_name}] The {what} given to {fn_name} must be either a Tensor or a "
                    f"tuple of Tensors but the value at index {i} has type {type(el).__name__}."
                )
        return True, tuple(value)
    raise TypeError(
        f"[autograd.functional.{fn_name}] The {what} given to {fn_name} must be either a Tensor or a tuple of "
        f"Tensors but the given {what} has type {type(value).__name__}."
    )


def _unpack(res: tuple, was_tuple: bool) -> Any:
    return res if was_tuple else res[0]


def _prepare_inputs(inputs: tuple, create_graph: bool) -> tuple:
    return tuple(_differentiable_input(x, create_graph) for x in inputs)


def _finish(tensors: Sequence[Any], create_graph: bool) -> tuple:
    """Detaches the results unless the caller asked for a graph (PyTorch returns no history otherwise)."""
    return tuple(t if (create_graph or t is None) else t.detach() for t in tensors)


def _call(func: Callable, inputs: tuple, fn_name: str) -> tuple[bool, tuple]:
    with enable_grad():
        out = func(*inputs)
    return _as_tuple(out, "outputs of the user-provided function", fn_name)


def _validate_v(v: Any, other: tuple, other_is_tuple: bool, fn_name: str, other_name: str) -> tuple:
    """``v`` as a tuple shaped as ``other`` (the outputs for vjp, the inputs otherwise); None stands for 1
    when ``other`` is one single-element Tensor."""
    if v is None:
        if len(other) != 1 or other[0].numel() != 1:
            raise FlambeauError(
                f"[autograd.functional.{fn_name}] The vector v can only be None if {other_name} is a single Tensor "
                "with a single element."
            )
        return (flambeau_core.ones_like(other[0]),)
    _, vs = _as_tuple(v, "v", fn_name)
    if len(vs) != len(other):
        if other_is_tuple:
            raise FlambeauError(
                f"[autograd.functional.{fn_name}] v is a tuple of invalid length: should be {len(other)} but got "
                f"{len(vs)}."
            )
        raise FlambeauError(f"[autograd.functional.{fn_name}] The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(vs, other, strict=True)):
        if tuple(a.shape) != tuple(b.shape):
            where = f"Entry {i} in " if other_is_tuple else ""
            raise FlambeauError(
                f"[autograd.functional.{fn_name}] {where}v has invalid size: should be {tuple(b.shape)} but got "
                f"{tuple(a.shape)}."
            )
    return vs


_THE_INPUT = "the input to the user-provided function"


def _check_outputs_require_grad(outputs: tuple, strict: bool, fn_name: str) -> None:
    if not strict:
        return
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            raise FlambeauError(
                f"[autograd.functional.{fn_name}] Output {i} of the user-provided function does not require "
                "gradients. The outputs must be computed in a differentiable manner from the input when running "
                "in strict mode."
            )


def _fill_zeros(grads: Sequence[Any], refs: Sequence[Tensor], strict: bool, fn_name: str, what: str) -> list:
    out = []
    for i, (g, r) in enumerate(zip(grads, refs, strict=True)):
        if g is None:
            if strict:
                raise FlambeauError(
                    f"[autograd.functional.{fn_name}] The {what} of the user-provided function is independent of "
                    f"input {i}. This is not allowed in strict mode."
                )
            g = flambeau_core.zeros_like(r)
        out.append(g)
    return out


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``: returns ``(func_output, vjp)``.

    Args:
        func: a function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors (``func(*inputs)``).
        v: the vector, shaped as the output(s); may be None when ``func`` returns one single-element Tensor.
        create_graph: give the results a graph (for higher-order derivatives).
        strict: raise when an input does not affect the outputs, instead of returning zeros.

    ``vjp`` is a Tensor when ``inputs`` is a Tensor, else a tuple; ``func_output`` keeps ``func``'s form.

    Example:
        >>> import flambeau_core as fc
        >>> out, g = vjp(lambda x: x.exp().sum(1), fc.zeros(2, 2), fc.tensor([1.0, 2.0]))
        >>> out.tolist(), g.tolist()
        ([2.0, 2.0], [[1.0, 1.0], [2.0, 2.0]])
    """
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs = _prepare_inputs(inputs, create_graph)
    outputs_tuple, outputs = _call(func, inputs, "vjp")
    _check_outputs_require_grad(outputs, strict, "vjp")
    vs = _validate_v(v, outputs, outputs_tuple, "vjp", "the output of the user-provided function")
    with enable_grad():
        grads = _backward(outputs, vs, inputs, create_graph)
    grads = _fill_zeros(grads, inputs, strict, "vjp", "output")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(grads, create_graph), inputs_tuple)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs``: returns ``(func_output, jvp)``.

    Computed with the double-backward trick on reverse mode (as PyTorch's own ``autograd.functional.jvp``).
    ``v`` is shaped as the input(s) (None only for one single-element input); ``jvp`` keeps the form of
    ``func``'s output (a Tensor or a tuple).

    Example:
        >>> import flambeau_core as fc
        >>> out, t = jvp(lambda x: x * x, fc.tensor([1.0, 3.0]), fc.tensor([1.0, 1.0]))
        >>> out.tolist(), t.tolist()
        ([1.0, 9.0], [2.0, 6.0])
    """
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    vs = _validate_v(v, inputs, inputs_tuple, "jvp", _THE_INPUT)
    inputs = _prepare_inputs(inputs, create_graph)
    outputs_tuple, outputs = _call(func, inputs, "jvp")
    _check_outputs_require_grad(outputs, strict, "jvp")
    us, gs = _linear_in_cotangent(outputs, inputs)
    if strict:
        _fill_zeros(gs, inputs, strict, "jvp", "output")
    with enable_grad():
        tangents = _jvp_from_vjp_graph(us, gs, vs, create_graph)
    tangents = _fill_zeros(tangents, outputs, False, "jvp", "output")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(
        _finish(tangents, create_graph), outputs_tuple
    )


_STRATEGY_HINT = (
    'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more outputs '
    'than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use "reverse-mode".'
)


def jacobian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``.

    ``jacobian[i][j]`` has shape ``outputs[i].shape + inputs[j].shape``. The result is a Tensor for one
    Tensor in and one out, a tuple over the inputs (or outputs) when only those are a tuple, and a tuple of
    tuples when both are.

    ``strategy="reverse-mode"`` gets the rows by backward passes over a graph recorded once, one per output
    element; ``"forward-mode"`` gets the columns by forward passes on dual tensors and, as in PyTorch, requires
    ``vectorize=True`` (and neither ``create_graph`` nor ``strict``). ``vectorize=True`` batches the passes
    into one with ``vmap`` when the meta-package ``flambeau`` is installed (Note [vectorized jacobian] in this
    module), else runs them one per element; the values are the same.

    Example:
        >>> import flambeau_core as fc
        >>> jacobian(lambda x: x.exp().sum(1), fc.zeros(2, 2)).tolist()
        [[[1.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]]]
        >>> [j.shape for j in jacobian(lambda x, y: 2 * x + 3 * y, (fc.ones(2), fc.ones(2)))]
        [flambeau.Size([2, 2]), flambeau.Size([2, 2])]
        >>> jacobian(lambda x: x**2, fc.tensor([1.0, 3.0]), vectorize=True, strategy="forward-mode").tolist()
        [[2.0, 0.0], [0.0, 6.0]]
    """
    return _jacobian(func, inputs, create_graph, strict, vectorize, strategy, "jacobian")


def _jacobian(
    func: Callable, inputs: Any, create_graph: bool, strict: bool, vectorize: bool, strategy: str, fn_name: str
) -> Any:
    """``jacobian``; ``fn_name`` names the function the user called in the errors (hessian runs through here
    with the gradient of its function, which then is the Jacobian's ``func``: Note [vectorized jacobian])."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise FlambeauError(f"[autograd.functional.{fn_name}] {_STRATEGY_HINT}")
    if strategy == "forward-mode":
        if create_graph:
            raise FlambeauError(
                f'[autograd.functional.{fn_name}] `create_graph=True` and `strategy="forward-mode"` are not '
                'supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.'
            )
        if strict:
            raise FlambeauError(
                f'[autograd.functional.{fn_name}] `strict=True` and `strategy="forward-mode"` are not supported '
                'together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                f"[autograd.functional.{fn_name}] Computing Jacobian using forward-AD or forward-over-reverse "
                "Hessian is only implemented for `vectorize=True`."
            )
    if strict and vectorize:
        raise FlambeauError(
            f"[autograd.functional.{fn_name}] `strict=True` and `vectorized=True` are not supported together. "
            "Please either set `strict=False` or `vectorize=False`."
        )
    of_gradient = isinstance(func, _Gradient)
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    batched = None
    if vectorize and _vectorized_jacobian is not None:
        given = _prepare_inputs(inputs, True) if create_graph else tuple(x.detach() for x in inputs)
        target = func.scalar if of_gradient else func
        batched = _vectorized_jacobian(target, given, strategy, create_graph, of_gradient)
    if batched is not None:
        outputs_tuple, blocks = batched
        return _unpack(tuple(_unpack(_finish(row, create_graph), inputs_tuple) for row in blocks), outputs_tuple)
    if strategy == "forward-mode":
        with enable_grad():  # (hessian's gradient records its graph on the dual tensors)
            by_duals = _forward_jacobian_by_duals(func, tuple(x.detach() for x in inputs), fn_name)
        if by_duals is None:  # inside another forward-mode computation: the double-backward trick
            inputs = _prepare_inputs(inputs, create_graph)
            outputs_tuple, outputs = _call(func, inputs, fn_name)
            with enable_grad():
                blocks = _forward_jacobian(outputs, inputs, create_graph)
        else:
            outputs_tuple, outputs, blocks = by_duals
    else:
        inputs = _prepare_inputs(inputs, create_graph)
        outputs_tuple, outputs = _call(func, inputs, fn_name)
        _check_outputs_require_grad(outputs, strict, fn_name)
        with enable_grad():
            blocks = _reverse_jacobian(outputs, inputs, create_graph)
    result = []
    for i, (out, row) in enumerate(zip(outputs, blocks, strict=True)):
        filled = []
        for j, (x, block) in enumerate(zip(inputs, row, strict=True)):
            if block is None:
                if strict and out.numel():
                    raise FlambeauError(
                        f"[autograd.functional.{fn_name}] Output {i} of the user-provided function is independent "
                        f"of input {j}. This is not allowed in strict mode."
                    )
                block = flambeau_core.zeros(*out.shape, *x.shape, dtype=x.dtype, device=x.device)
            filled.append(block)
        result.append(_unpack(_finish(filled, create_graph), inputs_tuple))
    return _unpack(tuple(result), outputs_tuple)


def _single_scalar_output(func: Callable, fn_name: str) -> Callable:
    def wrapped(*inputs: Tensor) -> Tensor:
        out = func(*inputs)
        # (a tensor-like: vmap's batched tensor, when flambeau.func batches hessian's Jacobian)
        outs = (out,) if is_tensor_like(out) else _as_tuple(out, "outputs of the user-provided function", fn_name)[1]
        if len(outs) != 1:
            raise FlambeauError(
                f"[autograd.functional.{fn_name}] The function given to {fn_name} should return a single Tensor"
            )
        if outs[0].numel() != 1:
            raise FlambeauError(
                f"[autograd.functional.{fn_name}] The Tensor returned by the function given to {fn_name} should "
                "contain a single element"
            )
        return outs[0].reshape(())

    return wrapped


class _Gradient:
    """The gradient of a scalar function, a tuple over its inputs: the function whose Jacobian ``hessian``
    computes. A class, so that a batched Jacobian (Note [vectorized jacobian]) can tell it from any function
    and differentiate ``scalar`` twice with its own transforms."""

    def __init__(self, func: Callable, strict: bool) -> None:
        self.scalar = _single_scalar_output(func, "hessian")
        self.strict = strict

    def __call__(self, *inputs: Tensor) -> tuple:
        # Fresh nodes (with a graph to the Jacobian's inputs, and their tangents in forward over reverse).
        inputs = _prepare_inputs(inputs, True)
        out = self.scalar(*inputs)
        _check_outputs_require_grad((out,), self.strict, "hessian")
        grads = _backward([out], [None], inputs, create_graph=True)
        for i, g in enumerate(grads):
            if g is None and self.strict:
                raise FlambeauError(
                    f"[autograd.functional.hessian] The jacobian of the user-provided function is independent of "
                    f"input {i}. This is not allowed in strict mode."
                )
        return tuple(flambeau_core.zeros_like(x) if g is None else g for g, x in zip(grads, inputs, strict=True))


def hessian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a scalar function ``func`` at ``inputs``: the Jacobian of its gradient.

    ``hessian[i][j]`` has shape ``inputs[i].shape + inputs[j].shape``: a Tensor for one Tensor input, a tuple
    of tuples for a tuple of inputs. ``func`` must return a single Tensor of one element. The gradient is
    reverse mode's; ``outer_jacobian_strategy`` and ``vectorize`` are those of the Jacobian of the gradient
    (``jacobian``'s: ``"forward-mode"`` is forward over reverse and requires ``vectorize=True``).

    Example:
        >>> import flambeau_core as fc
        >>> hessian(lambda x: x.pow(3).sum(), fc.tensor([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
        >>> hessian(lambda x: x.pow(3).sum(), fc.tensor([1.0, 2.0]), vectorize=True,
        ...         outer_jacobian_strategy="forward-mode").tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise FlambeauError(
            '[autograd.functional.hessian] Expected strategy to be either "forward-mode" or "reverse-mode".'
        )
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    res = _jacobian(
        _Gradient(func, strict), inputs, create_graph, strict, vectorize, outer_jacobian_strategy, "hessian"
    )
    return res if inputs_tuple else res[0][0]


def _scalar_and_gradient(func: Callable, inputs: tuple, strict: bool, fn_name: str) -> tuple:
    """``(output, gradient)`` of a scalar ``func``, the gradient with a graph (for a second backward)."""
    out = _single_scalar_output(func, fn_name)
    with enable_grad():
        value = out(*inputs)
        _check_outputs_require_grad((value,), strict, fn_name)
        grads = _backward([value], [None], inputs, create_graph=True)
    grads = _fill_zeros(grads, inputs, strict, fn_name, "output")
    return value, grads


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """The vector-Hessian product ``v^T H`` of a scalar ``func`` at ``inputs``: ``(func_output, vhp)``.

    ``vhp`` keeps the form of ``inputs`` (a Tensor or a tuple); ``v`` is shaped as the input(s).

    Example:
        >>> import flambeau_core as fc
        >>> out, r = vhp(lambda x: x.pow(3).sum(), fc.tensor([1.0, 2.0]), fc.tensor([1.0, 1.0]))
        >>> out.item(), r.tolist()
        (9.0, [6.0, 12.0])
    """
    return _second_order_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """The Hessian-vector product ``H v`` of a scalar ``func`` at ``inputs``: ``(func_output, hvp)``.

    The Hessian of a twice-differentiable function is symmetric, so this is ``vhp``'s value (PyTorch computes
    it with the double-backward trick; the two agree to rounding).

    Example:
        >>> import flambeau_core as fc
        >>> out, r = hvp(lambda x, y: (2 * x.pow(2) + 3 * y.pow(2)).sum(),
        ...              (fc.ones(2), fc.ones(2)), (fc.ones(2), fc.ones(2)))
        >>> [t.tolist() for t in r]
        [[4.0, 4.0], [6.0, 6.0]]
    """
    return _second_order_product(func, inputs, v, create_graph, strict, "hvp")


def _second_order_product(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool, fn_name: str) -> tuple:
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    vs = _validate_v(v, inputs, inputs_tuple, fn_name, _THE_INPUT)
    inputs = _prepare_inputs(inputs, create_graph)
    value, grads = _scalar_and_gradient(func, inputs, strict, fn_name)
    with enable_grad():
        second = _backward(grads, vs, inputs, create_graph)
    for i, g in enumerate(second):
        if g is None and strict:
            raise FlambeauError(
                f"[autograd.functional.{fn_name}] The hessian of the user-provided function with respect to input "
                f"{i} is independent of the input. This is not allowed in strict mode."
            )
    second = _fill_zeros(second, inputs, False, fn_name, "hessian")
    return _finish((value,), create_graph)[0], _unpack(_finish(second, create_graph), inputs_tuple)
