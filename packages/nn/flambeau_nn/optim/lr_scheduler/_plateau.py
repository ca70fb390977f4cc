"""``ReduceLROnPlateau``: the scheduler driven by a metric instead of the epoch.

Part of ``flambeau_nn.optim.lr_scheduler``, which re-exports it under that name."""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

from flambeau_core import FlambeauError

from flambeau_nn.optim.lr_scheduler._base import (
    EPOCH_DEPRECATION_WARNING,
    LRScheduler,
    _check_optimizer,
    _group_values,
    _set_group_value,
)
from flambeau_nn.optim.optimizer import Optimizer


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
