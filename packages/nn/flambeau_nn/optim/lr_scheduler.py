"""Learning-rate schedulers (``flambeau_nn.optim.lr_scheduler``), PyTorch's formulas.

A scheduler rewrites ``group["lr"]`` of its optimizer's param groups each
time ``scheduler.step()`` is called (once per epoch, after ``optimizer.step()``).
The formulas are PyTorch's "chainable" ones (each step scales the current
lr), so the learning rates match PyTorch's to the last bit.

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
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from flambeau_core import FlambeauError

from flambeau_nn.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR"]


class LRScheduler:
    """Base class: subclass it and implement ``get_lr()`` (the lrs for ``self.last_epoch``).

    ``state_dict()`` holds every attribute except the optimizer.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming an optimizer"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last ``step()``."""
        return self._last_lr

    def step(self) -> None:
        """Advances one epoch and writes the new learning rates into the optimizer."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def _lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]


class StepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        if not isinstance(step_size, int) or step_size <= 0:
            raise FlambeauError(f"[StepLR] step_size must be a positive int, got {step_size!r}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]


class MultiStepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` at each epoch listed in ``milestones``."""

    def __init__(
        self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._lrs()]


class ExponentialLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]


class CosineAnnealingLR(LRScheduler):
    r"""Cosine annealing from the initial lr down to ``eta_min`` over ``T_max`` epochs (SGDR without restarts)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if not isinstance(T_max, int) or T_max <= 0:
            raise FlambeauError(f"[CosineAnnealingLR] T_max must be a positive int, got {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs, e, t, lo = self._lrs(), self.last_epoch, self.T_max, self.eta_min
        if e == 0:
            return lrs
        if self._step_count == 1 and e > 0:
            return [lo + (base - lo) * (1 + math.cos(e * math.pi / t)) / 2 for base in self.base_lrs]
        if (e - 1 - t) % (2 * t) == 0:
            return [
                lr + (base - lo) * (1 - math.cos(math.pi / t)) / 2 for lr, base in zip(lrs, self.base_lrs, strict=True)
            ]
        scale = (1 + math.cos(math.pi * e / t)) / (1 + math.cos(math.pi * (e - 1) / t))
        return [scale * (lr - lo) + lo for lr in lrs]


class LambdaLR(LRScheduler):
    """Sets the lr to ``initial_lr * lr_lambda(epoch)`` (one function, or one per param group)."""

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise FlambeauError(f"[LambdaLR] Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas, strict=True)]
