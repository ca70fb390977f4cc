"""Stochastic weight averaging and EMA (``flambeau_nn.optim.swa_utils``, PyTorch's ``torch.optim.swa_utils``).

``AveragedModel`` keeps a running average (equal weights, SWA, by default; an
exponential moving average with ``get_ema_multi_avg_fn``) of a model's
parameters; ``SWALR`` anneals the lr to a constant SWA lr; ``update_bn``
recomputes BatchNorm statistics for the averaged weights.

Example:
    >>> import flambeau_autograd as fa
    >>> import flambeau_nn as nn
    >>> from flambeau_nn.optim.swa_utils import AveragedModel
    >>> model = nn.Linear(1, 1, bias=False)
    >>> swa = AveragedModel(model)
    >>> for w in (1.0, 2.0, 6.0):
    ...     with fa.no_grad():
    ...         _ = model.weight.fill_(w)
    ...     swa.update_parameters(model)
    >>> swa.module.weight.item()
    3.0
"""

from __future__ import annotations

import copy
import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Literal

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.batchnorm import _BatchNorm
from flambeau_nn.modules.module import Module
from flambeau_nn.optim.lr_scheduler import LRScheduler, _per_group
from flambeau_nn.optim.optimizer import Optimizer

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]

ParamList = list[Tensor]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise FlambeauError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[ParamList, ParamList, Any], None]:
    """An in-place EMA update over lists: ``ema = decay * ema + (1 - decay) * current``.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_nn.optim.swa_utils import get_ema_multi_avg_fn
        >>> ema, cur = [fc.zeros(2)], [fc.ones(2)]
        >>> get_ema_multi_avg_fn(0.75)(ema, cur, 1)
        >>> ema[0].tolist()
        [0.25, 0.25]
    """
    _check_decay(decay)

    def ema_update(ema_params: ParamList, current_params: ParamList, _num_averaged: Any) -> None:
        with fa.no_grad():
            for ema, cur in zip(ema_params, current_params, strict=True):
                if ema.is_floating_point() or ema.is_complex():
                    ema.lerp_(cur, 1 - decay)
                else:
                    ema.copy_(ema * decay + cur * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[ParamList, ParamList, Any], None]:
    """An in-place equal-weight running average over lists: ``avg += (current - avg) / (n + 1)``.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_nn.optim.swa_utils import get_swa_multi_avg_fn
        >>> avg, cur = [fc.full((2,), 2.0)], [fc.full((2,), 5.0)]
        >>> get_swa_multi_avg_fn()(avg, cur, 2)
        >>> avg[0].tolist()
        [3.0, 3.0]
    """

    def swa_update(averaged: ParamList, current: ParamList, num_averaged: Any) -> None:
        with fa.no_grad():
            n = float(num_averaged.item() if isinstance(num_averaged, Tensor) else num_averaged)
            for avg, cur in zip(averaged, current, strict=True):
                if avg.is_floating_point() or avg.is_complex():
                    avg.add_(cur.sub(avg).div_(n + 1))
                else:  # integer buffers (num_batches_tracked): true division, truncated back
                    avg.copy_(avg + (cur - avg) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """One tensor's EMA: returns ``decay * ema + (1 - decay) * current``.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_nn.optim.swa_utils import get_ema_avg_fn
        >>> get_ema_avg_fn(0.5)(fc.zeros(1), fc.ones(1), 1).tolist()
        [0.5]
    """
    _check_decay(decay)

    def ema_update(ema: Tensor, current: Tensor, _num_averaged: Any) -> Tensor:
        with fa.no_grad():
            return decay * ema + (1 - decay) * current

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """One tensor's running average: returns ``avg + (current - avg) / (n + 1)``.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_nn.optim.swa_utils import get_swa_avg_fn
        >>> get_swa_avg_fn()(fc.zeros(1), fc.full((1,), 3.0), 2).tolist()
        [1.0]
    """

    def swa_update(averaged: Tensor, current: Tensor, num_averaged: Any) -> Tensor:
        with fa.no_grad():
            return averaged + (current - averaged) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    r"""A copy of ``model`` whose parameters are the running average of the model's over ``update_parameters`` calls.

    Args:
        model: the model to average (deep-copied).
        device: where to keep the copy (default: where the model is).
        avg_fn: ``avg_fn(averaged_param, model_param, num_averaged) -> new averaged_param``.
        multi_avg_fn: ``multi_avg_fn(averaged_params, model_params, num_averaged)``, updating the lists
            in place (e.g. ``get_ema_multi_avg_fn(0.999)``). Give at most one of the two; the default is
            the equal-weight SWA average.
        use_buffers: also average the buffers (e.g. BatchNorm running statistics) instead of copying them.

    The first ``update_parameters`` copies the model's parameters; ``n_averaged``
    (an int64 buffer) counts the calls. Calling the AveragedModel calls the copy.

    Example:
        >>> import flambeau_nn as nn
        >>> from flambeau_nn.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
        >>> model = nn.Linear(3, 2)
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
        >>> ema.update_parameters(model)
        >>> int(ema.n_averaged.item())
        1
    """

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
        multi_avg_fn: Callable[[ParamList, ParamList, Any], None] | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise FlambeauError("[AveragedModel] Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n_averaged = fc.tensor(0, dtype=fc.int64)
        self.register_buffer("n_averaged", n_averaged.to(device) if device is not None else n_averaged)
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Folds ``model``'s current parameters (and buffers with ``use_buffers``) into the average."""
        if self.use_buffers:
            ours = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            ours, theirs = list(self.parameters()), list(model.parameters())
        averaged = [p.detach() for p in ours]
        current = [p.detach().to(a.device) for p, a in zip(theirs, averaged, strict=False)]
        averaged = averaged[: len(current)]
        n = int(self.n_averaged.item())
        with fa.no_grad():
            if n == 0:
                for a, c in zip(averaged, current, strict=True):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged, current, self.n_averaged)
            else:
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for a, c in zip(averaged, current, strict=True):
                    a.copy_(avg_fn(a, c, self.n_averaged))
            if not self.use_buffers:
                # Buffers (BatchNorm statistics) follow the model; update_bn can recompute them.
                for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recomputes the running statistics of every BatchNorm layer of ``model`` with one pass over ``loader``.

    The statistics are reset and accumulated as a plain average over the
    batches (``momentum=None`` meanwhile); each batch is ``loader``'s item, or
    its first element when the item is a list or tuple (``(input, target)``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> from flambeau_nn.optim.swa_utils import update_bn
        >>> model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
        >>> update_bn([(fc.ones(4, 2), None)], model)
        >>> int(model[1].num_batches_tracked.item())
        1
    """
    momenta: dict[Module, Any] = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with fa.no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` epochs (``"cos"`` or ``"linear"``), then holds it.

    Example:
        >>> import flambeau_nn as nn
        >>> from flambeau_nn.optim.swa_utils import SWALR
        >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
        >>> lrs = [sched.get_last_lr()[0]]
        >>> for _ in range(3):
        ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 6))
        >>> lrs
        [1.0, 0.55, 0.1, 0.1]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        last_epoch: int = -1,
    ) -> None:
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise FlambeauError(
                f"[SWALR] anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise FlambeauError(f"[SWALR] anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[Any]:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                UserWarning,
                stacklevel=2,
            )
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # Recover the lr before annealing from the current one, so other schedulers' changes carry through.
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [
            g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)
        ]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Attributes as PyTorch saves them (without the anneal function)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
