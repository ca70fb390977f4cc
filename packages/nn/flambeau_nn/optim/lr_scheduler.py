"""Learning-rate schedulers (``flambeau_nn.optim.lr_scheduler``), PyTorch's formulas and state.

A scheduler rewrites ``group["lr"]`` of its optimizer's param groups each
time ``scheduler.step()`` is called (once per epoch, after ``optimizer.step()``).
The formulas are PyTorch's "chainable" ones (each step scales the current
lr), so the learning rates match PyTorch's to the last bit, and several
schedulers can drive one optimizer (``ChainedScheduler``). Every scheduler's
``state_dict()`` has the keys of PyTorch's (its attributes except the
optimizer), so one saved by PyTorch loads here and the reverse.

Example:
    >>> import flambeau_nn as nn
    >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
    >>> sched = nn.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step(); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Literal

from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import Optimizer

__all__ = [
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "CyclicLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "PolynomialLR",
    "LRScheduler",
]

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


class LambdaLR(LRScheduler):
    """Sets each group's lr to ``initial_lr * lr_lambda(epoch)`` (one function, or one per param group).

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.9**epoch)
        >>> opt.step(); sched.step(); round(sched.get_last_lr()[0], 6)
        0.9
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas_for(type(self).__name__, optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Attributes as PyTorch saves them: ``lr_lambdas`` holds None per function (else its ``__dict__``).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.LambdaLR(opt, lambda epoch: 0.9 ** epoch)
            >>> sched.state_dict()["lr_lambdas"]
            [None]
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = _lambdas_state(self.lr_lambdas)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the attributes saved by ``state_dict()``; a function's saved ``__dict__`` is loaded into it.

        The functions themselves are not saved (as in PyTorch): the new scheduler keeps its own.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.LambdaLR(opt, lambda epoch: 0.5 ** epoch)
            >>> opt.step(); sched.step()
            >>> opt2 = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> resumed = lr_scheduler.LambdaLR(opt2, lambda epoch: 0.5 ** epoch)
            >>> resumed.load_state_dict(sched.state_dict())
            >>> resumed.last_epoch, resumed.get_last_lr()
            (1, [0.5])
        """
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", None)
        self.__dict__.update(state)
        if saved is not None:
            _load_lambdas_state(self.lr_lambdas, saved)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``: each initial lr times ``lr_lambda(last_epoch)``.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (epoch + 1))
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.25]
        """
        self._warn_if_outside_step()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]


def _lambdas_for(name: str, optimizer: Optimizer, lr_lambda: Any) -> list[Callable]:
    n = len(optimizer.param_groups)
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != n:
            raise FlambeauError(f"[{name}] Expected {n} lr_lambdas, but got {len(lr_lambda)}")
        fns = list(lr_lambda)
    else:
        fns = [lr_lambda] * n
    for fn in fns:
        if not callable(fn):
            raise TypeError(f"[{name}] lr_lambda should be a function, but got {type(fn).__name__}")
    return fns


class MultiplicativeLR(LambdaLR):
    """Multiplies each group's lr by ``lr_lambda(epoch)`` every epoch (after the first).

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5)
        >>> for _ in range(2):
        ...     opt.step(); sched.step()
        >>> sched.get_last_lr()
        [0.25]
    """

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``: the current lr times ``lr_lambda(last_epoch)`` (after epoch 0).

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.125]
        """
        self._warn_if_outside_step()
        if self._is_initial:
            return self._lrs()
        return [
            group["lr"] * fn(self.last_epoch)
            for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)
        ]


class StepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every ``step_size`` epochs.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
        >>> for _ in range(2):
        ...     opt.step(); sched.step()
        >>> sched.get_last_lr()
        [0.1]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size <= 0:
            raise FlambeauError(f"[StepLR] step_size must be a positive int, got {step_size!r}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``: the lr times ``gamma`` every ``step_size`` epochs.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

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
        self._warn_if_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` at each epoch listed in ``milestones`` (a repeated milestone counts twice).

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5]
    """

    def __init__(
        self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``: the lr times ``gamma`` at each milestone.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.1)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.01]
        """
        self._warn_if_outside_step()
        if self.last_epoch not in self.milestones:
            return self._lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[Any]:
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scales the lr by ``factor`` for the first ``total_iters`` epochs, then restores it.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=1)
        >>> before = sched.get_last_lr()
        >>> opt.step(); sched.step(); before, sched.get_last_lr()
        ([0.5], [1.0])
    """

    def __init__(
        self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise FlambeauError("[ConstantLR] Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``.

        The initial lr times ``factor`` until ``total_iters``, then the initial lr.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [1.0]
        """
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._lrs()]
        if self.last_epoch != self.total_iters:
            return self._lrs()
        return [lr * (1.0 / self.factor) for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[Any]:
        return [
            base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)) for base in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """Scales the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` epochs (a warm-up).

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
        >>> lrs = [sched.get_last_lr()[0]]
        >>> for _ in range(3):
        ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
        >>> lrs
        [0.5, 0.75, 1.0, 1.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise FlambeauError(
                "[LinearLR] Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise FlambeauError("[LinearLR] Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``.

        The factor moves linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` epochs.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=4)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.8125]
        """
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._lrs()
        span = self.end_factor - self.start_factor
        scale = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [lr * scale for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[Any]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every epoch.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``: the lr times ``gamma`` each epoch.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.125]
        """
        self._warn_if_outside_step()
        if self._is_initial:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Runs ``schedulers`` one after another, switching at each epoch of ``milestones``.

    Example:
        >>> import flambeau_nn as nn
        >>> from flambeau_nn.optim import lr_scheduler as L
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> warm = L.LinearLR(opt, start_factor=0.5, total_iters=2)
        >>> decay = L.ExponentialLR(opt, gamma=0.5)
        >>> sched = L.SequentialLR(opt, [warm, decay], milestones=[2])
        >>> lrs = [sched.get_last_lr()[0]]
        >>> for _ in range(4):
        ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
        >>> lrs
        [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(
        self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int], last_epoch: int = -1
    ) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise FlambeauError(f"[{name}] expects at least one scheduler, but got no scheduler.")
        _check_schedulers(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise FlambeauError(
                f"[{name}] expects number of schedulers provided to be one more than the number of milestone "
                f"points, but got number of schedulers {len(schedulers)} and the number of milestones to be "
                f"equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the schedulers' own first steps: the first one restarts from the initial lrs.
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Steps every nested scheduler back by one epoch (their constructors stepped once).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> first = lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
            >>> then = lr_scheduler.ExponentialLR(opt, gamma=0.9)
            >>> sched = lr_scheduler.SequentialLR(opt, [first, then], milestones=[2])
            >>> first.last_epoch
            0
            >>> sched.recursive_undo(); first.last_epoch
            -1
        """
        target = self if sched is None else sched
        if hasattr(target, "_schedulers"):
            for s in target._schedulers:
                self.recursive_undo(s)
        elif hasattr(target, "last_epoch"):
            target.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Advances one epoch with the scheduler whose span holds it (restarting it at its milestone).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> warmup = lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=2)
            >>> decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
            >>> sched = lr_scheduler.SequentialLR(opt, [warmup, decay], milestones=[2])
            >>> for _ in range(4):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.25]
        """
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """Attributes, with ``_schedulers`` holding each scheduler's state dict (PyTorch's layout).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> parts = [lr_scheduler.StepLR(opt, 2), lr_scheduler.ExponentialLR(opt, 0.9)]
            >>> sched = lr_scheduler.ChainedScheduler(parts)
            >>> [(s["last_epoch"], s["gamma"]) for s in sched.state_dict()["_schedulers"]]
            [(0, 0.1), (0, 0.9)]
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the attributes saved by ``state_dict()``, each nested scheduler from its own state dict.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> def make():
            ...     opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            ...     return opt, lr_scheduler.ChainedScheduler([lr_scheduler.ExponentialLR(opt, gamma=0.5)])
            >>> opt, sched = make()
            >>> for _ in range(2):
            ...     opt.step()
            ...     sched.step()
            >>> _, resumed = make()
            >>> resumed.load_state_dict(sched.state_dict())
            >>> resumed._schedulers[0].last_epoch
            2
        """
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, sd in zip(self._schedulers, saved, strict=True):
            s.load_state_dict(sd)


def _check_schedulers(name: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"[{name}] at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise FlambeauError(
                f"[{name}] does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be "
                f"specified when calling `step`, but got one at index {i} in the given schedulers sequence."
            )
        if s.optimizer is not optimizer:
            raise FlambeauError(
                f"[{name}] expects all schedulers to belong to the same optimizer, but got scheduler "
                f"{type(s).__name__} at index {i} with a different optimizer."
            )


class PolynomialLR(LRScheduler):
    """Decays the lr as ``(1 - epoch / total_iters) ** power`` of its initial value, reaching 0 at ``total_iters``.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=1.0)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.75]
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``.

        The initial lr times ``(1 - last_epoch / total_iters) ** power``, reached step by step.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.0625]
        """
        self._warn_if_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._lrs()
        decay = (
            (1.0 - self.last_epoch / self.total_iters) / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [lr * decay for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[Any]:
        return [
            base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
            for base in self.base_lrs
        ]


class CosineAnnealingLR(LRScheduler):
    r"""Cosine annealing from the initial lr down to ``eta_min`` over ``T_max`` epochs (SGDR without restarts).

    Past ``T_max`` the lr climbs back up the cosine, as in PyTorch.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
        >>> for _ in range(2):
        ...     opt.step(); sched.step()
        >>> sched.get_last_lr()
        [0.0]
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if isinstance(T_max, bool) or not isinstance(T_max, int) or T_max <= 0:
            raise FlambeauError(f"[CosineAnnealingLR] T_max must be a positive int, got {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``.

        Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` epochs (PyTorch's recursive form).

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.1)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.2318]
        """
        self._warn_if_outside_step()
        e, t, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._lrs()
        if self._step_count == 1 and e > 0:
            return [lo + (base - lo) * (1 + math.cos(e * math.pi / t)) / 2 for base in self.base_lrs]
        if (e - 1 - t) % (2 * t) == 0:
            return [
                lr + (base - lo) * (1 - math.cos(math.pi / t)) / 2
                for lr, base in zip(self._lrs(), self.base_lrs, strict=True)
            ]
        scale = (1 + math.cos(math.pi * e / t)) / (1 + math.cos(math.pi * (e - 1) / t))
        return [scale * (lr - lo) + lo for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[Any]:
        return [
            self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base in self.base_lrs
        ]


class ChainedScheduler(LRScheduler):
    """Steps several schedulers of one optimizer together (their factors multiply).

    Example:
        >>> import flambeau_nn as nn
        >>> from flambeau_nn.optim import lr_scheduler as L
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = L.ChainedScheduler([L.ConstantLR(opt, factor=0.5, total_iters=2), L.ExponentialLR(opt, gamma=0.5)])
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise FlambeauError(f"[{name}] expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(name, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        """Steps every chained scheduler, in order.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> parts = [lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2), lr_scheduler.ExponentialLR(opt, 0.9)]
            >>> sched = lr_scheduler.ChainedScheduler(parts)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.729]
        """
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lr by ``factor`` when a metric stopped improving for ``patience`` epochs.

    ``mode="min"`` (a loss) or ``"max"`` (an accuracy); an improvement must beat
    the best value by ``threshold`` (relative, ``threshold_mode="rel"``, or
    absolute, ``"abs"``). After a reduction, ``cooldown`` epochs pass before
    bad epochs count again. The lr never goes below ``min_lr``, and changes
    smaller than ``eps`` are skipped.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5)
        >>> for loss in [1.0, 1.0, 1.0]:
        ...     opt.step(); sched.step(loss)
        >>> sched.get_last_lr()
        [0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: Literal["min", "max"] = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: Literal["rel", "abs"] = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise FlambeauError("[ReduceLROnPlateau] Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise FlambeauError(
                    f"[ReduceLROnPlateau] expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(self.optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Records this epoch's ``metrics`` (a number or 1-element tensor) and reduces the lr if it plateaued.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5)
            >>> for loss in (1.0, 0.9, 0.95, 0.97, 0.98):
            ...     sched.step(loss)
            >>> sched.get_last_lr()
            [0.5]
        """
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self, epoch: int) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise FlambeauError(
                    f"[ReduceLROnPlateau] The number of param groups in the `optimizer` "
                    f"({len(self.optimizer.param_groups)}) differs from when `ReduceLROnPlateau` was initialized "
                    f"({len(self.min_lrs)}), usually due to a new param group being added to the optimizer. "
                    "Please modify the `min_lrs` field to match the length of the `optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                _set_group_value(group, "lr", new_lr)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise FlambeauError(f"[ReduceLROnPlateau] mode {mode} is unknown! (expected 'min' or 'max')")
        if threshold_mode not in {"rel", "abs"}:
            raise FlambeauError(
                f"[ReduceLROnPlateau] threshold mode {threshold_mode} is unknown! (expected 'rel' or 'abs')"
            )
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the attributes saved by ``state_dict()`` (this scheduler's or PyTorch's).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
            >>> for loss in (1.0, 2.0):
            ...     sched.step(loss)
            >>> resumed = lr_scheduler.ReduceLROnPlateau(fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0))
            >>> resumed.load_state_dict(sched.state_dict())
            >>> resumed.best, resumed.factor, resumed.patience
            (1.0, 0.5, 0)
        """
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode)


class CyclicLR(LRScheduler):
    """Cycles the lr between ``base_lr`` and ``max_lr`` (Smith's cyclical learning rates), stepped per batch.

    ``mode``: ``"triangular"`` (constant amplitude), ``"triangular2"`` (halved
    each cycle), ``"exp_range"`` (scaled by ``gamma ** iteration``), or a
    custom ``scale_fn`` with ``scale_mode``. With ``cycle_momentum`` the
    momentum (or Adam's beta1) cycles inversely between ``base_momentum`` and
    ``max_momentum``.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
        >>> sched = nn.optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
        >>> lrs = []
        >>> for _ in range(4):
        ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 6))
        >>> lrs
        [0.55, 1.0, 0.55, 0.1]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: Literal["triangular", "triangular2", "exp_range"] = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: Literal["cycle", "iterations"] = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise FlambeauError(f"[CyclicLR] mode is invalid and scale_fn is None (got mode={mode!r})")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_momentum_cycle(self, optimizer, max_momentum, base_momentum, last_epoch)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude scale for cycle (or iteration) ``x``.

        ``mode``'s scale (``triangular``: 1, ``triangular2``: halved each cycle, ``exp_range``: ``gamma ** x``),
        or the ``scale_fn`` given to the constructor.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, mode="triangular2")
            >>> [sched.scale_fn(c) for c in (1, 2, 3)]
            [1.0, 0.5, 0.25]
        """
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma**x

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``.

        Between ``base_lr`` and ``max_lr`` along the cycle, scaled by ``scale_fn`` (and the momentum, with
        ``cycle_momentum``).

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.55]
        """
        self._warn_if_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [
            base + (top - base) * scale_factor * self.scale_fn(at)
            for base, top in zip(self.base_lrs, self.max_lrs, strict=True)
        ]
        if self.cycle_momentum:
            momentums = [
                top - (top - base) * scale_factor * self.scale_fn(at)
                for base, top in zip(self.base_momentums, self.max_momentums, strict=True)
            ]
            _set_momentums(self, momentums)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """Attributes as PyTorch saves them (no bound scale function; a custom callable object's ``__dict__``).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0)
            >>> sd = sched.state_dict()
            >>> sd["mode"], sd["_scale_fn_custom"], sd["base_lrs"]
            ('triangular', None, [0.1])
        """
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the attributes saved by ``state_dict()`` and rebinds ``mode``'s scale function.

        A custom ``scale_fn`` is not saved (as in PyTorch): the new scheduler keeps its own, and a callable object's
        saved ``__dict__`` is loaded into it.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, mode="triangular2")
            >>> opt2 = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> new = lr_scheduler.CyclicLR(opt2, base_lr=0.1, max_lr=1.0)
            >>> new.load_state_dict(sched.state_dict())
            >>> new.mode, new.scale_fn(2)
            ('triangular2', 0.5)
        """
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom", None)
        super().load_state_dict(state)
        if fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _init_momentum_cycle(sched: Any, optimizer: Optimizer, max_momentum: Any, base_momentum: Any, last_epoch: int):
    """Momentum cycling (CyclicLR, OneCycleLR): ``momentum`` or Adam's beta1 starts at its maximum."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise FlambeauError(
            f"[{type(sched).__name__}] optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
        )
    sched.use_beta1 = "betas" in optimizer.defaults
    if last_epoch == -1:
        tops = _per_group("max_momentum", optimizer, max_momentum)
        bottoms = _per_group("base_momentum", optimizer, base_momentum)
        for top, bottom, group in zip(tops, bottoms, optimizer.param_groups, strict=True):
            if sched.use_beta1:
                group["betas"] = (top, *group["betas"][1:])
            else:
                group["momentum"] = top
            group["max_momentum"] = top
            group["base_momentum"] = bottom


def _set_momentums(sched: Any, momentums: list[float]) -> None:
    for group, m in zip(sched.optimizer.param_groups, momentums, strict=True):
        if sched.use_beta1:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing with warm restarts (SGDR): restarts after ``T_0`` epochs, each period ``T_mult`` times longer.

    ``step(epoch)`` also takes a fractional epoch (e.g. ``epoch + batch / batches``).

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = nn.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
        >>> lrs = []
        >>> for _ in range(3):
        ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 6))
        >>> lrs
        [0.5, 1.0, 0.5]
    """

    def __init__(
        self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise FlambeauError(f"[CosineAnnealingWarmRestarts] Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise FlambeauError(f"[CosineAnnealingWarmRestarts] Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise FlambeauError(
                f"[CosineAnnealingWarmRestarts] Expected float or int eta_min, but got {eta_min} of type "
                f"{type(eta_min).__name__}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``.

        Cosine annealing from the initial lr to ``eta_min`` over the current restart period, ``T_cur`` epochs into it.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, eta_min=0.1)
            >>> for _ in range(4):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [1.0]
        """
        self._warn_if_outside_step()
        cos = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (base - self.eta_min) * cos for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advances one epoch, or jumps to ``epoch`` (which may be fractional).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
            >>> opt.step()
            >>> sched.step(0.5); round(sched.get_last_lr()[0], 4)
            0.8536
            >>> sched.step(2.0); sched.get_last_lr()  # a restart
            [1.0]
        """
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise FlambeauError(f"[CosineAnnealingWarmRestarts] Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith): lr from ``max_lr / div_factor`` up to ``max_lr`` then down to a tiny value.

    Stepped once per batch, ``total_steps`` (or ``epochs * steps_per_epoch``)
    times. ``anneal_strategy`` is ``"cos"`` or ``"linear"``; ``three_phase``
    adds a symmetric descent before the final annihilation phase. With
    ``cycle_momentum`` the momentum (or beta1) moves inversely.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
        >>> sched = nn.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
        >>> round(sched.get_last_lr()[0], 6), opt.param_groups[0]["momentum"]
        (0.04, 0.95)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise FlambeauError(f"[OneCycleLR] Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise FlambeauError(f"[OneCycleLR] Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise FlambeauError(
                    f"[OneCycleLR] Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
                )
            self.total_steps = epochs * steps_per_epoch
        else:
            raise FlambeauError("[OneCycleLR] You must define either total_steps OR (epochs AND steps_per_epoch)")
        up_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(
                    float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"
                ),
                _phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise FlambeauError(f"[OneCycleLR] Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise FlambeauError(
                f"[OneCycleLR] anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for top, group in zip(max_lrs, optimizer.param_groups, strict=True):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_momentum_cycle(self, optimizer, max_momentum, base_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return self._annealing_cos(start, end, pct)
        return self._annealing_linear(start, end, pct)

    @staticmethod
    def _annealing_cos(start: float, end: float, pct: float) -> float:
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start: float, end: float, pct: float) -> float:
        return (end - start) * pct + start

    def get_lr(self) -> list[Any]:
        """The learning rates for epoch ``last_epoch``: the 1cycle policy's warm-up then annealing phase for this step.

        Called by ``step()``, which writes them into the optimizer; read them with ``get_last_lr()``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.optim import lr_scheduler
            >>> opt = fb.optim.SGD([fb.zeros(1, requires_grad=True)], lr=1.0)
            >>> sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
            >>> for _ in range(3):
            ...     opt.step()
            ...     sched.step()
            >>> [round(lr, 4) for lr in sched.get_last_lr()]
            [0.9505]
        """
        self._warn_if_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise FlambeauError(
                f"[OneCycleLR] Tried to step {step_num} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs, momentums = [], []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == last:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lrs.append(self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentums.append(
                            self._anneal_func(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                        )
                    break
                start_step = phase["end_step"]
        if self.cycle_momentum:
            _set_momentums(self, momentums)
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str, end_momentum: str) -> dict[str, Any]:
    return {
        "end_step": end_step,
        "start_lr": start_lr,
        "end_lr": end_lr,
        "start_momentum": start_momentum,
        "end_momentum": end_momentum,
    }
