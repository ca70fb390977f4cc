"""PyTorch-style ``repr``/``str`` of tensors.

The layout follows ``torch._tensor_str``, so a PyTorch user reads flambeau
tensors the same way, and so do its print options: :func:`set_printoptions`
(precision 4, line width 80, summarization above 1000 elements with 3 edge
items by default; ``sci_mode`` None chooses scientific notation per tensor),
:func:`get_printoptions` and the :func:`printoptions` context manager.

Example:
    >>> import flambeau_core as fc
    >>> print(fc.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[1., 2.],
            [3., 4.]])
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any


class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def _check_int(name: str, value: Any, allow_inf: bool = False) -> None:
    if allow_inf and value == math.inf:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"[set_printoptions] {name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"[set_printoptions] {name} must be non-negative, got {value}")


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    r"""Sets how tensors print (``torch.set_printoptions``).

    Args:
        precision: digits after the decimal point of floating values (default 4).
        threshold: elements above which a tensor prints summarized (default 1000).
        edgeitems: items printed at each end of a summarized dim (default 3).
        linewidth: characters per line before wrapping (default 80).
        profile: ``"default"``, ``"short"`` (precision 2, 2 edge items) or ``"full"`` (never
            summarize); applied first, the other arguments then override it.
        sci_mode: True/False forces scientific notation on/off; None (what every call without
            it sets, as in PyTorch) chooses per tensor.

    Example:
        >>> import flambeau_core as fc
        >>> fc.set_printoptions(precision=2)
        >>> fc.tensor([1.23456])
        tensor([1.23])
        >>> fc.set_printoptions(profile="default")
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"[set_printoptions] profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    for name, value, allow_inf in (
        ("precision", precision, False),
        ("threshold", threshold, True),
        ("edgeitems", edgeitems, False),
        ("linewidth", linewidth, False),
    ):
        if value is not None:
            _check_int(name, value, allow_inf)
            setattr(PRINT_OPTS, name, value)
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError(f"[set_printoptions] sci_mode must be a bool or None, got {type(sci_mode).__name__}")
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options as a dict that :func:`set_printoptions` accepts as ``**kwargs``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.get_printoptions()["precision"]
        4
    """
    return {n: getattr(PRINT_OPTS, n) for n in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Context manager: :func:`set_printoptions` inside the block, the previous options after it.

    Example:
        >>> import flambeau_core as fc
        >>> with fc.printoptions(precision=1):
        ...     print(fc.tensor([0.25]))
        tensor([0.2])
    """
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


def _is_floating(t: Any) -> bool:
    return bool(t.is_floating_point())


def _summarized_values(t: Any, summarize: bool) -> list:
    """The values that will be printed (edge items only when summarizing), flat."""
    if t.dim() == 0:
        return [t.item()]
    n = t.shape[0]
    if not summarize or n <= 2 * PRINT_OPTS.edgeitems:
        if t.dim() == 1:
            return t.tolist()
        rows = range(n)
    else:
        if t.dim() == 1:
            return t[: PRINT_OPTS.edgeitems].tolist() + t[n - PRINT_OPTS.edgeitems :].tolist()
        rows = list(range(PRINT_OPTS.edgeitems)) + list(range(n - PRINT_OPTS.edgeitems, n))
    out: list = []
    for i in rows:
        out.extend(_summarized_values(t[i], summarize))
    return out


class _Formatter:
    """Chooses one number format and width for all printed elements (torch's _Formatter)."""

    def __init__(self, values: list, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if not finite:
            return
        absvals = [abs(v) for v in finite]
        vmin, vmax = min(absvals), max(absvals)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        forced = PRINT_OPTS.sci_mode
        if self.int_mode:
            if (vmax / vmin > 1000.0 or vmax > 1.0e8) if forced is None else forced:
                self.sci_mode = True
                widths = [len(f"{v:.{PRINT_OPTS.precision}e}") for v in finite]
            else:
                widths = [len(f"{v:.0f}") + 1 for v in finite]
        else:
            if (vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4) if forced is None else forced:
                self.sci_mode = True
                widths = [len(f"{v:.{PRINT_OPTS.precision}e}") for v in finite]
            else:
                widths = [len(f"{v:.{PRINT_OPTS.precision}f}") for v in finite]
        self.max_width = max([self.max_width, *widths])

    def width(self) -> int:
        return self.max_width

    def format(self, value: Any) -> str:
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


class _ComplexFormatter:
    """Complex elements as torch prints them: real and imaginary parts each with a formatter of its own."""

    def __init__(self, values: list) -> None:
        self.real = _Formatter([v.real for v in values], True)
        self.imag = _Formatter([abs(v.imag) for v in values], True)

    def width(self) -> int:
        return self.real.width() + self.imag.width() + 2

    def format(self, value: Any) -> str:
        sign = "-" if math.copysign(1.0, value.imag) < 0 and not math.isnan(value.imag) else "+"
        return self.real.format(value.real) + sign + self.imag.format(abs(value.imag)).lstrip() + "j"


def _vector_str(t: Any, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    n = t.shape[0]
    if summarize and n > 2 * PRINT_OPTS.edgeitems:
        data = (
            [fmt.format(v) for v in t[: PRINT_OPTS.edgeitems].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in t[n - PRINT_OPTS.edgeitems :].tolist()]
        )
    else:
        data = [fmt.format(v) for v in t.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(t: Any, indent: int, summarize: bool, fmt: _Formatter) -> str:
    dim = t.dim()
    if dim == 0:
        return fmt.format(t.item())
    if dim == 1:
        return _vector_str(t, indent, summarize, fmt)
    n = t.shape[0]
    if summarize and n > 2 * PRINT_OPTS.edgeitems:
        slices = (
            [_tensor_str(t[i], indent + 1, summarize, fmt) for i in range(PRINT_OPTS.edgeitems)]
            + ["..."]
            + [_tensor_str(t[i], indent + 1, summarize, fmt) for i in range(n - PRINT_OPTS.edgeitems, n)]
        )
    else:
        slices = [_tensor_str(t[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(body: str, suffixes: list[str], indent: int) -> str:
    parts = [body]
    last_line_len = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t: Any) -> str:
    """``repr(t)``: the values in PyTorch's layout plus dtype/device/grad suffixes.

    >>> import flambeau_core as fc
    >>> fc.tensor([1, 2, 3])
    tensor([1, 2, 3])
    """
    prefix = "tensor("
    indent = len(prefix)
    suffixes: list[str] = []
    if str(t.device) != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t.is_meta:  # Note [Meta device]: no values to show, PyTorch's form
        body = "..."
        suffixes.append("size=" + str(tuple(t.shape)))
    elif t.numel() == 0:
        body = "[]"
        if t.dim() != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
    else:
        summarize = t.numel() > PRINT_OPTS.threshold
        values = _summarized_values(t, summarize)
        fmt = _ComplexFormatter(values) if t.dtype.is_complex else _Formatter(values, _is_floating(t))
        body = _tensor_str(t, indent, summarize, fmt)
    dtype_name = str(t.dtype).rsplit(".", 1)[-1]
    from flambeau_core._dtypes import get_default_dtype  # noqa: PLC0415  (_dtypes imports _C; this module must not)

    default_float = str(get_default_dtype()).rsplit(".", 1)[-1]
    defaults = ("int64", "bool", default_float, "complex128" if default_float == "float64" else "complex64")
    if t.is_meta:  # no values to infer a dtype from: only the default float goes unnamed (PyTorch's)
        defaults = (default_float,)
    if dtype_name not in defaults:
        suffixes.append(f"dtype={t.dtype}")
    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is not None:
        name = grad_fn.name() if callable(getattr(grad_fn, "name", None)) else type(grad_fn).__name__
        suffixes.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
