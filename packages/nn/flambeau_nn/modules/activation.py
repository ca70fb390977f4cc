"""Elementwise activations, ``Softmax``/``Softmin``/``Softmax2d``, ``PReLU``, ``RReLU``, ``GLU`` and ``Flatten``."""

from __future__ import annotations

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = [
    "ReLU",
    "Tanh",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "Flatten",
    "GELU",
    "SiLU",
    "Mish",
    "LeakyReLU",
    "ELU",
    "SELU",
    "CELU",
    "Softplus",
    "Hardtanh",
    "ReLU6",
    "Hardswish",
    "Hardsigmoid",
    "LogSigmoid",
    "Softsign",
    "PReLU",
    "GLU",
    "Softmin",
    "Softmax2d",
    "Threshold",
    "Hardshrink",
    "Softshrink",
    "Tanhshrink",
    "RReLU",
]


class ReLU(Module):
    """``max(x, 0)`` (in place with ``inplace=True``).

    Example:
        >>> import flambeau_core as fc
        >>> ReLU()(fc.tensor([-1.0, 1.0])).tolist()
        [0.0, 1.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``max(0, x)`` elementwise to ``input`` (any shape); same shape out (in place when ``inplace``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.ReLU()(x).tolist()]
            [0.0, 0.0, 0.0, 1.0, 3.0]
        """
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, else empty, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ReLU(inplace=True).extra_repr()
            'inplace=True'
        """
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """The hyperbolic tangent, elementwise (see ``F.tanh``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Tanh()(x).tolist()]
        [-0.964, -0.4621, 0.0, 0.7616, 0.9951]
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies the hyperbolic tangent elementwise to ``input`` (any shape); same shape out, in ``(-1, 1)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Tanh()(x).tolist()]
            [-0.964, -0.4621, 0.0, 0.7616, 0.9951]
        """
        return F.tanh(input)


class Sigmoid(Module):
    """The logistic sigmoid, elementwise (see ``F.sigmoid``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Sigmoid()(x).tolist()]
        [0.1192, 0.3775, 0.5, 0.7311, 0.9526]
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``1 / (1 + exp(-x))`` elementwise to ``input`` (any shape); same shape out, in ``(0, 1)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Sigmoid()(x).tolist()]
            [0.1192, 0.3775, 0.5, 0.7311, 0.9526]
        """
        return F.sigmoid(input)


class Softmax(Module):
    """``softmax(x, dim)`` (``dim=None``: PyTorch's implicit dim, with its warning).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Softmax(dim=-1)(fc.zeros(2, 4)).tolist()
        [[0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]]
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Rescales ``input`` (any shape) along ``dim`` to ``exp(x) / sum(exp(x))``, so each slice along ``dim`` is
        positive and sums to 1; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> [round(v, 4) for v in nn.Softmax(dim=1)(fc.tensor([[1.0, 2.0, 3.0]]))[0].tolist()]
            [0.09, 0.2447, 0.6652]
        """
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """The ``dim`` the softmax runs along, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Softmax(dim=1).extra_repr()
            'dim=1'
        """
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log_softmax(x, dim)`` (``dim=None``: PyTorch's implicit dim, with its warning).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.LogSoftmax(dim=1)(fc.randn(3, 5)).exp().sum(dim=1).round().tolist()
        [1.0, 1.0, 1.0]
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x - log(sum(exp(x)))`` along ``dim`` of ``input`` (any shape), computed stably; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> [round(v, 4) for v in nn.LogSoftmax(dim=1)(fc.tensor([[1.0, 2.0, 3.0]]))[0].tolist()]
            [-2.4076, -1.4076, -0.4076]
        """
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """The ``dim`` the log-softmax runs along, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.LogSoftmax(dim=-1).extra_repr()
            'dim=-1'
        """
        return f"dim={self.dim}"


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` into one (default: all but the batch dim).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Flatten(start_dim=2)(fc.zeros(8, 3, 4, 4)).shape
        flambeau.Size([8, 3, 16])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        """Flattens dims ``start_dim`` to ``end_dim`` of ``input`` into one: ``(N, C, H, W)`` gives ``(N, C*H*W)``
        with the defaults.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Flatten()(fc.zeros(2, 3, 4, 5)).shape
            flambeau.Size([2, 60])
            >>> nn.Flatten(0, 1)(fc.zeros(2, 3, 4)).shape
            flambeau.Size([6, 4])
        """
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """``start_dim`` and ``end_dim``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Flatten().extra_repr()
            'start_dim=1, end_dim=-1'
        """
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


def _inplace_str(inplace: bool, first: bool = False) -> str:
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class GELU(Module):
    """``x * Phi(x)``; ``approximate='tanh'`` uses the tanh approximation.

    Example:
        >>> GELU()
        GELU(approximate='none')
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x * Phi(x)`` (``Phi`` the standard normal CDF; its tanh approximation when
        ``approximate='tanh'``) elementwise to ``input`` (any shape); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 2) for v in nn.GELU()(x).tolist()]
            [-0.05, -0.15, 0.0, 0.84, 3.0]
        """
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        """The ``approximate`` mode, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.GELU(approximate='tanh').extra_repr()
            "approximate='tanh'"
        """
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.SiLU()(x).tolist()]
        [-0.2384, -0.1888, 0.0, 0.7311, 2.8577]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x * sigmoid(x)`` (swish) elementwise to ``input`` (any shape); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.SiLU()(x).tolist()]
            [-0.2384, -0.1888, 0.0, 0.7311, 2.8577]
        """
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, else empty, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.SiLU(inplace=True).extra_repr()
            'inplace=True'
        """
        return _inplace_str(self.inplace, first=True)


class Mish(Module):
    """``x * tanh(softplus(x))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Mish()(x).tolist()]
        [-0.2525, -0.2207, 0.0, 0.8651, 2.9865]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x * tanh(softplus(x))`` elementwise to ``input`` (any shape); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Mish()(x).tolist()]
            [-0.2525, -0.2207, 0.0, 0.8651, 2.9865]
        """
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, else empty, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Mish(inplace=True).extra_repr()
            'inplace=True'
        """
        return _inplace_str(self.inplace, first=True)


class LeakyReLU(Module):
    """``x`` where ``x > 0``, else ``negative_slope * x``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.LeakyReLU(0.1)(x).tolist()]
        [-0.2, -0.05, 0.0, 1.0, 3.0]
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x`` for ``x >= 0`` and ``negative_slope * x`` otherwise, elementwise to ``input`` (any shape);
        same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.LeakyReLU(0.1)(x).tolist()]
            [-0.2, -0.05, 0.0, 1.0, 3.0]
        """
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        """``negative_slope`` (and ``inplace`` when set), as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.LeakyReLU(0.2).extra_repr()
            'negative_slope=0.2'
        """
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class ELU(Module):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.ELU()(x).tolist()]
        [-0.8647, -0.3935, 0.0, 1.0, 3.0]
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x`` for ``x > 0`` and ``alpha * (exp(x) - 1)`` otherwise, elementwise to ``input`` (any shape);
        same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.ELU()(x).tolist()]
            [-0.8647, -0.3935, 0.0, 1.0, 3.0]
        """
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        """``alpha`` (and ``inplace`` when set), as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ELU(alpha=0.5).extra_repr()
            'alpha=0.5'
        """
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class SELU(Module):
    """``scale * elu(x, alpha)`` with the self-normalizing constants.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.SELU()(x).tolist()]
        [-1.5202, -0.6918, 0.0, 1.0507, 3.1521]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` (``alpha ~ 1.6733``, ``scale ~ 1.0507``)
        elementwise to ``input`` (any shape); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.SELU()(x).tolist()]
            [-1.5202, -0.6918, 0.0, 1.0507, 3.1521]
        """
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, else empty, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.SELU(inplace=True).extra_repr()
            'inplace=True'
        """
        return _inplace_str(self.inplace, first=True)


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.CELU(alpha=2.0)(x).tolist()]
        [-1.2642, -0.4424, 0.0, 1.0, 3.0]
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` elementwise to ``input`` (any shape); same
        shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.CELU(alpha=2.0)(x).tolist()]
            [-1.2642, -0.4424, 0.0, 1.0, 3.0]
        """
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        """``alpha`` (and ``inplace`` when set), as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.CELU(alpha=2.0).extra_repr()
            'alpha=2.0'
        """
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Softplus()(x).tolist()]
        [0.1269, 0.4741, 0.6931, 1.3133, 3.0486]
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``log(1 + exp(beta * x)) / beta`` elementwise to ``input`` (any shape), and ``x`` itself where
        ``beta * x > threshold``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Softplus()(x).tolist()]
            [0.1269, 0.4741, 0.6931, 1.3133, 3.0486]
        """
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        """``beta`` and ``threshold``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Softplus(beta=2.0).extra_repr()
            'beta=2.0, threshold=20.0'
        """
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Hardtanh()(x).tolist()]
        [-1.0, -0.5, 0.0, 1.0, 1.0]
    """

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> None:
        super().__init__()
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise FlambeauError(
                f"[{type(self).__name__}] max_val ({self.max_val}) must be greater than min_val ({self.min_val})"
            )

    def forward(self, input: Tensor) -> Tensor:
        """Clamps ``input`` (any shape) elementwise to ``[min_val, max_val]``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Hardtanh()(x).tolist()]
            [-1.0, -0.5, 0.0, 1.0, 1.0]
        """
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        """``min_val`` and ``max_val`` (and ``inplace`` when set), as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Hardtanh(-2.0, 2.0).extra_repr()
            'min_val=-2.0, max_val=2.0'
        """
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.ReLU6()(x).tolist()]
        [0.0, 0.0, 0.0, 1.0, 3.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, else empty, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ReLU6(inplace=True).extra_repr()
            'inplace=True'
        """
        return _inplace_str(self.inplace, first=True)


class Hardswish(Module):
    """``x * relu6(x + 3) / 6``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Hardswish()(x).tolist()]
        [-0.3333, -0.2083, 0.0, 0.6667, 3.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x * relu6(x + 3) / 6`` elementwise to ``input`` (any shape); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Hardswish()(x).tolist()]
            [-0.3333, -0.2083, 0.0, 0.6667, 3.0]
        """
        return F.hardswish(input, self.inplace)


class Hardsigmoid(Module):
    """``relu6(x + 3) / 6``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Hardsigmoid()(x).tolist()]
        [0.1667, 0.4167, 0.5, 0.6667, 1.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``relu6(x + 3) / 6`` (0 below -3, 1 above 3, linear between) elementwise to ``input`` (any shape);
        same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Hardsigmoid()(x).tolist()]
            [0.1667, 0.4167, 0.5, 0.6667, 1.0]
        """
        return F.hardsigmoid(input, self.inplace)


class LogSigmoid(Module):
    """``log(sigmoid(x))``, stable for large ``|x|``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.LogSigmoid()(x).tolist()]
        [-2.1269, -0.9741, -0.6931, -0.3133, -0.0486]
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``log(sigmoid(x))`` (computed stably, as ``-softplus(-x)``) elementwise to ``input`` (any shape);
        same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.LogSigmoid()(x).tolist()]
            [-2.1269, -0.9741, -0.6931, -0.3133, -0.0486]
        """
        return F.logsigmoid(input)


class Softsign(Module):
    """``x / (1 + |x|)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Softsign()(x).tolist()]
        [-0.6667, -0.3333, 0.0, 0.5, 0.75]
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x / (1 + |x|)`` elementwise to ``input`` (any shape); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Softsign()(x).tolist()]
            [-0.6667, -0.3333, 0.0, 0.5, 0.75]
        """
        return F.softsign(input)


class PReLU(Module):
    """``x`` where ``x > 0``, else ``weight * x``, with a learnt slope (one, or one per channel).

    Example:
        >>> m = PReLU(3)
        >>> m, tuple(m.weight.shape), round(m.weight[0].item(), 2)
        (PReLU(num_parameters=3), (3,), 0.25)
    """

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device: object = None, dtype: object = None
    ) -> None:
        super().__init__()
        if not isinstance(num_parameters, int) or num_parameters < 1:
            raise FlambeauError(f"[PReLU] num_parameters must be a positive int, got {num_parameters!r}")
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(fc.empty(num_parameters, dtype=dtype if dtype is not None else fc.float32))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fills every slope of ``weight`` with ``init`` (0.25 by default), in place.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.PReLU(num_parameters=2, init=0.1)
            >>> m.reset_parameters()
            >>> [round(v, 4) for v in m.weight.tolist()]
            [0.1, 0.1]
        """
        import flambeau_autograd as fa

        with fa.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``max(0, x) + weight * min(0, x)`` to ``input`` (any shape), with one learned slope shared by all
        channels or one per channel (dim 1); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.PReLU()(x).tolist()]
            [-0.5, -0.125, 0.0, 1.0, 3.0]
        """
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        """``num_parameters``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.PReLU(num_parameters=3).extra_repr()
            'num_parameters=3'
        """
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """``a * sigmoid(b)``, ``a`` and ``b`` the two halves of the input along ``dim``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.GLU(dim=1)(fc.randn(4, 6, 3)).shape
        flambeau.Size([4, 3, 3])
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Splits ``input`` in two halves ``a``, ``b`` along ``dim`` (of even size ``2k``) and returns ``a *
        sigmoid(b)``, of size ``k`` along ``dim``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.GLU()(fc.tensor([[1.0, 2.0, 0.0, 0.0]])).tolist()
            [[0.5, 1.0]]
        """
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        """The ``dim`` the input is split along, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.GLU(dim=1).extra_repr()
            'dim=1'
        """
        return f"dim={self.dim}"


class Softmin(Module):
    """``softmax(-x, dim)`` (see ``F.softmin``).

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in Softmin(dim=0)(fc.tensor([0.0, 1.0])).tolist()]
        [0.7311, 0.2689]
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``softmax(-input)`` along ``dim`` of ``input`` (any shape): the smallest values get the largest
        weights; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> [round(v, 4) for v in nn.Softmin(dim=1)(fc.tensor([[1.0, 2.0, 3.0]]))[0].tolist()]
            [0.6652, 0.2447, 0.09]
        """
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """The ``dim`` the softmin runs along, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Softmin(dim=0).extra_repr()
            'dim=0'
        """
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of a ``(N, C, H, W)`` or ``(C, H, W)`` input, at each pixel.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Softmax2d()(fc.randn(2, 3, 4, 4)).sum(dim=1).round().unique().tolist()
        [1.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies softmax over the channel dim of ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` at each spatial
        location; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Softmax2d()(fc.zeros(1, 4, 2, 2))[0, :, 0, 0].tolist()
            [0.25, 0.25, 0.25, 0.25]
        """
        if input.dim() not in (3, 4):
            raise FlambeauError(f"[Softmax2d] expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``.

    Example:
        >>> import flambeau_core as fc
        >>> Threshold(0.1, 20.0)(fc.tensor([0.0, 1.0])).tolist()
        [20.0, 1.0]
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Keeps the elements of ``input`` (any shape) greater than ``threshold`` and replaces the others with
        ``value``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Threshold(0.5, -1.0)(x).tolist()]
            [-1.0, -1.0, -1.0, 1.0, 3.0]
        """
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        """``threshold`` and ``value`` (and ``inplace`` when set), as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Threshold(0.1, 20.0).extra_repr()
            'threshold=0.1, value=20.0'
        """
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Hardshrink()(x).tolist()]
        [-2.0, 0.0, 0.0, 1.0, 3.0]
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """Keeps the elements of ``input`` (any shape) with ``|x| > lambd`` and zeroes the others; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Hardshrink()(x).tolist()]
            [-2.0, 0.0, 0.0, 1.0, 3.0]
        """
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        """``lambd``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Hardshrink(lambd=1.5).extra_repr()
            '1.5'
        """
        return f"{self.lambd}"


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Softshrink()(x).tolist()]
        [-1.5, -0.0, 0.0, 0.5, 2.5]
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """Shrinks ``input`` (any shape) towards zero by ``lambd``: ``x - lambd`` above ``lambd``, ``x + lambd`` below
        ``-lambd``, 0 between; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Softshrink()(x).tolist()]
            [-1.5, -0.0, 0.0, 0.5, 2.5]
        """
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        """``lambd``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Softshrink(lambd=1.5).extra_repr()
            '1.5'
        """
        return str(self.lambd)


class Tanhshrink(Module):
    """``x - tanh(x)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
        >>> [round(v, 4) for v in nn.Tanhshrink()(x).tolist()]
        [-1.036, -0.0379, 0.0, 0.2384, 2.0049]
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies ``x - tanh(x)`` elementwise to ``input`` (any shape); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
            >>> [round(v, 4) for v in nn.Tanhshrink()(x).tolist()]
            [-1.036, -0.0379, 0.0, 0.2384, 2.0049]
        """
        return F.tanhshrink(input)


class RReLU(Module):
    """Randomized leaky ReLU: random negative slopes in ``[lower, upper]`` in training, their mean in eval.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in RReLU(0.1, 0.3).eval()(fc.tensor([-1.0, 2.0])).tolist()]
        [-0.2, 2.0]
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies the leaky ReLU to ``input`` (any shape) with, in training, a slope drawn from ``U(lower, upper)``
        for each negative element, and in eval the fixed slope ``(lower + upper) / 2``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> fc.manual_seed(0)
            >>> y = nn.RReLU(0.1, 0.3)(-fc.ones(1000))
            >>> bool(((y >= -0.3) & (y <= -0.1)).all())
            True
        """
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        """``lower`` and ``upper`` (and ``inplace`` when set), as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.RReLU(0.1, 0.3).extra_repr()
            'lower=0.1, upper=0.3'
        """
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"
