"""Muon (momentum orthogonalized by Newton-Schulz, Jordan et al.) with PyTorch's formulation, for 2-D parameters."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import ComposedOptimizer, check_lr, scalar

__all__ = ["Muon", "muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.775, 2.0315
DEFAULT_NS_STEPS = 5


class Muon(ComposedOptimizer):
    r"""Muon, PyTorch's formulation (``torch.optim.Muon``): for the 2-D weights of hidden layers.

    For each parameter at each step::

        B = momentum * B + (1 - momentum) * g              (momentum_buffer)
        U = lerp(g, B, momentum) if nesterov else B
        O = NewtonSchulz(U)                                (an approximately orthogonal matrix)
        p = p * (1 - lr * weight_decay) - adjusted_lr * O

    ``NewtonSchulz`` runs ``ns_steps`` iterations of the quintic ``X = a X + (b G + c G G) X``
    (``G = X X^T``, ``ns_coefficients=(a, b, c)``) from ``U / max(|U|, eps)``, in
    bfloat16 precision as PyTorch (the products are computed in float32 and
    rounded to bfloat16 where PyTorch's bfloat16 tensors are). ``adjust_lr_fn``:
    ``None``/``"original"`` scales ``lr`` by ``sqrt(max(1, rows / cols))``,
    ``"match_rms_adamw"`` by ``0.2 * sqrt(max(rows, cols))``. Biases,
    embeddings and other non-2-D parameters belong to another optimizer
    (e.g. AdamW). State per parameter: ``momentum_buffer``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.Linear(4, 3, bias=False)
        >>> opt = nn.optim.Muon(model.parameters(), lr=0.02)
        >>> model(fc.ones(2, 4)).sum().backward()
        >>> opt.step()
        >>> sorted(opt.state[model.weight])
        ['momentum_buffer']
    """

    state_names = ("momentum_buffer",)

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        check_lr(self, lr)
        if not 0.0 <= momentum:
            raise FlambeauError(f"[Muon] momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise FlambeauError(f"[Muon] weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise FlambeauError(f"[Muon] Adjust learning rate function {adjust_lr_fn} is not supported")
        if not isinstance(ns_coefficients, (tuple, list)) or len(ns_coefficients) != 3:
            raise FlambeauError(f"[Muon] Coefficients must be a tuple of exactly 3 values, got {ns_coefficients!r}")
        if ns_steps >= 100:
            raise FlambeauError("[Muon] Number of steps must be less than 100 for computational efficiency")
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            momentum=momentum,
            nesterov=nesterov,
            ns_coefficients=tuple(ns_coefficients),
            eps=eps,
            ns_steps=ns_steps,
            adjust_lr_fn=adjust_lr_fn,
        )
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters with its own hyperparameters; every parameter must be 2-D.

        Muon orthogonalizes matrix updates, so a parameter of another rank raises ``FlambeauError``.

        Example:
            >>> import flambeau as fb
            >>> opt = fb.optim.Muon([fb.zeros(2, 2)], lr=0.02)
            >>> opt.add_param_group({"params": [fb.zeros(3, 2)], "lr": 0.01})
            >>> [g["lr"] for g in opt.param_groups]
            [0.02, 0.01]
            >>> opt.add_param_group({"params": [fb.zeros(3)]})  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            flambeau_core.FlambeauError: [Muon] Muon only supports 2D parameters ... size: (3,)
        """
        super().add_param_group(param_group)
        for p in self.param_groups[-1]["params"]:
            if p.dim() != 2:
                raise FlambeauError(
                    f"[Muon] Muon only supports 2D parameters whereas we found a parameter with size: {tuple(p.shape)}"
                )

    def init_state(self, group: dict[str, Any], p: Tensor) -> dict[str, Any]:
        """The fresh state of parameter ``p`` in ``group``: its ``momentum_buffer`` (zeros like ``p``).

        Example:
            >>> import flambeau as fb
            >>> p = fb.zeros(2, 3)
            >>> opt = fb.optim.Muon([p])
            >>> opt.init_state(opt.param_groups[0], p)["momentum_buffer"].shape
            flambeau.Size([2, 3])
        """
        return {"momentum_buffer": fc.zeros_like(p)}

    def update(self, group, params, grads, momentum_buffers) -> None:
        """One Muon step over ``params`` (the group's 2-D parameters that have a gradient), in place.

        ``step()`` calls it under ``no_grad`` with the momentum buffers; call ``step()`` rather than this.

        Example:
            >>> import flambeau as fb
            >>> p = fb.eye(2)
            >>> opt = fb.optim.Muon([p], lr=0.1)
            >>> group = opt.param_groups[0]
            >>> buf = opt.init_state(group, p)["momentum_buffer"]
            >>> with fb.no_grad():
            ...     opt.update(group, [p], [fb.tensor([[1.0, 0.0], [0.0, 1.0]])], [buf])
            >>> p.round(decimals=3)
            tensor([[0.8780, 0.0000],
                    [0.0000, 0.8780]])
        """
        muon(
            params,
            grads,
            momentum_buffers,
            lr=scalar(group["lr"]),
            weight_decay=group["weight_decay"],
            momentum=group["momentum"],
            nesterov=group["nesterov"],
            ns_coefficients=group["ns_coefficients"],
            ns_steps=group["ns_steps"],
            eps=group["eps"],
            adjust_lr_fn=group["adjust_lr_fn"],
        )


def _bf16(x: Tensor) -> Tensor:
    """``x`` rounded to bfloat16 precision (kept in float32: core's matmul has no bfloat16 kernel)."""
    return x.to(fc.bfloat16).to(fc.float32)


def zeropower_via_newtonschulz(
    grad: Tensor, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float
) -> Tensor:
    """An approximately orthogonal matrix with the singular vectors of ``grad`` (float32, bfloat16 precision)."""
    if grad.dim() != 2:
        raise FlambeauError(f"[Muon] Input tensor gradient must be a 2D matrix, got shape {tuple(grad.shape)}")
    a, b, c = ns_coefficients
    x = _bf16(grad.to(fc.float32))
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _bf16(x.norm()).clamp(min=eps)
    x = _bf16(x / _bf16(norm))
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T)
        gram_update = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + gram_update @ x)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


def muon(
    params: list[Tensor],
    grads: list[Tensor],
    momentum_buffers: list[Tensor],
    *,
    lr: float,
    weight_decay: float,
    momentum: float,
    nesterov: bool,
    ns_coefficients: tuple[float, float, float],
    ns_steps: int,
    eps: float,
    adjust_lr_fn: str | None,
) -> None:
    """One Muon step over ``params``, updating the momentum buffers in place (call under ``no_grad``)."""
    for p, g, buf in zip(params, grads, momentum_buffers, strict=True):
        if g.dim() != 2:
            raise FlambeauError(f"[Muon] Param gradient must be a 2D matrix, got shape {tuple(g.shape)}")
        buf.lerp_(g, 1 - momentum)
        update = g.lerp(buf, momentum) if nesterov else buf
        update = zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps)
        p.mul_(1 - lr * weight_decay)
        p.add_(update.to(p.dtype), alpha=-_adjust_lr(lr, adjust_lr_fn, tuple(p.shape)))
