"""The connectionist temporal classification loss (``F.ctc_loss``). Part of ``flambeau_nn.functional``.

The forward is the log-space alpha recursion over the blank-extended labels
``l'`` (``2 S + 1`` positions: a blank around every label), as tensor ops on all
sequences and label positions at once, one Python step per time step. The
backward is PyTorch's formula from the alpha and beta (backward) variables,
``exp(lp) - exp(log(sum_{s: l'_s = c} alpha_t(s) beta_t(s)) + nll - lp)``: the
gradient with respect to the logits under a ``log_softmax``, which is what
PyTorch returns for ``log_probs`` too (the ``exp(lp)`` term cancels through the
``log_softmax`` backward).
"""

from __future__ import annotations

from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.amp.custom_functions import autocast_float32

from flambeau_nn.functional._base import _check_tensor, _float_input, _reduce, _shape

__all__ = ["ctc_loss"]

_INF = float("inf")


def _lengths(lengths: Any, n: int, what: str) -> Tensor:
    t = lengths if isinstance(lengths, Tensor) else fc.tensor(lengths, dtype=fc.int64)
    if t.is_floating_point():
        raise TypeError(f"[ctc_loss] {what} must be integers, got dtype {t.dtype}")
    t = t.to(fc.int64).reshape(-1)
    if t.numel() != n:
        raise FlambeauError(f"[ctc_loss] {what} must be of size batch_size ({n}), got {t.numel()} values")
    return t


def _logsumexp(x: Tensor, dim: int) -> Tensor:
    """``log(sum(exp(x), dim))`` that gives -inf (not NaN) where every term is -inf."""
    m = x.amax(dim, keepdim=True)
    m = fc.where(m == -_INF, fc.zeros((), dtype=m.dtype), m)
    return (m + fc.log(fc.exp(x - m).sum(dim, keepdim=True))).squeeze(dim)


def _shift(x: Tensor, k: int) -> Tensor:
    """``x[:, s - k]`` at position ``s`` (k > 0: from the left; k < 0: from the right), -inf where out of range."""
    width = x.shape[1]
    m = min(abs(k), width)  # a shift past the width (every target empty: width 1) leaves only -inf
    pad = fc.full((x.shape[0], m), -_INF, dtype=x.dtype)
    return fc.cat([pad, x[:, : width - m]], 1) if k > 0 else fc.cat([x[:, m:], pad], 1)


def _padded_targets(targets: Tensor, tgt_len: Tensor, n: int, s_max: int) -> Tensor:
    """The targets as ``(N, s_max)`` int64, from the padded ``(N, S)`` or the concatenated 1-D form."""
    if targets.dim() == 2:
        if targets.shape[0] != n:
            raise FlambeauError(f"[ctc_loss] targets has {targets.shape[0]} rows for a batch of {n}")
        if targets.shape[1] < s_max:
            raise FlambeauError(
                f"[ctc_loss] Expected tensor to have size at least {s_max} at dimension 1, but got size "
                f"{targets.shape[1]} for argument #2 'targets'"
            )
        return targets[:, :s_max].to(fc.int64)
    if targets.dim() != 1:
        raise FlambeauError(f"[ctc_loss] targets must be 1-D (concatenated) or 2-D (padded), got {_shape(targets)}")
    total = int(tgt_len.sum().item())
    if targets.numel() < total:
        raise FlambeauError(
            f"[ctc_loss] the target lengths add up to {total} but targets holds {targets.numel()} labels"
        )
    if s_max == 0:
        return fc.zeros((n, 0), dtype=fc.int64)
    starts = tgt_len.cumsum(0) - tgt_len
    index = starts.unsqueeze(1) + fc.arange(s_max, dtype=fc.int64).unsqueeze(0)
    inside = fc.arange(s_max, dtype=fc.int64).unsqueeze(0) < tgt_len.unsqueeze(1)
    index = fc.where(inside, index, fc.zeros((), dtype=fc.int64))
    return targets.to(fc.int64).take(index) if total else fc.zeros((n, s_max), dtype=fc.int64)


def _alpha_beta(lp: Tensor, ext: Tensor, in_len: Tensor, tgt_len: Tensor, blank: int) -> tuple[Tensor, ...]:
    """Per time step, the log forward (alpha) and backward (beta) variables ``(T, N, L)`` and the losses ``(N,)``."""
    t_max, n, _ = lp.shape
    width = ext.shape[1]
    pos = fc.arange(width, dtype=fc.int64).unsqueeze(0)
    ext_len = 2 * tgt_len + 1
    lp_ext = lp.gather(2, ext.unsqueeze(0).expand(t_max, n, width))
    lp_ext = fc.where((pos < ext_len.unsqueeze(1)).unsqueeze(0), lp_ext, -_INF)
    # A label may be reached from two positions back (skipping a blank) unless it repeats the label there.
    skip = (pos >= 2).logical_and(ext != blank).logical_and(ext != _shift_labels(ext))
    skip_from_right = fc.cat([skip[:, 2:], fc.zeros((n, min(2, width)), dtype=fc.bool)], 1)
    neg = fc.full((), -_INF, dtype=lp.dtype)

    alphas = [fc.where(pos < 2, lp_ext[0], neg)] if t_max else []
    for t in range(1, t_max):
        prev = alphas[-1]
        from_skip = fc.where(skip, _shift(prev, 2), neg)
        alphas.append(_logsumexp(fc.stack([prev, _shift(prev, 1), from_skip]), 0) + lp_ext[t])

    last = (in_len - 1).unsqueeze(1)  # (N, 1)
    is_end = (pos == ext_len.unsqueeze(1) - 1).logical_or(pos == ext_len.unsqueeze(1) - 2)
    betas: list[Tensor] = []
    nxt = fc.full((n, width), -_INF, dtype=lp.dtype)
    for t in range(t_max - 1, -1, -1):
        from_skip = fc.where(skip_from_right, _shift(nxt, -2), neg)
        rec = _logsumexp(fc.stack([nxt, _shift(nxt, -1), from_skip]), 0) + lp_ext[t]
        init = fc.where(is_end, lp_ext[t], neg)
        nxt = fc.where(last == t, init, fc.where(last > t, rec, neg))
        betas.append(nxt)
    betas.reverse()

    if t_max:
        alpha = fc.stack(alphas)
        beta = fc.stack(betas)
        at_end = alpha.gather(0, last.clamp_min(0).unsqueeze(0).expand(1, n, width))[0]
        # A path ends on the last label or the blank after it.
        nll = -_logsumexp(fc.where(is_end, at_end, neg), 1)
    else:
        alpha = beta = fc.empty((0, n, width), dtype=lp.dtype)
        nll = fc.full((n,), _INF, dtype=lp.dtype)
    # No frames: probability 1 for an empty target, 0 otherwise.
    empty_input = in_len == 0
    nll = fc.where(empty_input, fc.where(tgt_len == 0, 0.0, _INF), nll).to(lp.dtype)
    return alpha, beta, nll


def _shift_labels(ext: Tensor) -> Tensor:
    """``ext[:, s - 2]`` (-1 for s < 2)."""
    m = min(2, ext.shape[1])
    pad = fc.full((ext.shape[0], m), -1, dtype=ext.dtype)
    return fc.cat([pad, ext[:, : ext.shape[1] - m]], 1)


class _CTCLoss(fa.Function):
    @staticmethod
    def forward(
        ctx: Any, lp: Tensor, ext: Tensor, in_len: Tensor, tgt_len: Tensor, blank: int, zero_inf: bool
    ) -> Tensor:
        alpha, beta, nll = _alpha_beta(lp, ext, in_len, tgt_len, blank)
        ctx.save_for_backward(lp, ext, in_len, alpha, beta, nll)
        ctx.zero_inf = zero_inf
        if zero_inf:
            return fc.where(nll == _INF, fc.zeros((), dtype=nll.dtype), nll)
        return nll

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        return _CTCLoss._gradient(ctx) * grad.view(1, -1, 1), None, None, None, None, None

    @staticmethod
    def jvp(ctx: Any, lp_t: Tensor, *_: Any) -> Tensor:
        """Forward mode: each sequence's loss changes by the gradient's dot product with the tangent (the same
        gradient as backward's, PyTorch's: its exp(log_probs) term sums to zero against the tangent of a
        log_softmax, which is how ctc_loss is used)."""
        return (_CTCLoss._gradient(ctx) * lp_t).sum((0, 2))

    @staticmethod
    def _gradient(ctx: Any) -> Tensor:
        """d loss_n / d log_probs[t, n, c], zero past each input's length (and for zeroed infinite losses)."""
        lp, ext, in_len, alpha, beta, nll = ctx.saved_tensors
        t_max, n, c = lp.shape
        width = ext.shape[1]
        index = ext.unsqueeze(0).expand(t_max, n, width)
        ab = alpha + beta
        # log(sum over the positions of each class of alpha * beta), stably: per-class max first.
        peak = fc.full((t_max, n, c), -_INF, dtype=lp.dtype).scatter_reduce(2, index, ab, "amax")
        peak = fc.where(peak == -_INF, fc.zeros((), dtype=lp.dtype), peak)
        total = fc.zeros((t_max, n, c), dtype=lp.dtype).scatter_add(2, index, fc.exp(ab - peak.gather(2, index)))
        lcab = fc.log(total) + peak
        g = fc.exp(lp) - fc.exp(lcab + nll.view(1, n, 1) - lp)
        live = (fc.arange(t_max, dtype=fc.int64).view(t_max, 1) < in_len.view(1, n)).unsqueeze(2)
        if ctx.zero_inf:
            live = live.logical_and((nll != _INF).view(1, n, 1))
        return fc.where(live, g, fc.zeros((), dtype=lp.dtype))


@autocast_float32
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | list[int] | tuple[int, ...],
    target_lengths: Tensor | list[int] | tuple[int, ...],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    r"""The connectionist temporal classification loss: ``-log p(target | log_probs)`` summed over alignments.

    ``log_probs`` is ``(T, N, C)`` (or ``(T, C)`` unbatched) log-probabilities,
    e.g. from ``log_softmax(., 2)``; ``targets`` is ``(N, S)`` padded or the
    concatenation of all targets (1-D), without blanks; ``input_lengths`` and
    ``target_lengths`` give each sequence's lengths. ``reduction='mean'`` divides
    each loss by its target length before the batch mean. ``zero_infinity=True``
    sets infinite losses (impossible alignments) and their gradients to zero.

    Example:
        >>> import flambeau_core as fc
        >>> lp = fc.log_softmax(fc.zeros(3, 1, 2), 2)
        >>> round(ctc_loss(lp, fc.tensor([[1]]), [3], [1], reduction="sum").item(), 4)  # 6 of the 8 paths give "1"
        0.2877
    """
    _float_input(log_probs, "ctc_loss")
    _check_tensor(targets, "ctc_loss", "targets")
    if log_probs.dim() not in (2, 3):
        raise FlambeauError(
            f"[ctc_loss] log_probs must be (T, N, C) or (T, C) unbatched, got shape {_shape(log_probs)}"
        )
    if targets.is_floating_point():
        raise TypeError(f"[ctc_loss] targets must hold integer class indices, got dtype {targets.dtype}")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if not batched:
        targets = targets.unsqueeze(0)
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise FlambeauError(f"[ctc_loss] blank must be in label range [0, {c}), got {blank}")
    in_len = _lengths(input_lengths, n, "input_lengths")
    tgt_len = _lengths(target_lengths, n, "target_lengths")
    if n and int(in_len.max().item()) > t_max:
        raise FlambeauError(
            f"[ctc_loss] Expected input_lengths to have value at most {t_max}, but got value {int(in_len.max().item())}"
        )
    if n and (int(in_len.min().item()) < 0 or int(tgt_len.min().item()) < 0):
        raise FlambeauError("[ctc_loss] input_lengths and target_lengths must be non-negative")
    s_max = int(tgt_len.max().item()) if n else 0
    tgt = _padded_targets(targets, tgt_len, n, s_max)
    inside = fc.arange(s_max, dtype=fc.int64).unsqueeze(0) < tgt_len.unsqueeze(1)
    if bool(fc.where(inside, (tgt < 0).logical_or(tgt >= c), False).any()):
        raise IndexError(f"[ctc_loss] every target label must be in [0, {c})")
    # l': blank, t1, blank, t2, ..., blank (padding past a target's end is masked in the recursion).
    labels = fc.where(inside, tgt, blank)
    ext = fc.stack([fc.full((n, s_max), blank, dtype=fc.int64), labels], 2).reshape(n, 2 * s_max)
    ext = fc.cat([ext, fc.full((n, 1), blank, dtype=fc.int64)], 1)
    nll = _CTCLoss.apply(lp, ext, in_len, tgt_len, blank, bool(zero_infinity))
    if reduction == "mean":
        return (nll / tgt_len.clamp_min(1).to(nll.dtype)).mean()
    if not batched and reduction == "none":
        return nll.reshape(())
    return _reduce(nll, reduction, "ctc_loss")
