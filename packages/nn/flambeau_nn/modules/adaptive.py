"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. for large vocabularies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

from flambeau_nn import functional as F
from flambeau_nn.modules.container import ModuleList, Sequential
from flambeau_nn.modules.linear import Linear
from flambeau_nn.modules.module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]


class _ASMoutput(NamedTuple):
    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    r"""An approximate log-softmax over ``n_classes`` split by frequency at ``cutoffs``.

    The ``head`` scores the frequent classes (``[0, cutoffs[0])``) and one entry
    per cluster; cluster ``i`` (classes ``[cutoffs[i], cutoffs[i+1])``) has its own
    ``tail[i]``: a projection to ``in_features // div_value**(i+1)`` features and
    a linear layer. ``forward(input, target)`` returns ``(output, loss)``: the
    target's log-probability for each row and the mean negative of those.

    Example:
        >>> import flambeau_core as fc
        >>> asm = AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 8])
        >>> out = asm(fc.randn(3, 8), fc.tensor([0, 5, 9]))
        >>> tuple(out.output.shape), tuple(asm.log_prob(fc.randn(3, 8)).shape)
        ((3,), (3, 10))
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device: object = None,
        dtype: object = None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise FlambeauError("[AdaptiveLogSoftmaxWithLoss] cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise FlambeauError(
                "[AdaptiveLogSoftmaxWithLoss] cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = [*cutoffs, n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw), Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Re-initialises the head and every tail cluster's two projections, as ``Linear.reset_parameters`` does.

        Example:
            >>> import flambeau_nn as nn
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4])
            >>> asm.reset_parameters()
            >>> tuple(asm.head.weight.shape)
            (5, 8)
        """
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """Computes the log-probability of each ``target`` ``(N)`` (or ``()``) class given ``input`` ``(N,
        in_features)`` (or ``(in_features)``), returning the named tuple ``(output, loss)``: ``output`` ``(N)`` those
        log-probabilities, ``loss`` their negated mean.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7])
            >>> out = asm(fc.randn(5, 8), fc.tensor([0, 3, 5, 8, 9]))
            >>> out.output.shape, out.loss.shape, bool(fc.isclose(out.loss, -out.output.mean()))
            (flambeau.Size([5]), flambeau.Size([]), True)
        """
        for what, t in (("input", input_), ("target", target_)):
            if not is_tensor_like(t):
                raise TypeError(f"[AdaptiveLogSoftmaxWithLoss] {what} must be a Tensor, got {type(t).__name__}")
        tdim = target_.dim()
        if tdim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise FlambeauError(
                    "[AdaptiveLogSoftmaxWithLoss] Input and target should have the same size in the batch dimension."
                )
            if input_.dim() != 2:
                raise FlambeauError(
                    "[AdaptiveLogSoftmaxWithLoss] 1D target tensor expects 2D input tensors, but found inputs with "
                    f"size {tuple(input_.shape)}"
                )
        elif tdim == 0:
            if input_.dim() != 1:
                raise FlambeauError(
                    "[AdaptiveLogSoftmaxWithLoss] 0D target tensor expects 1D input tensors, but found inputs with "
                    f"size {tuple(input_.shape)}"
                )
        else:
            raise FlambeauError(
                "[AdaptiveLogSoftmaxWithLoss] 0D or 1D target tensor expected, multi-target not supported"
            )
        batched = tdim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (bool((target < 0).any()) or bool((target >= self.n_classes).any())):
            raise FlambeauError(
                f"[AdaptiveLogSoftmaxWithLoss] Target values should be in [0, {self.n_classes - 1}], but values in "
                f"range [{target.min().item()}, {target.max().item()}] were found. "
            )
        # The head's column for each row: the class itself in the shortlist, else its cluster's entry.
        cluster = fc.zeros(tuple(target.shape), dtype=target.dtype)
        for c in self.cutoffs[:-1]:
            cluster = cluster + (target >= c).to(target.dtype)
        head_column = fc.where(cluster == 0, target, self.shortlist_size + cluster - 1)
        output = F.log_softmax(self.head(input), 1).gather(1, head_column.unsqueeze(1)).squeeze(1)
        for i in range(self.n_clusters):
            rows = fc.nonzero(cluster == i + 1).reshape(-1)
            if rows.numel() == 0:
                continue
            local = target.index_select(0, rows) - self.cutoffs[i]
            logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), 1)
            output = output.index_add(0, rows, logprob.gather(1, local.unsqueeze(1)).squeeze(1))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, 1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), 1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return fc.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        r"""The log-probabilities of every class, ``(N, n_classes)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7])
            >>> lp = asm.log_prob(fc.randn(3, 8))
            >>> lp.shape, [round(v, 4) for v in lp.exp().sum(dim=1).tolist()]
            (flambeau.Size([3, 10]), [1.0, 1.0, 1.0])
        """
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        r"""The most likely class of each row (the full distribution is computed only for rows that need it).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7])
            >>> x = fc.randn(6, 8)
            >>> bool((asm.predict(x) == asm.log_prob(x).argmax(dim=1)).all())
            True
        """
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        rows = fc.nonzero(outside).reshape(-1)
        full = self._get_full_log_prob(input.index_select(0, rows), head_output.index_select(0, rows))
        return output.index_copy(0, rows, full.argmax(1))
