"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck``.

Example:
    >>> import flambeau_core as fc
    >>> x = fc.tensor([0.5, 1.5], dtype=fc.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).exp(), (x,))
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flambeau_core
from flambeau_core._testing_hooks import gradcheck_graph_observers

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients differ.

    Example:
        >>> import flambeau as fb
        >>> class WrongGrad(fb.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g  # should be 2 * x * g
        >>> x = fb.tensor([1.5], dtype=fb.float64, requires_grad=True)
        >>> try:
        ...     fb.autograd.gradcheck(WrongGrad.apply, (x,))
        ... except fb.autograd.GradcheckError:
        ...     print("mismatch")
        mismatch
    """


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _flat(t: Any) -> list[float]:
    v = t.tolist()
    out: list[float] = []

    def rec(a: Any) -> None:
        if isinstance(a, list):
            for b in a:
                rec(b)
        else:
            out.append(float(a))

    rec(v)
    return out


def _from_flat(values: list[float], like: Any) -> Any:
    t = flambeau_core.tensor(values, dtype=like.dtype)
    return t.reshape(tuple(like.shape))


def _outputs(fn: Callable, inputs: Sequence[Any]) -> tuple:
    return tuple(o for o in _as_tuple(fn(*inputs)) if isinstance(o, flambeau_core.Tensor))


def _numerical_jacobian(fn: Callable, inputs: tuple, eps: float) -> list[list[list[list[float]]]]:
    """jac[i][o][k][j] = d out_o[k] / d in_i[j] by central differences."""
    # Not under no_grad: fn may itself differentiate (gradgradcheck's vjp).
    jac = []
    base = [_flat(x.detach()) if isinstance(x, flambeau_core.Tensor) else None for x in inputs]
    n_out = [len(_flat(o)) for o in _outputs(fn, inputs)]
    for i, x in enumerate(inputs):
        if not (isinstance(x, flambeau_core.Tensor) and x.requires_grad):
            jac.append(None)
            continue
        per_out = [[[0.0] * len(base[i]) for _ in range(n)] for n in n_out]
        for j in range(len(base[i])):
            vals = []
            for sign in (1.0, -1.0):
                pert = list(base[i])
                pert[j] += sign * eps
                args = list(inputs)
                args[i] = _from_flat(pert, x).requires_grad_()
                vals.append([_flat(o) for o in _outputs(fn, args)])
            for o in range(len(n_out)):
                for k in range(n_out[o]):
                    per_out[o][k][j] = (vals[0][o][k] - vals[1][o][k]) / (2 * eps)
        jac.append(per_out)
    return jac


def _analytical_jacobian(fn: Callable, inputs: tuple) -> list:
    from flambeau_autograd import grad

    diff = [i for i, x in enumerate(inputs) if isinstance(x, flambeau_core.Tensor) and x.requires_grad]
    outs = _outputs(fn, inputs)
    for observe in gradcheck_graph_observers:  # test tooling only (flambeau_core._testing_hooks)
        observe(outs)
    jac: list = [None if i not in diff else [] for i in range(len(inputs))]
    for i in diff:
        jac[i] = [[None] * len(_flat(o)) for o in outs]
    for o, out in enumerate(outs):
        n = len(_flat(out))
        for k in range(n):
            onehot = [0.0] * n
            onehot[k] = 1.0
            if not out.requires_grad:
                grads = [None] * len(diff)
            else:
                grads = grad(
                    [out],
                    [inputs[i] for i in diff],
                    [_from_flat(onehot, out)],
                    retain_graph=True,
                    allow_unused=True,
                )
            for idx, i in enumerate(diff):
                g = grads[idx]
                jac[i][o][k] = [0.0] * len(_flat(inputs[i])) if g is None else _flat(g)
    return jac


def _forward_jacobian(fn: Callable, inputs: tuple) -> list:
    """The same Jacobian by forward mode: one dual-tensor pass per input element (column)."""
    from flambeau_autograd import forward_ad

    diff = [i for i, x in enumerate(inputs) if isinstance(x, flambeau_core.Tensor) and x.requires_grad]
    # The inputs keep requires_grad, as PyTorch's: fn may itself call autograd.grad on them.
    plain = list(inputs)
    n_out = [len(_flat(o.detach())) for o in _outputs(fn, plain)]
    jac: list = [None] * len(inputs)
    for i in diff:
        n_in = len(_flat(plain[i]))
        per_out = [[[0.0] * n_in for _ in range(n)] for n in n_out]
        for j in range(n_in):
            onehot = [0.0] * n_in
            onehot[j] = 1.0
            with forward_ad.dual_level():
                args = list(plain)
                args[i] = forward_ad.make_dual(plain[i], _from_flat(onehot, plain[i]))
                tangents = [forward_ad.unpack_dual(o).tangent for o in _outputs(fn, args)]
                for o, t in enumerate(tangents):
                    if t is not None:
                        for k, v in enumerate(_flat(t.detach())):
                            per_out[o][k][j] = v
        jac[i] = per_out
    return jac


def _compare(numerical: list, analytical: list, atol: float, rtol: float, raise_exception: bool, mode: str) -> bool:
    for i, (num_i, ana_i) in enumerate(zip(numerical, analytical, strict=True)):
        if num_i is None:
            continue
        for o, (num_o, ana_o) in enumerate(zip(num_i, ana_i, strict=True)):
            for k, (num_row, ana_row) in enumerate(zip(num_o, ana_o, strict=True)):
                for j, (a, b) in enumerate(zip(ana_row, num_row, strict=True)):
                    if abs(a - b) > atol + rtol * abs(b):
                        if not raise_exception:
                            return False
                        raise GradcheckError(
                            f"[gradcheck] {mode} Jacobian mismatch for output {o} with respect to input {i}, "
                            f"element (output {k}, input {j}): analytical {a!r}, numerical {b!r}"
                        )
    return True


def gradcheck(
    fn: Callable,
    inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    *,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
) -> bool:
    """Compares the gradients autograd computes with central finite differences.

    ``inputs`` are tensors (float64 recommended) and other arguments; the ones
    that require grad are checked. Returns True, or raises GradcheckError
    (returns False if ``raise_exception=False``) naming the input, output and
    element where |analytical - numerical| > atol + rtol * |numerical|.
    ``check_backward_ad`` checks reverse mode (one backward per output
    element), ``check_forward_ad`` forward mode (one dual-tensor pass per input
    element, fb.autograd.forward_ad).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([0.5, -1.0, 2.0], dtype=fb.float64, requires_grad=True)
        >>> fb.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
        True
    """
    inputs = _as_tuple(inputs)
    for x in inputs:
        if isinstance(x, flambeau_core.Tensor) and x.requires_grad and x.dtype != flambeau_core.float64:
            import warnings

            warnings.warn(
                f"gradcheck: input of dtype {x.dtype} is not float64; finite differences may be inaccurate",
                stacklevel=2,
            )
    numerical = _numerical_jacobian(fn, inputs, eps)
    if check_backward_ad and not _compare(
        numerical, _analytical_jacobian(fn, inputs), atol, rtol, raise_exception, "backward-mode"
    ):
        return False
    if check_forward_ad and not _compare(
        numerical, _forward_jacobian(fn, inputs), atol, rtol, raise_exception, "forward-mode"
    ):
        return False
    return True


def gradgradcheck(
    fn: Callable,
    inputs: Any,
    grad_outputs: Any = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Checks second derivatives: gradcheck of the vector-Jacobian product of ``fn``
    (computed with create_graph=True) with respect to the inputs and ``grad_outputs``
    (random, of the outputs' dtype, if not given).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([0.5, -1.0, 2.0], dtype=fb.float64, requires_grad=True)
        >>> fb.autograd.gradgradcheck(lambda t: t.exp() * t, (x,))
        True
    """
    from flambeau_autograd import grad

    inputs = _as_tuple(inputs)
    outs = _outputs(fn, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(flambeau_core.randn(*o.shape, dtype=o.dtype).requires_grad_() for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, flambeau_core.Tensor) and x.requires_grad]

    def vjp(*args: Any) -> tuple:
        ins, gos = args[:n_in], args[n_in:]
        outs = _outputs(fn, ins)
        gs = grad(list(outs), [ins[i] for i in diff], list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
