"""Training from a plain Python iterable instead of flambeau's DataLoader.

The rest of flambeau accepts any iterable in the DataLoader's place
(ARCHITECTURE.md, "data"): a generator yielding (x, y) batches is enough.
"""

from __future__ import annotations

import flambeau as fb
import numpy as np
from _problems import blobs


def batches_of_tensors(x: np.ndarray, y: np.ndarray, batch_size: int, seed: int):
    """A generator: shuffles with NumPy, yields flambeau tensors."""
    order = np.random.default_rng(seed).permutation(len(x))
    for start in range(0, len(x), batch_size):
        idx = order[start : start + batch_size]
        yield fb.from_numpy(x[idx]), fb.from_numpy(y[idx])


def batches_from_lists(x: np.ndarray, y: np.ndarray, batch_size: int):
    """A generator of tensors built from Python lists (no NumPy interop at all)."""
    for start in range(0, len(x), batch_size):
        yield fb.tensor(x[start : start + batch_size].tolist()), fb.tensor(y[start : start + batch_size].tolist())


def accuracy(model, x: np.ndarray, y: np.ndarray) -> float:
    with fb.no_grad():
        pred = model(fb.from_numpy(x)).argmax(dim=1)
    return (pred == fb.from_numpy(y)).sum().item() / len(y)


def train(model, optimizer, epochs, make_batches) -> list[float]:
    loss_fn = fb.nn.CrossEntropyLoss()
    losses = []
    for epoch in range(epochs):
        total, count = 0.0, 0
        for xb, yb in make_batches(epoch):
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * yb.shape[0]
            count += yb.shape[0]
        losses.append(total / count)
    return losses


def _mlp(features: int, classes: int):
    nn = fb.nn
    return nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, classes))


def test_generator_of_tensors_trains_a_classifier():
    fb.manual_seed(0)
    x_all, y_all = blobs(n=600, seed=1)
    x, x_test, y, y_test = x_all[:450], x_all[450:], y_all[:450], y_all[450:]
    model = _mlp(8, 3)
    opt = fb.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = train(model, opt, 8, lambda epoch: batches_of_tensors(x, y, 32, seed=epoch))
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(np.isfinite(losses))
    assert accuracy(model, x_test, y_test) >= 0.9


def test_generator_of_list_tensors_with_adam_decreases_the_loss():
    fb.manual_seed(1)
    x, y = blobs(n=256, classes=4, features=5, seed=2)
    model = _mlp(5, 4)
    opt = fb.optim.Adam(model.parameters(), lr=0.01)
    losses = train(model, opt, 6, lambda epoch: batches_from_lists(x, y, 64))
    assert losses[-1] < 0.5 * losses[0], losses
    assert accuracy(model, x, y) >= 0.9


def test_infinite_iterator_with_a_step_budget():
    """Any iterator works, including an endless one the loop stops itself."""
    fb.manual_seed(2)
    x, y = blobs(n=200, classes=2, features=4, seed=3)

    def forever():
        epoch = 0
        while True:
            yield from batches_of_tensors(x, y, 20, seed=epoch)
            epoch += 1

    model = _mlp(4, 2)
    opt = fb.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = fb.nn.CrossEntropyLoss()
    first = last = None
    for step, (xb, yb) in enumerate(forever()):
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
        if step == 60:
            break
    assert last < 0.5 * first
