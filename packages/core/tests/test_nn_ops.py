"""log_softmax and softmax against PyTorch (and NumPy), any dim, stability, errors."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices


@pytest.mark.parametrize(
    "shape, dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1), ((4, 70000), 1)]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_matches_torch(shape, dim, dtype):
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype) * 5
    got = to_numpy(fc.log_softmax(fc.tensor(a), dim))
    want = torch.log_softmax(torch.from_numpy(a), dim).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_numpy(fc.tensor(a).softmax(dim)), np.exp(want), rtol=1e-5, atol=1e-6)


def test_log_softmax_noncontiguous_and_0d():
    a = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    t = fc.tensor(a.T.copy()).T
    np.testing.assert_allclose(
        to_numpy(t.log_softmax(1)), torch.log_softmax(torch.from_numpy(a), 1).numpy(), rtol=1e-5, atol=1e-6
    )
    assert fc.log_softmax(fc.tensor(3.0), 0).item() == 0.0
    assert fc.log_softmax(fc.zeros(0, 3), 1).shape == (0, 3)


def test_softmax_dtype_argument_casts_first():
    a = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    for name in ("log_softmax", "softmax"):
        got = getattr(fc, name)(fc.tensor(a), 1, dtype=fc.float64)
        want = getattr(torch, name)(torch.from_numpy(a), 1, dtype=torch.float64).numpy()
        assert got.dtype == fc.float64
        np.testing.assert_allclose(to_numpy(got), want, rtol=1e-12)
        assert getattr(fc.tensor(a), name)(1, dtype=fc.float64).dtype == fc.float64


def test_log_softmax_is_stable():
    a = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]], dtype=np.float32)
    got = to_numpy(fc.log_softmax(fc.tensor(a), 1))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, torch.log_softmax(torch.from_numpy(a), 1).numpy(), rtol=1e-5)
    inf = to_numpy(fc.log_softmax(fc.tensor([float("-inf"), 0.0]), 0))
    assert inf[0] == -np.inf and inf[1] == 0.0
    s = to_numpy(fc.softmax(fc.tensor(a), 1))
    np.testing.assert_allclose(s.sum(1), [1.0, 1.0], rtol=1e-6)


def test_softmax_errors():
    with pytest.raises(TypeError, match=r"\[log_softmax\].*int64"):
        fc.log_softmax(fc.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match=r"\[log_softmax\] dimension 2 out of range"):
        fc.log_softmax(fc.zeros(2, 2), 2)
