"""The six benchmark models of ``models.py`` in JAX (``jax.numpy`` + ``jax.lax``), for the JAX-jit rows.

``train_models.py --peers jax`` times these; no flax or optax: each model is an
initialiser and a pure ``apply`` function over a flat dict of parameters keyed
by PyTorch's ``state_dict`` names (``"0.weight"``, ``"3.conv1.weight"``,
``"lstm.weight_hh_l1"``), so a PyTorch model's weights load as they are
(:func:`from_state_dict`) and ``integration_tests/test_models_jax.py`` checks
that the first loss matches PyTorch's for the same weights and inputs.

The same as ``models.py`` in every respect the benchmark compares: layers,
shapes, batch, NCHW images, the initial weights' distributions (PyTorch's
defaults: weights and biases of linear and conv layers uniform in
``+-1/sqrt(fan_in)``, LSTM weights uniform in ``+-1/sqrt(hidden)``, embeddings
standard normal, batch norm weight 1 and bias 0), batch norm in training mode
with running statistics updated (momentum 0.1, unbiased variance, eps 1e-5),
the losses (mean cross-entropy, mean BCE with logits) and
``SGD(lr=0.01, momentum=0.9)`` with PyTorch's update (``buf = 0.9 buf + g``,
``p -= 0.01 buf``; zero buffers give PyTorch's first step, ``buf = g``).

A training step is one jitted function ``step(params, opt_state, batch) ->
(params, opt_state, loss)`` where ``opt_state`` is ``(momentum buffers, model
buffers)`` (the batch-norm running statistics travel with the optimizer state,
as they change on every step) and ``batch`` is ``(forward inputs, target)``;
params and opt_state are donated, so XLA updates them in place as PyTorch's
optimizer does.

Example (needs ``jax``):
    >>> import jax
    >>> m = JaxModel("mlp")
    >>> params, opt_state = m.init(jax.random.PRNGKey(0))
    >>> batch = m.inputs(jax.random.PRNGKey(1))
    >>> params, opt_state, loss = m.step(params, opt_state, batch)
    >>> float(loss) > 0
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

VOCAB, SEQ_LEN = 10_000, 35
USERS, ITEMS = 10_000, 5_000
BATCH = {"mlp": 128, "lenet5": 64, "resnet8": 32, "mobilenet": 32, "lstm": 20, "ncf": 1024}
LR, MOMENTUM = 0.01, 0.9
BN_MOMENTUM, BN_EPS = 0.1, 1e-5

Params = dict[str, jax.Array]


# ------------------------------------------------------------------ initialisers


class _Init:
    """Collects parameters (and batch-norm buffers) under PyTorch's names with PyTorch's default scales."""

    def __init__(self, key: jax.Array) -> None:
        self.key = key
        self.params: Params = {}
        self.buffers: Params = {}

    def _key(self) -> jax.Array:
        self.key, k = jax.random.split(self.key)
        return k

    def _uniform(self, name: str, shape: tuple[int, ...], bound: float) -> None:
        self.params[name] = jax.random.uniform(self._key(), shape, jnp.float32, -bound, bound)

    def linear(self, prefix: str, fin: int, fout: int) -> None:
        bound = 1.0 / math.sqrt(fin)  # kaiming_uniform(a=sqrt(5)) and the bias's bound are both 1/sqrt(fan_in)
        self._uniform(f"{prefix}.weight", (fout, fin), bound)
        self._uniform(f"{prefix}.bias", (fout,), bound)

    def conv(self, prefix: str, cin: int, cout: int, k: int, groups: int = 1, bias: bool = True) -> None:
        fan_in = cin // groups * k * k
        bound = 1.0 / math.sqrt(fan_in)
        self._uniform(f"{prefix}.weight", (cout, cin // groups, k, k), bound)
        if bias:
            self._uniform(f"{prefix}.bias", (cout,), bound)

    def bn(self, prefix: str, c: int) -> None:
        self.params[f"{prefix}.weight"] = jnp.ones((c,), jnp.float32)
        self.params[f"{prefix}.bias"] = jnp.zeros((c,), jnp.float32)
        self.buffers[f"{prefix}.running_mean"] = jnp.zeros((c,), jnp.float32)
        self.buffers[f"{prefix}.running_var"] = jnp.ones((c,), jnp.float32)

    def conv_bn(self, conv: str, bn: str, cin: int, cout: int, k: int, groups: int = 1) -> None:
        self.conv(conv, cin, cout, k, groups, bias=False)
        self.bn(bn, cout)

    def embedding(self, prefix: str, n: int, d: int) -> None:
        self.params[f"{prefix}.weight"] = jax.random.normal(self._key(), (n, d), jnp.float32)

    def lstm(self, prefix: str, fin: int, hidden: int, layers: int) -> None:
        bound = 1.0 / math.sqrt(hidden)
        for layer in range(layers):
            size = fin if layer == 0 else hidden
            self._uniform(f"{prefix}.weight_ih_l{layer}", (4 * hidden, size), bound)
            self._uniform(f"{prefix}.weight_hh_l{layer}", (4 * hidden, hidden), bound)
            self._uniform(f"{prefix}.bias_ih_l{layer}", (4 * hidden,), bound)
            self._uniform(f"{prefix}.bias_hh_l{layer}", (4 * hidden,), bound)


# ------------------------------------------------------------------------ layers


def _linear(p: Params, prefix: str, x: jax.Array) -> jax.Array:
    return x @ p[f"{prefix}.weight"].T + p[f"{prefix}.bias"]


def _conv(p: Params, prefix: str, x: jax.Array, stride: int = 1, groups: int = 1, pad: int | None = None) -> jax.Array:
    """Conv2d on NCHW; ``pad`` defaults to 'same' for an odd kernel (``models.py``'s ``_conv_bn``)."""
    w = p[f"{prefix}.weight"]
    pad = w.shape[-1] // 2 if pad is None else pad
    out = lax.conv_general_dilated(
        x,
        w,
        window_strides=(stride, stride),
        padding=((pad, pad), (pad, pad)),
        dimension_numbers=("NCHW", "OIHW", "NCHW"),
        feature_group_count=groups,
    )
    bias = p.get(f"{prefix}.bias")
    return out if bias is None else out + bias[None, :, None, None]


def _bn(p: Params, s: Params, new_s: Params, prefix: str, x: jax.Array, train: bool) -> jax.Array:
    """BatchNorm2d: batch statistics in training (running ones updated into ``new_s``), running ones in eval."""
    if train:
        mean = x.mean(axis=(0, 2, 3))
        var = x.var(axis=(0, 2, 3))
        n = x.shape[0] * x.shape[2] * x.shape[3]
        rm, rv = f"{prefix}.running_mean", f"{prefix}.running_var"
        new_s[rm] = (1 - BN_MOMENTUM) * s[rm] + BN_MOMENTUM * lax.stop_gradient(mean)
        new_s[rv] = (1 - BN_MOMENTUM) * s[rv] + BN_MOMENTUM * lax.stop_gradient(var) * (n / (n - 1))
    else:
        mean, var = s[f"{prefix}.running_mean"], s[f"{prefix}.running_var"]
    scale = p[f"{prefix}.weight"] * lax.rsqrt(var + BN_EPS)
    shift = p[f"{prefix}.bias"] - mean * scale
    return x * scale[None, :, None, None] + shift[None, :, None, None]


def _conv_bn(
    p: Params, s: Params, new_s: Params, conv: str, bn: str, x: jax.Array, train: bool, stride: int = 1, groups: int = 1
) -> jax.Array:
    return _bn(p, s, new_s, bn, _conv(p, conv, x, stride, groups), train)


def _pool_linear(p: Params, prefix: str, x: jax.Array) -> jax.Array:
    """Adaptive average pooling to 1x1, flatten, linear."""
    return _linear(p, prefix, x.mean(axis=(2, 3)))


def _max_pool2(x: jax.Array) -> jax.Array:
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


relu = jax.nn.relu


# ------------------------------------------------------------------------ models
# Each model: init(_Init) and apply(params, buffers, inputs, train) -> (output, new buffers).


def _mlp_init(b: _Init) -> None:
    b.linear("0", 784, 512)
    b.linear("2", 512, 512)
    b.linear("4", 512, 10)


def _mlp_apply(p: Params, s: Params, inputs: tuple[jax.Array, ...], train: bool) -> tuple[jax.Array, Params]:
    (x,) = inputs
    x = relu(_linear(p, "0", x))
    x = relu(_linear(p, "2", x))
    return _linear(p, "4", x), s


def _lenet5_init(b: _Init) -> None:
    b.conv("0", 1, 6, 5)
    b.conv("3", 6, 16, 5)
    b.linear("7", 400, 120)
    b.linear("9", 120, 84)
    b.linear("11", 84, 10)


def _lenet5_apply(p: Params, s: Params, inputs: tuple[jax.Array, ...], train: bool) -> tuple[jax.Array, Params]:
    (x,) = inputs
    x = _max_pool2(relu(_conv(p, "0", x, pad=2)))
    x = _max_pool2(relu(_conv(p, "3", x, pad=0)))
    x = x.reshape(x.shape[0], -1)
    x = relu(_linear(p, "7", x))
    x = relu(_linear(p, "9", x))
    return _linear(p, "11", x), s


_RESNET_BLOCKS = (("3", 16, 16, 1), ("4", 16, 32, 2), ("5", 32, 64, 2))


def _resnet8_init(b: _Init) -> None:
    b.conv_bn("0", "1", 3, 16, 3)
    for name, cin, cout, stride in _RESNET_BLOCKS:
        b.conv_bn(f"{name}.conv1", f"{name}.bn1", cin, cout, 3)
        b.conv_bn(f"{name}.conv2", f"{name}.bn2", cout, cout, 3)
        if stride != 1 or cin != cout:
            b.conv_bn(f"{name}.shortcut.0", f"{name}.shortcut.1", cin, cout, 1)
    b.linear("8", 64, 10)


def _resnet8_apply(p: Params, s: Params, inputs: tuple[jax.Array, ...], train: bool) -> tuple[jax.Array, Params]:
    (x,) = inputs
    new_s: Params = {}
    x = relu(_conv_bn(p, s, new_s, "0", "1", x, train))
    for name, cin, cout, stride in _RESNET_BLOCKS:
        out = relu(_conv_bn(p, s, new_s, f"{name}.conv1", f"{name}.bn1", x, train, stride))
        out = _conv_bn(p, s, new_s, f"{name}.conv2", f"{name}.bn2", out, train)
        if stride != 1 or cin != cout:
            x = _conv_bn(p, s, new_s, f"{name}.shortcut.0", f"{name}.shortcut.1", x, train, stride)
        x = relu(out + x)
    return _pool_linear(p, "8", x), (new_s if train else s)


_MOBILENET_BLOCKS = (("3", 32, 64, 1), ("4", 64, 128, 2), ("5", 128, 128, 1), ("6", 128, 256, 2), ("7", 256, 256, 1))


def _mobilenet_init(b: _Init) -> None:
    b.conv_bn("0", "1", 3, 32, 3)
    for name, cin, cout, _ in _MOBILENET_BLOCKS:
        b.conv_bn(f"{name}.0", f"{name}.1", cin, cin, 3, groups=cin)
        b.conv_bn(f"{name}.3", f"{name}.4", cin, cout, 1)
    b.linear("10", 256, 10)


def _mobilenet_apply(p: Params, s: Params, inputs: tuple[jax.Array, ...], train: bool) -> tuple[jax.Array, Params]:
    (x,) = inputs
    new_s: Params = {}
    x = relu(_conv_bn(p, s, new_s, "0", "1", x, train))
    for name, cin, _, stride in _MOBILENET_BLOCKS:
        x = relu(_conv_bn(p, s, new_s, f"{name}.0", f"{name}.1", x, train, stride, groups=cin))
        x = relu(_conv_bn(p, s, new_s, f"{name}.3", f"{name}.4", x, train))
    return _pool_linear(p, "10", x), (new_s if train else s)


def _lstm_init(b: _Init) -> None:
    b.embedding("embedding", VOCAB, 128)
    b.lstm("lstm", 128, 256, 2)
    b.linear("decoder", 256, VOCAB)


def _lstm_layer(p: Params, layer: int, x: jax.Array) -> jax.Array:
    """One LSTM layer over a (seq, batch, features) input, PyTorch's gate order i, f, g, o; zero initial state."""
    w_hh = p[f"lstm.weight_hh_l{layer}"].T
    xw = x @ p[f"lstm.weight_ih_l{layer}"].T + (p[f"lstm.bias_ih_l{layer}"] + p[f"lstm.bias_hh_l{layer}"])
    hidden = w_hh.shape[0]
    zeros = jnp.zeros((x.shape[1], hidden), x.dtype)

    def cell(carry: tuple[jax.Array, jax.Array], xw_t: jax.Array) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        h, c = carry
        i, f, g, o = jnp.split(xw_t + h @ w_hh, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    _, out = lax.scan(cell, (zeros, zeros), xw)
    return out


def _lstm_apply(p: Params, s: Params, inputs: tuple[jax.Array, ...], train: bool) -> tuple[jax.Array, Params]:
    (tokens,) = inputs
    x = p["embedding.weight"][tokens]
    x = _lstm_layer(p, 1, _lstm_layer(p, 0, x))
    return _linear(p, "decoder", x), s


def _ncf_init(b: _Init) -> None:
    b.embedding("user_embedding", USERS, 64)
    b.embedding("item_embedding", ITEMS, 64)
    b.linear("mlp.0", 128, 64)
    b.linear("mlp.2", 64, 32)
    b.linear("mlp.4", 32, 1)


def _ncf_apply(p: Params, s: Params, inputs: tuple[jax.Array, ...], train: bool) -> tuple[jax.Array, Params]:
    users, items = inputs
    x = jnp.concatenate([p["user_embedding.weight"][users], p["item_embedding.weight"][items]], axis=1)
    x = relu(_linear(p, "mlp.0", x))
    x = relu(_linear(p, "mlp.2", x))
    return _linear(p, "mlp.4", x).reshape(-1), s


# ------------------------------------------------------------ inputs and losses


def _cross_entropy(logits: jax.Array, target: jax.Array) -> jax.Array:
    logits = logits.reshape(-1, logits.shape[-1])
    target = target.reshape(-1)
    picked = jnp.take_along_axis(logits, target[:, None], axis=1)[:, 0]
    return (jax.nn.logsumexp(logits, axis=1) - picked).mean()


def _bce_with_logits(logits: jax.Array, target: jax.Array) -> jax.Array:
    return (jnp.maximum(logits, 0) - logits * target + jnp.log1p(jnp.exp(-jnp.abs(logits)))).mean()


def _images(*shape: int) -> Callable[[jax.Array, int], tuple[tuple[jax.Array, ...], jax.Array]]:
    def make(key: jax.Array, batch: int) -> tuple[tuple[jax.Array, ...], jax.Array]:
        kx, ky = jax.random.split(key)
        return (jax.random.normal(kx, (batch, *shape), jnp.float32),), jax.random.randint(ky, (batch,), 0, 10)

    return make


def _tokens(key: jax.Array, batch: int) -> tuple[tuple[jax.Array, ...], jax.Array]:
    kx, ky = jax.random.split(key)
    shape = (SEQ_LEN, batch)
    return (jax.random.randint(kx, shape, 0, VOCAB),), jax.random.randint(ky, shape, 0, VOCAB)


def _ratings(key: jax.Array, batch: int) -> tuple[tuple[jax.Array, ...], jax.Array]:
    ku, ki, ky = jax.random.split(key, 3)
    users = jax.random.randint(ku, (batch,), 0, USERS)
    items = jax.random.randint(ki, (batch,), 0, ITEMS)
    return (users, items), jax.random.randint(ky, (batch,), 0, 2).astype(jnp.float32)


_DEFS: dict[str, tuple[Callable[..., None], Callable[..., Any], Callable[..., Any], Callable[..., Any]]] = {
    "mlp": (_mlp_init, _mlp_apply, _images(784), _cross_entropy),
    "lenet5": (_lenet5_init, _lenet5_apply, _images(1, 28, 28), _cross_entropy),
    "resnet8": (_resnet8_init, _resnet8_apply, _images(3, 32, 32), _cross_entropy),
    "mobilenet": (_mobilenet_init, _mobilenet_apply, _images(3, 32, 32), _cross_entropy),
    "lstm": (_lstm_init, _lstm_apply, _tokens, _cross_entropy),
    "ncf": (_ncf_init, _ncf_apply, _ratings, _bce_with_logits),
}
MODELS = tuple(_DEFS)


class JaxModel:
    """One benchmark model in JAX: ``init``, ``inputs``, the jitted ``step`` and ``infer``, ``loss``."""

    def __init__(self, name: str) -> None:
        if name not in _DEFS:
            raise ValueError(f"unknown model {name!r}; expected one of {MODELS}")
        self.name, self.batch = name, BATCH[name]
        self._init, self.apply, self._inputs, self.loss_of = _DEFS[name]
        self.step = jax.jit(self._step, donate_argnums=(0, 1))
        self.infer = jax.jit(self._infer)

    def init(self, key: jax.Array) -> tuple[Params, tuple[Params, Params]]:
        """(params, opt_state) with PyTorch's default initial scales; opt_state = (momentum, buffers)."""
        b = _Init(key)
        self._init(b)
        return b.params, self.opt_state(b.params, b.buffers)

    @staticmethod
    def opt_state(params: Params, buffers: Params) -> tuple[Params, Params]:
        return {k: jnp.zeros_like(v) for k, v in params.items()}, buffers

    def inputs(self, key: jax.Array) -> tuple[tuple[jax.Array, ...], jax.Array]:
        return self._inputs(key, self.batch)

    def loss(self, params: Params, buffers: Params, batch: Any) -> tuple[jax.Array, Params]:
        """(training-mode loss, updated buffers)."""
        inputs, target = batch
        out, new_buffers = self.apply(params, buffers, inputs, True)
        return self.loss_of(out, target), new_buffers

    def _step(self, params: Params, opt_state: tuple[Params, Params], batch: Any) -> Any:
        momentum, buffers = opt_state
        (loss, buffers), grads = jax.value_and_grad(self.loss, has_aux=True)(params, buffers, batch)
        momentum = jax.tree_util.tree_map(lambda m, g: MOMENTUM * m + g, momentum, grads)
        params = jax.tree_util.tree_map(lambda p, m: p - LR * m, params, momentum)
        return params, (momentum, buffers), loss

    def _infer(self, params: Params, buffers: Params, inputs: tuple[jax.Array, ...]) -> jax.Array:
        return self.apply(params, buffers, inputs, False)[0]


def from_state_dict(state: dict[str, Any]) -> tuple[Params, Params]:
    """(params, buffers) from a PyTorch ``state_dict`` converted to NumPy (``num_batches_tracked`` dropped)."""
    params, buffers = {}, {}
    for key, value in state.items():
        if key.endswith("num_batches_tracked"):
            continue
        target = buffers if key.endswith(("running_mean", "running_var")) else params
        target[key] = jnp.asarray(value)
    return params, buffers
