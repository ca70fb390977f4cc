"""Losses: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``."""

from __future__ import annotations

from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss"]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise FlambeauError(
                f"[{type(self).__name__}] {reduction!r} is not a valid value for reduction: use one of {_REDUCTIONS}"
            )
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error: ``mean((input - target) ** 2)``.

    Example:
        >>> import flambeau_core as fc
        >>> MSELoss()(fc.tensor([1.0, 3.0]), fc.tensor([0.0, 0.0])).item()
        5.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of int64 class targets, given log-probabilities (see ``F.nll_loss``)."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    r"""``nll_loss(log_softmax(logits, 1), target)``: targets are int64 class indices (or class probabilities).

    Example:
        >>> import flambeau_core as fc
        >>> loss = CrossEntropyLoss()(fc.zeros(4, 10), fc.tensor([1, 2, 3, 4]))
        >>> round(loss.item(), 4)  # log(10)
        2.3026
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )
