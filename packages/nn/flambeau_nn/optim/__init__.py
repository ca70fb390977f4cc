"""Optimizers (``flambeau_nn.optim``): ``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``, ``lr_scheduler``.

Example:
    >>> import flambeau_nn as nn
    >>> opt = nn.optim.Adam(nn.Linear(3, 1).parameters(), lr=1e-3)
    >>> opt.param_groups[0]["betas"]
    (0.9, 0.999)
"""

from flambeau_nn.optim import lr_scheduler
from flambeau_nn.optim.adam import Adam, AdamW
from flambeau_nn.optim.optimizer import Optimizer
from flambeau_nn.optim.rmsprop import Adagrad, RMSprop
from flambeau_nn.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
