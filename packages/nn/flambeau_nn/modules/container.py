"""Containers: ``Sequential`` and ``ModuleList``."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any, overload

from flambeau_nn.modules.module import Module

__all__ = ["Sequential", "ModuleList"]


def _index(idx: int, size: int, kind: str) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range for {kind} of length {size}")
    return idx % size if size else idx


class Sequential(Module):
    r"""Runs its modules in order, each on the previous one's output.

    Built from modules (named ``"0"``, ``"1"``, ...) or from an ``OrderedDict``
    of named modules.

    Example:
        >>> import flambeau_nn as nn
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> len(model), type(model[1]).__name__
        (3, 'ReLU')
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    @overload
    def __getitem__(self, idx: int) -> Module: ...
    @overload
    def __getitem__(self, idx: slice) -> Sequential: ...

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules.keys())
        return self._modules[keys[_index(idx, len(keys), "Sequential")]]

    def __setitem__(self, idx: int, module: Module) -> None:
        keys = list(self._modules.keys())
        setattr(self, keys[_index(idx, len(keys), "Sequential")], module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules.keys())
        doomed = keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "Sequential")]]
        for k in doomed:
            delattr(self, k)
        # Renumber so indices stay 0..n-1, as PyTorch does.
        items = list(self._modules.items())
        self._modules.clear()
        for i, (_, m) in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    r"""Holds submodules in a list; they are registered (their parameters are the list's).

    Example:
        >>> import flambeau_nn as nn
        >>> layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        >>> len(list(layers.parameters()))
        6
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules.keys())
        doomed = keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "ModuleList")]]
        for k in doomed:
            del self._modules[k]
        items = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not hasattr(modules, "__iter__"):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleList has no forward(); iterate over it and call its modules")
