"""Pooling layers: ``MaxPool``, ``AvgPool``, ``AdaptiveAvgPool``, ``AdaptiveMaxPool``, ``LPPool``, ``MaxUnpool``
(1d, 2d, 3d) and ``FractionalMaxPool2d/3d``."""

from __future__ import annotations

from typing import Any

from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module

__all__ = [
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
]


def _single(v: Any) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


class _MaxPoolNd(Module):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        """``kernel_size``, ``stride``, ``padding``, ``dilation`` and ``ceil_mode``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.MaxPool2d(3, stride=2).extra_repr()
            'kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False'
        """
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over ``(N, C, L)`` or ``(C, L)`` inputs (see ``F.max_pool1d``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.MaxPool1d(3, stride=2)(fc.ones(20, 16, 50)).shape
        flambeau.Size([20, 16, 24])
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of each ``kernel_size`` window of ``input`` ``(N, C, L)`` or ``(C, L)``, giving ``(N, C,
        L_out)`` (with the flat argmax indices as a second tensor when ``return_indices``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]])
            >>> nn.MaxPool1d(2)(x).tolist()
            [[[3.0, 5.0, 4.0]]]
            >>> nn.MaxPool1d(2, return_indices=True)(x)[1].tolist()
            [[[1, 3, 4]]]
        """
        return F.max_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over ``(N, C, H, W)`` or ``(C, H, W)`` inputs (see ``F.max_pool2d``).

    Example:
        >>> import flambeau_core as fc
        >>> MaxPool2d(2)(fc.ones(1, 3, 8, 8)).shape
        flambeau.Size([1, 3, 4, 4])
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of each ``kernel_size`` window of ``input`` ``(N, C, H, W)`` or ``(C, H, W)``, giving ``(N, C,
        H_out, W_out)`` (and the argmax indices, flat over ``H*W``, when ``return_indices``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.MaxPool2d(2)(fc.arange(16.0).reshape(1, 1, 4, 4)).tolist()
            [[[[5.0, 7.0], [13.0, 15.0]]]]
        """
        return F.max_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs (see ``F.max_pool3d``).

    Example:
        >>> import flambeau_core as fc
        >>> MaxPool3d(2)(fc.ones(1, 3, 4, 4, 4)).shape
        flambeau.Size([1, 3, 2, 2, 2])
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of each ``kernel_size`` window of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)``, giving
        ``(N, C, D_out, H_out, W_out)`` (and the argmax indices when ``return_indices``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.MaxPool3d(2)(fc.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()
            [7.0]
        """
        return F.max_pool3d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )


class AvgPool1d(Module):
    """1-D average pooling over ``(N, C, L)`` or ``(C, L)`` inputs (see ``F.avg_pool1d``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]])
        >>> [round(v, 4) for v in nn.AvgPool1d(3, stride=1, padding=1, count_include_pad=False)(x)[0, 0].tolist()]
        [2.0, 2.0, 3.3333, 3.6667, 3.0, 2.0]
    """

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each ``kernel_size`` window of ``input`` ``(N, C, L)`` or ``(C, L)``, giving ``(N, C, L_out)``;
        ``count_include_pad=False`` leaves the zero padding out of the divisor.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AvgPool1d(2)(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]])).tolist()
            [[[2.0, 3.5, 2.0]]]
        """
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        """``kernel_size``, ``stride`` and ``padding`` (stored as 1-tuples, as PyTorch does), as shown inside
        ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.AvgPool1d(3, stride=2).extra_repr()
            'kernel_size=(3,), stride=(2,), padding=(0,)'
        """
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """2-D average pooling over ``(N, C, H, W)`` or ``(C, H, W)`` inputs (see ``F.avg_pool2d``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.AvgPool2d((3, 2), stride=(2, 1))(fc.ones(20, 16, 50, 32)).shape
        flambeau.Size([20, 16, 24, 31])
    """

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each ``kernel_size`` window of ``input`` ``(N, C, H, W)`` or ``(C, H, W)``, giving ``(N, C,
        H_out, W_out)``; ``divisor_override`` replaces the window size as the divisor.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AvgPool2d(2)(fc.arange(16.0).reshape(1, 1, 4, 4)).tolist()
            [[[[2.5, 4.5], [10.5, 12.5]]]]
        """
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        """``kernel_size``, ``stride`` and ``padding``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.AvgPool2d(2).extra_repr()
            'kernel_size=2, stride=2, padding=0'
        """
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """3-D average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs (see ``F.avg_pool3d``).

    Example:
        >>> import flambeau_core as fc
        >>> AvgPool3d(2, stride=1)(fc.ones(1, 2, 3, 3, 3)).shape
        flambeau.Size([1, 2, 2, 2, 2])
    """

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each ``kernel_size`` window of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)``, giving ``(N,
        C, D_out, H_out, W_out)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AvgPool3d(2)(fc.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()
            [3.5]
        """
        return F.avg_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class _AdaptivePoolNd(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        """The target ``output_size``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.AdaptiveAvgPool2d((5, 7)).extra_repr()
            'output_size=(5, 7)'
        """
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Averages ``L`` into ``output_size`` adaptive windows.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.AdaptiveAvgPool1d(5)(fc.ones(1, 64, 8)).shape
        flambeau.Size([1, 64, 5])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Averages ``input`` ``(N, C, L)`` or ``(C, L)`` over ``output_size`` windows (window ``i`` spans
        ``floor(i*L/out)`` to ``ceil((i+1)*L/out)``), giving ``(N, C, output_size)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AdaptiveAvgPool1d(4)(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]])).tolist()
            [[[2.0, 2.5, 4.5, 2.0]]]
        """
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Averages ``(H, W)`` into ``output_size`` adaptive windows (``None`` keeps that input size).

    Example:
        >>> import flambeau_core as fc
        >>> AdaptiveAvgPool2d(1)(fc.ones(2, 3, 5, 7)).shape
        flambeau.Size([2, 3, 1, 1])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Averages ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` over adaptive windows, giving ``(N, C, *output_size)``
        (a ``None`` entry keeps that input size).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AdaptiveAvgPool2d((2, None))(fc.ones(1, 64, 8, 9)).shape
            flambeau.Size([1, 64, 2, 9])
        """
        return F.adaptive_avg_pool2d(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Maxima over ``output_size`` adaptive windows of ``L`` (and their indices if ``return_indices``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> out, idx = nn.AdaptiveMaxPool1d(5, return_indices=True)(fc.randn(1, 64, 8))
        >>> out.shape, idx.shape
        (flambeau.Size([1, 64, 5]), flambeau.Size([1, 64, 5]))
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of ``input`` ``(N, C, L)`` or ``(C, L)`` over ``output_size`` adaptive windows, giving ``(N, C,
        output_size)`` (and the argmax indices when ``return_indices``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AdaptiveMaxPool1d(4)(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]])).tolist()
            [[[3.0, 3.0, 5.0, 4.0]]]
        """
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Maxima over the adaptive windows of ``(H, W)`` (and their indices if ``return_indices``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.AdaptiveMaxPool2d((5, 7))(fc.randn(1, 64, 8, 9)).shape
        flambeau.Size([1, 64, 5, 7])
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` over adaptive windows, giving ``(N, C,
        *output_size)`` (and the argmax indices, flat over ``H*W``, when ``return_indices``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AdaptiveMaxPool2d((1, 2))(fc.arange(16.0).reshape(1, 1, 4, 4)).tolist()
            [[[[13.0, 15.0]]]]
        """
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Averages ``(D, H, W)`` into ``output_size`` adaptive windows (``None`` keeps that input size).

    Example:
        >>> import flambeau_core as fc
        >>> AdaptiveAvgPool3d((1, 2, None))(fc.ones(2, 3, 4, 5, 6)).shape
        flambeau.Size([2, 3, 1, 2, 6])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Averages ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)`` over adaptive windows, giving ``(N, C,
        *output_size)`` (a ``None`` entry keeps that input size).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AdaptiveAvgPool3d(1)(fc.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()
            [3.5]
        """
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Maxima over the adaptive windows of ``(D, H, W)`` (and their indices if ``return_indices``).

    Example:
        >>> import flambeau_core as fc
        >>> AdaptiveMaxPool3d(2)(fc.ones(1, 3, 4, 5, 6)).shape
        flambeau.Size([1, 3, 2, 2, 2])
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)`` over adaptive windows, giving ``(N, C,
        *output_size)`` (and the argmax indices when ``return_indices``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.AdaptiveMaxPool3d(1)(fc.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()
            [7.0]
        """
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        """``norm_type``, ``kernel_size``, ``stride`` and ``ceil_mode``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.LPPool1d(2, 3).extra_repr()
            'norm_type=2, kernel_size=3, stride=None, ceil_mode=False'
        """
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum x**p) ** (1/p)`` over windows of ``L`` (see ``F.lp_pool1d``).

    Example:
        >>> import flambeau_core as fc
        >>> LPPool1d(2, 2)(fc.tensor([[[3.0, 4.0]]])).tolist()
        [[[5.0]]]
    """

    def forward(self, input: Tensor) -> Tensor:
        """The ``p``-norm ``(sum of x ** p) ** (1/p)`` (``p = norm_type``) of each window of ``input`` ``(N, C, L)``
        or ``(C, L)``, giving ``(N, C, L_out)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> y = nn.LPPool1d(2, 2)(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]]))
            >>> [round(v, 4) for v in y.flatten().tolist()]
            [3.1623, 5.3852, 4.0]
        """
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over ``(H, W)`` windows (see ``F.lp_pool2d``).

    Example:
        >>> import flambeau_core as fc
        >>> LPPool2d(2, 2)(fc.ones(1, 1, 4, 4)).shape
        flambeau.Size([1, 1, 2, 2])
    """

    def forward(self, input: Tensor) -> Tensor:
        """The ``p``-norm (``p = norm_type``) of each window of ``input`` ``(N, C, H, W)`` or ``(C, H, W)``, giving
        ``(N, C, H_out, W_out)``; ``p = 1`` is sum pooling.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.LPPool2d(1, 2)(fc.arange(16.0).reshape(1, 1, 4, 4)).tolist()
            [[[[10.0, 18.0], [42.0, 50.0]]]]
        """
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over ``(D, H, W)`` windows (see ``F.lp_pool3d``).

    Example:
        >>> import flambeau_core as fc
        >>> LPPool3d(1, 2)(fc.ones(1, 1, 2, 2, 2)).tolist()
        [[[[[8.0]]]]]
    """

    def forward(self, input: Tensor) -> Tensor:
        """The ``p``-norm (``p = norm_type``) of each window of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)``,
        giving ``(N, C, D_out, H_out, W_out)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.LPPool3d(1, 2)(fc.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()
            [28.0]
        """
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class _MaxUnpoolNd(Module):
    _fn: Any = None
    _n = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()

        def ntuple(v: Any) -> tuple:  # PyTorch stores these as n-tuples (its repr shows them so)
            return tuple(v) if isinstance(v, (tuple, list)) else (v,) * self._n

        self.kernel_size = ntuple(kernel_size)
        self.stride = ntuple(stride if stride is not None else kernel_size)
        self.padding = ntuple(padding)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """Scatters ``input`` (a max pool's output) back to ``indices`` (its ``return_indices``) in a zero tensor of
        the pool's input size, or of ``output_size`` when given.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> out, idx = nn.MaxPool1d(2, return_indices=True)(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]]))
            >>> nn.MaxUnpool1d(2)(out, idx).tolist()
            [[[0.0, 3.0, 0.0, 5.0, 4.0, 0.0]]]
        """
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        """``kernel_size``, ``stride`` and ``padding`` as tuples, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.MaxUnpool1d(2).extra_repr()
            'kernel_size=(2,), stride=(2,), padding=(0,)'
        """
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool1d``: values back at their indices, zeros elsewhere.

    Example:
        >>> import flambeau_core as fc
        >>> out, idx = MaxPool1d(2, return_indices=True)(fc.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
        >>> MaxUnpool1d(2)(out, idx).tolist()
        [[[0.0, 3.0, 2.0, 0.0]]]
    """

    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool2d`` (``output_size`` picks among the possible input sizes).

    Example:
        >>> import flambeau_core as fc
        >>> out, idx = MaxPool2d(2, return_indices=True)(fc.randn(1, 1, 4, 4))
        >>> MaxUnpool2d(2)(out, idx).shape
        flambeau.Size([1, 1, 4, 4])
    """

    _fn = staticmethod(F.max_unpool2d)
    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool3d``.

    Example:
        >>> import flambeau_core as fc
        >>> out, idx = MaxPool3d(2, return_indices=True)(fc.randn(1, 1, 4, 4, 4))
        >>> MaxUnpool3d(2)(out, idx).shape
        flambeau.Size([1, 1, 4, 4, 4])
    """

    _fn = staticmethod(F.max_unpool3d)
    _n = 3


class _FractionalMaxPoolNd(Module):
    _n = 2
    _fn: Any = None

    def __init__(
        self,
        kernel_size: Any,
        output_size: Any = None,
        output_ratio: Any = None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = kernel_size
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = output_size
        self.output_ratio = output_ratio
        if output_size is None and output_ratio is None:
            raise FlambeauError(f"[{name}] requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise FlambeauError(f"[{name}] only one of output_size and output_ratio may be specified")
        if output_ratio is not None:
            ratios = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * self._n
            if not all(0 < r < 1 for r in ratios):
                raise FlambeauError(f"[{name}] output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:
        """The maximum of ``input`` ``(N, C, *spatial)`` or ``(C, *spatial)`` over pseudo-randomly placed
        ``kernel_size`` windows, giving ``output_size`` (or ``output_ratio`` times the input size) spatially, and the
        argmax indices when ``return_indices``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> fc.manual_seed(0)
            >>> nn.FractionalMaxPool2d(3, output_ratio=0.5)(fc.randn(2, 4, 10, 12)).shape
            flambeau.Size([2, 4, 5, 6])
        """
        return type(self)._fn(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over pseudo-random ``kernel_size`` windows that shrink ``(H, W)`` by a fractional ratio.

    Example:
        >>> import flambeau_core as fc
        >>> FractionalMaxPool2d(2, output_ratio=0.5)(fc.randn(1, 3, 10, 10)).shape
        flambeau.Size([1, 3, 5, 5])
    """

    _n = 2
    _fn = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Max pooling over pseudo-random ``kernel_size`` windows that shrink ``(D, H, W)`` fractionally.

    Example:
        >>> import flambeau_core as fc
        >>> FractionalMaxPool3d(2, output_size=(3, 4, 5))(fc.randn(1, 2, 6, 8, 9)).shape
        flambeau.Size([1, 2, 3, 4, 5])
    """

    _n = 3
    _fn = staticmethod(F.fractional_max_pool3d)
