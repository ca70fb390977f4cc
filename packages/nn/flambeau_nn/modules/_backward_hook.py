"""Module full backward hooks (``register_full_backward_hook`` / ``register_full_backward_pre_hook``).

Note [Module backward hooks]
As in PyTorch, the module's tensor inputs and tensor outputs pass through an
identity autograd Function each (``_HookIdentity``). The backward of the
outputs' identity receives ``grad_output``: the backward pre-hooks run there
(each may return a replacement ``grad_output``) and the result is kept. The
backward of the inputs' identity receives the gradients with respect to the
inputs: the full backward hooks run there as ``hook(module, grad_input,
grad_output)`` and may return a replacement ``grad_input``. ``grad_input`` has
one entry per positional argument of ``forward`` (``None`` for non-tensors,
zeros for a tensor that needs no gradient, as PyTorch), ``grad_output`` one per
output (``None`` where no gradient arrived). When no input
requires grad, the full hooks run at the outputs' identity with every
``grad_input`` None (and may only return None).
"""

from __future__ import annotations

from typing import Any

import flambeau_autograd as fa
from flambeau_core import FlambeauError, Tensor


class _HookIdentity(fa.Function):
    """Returns its tensor arguments unchanged; its backward calls ``callback(grads)``."""

    @staticmethod
    def forward(ctx: Any, callback: Any, materialize: bool, *tensors: Tensor) -> Any:
        ctx.callback = callback
        ctx.set_materialize_grads(materialize)
        ctx.mark_non_differentiable(*(t for t in tensors if not t.requires_grad))
        return tensors if len(tensors) != 1 else tensors[0]

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        new = ctx.callback(grads)
        return (None, None, *new)


def _check_hook_result(module: Any, what: str, result: Any, expected: int) -> tuple:
    if isinstance(result, Tensor):
        result = (result,)
    if not isinstance(result, (tuple, list)):
        raise TypeError(
            f"[{type(module).__name__}] backward {what} hook must return None, a Tensor or a tuple of Tensors/None, "
            f"got {type(result).__name__}"
        )
    if len(result) != expected:
        raise FlambeauError(
            f"[{type(module).__name__}] backward {what} hook returned an invalid number of grad_{what}s, "
            f"got {len(result)}, but expected {expected}"
        )
    for r in result:
        if r is not None and not isinstance(r, Tensor):
            raise TypeError(
                f"[{type(module).__name__}] backward {what} hook must return Tensors or None, got {type(r).__name__}"
            )
    return tuple(result)


class BackwardHook:
    """One forward call's hook state (Note [Module backward hooks])."""

    def __init__(self, module: Any, user_hooks: list, user_pre_hooks: list) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.n_inputs = 0
        self.input_index: list[int] | None = None
        self.n_outputs = 0
        self.output_index: list[int] = []
        self.grad_outputs: tuple | None = None

    @staticmethod
    def _pack(indices: list[int], values: tuple, size: int) -> tuple:
        out: list[Any] = [None] * size
        for i, v in zip(indices, values, strict=True):
            out[i] = v
        return tuple(out)

    # ---- inputs ----
    def setup_input_hook(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        if not self.user_hooks or not fa.is_grad_enabled():
            return args
        # As PyTorch: every tensor argument goes through the identity (one that needs no
        # gradient as a non-differentiable output), and gradients that did not arrive
        # are zeros, so grad_input holds zeros for it, None only for non-tensors.
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not any(args[i].requires_grad for i in index):
            return args
        self.input_index = index
        wrapped = _HookIdentity.apply(self._input_backward, True, *(args[i] for i in index))
        if len(index) == 1:
            wrapped = (wrapped,)
        new_args = list(args)
        for i, w in zip(index, wrapped, strict=True):
            new_args[i] = w
        return tuple(new_args)

    def _input_backward(self, grads: tuple) -> tuple:
        assert self.input_index is not None
        grad_input = self._pack(self.input_index, grads, self.n_inputs)
        grad_output = self.grad_outputs if self.grad_outputs is not None else (None,) * self.n_outputs
        for hook in self.user_hooks:
            res = hook(self.module, grad_input, grad_output)
            if res is not None:
                grad_input = _check_hook_result(self.module, "input", res, self.n_inputs)
        self.grad_outputs = None
        return tuple(grad_input[i] for i in self.input_index)

    # ---- outputs ----
    def setup_output_hook(self, result: Any) -> Any:
        if not fa.is_grad_enabled():
            return result
        single = isinstance(result, Tensor)
        outputs = (result,) if single else result
        if not isinstance(outputs, tuple):
            return result
        index = [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]
        if not index:
            return result
        self.n_outputs = len(outputs)
        self.output_index = index
        wrapped = _HookIdentity.apply(self._output_backward, False, *(outputs[i] for i in index))
        if len(index) == 1:
            wrapped = (wrapped,)
        if single:
            return wrapped[0]
        new = list(outputs)
        for i, w in zip(index, wrapped, strict=True):
            new[i] = w
        return tuple(new)

    def _output_backward(self, grads: tuple) -> tuple:
        grad_output = self._pack(self.output_index, grads, self.n_outputs)
        for hook in self.user_pre_hooks:
            res = hook(self.module, grad_output)
            if res is not None:
                grad_output = _check_hook_result(self.module, "output", res, self.n_outputs)
        self.grad_outputs = grad_output
        if self.input_index is None:  # no input requires grad: the full hooks run now
            grad_input = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_input, grad_output)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise FlambeauError(
                        f"[{type(self.module).__name__}] backward hook for a module where no input requires "
                        "gradient should always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(grad_output[i] for i in self.output_index)
