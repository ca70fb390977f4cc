"""End to end through ``import flambeau as fb``: DataLoader workers + autograd + optim + save/load."""

from __future__ import annotations

import gc
import time

import flambeau as fb
import numpy as np
import psutil
import pytest
from _problems import blobs


def _model():
    nn = fb.nn
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 3))


def _wait_for_no_children(timeout: float = 5.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        children = [c for c in psutil.Process().children(recursive=True) if c.is_running()]
        children = [c for c in children if c.status() != psutil.STATUS_ZOMBIE]
        if not children or time.monotonic() > deadline:
            return children
        time.sleep(0.05)


def test_train_with_worker_loader_then_save_and_load(tmp_path):
    fb.manual_seed(0)
    x, y = blobs(n=800, seed=5)
    x_train, y_train = fb.from_numpy(x[:600]), fb.from_numpy(y[:600])
    x_test, y_test = fb.from_numpy(x[600:]), fb.from_numpy(y[600:])

    loader = fb.utils.data.DataLoader(
        fb.utils.data.TensorDataset(x_train, y_train), batch_size=32, shuffle=True, num_workers=2
    )
    model = _model()
    loss_fn = fb.nn.CrossEntropyLoss()
    opt = fb.optim.Adam(model.parameters(), lr=0.01)
    epoch_losses = []
    for _ in range(4):
        total, seen = 0.0, 0
        for xb, yb in loader:
            assert isinstance(xb, fb.Tensor) and xb.dtype == fb.float32 and yb.dtype == fb.int64
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item() * yb.shape[0]
            seen += yb.shape[0]
        assert seen == 600
        epoch_losses.append(total / seen)
    assert epoch_losses[-1] < 0.5 * epoch_losses[0], epoch_losses

    model.eval()
    with fb.no_grad():
        logits = model(x_test)
    pred = logits.argmax(dim=1)
    acc = (pred == y_test).sum().item() / y_test.shape[0]
    assert acc >= 0.9

    path = tmp_path / "model.safetensors"
    fb.save(model.state_dict(), str(path))

    # The file is plain safetensors: another reader sees the same parameters.
    from safetensors.numpy import load_file

    on_disk = load_file(str(path))
    state = model.state_dict()
    assert set(on_disk) == set(state)
    for name, value in state.items():
        np.testing.assert_array_equal(on_disk[name], value.detach().numpy())

    fresh = _model()
    fresh.load_state_dict(fb.load(str(path)))
    fresh.eval()
    with fb.no_grad():
        logits_again = fresh(x_test)
    np.testing.assert_array_equal(logits_again.numpy(), logits.numpy())

    # Workers are gone once the loader is (no process left behind).
    del loader
    gc.collect()
    assert _wait_for_no_children() == []


def test_loader_worker_error_reaches_the_training_loop():
    class Broken(fb.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 5:
                raise ValueError(f"bad sample {i}")
            return fb.tensor([float(i)]), fb.tensor(i)

    loader = fb.utils.data.DataLoader(Broken(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError, match="bad sample 5"):
        for _ in loader:
            pass
    del loader
    gc.collect()
    assert _wait_for_no_children() == []


def test_memory_statistics_follow_training():
    fb.memory.reset_peak_memory_stats()
    base = fb.memory.memory_allocated()
    model = _model()
    x = fb.randn(256, 8)
    y = fb.zeros(256, dtype=fb.int64)
    loss = fb.nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
    assert fb.memory.max_memory_allocated() > base
    assert fb.memory.memory_stats()["allocated_bytes.all.current"] == fb.memory.memory_allocated()
    del model, x, y, loss
    gc.collect()
    assert fb.memory.memory_allocated() <= base
