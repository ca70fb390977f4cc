"""Activation checkpointing (PyTorch's ``torch.utils.checkpoint``; ``fb.utils.checkpoint``).

``checkpoint(fn, *args)`` runs ``fn`` without keeping its intermediate
activations and runs it again in the backward pass to get them, trading
compute for memory. The random state is saved before the forward and
restored around the recomputation (``preserve_rng_state=True``), so dropout
draws the same mask both times.

Two variants, as PyTorch:

* ``use_reentrant=True``: a custom autograd Function whose forward runs ``fn``
  under ``no_grad`` and whose backward recomputes ``fn`` with gradients enabled
  and backpropagates through it with a nested ``backward`` (parameters used by
  ``fn`` accumulate into ``.grad``). As PyTorch, only ``.backward()`` works
  through it (not ``autograd.grad``) and keyword arguments are refused.
* ``use_reentrant=False``: PyTorch hooks the saved tensors; flambeau-autograd has
  no saved-tensor hooks, so the equivalent here runs the forward once with
  gradients enabled to find the leaf tensors ``fn`` uses (its parameters),
  drops that graph (only one segment's activations live at a time, as during
  PyTorch's recomputation), and records one node whose inputs are the tensor
  arguments and those leaves. Its backward recomputes ``fn`` and takes
  ``autograd.grad`` of the result, so ``autograd.grad``, keyword arguments and
  parameters that are the only tensors requiring grad all work. Tensors reached
  only through a captured non-leaf tensor of the enclosing graph get no
  gradient through the checkpoint (pass them as arguments).

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> layer = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    >>> x = fc.randn(2, 4, requires_grad=True)
    >>> checkpoint(layer, x, use_reentrant=False).sum().backward()
    >>> x.grad.shape, layer[0].weight.grad.shape
    (flambeau.Size([2, 4]), flambeau.Size([4, 4]))
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "detach_variable",
    "get_device_states",
    "set_device_states",
    "noop_context_fn",
    "set_checkpoint_early_stop",
    "set_checkpoint_debug_enabled",
    "DefaultDeviceType",
]


class CheckpointError(RuntimeError):
    """Raised when a checkpointed region cannot be recomputed as it ran (PyTorch's name).

    Example:
        >>> from flambeau.utils.checkpoint import CheckpointError
        >>> issubclass(CheckpointError, RuntimeError)
        True
    """


def noop_context_fn() -> tuple[contextlib.AbstractContextManager, contextlib.AbstractContextManager]:
    """The default ``context_fn``: no context around the forward or the recomputation.

    Example:
        >>> from flambeau.utils.checkpoint import noop_context_fn
        >>> forward_ctx, recompute_ctx = noop_context_fn()
        >>> with forward_ctx:
        ...     print("no context around the forward")
        no context around the forward
    """
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    r"""Detached copies of the tensors in ``inputs`` that keep their ``requires_grad`` (other items pass through).

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.ones(2, requires_grad=True) * 2
        >>> (d,) = detach_variable((x,))
        >>> d.grad_fn is None, d.requires_grad
        (True, True)
    """
    if not isinstance(inputs, tuple):
        raise FlambeauError(
            f"[detach_variable] Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}"
        )
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            d = inp.detach()
            d.requires_grad_(inp.requires_grad)
            out.append(d)
        else:
            out.append(inp)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warns when no tensor in ``inputs`` requires grad (a reentrant checkpoint then passes no gradient).

    Example:
        >>> import warnings
        >>> import flambeau as fb
        >>> from flambeau.utils.checkpoint import check_backward_validity
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_backward_validity((fb.ones(2), 3))
        >>> str(caught[0].message)
        'None of the inputs have requires_grad=True. Gradients will be None'
    """
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


class DefaultDeviceType:
    """The device type whose random state the checkpoint saves besides the cpu's (PyTorch's API).

    Example:
        >>> from flambeau.utils.checkpoint import DefaultDeviceType
        >>> DefaultDeviceType.get_device_type()
        'cuda'
    """

    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """Sets the device type whose generator states a checkpoint saves and restores (``"cuda"`` by default).

        Example:
            >>> from flambeau.utils.checkpoint import DefaultDeviceType
            >>> previous = DefaultDeviceType.get_device_type()
            >>> DefaultDeviceType.set_device_type("cpu"); DefaultDeviceType.get_device_type()
            'cpu'
            >>> DefaultDeviceType.set_device_type(previous)
        """
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """The device type set by ``set_device_type`` (``"cuda"`` by default).

        Example:
            >>> from flambeau.utils.checkpoint import DefaultDeviceType
            >>> DefaultDeviceType.get_device_type()
            'cuda'
        """
        return DefaultDeviceType._default_device_type


def _device_module(device_type: str) -> Any:
    try:
        module = fc.device_module(device_type)
    except (ValueError, FlambeauError):
        return None
    return module if getattr(module, "is_available", lambda: False)() else None


def _device_types(tensors: Iterable[Any]) -> list[str]:
    return sorted({t.device.type for t in tensors if isinstance(t, Tensor) and t.device.type != "cpu"})


def get_device_states(*args: Any) -> tuple[list[int], list[Any]]:
    """The devices of the non-cpu tensor arguments and their generators' states (empty when none can be read).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.checkpoint import get_device_states
        >>> get_device_states(fb.ones(2), 3)  # cpu tensors only: nothing to save
        ([], [])
    """
    devices: list[int] = []
    states: list[Any] = []
    for device_type in _device_types(args):
        module = _device_module(device_type)
        if module is None or not hasattr(module, "get_rng_state"):
            continue
        for t in args:
            if isinstance(t, Tensor) and t.device.type == device_type and t.device.index not in devices:
                devices.append(t.device.index)
                states.append(module.get_rng_state(t.device.index))
    return devices, states


def set_device_states(devices: list[int], states: list[Any], *, device_type: str | None = None) -> None:
    """Restores the generators' states that ``get_device_states`` read.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.checkpoint import get_device_states, set_device_states
        >>> devices, states = get_device_states(fb.ones(2))
        >>> set_device_states(devices, states)  # restores nothing for cpu tensors
        >>> devices
        []
    """
    module = _device_module(device_type or DefaultDeviceType.get_device_type())
    if module is None or not hasattr(module, "set_rng_state"):
        return
    for device, state in zip(devices, states, strict=True):
        module.set_rng_state(state, device)


_early_stop = True
_debug = False


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Accepted for PyTorch's API: the recomputation here always runs the whole function.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.checkpoint import checkpoint, set_checkpoint_early_stop
        >>> x = fb.tensor([1.0, 2.0], requires_grad=True)
        >>> with set_checkpoint_early_stop(False):
        ...     y = checkpoint(lambda t: (t * t).sum(), x, use_reentrant=False)
        >>> y.backward(); x.grad
        tensor([2., 4.])
    """
    global _early_stop
    previous, _early_stop = _early_stop, enable
    try:
        yield
    finally:
        _early_stop = previous


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Accepted for PyTorch's API (flambeau records no op trace for checkpoints).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.checkpoint import checkpoint, set_checkpoint_debug_enabled
        >>> x = fb.tensor([1.0, 2.0], requires_grad=True)
        >>> with set_checkpoint_debug_enabled(True):
        ...     y = checkpoint(lambda t: t.exp().sum(), x, use_reentrant=False)
        >>> y.backward(); x.grad.round(decimals=4)
        tensor([2.7183, 7.3891])
    """
    global _debug
    previous, _debug = _debug, enabled
    try:
        yield
    finally:
        _debug = previous


class _RngState:
    """The cpu generator's state (and the devices' of the tensor arguments), to replay in the recomputation."""

    def __init__(self, args: tuple[Any, ...], preserve: bool) -> None:
        self.preserve = preserve
        if preserve:
            self.cpu = fc.get_rng_state()
            self.devices, self.device_states = get_device_states(*args)
            self.device_type = (_device_types(args) or [DefaultDeviceType.get_device_type()])[0]

    @contextlib.contextmanager
    def replay(self):
        if not self.preserve:
            yield
            return
        # Fork: the recomputation draws the forward's numbers, the caller's stream continues unchanged.
        cpu_now = fc.get_rng_state()
        devices_now = self._device_now() if self.devices else ([], [])
        fc.set_rng_state(self.cpu)
        set_device_states(self.devices, self.device_states, device_type=self.device_type)
        try:
            yield
        finally:
            fc.set_rng_state(cpu_now)
            set_device_states(*devices_now, device_type=self.device_type)

    def _device_now(self) -> tuple[list[int], list[Any]]:
        module = _device_module(self.device_type)
        return list(self.devices), [module.get_rng_state(d) for d in self.devices]


def _tensor_outputs(outputs: Any) -> tuple[Any, ...]:
    return outputs if isinstance(outputs, tuple) else (outputs,)


class CheckpointFunction(fa.Function):
    """The reentrant checkpoint: forward under ``no_grad``, recompute and backpropagate in backward.

    Use it through ``checkpoint(fn, *args, use_reentrant=True)``; ``CheckpointFunction.apply(fn,
    preserve_rng_state, *args)`` is the same.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.checkpoint import CheckpointFunction
        >>> x = fb.tensor([1.0, 2.0], requires_grad=True)
        >>> y = CheckpointFunction.apply(lambda t: (t ** 3).sum(), True, x)
        >>> y.backward(); x.grad
        tensor([ 3., 12.])
    """

    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
        """Runs ``run_function(*args)`` under ``no_grad``, saving the inputs (and the RNG states if asked).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.utils.checkpoint import CheckpointFunction
            >>> x = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> y = CheckpointFunction.apply(lambda t: t * 2, False, x)
            >>> y.detach(), y.requires_grad
            (tensor([2., 4.]), True)
        """
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng = _RngState(args, preserve_rng_state)
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with fa.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        """Recomputes the forward with gradients on and backpropagates ``grads`` through it.

        Returns ``None`` for ``run_function`` and ``preserve_rng_state``, then one gradient per argument.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.utils.checkpoint import CheckpointFunction
            >>> x = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> CheckpointFunction.apply(lambda t: t.sin(), True, x).sum().backward()
            >>> x.grad.round(decimals=4)
            tensor([ 0.5403, -0.4161])
        """
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors, strict=True):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with ctx.rng.replay(), fa.enable_grad():
            outputs = _tensor_outputs(ctx.run_function(*detached))
        pairs = [
            (o, g)
            for o, g in zip(outputs, grads, strict=False)
            if isinstance(o, Tensor) and o.requires_grad and g is not None
        ]
        if not pairs:
            raise FlambeauError(
                "[checkpoint] none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        fa.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(d.grad if isinstance(d, Tensor) else None for d in detached))


def _leaves_of(outputs: tuple[Any, ...], exclude: set[int]) -> list[Tensor]:
    """The leaf tensors requiring grad that ``outputs`` were computed from (AccumulateGrad nodes), first seen first."""
    # Holds the visited nodes: their Python wrappers live only while referenced, and a freed one's id is reused.
    seen: dict[int, Any] = {}
    leaves: list[Tensor] = []
    stack = [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        if node.name() == "AccumulateGrad":
            var = node.variable
            if id(var) not in exclude and all(var is not leaf for leaf in leaves):
                leaves.append(var)
            continue
        stack.extend(nxt for nxt, _ in node.next_functions)
    # Leaf outputs (fn returned a parameter itself) are inputs too.
    for o in outputs:
        if isinstance(o, Tensor) and o.requires_grad and o.grad_fn is None and id(o) not in exclude:
            if all(o is not leaf for leaf in leaves):
                leaves.append(o)
    return leaves


class _NonReentrantCheckpoint(fa.Function):
    @staticmethod
    def forward(ctx: Any, state: dict, *tensors: Tensor) -> Any:
        ctx.state = state
        ctx.n_tensors = len(tensors)
        ctx.save_for_backward(*tensors[: state["n_args"]])
        outs = tuple(o.detach() if isinstance(o, Tensor) else o for o in state.pop("outputs"))
        ctx.mark_non_differentiable(*[o for o in outs if isinstance(o, Tensor) and not o.is_floating_point()])
        return outs if state["tuple"] else outs[0]

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        state = ctx.state
        args = list(state["args"])
        for i, t in zip(state["tensor_indices"], ctx.saved_tensors, strict=True):
            args[i] = t
        detached = detach_variable(tuple(args))
        arg_tensors = [detached[i] for i in state["tensor_indices"]]
        leaves = state["leaves"]
        _, recompute_ctx = state["context_fn"]()
        with state["rng"].replay(), fa.enable_grad(), recompute_ctx:
            outputs = _tensor_outputs(state["function"](*detached, **state["kwargs"]))
        pairs = [
            (o, g)
            for o, g in zip(outputs, grads, strict=False)
            if isinstance(o, Tensor) and o.requires_grad and g is not None
        ]
        wanted = [t for t in (*arg_tensors, *leaves) if t.requires_grad]
        result: dict[int, Any] = {}
        if pairs and wanted:
            got = fa.grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True)
            result = {id(t): g for t, g in zip(wanted, got, strict=True)}
        return (None, *(result.get(id(t)) for t in (*arg_tensors, *leaves)))


def _checkpoint_non_reentrant(
    function: Callable[..., Any], preserve: bool, context_fn: Callable[[], Any], args: tuple, kwargs: dict
) -> Any:
    rng = _RngState(args, preserve)
    tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    detached = detach_variable(tuple(args))
    forward_ctx, _ = context_fn()
    with forward_ctx:
        if not fa.is_grad_enabled():
            return function(*args, **kwargs)
        raw = function(*detached, **kwargs)
    is_tuple = isinstance(raw, tuple)
    outputs = _tensor_outputs(raw)
    exclude = {id(detached[i]) for i in tensor_indices}
    leaves = _leaves_of(outputs, exclude)
    if not any(isinstance(o, Tensor) and o.requires_grad for o in outputs):
        return raw  # nothing to differentiate: no graph to checkpoint
    state = {
        "function": function,
        "kwargs": kwargs,
        "args": [None if isinstance(a, Tensor) else a for a in args],
        "tensor_indices": tensor_indices,
        "n_args": len(tensor_indices),
        "leaves": leaves,
        "rng": rng,
        "context_fn": context_fn,
        "outputs": outputs,
        "tuple": is_tuple,
    }
    arg_tensors = [args[i] for i in tensor_indices]
    return _NonReentrantCheckpoint.apply(state, *arg_tensors, *leaves)


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], Any] = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs: Any,
) -> Any:
    r"""Runs ``function(*args, **kwargs)`` without storing its activations; recomputes them in backward.

    ``use_reentrant`` should be given (``None`` warns and means ``True``, as
    PyTorch 2.13); see the module docstring for the two variants.
    ``preserve_rng_state=True`` (a keyword) replays the random state in the
    recomputation. ``context_fn`` (non-reentrant only) returns two context
    managers: one around the forward, one around the recomputation.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> drop = nn.Dropout(0.5)
        >>> x = fc.ones(8, requires_grad=True)
        >>> y = checkpoint(drop, x, use_reentrant=True)
        >>> y.sum().backward()
        >>> bool(((x.grad != 0) == (y != 0)).all())  # the recomputed mask is the forward's
        True
    """
    if not callable(function):
        raise TypeError(f"[checkpoint] function must be callable, got {type(function).__name__}")
    if use_reentrant is None:
        warnings.warn(
            "flambeau_nn.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
            "you can pass use_reentrant=True.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if determinism_check not in ("default", "none"):
        raise FlambeauError(
            f"[checkpoint] determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    if use_reentrant:
        if kwargs:
            raise FlambeauError("[checkpoint] Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise FlambeauError(
                "[checkpoint] Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_non_reentrant(function, preserve, context_fn, args, kwargs)


def checkpoint_sequential(
    functions: Any, segments: int, input: Tensor, use_reentrant: bool | None = None, **kwargs: Any
) -> Any:
    r"""Runs a sequence of modules (or a ``Sequential``) in ``segments`` chunks, checkpointing all but the last.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.Sequential(*[nn.Linear(3, 3) for _ in range(4)])
        >>> x = fc.randn(2, 3, requires_grad=True)
        >>> y = checkpoint_sequential(model, 2, x, use_reentrant=False)
        >>> bool(((y - model(x)).abs() < 1e-6).all())
        True
    """
    if use_reentrant is None:
        warnings.warn(
            "flambeau_nn.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. use_reentrant=False is recommended.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise FlambeauError("[checkpoint_sequential] Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
