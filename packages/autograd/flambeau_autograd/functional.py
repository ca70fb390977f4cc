"""Higher-order derivatives of Python functions, as ``torch.autograd.functional``:
``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp``.

Each takes ``func`` and ``inputs`` (a Tensor or a tuple of Tensors) and returns results that keep
PyTorch's conventions: a Tensor where the function takes (or returns) one Tensor, a tuple where it
takes (or returns) a tuple. Without ``create_graph`` the results are detached.

Everything runs on reverse mode: a Jacobian is one backward pass per output element over a graph
recorded once (so ``vectorize`` changes nothing, and "forward-mode" builds the Jacobian one column
at a time with the double-backward trick); a Jacobian-vector product is the double-backward trick
(the gradient of ``u -> v^T J^T u``), which needs every op's backward to be differentiable itself.
``flambeau.func`` is built on the same helpers.

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

from flambeau_autograd import _C
from flambeau_autograd.grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


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

    ``strategy="reverse-mode"`` runs one backward pass per output element; ``"forward-mode"`` one per input
    element (the double-backward trick, as flambeau has no dual tensors yet) and, as in PyTorch, requires
    ``vectorize=True``. ``vectorize`` otherwise changes nothing: the passes run one after another over a graph
    recorded once.

    Example:
        >>> import flambeau_core as fc
        >>> jacobian(lambda x: x.exp().sum(1), fc.zeros(2, 2)).tolist()
        [[[1.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]]]
        >>> [j.shape for j in jacobian(lambda x, y: 2 * x + 3 * y, (fc.ones(2), fc.ones(2)))]
        [(2, 2), (2, 2)]
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise FlambeauError(f"[autograd.functional.jacobian] {_STRATEGY_HINT}")
    if strategy == "forward-mode":
        if create_graph:
            raise FlambeauError(
                '[autograd.functional.jacobian] `create_graph=True` and `strategy="forward-mode"` are not supported '
                'together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.'
            )
        if strict:
            raise FlambeauError(
                '[autograd.functional.jacobian] `strict=True` and `strategy="forward-mode"` are not supported '
                'together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                "[autograd.functional.jacobian] Computing Jacobian using forward-AD or forward-over-reverse Hessian "
                "is only implemented for `vectorize=True`."
            )
    if strict and vectorize:
        raise FlambeauError(
            "[autograd.functional.jacobian] `strict=True` and `vectorized=True` are not supported together. Please "
            "either set `strict=False` or `vectorize=False`."
        )
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = _prepare_inputs(inputs, create_graph)
    outputs_tuple, outputs = _call(func, inputs, "jacobian")
    _check_outputs_require_grad(outputs, strict, "jacobian")
    with enable_grad():
        if strategy == "forward-mode":
            blocks = _forward_jacobian(outputs, inputs, create_graph)
        else:
            blocks = _reverse_jacobian(outputs, inputs, create_graph)
    result = []
    for i, (out, row) in enumerate(zip(outputs, blocks, strict=True)):
        filled = []
        for j, (x, block) in enumerate(zip(inputs, row, strict=True)):
            if block is None:
                if strict and out.numel():
                    raise FlambeauError(
                        f"[autograd.functional.jacobian] Output {i} of the user-provided function is independent of "
                        f"input {j}. This is not allowed in strict mode."
                    )
                block = flambeau_core.zeros(*out.shape, *x.shape, dtype=x.dtype, device=x.device)
            filled.append(block)
        result.append(_unpack(_finish(filled, create_graph), inputs_tuple))
    return _unpack(tuple(result), outputs_tuple)


def _single_scalar_output(func: Callable, fn_name: str) -> Callable:
    def wrapped(*inputs: Tensor) -> Tensor:
        _, outs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
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
    of tuples for a tuple of inputs. ``func`` must return a single Tensor of one element.
    ``outer_jacobian_strategy`` and ``vectorize`` are checked as PyTorch checks them; the Hessian is computed
    reverse over reverse either way.

    Example:
        >>> import flambeau_core as fc
        >>> hessian(lambda x: x.pow(3).sum(), fc.tensor([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise FlambeauError(
            '[autograd.functional.hessian] Expected strategy to be either "forward-mode" or "reverse-mode".'
        )
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    scalar = _single_scalar_output(func, "hessian")

    def gradient(*inp: Tensor) -> tuple:
        out = scalar(*inp)
        _check_outputs_require_grad((out,), strict, "hessian")
        grads = _backward([out], [None], inp, create_graph=True)
        for i, g in enumerate(grads):
            if g is None and strict:
                raise FlambeauError(
                    f"[autograd.functional.hessian] The jacobian of the user-provided function is independent of "
                    f"input {i}. This is not allowed in strict mode."
                )
        return tuple(flambeau_core.zeros_like(x) if g is None else g for g, x in zip(grads, inp, strict=True))

    if outer_jacobian_strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(
            "[autograd.functional.hessian] Computing Jacobian using forward-AD or forward-over-reverse Hessian is "
            "only implemented for `vectorize=True`."
        )
    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=False)
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
