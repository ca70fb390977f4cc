"""Parametrizations (PyTorch's ``torch.nn.utils.parametrize``): a parameter computed from others on every access.

``register_parametrization(module, "weight", P)`` moves the tensor to
``module.parametrizations.weight.original`` and makes ``module.weight`` a
property that returns ``P(original)``; several parametrizations on one tensor
chain in registration order. The module's class becomes a subclass
(``Parametrized<Name>``) holding that property, as in PyTorch, so the
state_dict keys are PyTorch's (``parametrizations.weight.original``).

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> class Symmetric(nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).transpose(-1, -2)
    >>> m = register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    >>> bool((m.weight == m.weight.T).all()), type(m).__name__
    (True, 'ParametrizedLinear')
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original']
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import flambeau_autograd as fa
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.container import ModuleDict, ModuleList
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = [
    "cached",
    "ParametrizationList",
    "register_parametrization",
    "is_parametrized",
    "remove_parametrizations",
    "type_before_parametrizations",
    "transfer_parametrizations_and_params",
]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    r"""Inside this context each parametrized tensor is computed once, on its first access, and reused.

    Useful when a parametrized weight is read several times in one forward
    (e.g. in a recurrent loop). The cache is dropped on leaving the outermost
    ``cached()``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> class Double(nn.Module):
        ...     def forward(self, X):
        ...         return 2 * X
        >>> m = register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> with cached():
        ...     m.weight is m.weight
        True
    """
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _set_in_place(dest: Tensor, src: Tensor) -> None:
    """Gives ``dest`` the value (and shape) of ``src`` while keeping ``dest``'s identity (optimizers hold it)."""
    if tuple(dest.shape) == tuple(src.shape) and dest.dtype == src.dtype:
        dest.copy_(src)
        return
    try:
        dest.data = src.detach().clone()
    except AttributeError:
        raise FlambeauError(
            f"[parametrize] cannot give the original tensor of shape {tuple(dest.shape)} and dtype {dest.dtype} the "
            f"shape {tuple(src.shape)} and dtype {src.dtype} in place (a Parameter's storage cannot be swapped)"
        ) from None


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _check_like(value: Any, like: Tensor, what: str) -> None:
    if not isinstance(value, Tensor):
        raise FlambeauError(f"[register_parametrization] {what} must return a tensor, got {type(value).__name__}")
    if value.dtype != like.dtype:
        raise FlambeauError(
            f"[register_parametrization] {what} may not change the dtype of the tensor, unless `unsafe` is set: "
            f"got {value.dtype}, expected {like.dtype}"
        )
    if tuple(value.shape) != tuple(like.shape):
        raise FlambeauError(
            f"[register_parametrization] {what} may not change the shape of the tensor, unless `unsafe` is set: "
            f"got {tuple(value.shape)}, expected {tuple(like.shape)}"
        )


class ParametrizationList(ModuleList):
    r"""The parametrizations of one tensor, in order, and the unconstrained tensor(s) they read.

    ``original`` holds ``right_inverse`` of the tensor at registration (the
    tensor itself when the first parametrization has no ``right_inverse``); a
    ``right_inverse`` that returns several tensors gives ``original0``,
    ``original1``, ...; calling the list evaluates the chain. Built by
    ``register_parametrization``, not directly.
    """

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise FlambeauError("[ParametrizationList] requires one or more modules")
        super().__init__(modules)
        self.unsafe = unsafe
        with fa.no_grad():
            new: Any = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, (list, tuple)):
            raise FlambeauError(
                "[register_parametrization] 'right_inverse' must return a Tensor or a Sequence of tensors "
                f"(list, tuple...), got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise FlambeauError(
                    "[register_parametrization] When `right_inverse` outputs one tensor, it may not change the "
                    f"dtype: original.dtype: {original.dtype}, right_inverse(original).dtype: {new.dtype}"
                )
            with fa.no_grad():
                _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise FlambeauError(
                        "[register_parametrization] 'right_inverse' must return a Tensor or a Sequence of tensors, "
                        f"got element {i} of type {type(part).__name__}"
                    )
                part = part.detach().clone()
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                else:
                    part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            z = self()
            _check_like(z, original, "a parametrization")

    def right_inverse(self, value: Tensor) -> None:
        r"""Sets the originals so that the chain evaluates to ``value`` (``module.weight = value`` calls it)."""
        with fa.no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise FlambeauError(
                        f"[ParametrizationList] parametrization {type(module).__name__} does not implement "
                        "right_inverse"
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise FlambeauError(f"[ParametrizationList] `right_inverse` should return a tensor, got {value!r}")
                if not self.unsafe:
                    _check_like(value, self.original, "right_inverse")
                _set_in_place(self.original, value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise FlambeauError(
                        f"[ParametrizationList] 'right_inverse' must return a sequence of {self.ntensors} tensors, "
                        f"got {type(value).__name__}"
                    )
                for i, part in enumerate(value):
                    _set_in_place(getattr(self, f"original{i}"), part)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    cls = module.__class__

    def getstate(self: Module) -> Any:
        raise FlambeauError(
            "[parametrize] Serialization of parametrized modules is only supported through state_dict()"
        )

    def deepcopy(self: Module, memo: dict) -> Module:
        # copy.deepcopy would go through __getstate__: copy the instance's __dict__ instead.
        out = self.__class__.__new__(self.__class__)
        memo[id(self)] = out
        for key, value in self.__dict__.items():
            out.__dict__[key] = copy.deepcopy(value, memo)
        return out

    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate, "__deepcopy__": deepcopy})


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    r"""Makes ``module.<tensor_name>`` the output of ``parametrization`` applied to the stored tensor.

    The stored (unconstrained) tensor moves to
    ``module.parametrizations[tensor_name].original``; if ``parametrization``
    has a ``right_inverse``, the stored tensor is ``right_inverse(tensor)`` so
    that ``module.<tensor_name>`` starts at its old value (and assigning to it
    calls ``right_inverse``). A second registration on the same name chains.
    Unless ``unsafe``, the parametrization must keep the tensor's shape and dtype.
    Returns ``module``.
    """
    if not isinstance(module, Module):
        raise TypeError(f"[register_parametrization] module must be a Module, got {type(module).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            _check_like(x, y, "a parametrization")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    _check_like(z, y, "right_inverse")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = plist
        _inject_property(module, tensor_name)
    else:
        raise FlambeauError(
            f"[register_parametrization] Module '{module}' does not have a parameter, a buffer, or a parametrized "
            f"element with name '{tensor_name}'"
        )
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    r"""Whether ``module`` has a parametrization (on ``tensor_name``, if given).

    Example:
        >>> import flambeau_nn as nn
        >>> is_parametrized(nn.Linear(2, 2))
        False
    """
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    r"""Removes the parametrizations of ``module.<tensor_name>``, leaving a plain parameter (or buffer).

    ``leave_parametrized=True`` keeps the current (parametrized) value, in the
    original Parameter object; ``False`` restores the unconstrained ``original``.
    When the last parametrization goes, the module gets its class back.
    """
    if not is_parametrized(module, tensor_name):
        raise FlambeauError(
            f"[remove_parametrizations] Module {module} does not have a parametrization on {tensor_name}"
        )
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with fa.no_grad():
                value = getattr(module, tensor_name)
                _set_in_place(original, value)
    else:
        if not leave_parametrized:
            raise FlambeauError(
                "[remove_parametrizations] Cannot leave unparametrized (`leave_parametrized=False`) a tensor that "
                "is parametrized in terms of a sequence of tensors."
            )
        with fa.no_grad():
            value = getattr(module, tensor_name).detach().clone()
        first = plist.original0
        original = Parameter(value, first.requires_grad) if isinstance(first, Parameter) else value
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    r"""The module's class before ``register_parametrization`` replaced it (its own class if none)."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    r"""Copies the parametrizations (all, or those of ``tensor_name``) and their originals onto ``to_module``."""
    if is_parametrized(from_module):
        names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
        for name in names:
            source = from_module.parametrizations[name]
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name).detach().clone()))
            for fn in source:
                register_parametrization(to_module, name, fn, unsafe=True)
            target = to_module.parametrizations[name]
            with fa.no_grad():
                if source.is_tensor:
                    _set_in_place(target.original, source.original)
                else:
                    for i in range(source.ntensors):
                        _set_in_place(getattr(target, f"original{i}"), getattr(source, f"original{i}"))
    return to_module
