"""The schedulers that decay the lr by a formula of the epoch: ``StepLR``, ``MultiStepLR``, ``ConstantLR``,
``LinearLR``, ``ExponentialLR``, ``PolynomialLR``, ``CosineAnnealingLR`` and
``CosineAnnealingWarmRestarts``.

Part of ``flambeau_nn.optim.lr_scheduler``, which re-exports them under that name."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from typing import Any

from flambeau_core import FlambeauError

from flambeau_nn.optim.lr_scheduler._base import (
    LRScheduler,
    _group_values,
    _set_group_value,
)
from flambeau_nn.optim.optimizer import Optimizer


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
