"""The layers and losses (re-exported by ``flambeau_nn``)."""

from flambeau_nn.modules.activation import Flatten, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from flambeau_nn.modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from flambeau_nn.modules.dropout import Dropout
from flambeau_nn.modules.flatten import Unflatten
from flambeau_nn.modules.linear import Identity, Linear
from flambeau_nn.modules.loss import CrossEntropyLoss, MSELoss, NLLLoss
from flambeau_nn.modules.module import Module, RemovableHandle

__all__ = [
    "Module",
    "RemovableHandle",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Unflatten",
    "Linear",
    "Identity",
    "ReLU",
    "Tanh",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "Flatten",
    "Dropout",
    "CrossEntropyLoss",
    "NLLLoss",
    "MSELoss",
]
