"""flambeau.fft: torch.fft's transforms and helpers.

The transforms (fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2,
irfft2, rfftn, irfftn, hfft, ihfft, hfft2, ihfft2, hfftn, ihfftn) have
PyTorch's signatures and dtype rules: real float32 gives complex64, float64
complex128, integers and bool compute in the default float dtype; float16 and
bfloat16 are refused (TypeError). They pad with zeros or trim to ``n``/``s``
here, in Python, and call the three primitives ``_fft_c2c``, ``_fft_r2c`` and
``_fft_c2r`` (src/cpu/fft/fft.cpp, over the vendored pocketfft), whose derivatives
are PyTorch's; so every transform is differentiable. ``norm`` is "backward"
(the default: the inverse scaled by 1/n), "ortho" (both by 1/sqrt(n)) or
"forward" (the forward transform by 1/n).

``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are here too.

Example:
    >>> import flambeau_core as fc
    >>> fc.fft.fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
    >>> fc.fft.fft(fc.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j), (-2-2j)]
    >>> [round(v, 4) for v in fc.fft.irfft(fc.fft.rfft(fc.tensor([1.0, 2.0, 3.0])), n=3).tolist()]
    [1.0, 2.0, 3.0]
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core.amp.custom_functions import autocast_float32
from flambeau_core.overrides import is_tensor_like

__all__ = [
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
]


def _check_n(n: Any, op: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}: n must be an int, got {type(n).__name__}")
    if n < 0:
        raise FlambeauError(f"{op}: n must be non-negative, got {n}")
    return n


def _freq_dtype(dtype: Any, op: str) -> Any:
    dtype = _C.float32 if dtype is None else dtype
    if dtype not in (_C.float32, _C.float64):
        raise TypeError(f"{op}: expected a float32 or float64 dtype, got {dtype}")
    return dtype


def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    out: Tensor | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of a signal of size n: [0, 1, ..., ceil(n/2)-1, -floor(n/2), ..., -1] / (d*n).

    Example:
        >>> import flambeau as fb
        >>> fb.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
        >>> fb.fft.fftfreq(5, d=0.5)
        tensor([ 0.0000,  0.4000,  0.8000, -0.8000, -0.4000])
    """
    _C._check_layout(layout, "fft.fftfreq")
    n = _check_n(n, "fft.fftfreq")
    dtype = _freq_dtype(dtype, "fft.fftfreq")
    pos = (n + 1) // 2
    idx = _C.cat([_C.arange(0, pos, dtype=_C.float64), _C.arange(-(n // 2), 0, dtype=_C.float64)], 0)
    r = (idx / (float(d) * n) if n else idx).to(dtype)
    if device is not None:
        r = r.to(device)
    if out is not None:
        out.copy_(r)
        r = out
    return r.requires_grad_() if requires_grad else r


def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    out: Tensor | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of rfft's output for a signal of size n: [0, 1, ..., n//2] / (d*n).

    Example:
        >>> import flambeau as fb
        >>> fb.fft.rfftfreq(4)
        tensor([0.0000, 0.2500, 0.5000])
        >>> fb.fft.rfftfreq(5, d=0.5)
        tensor([0.0000, 0.4000, 0.8000])
    """
    _C._check_layout(layout, "fft.rfftfreq")
    n = _check_n(n, "fft.rfftfreq")
    dtype = _freq_dtype(dtype, "fft.rfftfreq")
    idx = _C.arange(0, n // 2 + 1, dtype=_C.float64)
    r = (idx / (float(d) * n)).to(dtype)  # n = 0: [nan], as PyTorch (0 / 0)
    if device is not None:
        r = r.to(device)
    if out is not None:
        out.copy_(r)
        r = out
    return r.requires_grad_() if requires_grad else r


def _roll_dims(x: Tensor, dim: Any, forward: bool, op: str) -> Tensor:
    if not is_tensor_like(x):  # a tensor-like (flambeau.overrides) runs through, its ops overridden
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    nd = x.dim()
    if dim is None:
        dims = list(range(nd))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    for d in dims:
        if not -max(nd, 1) <= d < max(nd, 1):
            raise IndexError(
                f"{op}: Dimension out of range (expected to be in range of "
                f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {d})"
            )
    if nd == 0:
        return x.clone()
    for d in dims:
        d %= nd
        size = x.shape[d]
        if size <= 1:
            continue
        # Roll by size//2 (fftshift) or -(size//2) (ifftshift): the last `shift` elements move to the front.
        shift = size // 2 if forward else size - size // 2
        x = _C.cat([x.narrow(d, size - shift, shift), x.narrow(d, 0, size - shift)], d)
    return x if dims else x.clone()


def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """Moves the zero-frequency term to the center: a roll by n//2 along each dim of `dim` (all when None).

    Example:
        >>> import flambeau as fb
        >>> f = fb.fft.fftfreq(5)
        >>> f
        tensor([ 0.0000,  0.2000,  0.4000, -0.4000, -0.2000])
        >>> fb.fft.fftshift(f)
        tensor([-0.4000, -0.2000,  0.0000,  0.2000,  0.4000])
    """
    return _roll_dims(input, dim, True, "fft.fftshift")


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The inverse of fftshift: a roll by -(n//2) along each dim of `dim` (all when None).

    Example:
        >>> import flambeau as fb
        >>> x = fb.fft.fftshift(fb.arange(5))
        >>> x, fb.fft.ifftshift(x)
        (tensor([3, 4, 0, 1, 2]), tensor([0, 1, 2, 3, 4]))
    """
    return _roll_dims(input, dim, False, "fft.ifftshift")


# ---- transforms ----

_COMPLEX = (_C.complex64, _C.complex128)
_REAL = (_C.float32, _C.float64)
# norm -> the primitives' normalization code (0 none, 1 1/sqrt(n), 2 1/n), for a forward / inverse transform
_NORMS = {"backward": (0, 2), "ortho": (1, 1), "forward": (2, 0)}


def _shape(t: Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _norm(norm: Any, forward: bool, op: str) -> int:
    key = "backward" if norm is None else norm
    if not isinstance(key, str) or key not in _NORMS:
        raise FlambeauError(f'{op}: Invalid normalization mode: "{norm}" (expected "backward", "ortho" or "forward")')
    return _NORMS[key][0 if forward else 1]


def _float_input(x: Any, op: str, complex_ok: bool) -> Tensor:
    """x promoted as PyTorch: integers and bool to the default float dtype; half refused."""
    if not is_tensor_like(x):
        raise TypeError(f"{op}: expected a Tensor as input, got {type(x).__name__}")
    dt = x.dtype
    if dt in _REAL or dt in _COMPLEX:
        if dt in _COMPLEX and not complex_ok:
            raise TypeError(f"{op} expects a real input tensor, but got {dt} (shape {_shape(x)})")
        return x
    if dt in (_C.float16, _C.bfloat16) or "complex" in str(dt):
        raise TypeError(f"{op}: Unsupported dtype {dt}: the FFTs take float32/float64 or complex64/complex128")
    return x.to(_C._get_default_dtype())


def _to_complex(x: Tensor) -> Tensor:
    if x.dtype in _COMPLEX:
        return x
    return x.to(_C.complex64 if x.dtype == _C.float32 else _C.complex128)


def _check_points(op: str, n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}: n must be an int, got {type(n).__name__}")
    if n < 1:
        raise FlambeauError(f"{op}: Invalid number of data points ({n}) specified")
    return n


def _wrap(op: str, x: Tensor, d: Any) -> int:
    if isinstance(d, bool) or not isinstance(d, int):
        raise TypeError(f"{op}: dim must be an int, got {type(d).__name__}")
    nd = x.dim()
    if not -nd <= d < nd:
        lo, hi = (-nd, nd - 1) if nd else (-1, 0)
        raise IndexError(
            f"{op}: Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d}) "
            f"for input of shape {_shape(x)}"
        )
    return d % nd


def _resize(x: Tensor, d: int, size: int) -> Tensor:
    """x zero-padded at the end or trimmed along d to `size`."""
    have = x.shape[d]
    if size == have:
        return x
    if size < have:
        return x.narrow(d, 0, size)
    pad = list(x.shape)
    pad[d] = size - have
    if x.dtype in _COMPLEX:  # cat is real-only: pad the (..., 2) real view
        r = _C.view_as_real(x)
        z = _C.zeros([*pad, 2], dtype=r.dtype, device=x.device)
        return _C.view_as_complex(_C.cat([r, z], d))
    return _C.cat([x, _C.zeros(pad, dtype=x.dtype, device=x.device)], d)


def _dims_1d(op: str, x: Tensor, n: Any, dim: Any) -> tuple[int, int | None]:
    d = _wrap(op, x, dim)
    return d, (None if n is None else _check_points(op, n))


def _dims_nd(op: str, x: Tensor, s: Any, dim: Any) -> tuple[list[int], list[int]]:
    """PyTorch's canonical (dims, sizes) of an n-dimensional transform; sizes -1 keep the input's."""
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
        for v in s:
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{op}: s must be a sequence of ints, got {s}")
    if dim is not None:
        dims = [_wrap(op, x, dim)] if isinstance(dim, int) else [_wrap(op, x, d) for d in dim]
        if len(set(dims)) != len(dims):
            raise FlambeauError(f"{op}: FFT dims must be unique, got dim={list(dim)} (input shape {_shape(x)})")
        if s is not None and len(s) != len(dims):
            raise FlambeauError(
                f"{op}: When given, dim and shape arguments must have the same length "
                f"(s={s} has {len(s)}, dim={list(dims)} has {len(dims)}; input shape {_shape(x)})"
            )
    elif s is not None:
        if len(s) > x.dim():
            raise FlambeauError(
                f"{op}: Got shape with {len(s)} values but input tensor only has {x.dim()} dimensions "
                f"(shape {_shape(x)})"
            )
        dims = list(range(x.dim() - len(s), x.dim()))
    else:
        dims = list(range(x.dim()))
    if s is None:
        sizes = [x.shape[d] for d in dims]
    else:
        sizes = [x.shape[d] if v == -1 else v for d, v in zip(dims, s, strict=True)]
    for v in sizes:
        if v < 1:
            raise FlambeauError(f"{op}: Invalid number of data points ({v}) specified (s={s}, input shape {_shape(x)})")
    return dims, sizes


def _out(op: str, r: Tensor, out: Tensor | None) -> Tensor:
    # PyTorch's out= rules (flambeau_core._C._copy_to_out): a dtype the result casts to (complex64
    # into complex128; a real out for a complex result raises), resized to the result's shape, no
    # autograd through out=. r is out when the primitive wrote it (_primitive).
    if out is None or r is out:
        return r
    if (
        isinstance(out, Tensor)
        and out.dtype in (_C.complex64, _C.complex128)
        and r.dtype
        not in (
            _C.complex64,
            _C.complex128,
        )
    ):
        raise TypeError(f"[{op}] expects a floating point out tensor (the result is {r.dtype}), got {out.dtype}")
    return _C._copy_to_out(op, r, out, False)


# The result dtype of a primitive of `kind` from its input's (out= must have it to be written by the kernel).
_RESULT_DTYPE = {
    "complex": {_C.float32: _C.complex64, _C.float64: _C.complex128},
    "real": {_C.complex64: _C.float32, _C.complex128: _C.float64},
}


def _primitive(f: Any, x: Tensor, args: tuple, out: Any, kind: str, last: tuple[int, int] | None = None) -> Tensor:
    """f(x, *args), the transform's last step, written straight into out= by the primitive's out kernel
    (Note [Structured kernels]) when out has the result's dtype (`kind` of x's: same, complex or real),
    device and shape (x's, the `last` = (dim, size) changed) or no elements (resized silently), and autograd
    does not record. Otherwise the result is computed and _out copies it in, its messages and warnings
    naming the public function."""
    if not isinstance(out, Tensor):
        return f(x, *args)
    dtype = x.dtype if kind == "same" else _RESULT_DTYPE[kind].get(x.dtype)
    if out.dtype == dtype and ((out.is_cpu and x.is_cpu) or out.device == x.device):
        shape = list(x.shape)
        if last is not None:
            shape[last[0]] = last[1]
        recording = _C.is_grad_enabled() and (x.requires_grad or out.requires_grad)
        if not recording and (out.numel() == 0 or list(out.shape) == shape):
            return f(x, *args, out=out)
    return f(x, *args)


def _bad_sizes(op: str, x: Tensor, sizes: list[int]) -> None:
    # A 1-D transform without n over an empty dim (the n-D ones checked s in _dims_nd): PyTorch's error.
    raise FlambeauError(f"{op}: Invalid number of data points ({min(sizes)}) specified (input shape {_shape(x)})")


def _c2c(op: str, x: Tensor, dims: list[int], sizes: list[int], norm: Any, forward: bool, out: Any = None) -> Tensor:
    x = _float_input(x, op, True)
    if min(sizes, default=1) < 1:
        _bad_sizes(op, x, sizes)
    for d, v in zip(dims, sizes, strict=True):
        x = _resize(x, d, v)
    code = _norm(norm, forward, op)
    if not dims:
        return _to_complex(x).clone()
    if x.dtype in _COMPLEX:
        return (
            _C._fft_c2c(x, dims, code, forward)
            if out is None
            else _primitive(_C._fft_c2c, x, (dims, code, forward), out, "same")
        )
    if forward:
        return (
            _C._fft_r2c(x, dims, code, False)
            if out is None
            else _primitive(_C._fft_r2c, x, (dims, code, False), out, "complex")
        )
    return (
        _C._fft_c2c(_to_complex(x), dims, code, forward)
        if out is None
        else _primitive(_C._fft_c2c, _to_complex(x), (dims, code, forward), out, "same")
    )


def _r2c(op: str, x: Tensor, dims: list[int], sizes: list[int], norm: Any, forward: bool, out: Any = None) -> Tensor:
    x = _float_input(x, op, False)
    if min(sizes, default=1) < 1:
        _bad_sizes(op, x, sizes)
    for d, v in zip(dims, sizes, strict=True):
        x = _resize(x, d, v)
    code = _norm(norm, forward, op)
    if not dims:
        return _to_complex(x).clone()
    if not forward:  # ihfft: the conjugate of the forward transform (not the primitive's result)
        return _C._fft_r2c(x, dims, code, True).conj()
    return (
        _C._fft_r2c(x, dims, code, True)
        if out is None
        else _primitive(_C._fft_r2c, x, (dims, code, True), out, "complex", (dims[-1], x.shape[dims[-1]] // 2 + 1))
    )


def _c2r(
    op: str,
    x: Tensor,
    dims: list[int],
    sizes: list[int] | None,
    n_last: Any,
    norm: Any,
    forward: bool,
    out: Any = None,
) -> Tensor:
    """irfft (forward=False) / hfft (forward=True): the last of dims is the half-spectrum dim."""
    x = _to_complex(_float_input(x, op, True))
    if not dims:
        raise FlambeauError(f"{op}: expected at least one dim to transform (input shape {_shape(x)})")
    last = dims[-1]
    if n_last is None:
        n_last = 2 * (x.shape[last] - 1)
        if n_last < 1:
            raise FlambeauError(
                f"{op}: Invalid number of data points ({n_last}) specified: the input's size along dim {last} "
                f"is {x.shape[last]} (shape {_shape(x)})"
            )
    if sizes is not None:
        for d, v in zip(dims[:-1], sizes[:-1], strict=True):
            x = _resize(x, d, v)
    x = _resize(x, last, n_last // 2 + 1)
    code = _norm(norm, forward, op)
    if forward:  # hfft: conj, then c2c over the other dims and c2r over the last
        if len(dims) > 1:
            x = _C._fft_c2c(x, dims[:-1], code, True)
        x = x.conj()
        return (
            _C._fft_c2r(x, [last], code, n_last)
            if out is None
            else _primitive(_C._fft_c2r, x, ([last], code, n_last), out, "real", (last, n_last))
        )
    return (
        _C._fft_c2r(x, dims, code, n_last)
        if out is None
        else _primitive(_C._fft_c2r, x, (dims, code, n_last), out, "real", (last, n_last))
    )


@autocast_float32
def fft(
    input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The 1-D discrete Fourier transform of input along dim (complex result).

    Example:
        >>> import flambeau as fb
        >>> X = fb.fft.fft(fb.tensor([1.0, 2.0, 3.0, 4.0]))
        >>> X
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
        >>> fb.fft.fft(fb.tensor([1.0, 0.0, 0.0]), n=4)  # zero-padded to 4
        tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    d, n = _dims_1d("fft.fft", _float_input(input, "fft.fft", True), n, dim)
    return _out("fft.fft", _c2c("fft.fft", input, [d], [input.shape[d] if n is None else n], norm, True, out), out)


@autocast_float32
def ifft(
    input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The 1-D inverse discrete Fourier transform of input along dim.

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([1.0, 2.0, 3.0, 4.0])
        >>> fb.fft.ifft(fb.fft.fft(x)).real
        tensor([1., 2., 3., 4.])
    """
    d, n = _dims_1d("fft.ifft", _float_input(input, "fft.ifft", True), n, dim)
    return _out("fft.ifft", _c2c("fft.ifft", input, [d], [input.shape[d] if n is None else n], norm, False, out), out)


@autocast_float32
def fftn(
    input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The n-dimensional discrete Fourier transform over dim (all dims by default; the last len(s) with s).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fb.fft.fftn(x).real
        tensor([[10., -2.],
                [-4.,  0.]])
        >>> fb.fft.fftn(x, dim=(0,)).real  # only along dim 0
        tensor([[ 4.,  6.],
                [-2., -2.]])
    """
    dims, sizes = _dims_nd("fft.fftn", _float_input(input, "fft.fftn", True), s, dim)
    return _out("fft.fftn", _c2c("fft.fftn", input, dims, sizes, norm, True, out), out)


@autocast_float32
def ifftn(
    input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The n-dimensional inverse discrete Fourier transform over dim.

    Example:
        >>> import flambeau as fb
        >>> x = fb.arange(8.0).reshape(2, 2, 2)
        >>> fb.allclose(fb.fft.ifftn(fb.fft.fftn(x)).real, x)
        True
    """
    dims, sizes = _dims_nd("fft.ifftn", _float_input(input, "fft.ifftn", True), s, dim)
    return _out("fft.ifftn", _c2c("fft.ifftn", input, dims, sizes, norm, False, out), out)


@autocast_float32
def fft2(
    input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The 2-D discrete Fourier transform (fftn over the last two dims by default).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fb.fft.fft2(x).real
        tensor([[10., -2.],
                [-4.,  0.]])
        >>> fb.fft.fft2(fb.ones(3, 2, 2)).shape  # over the last two dims of a batch
        flambeau.Size([3, 2, 2])
    """
    dims, sizes = _dims_nd("fft.fft2", _float_input(input, "fft.fft2", True), s, dim)
    return _out("fft.fft2", _c2c("fft.fft2", input, dims, sizes, norm, True, out), out)


@autocast_float32
def ifft2(
    input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The 2-D inverse discrete Fourier transform (ifftn over the last two dims by default).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fb.fft.ifft2(fb.fft.fft2(x)).real
        tensor([[1., 2.],
                [3., 4.]])
    """
    dims, sizes = _dims_nd("fft.ifft2", _float_input(input, "fft.ifft2", True), s, dim)
    return _out("fft.ifft2", _c2c("fft.ifft2", input, dims, sizes, norm, False, out), out)


@autocast_float32
def rfft(
    input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The 1-D FFT of a real input: the n//2 + 1 non-negative frequencies.

    Example:
        >>> import flambeau as fb
        >>> X = fb.fft.rfft(fb.tensor([1.0, 2.0, 3.0, 4.0]))
        >>> X.shape, X
        (flambeau.Size([3]), tensor([10.+0.j, -2.+2.j, -2.+0.j]))
    """
    x = _float_input(input, "fft.rfft", False)
    d, n = _dims_1d("fft.rfft", x, n, dim)
    return _out("fft.rfft", _r2c("fft.rfft", x, [d], [x.shape[d] if n is None else n], norm, True, out), out)


@autocast_float32
def irfft(
    input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The inverse of rfft: a real signal of size n (default 2 * (input.size(dim) - 1)).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> fb.fft.irfft(fb.fft.rfft(x), n=5).round(decimals=4)  # give n for an odd length
        tensor([1., 2., 3., 4., 5.])
    """
    x = _float_input(input, "fft.irfft", True)
    d, n = _dims_1d("fft.irfft", x, n, dim)
    return _out("fft.irfft", _c2r("fft.irfft", x, [d], None, n, norm, False, out), out)


def _last_n(s: Any, sizes: list[int]) -> int | None:
    if s is None:
        return None
    s = [s] if isinstance(s, int) else list(s)
    return sizes[-1] if s[-1] != -1 else None


@autocast_float32
def rfftn(
    input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The n-dimensional FFT of a real input; the last transformed dim keeps s[-1]//2 + 1 frequencies.

    Example:
        >>> import flambeau as fb
        >>> X = fb.fft.rfftn(fb.ones(2, 4))
        >>> X.shape, X.real
        (flambeau.Size([2, 3]), tensor([[8., 0., 0.],
                        [0., 0., 0.]]))
    """
    x = _float_input(input, "fft.rfftn", False)
    dims, sizes = _dims_nd("fft.rfftn", x, s, dim)
    return _out("fft.rfftn", _r2c("fft.rfftn", x, dims, sizes, norm, True, out), out)


@autocast_float32
def rfft2(
    input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """rfftn over the last two dims by default.

    Example:
        >>> import flambeau as fb
        >>> X = fb.fft.rfft2(fb.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]]))
        >>> X.shape
        flambeau.Size([2, 3])
    """
    x = _float_input(input, "fft.rfft2", False)
    dims, sizes = _dims_nd("fft.rfft2", x, s, dim)
    return _out("fft.rfft2", _r2c("fft.rfft2", x, dims, sizes, norm, True, out), out)


def _irfftn(op: str, input: Tensor, s: Any, dim: Any, norm: Any, forward: bool, out: Any = None) -> Tensor:
    x = _float_input(input, op, True)
    dims, sizes = _dims_nd(op, x, s, dim)
    if not dims:
        raise FlambeauError(f"{op}: expected at least one dim to transform (input shape {_shape(x)})")
    return _c2r(op, x, dims, sizes, _last_n(s, sizes), norm, forward, out)


@autocast_float32
def irfftn(
    input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The inverse of rfftn: the last dim's output size is s[-1] (default 2 * (input.size(dim[-1]) - 1)).

    Example:
        >>> import flambeau as fb
        >>> x = fb.arange(12.0).reshape(3, 4)
        >>> fb.allclose(fb.fft.irfftn(fb.fft.rfftn(x), s=x.shape), x, atol=1e-5)
        True
    """
    return _out("fft.irfftn", _irfftn("fft.irfftn", input, s, dim, norm, False, out), out)


@autocast_float32
def irfft2(
    input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """irfftn over the last two dims by default.

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fb.fft.irfft2(fb.fft.rfft2(x), s=(2, 2))
        tensor([[1., 2.],
                [3., 4.]])
    """
    return _out("fft.irfft2", _irfftn("fft.irfft2", input, s, dim, norm, False, out), out)


@autocast_float32
def hfft(
    input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The FFT of a Hermitian-symmetric signal given by its half: a real result of size n.

    Example:
        >>> import flambeau as fb
        >>> half = fb.tensor([4.0 + 0.0j, 1.0 + 0.0j, 0.0 + 0.0j])
        >>> fb.fft.hfft(half)  # the real spectrum of the signal [4, 1, 0, 1]
        tensor([6., 4., 2., 4.])
    """
    x = _float_input(input, "fft.hfft", True)
    d, n = _dims_1d("fft.hfft", x, n, dim)
    return _out("fft.hfft", _c2r("fft.hfft", x, [d], None, n, norm, True, out), out)


@autocast_float32
def ihfft(
    input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The inverse of hfft: the n//2 + 1 first terms of the inverse FFT of a real input.

    Example:
        >>> import flambeau as fb
        >>> fb.fft.ihfft(fb.tensor([6.0, 2.0, 0.0, 2.0])).real  # the imaginary parts are 0 here
        tensor([2.5000, 1.5000, 0.5000])
    """
    x = _float_input(input, "fft.ihfft", False)
    d, n = _dims_1d("fft.ihfft", x, n, dim)
    return _out("fft.ihfft", _r2c("fft.ihfft", x, [d], [x.shape[d] if n is None else n], norm, False, out), out)


def hfftn(
    input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The n-dimensional FFT of a Hermitian-symmetric signal given by its half along the last dim.

    Example:
        >>> import flambeau as fb
        >>> x = fb.arange(6.0).reshape(2, 3)
        >>> fb.allclose(fb.fft.hfftn(fb.fft.ihfftn(x), s=x.shape), x, atol=1e-5)
        True
    """
    return _out("fft.hfftn", _irfftn("fft.hfftn", input, s, dim, norm, True, out), out)


def hfft2(
    input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """hfftn over the last two dims by default.

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fb.fft.hfft2(fb.fft.ihfft2(x), s=(2, 2))
        tensor([[1., 2.],
                [3., 4.]])
    """
    return _out("fft.hfft2", _irfftn("fft.hfft2", input, s, dim, norm, True, out), out)


def _ihfftn(op: str, input: Tensor, s: Any, dim: Any, norm: Any, out: Any = None) -> Tensor:
    x = _float_input(input, op, False)
    dims, sizes = _dims_nd(op, x, s, dim)
    if not dims:
        return _to_complex(x).clone()
    for d, v in zip(dims, sizes, strict=True):
        x = _resize(x, d, v)
    code = _norm(norm, False, op)
    r = _C._fft_r2c(x, [dims[-1]], code, True).conj()
    if len(dims) > 1:
        r = (
            _C._fft_c2c(r, dims[:-1], code, False)
            if out is None
            else _primitive(_C._fft_c2c, r, (dims[:-1], code, False), out, "same")
        )
    return r


def ihfftn(
    input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """The inverse of hfftn.

    Example:
        >>> import flambeau as fb
        >>> X = fb.fft.ihfftn(fb.ones(2, 4))
        >>> X.shape, X.real
        (flambeau.Size([2, 3]), tensor([[1., 0., 0.],
                        [0., 0., 0.]]))
    """
    return _out("fft.ihfftn", _ihfftn("fft.ihfftn", input, s, dim, norm, out), out)


def ihfft2(
    input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *, out: Tensor | None = None
) -> Tensor:
    """ihfftn over the last two dims by default.

    Example:
        >>> import flambeau as fb
        >>> fb.fft.ihfft2(fb.ones(3, 2, 4)).shape
        flambeau.Size([3, 2, 3])
    """
    return _out("fft.ihfft2", _ihfftn("fft.ihfft2", input, s, dim, norm, out), out)
