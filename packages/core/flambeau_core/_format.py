"""PyTorch-style ``repr``/``str`` of tensors.

The layout follows ``torch._tensor_str`` with its default print options
(precision 4, line width 80, summarization above 1000 elements with 3 edge
items), so a PyTorch user reads flambeau tensors the same way.

Example:
    >>> import flambeau_core as fc
    >>> print(fc.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[1., 2.],
            [3., 4.]])
"""

from __future__ import annotations

import math
from typing import Any

PRECISION = 4
LINEWIDTH = 80
THRESHOLD = 1000
EDGEITEMS = 3


def _is_floating(t: Any) -> bool:
    return bool(t.is_floating_point())


def _summarized_values(t: Any, summarize: bool) -> list:
    """The values that will be printed (edge items only when summarizing), flat."""
    if t.dim() == 0:
        return [t.item()]
    n = t.shape[0]
    if not summarize or n <= 2 * EDGEITEMS:
        if t.dim() == 1:
            return t.tolist()
        rows = range(n)
    else:
        if t.dim() == 1:
            return t[:EDGEITEMS].tolist() + t[n - EDGEITEMS :].tolist()
        rows = list(range(EDGEITEMS)) + list(range(n - EDGEITEMS, n))
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
        if self.int_mode:
            if vmax / vmin > 1000.0 or vmax > 1.0e8:
                self.sci_mode = True
                widths = [len(f"{v:.{PRECISION}e}") for v in finite]
            else:
                widths = [len(f"{v:.0f}") + 1 for v in finite]
        else:
            if vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4:
                self.sci_mode = True
                widths = [len(f"{v:.{PRECISION}e}") for v in finite]
            else:
                widths = [len(f"{v:.{PRECISION}f}") for v in finite]
        self.max_width = max([self.max_width, *widths])

    def width(self) -> int:
        return self.max_width

    def format(self, value: Any) -> str:
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRECISION}f}"
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
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / element_length)))
    n = t.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        data = (
            [fmt.format(v) for v in t[:EDGEITEMS].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in t[n - EDGEITEMS :].tolist()]
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
    if summarize and n > 2 * EDGEITEMS:
        slices = (
            [_tensor_str(t[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)]
            + ["..."]
            + [_tensor_str(t[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)]
        )
    else:
        slices = [_tensor_str(t[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(body: str, suffixes: list[str], indent: int) -> str:
    parts = [body]
    last_line_len = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
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
        summarize = t.numel() > THRESHOLD
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
