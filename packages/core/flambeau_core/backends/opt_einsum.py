"""``flambeau.backends.opt_einsum`` (``torch.backends.opt_einsum``).

flambeau's ``einsum`` contracts its operands left to right and does not use the
opt_einsum package to choose an order, so :func:`is_available` is False,
:func:`get_opt_einsum` None, and ``enabled`` (default False, as PyTorch's when
opt_einsum is absent) and ``strategy`` are kept and read back only (Note
[Backend settings]).
"""

from __future__ import annotations

from flambeau_core.backends._settings import make_settings_module

enabled: bool
strategy: str | None


def is_available() -> bool:
    """False: flambeau's einsum does not use opt_einsum."""
    return False


def get_opt_einsum() -> None:
    """None: flambeau's einsum does not use opt_einsum."""
    return None


make_settings_module(__name__, {"enabled": (False, (bool,)), "strategy": (None, (str, type(None)))})
