"""``Size``: the tuple subclass PyTorch names sizes with (``torch.Size``).

``Tensor.shape`` and ``Tensor.size()`` return one. It is a C type (bind_size.cpp, Note [Size is a C type]),
a tuple whose slicing and ``+``/``*`` with a tuple keep the type; it compares equal to the plain tuple of
the same ints, hashes alike, and is accepted wherever a shape is.

Example:
    >>> import flambeau_core as fc
    >>> s = fc.Size([2, 3])
    >>> s.numel(), s == (2, 3), fc.zeros(s).shape
    (6, True, flambeau.Size([2, 3]))
"""

from __future__ import annotations

from flambeau_core._C import Size

__all__ = ["Size"]
