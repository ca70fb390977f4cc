"""Folding an eval-mode batch norm into the preceding convolution or linear layer (``torch.nn.utils.fusion``).

``y = bn(conv(x))`` in eval mode is one affine map per output channel, so the
batch norm's scale and shift fold into the conv's weight and bias:
``w' = w * gamma / sqrt(var + eps)``, ``b' = (b - mean) * gamma / sqrt(var + eps) + beta``.
"""

from __future__ import annotations

import copy
from typing import TypeVar

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]

_M = TypeVar("_M", bound=Module)


def _check_eval(a: Module, bn: Module, op: str) -> None:
    if a.training or bn.training:
        raise FlambeauError(f"[{op}] Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise FlambeauError(f"[{op}] the batch norm must track running statistics")


def fuse_conv_bn_eval(conv: _M, bn: Module, transpose: bool = False) -> _M:
    r"""A copy of ``conv`` computing ``bn(conv(x))`` of the eval-mode ``conv`` and ``bn``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> conv, bn = nn.Conv2d(2, 3, 3).eval(), nn.BatchNorm2d(3).eval()
        >>> x = fc.randn(1, 2, 5, 5)
        >>> bool(((fuse_conv_bn_eval(conv, bn)(x) - bn(conv(x))).abs() < 1e-5).all())
        True
    """
    _check_eval(conv, bn, "fuse_conv_bn_eval")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose
    )
    return fused


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    r"""The fused ``(weight, bias)`` Parameters of a convolution followed by an eval-mode batch norm.

    ``transpose=True`` for a transposed convolution (output channels on dim 1).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> conv, bn = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3).eval()
        >>> w, b = nn.utils.fuse_conv_bn_weights(
        ...     conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
        ... )
        >>> w.shape, b.shape
        (flambeau.Size([3, 2, 1, 1]), flambeau.Size([3]))
    """
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = conv_b if conv_b is not None else fc.zeros_like(bn_rm)
    bn_w = bn_w if bn_w is not None else fc.ones_like(bn_rm)
    bn_b = bn_b if bn_b is not None else fc.zeros_like(bn_rm)
    rsqrt = fc.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    fused_w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(w_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(b_dtype)
    return Parameter(fused_w.detach(), conv_w.requires_grad), Parameter(fused_b.detach(), conv_b.requires_grad)


def fuse_linear_bn_eval(linear: _M, bn: Module) -> _M:
    r"""A copy of ``linear`` computing ``bn(linear(x))`` of the eval-mode ``linear`` and ``bn``.

    ``bn.num_features`` must equal ``linear.out_features`` (or be 1).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> linear, bn = nn.Linear(4, 3).eval(), nn.BatchNorm1d(3).eval()
        >>> _ = bn.running_mean.fill_(0.5)
        >>> fused = nn.utils.fuse_linear_bn_eval(linear, bn)
        >>> x = fc.randn(5, 4)
        >>> bool(fc.allclose(fused(x), bn(linear(x)), atol=1e-6))
        True
    """
    _check_eval(linear, bn, "fuse_linear_bn_eval")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise FlambeauError(
            "[fuse_linear_bn_eval] To fuse, linear.out_features == bn.num_features or bn.num_features == 1"
        )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    r"""The fused ``(weight, bias)`` Parameters of a linear layer followed by an eval-mode batch norm.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> w, b = nn.utils.fuse_linear_bn_weights(
        ...     fc.ones(3, 2), fc.zeros(3), fc.zeros(3), fc.full((3,), 4.0), 0.0, fc.ones(3), fc.ones(3)
        ... )
        >>> w.tolist(), b.tolist()
        ([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]], [1.0, 1.0, 1.0])
    """
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = linear_b if linear_b is not None else fc.zeros_like(bn_rm)
    scale = bn_w * fc.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1).to(w_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(fused_w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), linear_b.requires_grad)
