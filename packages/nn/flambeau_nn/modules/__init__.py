"""The layers and losses (re-exported by ``flambeau_nn``)."""

from flambeau_nn.modules.activation import Flatten, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from flambeau_nn.modules.attention import MultiheadAttention
from flambeau_nn.modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from flambeau_nn.modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from flambeau_nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Fold, Unfold
from flambeau_nn.modules.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d
from flambeau_nn.modules.flatten import Unflatten
from flambeau_nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from flambeau_nn.modules.linear import Identity, Linear
from flambeau_nn.modules.loss import CrossEntropyLoss, MSELoss, NLLLoss
from flambeau_nn.modules.module import Module, RemovableHandle
from flambeau_nn.modules.normalization import GroupNorm, LayerNorm
from flambeau_nn.modules.padding import (
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from flambeau_nn.modules.pixelshuffle import PixelShuffle, PixelUnshuffle
from flambeau_nn.modules.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from flambeau_nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from flambeau_nn.modules.sparse import Embedding, EmbeddingBag
from flambeau_nn.modules.transformer import TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer
from flambeau_nn.modules.upsampling import Upsample

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
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "GroupNorm",
    "Embedding",
    "EmbeddingBag",
    "CrossEntropyLoss",
    "NLLLoss",
    "MSELoss",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
    "Upsample",
    "PixelShuffle",
    "PixelUnshuffle",
    "Conv1d",
    "Conv2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "Unfold",
    "Fold",
    "RNNBase",
    "RNN",
    "LSTM",
    "GRU",
    "RNNCellBase",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
]
