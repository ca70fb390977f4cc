"""``BatchNorm1d``, ``BatchNorm2d``, ``BatchNorm3d``, ``SyncBatchNorm`` (and their shared base ``_NormBase``)."""

from __future__ import annotations

import sys
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


def _check_count(value: object, name: str, layer: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FlambeauError(f"[{layer}] {name} must be a non-negative int, got {value!r}")


class _NormBase(Module):
    """Parameters and running statistics shared by the batch and instance norms (PyTorch's ``_NormBase``).

    Parameters ``weight`` (ones) and ``bias`` (zeros; none with ``bias=False``) when ``affine``; buffers
    ``running_mean`` (zeros), ``running_var`` (ones) and ``num_batches_tracked``
    (int64 0) when ``track_running_stats``, so ``state_dict`` keys match PyTorch's.
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        _check_count(num_features, "num_features", type(self).__name__)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        dtype = dtype if dtype is not None else fc.float32
        if affine:
            self.weight = Parameter(fc.empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(fc.empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", fc.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", fc.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", fc.tensor(0, dtype=fc.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Resets ``running_mean`` to zeros, ``running_var`` to ones and ``num_batches_tracked`` to 0 (when
        ``track_running_stats``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> bn = nn.BatchNorm1d(2)
            >>> _ = bn(fc.tensor([[1.0, 5.0], [3.0, 7.0]]))
            >>> bn.reset_running_stats()
            >>> bn.running_mean.tolist(), bn.running_var.tolist(), bn.num_batches_tracked.item()
            ([0.0, 0.0], [1.0, 1.0], 0)
        """
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Resets the running statistics and sets ``weight`` to ones and ``bias`` to zeros (when ``affine``).

        Example:
            >>> import flambeau_nn as nn
            >>> bn = nn.BatchNorm2d(2)
            >>> bn.reset_parameters()
            >>> bn.weight.tolist(), bn.bias.tolist()
            ([1.0, 1.0], [0.0, 0.0])
        """
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        """``num_features`` and the options (``bias`` among them, as in PyTorch 2.13), as shown in ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.BatchNorm1d(3).extra_repr()
            '3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True'
        """
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        """Normalises each channel ``C`` of ``input`` ``(N, C, *)`` with the batch's statistics (training, or no
        running statistics) or the running ones (eval), then applies ``weight`` and ``bias``; same shape out.

        In training the running statistics are updated with ``momentum`` (a cumulative average when it is None), using
        the unbiased batch variance.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> bn = nn.BatchNorm1d(2)
            >>> y = bn(fc.tensor([[1.0, 5.0], [3.0, 7.0]]))
            >>> [[round(v, 3) for v in row] for row in y.tolist()]
            [[-1.0, -1.0], [1.0, 1.0]]
            >>> [round(v, 4) for v in bn.running_mean.tolist()]
            [0.2, 0.6]
        """
        if not is_tensor_like(input):
            raise TypeError(f"[{type(self).__name__}] input must be a Tensor, got {type(input).__name__}")
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise FlambeauError(
                f"[{type(self).__name__}] expected input with {self.num_features} channels (num_features) in dim 1, "
                f"got input of shape {tuple(input.shape)}"
            )
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            # momentum=None: a cumulative moving average (1 / number of batches seen).
            factor = 1.0 / float(self.num_batches_tracked.item()) if self.momentum is None else self.momentum
        # Batch statistics in training, and in eval when there are no running statistics.
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if use_running else None,
            self.running_var if use_running else None,
            self.weight,
            self.bias,
            bn_training,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    r"""Batch normalization of an ``(N, C)`` or ``(N, C, L)`` input over ``N`` (and ``L``), per channel.

    Example:
        >>> import flambeau_core as fc
        >>> BatchNorm1d(3)(fc.randn(4, 3)).shape
        flambeau.Size([4, 3])
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (2, 3):
            raise FlambeauError(
                f"[BatchNorm1d] expected 2D or 3D input (got {input.dim()}D input of shape {tuple(input.shape)})"
            )


class BatchNorm2d(_BatchNorm):
    r"""Batch normalization of an ``(N, C, H, W)`` input over ``N, H, W``, per channel.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.BatchNorm2d(16)(fc.randn(4, 16, 8, 8)).shape
        flambeau.Size([4, 16, 8, 8])
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise FlambeauError(
                f"[BatchNorm2d] expected 4D input (got {input.dim()}D input of shape {tuple(input.shape)})"
            )


class BatchNorm3d(_BatchNorm):
    r"""Batch normalization of an ``(N, C, D, H, W)`` input over ``N, D, H, W``, per channel.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.BatchNorm3d(4)(fc.randn(2, 4, 3, 5, 5)).shape
        flambeau.Size([2, 4, 3, 5, 5])
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise FlambeauError(
                f"[BatchNorm3d] expected 5D input (got {input.dim()}D input of shape {tuple(input.shape)})"
            )


class SyncBatchNorm(_BatchNorm):
    r"""Batch normalization whose statistics would be reduced over a process group (PyTorch's ``SyncBatchNorm``).

    Within one process (no ``flambeau.distributed`` process group of more than one rank) it is exactly
    ``BatchNorm`` over an ``(N, C, *)`` input, as PyTorch's is there. Synchronizing the statistics across
    ranks is not implemented: training with an initialized multi-rank group raises instead of silently
    normalizing per rank. ``convert_sync_batchnorm`` swaps a model's ``BatchNorm*d`` layers for it.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)))
        >>> type(model[1]).__name__, model(fc.randn(2, 3, 5, 5)).shape
        ('SyncBatchNorm', flambeau.Size([2, 4, 3, 3]))
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise FlambeauError(f"[SyncBatchNorm] expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        """Normalises ``input`` ``(N, C, *)`` as ``BatchNorm`` does; same shape out.

        Note: flambeau does not synchronise the batch statistics across ranks: in training under an initialised
        process group of more than one rank it raises ``NotImplementedError``; in a single process it is a plain batch
        norm.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.SyncBatchNorm(3)(fc.randn(4, 3, 2, 2)).shape
            flambeau.Size([4, 3, 2, 2])
        """
        if self.training:
            # A loaded distributed package is asked (never imported here: it depends on nn).
            dist = sys.modules.get("flambeau_distributed")
            if dist is not None and dist.is_initialized() and dist.get_world_size(self.process_group) > 1:
                raise NotImplementedError(
                    "[SyncBatchNorm] synchronizing batch statistics across ranks is not implemented; use "
                    "BatchNorm (per-rank statistics) or GroupNorm"
                )
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """Returns ``module`` with every ``BatchNorm1d/2d/3d`` replaced by a ``SyncBatchNorm`` sharing its state.

        Example:
            >>> import flambeau_nn as nn
            >>> net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
            >>> type(nn.SyncBatchNorm.convert_sync_batchnorm(net)[1]).__name__
            'SyncBatchNorm'
        """
        out = module
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d)):
            out = cls(
                module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                process_group,
            )  # fmt: skip
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
