"""``Module``: the base class of every layer and model.

Note [Module registration]
A module keeps three ordered dicts: ``_parameters`` (Parameter or None),
``_buffers`` (Tensor or None) and ``_modules`` (Module or None).
``__setattr__`` routes a value into one of them by its type, as in PyTorch:
a ``Parameter`` becomes a parameter, a ``Module`` a submodule, and a Tensor
assigned to a name that already is a buffer replaces the buffer. Plain
attributes (ints, tensors that are not registered) live in ``__dict__``.
``__getattr__`` runs only when normal lookup fails and looks in the three
dicts, so registered names never shadow and are never shadowed by ``__dict__``.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core._C import _foreach_zero_

from flambeau_nn.modules._backward_hook import BackwardHook
from flambeau_nn.parameter import Buffer, Parameter

__all__ = ["Module", "RemovableHandle"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and did not use."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class RemovableHandle:
    """Returned by ``register_*_hook``; ``handle.remove()`` unregisters the hook.

    Also a context manager: the hook is removed on exit. ``extra_dict`` holds
    the dicts that flag the hook (``with_kwargs``, ``always_call``), cleared too.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> m = nn.Linear(2, 2)
        >>> calls = []
        >>> with m.register_forward_hook(lambda mod, args, out: calls.append(out.shape)):
        ...     _ = m(fc.ones(1, 2))
        >>> _ = m(fc.ones(1, 2))  # the hook is gone
        >>> calls
        [flambeau.Size([1, 2])]
    """

    _next_id = itertools.count()

    def __init__(self, hooks_dict: dict, *, extra_dict: Any = None) -> None:
        self._hooks = hooks_dict
        self.id = next(RemovableHandle._next_id)
        if extra_dict is None:
            extra_dict = ()
        elif isinstance(extra_dict, dict):
            extra_dict = (extra_dict,)
        self._extra = tuple(extra_dict)

    def remove(self) -> None:
        """Unregisters the hook (and its flags); removing it again does nothing.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.ReLU()
            >>> handle = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
            >>> m(fc.tensor([1.0])).tolist()
            [2.0]
            >>> handle.remove()
            >>> m(fc.tensor([1.0])).tolist()
            [1.0]
        """
        self._hooks.pop(self.id, None)
        for d in self._extra:
            d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _shape_str(t: Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


_HOOK_DICTS = (
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_backward_hooks",
    "_backward_pre_hooks",
)


class Module:
    r"""Base class for all neural-network modules.

    Subclass it, create parameters and submodules in ``__init__`` (after
    ``super().__init__()``), and compute in ``forward``. Call the module
    itself (``model(x)``), not ``forward``, so hooks run.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> class TwoLayer(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1 = nn.Linear(4, 8)
        ...         self.fc2 = nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.fc2(self.fc1(x).relu())
        >>> [name for name, _ in TwoLayer().named_parameters()]
        ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    training: bool

    def __init__(self) -> None:
        # object.__setattr__: our own __setattr__ needs these dicts to exist.
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", OrderedDict())
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_forward_hooks_with_kwargs", OrderedDict())
        set_(self, "_forward_hooks_always_called", OrderedDict())
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        set_(self, "_backward_hooks", OrderedDict())
        set_(self, "_backward_pre_hooks", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of the module, called by ``module(*args, **kwargs)`` (which runs the hooks around it);
        every subclass overrides it, and ``Module``'s own raises ``NotImplementedError``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> class Scale(nn.Module):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.factor = nn.Parameter(fc.tensor(2.0))
            ...     def forward(self, x):
            ...         return x * self.factor
            >>> Scale()(fc.tensor([1.0, 3.0])).tolist()
            [2.0, 6.0]
        """
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __setstate__(self, state: dict) -> None:
        # A module pickled before a hook dict existed gets an empty one.
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                object.__setattr__(self, name, OrderedDict())

    # ---- calling ----
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Fast path: no hook registered (the dicts are empty), no hook machinery.
        d = self.__dict__
        if d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"] or d["_backward_pre_hooks"]:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        # PyTorch's order: forward pre-hooks, (backward hook set-up on the inputs),
        # forward, forward hooks, (backward hook set-up on the outputs).
        for hook_id, hook in tuple(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if isinstance(res, tuple) and len(res) == 2:
                        args, kwargs = res
                        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
                    else:
                        raise FlambeauError(
                            f"[{type(self).__name__}] forward pre-hook with kwargs must return None or a tuple of "
                            f"(new_args, new_kwargs), but got {type(res).__name__}"
                        )
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        bw_hook = None
        if self._backward_hooks or self._backward_pre_hooks:
            bw_hook = BackwardHook(self, list(self._backward_hooks.values()), list(self._backward_pre_hooks.values()))
            args = bw_hook.setup_input_hook(args)
        result = None
        called: set[int] = set()
        try:
            result = self.forward(*args, **kwargs)
            for hook_id, hook in tuple(self._forward_hooks.items()):
                called.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                result = bw_hook.setup_output_hook(result)
        except Exception:
            for hook_id, hook in tuple(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            res = hook(self, args, kwargs, result)
                        else:
                            res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        warnings.warn(
                            "forward hook with ``always_call=True`` raised an exception that was silenced as "
                            f"another error was raised in forward: {e}",
                            stacklevel=2,
                        )
            raise
        return result

    @staticmethod
    def _check_hook(hook: object, what: str) -> None:
        if not callable(hook):
            raise TypeError(f"[{what}] hook must be callable, got {type(hook).__name__}")

    @staticmethod
    def _insert_hook(hooks: OrderedDict, handle: RemovableHandle, hook: Callable[..., Any], prepend: bool) -> None:
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Registers a hook run before ``forward``.

        ``hook(module, args) -> None or new args`` (a non-tuple is wrapped in a
        tuple); with ``with_kwargs=True``, ``hook(module, args, kwargs) -> None
        or (new_args, new_kwargs)``. ``prepend=True`` runs it before the hooks
        already registered.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(2, 1)
            >>> seen = []
            >>> handle = m.register_forward_pre_hook(lambda mod, args: seen.append(args[0].shape))
            >>> _ = m(fc.ones(3, 2))
            >>> seen
            [flambeau.Size([3, 2])]
        """
        self._check_hook(hook, "register_forward_pre_hook")
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._insert_hook(self._forward_pre_hooks, handle, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ) -> RemovableHandle:
        """Registers a hook run after ``forward``.

        ``hook(module, args, output) -> None or new output``; with
        ``with_kwargs=True``, ``hook(module, args, kwargs, output)``.
        ``always_call=True`` runs it even when ``forward`` raised.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.ReLU()
            >>> handle = m.register_forward_hook(lambda mod, args, out: out + 1)
            >>> m(fc.tensor([-1.0, 2.0])).tolist()
            [1.0, 3.0]
        """
        self._check_hook(hook, "register_forward_hook")
        handle = RemovableHandle(
            self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called]
        )
        self._insert_hook(self._forward_hooks, handle, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(module, grad_output) -> None or new grad_output``, run when the
        gradients with respect to the module's outputs are computed (Note [Module backward hooks]).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.Identity()
            >>> handle = m.register_full_backward_pre_hook(lambda mod, grad_out: (grad_out[0] * 10,))
            >>> x = fc.ones(2, requires_grad=True)
            >>> m(x).sum().backward()
            >>> x.grad.tolist()
            [10.0, 10.0]
        """
        self._check_hook(hook, "register_full_backward_pre_hook")
        handle = RemovableHandle(self._backward_pre_hooks)
        self._insert_hook(self._backward_pre_hooks, handle, hook, prepend)
        return handle

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(module, grad_input, grad_output) -> None or new grad_input``, run when
        the gradients with respect to the module's inputs are computed (Note [Module backward hooks]).

        ``grad_input`` and ``grad_output`` are tuples; an input that is not a
        tensor or needs no gradient has ``None``. Inputs and outputs passed as
        keyword arguments are not seen.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(2, 1)
            >>> shapes = []
            >>> handle = m.register_full_backward_hook(lambda mod, gin, gout: shapes.append(gout[0].shape))
            >>> m(fc.ones(4, 2, requires_grad=True)).sum().backward()
            >>> shapes
            [flambeau.Size([4, 1])]
        """
        self._check_hook(hook, "register_full_backward_hook")
        handle = RemovableHandle(self._backward_hooks)
        self._insert_hook(self._backward_hooks, handle, hook, prepend)
        return handle

    # ---- registration (Note [Module registration]) ----
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Adds a parameter (or ``None``, a declared but absent parameter) under ``name``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.Module()
            >>> m.register_parameter("scale", nn.Parameter(fc.ones(3)))
            >>> m.register_parameter("shift", None)
            >>> [name for name, _ in m.named_parameters()], m.shift
            (['scale'], None)
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(flambeau_nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Adds a buffer: state that is not a parameter (e.g. running statistics).

        Persistent buffers are part of ``state_dict()``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.Module()
            >>> m.register_buffer("steps", fc.zeros((), dtype=fc.int64))
            >>> m.register_buffer("cache", fc.zeros(3), persistent=False)
            >>> sorted(m.state_dict()), [name for name, _ in m.named_buffers()]
            (['steps'], ['steps', 'cache'])
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds a child module under ``name`` (``None`` allowed).

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.Module()
            >>> m.add_module("fc", nn.Linear(2, 3))
            >>> type(m.fc).__name__, [name for name, _ in m.named_parameters()]
            ('Linear', ['fc.weight', 'fc.bias'])
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    @staticmethod
    def _check_name(name: object, what: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string, got {type(name).__name__}")
        if name == "":
            raise KeyError(f"{what} name cannot be an empty string")
        if "." in name:
            raise KeyError(f'{what} name cannot contain ".", got {name!r}')

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif isinstance(value, Buffer):
            if self.__dict__.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._parameters, self._modules)
            self.register_buffer(name, value, persistent=value.persistent)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(flambeau_nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            modules = self.__dict__.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
        elif self.__dict__.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' (Module or None expected)"
                )
            self._modules[name] = value
        elif self.__dict__.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, *containers: Any) -> None:
        for c in containers:
            if name in c:
                if isinstance(c, set):
                    c.discard(name)
                else:
                    del c[name]

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails (registered names are not in __dict__).
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            store = d.get(key)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = set(super().__dir__())
        keys.update(self._parameters, self._buffers, self._modules)
        return sorted(k for k in keys if not k[0].isdigit())

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is self).

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
            >>> type(net.get_submodule("0.1")).__name__
            'ReLU'
        """
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if item not in mod._modules or mod._modules[item] is None:
                raise AttributeError(f"{type(mod).__name__} has no submodule `{item}` (looking up {target!r})")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` such as ``"0.weight"``.

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Linear(2, 3))
            >>> net.get_parameter("0.weight").shape
            flambeau.Size([3, 2])
        """
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}` (looking up {target!r})")
        return mod._parameters[name]

    # ---- iteration ----
    def _named_members(self, get: Callable[[Module], Any], prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen: set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get(module):
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Yields ``(dotted name, parameter)``; a shared parameter appears once.

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1, bias=False))
            >>> [(name, p.shape) for name, p in net.named_parameters()]
            [('0.weight', flambeau.Size([3, 2])), ('0.bias', flambeau.Size([3])), ('2.weight', flambeau.Size([1, 3]))]
        """
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Yields the parameters of this module (and of its submodules if ``recurse``).

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
            >>> sum(p.numel() for p in net.parameters())
            13
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """Yields ``(dotted name, buffer)`` for the buffers of this module (and of its submodules if ``recurse``),
        each once unless ``remove_duplicate=False``; names start with ``prefix``.

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
            >>> [name for name, _ in net.named_buffers()]
            ['1.running_mean', '1.running_var', '1.num_batches_tracked']
        """
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Yields the buffers of this module (and of its submodules if ``recurse``).

        Example:
            >>> import flambeau_nn as nn
            >>> [tuple(b.shape) for b in nn.BatchNorm1d(4).buffers()]
            [(4,), (4,), ()]
        """
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Yields ``(name, module)`` for each direct child (not deeper descendants), each module once.

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
            >>> [(name, type(m).__name__) for name, m in net.named_children()]
            [('0', 'Linear'), ('1', 'Sequential')]
        """
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        """Yields each direct child module (not deeper descendants).

        Example:
            >>> import flambeau_nn as nn
            >>> [type(m).__name__ for m in nn.Sequential(nn.Linear(2, 2), nn.ReLU()).children()]
            ['Linear', 'ReLU']
        """
        for _, m in self.named_children():
            yield m

    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """Yields ``(dotted name, module)`` for self and every descendant, depth first.

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
            >>> [name for name, _ in net.named_modules()]
            ['', '0', '1', '1.0']
        """
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """Yields self and every descendant module, depth first, each once.

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
            >>> [type(m).__name__ for m in net.modules()]
            ['Sequential', 'Linear', 'Sequential', 'ReLU']
        """
        for _, m in self.named_modules():
            yield m

    # ---- modes and gradients ----
    def train(self, mode: bool = True) -> Module:
        """Sets training mode (Dropout active) on self and every submodule; returns self.

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
            >>> net.train(False)[1].training, net.train()[1].training
            (False, True)
        """
        if not isinstance(mode, bool):
            raise FlambeauError(f"[train] training mode is expected to be boolean, got {type(mode).__name__}")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """``train(False)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> drop = nn.Dropout(p=0.5).eval()
            >>> drop.training, drop(fc.ones(3)).tolist()
            (False, [1.0, 1.0, 1.0])
        """
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Sets ``requires_grad`` on every parameter (e.g. to freeze a module) and returns self.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(2, 2).requires_grad_(False)
            >>> [p.requires_grad for p in m.parameters()]
            [False, False]
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets every parameter's ``.grad``: to ``None`` (default) or to zeros (one fused call).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(2, 1)
            >>> m(fc.ones(1, 2)).sum().backward()
            >>> m.zero_grad()
            >>> m.weight.grad is None
            True
        """
        if set_to_none:
            for p in self.parameters():
                if p.grad is not None:
                    p.grad = None
            return
        _zero_grads(list(self.parameters()))

    # ---- applying functions ----
    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Calls ``fn`` on every submodule (children first) and on self; returns self.

        Example:
            >>> import flambeau_nn as nn
            >>> def init_weights(m):
            ...     if isinstance(m, nn.Linear):
            ...         nn.init.zeros_(m.weight)
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.ReLU()).apply(init_weights)
            >>> net[0].weight.abs().sum().item()
            0.0
        """
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        # Parameters are converted IN PLACE (PyTorch's default `param.data = fn(param)`):
        # the same Parameter objects, so an optimizer built before keeps working;
        # their .grad is converted in place too. Buffers are replaced. Every new
        # value is computed before anything changes, so a failing conversion
        # (e.g. a dtype core cannot cast to) leaves the whole module as it was.
        in_place: list[tuple[Tensor, Tensor]] = []
        buffers: list[tuple[dict, str, Tensor]] = []
        seen: set[int] = set()
        with fa.no_grad():
            for module in self.modules():
                for p in module._parameters.values():
                    if p is None or id(p) in seen:
                        continue
                    seen.add(id(p))
                    new = fn(p)
                    if new is not p:
                        in_place.append((p, new))
                    g = p.grad
                    if g is not None:
                        new_g = fn(g)
                        if new_g is not g:
                            in_place.append((g, new_g))
                for name, b in module._buffers.items():
                    if b is not None:
                        buffers.append((module._buffers, name, fn(b)))
        for target, new in in_place:
            target._set_data(new)
        for store, name, new in buffers:
            store[name] = new
        return self

    def share_memory(self) -> Module:
        """Moves every parameter, gradient and buffer into shared memory, in place (``Tensor.share_memory_``).

        The Parameter objects stay the same; processes given this module (through
        ``flambeau.multiprocessing``: process arguments, queues) then update the
        same memory (Hogwild training). Returns self.

        Example:
            >>> import flambeau_data  # attaches Tensor.share_memory_ (import flambeau does too)
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(2, 2).share_memory()
            >>> all(p.is_shared() for p in m.parameters())
            True
        """
        # Tensor.share_memory_ comes from flambeau-data (flambeau.multiprocessing), which nn does not
        # depend on: `import flambeau` (or flambeau_data) attaches it.
        if not hasattr(Tensor, "share_memory_"):
            raise RuntimeError(
                "[Module.share_memory] needs flambeau-data's shared-memory tensors: pip install flambeau-data, "
                "then import flambeau_data (import flambeau does)"
            )
        return self._apply(lambda t: t.share_memory_())

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Converts floating-point parameters and buffers in place: ``to(dtype)``, ``to(device)``,
        ``to(device, dtype)``, ``to(tensor)`` (its dtype and device); ``non_blocking`` is accepted.

        Integer and bool parameters and buffers keep their dtype. The Parameter
        objects stay the same (their data is replaced), so an optimizer built
        before keeps working. Returns self.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(2, 2).to(fc.float64)
            >>> m.weight.dtype
            flambeau.float64
            >>> m.to("cpu") is m
            True
        """
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        non_blocking = bool(kwargs.pop("non_blocking", False))
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        positional = list(args)
        if positional and isinstance(positional[-1], bool):  # to(device, dtype, non_blocking)
            non_blocking = positional.pop()
        if len(positional) > 2:
            raise TypeError(f"to() takes at most 2 positional arguments (device, dtype), got {len(positional)}")
        for a in positional:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, fc.dtype):
                dtype = a
            elif isinstance(a, (str, fc.device)):
                device = a
            else:
                raise TypeError(f"to() expects a dtype or a device (or a Tensor), got {type(a).__name__}")
        if device is not None:
            dev = fc.device(device) if isinstance(device, str) else device
            if not isinstance(dev, fc.device):
                raise TypeError(f"to() expects a device, got {type(device).__name__}")
        if dtype is not None:
            if not isinstance(dtype, fc.dtype):
                raise TypeError(f"to() expects a dtype, got {type(dtype).__name__}")
            if not dtype.is_floating_point:
                raise TypeError(
                    f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}"
                )
        if dtype is None and device is None:
            return self

        def convert(t: Tensor) -> Tensor:
            to_dtype = dtype if dtype is not None and t.is_floating_point() else t.dtype
            if device is None:
                return t.to(to_dtype) if to_dtype != t.dtype else t
            return t.to(device, to_dtype, non_blocking=non_blocking)

        return self._apply(convert)

    def _float_cast(self, dtype: Any) -> Module:
        def convert(t: Tensor) -> Tensor:
            return t.to(dtype) if t.is_floating_point() and t.dtype != dtype else t

        return self._apply(convert)

    def float(self) -> Module:
        """Casts floating-point parameters and buffers to float32 (in place); returns self.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Linear(2, 2).double().float().weight.dtype
            flambeau.float32
        """
        return self._float_cast(fc.float32)

    def double(self) -> Module:
        """Casts floating-point parameters and buffers to float64 (in place); returns self.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Linear(2, 2).double().weight.dtype
            flambeau.float64
        """
        return self._float_cast(fc.float64)

    def half(self) -> Module:
        """Casts floating-point parameters and buffers to float16 (in place); returns self.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Linear(2, 2).half().weight.dtype
            flambeau.float16
        """
        return self._float_cast(fc.float16)

    def bfloat16(self) -> Module:
        """Casts floating-point parameters and buffers to bfloat16 (in place); returns self.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Linear(2, 2).bfloat16().weight.dtype
            flambeau.bfloat16
        """
        return self._float_cast(fc.bfloat16)

    def type(self, dst_type: Any) -> Module:
        """Casts ALL parameters and buffers (integer ones too) with ``t.type(dst_type)``: a dtype, a
        legacy type (``flambeau.DoubleTensor``) or its name (``"torch.DoubleTensor"``); returns self.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> bn = nn.BatchNorm1d(2).type(fc.float64)
            >>> bn.weight.dtype, bn.num_batches_tracked.dtype  # the integer buffer is cast too
            (flambeau.float64, flambeau.float64)
        """
        if not isinstance(dst_type, (fc.dtype, str, type)):
            raise TypeError(f"[Module.type] expects a dtype, a tensor type or its name, got {type(dst_type).__name__}")
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self) -> Module:
        """Moves every parameter and buffer to the CPU (in place, as ``to("cpu")``); returns self.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(2, 2)
            >>> m.cpu() is m, m.weight.device.type
            (True, 'cpu')
        """
        return self._apply(lambda t: t if t.device.type == "cpu" else t.to("cpu"))

    def cuda(self, device: Any = None) -> Module:
        """Moves every parameter and buffer to a CUDA device (in place, as ``to("cuda")``); returns self.

        ``device``: an index or a device (the current CUDA device when None). Raises where flambeau-cuda is not
        installed or no GPU is present, as ``Tensor.to("cuda")`` does.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(2, 2)
            >>> m.cuda("cpu")  # on a GPU machine: m.cuda() or m.cuda(0)
            Traceback (most recent call last):
            ValueError: [Module.cuda] expects a CUDA device, got cpu
        """
        if device is None:
            target: Any = "cuda"
        elif isinstance(device, int):
            target = f"cuda:{device}"
        elif isinstance(device, (str, fc.device)):
            target = fc.device(device) if isinstance(device, str) else device
            if target.type != "cuda":
                raise ValueError(f"[Module.cuda] expects a CUDA device, got {target}")
        else:
            raise TypeError(f"[Module.cuda] expects a device index or a device, got {type(device).__name__}")
        return self._apply(lambda t: t.to(target))

    # ---- state dict ----
    def state_dict(
        self, *, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict[str, Tensor]:
        """The module's parameters and persistent buffers by dotted name.

        The tensors are detached and share memory with the module (no copy),
        as in PyTorch; ``keep_vars=True`` returns the Parameter objects.

        Example:
            >>> import flambeau_nn as nn
            >>> list(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).state_dict())
            ['0.weight', '0.bias', '1.weight', '1.bias', '1.running_mean', '1.running_var', '1.num_batches_tracked']
        """
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict: dict[str, Tensor], strict: bool = True) -> _IncompatibleKeys:
        """Copies values from ``state_dict`` into the existing parameters and buffers.

        With ``strict=True`` (default) a missing or unexpected key raises
        ``FlambeauError`` (a ``RuntimeError``) listing all of them; a shape
        mismatch always raises.
        Returns ``(missing_keys, unexpected_keys)``.

        Example:
            >>> import flambeau_nn as nn
            >>> src, dst = nn.Linear(2, 2), nn.Linear(2, 2)
            >>> dst.load_state_dict(src.state_dict())
            <All keys matched successfully>
            >>> bool((dst.weight == src.weight).all())
            True
        """
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        missing: list[str] = []
        errors: list[str] = []
        used: set[str] = set()
        targets: list[tuple[Tensor, Tensor]] = []
        for module_prefix, module in self.named_modules(remove_duplicate=False):
            # Lazy modules size their placeholders from the checkpoint first (modules/lazy.py).
            lazy_hook = getattr(module, "_lazy_load_hook", None)
            if lazy_hook is not None:
                lazy_hook(state_dict, module_prefix + "." if module_prefix else "")
        for module_prefix, module in self.named_modules(remove_duplicate=False):
            pre = module_prefix + "." if module_prefix else ""
            local = [(n, p) for n, p in module._parameters.items() if p is not None]
            local += [
                (n, b)
                for n, b in module._buffers.items()
                if b is not None and n not in module._non_persistent_buffers_set
            ]
            for name, current in local:
                key = pre + name
                if key not in state_dict:
                    missing.append(key)
                    continue
                used.add(key)
                value = state_dict[key]
                if not isinstance(value, Tensor):
                    errors.append(
                        f'While copying the parameter named "{key}", expected Tensor-like object from checkpoint '
                        f"but received {type(value).__name__}"
                    )
                    continue
                if tuple(value.shape) != tuple(current.shape):
                    errors.append(
                        f"size mismatch for {key}: copying a param with shape {_shape_str(value)} from checkpoint, "
                        f"the shape in current model is {_shape_str(current)}."
                    )
                    continue
                targets.append((current, value))
        unexpected = [k for k in state_dict.keys() if k not in used]
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise FlambeauError(
                f"[load_state_dict] Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors)
            )
        # Copy only after every check passed, so a failed load leaves the module untouched.
        with fa.no_grad():
            for current, value in targets:
                current.copy_(value)
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing ----
    def extra_repr(self) -> str:
        """Override to show a module's settings inside its repr (e.g. ``in_features=4``).

        Example:
            >>> import flambeau_nn as nn
            >>> class Scale(nn.Module):
            ...     def __init__(self, factor):
            ...         super().__init__()
            ...         self.factor = factor
            ...     def extra_repr(self):
            ...         return f"factor={self.factor}"
            >>> Scale(3)
            Scale(factor=3)
        """
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _zero_grads(params: list[Tensor]) -> None:
    """Zeroes the existing ``.grad`` of ``params`` in one ``_foreach_zero_`` call (detached first, as PyTorch)."""
    grads = []
    for p in params:
        g = p.grad
        if g is None:
            continue
        if g.grad_fn is not None:
            g.detach_()
        elif g.requires_grad:
            g.requires_grad_(False)
        grads.append(g)
    if grads:
        with fa.no_grad():
            _foreach_zero_(grads)
