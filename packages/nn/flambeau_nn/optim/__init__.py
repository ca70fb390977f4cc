"""Optimizers (``flambeau_nn.optim``, PyTorch's ``torch.optim``), ``lr_scheduler`` and ``swa_utils``.

``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad`` step through fused core
ops; ``Adadelta``, ``Adamax``, ``NAdam``, ``RAdam``, ``ASGD``, ``Rprop``,
``SparseAdam``, ``Adafactor``, ``Muon`` compose core tensor ops per parameter; ``LBFGS`` takes a closure.

Example:
    >>> import flambeau_nn as nn
    >>> opt = nn.optim.Adam(nn.Linear(3, 1).parameters(), lr=1e-3)
    >>> opt.param_groups[0]["betas"]
    (0.9, 0.999)
"""

from flambeau_nn.optim import lr_scheduler, swa_utils
from flambeau_nn.optim.adadelta import Adadelta
from flambeau_nn.optim.adafactor import Adafactor
from flambeau_nn.optim.adagrad import Adagrad
from flambeau_nn.optim.adam import Adam, AdamW
from flambeau_nn.optim.adamax import Adamax
from flambeau_nn.optim.asgd import ASGD
from flambeau_nn.optim.lbfgs import LBFGS
from flambeau_nn.optim.muon import Muon
from flambeau_nn.optim.nadam import NAdam
from flambeau_nn.optim.optimizer import Optimizer
from flambeau_nn.optim.radam import RAdam
from flambeau_nn.optim.rmsprop import RMSprop
from flambeau_nn.optim.rprop import Rprop
from flambeau_nn.optim.sgd import SGD
from flambeau_nn.optim.sparse_adam import SparseAdam

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "ASGD",
    "Rprop",
    "SparseAdam",
    "LBFGS",
    "Adafactor",
    "Muon",
    "lr_scheduler",
    "swa_utils",
]
