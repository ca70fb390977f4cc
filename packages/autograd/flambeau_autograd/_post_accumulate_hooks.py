"""``Tensor.register_post_accumulate_grad_hook``: a hook run with a leaf tensor after backward has added
into its ``.grad`` (the hook optimizers-in-backward use to step a parameter as soon as its gradient is
complete).

Note [Post-accumulate hooks]: a leaf's gradient is accumulated by its AccumulateGrad node, which the engine
calls after the leaf's own tensor hooks; that node's post hooks therefore see the accumulated ``.grad``.
The tensor holds its node weakly (the engine makes a new one when none is alive), so the node that carries
the hooks is kept alive here, keyed by the tensor's Python object and dropped with it (weakref.finalize).
The hooks thus live as long as that Python object does, which for a Parameter of a module is the
parameter's lifetime.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import Any

from flambeau_core import FlambeauError, Tensor

from flambeau_autograd.grad_mode import enable_grad

# id(tensor) -> (its AccumulateGrad node, the hooks by handle id, in registration order, the handle of the
# node hook that runs them: removed with the last of them, so no hook is left on the node)
_registry: dict[int, tuple[Any, dict[int, Callable], Any]] = {}
_handle_ids = itertools.count()


class PostAccumulateGradHookHandle:
    """Removes one post-accumulate-grad hook (``handle.remove()``, or on leaving a ``with`` block), as
    PyTorch's ``RemovableHandle``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.ones(2, requires_grad=True)
        >>> with x.register_post_accumulate_grad_hook(lambda p: print("step")):
        ...     (x * 2).sum().backward()
        step
        >>> (x * 2).sum().backward()
    """

    def __init__(self, key: int, hooks: dict[int, Callable]) -> None:
        self.id = next(_handle_ids)
        self._key = key
        self._hooks = hooks

    def remove(self) -> None:
        """Unregisters the hook (a second call does nothing).

        Example:
            >>> import flambeau_core as fc
            >>> x = fc.ones(1, requires_grad=True)
            >>> x.register_post_accumulate_grad_hook(lambda p: print("never")).remove()
            >>> (x * 2).sum().backward()
        """
        self._hooks.pop(self.id, None)
        entry = _registry.get(self._key)
        if not self._hooks and entry is not None and entry[1] is self._hooks:
            entry[2].remove()
            del _registry[self._key]

    def __enter__(self) -> PostAccumulateGradHookHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def has_hooks(tensor: Tensor) -> bool:
    """True while ``tensor`` has a post-accumulate-grad hook registered (and not removed).

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.ones(1, requires_grad=True)
        >>> handle = x.register_post_accumulate_grad_hook(lambda p: None)
        >>> has_hooks(x), handle.remove(), has_hooks(x)
        (True, None, False)
    """
    return id(tensor) in _registry


def _accumulate_grad_node(tensor: Tensor) -> Any:
    with enable_grad():  # a view records its input's AccumulateGrad node as its next function
        return tensor.view_as(tensor).grad_fn.next_functions[0][0]


def register_post_accumulate_grad_hook(self: Tensor, hook: Callable[[Tensor], None]) -> PostAccumulateGradHookHandle:
    """register_post_accumulate_grad_hook(hook) -> handle

    Registers ``hook(tensor)`` to run after backward has accumulated this leaf's gradient into ``.grad``
    (each backward that reaches it); it must return None. Only leaves that require grad take one. Returns a
    handle whose ``remove()`` unregisters the hook. The hooks live as long as this Python tensor object
    (Note [Post-accumulate hooks]).

    Example:
        >>> import flambeau_autograd as ag
        >>> import flambeau_core as fc
        >>> w = fc.ones(2, requires_grad=True)
        >>> def sgd_step(p):
        ...     with ag.no_grad():
        ...         p.sub_(0.5 * p.grad)
        ...     p.grad = None
        >>> handle = w.register_post_accumulate_grad_hook(sgd_step)
        >>> (w * w).sum().backward()
        >>> w.tolist(), w.grad
        ([0.0, 0.0], None)
    """
    if not callable(hook):
        raise TypeError(f"[register_post_accumulate_grad_hook] expected a callable hook, got {type(hook).__name__}")
    if not self.requires_grad:
        raise FlambeauError(
            "[register_post_accumulate_grad_hook] cannot register a hook on a tensor that doesn't require gradient"
        )
    if self.grad_fn is not None:
        raise FlambeauError(
            "[register_post_accumulate_grad_hook] post accumulate grad hooks cannot be registered on non-leaf "
            f"tensors (this one was made by {self.grad_fn.name()})"
        )
    key = id(self)
    if key not in _registry:
        hooks: dict[int, Callable] = {}
        tensor_ref = weakref.ref(self)

        def run_hooks(grad_inputs: Any, grad_outputs: Any) -> None:
            tensor = tensor_ref()
            if tensor is None:
                return
            for fn in list(hooks.values()):
                if fn(tensor) is not None:
                    raise TypeError(
                        "[register_post_accumulate_grad_hook] post accumulate grad hooks should return None"
                    )

        node = _accumulate_grad_node(self)
        _registry[key] = (node, hooks, node.register_hook(run_hooks))
        weakref.finalize(self, _forget, key, hooks)
    handle = PostAccumulateGradHookHandle(key, _registry[key][1])
    _registry[key][1][handle.id] = hook
    return handle


def _forget(key: int, hooks: dict[int, Callable]) -> None:
    # The tensor died: drop its entry, unless its id already belongs to a newer tensor's entry.
    if key in _registry and _registry[key][1] is hooks:
        del _registry[key]


def install() -> None:
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
