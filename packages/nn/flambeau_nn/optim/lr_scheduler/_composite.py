"""The schedulers made of other schedulers: ``SequentialLR`` (one after another) and ``ChainedScheduler``
(all at once).

Part of ``flambeau_nn.optim.lr_scheduler``, which re-exports them under that name."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from flambeau_core import FlambeauError

from flambeau_nn.optim.lr_scheduler._base import (
    LRScheduler,
    _group_values,
    _set_group_value,
)
from flambeau_nn.optim.lr_scheduler._plateau import ReduceLROnPlateau
from flambeau_nn.optim.optimizer import Optimizer


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
