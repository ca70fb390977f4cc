"""Learning-rate schedulers (``flambeau_nn.optim.lr_scheduler``), PyTorch's formulas and state.

A scheduler rewrites ``group["lr"]`` of its optimizer's param groups each
time ``scheduler.step()`` is called (once per epoch, after ``optimizer.step()``).
The formulas are PyTorch's "chainable" ones (each step scales the current
lr), so the learning rates match PyTorch's to the last bit, and several
schedulers can drive one optimizer (``ChainedScheduler``). Every scheduler's
``state_dict()`` has the keys of PyTorch's (its attributes except the
optimizer), so one saved by PyTorch loads here and the reverse.

Example:
    >>> import flambeau_nn as nn
    >>> opt = nn.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
    >>> sched = nn.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step(); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]

The schedulers are written in private modules by family (``_base``: ``LRScheduler``; ``_lambda``;
``_decay``: the formulas of the epoch; ``_composite``; ``_plateau``; ``_cyclic``) and are public here
only, under this module's name (their ``__module__``), so pickles, reprs and the API reference name
``flambeau_nn.optim.lr_scheduler.StepLR``.
"""

from __future__ import annotations

# With the public names, the private helpers, reachable here as before the split (swa_utils imports
# _per_group): hence the noqa F401.
from flambeau_nn.optim.lr_scheduler._base import (  # noqa: F401
    EPOCH_DEPRECATION_WARNING,
    LRScheduler,
    _check_optimizer,
    _group_values,
    _lambdas_state,
    _load_lambdas_state,
    _LRScheduler,
    _per_group,
    _set_group_value,
)
from flambeau_nn.optim.lr_scheduler._composite import ChainedScheduler, SequentialLR, _check_schedulers  # noqa: F401
from flambeau_nn.optim.lr_scheduler._cyclic import (  # noqa: F401
    CyclicLR,
    OneCycleLR,
    _init_momentum_cycle,
    _phase,
    _set_momentums,
)
from flambeau_nn.optim.lr_scheduler._decay import (
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LinearLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from flambeau_nn.optim.lr_scheduler._lambda import LambdaLR, MultiplicativeLR, _lambdas_for  # noqa: F401
from flambeau_nn.optim.lr_scheduler._plateau import ReduceLROnPlateau
from flambeau_nn.optim.optimizer import Optimizer  # noqa: F401  (as torch.optim.lr_scheduler.Optimizer)

__all__ = [
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "CyclicLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "PolynomialLR",
    "LRScheduler",
]


def _publish() -> None:
    """Names this module as the home of what it re-exports from its private modules: the classes, their
    methods (doctest finds an example by its ``__module__``) and the helpers, as when they were written
    here."""
    for obj in list(globals().values()):
        home = getattr(obj, "__module__", None)
        if not (isinstance(home, str) and home.startswith(f"{__name__}._")):
            continue
        obj.__module__ = __name__
        for member in vars(obj).values() if isinstance(obj, type) else ():
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            funcs = (member.fget, member.fset, member.fdel) if isinstance(member, property) else (member,)
            for func in funcs:
                if getattr(func, "__module__", None) == home:
                    func.__module__ = __name__


_publish()
