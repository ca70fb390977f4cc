"""End to end: small models learn (XOR with an MLP and Adam; linear regression with SGD + momentum)."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
from nn_testing import to_numpy


def test_mlp_learns_xor():
    x = fc.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = fc.tensor([0, 1, 1, 0])
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = nn.optim.Adam(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(200):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    assert to_numpy(model(x)).argmax(1).tolist() == [0, 1, 1, 0]


def test_linear_regression_with_sgd():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((256, 3)).astype("float32")
    true_w, true_b = np.array([[2.0, -3.0, 0.5]], dtype="float32"), 1.5
    ys = xs @ true_w.T + true_b
    x, y = fc.tensor(xs), fc.tensor(ys)
    model = nn.Linear(3, 1)
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(300):
        opt.zero_grad()
        loss = nn.MSELoss()(model(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 1e-6
    np.testing.assert_allclose(to_numpy(model.weight), true_w, atol=1e-3)
    np.testing.assert_allclose(to_numpy(model.bias), [true_b], atol=1e-3)
