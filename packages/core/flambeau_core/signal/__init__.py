"""flambeau.signal: torch.signal, the window functions of signal processing (``flambeau.signal.windows``).

Example:
    >>> import flambeau_core as fc
    >>> fc.signal.windows.hann(5).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
"""

from __future__ import annotations

from flambeau_core.signal import windows

__all__ = ["windows"]
