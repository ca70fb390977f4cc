"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


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
        """Adds ``module`` at the end (named by its index) and returns the ``Sequential``.

        Example:
            >>> import flambeau_nn as nn
            >>> seq = nn.Sequential(nn.Linear(3, 4)).append(nn.ReLU())
            >>> len(seq), type(seq[1]).__name__
            (2, 'ReLU')
        """
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input: Any) -> Any:
        """Feeds ``input`` to the first module, each output to the next, and returns the last module's output
        (``input`` itself when empty).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))(fc.ones(5, 3)).shape
            flambeau.Size([5, 2])
        """
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
        """Adds ``module`` at the end (registered under its index) and returns the list.

        Example:
            >>> import flambeau_nn as nn
            >>> layers = nn.ModuleList([nn.Linear(2, 2)]).append(nn.Tanh())
            >>> len(layers), [name for name, _ in layers.named_children()]
            (2, ['0', '1'])
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Appends every module of the iterable ``modules`` and returns the list.

        Example:
            >>> import flambeau_nn as nn
            >>> layers = nn.ModuleList().extend(nn.Linear(2, 2) for _ in range(3))
            >>> len(layers), len(list(layers.parameters()))
            (3, 6)
        """
        if not hasattr(modules, "__iter__"):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Inserts ``module`` before position ``index`` (Python's list semantics), renumbering the modules after it.

        Example:
            >>> import flambeau_nn as nn
            >>> layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])
            >>> layers.insert(1, nn.Sigmoid())
            >>> [type(m).__name__ for m in layers]
            ['ReLU', 'Sigmoid', 'Tanh']
        """
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Raises ``NotImplementedError``: a ``ModuleList`` is a container, not a layer; iterate over it and call its
        modules.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> layers = nn.ModuleList([nn.Linear(3, 3), nn.ReLU()])
            >>> x = fc.ones(2, 3)
            >>> for layer in layers:
            ...     x = layer(x)
            >>> x.shape
            flambeau.Size([2, 3])
        """
        raise NotImplementedError("ModuleList has no forward(); iterate over it and call its modules")


def _pairs(values: Any, kind: str) -> list[tuple[Any, Any]]:
    """(key, value) pairs from a mapping or an iterable of pairs, as PyTorch's update() accepts."""
    if isinstance(values, (OrderedDict, dict, ModuleDict, ParameterDict)) or isinstance(values, Mapping):
        items = list(values.items())
        if type(values) is dict:  # plain dicts: PyTorch keeps insertion order too
            return items
        return items
    if not hasattr(values, "__iter__") or isinstance(values, (str, bytes)):
        raise TypeError(
            f"{kind}.update should be called with an iterable of key/value pairs, but got {type(values).__name__}"
        )
    out = []
    for j, item in enumerate(values):
        if not hasattr(item, "__iter__") or isinstance(item, (str, bytes)):
            raise TypeError(f"{kind} update sequence element #{j} should be Iterable; is {type(item).__name__}")
        item = tuple(item)
        if len(item) != 2:
            raise ValueError(f"{kind} update sequence element #{j} has length {len(item)}; 2 is required")
        out.append(item)
    return out


class ModuleDict(Module):
    r"""Holds submodules in an ordered dict; they are registered (their parameters are the dict's).

    Example:
        >>> import flambeau_nn as nn
        >>> d = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.ReLU()})
        >>> list(d.keys()), [n for n, _ in d.named_parameters()]
        (['a', 'b'], ['a.weight', 'a.bias'])
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Removes every module.

        Example:
            >>> import flambeau_nn as nn
            >>> d = nn.ModuleDict({"act": nn.ReLU()})
            >>> d.clear()
            >>> len(d)
            0
        """
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Removes the module under ``key`` and returns it (``KeyError`` when absent).

        Example:
            >>> import flambeau_nn as nn
            >>> d = nn.ModuleDict({"act": nn.ReLU(), "fc": nn.Linear(2, 2)})
            >>> type(d.pop("act")).__name__, list(d.keys())
            ('ReLU', ['fc'])
        """
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Iterable[str]:
        """The names, in insertion order.

        Example:
            >>> import flambeau_nn as nn
            >>> list(nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()}).keys())
            ['b', 'a']
        """
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        """The ``(name, module)`` pairs, in insertion order.

        Example:
            >>> import flambeau_nn as nn
            >>> [(k, type(m).__name__) for k, m in nn.ModuleDict({"act": nn.ReLU()}).items()]
            [('act', 'ReLU')]
        """
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        """The modules, in insertion order.

        Example:
            >>> import flambeau_nn as nn
            >>> [type(m).__name__ for m in nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()}).values()]
            ['ReLU', 'Tanh']
        """
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Adds or replaces modules from a mapping or an iterable of ``(name, module)`` pairs.

        Example:
            >>> import flambeau_nn as nn
            >>> d = nn.ModuleDict({"act": nn.ReLU()})
            >>> d.update([("act", nn.Tanh()), ("fc", nn.Linear(2, 2))])
            >>> [(k, type(m).__name__) for k, m in d.items()]
            [('act', 'Tanh'), ('fc', 'Linear')]
        """
        for key, module in _pairs(modules, "ModuleDict"):
            self[key] = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Raises ``NotImplementedError``: a ``ModuleDict`` is a container, not a layer; index it and call its
        modules.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ModuleDict({"relu": nn.ReLU(), "tanh": nn.Tanh()})
            >>> d["relu"](fc.tensor([-1.0, 2.0])).tolist()
            [0.0, 2.0]
        """
        raise NotImplementedError("ModuleDict has no forward(); index it and call its modules")


def _as_parameter(value: Any, kind: str) -> Any:
    # PyTorch: a plain Tensor is wrapped in a Parameter; anything else is stored as is.
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    r"""Holds parameters in a list; they are registered (named ``"0"``, ``"1"``, ...).

    A plain Tensor appended is wrapped in a ``Parameter`` (as in PyTorch).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> ps = nn.ParameterList([nn.Parameter(fc.zeros(2)), nn.Parameter(fc.ones(3))])
        >>> [n for n, _ in ps.named_parameters()]
        ['0', '1']
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _key(self, idx: int) -> str:
        return str(_index(idx, len(self), "ParameterList"))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = ParameterList()
            for i in range(len(self))[idx]:
                out.append(self[i])
            return out
        return getattr(self, self._key(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        key = self._key(idx)
        setattr(self, key, _as_parameter(param, "ParameterList"))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.isdigit() and value is not None and not isinstance(value, Parameter):
            if isinstance(value, Tensor):
                value = Parameter(value)
        super().__setattr__(name, value)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def append(self, value: Any) -> ParameterList:
        """Adds ``value`` at the end (a plain tensor becomes a ``Parameter``) and returns the list.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> params = nn.ParameterList().append(fc.zeros(3))
            >>> type(params[0]).__name__, params[0].requires_grad
            ('Parameter', True)
        """
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Appends every value of the iterable ``values`` and returns the list.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> params = nn.ParameterList().extend([fc.zeros(2), fc.ones(3)])
            >>> [p.shape for p in params]
            [flambeau.Size([2]), flambeau.Size([3])]
        """
        if not hasattr(values, "__iter__") or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        """One line per entry: its index and, for a tensor, its kind, dtype and size, as shown inside
        ``repr(module)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.ParameterList([fc.ones(2, 3)]).extra_repr()
            '(0): Parameter containing: [flambeau.float32 of size 2x3]'
        """
        lines = []
        for i, p in enumerate(self):
            if isinstance(p, Tensor):
                size = "x".join(str(s) for s in p.shape)
                lines.append(f"({i}): Parameter containing: [{p.dtype} of size {size}]")
            else:
                lines.append(f"({i}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise FlambeauError("ParameterList should not be called.")


class ParameterDict(Module):
    r"""Holds parameters in an ordered dict; they are registered under their keys.

    A plain Tensor stored is wrapped in a ``Parameter`` (as in PyTorch).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> pd = nn.ParameterDict({"w": nn.Parameter(fc.zeros(2))})
        >>> [n for n, _ in pd.named_parameters()]
        ['w']
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'). Open an issue on github if you need non-string keys."
            )
        return key

    def __getitem__(self, key: str) -> Any:
        attr = self._key_to_attr(key)
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, attr)

    def __setitem__(self, key: str, value: Any) -> None:
        attr = self._key_to_attr(key)
        self._keys[key] = None
        setattr(self, attr, _as_parameter(value, "ParameterDict"))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ``ParameterDict`` holding the same parameters (not copies of them), in the same order.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ParameterDict({"w": fc.ones(2)})
            >>> d.copy()["w"] is d["w"]
            True
        """
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        """Returns the entry under ``key``, first setting it to ``default`` when absent.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ParameterDict()
            >>> d.setdefault("b", fc.zeros(3)).shape, list(d.keys())
            (flambeau.Size([3]), ['b'])
        """
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Removes every entry.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ParameterDict({"w": fc.ones(2)})
            >>> d.clear()
            >>> len(d)
            0
        """
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        """Removes the entry under ``key`` and returns it (``KeyError`` when absent).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ParameterDict({"w": fc.ones(2), "b": fc.zeros(2)})
            >>> d.pop("w").tolist(), list(d.keys())
            ([1.0, 1.0], ['b'])
        """
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        """Removes the last inserted entry and returns it as ``(key, value)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ParameterDict({"w": fc.ones(2), "b": fc.zeros(2)})
            >>> d.popitem()[0], list(d.keys())
            ('w', ['b'])
        """
        k = list(self._keys)[-1]
        v = self[k]
        del self[k]
        return k, v

    def get(self, key: str, default: Any = None) -> Any:
        """The entry under ``key``, or ``default`` when absent.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ParameterDict({"w": fc.ones(2)})
            >>> d.get("w").shape, d.get("missing")
            (flambeau.Size([2]), None)
        """
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        """A new ``ParameterDict`` with each of ``keys`` set to ``default``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ParameterDict().fromkeys(["a", "b"], fc.zeros(2))
            >>> list(d.keys()), d["a"].shape
            (['a', 'b'], flambeau.Size([2]))
        """
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Iterable[str]:
        """The names, in insertion order.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> list(nn.ParameterDict({"w": fc.ones(2), "b": fc.zeros(2)}).keys())  # a dict's keys come sorted
            ['b', 'w']
        """
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        """The ``(name, value)`` pairs, in insertion order.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> [(k, v.shape) for k, v in nn.ParameterDict({"w": fc.ones(2, 3)}).items()]
            [('w', flambeau.Size([2, 3]))]
        """
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        """The values, in insertion order.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> [v.shape for v in nn.ParameterDict({"w": fc.ones(2, 3), "b": fc.ones(2)}).values()]
            [flambeau.Size([2]), flambeau.Size([2, 3])]
        """
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Adds or replaces entries from a mapping or an iterable of ``(name, value)`` pairs; a plain ``dict``'s keys
        are added in sorted order, as PyTorch does.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> d = nn.ParameterDict()
            >>> d.update({"z": fc.ones(1), "a": fc.ones(1)})
            >>> list(d.keys())
            ['a', 'z']
        """
        pairs = _pairs(parameters, "ParametersDict")
        if isinstance(parameters, (OrderedDict, ParameterDict)) or not isinstance(parameters, Mapping):
            pass
        else:  # a plain mapping: PyTorch sorts its keys
            pairs = sorted(pairs, key=lambda kv: kv[0])
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        """One line per entry: its name and, for a tensor, its kind, dtype and size, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.ParameterDict({"a": fc.ones(2)}).extra_repr()
            '(a): Parameter containing: [flambeau.float32 of size 2]'
        """
        lines = []
        for k, p in self.items():
            if isinstance(p, Tensor):
                size = "x".join(str(s) for s in p.shape)
                lines.append(f"({k}): Parameter containing: [{p.dtype} of size {size}]")
            else:
                lines.append(f"({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise FlambeauError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self
