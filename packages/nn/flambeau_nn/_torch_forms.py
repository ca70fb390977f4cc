"""The functional ops in the spellings ``torch`` itself gives them, where they differ from
``torch.nn.functional``'s: ``torch.dropout(input, p, train)`` (a required ``train`` flag),
``torch.kl_div(input, target, reduction=0)`` (the reduction as an int: 0 none, 1 mean, 2 sum; torch's
top-level losses default to 0, unreduced, where ``nn.functional``'s default to the mean),
``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
cudnn_enabled)`` (another argument order), ``torch.embedding_bag`` (its four results); and the Tensor
methods ``hardshrink`` and ``prelu``.

Each is the ``nn.functional`` op called with its arguments renamed, so the two spellings cannot drift
apart. The meta-package exposes :data:`TOP_LEVEL` as ``flambeau.<name>``.

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_nn._torch_forms import dropout, kl_div
    >>> dropout(fc.ones(3), 0.5, False).tolist()
    [1.0, 1.0, 1.0]
    >>> round(kl_div(fc.zeros(2), fc.tensor([0.5, 0.5]), 2).item(), 4)
    -0.6931
"""

from __future__ import annotations

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

from flambeau_nn import functional as F
from flambeau_nn.functional._normalization import _check_p, _feature_dropout

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(name: str, reduction: int) -> str:
    """torch's integer reduction (at::Reduction) as nn.functional's string."""
    if isinstance(reduction, bool) or reduction not in _REDUCTIONS:
        raise FlambeauError(f"[{name}] reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")
    return _REDUCTIONS[reduction]


def _reduced(loss: Tensor, reduction: str) -> Tensor:
    return loss if reduction == "none" else loss.mean() if reduction == "mean" else loss.sum()


# ---- dropout with a required train flag ----


def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """dropout(input, p, train) -> Tensor

    :func:`flambeau.nn.functional.dropout` with ``training=train``: zeroes each element with probability
    ``p`` and scales the rest by ``1 / (1 - p)`` while ``train``; ``input`` unchanged otherwise.

    Example:
        >>> import flambeau as fb
        >>> fb.dropout(fb.ones(4), 0.5, False).tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """dropout_(input, p, train) -> Tensor

    In-place :func:`dropout`: writes into ``input`` and returns it.

    Example:
        >>> import flambeau as fb
        >>> x = fb.ones(4)
        >>> fb.dropout_(x, 1.0, True) is x, x.tolist()
        (True, [0.0, 0.0, 0.0, 0.0])
    """
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """alpha_dropout(input, p, train) -> Tensor

    :func:`flambeau.nn.functional.alpha_dropout` with ``training=train``: the dropout that keeps a SELU
    network's zero mean and unit variance.

    Example:
        >>> import flambeau as fb
        >>> fb.alpha_dropout(fb.ones(2), 0.5, False).tolist()
        [1.0, 1.0]
    """
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """alpha_dropout_(input, p, train) -> Tensor

    In-place :func:`alpha_dropout`.

    Example:
        >>> import flambeau as fb
        >>> x = fb.ones(2)
        >>> fb.alpha_dropout_(x, 0.5, False) is x
        True
    """
    return F.alpha_dropout(input, p, train, inplace=True)


def _check_features(name: str, input: Tensor, p: float) -> None:  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"[{name}] expected a Tensor as 'input', got {type(input).__name__}")
    _check_p(p, name)
    if input.dim() < 2:
        raise FlambeauError(
            f"[{name}] Feature dropout requires at least 2 dimensions in the input, got shape {tuple(input.shape)}"
        )


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """feature_dropout(input, p, train) -> Tensor

    Zeroes whole features (channels) of an ``(N, C, *)`` input with probability ``p`` and scales the rest
    by ``1 / (1 - p)`` while ``train`` (the op behind ``dropout1d/2d/3d``; one mask value per ``(n, c)``).

    Example:
        >>> import flambeau as fb
        >>> y = fb.feature_dropout(fb.ones(4, 3, 5), 0.5, True)
        >>> bool(((y == 0) | (y == 2)).all()), bool((y.amax(2) == y.amin(2)).all())
        (True, True)
    """
    _check_features("feature_dropout", input, p)
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """feature_dropout_(input, p, train) -> Tensor

    In-place :func:`feature_dropout`.

    Example:
        >>> import flambeau as fb
        >>> x = fb.ones(2, 3)
        >>> fb.feature_dropout_(x, 0.0, True) is x
        True
    """
    _check_features("feature_dropout_", input, p)
    return _feature_dropout(input, p, train, True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """feature_alpha_dropout(input, p, train) -> Tensor

    :func:`flambeau.nn.functional.feature_alpha_dropout` with ``training=train``: alpha dropout of whole
    channels.

    Example:
        >>> import flambeau as fb
        >>> fb.feature_alpha_dropout(fb.ones(1, 2), 0.5, False).tolist()
        [[1.0, 1.0]]
    """
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """feature_alpha_dropout_(input, p, train) -> Tensor

    In-place :func:`feature_alpha_dropout`.

    Example:
        >>> import flambeau as fb
        >>> x = fb.ones(1, 2)
        >>> fb.feature_alpha_dropout_(x, 0.5, False) is x
        True
    """
    return F.feature_alpha_dropout(input, p, train, inplace=True)


# ---- normalization in torch's argument order ----


def batch_norm(
    input: Tensor,  # noqa: A002
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled) -> Tensor

    :func:`flambeau.nn.functional.batch_norm` in torch's top-level argument order. ``cudnn_enabled`` is
    accepted and ignored (flambeau has no cuDNN).

    Example:
        >>> import flambeau as fb
        >>> y = fb.batch_norm(fb.tensor([[1.0], [3.0]]), None, None, None, None, True, 0.1, 1e-5, False)
        >>> [round(v, 3) for v in y.reshape(-1).tolist()]
        [-1.0, 1.0]
    """
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input: Tensor,  # noqa: A002
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
    cudnn_enabled) -> Tensor

    :func:`flambeau.nn.functional.instance_norm` in torch's top-level argument order. ``cudnn_enabled`` is
    accepted and ignored.

    Example:
        >>> import flambeau as fb
        >>> y = fb.instance_norm(fb.tensor([[[1.0, 3.0]]]), None, None, None, None, True, 0.1, 1e-5, False)
        >>> [round(v, 3) for v in y.reshape(-1).tolist()]
        [-1.0, 1.0]
    """
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


# ---- losses with an integer reduction ----


def binary_cross_entropy_with_logits(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int = 0,
) -> Tensor:
    """binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0) -> Tensor

    :func:`flambeau.nn.functional.binary_cross_entropy_with_logits` with the reduction as an int (0 none,
    1 mean, 2 sum), unreduced by default as torch's top-level form.

    Example:
        >>> import flambeau as fb
        >>> fb.binary_cross_entropy_with_logits(fb.zeros(2), fb.tensor([1.0, 0.0])).exp().tolist()
        [2.0, 2.0]
    """
    how = _reduction("binary_cross_entropy_with_logits", reduction)
    return F.binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight, reduction=how)


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, log_target: bool = False) -> Tensor:  # noqa: A002
    """kl_div(input, target, reduction=0, log_target=False) -> Tensor

    The pointwise Kullback-Leibler divergence of :func:`flambeau.nn.functional.kl_div` (``input`` holds
    log-probabilities), reduced by ``reduction``: 0 none, 1 the mean over all elements, 2 the sum.

    Example:
        >>> import flambeau as fb
        >>> fb.kl_div(fb.zeros(2), fb.tensor([1.0, 1.0]), 0).tolist()
        [0.0, 0.0]
    """
    how = _reduction("kl_div", reduction)
    return _reduced(F.kl_div(input, target, reduction="none", log_target=log_target), how)


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0) -> Tensor

    :func:`flambeau.nn.functional.cosine_embedding_loss` with the reduction as an int (0 none, 1 mean,
    2 sum).

    Example:
        >>> import flambeau as fb
        >>> fb.cosine_embedding_loss(fb.tensor([[1.0, 0.0]]), fb.tensor([[0.0, 1.0]]), fb.tensor([1.0])).item()
        1.0
    """
    how = _reduction("cosine_embedding_loss", reduction)
    return F.cosine_embedding_loss(input1, input2, target, margin=margin, reduction=how)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0) -> Tensor:  # noqa: A002
    """hinge_embedding_loss(input, target, margin=1.0, reduction=0) -> Tensor

    :func:`flambeau.nn.functional.hinge_embedding_loss` with the reduction as an int (0 none, 1 mean,
    2 sum).

    Example:
        >>> import flambeau as fb
        >>> fb.hinge_embedding_loss(fb.tensor([0.25, 2.0]), fb.tensor([-1.0, -1.0]), 1.0, 0).tolist()
        [0.75, 0.0]
    """
    how = _reduction("hinge_embedding_loss", reduction)
    return F.hinge_embedding_loss(input, target, margin=margin, reduction=how)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0) -> Tensor

    :func:`flambeau.nn.functional.margin_ranking_loss` with the reduction as an int (0 none, 1 mean,
    2 sum).

    Example:
        >>> import flambeau as fb
        >>> fb.margin_ranking_loss(fb.tensor([1.0, 2.0]), fb.tensor([2.0, 1.0]), fb.tensor([1.0, 1.0]), 0.0, 0).tolist()
        [1.0, 0.0]
    """
    how = _reduction("margin_ranking_loss", reduction)
    return F.margin_ranking_loss(input1, input2, target, margin=margin, reduction=how)


def poisson_nll_loss(
    input: Tensor,  # noqa: A002
    target: Tensor,
    log_input: bool,
    full: bool,
    eps: float,
    reduction: int,
) -> Tensor:
    """poisson_nll_loss(input, target, log_input, full, eps, reduction) -> Tensor

    :func:`flambeau.nn.functional.poisson_nll_loss` with every argument required and the reduction as an
    int (0 none, 1 mean, 2 sum), as torch's top-level form.

    Example:
        >>> import flambeau as fb
        >>> fb.poisson_nll_loss(fb.zeros(2), fb.tensor([1.0, 2.0]), True, False, 1e-8, 0).tolist()
        [1.0, 1.0]
    """
    how = _reduction("poisson_nll_loss", reduction)
    return F.poisson_nll_loss(input, target, log_input=log_input, full=full, eps=eps, reduction=how)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-06,
    swap: bool = False,
    reduction: int = 0,
) -> Tensor:
    """triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=0) -> Tensor

    :func:`flambeau.nn.functional.triplet_margin_loss` with the reduction as an int (0 none, 1 mean,
    2 sum).

    Example:
        >>> import flambeau as fb
        >>> a = fb.tensor([[0.0, 0.0]])
        >>> round(fb.triplet_margin_loss(a, a, fb.tensor([[3.0, 4.0]]), 6.0).item(), 4)
        1.0
    """
    how = _reduction("triplet_margin_loss", reduction)
    return F.triplet_margin_loss(anchor, positive, negative, margin=margin, p=p, eps=eps, swap=swap, reduction=how)


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | list[int] | tuple[int, ...],
    target_lengths: Tensor | list[int] | tuple[int, ...],
    blank: int = 0,
    reduction: int = 0,
    zero_infinity: bool = False,
) -> Tensor:
    """ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False) -> Tensor

    :func:`flambeau.nn.functional.ctc_loss` with the reduction as an int (0 none, 1 mean over the batch of
    the losses divided by their target lengths, 2 sum).

    Example:
        >>> import flambeau as fb
        >>> log_probs = fb.full((2, 1, 2), 0.5).log()
        >>> round(fb.ctc_loss(log_probs, fb.tensor([[1]]), [2], [1], 0, 0).item(), 4)
        0.2877
    """
    how = _reduction("ctc_loss", reduction)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, how, zero_infinity)


def embedding_bag(
    weight: Tensor,
    indices: Tensor,
    offsets: Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
    per_sample_weights=None, include_last_offset=False, padding_idx=None) -> tuple

    The sums (``mode=0``), means (1) or maxima (2) of bags of rows of ``weight``, bag ``b`` holding
    ``indices[offsets[b]:offsets[b + 1]]``, as torch's top-level form: returns ``(output, offset2bag,
    bag_size, max_indices)``. A negative ``padding_idx`` counts from the end of ``weight``; ``None`` pads
    nothing. Prefer :func:`flambeau.nn.functional.embedding_bag` in new code.

    Example:
        >>> import flambeau as fb
        >>> out, *_ = fb.embedding_bag(fb.eye(3), fb.tensor([0, 1, 2]), fb.tensor([0, 2]))
        >>> out.tolist()
        [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if isinstance(mode, bool) or mode not in (0, 1, 2):
        raise FlambeauError(f"[embedding_bag] mode has to be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    if padding_idx is None:
        padding_idx = -1  # core's "no padding"
    elif isinstance(weight, Tensor) and weight.dim() >= 1:
        rows = weight.shape[0]
        if not -rows <= padding_idx < rows:
            raise FlambeauError(
                f"[embedding_bag] padding_idx must be within the {rows} rows of weight, got {padding_idx}"
            )
        padding_idx %= rows
    return fc._embedding_bag(
        weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset, padding_idx
    )


# ---- Tensor methods ----


def _hardshrink_method(self: Tensor, lambd: float = 0.5) -> Tensor:
    """hardshrink(lambd=0.5) -> Tensor

    :func:`flambeau.nn.functional.hardshrink` of this tensor: its elements with ``|x| > lambd``, zeros
    elsewhere.

    Example:
        >>> import flambeau as fb
        >>> fb.tensor([-1.0, 0.25, 0.75]).hardshrink().tolist()
        [-1.0, 0.0, 0.75]
    """
    return F.hardshrink(self, lambd)


def _prelu_method(self: Tensor, weight: Tensor) -> Tensor:
    """prelu(weight) -> Tensor

    :func:`flambeau.nn.functional.prelu` of this tensor: ``max(0, x) + weight * min(0, x)``, ``weight``
    one slope or one per channel.

    Example:
        >>> import flambeau as fb
        >>> fb.tensor([-2.0, 3.0]).prelu(fb.tensor([0.25])).tolist()
        [-0.5, 3.0]
    """
    return F.prelu(self, weight)


_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(
    input: Tensor,  # noqa: A002
    grid: Tensor,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
) -> Tensor:
    """grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor

    ``F.grid_sample`` with torch's integer modes: interpolation 0 bilinear, 1 nearest, 2 bicubic;
    padding 0 zeros, 1 border, 2 reflection. 4-D or 5-D input, as ``grid_sampler_2d``/``grid_sampler_3d``.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_nn._torch_forms import grid_sampler
        >>> grid_sampler(fc.arange(4.0).reshape(1, 1, 2, 2), fc.zeros(1, 1, 1, 2), 0, 0, True).tolist()
        [[[[1.5]]]]
    """
    return _grid_sampler("grid_sampler", input, grid, interpolation_mode, padding_mode, align_corners)


def _grid_sampler(name: str, input: Tensor, grid: Tensor, interpolation: int, padding: int, align: bool) -> Tensor:  # noqa: A002
    if interpolation not in _INTERPOLATION:
        raise ValueError(
            f"[{name}] interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got {interpolation}"
        )
    if padding not in _PADDING:
        raise ValueError(f"[{name}] padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got {padding}")
    return F.grid_sample(
        input, grid, mode=_INTERPOLATION[interpolation], padding_mode=_PADDING[padding], align_corners=bool(align)
    )


def grid_sampler_2d(
    input: Tensor,  # noqa: A002
    grid: Tensor,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
) -> Tensor:
    """grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor

    :func:`grid_sampler` of a 4-D input ``(N, C, H, W)`` and grid ``(N, H_out, W_out, 2)``.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_nn._torch_forms import grid_sampler_2d
        >>> grid_sampler_2d(fc.arange(4.0).reshape(1, 1, 2, 2), fc.zeros(1, 1, 1, 2), 1, 0, True).shape
        flambeau.Size([1, 1, 1, 1])
    """
    if not (is_tensor_like(input) and input.dim() == 4):
        raise FlambeauError(
            f"[grid_sampler_2d] expected a 4-D input, got {getattr(input, 'shape', type(input).__name__)}"
        )
    return _grid_sampler("grid_sampler_2d", input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(
    input: Tensor,  # noqa: A002
    grid: Tensor,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
) -> Tensor:
    """grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor

    :func:`grid_sampler` of a 5-D input ``(N, C, D, H, W)`` and grid ``(N, D_out, H_out, W_out, 3)``.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_nn._torch_forms import grid_sampler_3d
        >>> grid_sampler_3d(fc.ones(1, 1, 2, 2, 2), fc.zeros(1, 1, 1, 1, 3), 0, 0, False).tolist()
        [[[[[1.0]]]]]
    """
    if not (is_tensor_like(input) and input.dim() == 5):
        raise FlambeauError(
            f"[grid_sampler_3d] expected a 5-D input, got {getattr(input, 'shape', type(input).__name__)}"
        )
    return _grid_sampler("grid_sampler_3d", input, grid, interpolation_mode, padding_mode, align_corners)


TOP_LEVEL = {
    fn.__name__: fn
    for fn in (
        dropout,
        dropout_,
        alpha_dropout,
        alpha_dropout_,
        feature_dropout,
        feature_dropout_,
        feature_alpha_dropout,
        feature_alpha_dropout_,
        batch_norm,
        instance_norm,
        binary_cross_entropy_with_logits,
        kl_div,
        cosine_embedding_loss,
        hinge_embedding_loss,
        margin_ranking_loss,
        poisson_nll_loss,
        triplet_margin_loss,
        ctc_loss,
        embedding_bag,
        grid_sampler,
        grid_sampler_2d,
        grid_sampler_3d,
    )
}


def install_tensor_methods() -> None:
    for name, fn in (("hardshrink", _hardshrink_method), ("prelu", _prelu_method)):
        fn.__name__ = fn.__qualname__ = name
        setattr(Tensor, name, fn)
