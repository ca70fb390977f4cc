"""The per-batch cyclical schedulers, with their momentum cycling: ``CyclicLR`` and ``OneCycleLR``.

Part of ``flambeau_nn.optim.lr_scheduler``, which re-exports them under that name."""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from flambeau_core import FlambeauError

from flambeau_nn.optim.lr_scheduler._base import (
    LRScheduler,
    _check_optimizer,
    _per_group,
    _set_group_value,
)
from flambeau_nn.optim.optimizer import Optimizer


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
