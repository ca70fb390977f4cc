"""The migration bridge: PyTorch state dicts to flambeau tensors and back."""

from __future__ import annotations

import subprocess
import sys

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_interop.torch_bridge import state_dict_from_torch, state_dict_to_torch


def test_linear_state_dict_round_trip_shares_memory():
    torch.manual_seed(0)
    linear = torch.nn.Linear(4, 3)
    sd = linear.state_dict()
    fb_sd = state_dict_from_torch(sd)
    assert list(fb_sd) == ["weight", "bias"]
    for name, value in sd.items():
        t = fb_sd[name]
        assert isinstance(t, fc.Tensor) and t.dtype == fc.float32
        assert t.shape == tuple(value.shape)
        assert t.data_ptr() == value.data_ptr()  # zero copy
        np.testing.assert_array_equal(t.numpy(), value.numpy())

    back = state_dict_to_torch(fb_sd)
    fresh = torch.nn.Linear(4, 3)
    fresh.load_state_dict(back)
    x = torch.randn(5, 4)
    assert torch.equal(fresh(x), linear(x))
    assert back["weight"].data_ptr() == linear.weight.data_ptr()


def test_flambeau_computation_on_torch_weights_matches_torch():
    torch.manual_seed(1)
    linear = torch.nn.Linear(4, 3)
    fb_sd = state_dict_from_torch(linear)  # a module is accepted too
    x = torch.randn(2, 4)
    y = fc.matmul(fc.tensor(x.tolist()), fb_sd["weight"].t()).numpy() + fb_sd["bias"].numpy()
    np.testing.assert_allclose(y, linear(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_copy_true_detaches_memory():
    linear = torch.nn.Linear(2, 2)
    fb_sd = state_dict_from_torch(linear.state_dict(), copy=True)
    assert fb_sd["weight"].data_ptr() != linear.weight.data_ptr()
    back = state_dict_to_torch(fb_sd, copy=True)
    assert back["weight"].data_ptr() != fb_sd["weight"].data_ptr()
    assert torch.equal(back["weight"], linear.weight.detach())


def test_buffers_dtypes_and_non_tensors_pass_through():
    bn = torch.nn.BatchNorm1d(3)
    sd = bn.state_dict()
    sd["_extra_state"] = {"note": "kept as is"}
    fb_sd = state_dict_from_torch(sd)
    assert fb_sd["num_batches_tracked"].dtype == fc.int64
    assert fb_sd["num_batches_tracked"].shape == ()
    assert fb_sd["_extra_state"] is sd["_extra_state"]
    back = state_dict_to_torch(fb_sd)
    assert back["num_batches_tracked"].dtype == torch.int64
    assert back["_extra_state"] is sd["_extra_state"]
    bn2 = torch.nn.BatchNorm1d(3)
    del back["_extra_state"]
    bn2.load_state_dict(back)


def test_views_and_conjugate_free_tensors_convert():
    w = torch.arange(12.0).reshape(3, 4)
    fb_sd = state_dict_from_torch({"t": w.t(), "neg": w._neg_view()})
    assert fb_sd["t"].data_ptr() == w.data_ptr() and fb_sd["t"].stride() == (1, 4)
    np.testing.assert_array_equal(fb_sd["neg"].numpy(), -w.numpy())


def test_bridge_errors():
    with pytest.raises(TypeError, match=r"\[state_dict_from_torch\] entry 'q' has dtype torch.qint8"):
        state_dict_from_torch({"q": torch.quantize_per_tensor(torch.zeros(2), 0.1, 0, torch.qint8)})
    with pytest.raises(TypeError, match=r"\[state_dict_from_torch\] entry 's' has layout torch.sparse_coo"):
        state_dict_from_torch({"s": torch.zeros(2).to_sparse()})
    with pytest.raises(TypeError, match=r"\[state_dict_from_torch\] entry 'u'.*unsupported DLPack dtype complex32"):
        state_dict_from_torch({"u": torch.zeros(2, dtype=torch.complex32)})
    with pytest.raises(TypeError, match=r"\[state_dict_to_torch\] expected a state_dict .* got list"):
        state_dict_to_torch([1, 2])


def test_importing_the_bridge_does_not_import_torch():
    code = (
        "import sys, flambeau_interop, flambeau_interop.torch_bridge; "
        "print('torch' in sys.modules, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
