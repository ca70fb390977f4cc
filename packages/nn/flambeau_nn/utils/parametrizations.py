"""Ready-made parametrizations (PyTorch's ``torch.nn.utils.parametrizations``): ``orthogonal``, ``weight_norm``,
``spectral_norm``, each registered with ``parametrize.register_parametrization``.

State dict keys are PyTorch's: ``parametrizations.weight.original`` (plus
``parametrizations.weight.0.base`` for ``orthogonal``, ``..._u``/``..._v`` for
``spectral_norm``), ``parametrizations.weight.original0``/``original1`` (g and v)
for ``weight_norm``.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> m = orthogonal(nn.Linear(3, 3))
    >>> q = m.weight
    >>> bool(((q @ q.T - fc.eye(3)).abs() < 1e-5).all())
    True
"""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn import modules as _modules
from flambeau_nn.modules.module import Module
from flambeau_nn.utils import parametrize
from flambeau_nn.utils.weight_norm import _norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_MAPS = ("matrix_exp", "cayley", "householder")
# Their weight is (in, out, ...): the output dim is 1.
_CONV_TRANSPOSE = tuple(getattr(_modules, n) for n in dir(_modules) if n.startswith("ConvTranspose"))


def _eye_like(x: Tensor, n: int, k: int | None = None) -> Tensor:
    """The ``n x k`` identity (``k = n`` by default), broadcast over ``x``'s batch dims, in ``x``'s dtype."""
    k = n if k is None else k
    eye = (fc.arange(n).unsqueeze(1) == fc.arange(k).unsqueeze(0)).to(x.dtype)
    return eye.expand(tuple(x.shape[:-2]) + (n, k))


def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's Householder QR of the ``(..., n, k)`` matrices ``a`` (n >= k): R above the diagonal (and on it),
    the reflectors below, and their ``tau`` (no gradient)."""
    a = a.clone()
    n, k = a.shape[-2], a.shape[-1]
    taus = []
    rows = fc.arange(n)
    for j in range(k):
        x = fc.where(rows >= j, a[..., :, j], 0.0)
        alpha = a[..., j, j]
        tail = fc.sqrt((fc.where(rows > j, x, 0.0) ** 2).sum(-1))
        beta = -fc.where(alpha >= 0, 1.0, -1.0).to(a.dtype) * fc.sqrt(alpha * alpha + tail * tail)
        reflect = tail != 0
        beta = fc.where(reflect, beta, alpha)
        tau = fc.where(reflect, (beta - alpha) / beta, 0.0)
        scale = fc.where(reflect, 1.0 / (alpha - beta), 0.0)
        v = fc.where(rows > j, x * scale.unsqueeze(-1), (rows == j).to(a.dtype))
        block = a[..., :, j:]
        block = block - tau.unsqueeze(-1).unsqueeze(-1) * v.unsqueeze(-1) * (v.unsqueeze(-2) @ block)
        column = fc.where(rows > j, v, fc.where(rows == j, beta.unsqueeze(-1), block[..., :, 0]))
        a = fc.cat([a[..., :, :j], column.unsqueeze(-1), block[..., :, 1:]], -1)
        taus.append(tau)
    return a, fc.stack(taus, -1)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a``'s QR with R's diagonal made positive (a unique orthonormal basis of ``a``'s columns)."""
    q, r = fc.linalg.qr(a)
    return q * fc.where(r.diagonal(0, -2, -1) >= 0, 1.0, -1.0).to(a.dtype).unsqueeze(-2)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10 * n * (1.1920928955078125e-07 if q.dtype == fc.float32 else 2.220446049250313e-16)
    return bool(((q.transpose(-2, -1) @ q - _eye_like(q, k)).abs() <= eps).all())


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.transpose(-2, -1)
            n, k = k, n
        # x is now tall (n >= k).
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = fc.cat([x, fc.zeros(tuple(x.shape[:-2]) + (n, n - k), dtype=x.dtype)], -1)
            a = x - x.transpose(-2, -1)
            if self.orthogonal_map == "matrix_exp":
                q = fc.linalg.matrix_exp(a)
            else:
                eye = _eye_like(a, n)
                q = fc.linalg.solve(eye - 0.5 * a, eye + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = fc.linalg.householder_product(a, tau)
            q = q * x.diagonal(0, -2, -1).to(fc.int64).to(x.dtype).unsqueeze(-2)
        if "base" in self._buffers:
            q = self.base @ q
        return q.transpose(-2, -1) if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        with fa.no_grad():
            if tuple(q.shape) != self.shape:
                raise FlambeauError(
                    f"[orthogonal] Expected a matrix or batch of matrices of shape {self.shape}, got {tuple(q.shape)}"
                )
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transposed = n < k
            if transposed:
                q = q.transpose(-2, -1)
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley parametrizations "
                        "when use_trivialization=False."
                    )
                a, tau = _geqrf(q)
                # The diagonal holds the signs that the forward multiplies back; a tau of 0 (no reflection)
                # flips its sign, as PyTorch.
                sign = fc.where(a.diagonal(0, -2, -1) >= 0, 1.0, -1.0).to(a.dtype)
                sign = fc.where(tau == 0, -sign, sign)
                eye = _eye_like(a, n, k).to(fc.bool)
                a = fc.where(eye, sign.unsqueeze(-2).expand(tuple(a.shape)), a)
                return a.transpose(-2, -1) if transposed else a
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:
                extra = fc.randn(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype)
                q = _make_orthogonal(fc.cat([q, extra], -1))
            self.base = q
            # -I: the forward maps it to I for every map (the Householder one reads the diagonal's signs).
            return -_eye_like(q_init, q_init.shape[-2], q_init.shape[-1]).clone()


def orthogonal(
    module: Module, name: str = "weight", orthogonal_map: str | None = None, *, use_trivialization: bool = True
) -> Module:
    r"""Constrains the matrix (or batch of matrices) ``module.<name>`` to be orthogonal (orthonormal rows or columns).

    ``orthogonal_map`` is ``"matrix_exp"`` (default for square matrices),
    ``"cayley"`` or ``"householder"`` (default otherwise). With
    ``use_trivialization=True`` the map is applied around a ``base`` matrix (the
    initial weight made orthogonal), and ``original`` starts at ``-I``.

    Example:
        >>> import flambeau_nn as nn
        >>> sorted(orthogonal(nn.Linear(4, 3)).state_dict())
        ['bias', 'parametrizations.weight.0.base', 'parametrizations.weight.original']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise FlambeauError(f"[orthogonal] Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise FlambeauError(
            f"[orthogonal] Expected a matrix or batch of matrices. Got a tensor of {weight.dim()} dimensions."
        )
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise FlambeauError(
            f'[orthogonal] orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}'
        )
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    return parametrize.register_parametrization(module, name, orth, unsafe=True)


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    r"""Reparametrizes ``module.<name>`` as ``g * v / ||v||``: a magnitude ``g`` and a direction ``v``.

    The norm is over every dim but ``dim`` (all of them for ``dim=None``);
    ``g`` is ``parametrizations.<name>.original0``, ``v`` is ``original1``.

    Example:
        >>> import flambeau_nn as nn
        >>> m = weight_norm(nn.Linear(4, 3))
        >>> tuple(m.parametrizations.weight.original0.shape), tuple(m.parametrizations.weight.original1.shape)
        ((3, 1), (3, 4))
    """
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                f"[spectral_norm] Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                f"{dim})"
            )
        if n_power_iterations <= 0:
            raise FlambeauError(
                f"[spectral_norm] Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            self.register_buffer("_u", F.normalize(fc.randn(h, dtype=weight.dtype), dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(fc.randn(w, dtype=weight.dtype), dim=0, eps=eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place (outside autograd): they are the power method's state, not outputs.
        with fa.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.transpose(0, 1) @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat.detach(), self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = (u * (weight_mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    r"""Divides ``module.<name>`` by its spectral norm (largest singular value), estimated by power iteration.

    Each forward in training mode runs ``n_power_iterations`` steps of the
    power method on the buffers ``_u``/``_v`` (random at registration, then 15
    steps). ``dim`` is the output dim (default 1 for ConvTranspose, else 0).

    Example:
        >>> import flambeau_nn as nn
        >>> sorted(spectral_norm(nn.Linear(4, 3)).state_dict())  # doctest: +NORMALIZE_WHITESPACE
        ['bias', 'parametrizations.weight.0._u', 'parametrizations.weight.0._v',
         'parametrizations.weight.original']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise FlambeauError(f"[spectral_norm] Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _CONV_TRANSPOSE) else 0
    return parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
