"""The six benchmark models, written once for flambeau and for PyTorch.

Each model is a function of a :class:`Framework`, a namespace holding what a
model needs from its library (``nn``, ``F``, ``optim`` and the tensor
factories), so that the very same definition builds a flambeau model
(``framework("flambeau")``, i.e. ``import flambeau as fb``) and a PyTorch one
(``framework("torch")``). Parameter names, shapes and the order of operations
are therefore identical, and a PyTorch ``state_dict`` loads into the flambeau
model as is (``integration_tests/test_models.py`` checks that both compute the
same thing; ``benchmarks/train_models.py`` times them).

=========  =========================================================  =====
model      layers                                                     batch
=========  =========================================================  =====
mlp        784-512-512-10, ReLU                                       128
lenet5     1x28x28: conv 1->6 5x5 pad 2, ReLU, max-pool 2; conv        64
           6->16 5x5, ReLU, max-pool 2; linear 400-120-84-10, ReLU
resnet8    3x32x32: conv 3->16 + BN + ReLU; BasicBlocks 16->16 s1,     32
           16->32 s2, 32->64 s2; adaptive avg-pool; linear 64->10
mobilenet  3x32x32: conv 3->32 + BN + ReLU; depthwise-separable        32
           blocks 32->64 s1, 64->128 s2, 128->128 s1, 128->256 s2,
           256->256 s1; adaptive avg-pool; linear 256->10
lstm       embedding 10,000x128, 2-layer LSTM 256, linear 256->10,000  20
           (sequence 35 x batch 20, cross-entropy over all tokens)
ncf        user 10,000x64 + item 5,000x64 embeddings, concatenated,  1,024
           MLP 128-64-32-1 with ReLU, BCE with logits
=========  =========================================================  =====

A training step (:class:`TrainStep`) is ``zero_grad(set_to_none=True)``,
forward, loss, ``backward()``, ``SGD(lr=0.01, momentum=0.9).step()``.

Example:
    >>> fw = framework("torch")
    >>> spec = MODELS["mlp"]
    >>> step = TrainStep(spec, fw)
    >>> float(step.step()) > 0
    True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FRAMEWORKS = ("flambeau", "torch")


@dataclass(frozen=True)
class Framework:
    """What a model definition uses from its library: ``nn``, ``F``, ``optim`` and tensor factories."""

    name: str
    lib: Any

    @property
    def nn(self) -> Any:
        return self.lib.nn

    @property
    def F(self) -> Any:  # noqa: N802 (PyTorch's name)
        return self.lib.nn.functional

    @property
    def optim(self) -> Any:
        return self.lib.optim

    def randn(self, *size: int) -> Any:
        return self.lib.randn(*size)

    def randint(self, low: int, high: int, size: tuple[int, ...]) -> Any:
        return self.lib.randint(low, high, size)

    def cat(self, tensors: list[Any], dim: int = 0) -> Any:
        return self.lib.cat(tensors, dim)

    def no_grad(self) -> Any:
        return self.lib.no_grad()

    def set_num_threads(self, n: int) -> None:
        self.lib.set_num_threads(n)

    def manual_seed(self, seed: int) -> None:
        self.lib.manual_seed(seed)

    def has(self, dotted: str) -> bool:
        """Whether ``nn.Conv2d`` / ``F.cross_entropy``-style name exists in this library."""
        head, _, attr = dotted.partition(".")
        return hasattr({"nn": self.nn, "F": self.F}[head], attr)


def framework(name: str) -> Framework:
    """The namespace of ``"flambeau"`` (``import flambeau as fb``) or ``"torch"``."""
    if name not in FRAMEWORKS:
        raise ValueError(f"unknown framework {name!r}; expected one of {FRAMEWORKS}")
    return Framework(name, importlib.import_module(name))


# ------------------------------------------------------------------- the models


def mlp(fw: Framework) -> Any:
    nn = fw.nn
    return nn.Sequential(
        nn.Linear(784, 512),
        nn.ReLU(),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Linear(512, 10),
    )


def lenet5(fw: Framework) -> Any:
    nn = fw.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(400, 120),
        nn.ReLU(),
        nn.Linear(120, 84),
        nn.ReLU(),
        nn.Linear(84, 10),
    )


def _conv_bn(fw: Framework, cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> list[Any]:
    """A bias-free conv ('same' padding for odd kernels) followed by batch norm."""
    nn = fw.nn
    conv = nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False)
    return [conv, nn.BatchNorm2d(cout)]


def resnet8(fw: Framework) -> Any:
    nn, F = fw.nn, fw.F

    class BasicBlock(nn.Module):
        """Two 3x3 convs with batch norm; ReLU after the residual add; 1x1 conv + BN shortcut on a shape change."""

        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = _conv_bn(fw, cin, cout, 3, stride)
            self.conv2, self.bn2 = _conv_bn(fw, cout, cout, 3)
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(*_conv_bn(fw, cin, cout, 1, stride))
            else:
                self.shortcut = nn.Identity()

        def forward(self, x: Any) -> Any:
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    return nn.Sequential(
        *_conv_bn(fw, 3, 16, 3),
        nn.ReLU(),
        BasicBlock(16, 16, 1),
        BasicBlock(16, 32, 2),
        BasicBlock(32, 64, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    )


def mobilenet(fw: Framework) -> Any:
    nn = fw.nn

    def separable(cin: int, cout: int, stride: int) -> Any:
        return nn.Sequential(
            *_conv_bn(fw, cin, cin, 3, stride, groups=cin),
            nn.ReLU(),
            *_conv_bn(fw, cin, cout, 1),
            nn.ReLU(),
        )

    return nn.Sequential(
        *_conv_bn(fw, 3, 32, 3),
        nn.ReLU(),
        separable(32, 64, 1),
        separable(64, 128, 2),
        separable(128, 128, 1),
        separable(128, 256, 2),
        separable(256, 256, 1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(256, 10),
    )


VOCAB, SEQ_LEN = 10_000, 35
USERS, ITEMS = 10_000, 5_000


def lstm_lm(fw: Framework) -> Any:
    nn = fw.nn

    class LSTMLanguageModel(nn.Module):
        """Embedding 10,000x128, 2-layer LSTM with 256 hidden units, decoder 256->10,000 (sequence-first)."""

        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, 128)
            self.lstm = nn.LSTM(128, 256, num_layers=2)
            self.decoder = nn.Linear(256, VOCAB)

        def forward(self, tokens: Any) -> Any:
            out, _ = self.lstm(self.embedding(tokens))
            return self.decoder(out)

    return LSTMLanguageModel()


def ncf(fw: Framework) -> Any:
    nn = fw.nn

    class NCF(nn.Module):
        """Neural collaborative filtering: concatenated user and item embeddings through an MLP to one logit."""

        def __init__(self) -> None:
            super().__init__()
            self.user_embedding = nn.Embedding(USERS, 64)
            self.item_embedding = nn.Embedding(ITEMS, 64)
            self.mlp = nn.Sequential(
                nn.Linear(128, 64),
                nn.ReLU(),
                nn.Linear(64, 32),
                nn.ReLU(),
                nn.Linear(32, 1),
            )

        def forward(self, users: Any, items: Any) -> Any:
            x = fw.cat([self.user_embedding(users), self.item_embedding(items)], dim=1)
            return self.mlp(x).flatten()

    return NCF()


# ------------------------------------------------------------ inputs and losses


def _classification_loss(fw: Framework, out: Any, target: Any) -> Any:
    return fw.F.cross_entropy(out, target)


def _lm_loss(fw: Framework, out: Any, target: Any) -> Any:
    return fw.F.cross_entropy(out.reshape(-1, VOCAB), target.reshape(-1))


def _bce_loss(fw: Framework, out: Any, target: Any) -> Any:
    return fw.F.binary_cross_entropy_with_logits(out, target)


def _images(*shape: int) -> Callable[[Framework, int], tuple[tuple[Any, ...], Any]]:
    def make(fw: Framework, batch: int) -> tuple[tuple[Any, ...], Any]:
        return (fw.randn(batch, *shape),), fw.randint(0, 10, (batch,))

    return make


def _tokens(fw: Framework, batch: int) -> tuple[tuple[Any, ...], Any]:
    return (fw.randint(0, VOCAB, (SEQ_LEN, batch)),), fw.randint(0, VOCAB, (SEQ_LEN, batch))


def _ratings(fw: Framework, batch: int) -> tuple[tuple[Any, ...], Any]:
    users, items = fw.randint(0, USERS, (batch,)), fw.randint(0, ITEMS, (batch,))
    return (users, items), fw.randint(0, 2, (batch,)).float()


@dataclass(frozen=True)
class ModelSpec:
    """A benchmark model: how to build it, its inputs and its loss, and what it needs of the library."""

    name: str
    description: str
    batch: int
    build: Callable[[Framework], Any]
    make_inputs: Callable[[Framework, int], tuple[tuple[Any, ...], Any]]  # (forward args, target)
    loss: Callable[[Framework, Any, Any], Any]
    requires: tuple[str, ...]  # "nn.X" / "F.y" the definition uses
    eval_benchmark: bool = False  # also timed as no-grad eval inference
    has_batch_norm: bool = False

    def missing(self, fw: Framework) -> list[str]:
        """The required layers/functions ``fw`` lacks (e.g. ``["Conv2d", "MaxPool2d"]``)."""
        return [name.partition(".")[2] for name in self.requires if not fw.has(name)]

    def inputs(self, fw: Framework) -> tuple[tuple[Any, ...], Any]:
        return self.make_inputs(fw, self.batch)


_CONV_NET = ("nn.Conv2d", "nn.BatchNorm2d", "nn.ReLU", "nn.AdaptiveAvgPool2d", "nn.Flatten", "nn.Linear")
_CE = ("F.cross_entropy",)
MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in [
        ModelSpec(
            "mlp",
            "MLP 784-512-512-10, ReLU",
            128,
            mlp,
            _images(784),
            _classification_loss,
            ("nn.Linear", "nn.ReLU", *_CE),
            eval_benchmark=True,
        ),
        ModelSpec(
            "lenet5",
            "LeNet-5, 1x28x28",
            64,
            lenet5,
            _images(1, 28, 28),
            _classification_loss,
            ("nn.Conv2d", "nn.MaxPool2d", "nn.ReLU", "nn.Flatten", "nn.Linear", *_CE),
        ),
        ModelSpec(
            "resnet8",
            "ResNet-8, 3x32x32",
            32,
            resnet8,
            _images(3, 32, 32),
            _classification_loss,
            (*_CONV_NET, "nn.Identity", "F.relu", *_CE),
            eval_benchmark=True,
            has_batch_norm=True,
        ),
        ModelSpec(
            "mobilenet",
            "MobileNet-style, 3x32x32",
            32,
            mobilenet,
            _images(3, 32, 32),
            _classification_loss,
            (*_CONV_NET, *_CE),
            has_batch_norm=True,
        ),
        ModelSpec(
            "lstm",
            "LSTM LM, 2x256, vocab 10k, seq 35",
            20,
            lstm_lm,
            _tokens,
            _lm_loss,
            ("nn.Embedding", "nn.LSTM", "nn.Linear", *_CE),
        ),
        ModelSpec(
            "ncf",
            "NCF, 10k users, 5k items, MLP 128-64-32-1",
            1024,
            ncf,
            _ratings,
            _bce_loss,
            ("nn.Embedding", "nn.Linear", "nn.ReLU", "F.binary_cross_entropy_with_logits"),
        ),
    ]
}


class TrainStep:
    """One model, its SGD optimizer and a fixed batch: ``step()`` trains once and returns the loss.

    ``model`` and ``inputs`` (``(forward args, target)``) default to a fresh
    model and fresh random inputs of ``fw``.
    """

    def __init__(
        self,
        spec: ModelSpec,
        fw: Framework,
        model: Any = None,
        inputs: tuple[tuple[Any, ...], Any] | None = None,
    ) -> None:
        self.spec, self.fw = spec, fw
        self.model = spec.build(fw) if model is None else model
        self.args, self.target = spec.inputs(fw) if inputs is None else inputs
        self.optimizer = fw.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)

    def forward_loss(self) -> Any:
        return self.spec.loss(self.fw, self.model(*self.args), self.target)

    def step(self) -> Any:
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.forward_loss()
        loss.backward()
        self.optimizer.step()
        return loss

    def infer(self) -> Any:
        """A no-grad forward pass (call ``model.eval()`` first for inference semantics)."""
        with self.fw.no_grad():
            return self.model(*self.args)
