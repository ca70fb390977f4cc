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
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    r"""Zeroes whole channels (``input[n, c]``) of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    r"""Zeroes whole channels (``input[n, c]``) of an ``(N, C, H, W)`` input with probability ``p``.

    The kept channels are scaled by ``1/(1-p)``; one kernel draws the channel mask and scales.
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    r"""Zeroes whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    r"""Dropout that keeps the mean and variance of SELU activations (see ``F.alpha_dropout``); eval: identity.

    Example:
        >>> import flambeau_core as fc
        >>> AlphaDropout(0.2).eval()(fc.ones(2)).tolist()
        [1.0, 1.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(Dropout):
    r"""``AlphaDropout`` of whole channels (see ``F.feature_alpha_dropout``)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
