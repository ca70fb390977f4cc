"""The schedulers driven by user functions of the epoch: ``LambdaLR`` and ``MultiplicativeLR``.

Part of ``flambeau_nn.optim.lr_scheduler``, which re-exports them under that name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flambeau_core import FlambeauError

from flambeau_nn.optim.lr_scheduler._base import (
    LRScheduler,
    _check_optimizer,
    _lambdas_state,
    _load_lambdas_state,
)
from flambeau_nn.optim.optimizer import Optimizer


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
