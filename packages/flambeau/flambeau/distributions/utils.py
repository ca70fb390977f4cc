"""Helpers shared by the distributions: broadcasting parameters, probabilities and logits, cached properties."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import flambeau_core as fb
import flambeau_nn.functional as F
from flambeau_autograd import enable_grad

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "euler_constant",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values: Any) -> tuple[fb.Tensor, ...]:
    """Broadcasts numbers and tensors to one shape; numbers take the dtype of the first tensor (else the default).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.utils import broadcast_all
        >>> a, b = broadcast_all(fb.zeros(2, 1), 1.0)
        >>> tuple(b.shape), b.tolist()
        ((2, 1), [[1.0], [1.0]])
    """
    if not all(isinstance(v, (fb.Tensor, numbers.Number)) for v in values):
        raise TypeError(
            "[broadcast_all] Input arguments must all be instances of numbers.Number or Tensor, got "
            + ", ".join(type(v).__name__ for v in values)
        )
    tensors = [v for v in values if isinstance(v, fb.Tensor)]
    if len(tensors) == len(values):
        return tuple(fb.broadcast_tensors(*values))
    dtype = tensors[0].dtype if tensors else fb.get_default_dtype()
    device = tensors[0].device if tensors else None
    as_tensors = [v if isinstance(v, fb.Tensor) else fb.tensor(v, dtype=dtype, device=device) for v in values]
    return tuple(fb.broadcast_tensors(*as_tensors))


def _sum_rightmost(value: fb.Tensor, dim: int) -> fb.Tensor:
    """Sums the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits: fb.Tensor, is_binary: bool = False) -> fb.Tensor:
    """Probabilities from logits: a sigmoid when ``is_binary``, else a softmax over the last dimension.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.utils import logits_to_probs
        >>> logits_to_probs(fb.tensor([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    if is_binary:
        return fb.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs: fb.Tensor) -> fb.Tensor:
    """Clamps probabilities into ``[eps, 1 - eps]`` (``eps`` of their dtype) so that their logarithms are finite.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.utils import clamp_probs
        >>> bool(clamp_probs(fb.tensor([0.0]))[0] > 0)
        True
    """
    eps = fb.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: fb.Tensor, is_binary: bool = False) -> fb.Tensor:
    """Logits from probabilities: ``log(p) - log1p(-p)`` when ``is_binary``, else ``log(p)`` (probabilities clamped).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.utils import probs_to_logits
        >>> probs_to_logits(fb.tensor([0.5]), is_binary=True).tolist()
        [0.0]
    """
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property:  # noqa: N801  (PyTorch's name)
    """A property computed once per instance on first access, then stored as an attribute of the instance.

    Example:
        >>> from flambeau.distributions.utils import lazy_property
        >>> class A:
        ...     @lazy_property
        ...     def x(self):
        ...         return 3
        >>> A().x
        3
    """

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):  # noqa: N801
    """What a lazy_property looks like on the class: a property too, so documentation tools list it."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)


def _require_tensor(where: str, name: str, value: Any) -> None:
    if not isinstance(value, fb.Tensor):
        raise TypeError(f"[{where}] expected `{name}` to be a Tensor, got {type(value).__name__}")


def _probs_or_logits(name: str, probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise fb.FlambeauError(f"[{name}] Either `probs` or `logits` must be specified, but not both.")


class _BinaryProbsOrLogits:
    """A success probability given as ``probs`` or as ``logits``; the other is computed on first use."""

    def _set_probs_or_logits(self, probs: Any, logits: Any) -> fb.Size:
        """Stores the parameter given (as a tensor) and returns the batch shape it implies."""
        _probs_or_logits(type(self).__name__, probs, logits)
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        setattr(self, "probs" if probs is not None else "logits", param)
        self._param = param
        return fb.Size() if isinstance(given, numbers.Number) else fb.Size(param.shape)

    @lazy_property
    def logits(self) -> fb.Tensor:
        """The log-odds of success (computed from ``probs`` when they were given).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Bernoulli
            >>> Bernoulli(fb.tensor([0.5])).logits.tolist()
            [0.0]
        """
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> fb.Tensor:
        """The probability of success (computed from ``logits`` when they were given).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Bernoulli
            >>> Bernoulli(logits=fb.tensor([0.0])).probs.tolist()
            [0.5]
        """
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> fb.Size:
        """The shape of the parameter given.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Bernoulli
            >>> Bernoulli(fb.full((2,), 0.5)).param_shape
            flambeau.Size([2])
        """
        return fb.Size(self._param.shape)


def _tril_flat_index(n: int, diag: int, device: Any) -> fb.Tensor:
    """Row-major flat indices of the entries of an ``n x n`` matrix on or below diagonal ``diag``."""
    rows, cols = fb.tril_indices(n, n, offset=diag, device=device)
    return rows * n + cols


def tril_matrix_to_vec(mat: fb.Tensor, diag: int = 0) -> fb.Tensor:
    """The entries of a batch of square matrices on or below diagonal ``diag``, row by row, as vectors.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.utils import tril_matrix_to_vec
        >>> tril_matrix_to_vec(fb.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [1.0, 3.0, 4.0]
    """
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise fb.FlambeauError(f"[tril_matrix_to_vec] diag ({diag}) provided is outside [{-n}, {n - 1}].")
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat.index_select(-1, _tril_flat_index(n, diag, mat.device))


def vec_to_tril_matrix(vec: fb.Tensor, diag: int = 0) -> fb.Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: square matrices, zero above diagonal ``diag``.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions.utils import vec_to_tril_matrix
        >>> vec_to_tril_matrix(fb.tensor([1.0, 3.0, 4.0])).tolist()
        [[1.0, 0.0], [3.0, 4.0]]
    """
    m = vec.shape[-1]
    # The matrix size n: the positive root of n^2 + (1 + 2 diag) n - |diag| (diag + 1) - 2 m = 0.
    b = 1 + 2 * diag
    n_real = (-b + (b * b + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    n = round(n_real)
    if abs(n - n_real) > 1e-9:
        raise fb.FlambeauError(
            f"[vec_to_tril_matrix] The size of last dimension is {m} which cannot be expressed as the lower "
            "triangular part of a square D x D matrix."
        )
    batch = tuple(vec.shape[:-1])
    index = _tril_flat_index(n, diag, vec.device).expand(batch + (m,))
    flat = fb.zeros(batch + (n * n,), dtype=vec.dtype, device=vec.device).scatter(-1, index, vec)
    return flat.reshape(batch + (n, n))


def _inherit_docstrings(cls: type, root: type) -> None:
    """Gives the public methods a subclass overrides without a docstring the docstring of ``root``'s method.

    An override keeps its contract (``Normal.log_prob`` is ``Distribution.log_prob`` for the normal family),
    so its reference entry and ``help()`` show the base class's text and example, as PyTorch's documentation does.
    """
    for name, value in vars(cls).items():
        if name.startswith("_") or not callable(value) or getattr(value, "__doc__", None):
            continue
        base = getattr(root, name, None)
        if base is not None and getattr(base, "__doc__", None):
            value.__doc__ = base.__doc__


def _standard_normal(shape: tuple[int, ...], dtype: Any, device: Any) -> fb.Tensor:
    return fb.randn(shape, dtype=dtype, device=device)


def _uniform_open(shape: tuple[int, ...], dtype: Any, device: Any) -> fb.Tensor:
    """Uniform samples in the open interval (0, 1): the smallest positive normal value replaces 0."""
    u = fb.rand(shape, dtype=dtype, device=device)
    return u.clamp(min=fb.finfo(dtype).tiny, max=1.0 - fb.finfo(dtype).eps)
