"""``InstanceNorm1d``, ``InstanceNorm2d``, ``InstanceNorm3d``."""

from __future__ import annotations

import warnings
from typing import Any

from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

from flambeau_nn import functional as F
from flambeau_nn.modules.batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _batched_dim = 0  # the input's dims with a batch dim

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        """Normalises each channel of each sample of ``input`` ``(N, C, *spatial)`` (or unbatched ``(C, *spatial)``)
        over its spatial dims, then applies the per-channel ``weight`` and ``bias`` when ``affine``; same shape out.

        With ``track_running_stats`` the running statistics are updated in training and used in eval.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> y = nn.InstanceNorm1d(2)(fc.tensor([[[1.0, 2.0, 3.0], [10.0, 10.0, 40.0]]]))
            >>> [[round(v, 3) for v in row] for row in y[0].tolist()]
            [[-1.225, 0.0, 1.225], [-0.707, -0.707, 1.414]]
        """
        name = type(self).__name__
        if not is_tensor_like(input):
            raise TypeError(f"[{name}] input must be a Tensor, got {type(input).__name__}")
        nb = self._batched_dim
        if input.dim() not in (nb - 1, nb):
            raise FlambeauError(
                f"[{name}] expected {nb - 1}D or {nb}D input (got {input.dim()}D input of shape {tuple(input.shape)})"
            )
        feature_dim = input.dim() - (nb - 1)
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise FlambeauError(
                    f"[{name}] expected input's size at dim={feature_dim} to match num_features "
                    f"({self.num_features}), but got: {input.shape[feature_dim]} (input shape {tuple(input.shape)})."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence this warning by "
                "not passing in num_features, which is not used because affine=False",
                stacklevel=2,
            )
        unbatched = input.dim() == nb - 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    r"""Instance normalization of an ``(N, C, L)`` or ``(C, L)`` input (per sample and channel).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.InstanceNorm1d(100, affine=True)(fc.randn(20, 100, 40)).shape
        flambeau.Size([20, 100, 40])
    """

    _batched_dim = 3


class InstanceNorm2d(_InstanceNorm):
    r"""Instance normalization of an ``(N, C, H, W)`` or ``(C, H, W)`` input (per sample and channel).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> y = nn.InstanceNorm2d(3)(fc.randn(2, 3, 8, 8))
        >>> [round(v, 4) for v in y.mean(dim=(2, 3)).abs().amax().reshape(1).tolist()]
        [0.0]
    """

    _batched_dim = 4


class InstanceNorm3d(_InstanceNorm):
    r"""Instance normalization of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.InstanceNorm3d(4, track_running_stats=True)(fc.randn(2, 4, 3, 5, 5)).shape
        flambeau.Size([2, 4, 3, 5, 5])
    """

    _batched_dim = 5
