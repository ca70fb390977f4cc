"""Normalization, embedding and dropout. Part of ``flambeau_nn.functional``, which re-exports it."""

from __future__ import annotations

import warnings

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor, _shape

# Core's fused kernels (src/cpu/norm_*.cpp, src/cpu/embedding.cpp) with their
# derivatives in flambeau-autograd's table; these functions check arguments as
# PyTorch does and pick the op.

__all__ = [
    "dropout",
    "batch_norm",
    "instance_norm",
    "layer_norm",
    "group_norm",
    "embedding",
    "embedding_bag",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "normalize",
    "rms_norm",
    "local_response_norm",
]


def _check_p(p: float, op: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise FlambeauError(f"[{op}] dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    r"""Zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)`` (training only).

    One fused kernel (``native_dropout``) draws the mask and scales in one pass; the
    backward reuses the mask. The mask comes from core's generator (seeded by
    ``flambeau_core.manual_seed``), so the zeroed positions differ from PyTorch's.
    ``training=False`` or ``p=0`` returns ``input`` itself.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> fc.manual_seed(0)
        >>> sorted(set(F.dropout(fc.ones(1000), p=0.75).tolist()))
        [0.0, 4.0]
        >>> F.dropout(fc.ones(3), p=0.75, training=False).tolist()
        [1.0, 1.0, 1.0]
    """
    _check_tensor(input, "dropout")
    _check_p(p, "dropout")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    out = fc.native_dropout(input, p, True)[0]
    return input.copy_(out) if inplace else out


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    if not training or p == 0.0 or input.numel() == 0:
        return input
    out = fc._feature_dropout(input, p)[0]
    return input.copy_(out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> fc.manual_seed(0)
        >>> y = F.dropout1d(fc.ones(2, 8, 5), p=0.5)
        >>> bool((y.amax(dim=2) == y.amin(dim=2)).all())  # whole channels kept or zeroed
        True
    """
    _check_tensor(input, "dropout1d")
    _check_p(p, "dropout1d")
    if input.dim() not in (2, 3):
        raise FlambeauError(
            f"[dropout1d] Expected 2D or 3D input, but received a {input.dim()}D input of shape {_shape(input)}"
        )
    if input.dim() == 2:
        return _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, H, W)`` input with probability ``p``.

    As PyTorch, a 3-D input is read as ``(N, C, L)`` (channel-wise 1-D dropout) with a warning.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> fc.manual_seed(0)
        >>> y = F.dropout2d(fc.ones(2, 8, 3, 3), p=0.5).flatten(2)
        >>> bool((y.amax(dim=2) == y.amin(dim=2)).all())
        True
    """
    _check_tensor(input, "dropout2d")
    _check_p(p, "dropout2d")
    if input.dim() not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and will result in an "
            "error in a future release. To retain the behavior and silence this warning, please use dropout instead.",
            stacklevel=2,
        )
    if input.dim() == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim.",
            stacklevel=2,
        )
    if input.dim() < 2:
        raise FlambeauError(f"[dropout2d] Feature dropout requires at least 2 dimensions, got shape {_shape(input)}")
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> fc.manual_seed(0)
        >>> y = F.dropout3d(fc.ones(2, 8, 2, 2, 2), p=0.5).flatten(2)
        >>> bool((y.amax(dim=2) == y.amin(dim=2)).all())
        True
    """
    _check_tensor(input, "dropout3d")
    _check_p(p, "dropout3d")
    if input.dim() not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and will result in an "
            "error in a future release.",
            stacklevel=2,
        )
    if input.dim() < 2:
        raise FlambeauError(f"[dropout3d] Feature dropout requires at least 2 dimensions, got shape {_shape(input)}")
    if input.dim() == 4:
        return _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return _feature_dropout(input, p, training, inplace)


def _verify_batch_size(size: tuple[int, ...], op: str) -> None:
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise FlambeauError(f"[{op}] Expected more than 1 value per channel when training, got input size {list(size)}")


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    r"""Batch normalization over dim 1 of an ``(N, C, ...)`` input.

    ``training=True`` normalizes with the batch statistics and updates
    ``running_mean``/``running_var`` in place (momentum, unbiased variance);
    otherwise the running statistics are used. An empty input, of any number
    of dims, gives an empty output and leaves the running statistics alone.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 3) for v in batch_norm(fc.tensor([[1.0], [3.0]]), None, None, training=True).reshape(-1).tolist()]
        [-1.0, 1.0]
    """
    _check_tensor(input, "batch_norm")
    if input.numel() == 0:
        # PyTorch's: an empty input, of any number of dims, gives an empty copy (scaled and shifted by the first
        # weight and bias, so that they get their zero gradients) and leaves the running statistics alone.
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    if input.dim() < 2:
        raise FlambeauError(f"[batch_norm] expected an input of at least 2 dims (N, C, ...), got shape {_shape(input)}")
    if training:
        _verify_batch_size(_shape(input), "batch_norm")
        if eps <= 0.0:
            raise FlambeauError(f"[batch_norm] eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise FlambeauError(f"[batch_norm] eps must be non-negative, but got {eps}")
    return fc.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    r"""Normalizes each channel of each sample of an ``(N, C, ...)`` input separately.

    As PyTorch: batch normalization of the input viewed as ``(1, N*C, ...)``; the
    running statistics, when given, are updated with the mean over the batch.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> [round(v, 4) for v in F.instance_norm(fc.tensor([[[1.0, 2.0, 3.0]]]))[0, 0].tolist()]
        [-1.2247, 0.0, 1.2247]
    """
    _check_tensor(input, "instance_norm")
    if input.dim() < 2:
        raise FlambeauError(f"[instance_norm] expected an input of at least 2 dims (N, C, ...), got {_shape(input)}")
    shape = _shape(input)
    n, c = shape[0], shape[1]
    if use_input_stats:
        prod = 1
        for s in shape[2:]:
            prod *= s
        if prod == 1:
            raise FlambeauError(
                f"[instance_norm] Expected more than 1 spatial element when training, got input size {list(shape)}"
            )
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and _shape(t) != (c,):
            raise FlambeauError(
                f"[instance_norm] {name} must have shape ({c},) (one value per channel, input shape {shape}), "
                f"got shape {_shape(t)}"
            )

    def per_instance(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.unsqueeze(0).expand(n, c).reshape(n * c)

    rm, rv = per_instance(running_mean), per_instance(running_var)
    out = fc.native_batch_norm(
        input.reshape((1, n * c) + shape[2:]),
        per_instance(weight),
        per_instance(bias),
        rm,
        rv,
        use_input_stats,
        momentum,
        eps,
    )[0]
    if use_input_stats:
        if running_mean is not None:
            running_mean.copy_(rm.reshape(n, c).mean(0))
        if running_var is not None:
            running_var.copy_(rv.reshape(n, c).mean(0))
    return out.reshape(shape)


def layer_norm(
    input: Tensor,
    normalized_shape: int | tuple[int, ...] | list[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    r"""Normalizes over the trailing ``normalized_shape`` dims (mean and biased variance per row).

    Example:
        >>> import flambeau as fb
        >>> y = fb.nn.functional.layer_norm(fb.tensor([[1.0, 2.0, 3.0, 4.0]]), (4,))
        >>> [round(v, 4) for v in y[0].tolist()]
        [-1.3416, -0.4472, 0.4472, 1.3416]
    """
    _check_tensor(input, "layer_norm")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return fc.native_layer_norm(input, tuple(normalized_shape), weight, bias, eps)[0]


def rms_norm(
    input: Tensor,
    normalized_shape: int | tuple[int, ...] | list[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    r"""``input / sqrt(mean(input**2) + eps) * weight`` over the trailing ``normalized_shape`` dims.

    ``eps=None`` uses the machine epsilon of the input's dtype, as PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> rms_norm(fc.tensor([[2.0, -2.0]]), 2, eps=0.0).tolist()
        [[1.0, -1.0]]
    """
    _check_tensor(input, "rms_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.dim() < k or _shape(input)[-k:] != shape:
        raise FlambeauError(
            f"[rms_norm] expected an input whose trailing dims are normalized_shape={shape}, got {_shape(input)}"
        )
    if weight is not None and _shape(weight) != shape:
        raise FlambeauError(f"[rms_norm] weight must have shape {shape}, got {_shape(weight)}")
    if eps is None:
        eps = 2.220446049250313e-16 if input.dtype == fc.float64 else 1.1920928955078125e-07
    dims = list(range(input.dim() - k, input.dim()))
    out = input * fc.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return out * weight if weight is not None else out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    r"""Normalizes each channel by the squares of its ``size`` neighbours across channels (AlexNet's LRN).

    ``b_c = a_c / (k + alpha / size * sum_{c'} a_{c'}^2) ** beta`` over the window around ``c``
    (``size // 2`` before, ``(size - 1) // 2`` after, zero-padded), as PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> local_response_norm(fc.ones(1, 3, 2), 2, alpha=1.0, beta=1.0).tolist()[0][0]
        [0.6666666865348816, 0.6666666865348816]
    """
    _check_tensor(input, "local_response_norm")
    if input.dim() < 3:
        raise FlambeauError(
            f"[local_response_norm] Expected 3D or higher dimensionality input (got {input.dim()} dimensions)"
        )
    if input.numel() == 0:
        return input
    shape = _shape(input)
    # The channel window as a (size, 1) average pool over (C, rest) planes, zero-padded like PyTorch.
    sq = (input * input).reshape(shape[0], 1, shape[1], -1)
    sq = fc._C._pad_nd(sq, [0, 0, size // 2, (size - 1) // 2], "constant", 0.0)
    div = fc.avg_pool2d(sq, [size, 1], [1, 1], [0, 0], False, True, None).reshape(shape)
    return input / (div * alpha + k).pow(beta)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    r"""``input / max(||input||_p, eps)``, the ``p``-norm taken over ``dim`` (PyTorch's ``F.normalize``).

    The gradient flows through the clamp as PyTorch's does (zero where the norm
    is below ``eps``). With ``out=``, the result is written there (no gradient).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.normalize(fc.tensor([[3.0, 4.0]])).tolist()
        [[0.6000000238418579, 0.800000011920929]]
    """
    _check_tensor(input, "normalize")
    if not (input.is_floating_point() or input.is_complex()):
        raise TypeError(f"[normalize] expected a floating point or complex input, got {input.dtype}")
    nd = max(input.dim(), 1)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -nd <= dim < nd:
        raise IndexError(
            f"[normalize] Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim}) "
            f"for input of shape {_shape(input)}"
        )
    # (Complex input: the real norm of linalg.vector_norm, as PyTorch's; Tensor.norm takes real input only.)
    norm = (
        fc.linalg.vector_norm(input, p, dim, keepdim=True) if input.is_complex() else input.norm(p, dim, keepdim=True)
    )
    denom = norm.clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    _check_tensor(out, "normalize", "out")
    return fc.div(input, denom, out=out)


def group_norm(
    input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    r"""Normalizes groups of ``C // num_groups`` channels of an ``(N, C, ...)`` input per sample.

    Example (4 channels in 2 groups of 2: each group has mean 0, variance 1):
        >>> import flambeau as fb
        >>> x = fb.arange(8.0).reshape(1, 4, 2)
        >>> y = fb.nn.functional.group_norm(x, 2)
        >>> [round(v, 4) for v in y[0, :2].flatten().tolist()]
        [-1.3416, -0.4472, 0.4472, 1.3416]
    """
    _check_tensor(input, "group_norm")
    if input.dim() < 2:
        raise FlambeauError(
            f"[group_norm] Expected at least 2 dimensions for input tensor but received {input.dim()} "
            f"(shape {_shape(input)})"
        )
    shape = _shape(input)
    n, c = shape[0], shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups <= 0:
        raise FlambeauError(f"[group_norm] num_groups must be a positive int, got {num_groups!r}")
    if c % num_groups != 0:
        raise FlambeauError(
            f"[group_norm] Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {shape} and num_groups={num_groups}"
        )
    _verify_batch_size((n * c // num_groups, num_groups) + shape[2:], "group_norm")
    hxw = 1
    for s in shape[2:]:
        hxw *= s
    return fc.native_group_norm(input, weight, bias, n, c, hxw, num_groups, eps)[0]


def _check_indices(input: Tensor, op: str) -> None:
    if input.dtype not in (fc.int64, fc.int32):
        raise TypeError(f"[{op}] input must hold integer indices (int64 or int32), got dtype {input.dtype}")


def _wrap_padding_idx(padding_idx: int | None, num: int, op: str) -> int:
    if padding_idx is None:
        return -1
    if not -num <= padding_idx < num:
        raise FlambeauError(f"[{op}] Padding_idx must be within num_embeddings: got {padding_idx} for {num} rows")
    return padding_idx + num if padding_idx < 0 else padding_idx


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    r"""Rows of ``weight`` picked by the integer ``input`` (result shape ``input.shape + (embedding_dim,)``).

    No gradient flows to row ``padding_idx``; ``max_norm`` renormalizes the picked
    rows of ``weight`` in place first. An index out of range raises IndexError.

    Example:
        >>> import flambeau_core as fc
        >>> embedding(fc.tensor([1, 0]), fc.tensor([[0.0, 1.0], [2.0, 3.0]])).tolist()
        [[2.0, 3.0], [0.0, 1.0]]
    """
    _check_tensor(input, "embedding")
    _check_tensor(weight, "embedding", "weight")
    _check_indices(input, "embedding")
    if weight.dim() != 2:
        raise FlambeauError(
            f"[embedding] weight must be 2-D (num_embeddings, embedding_dim), got shape {_shape(weight)}"
        )
    padding_idx = _wrap_padding_idx(padding_idx, weight.shape[0], "embedding")
    if max_norm is not None:
        with fa.no_grad():
            fc.embedding_renorm_(weight, input, max_norm, norm_type)
    return fc.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    r"""Sums, means or maxima of bags of embedding rows, without building the gathered rows.

    ``input`` is 1-D with ``offsets`` (bag ``b`` holds ``input[offsets[b]:offsets[b+1]]``),
    or 2-D ``(B, L)`` (``B`` bags of ``L``) with ``offsets=None``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> weight = fc.tensor([[1.0], [2.0], [3.0], [4.0]])
        >>> F.embedding_bag(fc.tensor([0, 2, 1, 3]), weight, fc.tensor([0, 1]), mode="mean").tolist()
        [[1.0], [3.0]]
    """
    _check_tensor(input, "embedding_bag")
    _check_tensor(weight, "embedding_bag", "weight")
    _check_indices(input, "embedding_bag")
    if per_sample_weights is not None and _shape(input) != _shape(per_sample_weights):
        raise FlambeauError(
            f"[embedding_bag] If per_sample_weights ({_shape(per_sample_weights)}) is not None, then it must have "
            f"the same shape as the input ({_shape(input)})"
        )
    if weight.dim() != 2:
        raise FlambeauError(f"[embedding_bag] weight has to be a 2D Tensor, but got shape {_shape(weight)}")
    if input.dim() == 2:
        if offsets is not None:
            raise FlambeauError(
                "[embedding_bag] if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                f"of fixed length sequences. However, found offsets of type {type(offsets).__name__}"
            )
        offsets = fc.arange(0, input.numel(), max(input.shape[1], 1), dtype=input.dtype)
        if input.shape[1] == 0:
            offsets = fc.zeros(input.shape[0], dtype=input.dtype)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise FlambeauError("[embedding_bag] offsets has to be a 1D Tensor but got None")
        _check_tensor(offsets, "embedding_bag", "offsets")
        if offsets.dim() != 1:
            raise FlambeauError(f"[embedding_bag] offsets has to be a 1D Tensor, got shape {_shape(offsets)}")
        if offsets.dtype not in (fc.int64, fc.int32):
            raise TypeError(f"[embedding_bag] offsets must hold integers (int64 or int32), got dtype {offsets.dtype}")
    else:
        raise FlambeauError(f"[embedding_bag] input has to be 1D or 2D Tensor, but got shape {_shape(input)}")
    if mode not in _BAG_MODES:
        raise FlambeauError(f"[embedding_bag] mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max":
        if scale_grad_by_freq:
            raise FlambeauError("[embedding_bag] max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise FlambeauError("[embedding_bag] max mode does not support sparse weights")
    padding_idx = _wrap_padding_idx(padding_idx, weight.shape[0], "embedding_bag")
    if max_norm is not None:
        with fa.no_grad():
            fc.embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "[embedding_bag] per_sample_weights was not None. per_sample_weights is only supported for "
            f"mode='sum' (got mode='{mode}')"
        )
    return fc._embedding_bag(
        weight,
        input,
        offsets,
        scale_grad_by_freq,
        _BAG_MODES[mode],
        sparse,
        per_sample_weights,
        include_last_offset,
        padding_idx,
    )[0]
