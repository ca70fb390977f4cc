"""RAdam (rectified Adam, Liu et al. 2019) with PyTorch's update rule."""

from __future__ import annotations

from collections.abc import Iterable

from flambeau_core import Tensor

from flambeau_nn.optim.optimizer import (
    ComposedOptimizer,
    adam_moments_,
    check_adam_hyperparameters,
    check_not_differentiable,
    grad_of,
    scalar,
)

__all__ = ["RAdam", "radam"]


class RAdam(ComposedOptimizer):
    r"""RAdam, PyTorch's formulation.

    For each parameter at step ``t``::

        g = -g if maximize
        p = p * (1 - lr * weight_decay)  if decoupled_weight_decay  else  g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;   rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        p = p - lr * m / (1 - beta1**t) * r_t * sqrt(1 - beta2**t) / (sqrt(v) + eps)   if rho_t > 5
        p = p - lr * m / (1 - beta1**t)                                                 otherwise
        (r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)))

    State per parameter: ``step`` (0-d float32), ``exp_avg``, ``exp_avg_sq``.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.RAdam(nn.Linear(2, 1).parameters(), lr=1e-2, decoupled_weight_decay=True)
        >>> opt.param_groups[0]["decoupled_weight_decay"]
        True
    """

    state_names = ("exp_avg", "exp_avg_sq", "step")

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        betas = check_adam_hyperparameters(self, lr, betas, eps, weight_decay)
        check_not_differentiable(self, differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def update(self, group, params, grads, exp_avgs, exp_avg_sqs, steps) -> None:
        """One RAdam step over ``params`` (the group's parameters that have a gradient), in place.

        ``step()`` calls it under ``no_grad`` with the per-parameter state lists, one per entry of
        ``state_names``; call ``step()`` rather than this.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.RAdam([p], lr=0.1)
            >>> group = opt.param_groups[0]
            >>> state = opt.init_state(group, p)
            >>> with fb.no_grad():
            ...     opt.update(group, [p], [fb.tensor([0.5, -0.5])], *[[state.get(n)] for n in opt.state_names])
            >>> p
            tensor([0.9500, 2.0500])
        """
        beta1, beta2 = group["betas"]
        radam(
            params,
            grads,
            exp_avgs,
            exp_avg_sqs,
            steps,
            beta1=beta1,
            beta2=beta2,
            lr=scalar(group["lr"]),
            weight_decay=group["weight_decay"],
            eps=group["eps"],
            decoupled_weight_decay=group.get("decoupled_weight_decay", False),
            maximize=group["maximize"],
        )


def radam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    state_steps: list[Tensor],
    *,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    eps: float,
    decoupled_weight_decay: bool = False,
    maximize: bool = False,
) -> None:
    """One RAdam step over ``params``, updating the state in place (call under ``no_grad``)."""
    rho_inf = 2 / (1 - beta2) - 1
    decoupled_lr = lr if decoupled_weight_decay else None
    for p, g, exp_avg, exp_avg_sq, step_t in zip(params, grads, exp_avgs, exp_avg_sqs, state_steps, strict=True):
        step_t.add_(1)
        step = step_t.item()
        g = grad_of(p, g, maximize=maximize, weight_decay=weight_decay, decoupled_lr=decoupled_lr)
        adam_moments_(exp_avg, exp_avg_sq, g, beta1, beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        update = exp_avg.div(bias_correction1).mul_(lr)
        rho_t = rho_inf - 2 * step * beta2**step / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = bias_correction2**0.5 / exp_avg_sq.sqrt().add_(eps)
            update.mul_(adaptive).mul_(rect)
        p.sub_(update)
