"""``Dropout``, ``Dropout1d``, ``Dropout2d``, ``Dropout3d``, ``AlphaDropout``, ``FeatureAlphaDropout``."""

from __future__ import annotations

from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class Dropout(Module):
    r"""In training mode, zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)``.

    In eval mode it returns its input.

    Example:
        >>> import flambeau_core as fc
        >>> Dropout(0.5).eval()(fc.ones(3)).tolist()
        [1.0, 1.0, 1.0]
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise FlambeauError(f"[{type(self).__name__}] dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """In training mode zeroes each element of ``input`` (any shape) with probability ``p`` and scales the rest by
        ``1/(1-p)``; in eval mode returns ``input`` unchanged.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> fc.manual_seed(0)
            >>> y = nn.Dropout(p=0.5)(fc.ones(1000))
            >>> sorted(set(y.tolist()))
            [0.0, 2.0]
            >>> nn.Dropout(p=0.5).eval()(fc.ones(3)).tolist()
            [1.0, 1.0, 1.0]
        """
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        """The drop probability and ``inplace`` flag, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Dropout(0.2).extra_repr()
            'p=0.2, inplace=False'
        """
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    r"""Zeroes whole channels (``input[n, c]``) of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Dropout1d(p=0.2)(fc.ones(4, 16, 32)).shape
        flambeau.Size([4, 16, 32])
    """

    def forward(self, input: Tensor) -> Tensor:
        """In training mode zeroes whole channels of ``input`` ``(N, C, L)`` or ``(C, L)`` with probability ``p`` and
        scales the kept ones by ``1/(1-p)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> fc.manual_seed(0)
            >>> y = nn.Dropout1d(p=0.5)(fc.ones(2, 8, 5))
            >>> bool((y.amax(dim=2) == y.amin(dim=2)).all())  # each channel all kept or all dropped
            True
        """
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    r"""Zeroes whole channels (``input[n, c]``) of an ``(N, C, H, W)`` input with probability ``p``.

    The kept channels are scaled by ``1/(1-p)``; one kernel draws the channel mask and scales.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Dropout2d(p=0.2)(fc.ones(4, 16, 8, 8)).shape
        flambeau.Size([4, 16, 8, 8])
    """

    def forward(self, input: Tensor) -> Tensor:
        """In training mode zeroes whole channels (feature maps) of ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` with
        probability ``p`` and scales the kept ones by ``1/(1-p)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> fc.manual_seed(0)
            >>> y = nn.Dropout2d(p=0.5)(fc.ones(2, 8, 3, 3)).flatten(2)
            >>> bool((y.amax(dim=2) == y.amin(dim=2)).all())
            True
        """
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    r"""Zeroes whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Dropout3d(p=0.2)(fc.ones(2, 4, 3, 8, 8)).shape
        flambeau.Size([2, 4, 3, 8, 8])
    """

    def forward(self, input: Tensor) -> Tensor:
        """In training mode zeroes whole channels of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with
        probability ``p`` and scales the kept ones by ``1/(1-p)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> fc.manual_seed(0)
            >>> y = nn.Dropout3d(p=0.5)(fc.ones(2, 8, 2, 2, 2)).flatten(2)
            >>> bool((y.amax(dim=2) == y.amin(dim=2)).all())
            True
        """
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    r"""Dropout that keeps the mean and variance of SELU activations (see ``F.alpha_dropout``); eval: identity.

    Example:
        >>> import flambeau_core as fc
        >>> AlphaDropout(0.2).eval()(fc.ones(2)).tolist()
        [1.0, 1.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        """In training mode applies alpha dropout to ``input`` (any shape): dropped elements take SELU's negative
        saturation value and the result is rescaled so that a zero-mean, unit-variance input keeps its mean and
        variance.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> fc.manual_seed(0)
            >>> y = nn.AlphaDropout(p=0.2)(fc.randn(100000))
            >>> round(y.mean().item(), 1), round(y.std().item(), 1)
            (0.0, 1.0)
        """
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(Dropout):
    r"""``AlphaDropout`` of whole channels (see ``F.feature_alpha_dropout``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.FeatureAlphaDropout(p=0.2)(fc.randn(4, 16, 8, 8)).shape
        flambeau.Size([4, 16, 8, 8])
    """

    def forward(self, input: Tensor) -> Tensor:
        """In training mode applies alpha dropout to whole channels of ``input`` ``(N, C, *)``: each dropped channel
        takes SELU's negative saturation value, then the result is rescaled to keep a zero-mean, unit-variance input's
        statistics.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> fc.manual_seed(0)
            >>> y = nn.FeatureAlphaDropout(p=0.5)(fc.zeros(2, 6, 4))
            >>> bool((y.amax(dim=2) == y.amin(dim=2)).all())
            True
        """
        return F.feature_alpha_dropout(input, self.p, self.training)
