"""The scheduler base class ``LRScheduler`` (the step protocol, the lr bookkeeping, ``state_dict``) and the
helpers every scheduler shares (per-group values, a tensor lr written in place, saved lambdas).

Part of ``flambeau_nn.optim.lr_scheduler``, which re-exports it under that name."""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from typing import Any

from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where available."
)


def _check_optimizer(name: str, optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"[{name}] {type(optimizer).__name__} is not an Optimizer")


def _group_values(optimizer: Optimizer, key: str) -> list[Any]:
    """``group[key]`` of every param group (tensors copied, so callers cannot alias the optimizer's)."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _set_group_value(group: dict[str, Any], key: str, value: Any) -> None:
    """Writes ``value`` into ``group[key]``, in place when the group holds a tensor (a tensor lr)."""
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value.item() if isinstance(value, Tensor) else value))
    else:
        group[key] = value


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """``value`` once per param group: a list/tuple of that length, or one value repeated."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise FlambeauError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(value)} values, param_groups has {n}."
            )
        values = list(value)
    else:
        values = [value] * n
    return [v.clone() if isinstance(v, Tensor) else v for v in values]


def _lambdas_state(lr_lambdas: list[Callable]) -> list[dict | None]:
    """What PyTorch saves of lr lambdas: None for plain functions, the ``__dict__`` of callable objects."""
    return [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in lr_lambdas]


def _load_lambdas_state(lr_lambdas: list[Callable], saved: list[dict | None]) -> None:
    for fn, state in zip(lr_lambdas, saved, strict=False):
        if state is not None:
            fn.__dict__.update(state)


class LRScheduler:
    """Base class of the schedulers: subclass it and implement ``get_lr()`` (the lrs for ``self.last_epoch``).

    Args:
        optimizer: the optimizer whose ``param_groups``' ``lr`` it sets.
        last_epoch: the index of the last epoch done; ``-1`` starts afresh
            (and records each group's ``initial_lr``), another value resumes.

    ``state_dict()`` holds every attribute except the optimizer.

    Example:
        >>> import flambeau_nn as nn
        >>> class Halve(nn.optim.lr_scheduler.LRScheduler):
        ...     def get_lr(self):
        ...         return [base * 0.5**self.last_epoch for base in self.base_lrs]
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = Halve(opt)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5]
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler "
                        "with last_epoch >= 0 (load the optimizer's state_dict first)"
                    )
        self.base_lrs: list[Any] = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer (PyTorch's keys).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
            >>> sd = sched.state_dict()
            >>> sd["step_size"], sd["gamma"], sd["last_epoch"], sd["base_lrs"]
            (2, 0.1, 0, [1.0])
        """
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the attributes saved by ``state_dict()`` (this scheduler's or PyTorch's).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> resumed = lr_scheduler.StepLR(fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0), step_size=2)
            >>> resumed.load_state_dict(sched.state_dict())
            >>> resumed.last_epoch, resumed.gamma
            (3, 0.1)
        """
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[Any]:
        """The learning rates set by the last ``step()``, one per param group.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.1]
        """
        return self._last_lr

    def get_lr(self) -> list[Any]:
        """The learning rates for ``self.last_epoch`` (called by ``step``; read ``get_last_lr()`` instead).

        A subclass returns one learning rate per param group; ``LambdaLR``'s is ``base_lr * lr_lambda(last_epoch)``:

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.LambdaLR(opt, lambda epoch: 0.5 ** epoch)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.125]
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr()")

    def step(self, epoch: int | None = None) -> None:
        """Advances one epoch and writes the new learning rates into the optimizer.

        ``epoch`` (deprecated, as in PyTorch) jumps to that epoch using the closed form where there is one.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
            >>> for _ in range(2):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.25]
        """
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should call them in the "
                "opposite order: `optimizer.step()` before `lr_scheduler.step()`. Failure to do this will result "
                "in skipping the first value of the learning rate schedule.",
                UserWarning,
                stacklevel=2,
            )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _warn_if_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                UserWarning,
                stacklevel=3,
            )

    def _lrs(self) -> list[Any]:
        return _group_values(self.optimizer, "lr")


class _LRScheduler(LRScheduler):
    """The old name of ``LRScheduler`` (kept by PyTorch for compatibility)."""
