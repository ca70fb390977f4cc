"""Parameter initialisation (``flambeau_nn.init``), PyTorch's formulas and names.

Every function fills its tensor in place under ``no_grad`` and returns it.
Random values come from core's generator (``flambeau_core.manual_seed``), or
from ``generator=`` where PyTorch takes one.

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_nn import init
    >>> init.constant_(fc.empty(2), 3.0).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "zeros_",
    "ones_",
    "constant_",
    "eye_",
    "dirac_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "xavier_uniform_",
    "xavier_normal_",
    "orthogonal_",
    "sparse_",
    # PyTorch's deprecated names without the trailing underscore (FutureWarning, then the same fill).
    "uniform",
    "normal",
    "constant",
    "eye",
    "dirac",
    "xavier_uniform",
    "xavier_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "orthogonal",
    "sparse",
]


def _check(tensor: object, op: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"[{op}] expected a Tensor, got {type(tensor).__name__}")


def _check_number(value: object, op: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"[{op}] {name} must be a number, got {type(value).__name__}")
    return float(value)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    r"""The recommended gain for a nonlinearity (PyTorch's table).

    ========================= ====================================================
    nonlinearity              gain
    ========================= ====================================================
    Linear / Identity / Conv  1
    Sigmoid                   1
    Tanh                      5/3
    ReLU                      sqrt(2)
    Leaky Relu                sqrt(2 / (1 + negative_slope^2))
    SELU                      3/4
    ========================= ====================================================

    Example:
        >>> round(calculate_gain("leaky_relu", 0.2), 4)
        1.3868
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise FlambeauError(f"[calculate_gain] negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise FlambeauError(f"[calculate_gain] Unsupported nonlinearity {nonlinearity}")


def _fans(tensor: Tensor, op: str) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise FlambeauError(
            f"[{op}] Fan in and fan out can not be computed for tensor with fewer than 2 dimensions, "
            f"got shape {tuple(tensor.shape)}"
        )
    receptive = 1
    for s in tuple(tensor.shape)[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)``: ``size(1) * receptive field`` and ``size(0) * receptive field``.

    Example:
        >>> import flambeau_core as fc
        >>> _calculate_fan_in_and_fan_out(fc.empty(8, 3, 5, 5))
        (75, 200)
    """
    _check(tensor, "_calculate_fan_in_and_fan_out")
    return _fans(tensor, "_calculate_fan_in_and_fan_out")


def _calculate_correct_fan(tensor: Tensor, mode: str, op: str) -> int:
    if not isinstance(mode, str):
        raise TypeError(f"[{op}] mode must be 'fan_in' or 'fan_out', got {type(mode).__name__}")
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise FlambeauError(f"[{op}] Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor, op)
    return fan_in if mode == "fan_in" else fan_out


def _no_op_if_empty(tensor: Tensor) -> bool:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fills with values drawn uniformly from ``[a, b)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> fc.manual_seed(0)
        >>> w = nn.init.uniform_(fc.empty(100, 100), a=-0.5, b=0.5)
        >>> bool((w >= -0.5).all() and (w < 0.5).all()), abs(round(w.mean().item(), 1))
        (True, 0.0)
    """
    _check(tensor, "uniform_")
    a, b = _check_number(a, "uniform_", "a"), _check_number(b, "uniform_", "b")
    if a > b:
        raise FlambeauError(f"[uniform_] expects a <= b, got a={a}, b={b}")
    with fa.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fills with values drawn from ``N(mean, std**2)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> fc.manual_seed(0)
        >>> w = nn.init.normal_(fc.empty(200, 200), mean=1.0, std=0.5)
        >>> round(w.mean().item(), 1), round(w.std().item(), 1)
        (1.0, 0.5)
    """
    _check(tensor, "normal_")
    mean, std = _check_number(mean, "normal_", "mean"), _check_number(std, "normal_", "std")
    if std < 0:
        raise FlambeauError(f"[normal_] expects std >= 0, got {std}")
    with fa.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator: Any = None
) -> Tensor:
    r"""Fills with ``N(mean, std**2)`` truncated to ``[a, b]`` (inverse-CDF sampling, as PyTorch).

    Example:
        >>> import flambeau_core as fc
        >>> t = trunc_normal_(fc.empty(1000), a=-1.0, b=1.0)
        >>> bool((t.abs() <= 1.0).all())
        True
    """
    _check(tensor, "trunc_normal_")
    mean, std = _check_number(mean, "trunc_normal_", "mean"), _check_number(std, "trunc_normal_", "std")
    a, b = _check_number(a, "trunc_normal_", "a"), _check_number(b, "trunc_normal_", "b")
    if std <= 0:
        raise FlambeauError(f"[trunc_normal_] expects std > 0, got {std}")
    if a >= b:
        raise FlambeauError(f"[trunc_normal_] expects a < b, got a={a}, b={b}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be "
            "incorrect.",
            stacklevel=2,
        )

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
    with fa.no_grad():
        # Uniform on [2lo-1, 2hi-1], then the inverse CDF of the standard normal (via erfinv).
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        vals = fc.erfinv(tensor) * (std * math.sqrt(2.0)) + mean
        tensor.copy_(fc.clamp(vals, a, b))
    return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills with ``val``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.init.constant_(fc.empty(2, 3), 0.25).tolist()
        [[0.25, 0.25, 0.25], [0.25, 0.25, 0.25]]
    """
    _check(tensor, "constant_")
    with fa.no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills with 0.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.init.zeros_(fc.ones(2, 2)).tolist()
        [[0.0, 0.0], [0.0, 0.0]]
    """
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fills with 1.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.init.ones_(fc.empty(3)).tolist()
        [1.0, 1.0, 1.0]
    """
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fills a 2-D tensor with the identity (ones on the main diagonal, zeros elsewhere).

    Example:
        >>> import flambeau_core as fc
        >>> eye_(fc.empty(2, 3)).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    _check(tensor, "eye_")
    if tensor.dim() != 2:
        raise FlambeauError(f"[eye_] Only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}")
    rows, cols = tensor.shape
    with fa.no_grad():
        tensor.zero_()
        n = min(rows, cols)
        if n:
            idx = fc.arange(n)
            tensor[idx, idx] = 1
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3-, 4- or 5-D (convolution weight) tensor with the Dirac delta: identity channels per group.

    Example:
        >>> import flambeau_core as fc
        >>> dirac_(fc.empty(2, 2, 3)).tolist()
        [[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]
    """
    _check(tensor, "dirac_")
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise FlambeauError(f"[dirac_] Only tensors with 3, 4, or 5 dimensions are supported, got {dims}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise FlambeauError(f"[dirac_] groups must be a positive int, got {groups!r}")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise FlambeauError(f"[dirac_] dim 0 ({sizes[0]}) must be divisible by groups ({groups})")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    centre = tuple(s // 2 for s in sizes[2:])
    with fa.no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * out_per_group + d, d) + centre] = 1
    return tensor


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    r"""He initialisation: ``U(-bound, bound)`` with ``bound = gain * sqrt(3 / fan)``.

    ``Linear`` uses ``a=sqrt(5)``, which gives ``bound = 1 / sqrt(fan_in)``.

    Example:
        >>> import math
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> fc.manual_seed(0)
        >>> w = nn.init.kaiming_uniform_(fc.empty(64, 100), mode="fan_in", nonlinearity="relu")
        >>> bound = math.sqrt(2.0) * math.sqrt(3.0 / 100)
        >>> bool((w.abs() <= bound).all()), round(w.abs().max().item() / bound, 1)
        (True, 1.0)
    """
    _check(tensor, "kaiming_uniform_")
    if _no_op_if_empty(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode, "kaiming_uniform_")
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    """He initialisation with ``N(0, std**2)``, ``std = gain / sqrt(fan)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> fc.manual_seed(0)
        >>> w = nn.init.kaiming_normal_(fc.empty(256, 200), mode="fan_in", nonlinearity="relu")
        >>> round(w.std().item(), 2)  # sqrt(2 / 200)
        0.1
    """
    _check(tensor, "kaiming_normal_")
    if _no_op_if_empty(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode, "kaiming_normal_")
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator=generator)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    r"""Glorot initialisation: ``U(-a, a)``, ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> fc.manual_seed(0)
        >>> w = nn.init.xavier_uniform_(fc.empty(30, 20), gain=nn.init.calculate_gain("tanh"))
        >>> bool((w.abs() <= 5 / 3 * (6 / 50) ** 0.5).all())
        True
    """
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out)) if fan_in + fan_out else 0.0
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot initialisation with ``N(0, std**2)``, ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> fc.manual_seed(0)
        >>> w = nn.init.xavier_normal_(fc.empty(300, 200))
        >>> round(w.std().item(), 3)  # sqrt(2 / (200 + 300))
        0.063
    """
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out)) if fan_in + fan_out else 0.0
    return normal_(tensor, 0.0, std, generator=generator)


def _orthonormal_columns(a: Tensor) -> Tensor:
    """Q of the thin QR decomposition of ``a`` (m x n, m >= n) with R's diagonal positive.

    Classical Gram-Schmidt with one re-orthogonalisation per column ("CGS2",
    as accurate as Householder QR for these well-conditioned Gaussian
    matrices), in float64 with core ops; init is not a hot path.
    """
    m, n = a.shape
    q = fc.zeros(m, n, dtype=fc.float64)
    for j in range(n):
        v = a[:, j]
        if j:
            basis = q[:, :j]
            for _ in range(2):
                v = v - fc.matmul(basis, fc.matmul(basis.transpose(0, 1), v))
        norm = fc.sqrt((v * v).sum())
        q[:, j] = v / norm
    return q


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    r"""Fills with a (semi-)orthogonal matrix: the Q of the QR decomposition of a Gaussian matrix.

    Dims after the first are flattened; rows or columns (whichever are fewer)
    are orthonormal, then scaled by ``gain``.

    Example:
        >>> import flambeau_core as fc
        >>> w = orthogonal_(fc.empty(3, 5))
        >>> eye = fc.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        >>> (w @ w.transpose(0, 1) - eye).abs().max().item() < 1e-5
        True
    """
    _check(tensor, "orthogonal_")
    if tensor.dim() < 2:
        raise FlambeauError(
            f"[orthogonal_] Only tensors with 2 or more dimensions are supported, got shape {tuple(tensor.shape)}"
        )
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with fa.no_grad():
        flat = fc.empty(rows, cols, dtype=fc.float64).normal_(0.0, 1.0, generator=generator)
        if rows < cols:
            flat = flat.transpose(0, 1)
        q = _orthonormal_columns(flat.contiguous())
        if rows < cols:
            q = q.transpose(0, 1)
        tensor.copy_((q * gain).reshape(tuple(tensor.shape)))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    r"""Fills a 2-D tensor as a sparse matrix (Martens, 2010): N(0, std) values with
    ``ceil(sparsity * rows)`` zeros in each column, at random rows.

    Each column's zero rows are the first ones of a random permutation, drawn for every column at
    once (an argsort of uniform noise), not column by column.

    Example:
        >>> import flambeau_core as fc
        >>> w = sparse_(fc.empty(10, 4), sparsity=0.3)
        >>> (w == 0).sum(0).tolist()
        [3, 3, 3, 3]
    """
    _check(tensor, "sparse_")
    if tensor.dim() != 2:
        raise FlambeauError(f"[sparse_] Only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}")
    sparsity = _check_number(sparsity, "sparse_", "sparsity")
    std = _check_number(std, "sparse_", "std")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with fa.no_grad():
        tensor.normal_(0.0, std, generator=generator)
        if num_zeros > 0 and tensor.numel() > 0:
            noise = fc.empty(rows, cols, dtype=fc.float32).uniform_(0.0, 1.0, generator=generator)
            rank = noise.argsort(0).argsort(0)  # each element's place in its column's random order
            tensor.masked_fill_(rank < num_zeros, 0.0)
    return tensor


def _deprecated(new: Any, example_args: str = "fc.empty(3, 4)") -> Any:
    """The old name of ``new``: warns, then calls it. ``example_args`` are the example's arguments."""
    old = new.__name__[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning, stacklevel=2
        )
        return new(*args, **kwargs)

    deprecated_init.__name__ = old
    deprecated_init.__doc__ = (
        f"Deprecated: use :func:`{new.__name__}` (same arguments; warns FutureWarning).\n\n"
        "    Example:\n"
        "        >>> import warnings\n"
        "        >>> import flambeau_core as fc\n"
        "        >>> import flambeau_nn as nn\n"
        "        >>> with warnings.catch_warnings(record=True) as caught:\n"
        '        ...     warnings.simplefilter("always")\n'
        f"        ...     t = nn.init.{old}({example_args})\n"
        "        >>> caught[0].category.__name__, t.shape\n"
        f"        ('FutureWarning', flambeau.Size([{example_args.split('(')[1].split(')')[0]}]))\n"
    )
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_, "fc.empty(3, 4), 0.5")
eye = _deprecated(eye_)
dirac = _deprecated(dirac_, "fc.empty(4, 4, 3)")
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_, "fc.empty(3, 4), 0.5")
