"""``flambeau.cpu``: the CPU's module, as ``torch.cpu`` (its ``amp`` spellings)."""

from flambeau_core.cpu import amp

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]


def is_available() -> bool:
    """Always True: the CPU is there (``torch.cpu.is_available``).

    Example::

        >>> import flambeau as fb
        >>> fb.cpu.is_available()
        True
    """
    return True


def device_count() -> int:
    """1, as ``torch.cpu.device_count``.

    Example::

        >>> import flambeau as fb
        >>> fb.cpu.device_count()
        1
    """
    return 1


def current_device() -> str:
    """``"cpu"``, as ``torch.cpu.current_device``.

    Example::

        >>> import flambeau as fb
        >>> fb.cpu.current_device()
        'cpu'
    """
    return "cpu"


def synchronize(device: object = None) -> None:
    """Nothing to wait for: CPU ops finish before they return.

    Example::

        >>> import flambeau as fb
        >>> fb.cpu.synchronize()
    """
