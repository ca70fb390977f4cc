"""Pruning (PyTorch's ``torch.nn.utils.prune``): zeroing parameters through a mask.

Pruning ``module.weight`` moves the parameter to ``weight_orig``, stores the
mask in the buffer ``weight_mask`` and makes ``weight`` a plain attribute equal
to ``weight_orig * weight_mask``, recomputed by a forward pre-hook (the pruning
method itself). Pruning the same tensor again combines the masks (a
``PruningContainer``); ``remove`` makes the pruned value the parameter again.

Example:
    >>> import flambeau_autograd as fa
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> m = nn.Linear(2, 2)
    >>> with fa.no_grad():
    ...     _ = m.weight.copy_(fc.tensor([[0.1, -2.0], [3.0, -0.4]]))
    >>> _ = l1_unstructured(m, "weight", amount=0.5)
    >>> m.weight.tolist(), sorted(m.state_dict())
    ([[0.0, -2.0], [3.0, -0.0]], ['bias', 'weight_mask', 'weight_orig'])
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.module import Module
from flambeau_nn.utils._hooks import pop_pre_hook
from flambeau_nn.utils.convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "PruningContainer",
    "Identity",
    "RandomUnstructured",
    "L1Unstructured",
    "RandomStructured",
    "LnStructured",
    "CustomFromMask",
    "identity",
    "random_unstructured",
    "l1_unstructured",
    "random_structured",
    "ln_structured",
    "global_unstructured",
    "custom_from_mask",
    "remove",
    "is_pruned",
]


class BasePruningMethod(ABC):
    r"""Base class of the pruning methods: ``compute_mask`` says which entries stay (1) and which go (0).

    An instance is also the forward pre-hook that recomputes ``module.<name>``
    from ``<name>_orig`` and ``<name>_mask``.
    """

    _tensor_name: str
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for ``t``, given the mask already applied (``default_mask``)."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_orig * <name>_mask`` of ``module``."""
        if getattr(self, "_tensor_name", None) is None:
            raise FlambeauError(f"[prune] Module {module} has to be pruned")
        return getattr(module, self._tensor_name + "_orig") * getattr(module, self._tensor_name + "_mask")

    @classmethod
    def apply(
        cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None, **kwargs: Any
    ) -> BasePruningMethod:
        """Prunes ``module.<name>`` with a new ``cls(*args, **kwargs)`` (combined with any earlier pruning)."""
        old = None
        for key, hook in list(module._forward_pre_hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                if old is not None:
                    raise FlambeauError(
                        f"[prune] Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                        "Use a PruningContainer."
                    )
                old = hook
                del module._forward_pre_hooks[key]
        method: BasePruningMethod = cls(*args, **kwargs)
        method._tensor_name = name
        if isinstance(old, PruningContainer):
            old.add_pruning_method(method)
            method = old
        elif old is not None:
            container = PruningContainer(old)
            container.add_pruning_method(method)
            method = container

        if not isinstance(getattr(module, name, None), Tensor):
            raise AttributeError(f"[prune] Module {type(module).__name__} has no parameter or buffer named '{name}'")
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise FlambeauError(
                    f"[prune] importance_scores should have the same shape as parameter {name} of {module}"
                )
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = fc.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with fa.no_grad():
                mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times its mask (computed from ``importance_scores``, default ``t``), without touching a module."""
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(t.shape):
                raise FlambeauError("[prune] importance_scores should have the same shape as tensor t")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else fc.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Makes the pruned value the parameter ``<name>`` again (same Parameter object as ``<name>_orig``)."""
        if getattr(self, "_tensor_name", None) is None:
            raise FlambeauError(f"[prune] Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if self._tensor_name in module.__dict__:
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        with fa.no_grad():
            orig.copy_(weight)
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _positions(selected: Tensor) -> Tensor:
    return fc.nonzero(selected).reshape(-1)


class PruningContainer(BasePruningMethod):
    r"""The sequence of pruning methods applied to one tensor; each new mask acts on what the previous left."""

    def __init__(self, *args: Any) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1 and isinstance(args[0], BasePruningMethod):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"[PruningContainer] {type(method).__name__} is not a BasePruningMethod subclass")
        if method is not None and getattr(self, "_tensor_name", None) != method._tensor_name:
            raise FlambeauError(
                "[PruningContainer] Can only add pruning methods acting on the parameter named "
                f"'{getattr(self, '_tensor_name', None)}' to PruningContainer. Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        r"""The last method's mask, computed only on the entries (or channels) that the earlier ones kept."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            flat_mask = mask.reshape(-1)
            idx = _positions(flat_mask == 1)
            partial = method.compute_mask(
                t.reshape(-1).index_select(0, idx), default_mask=flat_mask.index_select(0, idx)
            )
            return flat_mask.index_copy(0, idx, partial.to(mask.dtype)).reshape(tuple(t.shape))
        if kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    "Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` defined."
                )
            dim = method.dim + t.dim() if method.dim < 0 else method.dim
            if dim < 0 or dim >= t.dim():
                raise IndexError(f"Index is out of bounds for tensor of size {tuple(t.shape)}")
            others = [d for d in range(t.dim()) if d != dim]
            idx = _positions(mask.sum(others) != 0)
            partial = method.compute_mask(t.index_select(dim, idx), default_mask=mask.index_select(dim, idx))
            return mask.index_copy(dim, idx, partial.to(mask.dtype))
        if kind == "global":
            return method.compute_mask(t, default_mask=mask).to(mask.dtype)
        raise FlambeauError(f"[PruningContainer] Unrecognized PRUNING_TYPE {kind}")


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones): makes a tensor prunable by later methods."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


def _validate_amount_init(amount: Any) -> None:
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise TypeError(f"[prune] Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise FlambeauError(
            f"[prune] amount={amount} should either be a float in the range [0, 1] or a non-negative integer"
        )


def _validate_amount(amount: Any, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise FlambeauError(
            f"[prune] amount={amount} should be smaller than the number of parameters to prune={tensor_size}"
        )


def _count_to_prune(amount: Any, tensor_size: int) -> int:
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * tensor_size)


def _zero_at(mask: Tensor, flat_index: Tensor) -> Tensor:
    return mask.reshape(-1).index_fill(0, flat_index, 0).reshape(tuple(mask.shape))


class _Unstructured(BasePruningMethod):
    """Prunes the ``amount`` (a fraction, or a count) of entries with the lowest ``_scores``."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_amount_init(amount)
        self.amount = amount

    def _scores(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_amount(self.amount, t.numel())
        k = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if k != 0:
            mask = _zero_at(mask, self._scores(t).reshape(-1).topk(k, largest=False)[1])
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` (a fraction, or a count) of the entries, chosen at random."""

    def _scores(self, t: Tensor) -> Tensor:
        return fc.rand(t.numel(), dtype=t.dtype if t.is_floating_point() else fc.float32)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` (a fraction, or a count) of entries of smallest absolute value (importance score)."""

    def _scores(self, t: Tensor) -> Tensor:
        return t.abs()

    @classmethod
    def apply(  # type: ignore[override]
        cls, module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None
    ) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _validate_structured(t: Tensor) -> None:
    if t.dim() <= 1:
        raise FlambeauError(
            f"[prune] Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
            f"{tuple(t.shape)} with {t.dim()} dims"
        )


def _validate_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim() or dim < -t.dim():
        raise IndexError(f"[prune] Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _keep_channels(t: Tensor, dim: int, kept: Tensor) -> Tensor:
    """A mask of ``t``'s shape: ones on the channels ``kept`` (indices along ``dim``), zeros elsewhere."""
    return fc.zeros_like(t).index_fill(dim, kept, 1)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _count_to_prune(self.amount, size)
        _validate_amount(self.amount, size)
        if k == 0:
            return default_mask
        kept = fc.rand(size).topk(size - k)[1]
        return _keep_channels(t, self.dim, kept) * default_mask.to(t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, dim: int = -1) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim`` with the smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        _validate_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _count_to_prune(self.amount, size)
        _validate_amount(self.amount, size)
        if k == 0:
            return default_mask
        dim = self.dim % t.dim()
        others = [d for d in range(t.dim()) if d != dim]
        norm = t.norm(self.n, others) if isinstance(self.n, str) else fc.linalg.vector_norm(t, self.n, others)
        kept = norm.topk(size - k)[1]
        return _keep_channels(t, self.dim, kept) * default_mask.to(t.dtype)

    @classmethod
    def apply(  # type: ignore[override]
        cls,
        module: Module,
        name: str,
        amount: int | float,
        n: int | float | str,
        dim: int,
        importance_scores: Tensor | None = None,
    ) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask (zeros where entries go)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise FlambeauError(
                f"[prune] the mask has shape {tuple(self.mask.shape)}, the tensor {tuple(default_mask.shape)}"
            )
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    r"""Adds an all-ones mask to ``module.<name>`` (state_dict: ``<name>_orig``, ``<name>_mask``)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    r"""Prunes ``amount`` (fraction or count) of ``module.<name>``'s entries at random."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None) -> Module:
    r"""Prunes the ``amount`` (fraction or count) of ``module.<name>``'s entries of smallest magnitude."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    r"""Prunes ``amount`` of ``module.<name>``'s channels along ``dim`` at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(
    module: Module,
    name: str,
    amount: int | float,
    n: int | float | str,
    dim: int,
    importance_scores: Tensor | None = None,
) -> Module:
    r"""Prunes ``amount`` of ``module.<name>``'s channels along ``dim`` with the smallest ``n``-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]],
    pruning_method: type[BasePruningMethod],
    importance_scores: dict[tuple[Module, str], Tensor] | None = None,
    **kwargs: Any,
) -> None:
    r"""Prunes the ``(module, name)`` tensors together, as one vector, with an unstructured ``pruning_method``.

    Example:
        >>> import flambeau_nn as nn
        >>> a, b = nn.Linear(4, 4), nn.Linear(4, 4)
        >>> global_unstructured([(a, "weight"), (b, "weight")], L1Unstructured, amount=8)
        >>> int((a.weight == 0).sum().item() + (b.weight == 0).sum().item())
        8
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("[global_unstructured] parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("[global_unstructured] importance_scores must be of type dict")
    scores = parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name)).detach() for module, name in parameters]
    )
    masks = [module._buffers.get(name + "_mask") for module, name in parameters]
    default_mask = parameters_to_vector(
        [
            fc.ones_like(getattr(module, name)) if m is None else m
            for m, (module, name) in zip(masks, parameters, strict=True)
        ]
    )
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
            f"{pruning_method} of type {method.PRUNING_TYPE}"
        )
    container = PruningContainer()
    container._tensor_name = "temp"
    container.add_pruning_method(method)
    with fa.no_grad():
        final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, mask=final_mask[start : start + n].reshape(tuple(param.shape)))
        start += n


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    r"""Prunes ``module.<name>`` with the given 0/1 ``mask``."""
    CustomFromMask.apply(module, name, mask=mask)
    return module


def remove(module: Module, name: str) -> Module:
    r"""Makes the pruning of ``module.<name>`` permanent: ``<name>`` is a plain parameter with the zeros in it."""
    hook = pop_pre_hook(module, BasePruningMethod, name, "_tensor_name")
    if hook is not None:
        hook.remove(module)
        return module
    raise FlambeauError(
        f"[prune.remove] Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
    )


def is_pruned(module: Module) -> bool:
    r"""Whether ``module`` or one of its submodules has a pruning hook.

    Example:
        >>> import flambeau_nn as nn
        >>> is_pruned(nn.Linear(2, 2))
        False
    """
    for _, sub in module.named_modules():
        for hook in sub._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
