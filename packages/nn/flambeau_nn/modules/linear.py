"""``Linear``, ``Bilinear`` and ``Identity``."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core._C import linear as _linear

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["Linear", "Bilinear", "Identity"]


class Identity(Module):
    """Returns its input unchanged (a placeholder; arguments are ignored).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Identity(54, unused="ignored")(fc.zeros(4, 2)).shape
        flambeau.Size([4, 2])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``input`` itself, of any shape (no copy is made).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.ones(2, 3)
            >>> nn.Identity()(x) is x
            True
        """
        return input


class Linear(Module):
    r"""``y = x @ weight.T + bias``.

    ``weight`` is ``(out_features, in_features)``, initialised like PyTorch
    (``kaiming_uniform_(a=sqrt(5))``, i.e. ``U(-1/sqrt(in), 1/sqrt(in))``), and
    ``bias`` is ``(out_features,)`` from the same range.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Linear(3, 2)(fc.ones(5, 3)).shape
        flambeau.Size([5, 2])
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise FlambeauError(f"[Linear] {name} must be a non-negative int, got {v!r}")
        self.in_features = in_features
        self.out_features = out_features
        dtype = dtype if dtype is not None else fc.float32
        self.weight = Parameter(fc.empty(out_features, in_features, dtype=dtype))
        if bias:
            self.bias = Parameter(fc.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws ``weight`` from ``kaiming_uniform_(a=sqrt(5))`` and ``bias`` from ``U(-1/sqrt(in_features),
        1/sqrt(in_features))``, in place.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.Linear(4, 2)
            >>> m.reset_parameters()
            >>> bool((m.bias.abs() <= 0.5).all())
            True
        """
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        # The parameters straight from _parameters: attribute access would go
        # through Module.__getattr__ (a Python-level miss) twice per call.
        """Applies ``input @ weight.T + bias`` to ``input`` of shape ``(*, in_features)``, giving ``(*,
        out_features)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Linear(3, 2)(fc.ones(4, 5, 3)).shape
            flambeau.Size([4, 5, 2])
        """
        params = self._parameters
        weight = params.get("weight")
        if weight is None or "bias" not in params:
            # Reparametrized (weight_norm, spectral_norm, prune, parametrize): the tensors are attributes.
            return _linear(input, self.weight, self.bias)
        return _linear(input, weight, params["bias"])

    def extra_repr(self) -> str:
        """The sizes and whether there is a bias, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Linear(3, 2, bias=False).extra_repr()
            'in_features=3, out_features=2, bias=False'
        """
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    r"""``y = x1^T A x2 + b``: weight ``(out_features, in1_features, in2_features)``, bias ``(out_features,)``.

    Both initialised like PyTorch, ``U(-1/sqrt(in1_features), 1/sqrt(in1_features))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Bilinear(3, 4, 5)(fc.ones(2, 3), fc.ones(2, 4)).shape
        flambeau.Size([2, 5])
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for name, v in (("in1_features", in1_features), ("in2_features", in2_features), ("out_features", out_features)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise FlambeauError(f"[Bilinear] {name} must be a non-negative int, got {v!r}")
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        dtype = dtype if dtype is not None else fc.float32
        self.weight = Parameter(fc.empty(out_features, in1_features, in2_features, dtype=dtype))
        if bias:
            self.bias = Parameter(fc.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws ``weight`` and ``bias`` from ``U(-1/sqrt(in1_features), 1/sqrt(in1_features))``, in place.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.Bilinear(4, 2, 3)
            >>> m.reset_parameters()
            >>> bool((m.weight.abs() <= 0.5).all())
            True
        """
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """Applies ``input1^T A input2 + b`` to ``input1`` ``(*, in1_features)`` and ``input2`` ``(*, in2_features)``,
        giving ``(*, out_features)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Bilinear(3, 4, 5)(fc.ones(6, 3), fc.ones(6, 4)).shape
            flambeau.Size([6, 5])
        """
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        """The three feature sizes and whether there is a bias, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Bilinear(3, 4, 5).extra_repr()
            'in1_features=3, in2_features=4, out_features=5, bias=True'
        """
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
