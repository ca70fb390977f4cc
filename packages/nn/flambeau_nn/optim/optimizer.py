"""``Optimizer``: param groups, per-parameter state, and PyTorch's state_dict format.

Note [Optimizer step structure]
Each optimizer's ``step`` gathers, per param group, the params that have a
grad and their grads, and hands them with the per-parameter state tensors to
ONE fused core op (``_fused_sgd_``, ``_fused_adam_``, ``_fused_rmsprop_``,
``_fused_adagrad_``) that updates every tensor of the lists in C++ (threaded
across tensors and chunks, vectorized), under ``no_grad``. The 0-d ``step``
tensors are incremented and read inside the kernel, so a step never calls
``.item()``. The lists of state tensors are cached per group and rebuilt only
when the set of params with a grad changes or the state is modified
(``ParamState`` counts its changes). The state layout and the state_dict
format are torch.optim's.

Optimizers without a fused core op (Adadelta, Adamax, NAdam, RAdam, ASGD,
Rprop) subclass ``ComposedOptimizer``: the same gathering and caching, then
one Python loop over the group's params whose body composes in-place core
tensor ops (each op runs over the whole tensor in C++; there is no
per-element Python). Their scalar state (``step``, NAdam's ``mu_product``,
ASGD's ``eta``/``mu``) is a 0-d float32 tensor as in PyTorch, so state dicts
are interchangeable and the float32 roundings of those scalars match.
"""

from __future__ import annotations

import copy
import functools
import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.module import RemovableHandle, _zero_grads

__all__ = [
    "Optimizer",
    "ParamState",
    "ComposedOptimizer",
    "register_optimizer_step_pre_hook",
    "register_optimizer_step_post_hook",
]

# Hooks run around the step of every optimizer (PyTorch's global optimizer hooks).
_global_step_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_step_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before every optimizer's step.

    Example:
        >>> import flambeau_nn as nn
        >>> from flambeau_nn.optim.optimizer import register_optimizer_step_pre_hook
        >>> seen = []
        >>> handle = register_optimizer_step_pre_hook(lambda opt, args, kwargs: seen.append(type(opt).__name__))
        >>> nn.optim.SGD(nn.Linear(1, 1).parameters(), lr=0.1).step()
        >>> handle.remove(); seen
        ['SGD']
    """
    handle = RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs)`` after every optimizer's step (see the pre hook)."""
    handle = RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


def _with_step_hooks(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` run between the global and the optimizer's own pre and post hooks (PyTorch's order)."""

    @functools.wraps(step)
    def hooked_step(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        for pre in itertools.chain(_global_step_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise FlambeauError(
                        f"[{type(self).__name__}.step] a step pre hook must return None or a tuple of "
                        f"(new_args, new_kwargs), but got {result!r}"
                    )
                args, kwargs = result
        out = step(self, *args, **kwargs)
        self._opt_called = True  # lets an lr scheduler tell whether optimizer.step() ran before it
        for post in itertools.chain(self._optimizer_step_post_hooks.values(), _global_step_post_hooks.values()):
            post(self, args, kwargs)
        return out

    hooked_step.hooked = True  # type: ignore[attr-defined]
    return hooked_step


def run_closure(closure: Callable[[], Any] | None) -> Any:
    """Re-evaluates the model for ``step(closure)`` with gradients on; None without a closure."""
    if closure is None:
        return None
    with fa.enable_grad():
        return closure()


def check_fused_options(opt: Any, *, differentiable: bool = False, capturable: bool = False) -> None:
    """``differentiable`` and ``capturable`` steps are not supported (the fused kernels are not differentiable)."""
    if differentiable:
        raise FlambeauError(
            f"[{type(opt).__name__}] differentiable=True is not supported: the step runs in a fused, "
            "non-differentiable kernel"
        )
    if capturable:
        raise FlambeauError(f"[{type(opt).__name__}] capturable=True is not supported (no CUDA graphs)")


def check_value(opt: Any, ok: bool, what: str, value: Any) -> None:
    """Raises PyTorch's ``Invalid <what>: <value>`` (a ValueError) prefixed with the optimizer's name."""
    if not ok:
        raise FlambeauError(f"[{type(opt).__name__}] Invalid {what}: {value}")


def check_betas(opt: Any, betas: Any) -> tuple[float, float]:
    """Validates a ``(beta1, beta2)`` pair, each in [0, 1)."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise FlambeauError(f"[{type(opt).__name__}] betas must be a pair (beta1, beta2), got {betas!r}")
    check_value(opt, 0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
    check_value(opt, 0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
    return (betas[0], betas[1])


def check_adam_hyperparameters(opt: Any, lr: Any, betas: Any, eps: float, weight_decay: float) -> tuple[float, float]:
    """The checks of the Adam family (lr, eps, betas, weight_decay), in PyTorch's order; returns the betas."""
    check_lr(opt, lr)
    check_value(opt, 0.0 <= eps, "epsilon value", eps)
    betas = check_betas(opt, betas)
    check_value(opt, 0.0 <= weight_decay, "weight_decay value", weight_decay)
    return betas


def check_lr(opt: Any, lr: Any) -> None:
    """``lr`` must be a non-negative number (or a 1-element tensor, as PyTorch allows)."""
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise FlambeauError(f"[{type(opt).__name__}] Tensor lr must be 1-element")
        lr = lr.item()
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        raise TypeError(f"[{type(opt).__name__}] lr must be a float, got {type(lr).__name__}")
    check_value(opt, 0.0 <= lr, "learning rate", lr)


def scalar(value: Any) -> float:
    """A hyperparameter as a Python float (a 1-element tensor lr is read once per step)."""
    return float(value.item()) if isinstance(value, Tensor) else float(value)


def check_not_differentiable(opt: Any, differentiable: bool) -> None:
    """``differentiable=True`` (recording the step in the autograd graph) is not supported."""
    if differentiable:
        raise FlambeauError(f"[{type(opt).__name__}] differentiable=True is not supported: the step runs under no_grad")


def grad_of(
    p: Tensor, g: Tensor, *, maximize: bool, weight_decay: float = 0.0, decoupled_lr: float | None = None
) -> Tensor:
    """The gradient a step uses: negated with ``maximize``, plus ``weight_decay * p`` (L2 penalty).

    With ``decoupled_lr`` the decay is decoupled instead (AdamW's form):
    ``p`` is scaled in place by ``1 - decoupled_lr * weight_decay`` and the
    gradient is left alone. The result may be ``g`` itself: callers never
    write into it.
    """
    if maximize:
        g = g.neg()
    if weight_decay != 0:
        if decoupled_lr is not None:
            p.mul_(1 - decoupled_lr * weight_decay)
        else:
            g = g.add(p, alpha=weight_decay)
    return g


def adam_moments_(exp_avg: Tensor, exp_avg_sq: Tensor, g: Tensor, beta1: float, beta2: float) -> None:
    """Adam's running moments, in place: ``m += (1 - beta1) (g - m)``, ``v = beta2 v + (1 - beta2) g g``."""
    exp_avg.lerp_(g, 1 - beta1)
    exp_avg_sq.mul_(beta2).add_(g.mul(1 - beta2).mul_(g))


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class _StateDict(dict):
    """One parameter's state dict; every change bumps its owner's generation (Note [Optimizer step structure])."""

    __slots__ = ("_owner",)

    def __init__(self, owner: ParamState, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._owner = owner

    def _touch(self) -> None:
        self._owner.generation += 1

    def __setitem__(self, k: Any, v: Any) -> None:
        super().__setitem__(k, v)
        self._touch()

    def __delitem__(self, k: Any) -> None:
        super().__delitem__(k)
        self._touch()

    def clear(self) -> None:
        super().clear()
        self._touch()

    def pop(self, *args: Any) -> Any:
        self._touch()
        return super().pop(*args)

    def popitem(self) -> Any:
        self._touch()
        return super().popitem()

    def setdefault(self, k: Any, default: Any = None) -> Any:
        self._touch()
        return super().setdefault(k, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self._touch()

    def __reduce__(self):  # pickles and deep-copies as a plain dict
        return (dict, (dict(self),))


class ParamState(MutableMapping):
    """``optimizer.state``: a mapping from a parameter (by identity) to its state dict.

    Tensors compare elementwise and so are not hashable; this mapping keys by
    ``id`` and keeps the parameter alive, so ``optimizer.state[p]`` works as
    in PyTorch. A missing parameter reads as a fresh empty dict.
    ``generation`` counts changes (Note [Optimizer step structure]).
    """

    def __init__(self) -> None:
        self._data: dict[int, tuple[Tensor, dict]] = {}
        self.generation = 0

    def __getitem__(self, p: Tensor) -> dict:
        entry = self._data.get(id(p))
        if entry is None:
            entry = self._data[id(p)] = (p, _StateDict(self))
            self.generation += 1
        return entry[1]

    def __setitem__(self, p: Tensor, value: dict) -> None:
        self._data[id(p)] = (p, _StateDict(self, value))
        self.generation += 1

    def __delitem__(self, p: Tensor) -> None:
        del self._data[id(p)]
        self.generation += 1

    def __contains__(self, p: object) -> bool:
        return id(p) in self._data

    def __iter__(self) -> Iterator[Tensor]:
        return (p for p, _ in self._data.values())

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return "ParamState(" + repr({f"<param {tuple(p.shape)}>": dict(s) for p, s in self._data.values()}) + ")"


class Optimizer:
    r"""Base class of optimizers.

    Args:
        params: an iterable of tensors, or of dicts (param groups) each with a
            ``"params"`` entry and optional per-group hyperparameters.
        defaults: hyperparameters used by groups that do not set them.

    Subclass it and implement ``step()``; read hyperparameters from each
    ``group`` in ``self.param_groups`` and keep per-parameter tensors in
    ``self.state[p]``, and ``state_dict``/``load_state_dict`` work unchanged.

    Example:
        >>> import flambeau_nn as nn
        >>> model = nn.Linear(2, 1)
        >>> opt = nn.optim.SGD([{"params": [model.weight]}, {"params": [model.bias], "lr": 0.5}], lr=0.1)
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.5]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state = ParamState()
        self.param_groups: list[dict[str, Any]] = []
        self._init_hooks()
        # PyTorch wraps the most derived class's step once, so hooks run once around an overriding step.
        if not getattr(type(self).step, "hooked", False):
            type(self).step = _with_step_hooks(type(self).step)  # type: ignore[method-assign]
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {type(params).__name__}"
            )
        param_groups = list(params)
        if len(param_groups) == 0:
            raise FlambeauError(f"[{type(self).__name__}] optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def _init_hooks(self) -> None:
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()

    @staticmethod
    def _add_hook(hooks: OrderedDict, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"[Optimizer] hook must be callable, got {type(hook).__name__}")
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``, run before each ``step``.

        Example:
            >>> import flambeau_nn as nn
            >>> opt = nn.optim.SGD(nn.Linear(1, 1).parameters(), lr=0.1)
            >>> calls = []
            >>> _ = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
            >>> opt.step(); calls
            ['pre']
        """
        return self._add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)``, run after each ``step``.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1)
            >>> calls = []
            >>> handle = opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
            >>> opt.step(); handle.remove(); opt.step(); calls
            ['post']
        """
        return self._add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer)``, run before ``state_dict()`` builds the dict.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1)
            >>> _ = opt.register_state_dict_pre_hook(lambda o: print("saving", len(o.param_groups), "group"))
            >>> _ = opt.state_dict()
            saving 1 group
        """
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict) -> None or a new state dict``, run on ``state_dict()``'s result.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1)
            >>> def tag(o, sd):
            ...     sd["note"] = "epoch 3"
            >>> _ = opt.register_state_dict_post_hook(tag)
            >>> opt.state_dict()["note"]
            'epoch 3'
        """
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict) -> None or a new state dict``, run before loading it.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1)
            >>> def halve_lr(o, sd):
            ...     sd["param_groups"][0]["lr"] /= 2
            ...     return sd
            >>> sd = opt.state_dict()
            >>> _ = opt.register_load_state_dict_pre_hook(halve_lr)
            >>> opt.load_state_dict(sd); opt.param_groups[0]["lr"]
            0.05
        """
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer)``, run after ``load_state_dict`` loaded a state.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1)
            >>> _ = opt.register_load_state_dict_post_hook(lambda o: print("loaded"))
            >>> opt.load_state_dict(opt.state_dict())
            loaded
        """
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters (e.g. newly unfrozen layers) with its own hyperparameters.

        Keys the optimizer does not know are kept (PyTorch's behaviour: e.g. a group ``"name"``).

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1)
            >>> opt.add_param_group({"params": [fb.zeros(3, requires_grad=True)], "lr": 0.01})
            >>> [g["lr"] for g in opt.param_groups], opt.param_groups[1]["momentum"]
            ([0.1, 0.01], 0.0)
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise KeyError(
                f"[{type(self).__name__}] a parameter group must have a 'params' entry, got keys {sorted(param_group)}"
            )
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but got a set")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise FlambeauError(
                    f"[{type(self).__name__}] can't optimize a non-leaf Tensor (one computed from others); "
                    "optimize its leaves"
                )
            if not p.is_floating_point():
                raise FlambeauError(
                    f"[{type(self).__name__}] optimizer can only optimize floating-point Tensors, "
                    f"got one of dtype {p.dtype}"
                )
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise FlambeauError(
                    f"[{type(self).__name__}] parameter group didn't specify a value of required "
                    f"optimization parameter {name}"
                )
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(set(ids)) != len(ids):
            raise FlambeauError(
                f"[{type(self).__name__}] optimizer contains a parameter group with duplicate parameters"
            )
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & set(ids):
            raise FlambeauError(f"[{type(self).__name__}] some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the ``.grad`` of every parameter: to ``None`` (default) or to zeros (one fused call).

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1)
            >>> p.grad = fb.tensor([1.0, 1.0])
            >>> opt.zero_grad(set_to_none=False); p.grad
            tensor([0., 0.])
            >>> opt.zero_grad(); p.grad is None
            True
        """
        if set_to_none:
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad = None
            return
        _zero_grads([p for group in self.param_groups for p in group["params"]])

    def _gather(self, group_index: int, group: dict[str, Any], build: Callable[[list[Tensor]], Any]) -> Any:
        """``(params with a grad, their grads, cached)`` for a group, or None if no param has a grad.

        ``cached`` is ``build(params)`` (the state tensor lists), reused while the
        params with a grad and the state are unchanged (Note [Optimizer step structure]).
        """
        group_params = group["params"]
        all_grads = [p.grad for p in group_params]  # one property read per param
        grads = [g for g in all_grads if g is not None]
        if not grads:
            return None
        if len(grads) == len(group_params):
            params = group_params
        else:
            params = [p for p, g in zip(group_params, all_grads, strict=True) if g is not None]
        key = (tuple(map(id, params)), id(self.state), self.state.generation, len(group["params"]))
        cache = self.__dict__.setdefault("_step_cache", {})
        entry = cache.get(group_index)
        if entry is None or entry[0] != key:
            built = build(params)
            # build() may create state (generation moved): key it on the state after building.
            key = (key[0], key[1], self.state.generation, key[3])
            cache[group_index] = entry = (key, built)
        return params, grads, entry[1]

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one optimization step over every parameter that has a gradient; returns ``closure()`` if given.

        Each optimizer implements it; ``closure`` re-evaluates the model and returns the loss (LBFGS needs it).

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1)
            >>> def closure():
            ...     opt.zero_grad()
            ...     loss = (p * p).sum()
            ...     loss.backward()
            ...     return loss
            >>> opt.step(closure).item(), p.detach()
            (5.0, tensor([0.8000, 1.6000]))
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    # ---- state dict (PyTorch's format) ----
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``.

        Parameters are numbered in order across groups; state tensors are
        returned by reference (not copied), as in PyTorch.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1, momentum=0.9)
            >>> p.grad = fb.tensor([1.0, 1.0]); opt.step()
            >>> sd = opt.state_dict()
            >>> sd["state"]
            {0: {'momentum_buffer': tensor([1., 1.])}}
            >>> sd["param_groups"][0]["params"], sd["param_groups"][0]["lr"]
            ([0], 0.1)
        """
        for pre in self._optimizer_state_dict_pre_hooks.values():
            pre(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        # Plain dicts (the tensors inside by reference): _StateDict pickles as a dict subclass, which
        # PyTorch's weights_only loader refuses.
        state = {index[id(p)]: dict(s) for p, s in self.state._data.values() if id(p) in index}
        result = {"state": state, "param_groups": groups}
        for post in self._optimizer_state_dict_post_hooks.values():
            changed = post(self, result)
            if changed is not None:
                result = changed
        return result

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a ``state_dict()`` (of an optimizer over parameters of the same shapes and order).

        State tensors are copied and cast to their parameter's dtype (``step`` stays as saved).

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.Adam([p], lr=0.1)
            >>> p.grad = fb.tensor([1.0, 1.0]); opt.step()
            >>> q = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> resumed = fb.optim.Adam([q], lr=0.5)
            >>> resumed.load_state_dict(opt.state_dict())
            >>> resumed.param_groups[0]["lr"], resumed.state[q]["step"]
            (0.1, tensor(1.))
        """
        for pre in self._optimizer_load_state_dict_pre_hooks.values():
            changed = pre(self, state_dict)
            if changed is not None:
                state_dict = changed
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise FlambeauError(
                "[load_state_dict] optimizer state_dict must be a dict with 'state' and 'param_groups' entries"
            )
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise FlambeauError("[load_state_dict] loaded state dict has a different number of parameter groups")
        for ours, saved in zip(self.param_groups, saved_groups, strict=True):
            if len(ours["params"]) != len(saved["params"]):
                raise FlambeauError(
                    "[load_state_dict] loaded state dict contains a parameter group that doesn't match the size "
                    "of optimizer's group"
                )
        id_map = {
            saved_id: p
            for ours, saved in zip(self.param_groups, saved_groups, strict=True)
            for saved_id, p in zip(saved["params"], ours["params"], strict=True)
        }
        new_state = ParamState()
        for k, v in state_dict["state"].items():
            if k not in id_map:
                continue
            p = id_map[k]
            new_state[p] = {name: _cast_state(p, name, value) for name, value in v.items()}
        new_state.generation += 1
        for ours, saved in zip(self.param_groups, saved_groups, strict=True):
            params = ours["params"]
            ours.clear()
            ours.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
            ours["params"] = params
        self.state = new_state
        self.__dict__.pop("_step_cache", None)
        for post in self._optimizer_load_state_dict_post_hooks.values():
            post(self)

    def __getstate__(self) -> dict[str, Any]:
        # Hooks are not saved (PyTorch's behaviour): they may be lambdas, and belong to this process.
        d = {k: v for k, v in self.__dict__.items() if not k.startswith("_optimizer_") or not k.endswith("_hooks")}
        d.pop("_step_cache", None)
        d.pop("_opt_called", None)
        return d

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hooks()

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    text += f"\n    {key}: {group[key]}"
        return text + "\n)"


class ComposedOptimizer(Optimizer):
    """Base of the optimizers whose step composes core tensor ops per parameter (Note [Optimizer step structure]).

    A subclass sets ``state_names`` (the per-parameter state entries, in the
    order ``update`` receives their lists), and implements ``init_state(group,
    p)`` (the fresh state of a parameter) and ``update(group, params, grads,
    *state_lists)`` (one step over the group's params that have a gradient,
    run under ``no_grad``).
    """

    state_names: tuple[str, ...] = ()

    def init_state(self, group: dict[str, Any], p: Tensor) -> dict[str, Any]:
        """The fresh state of ``p``: by default ``step`` (0-d float32 zero) and zeros like ``p`` for the other names."""
        state: dict[str, Any] = {"step": fc.zeros((), dtype=fc.float32)}
        for name in self.state_names:
            if name != "step":
                state[name] = fc.zeros_like(p)
        return state

    def update(self, group: dict[str, Any], params: list[Tensor], grads: list[Tensor], *states: list) -> None:
        raise NotImplementedError

    def _state_lists(self, group: dict[str, Any], params: list[Tensor]) -> list[list]:
        lists: list[list] = [[] for _ in self.state_names]
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state.update(self.init_state(group, p))
            for lst, name in zip(lists, self.state_names, strict=True):
                lst.append(state.get(name))  # None for an entry this param does not keep (Adafactor)
        return lists

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given."""
        loss = run_closure(closure)
        for gi, group in enumerate(self.param_groups):
            gathered = self._gather(gi, group, lambda ps, group=group: self._state_lists(group, ps))
            if gathered is None:
                continue
            params, grads, lists = gathered
            with fa.no_grad():
                self.update(group, params, grads, *lists)
        return loss


def _cast_state(param: Tensor, key: str, value: Any) -> Any:
    # Tensors inside lists and dicts (LBFGS's history) are cast too, under their entry's key, as PyTorch does.
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, key, v) for v in value)
    if isinstance(value, dict):
        return {k: _cast_state(param, k, v) for k, v in value.items()}
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    with fa.no_grad():
        if key != "step" and value.is_floating_point():
            return value.to(param.dtype).clone()
        return value.clone()
