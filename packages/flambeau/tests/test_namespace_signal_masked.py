"""fb.signal.windows, fb.masked and the top-level window functions are core's, reachable under PyTorch's
names (``import flambeau.signal.windows``, ``from flambeau.masked import sum``), and a PyTorch program's
calls give torch's values."""

import importlib

import flambeau as fb
import flambeau_core
import numpy as np
import torch


def test_modules_are_cores_and_importable_by_name():
    assert importlib.import_module("flambeau.signal.windows") is flambeau_core.signal.windows
    assert importlib.import_module("flambeau.masked") is flambeau_core.masked
    assert fb.signal.windows is flambeau_core.signal.windows and fb.masked is flambeau_core.masked
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"):
        assert getattr(fb, name) is getattr(flambeau_core, name)


def test_a_pytorch_style_program():
    from flambeau.masked import mean as masked_mean
    from flambeau.signal.windows import kaiser

    x = fb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]) * fb.hann_window(3)
    m = fb.tensor([[True, False, True], [True, True, False]])
    got = masked_mean(x, 1, mask=m).tolist()
    tx = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]) * torch.hann_window(3)
    want = torch.masked.mean(tx, 1, mask=torch.tensor(m.tolist())).tolist()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(
        kaiser(7, beta=5.0).tolist(), torch.signal.windows.kaiser(7, beta=5.0).tolist(), rtol=1e-6
    )
