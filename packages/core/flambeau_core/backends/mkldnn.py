"""``flambeau.backends.mkldnn``: oneDNN (``torch.backends.mkldnn``); flambeau's CPU kernels are its own.

``enabled`` is kept and read back (Note [Backend settings]); nothing consults it.
"""

from __future__ import annotations

from flambeau_core.backends._settings import make_settings_module

enabled: bool


def is_available() -> bool:
    """False: flambeau is not built with oneDNN (MKL-DNN)."""
    return False


make_settings_module(__name__, {"enabled": (True, (bool,))})
