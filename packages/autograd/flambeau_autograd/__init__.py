"""flambeau-autograd: reverse-mode automatic differentiation for flambeau.

Importing this package plugs autograd into flambeau-core: it registers the
autograd-metadata factory (so ``requires_grad=True`` works) and an Autograd
kernel for every differentiable op (so ops record a graph), and it attaches
``backward``, ``grad``, ``grad_fn``, ``is_leaf``, ``retain_grad``,
``register_hook``, ``detach`` to ``flambeau_core.Tensor``.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_autograd as ag
    >>> x = fc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad.tolist()
    [2.0, 4.0, 6.0]
    >>> ag.grad((x * x).sum(), x)[0].tolist()
    [2.0, 4.0, 6.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flambeau_core  # loads libflambeau_core.so and registers Tensor before our _C
from flambeau_core import FlambeauError

from flambeau_autograd import (
    _C,  # registers autograd into core
    _post_accumulate_hooks,
    _tensor_compat,
    forward_ad,
    functional,
)
from flambeau_autograd._C import Node, RemovableHandle
from flambeau_autograd._detach import detach, detach_
from flambeau_autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
    set_detect_anomaly,
)
from flambeau_autograd.function import Function, FunctionCtx
from flambeau_autograd.grad_mode import (
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from flambeau_autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from flambeau_autograd.variable import Variable

__all__ = [
    "backward",
    "grad",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "Function",
    "FunctionCtx",
    "Node",
    "RemovableHandle",
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "set_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "is_inference_mode_enabled",
    "set_multithreading_enabled",
    "enforce_grad_layout_policy",
    "detach",
    "detach_",
    "forward_ad",
    "functional",
    "Variable",
]

try:
    from importlib.metadata import version as _version

    __version__ = _version("flambeau-autograd")
except Exception:  # running from a source tree
    __version__ = "0+unknown"

Tensor = flambeau_core.Tensor
_post_accumulate_hooks.install()  # Tensor.register_post_accumulate_grad_hook
_tensor_compat.install()  # Tensor.as_subclass, volatile, name


def _as_list(x: Any, what: str) -> list:
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"[backward] {what} must be a Tensor or a sequence of Tensors, got {type(x).__name__}")


def _grads_list(grads: Any, n: int, what: str) -> list:
    if grads is None:
        return [None] * n
    gl = _as_list(grads, what)
    if len(gl) != n:
        raise FlambeauError(f"[backward] got {n} tensors but {len(gl)} {what}")
    return gl


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
) -> None:
    """Accumulates into the ``.grad`` of the leaves the gradient of ``tensors``.

    ``grad_tensors`` are the gradients of the outputs (None for a scalar output
    means 1). The graph's saved tensors are freed unless ``retain_graph``
    (default: ``create_graph``). With ``create_graph`` the gradients themselves
    have a graph (higher-order derivatives). With ``inputs``, only those tensors
    accumulate a gradient.

    Example:
        >>> x = flambeau_core.tensor([2.0], requires_grad=True)
        >>> backward((x * x).sum())
        >>> x.grad.tolist()
        [4.0]
    """
    outs = _as_list(tensors, "tensors")
    grads = _grads_list(grad_tensors, len(outs), "grad_tensors")
    if retain_graph is None:
        retain_graph = create_graph
    ins = _as_list(inputs, "inputs")
    if inputs is not None and not ins:
        raise FlambeauError("[backward] 'inputs' argument to backward() cannot be empty")
    _C._run_backward(outs, grads, bool(retain_graph), bool(create_graph), ins, True, True)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """Returns the gradients of ``outputs`` with respect to ``inputs`` (no ``.grad`` is touched).

    An input that the outputs do not depend on raises, unless ``allow_unused``
    (then its gradient is None, or zeros with ``materialize_grads``).

    Example:
        >>> x = flambeau_core.tensor([3.0], requires_grad=True)
        >>> (g,) = grad((x * x * x).sum(), x, create_graph=True)
        >>> g.tolist(), grad(g.sum(), x)[0].tolist()
        ([27.0], [18.0])
    """
    outs = _as_list(outputs, "outputs")
    ins = _as_list(inputs, "inputs")
    grads = _grads_list(grad_outputs, len(outs), "grad_outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if materialize_grads:
        allow_unused = True
    result = _C._run_backward(outs, grads, bool(retain_graph), bool(create_graph), ins, bool(allow_unused), False)
    if materialize_grads:
        result = [flambeau_core.zeros_like(x) if g is None else g for g, x in zip(result, ins, strict=True)]
    return tuple(result)


def _tensor_backward(
    self: Tensor,
    gradient: Tensor | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
) -> None:
    """Computes the gradient of this tensor with respect to the graph leaves (see ``backward``).

    ``gradient`` is the gradient of this tensor (None for a one-element tensor
    means 1); it is accumulated into the ``.grad`` of the leaves.

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([3.0], requires_grad=True)
        >>> (x * x).backward()
        >>> x.grad.tolist()
        [6.0]
        >>> (x * x).backward(fb.tensor([2.0]))  # accumulates: 6 + 2 * 6
        >>> x.grad.tolist()
        [18.0]
    """
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


Tensor.backward = _tensor_backward
