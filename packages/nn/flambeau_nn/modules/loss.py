"""Losses, with PyTorch's constructor arguments (including the deprecated ``size_average``/``reduce``)."""

from __future__ import annotations

import math
from collections.abc import Callable

from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.distance import PairwiseDistance
from flambeau_nn.modules.linear import Linear
from flambeau_nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions
from flambeau_nn.modules.module import Module

__all__ = [
    "CrossEntropyLoss",
    "NLLLoss",
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "KLDivLoss",
    "MarginRankingLoss",
    "NLLLoss2d",
    "PoissonNLLLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "SoftMarginLoss",
    "CosineEmbeddingLoss",
    "MultiMarginLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
    "CTCLoss",
    "LinearCrossEntropyLoss",
]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    _valid_reductions: tuple[str, ...] = _REDUCTIONS

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__()
        reduction = F._legacy_reduction(size_average, reduce, reduction)
        if reduction not in self._valid_reductions:
            raise FlambeauError(
                f"[{type(self).__name__}] {reduction!r} is not a valid value for reduction: "
                f"use one of {self._valid_reductions}"
            )
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error ``|input - target|``, reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.L1Loss(reduction="sum")(fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5])).item()
        3.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The absolute error ``|input - target|`` of two tensors of the same shape ``(*)``, averaged
        (``reduction="mean"``), summed (``"sum"``) or kept per element (``"none"``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> a, b = fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5])
            >>> nn.L1Loss()(a, b).item()
            1.0
            >>> nn.L1Loss(reduction="none")(a, b).tolist()
            [0.5, 2.0, 0.5]
        """
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error: ``mean((input - target) ** 2)``.

    Example:
        >>> import flambeau_core as fc
        >>> MSELoss()(fc.tensor([1.0, 3.0]), fc.tensor([0.0, 0.0])).item()
        5.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The squared error ``(input - target) ** 2`` of two tensors of the same shape ``(*)``, reduced by
        ``reduction`` (a scalar for ``"mean"``/``"sum"``, ``(*)`` for ``"none"``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> a, b = fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5])
            >>> nn.MSELoss()(a, b).item(), nn.MSELoss(reduction="sum")(a, b).item()
            (1.5, 4.5)
        """
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``, reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> a, b = fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5])
        >>> round(nn.SmoothL1Loss()(a, b).item(), 4)
        0.5833
    """

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean", beta: float = 1.0
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The smooth L1 error of ``input`` and ``target`` (same shape ``(*)``): ``0.5 * d ** 2 / beta`` where ``|d| <
        beta``, ``|d| - 0.5 * beta`` elsewhere, reduced by ``reduction``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> a, b = fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5])
            >>> nn.SmoothL1Loss(reduction="none")(a, b).tolist()
            [0.125, 1.5, 0.125]
        """
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``, reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> a, b = fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5])
        >>> nn.HuberLoss(delta=0.5)(a, b).item()
        0.375
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The Huber error of ``input`` and ``target`` (same shape ``(*)``): ``0.5 * d ** 2`` where ``|d| < delta``,
        ``delta * (|d| - 0.5 * delta)`` elsewhere, reduced by ``reduction``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> a, b = fc.tensor([0.5, 2.0, -1.0]), fc.tensor([1.0, 0.0, -1.5])
            >>> nn.HuberLoss(reduction="none", delta=0.5)(a, b).tolist()
            [0.125, 0.875, 0.125]
        """
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities (see ``F.binary_cross_entropy``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> probs = fc.sigmoid(fc.randn(4, 3))
        >>> nn.BCELoss(reduction="none")(probs, fc.ones(4, 3)).shape
        flambeau.Size([4, 3])
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The binary cross entropy ``-(target * log(input) + (1 - target) * log(1 - input))`` of probabilities
        ``input`` and targets in ``[0, 1]`` (same shape ``(*)``), each term scaled by ``weight`` if given, then
        reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> round(nn.BCELoss()(fc.tensor([0.9, 0.2, 0.6]), fc.tensor([1.0, 0.0, 1.0])).item(), 4)
            0.2798
        """
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits, computed stably (see ``F.binary_cross_entropy_with_logits``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> round(nn.BCEWithLogitsLoss()(fc.zeros(2, 3), fc.ones(2, 3)).item(), 4)
        0.6931
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The binary cross entropy of ``sigmoid(input)`` and ``target`` (same shape ``(*)``), computed stably from
        the logits ``input``; ``pos_weight`` (broadcast along the last dim) scales the positive terms, ``weight``
        every term.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> logits, target = fc.tensor([2.0, -1.0, 0.5]), fc.tensor([1.0, 0.0, 1.0])
            >>> round(nn.BCEWithLogitsLoss()(logits, target).item(), 4)
            0.3048
            >>> round(nn.BCEWithLogitsLoss(pos_weight=fc.full((3,), 2.0))(logits, target).item(), 4)
            0.5051
        """
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, pos_weight=self.pos_weight, reduction=self.reduction
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of int64 class targets, given log-probabilities (see ``F.nll_loss``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> logp = fc.log_softmax(fc.randn(3, 5), 1)
        >>> nn.NLLLoss(reduction="none")(logp, fc.tensor([1, 0, 4])).shape
        flambeau.Size([3])
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The negative log-likelihood ``-input[n, target[n]]`` of log-probabilities ``input`` ``(N, C)`` or ``(N, C,
        d1, ...)`` and class indices ``target`` ``(N)`` or ``(N, d1, ...)``, weighted by ``weight[target]`` and
        skipping ``ignore_index``; the weighted mean by default.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> logp = fc.log_softmax(fc.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]]), 1)
            >>> round(nn.NLLLoss()(logp, fc.tensor([2, 0])).item(), 4)
            0.4795
        """
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    r"""``nll_loss(log_softmax(logits, 1), target)`` in one fused kernel; targets are class indices or probabilities.

    Example:
        >>> import flambeau_core as fc
        >>> loss = CrossEntropyLoss()(fc.zeros(4, 10), fc.tensor([1, 2, 3, 4]))
        >>> round(loss.item(), 4)  # log(10)
        2.3026
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The cross entropy of logits ``input`` ``(N, C)``, ``(C)`` or ``(N, C, d1, ...)`` and ``target``: class
        indices (``(N)`` or ``(N, d1, ...)``) or class probabilities (``input``'s shape), i.e.
        ``nll_loss(log_softmax(input, 1), target)`` with ``label_smoothing`` mixing in the uniform distribution.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> logits = fc.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]])
            >>> round(nn.CrossEntropyLoss()(logits, fc.tensor([2, 0])).item(), 4)
            0.4795
            >>> round(nn.CrossEntropyLoss(label_smoothing=0.1)(logits, fc.tensor([2, 0])).item(), 4)
            0.5629
            >>> round(nn.CrossEntropyLoss()(logits[:1], fc.tensor([[0.0, 0.5, 0.5]])).item(), 4)
            0.9076
        """
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probability inputs (see ``F.kl_div``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> p = fc.tensor([[0.2, 0.8]])
        >>> nn.KLDivLoss(reduction="sum")(p.log(), p).item()
        0.0
    """

    _valid_reductions = ("mean", "batchmean", "sum", "none")

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The Kullback-Leibler divergence ``target * (log(target) - input)`` of log-probabilities ``input`` and
        ``target`` (probabilities, or log-probabilities when ``log_target``), same shape ``(*)``;
        ``reduction="batchmean"`` divides the sum by the batch size, as the mathematical definition wants.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> kl = nn.KLDivLoss(reduction="batchmean")
            >>> round(kl(fc.log(fc.tensor([[0.5, 0.5]])), fc.tensor([[0.25, 0.75]])).item(), 4)
            0.1308
        """
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    """``max(0, -target * (input1 - input2) + margin)``, reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.MarginRankingLoss()(fc.tensor([3.0]), fc.tensor([1.0]), fc.tensor([-1.0])).item()
        2.0
    """

    def __init__(
        self, margin: float = 0.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """The ranking loss ``max(0, -target * (input1 - input2) + margin)`` of scores ``input1``, ``input2`` and
        ``target`` in ``{1, -1}`` (all ``(N)`` or ``()``), reduced: ``target = 1`` asks for ``input1`` to rank higher.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> loss = nn.MarginRankingLoss(margin=0.5)
            >>> loss(fc.tensor([1.0, 2.0]), fc.tensor([1.5, 0.0]), fc.tensor([1.0, 1.0])).item()
            0.5
        """
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """``NLLLoss`` under its old name for ``(N, C, H, W)`` inputs (PyTorch keeps it for old programs).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> logp = fc.log_softmax(fc.randn(2, 3, 4, 4), 1)
        >>> nn.NLLLoss2d()(logp, fc.zeros(2, 4, 4, dtype=fc.int64)).shape
        flambeau.Size([])
    """


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target (see ``F.poisson_nll_loss``).

    Example:
        >>> import flambeau_core as fc
        >>> PoissonNLLLoss()(fc.tensor([0.0]), fc.tensor([1.0])).item()
        1.0
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        """The Poisson negative log-likelihood of ``target`` given the rate ``exp(log_input)`` (or ``log_input``
        itself as the rate when ``log_input=False``), same shape ``(*)``: ``exp(log_input) - target * log_input``,
        plus Stirling's term when ``full``; reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> round(nn.PoissonNLLLoss()(fc.tensor([0.0, 1.0]), fc.tensor([1.0, 2.0])).item(), 4)
            0.8591
        """
        return F.poisson_nll_loss(
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target with predicted mean and variance (see ``F.gaussian_nll_loss``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.GaussianNLLLoss(reduction="none")(fc.zeros(4, 2), fc.zeros(4, 2), fc.ones(4, 1)).shape
        flambeau.Size([4, 2])
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        """The Gaussian negative log-likelihood ``0.5 * (log(var) + (input - target) ** 2 / var)`` of ``target`` under
        means ``input`` ``(N, *)`` and variances ``var`` (same shape, one dim fewer, or a last dim of 1; clamped to
        ``eps``), plus ``0.5 * log(2 * pi)`` when ``full``; reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> loss = nn.GaussianNLLLoss()
            >>> round(loss(fc.tensor([1.0, 2.0]), fc.tensor([1.5, 2.0]), fc.tensor([0.5, 1.0])).item(), 4)
            -0.0483
        """
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` for ``target == 1``, ``max(0, margin - x)`` for ``target == -1``, reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.HingeEmbeddingLoss(margin=2.0, reduction="none")(fc.tensor([0.5, 0.5]), fc.tensor([1.0, -1.0])).tolist()
        [0.5, 1.5]
    """

    def __init__(
        self, margin: float = 1.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The hinge embedding loss of distances ``input`` and labels ``target`` in ``{1, -1}`` (same shape ``(*)``):
        ``input`` where ``target = 1``, ``max(0, margin - input)`` where ``target = -1``; reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> loss = nn.HingeEmbeddingLoss()
            >>> round(loss(fc.tensor([0.3, 2.0, 0.5]), fc.tensor([1.0, -1.0, -1.0])).item(), 4)
            0.2667
        """
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-target * input))``, reduced.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> round(nn.SoftMarginLoss()(fc.zeros(3), fc.ones(3)).item(), 4)
        0.6931
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The two-class logistic loss ``log(1 + exp(-target * input))`` of ``input`` and labels ``target`` in ``{1,
        -1}`` (same shape ``(*)``), reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> round(nn.SoftMarginLoss()(fc.tensor([2.0, -1.0]), fc.tensor([1.0, 1.0])).item(), 4)
            0.7201
        """
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` for ``target == 1``, ``max(0, cos(x1, x2) - margin)`` for ``target == -1``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([[1.0, 2.0]])
        >>> nn.CosineEmbeddingLoss()(x, 2 * x, fc.tensor([1.0])).item()
        0.0
    """

    def __init__(
        self, margin: float = 0.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """The cosine embedding loss of ``input1``, ``input2`` ``(N, D)`` or ``(D)`` and ``target`` ``(N)`` or ``()``
        in ``{1, -1}``: ``1 - cos(input1, input2)`` for ``target = 1``, ``max(0, cos - margin)`` for ``target = -1``;
        reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x1 = fc.tensor([[1.0, 0.0], [1.0, 0.0]])
            >>> x2 = fc.tensor([[0.0, 1.0], [1.0, 1.0]])
            >>> round(nn.CosineEmbeddingLoss()(x1, x2, fc.tensor([1.0, -1.0])).item(), 4)
            0.8536
        """
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (see ``F.multi_margin_loss``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> scores = fc.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(nn.MultiMarginLoss()(scores, fc.tensor([0])).item(), 4)
        1.025
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise FlambeauError(f"[MultiMarginLoss] only p == 1 and p == 2 supported, got p={p}")
        if weight is not None and weight.dim() != 1:
            raise FlambeauError(f"[MultiMarginLoss] weight must be one-dimensional, got shape {tuple(weight.shape)}")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The multi-class hinge loss of scores ``input`` ``(N, C)`` or ``(C)`` and class indices ``target`` ``(N)``
        or ``()``: the sum over the other classes of ``max(0, margin - x[y] + x[i]) ** p / C`` (each weighted by
        ``weight[y]``), reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> scores = fc.tensor([[0.1, 0.2, 0.4, 0.8]])
            >>> round(nn.MultiMarginLoss()(scores, fc.tensor([3])).item(), 4)
            0.325
        """
        return F.multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over the target classes listed before the first -1 (see ``F.multilabel_margin_loss``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.MultiLabelMarginLoss(reduction="none")(fc.zeros(2, 4), fc.tensor([[0, -1, 0, 0], [1, 2, -1, 0]])).shape
        flambeau.Size([2])
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The multi-label hinge loss of scores ``input`` ``(N, C)`` or ``(C)`` and ``target`` of the same shape
        holding the indices of the true classes, ended by the first -1: the sum over true ``j`` and other ``i`` of
        ``max(0, 1 - (x[j] - x[i])) / C``, reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> scores = fc.tensor([[0.1, 0.2, 0.4, 0.8]])
            >>> round(nn.MultiLabelMarginLoss()(scores, fc.tensor([[3, 0, -1, 1]])).item(), 4)
            0.85
        """
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss (see ``F.multilabel_soft_margin_loss``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.MultiLabelSoftMarginLoss(reduction="none")(fc.randn(3, 5), fc.ones(3, 5)).shape
        flambeau.Size([3])
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The multi-label one-versus-all logistic loss of logits ``input`` ``(N, C)`` and 0/1 ``target`` ``(N, C)``:
        the binary cross entropy of ``sigmoid(input)`` averaged over the classes (each class weighted by ``weight``),
        then reduced over the batch.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> loss = nn.MultiLabelSoftMarginLoss()
            >>> round(loss(fc.tensor([[2.0, -1.0, 0.0]]), fc.tensor([[1.0, 0.0, 1.0]])).item(), 4)
            0.3778
        """
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with the ``p``-norm distance (see ``F.triplet_margin_loss``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> a, p, n = fc.randn(8, 16), fc.randn(8, 16), fc.randn(8, 16)
        >>> nn.TripletMarginLoss(reduction="none")(a, p, n).shape
        flambeau.Size([8])
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise FlambeauError(f"[TripletMarginLoss] margin must be greater than 0, got {margin}")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """The triplet loss ``max(d(anchor, positive) - d(anchor, negative) + margin, 0)`` of three ``(N, D)`` or
        ``(D)`` tensors, ``d`` the ``p``-norm distance (with ``swap``: the smaller of ``d(a, n)`` and ``d(p, n)``);
        reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> a, p, n = fc.tensor([[0.0, 0.0]]), fc.tensor([[3.0, 4.0]]), fc.tensor([[1.0, 0.0]])
            >>> round(nn.TripletMarginLoss(margin=1.0)(a, p, n).item(), 4)
            5.0
        """
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin=self.margin,
            p=self.p,
            eps=self.eps,
            swap=self.swap,
            reduction=self.reduction,
        )


class TripletMarginWithDistanceLoss(_Loss):
    """``TripletMarginLoss`` with any distance function (default ``PairwiseDistance()``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> import flambeau_nn.functional as F
        >>> cos_dist = lambda x, y: 1 - F.cosine_similarity(x, y)
        >>> loss = nn.TripletMarginWithDistanceLoss(distance_function=cos_dist, margin=0.5)
        >>> loss(fc.tensor([[1.0, 0.0]]), fc.tensor([[1.0, 1.0]]), fc.tensor([[0.0, 1.0]])).item()
        0.0
    """

    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise FlambeauError(f"[TripletMarginWithDistanceLoss] margin must be greater than 0, got {margin}")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """The triplet loss ``max(d(anchor, positive) - d(anchor, negative) + margin, 0)`` of three ``(N, D)`` or
        ``(D)`` tensors with ``d = distance_function`` (``PairwiseDistance()`` when None); reduced.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> a, p, n = fc.tensor([[0.0, 0.0]]), fc.tensor([[3.0, 4.0]]), fc.tensor([[1.0, 0.0]])
            >>> round(nn.TripletMarginWithDistanceLoss()(a, p, n).item(), 4)
            5.0
        """
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (see ``F.ctc_loss``).

    Example:
        >>> import flambeau_core as fc
        >>> lp = fc.log_softmax(fc.zeros(3, 1, 2), 2)
        >>> round(CTCLoss(reduction="sum")(lp, fc.tensor([[1]]), [3], [1]).item(), 4)
        0.2877
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(
        self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor | list[int], target_lengths: Tensor | list[int]
    ) -> Tensor:
        """The CTC loss of ``log_probs`` ``(T, N, C)`` (or unbatched ``(T, C)``) against ``targets`` (padded ``(N,
        S)`` or concatenated 1-D), with each sample's ``input_lengths`` and ``target_lengths``: ``-log`` of the total
        probability of the alignments, reduced (``"mean"`` divides each loss by its target length first).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> log_probs = fc.log_softmax(fc.zeros(5, 2, 4), 2)
            >>> loss = nn.CTCLoss(reduction="none")(log_probs, fc.tensor([[1, 2], [3, 3]]), [5, 5], [2, 2])
            >>> loss.shape
            flambeau.Size([2])
        """
        return F.ctc_loss(
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction, self.zero_infinity
        )


class LinearCrossEntropyLoss(_WeightedLoss):
    """A ``Linear`` layer to ``num_classes`` (times ``out_features``) logits and the cross entropy against
    ``target``, in one call (see ``F.linear_cross_entropy``; ``options`` opts into the chunked path).

    Example:
        >>> import flambeau_core as fc
        >>> loss = LinearCrossEntropyLoss(3, 5)
        >>> sorted(loss.state_dict()), loss(fc.randn(4, 3), fc.tensor([0, 1, 2, 4])).shape
        (['linear.weight'], flambeau.Size([]))
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device: object = None,
        dtype: object = None,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options: LinearCrossEntropyOptions | None = None,
    ) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise FlambeauError(
                f"[LinearCrossEntropyLoss] expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}"
            )
        if not 0.0 <= label_smoothing <= 1.0:
            raise FlambeauError(
                f"[LinearCrossEntropyLoss] expected label_smoothing to be in range [0, 1], got {label_smoothing}"
            )
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(
            in_features, math.prod(out_features, start=num_classes), bias=bias, device=device, dtype=dtype
        )
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Projects ``input`` ``(N, in_features)`` to ``num_classes`` logits with the layer's weight and returns their
        cross entropy against class indices ``target`` ``(N)``, reduced (without materialising every logit on the
        chunked path).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> loss = nn.LinearCrossEntropyLoss(3, 5, reduction="none")
            >>> loss(fc.randn(4, 3), fc.tensor([0, 1, 2, 4])).shape
            flambeau.Size([4])
        """
        weight = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        bias = self.linear.bias
        bias = bias.reshape((self.num_classes, *self.out_features)) if bias is not None else None
        return F.linear_cross_entropy(
            input,
            weight,
            target,
            linear_bias=bias,
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
            options=self.options,
        )

    def extra_repr(self) -> str:
        """The layer's sizes and the loss options, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.LinearCrossEntropyLoss(3, 5).extra_repr().split(", ")[:4]
            ['in_features=3', 'num_classes=5', 'out_features=()', 'bias=False']
        """
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}, "
            f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}, options={self.options}"
        )
