"""Linear layers under bfloat16 autocast against torch's autocast: the backward of a bfloat16 linear is core's
_linear_backward (Note [bfloat16 linear backward]), on each multiply path (AMX tiles, vdpbf16ps, the float32
fallback): the loss and every gradient close to torch's, float32 gradients that are float32 casts of
bfloat16 values (as torch's), a bias gradient too, layers without a gradient for their input."""

from __future__ import annotations

import flambeau as fb
import numpy as np
import pytest
import torch

PATHS = {"amx": {"bf16_amx": True}, "vdpbf16ps": {"bf16_amx": False}, "float32": {"max_cpu_capability": "avx2"}}
SIZES = [(784, 512), (512, 512), (512, 10)]


def _data(seed: int = 3):
    rng = np.random.default_rng(seed)
    params = []
    for i, o in SIZES:
        params.append((rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32))
        params.append((rng.standard_normal(o) * 0.1).astype(np.float32))
    return params, rng.standard_normal((128, 784)).astype(np.float32), rng.integers(0, 10, 128)


def _step(lib, params, x, y):
    ws = [lib.tensor(p, requires_grad=True) for p in params]
    with lib.autocast("cpu", dtype=lib.bfloat16):
        h = lib.tensor(x)
        for i in range(0, len(ws), 2):
            h = lib.nn.functional.linear(h, ws[i], ws[i + 1])
            if i + 2 < len(ws):
                h = lib.relu(h)
        out_dtype = h.dtype
        loss = lib.nn.functional.cross_entropy(h, lib.tensor(y))
    loss.backward()
    return out_dtype, loss, [w.grad for w in ws]


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("threads", [1, 2])
def test_mlp_gradients_match_torch(path, threads):
    params, x, y = _data()
    old = fb.get_num_threads()
    try:
        fb.set_num_threads(threads)
        with fb.backends.cpu.flags(**PATHS[path]):
            out_dtype, loss, grads = _step(fb, params, x, y)
    finally:
        fb.set_num_threads(old)
    t_dtype, tloss, tgrads = _step(torch, params, x, y)
    assert out_dtype == fb.bfloat16 and t_dtype == torch.bfloat16
    assert loss.dtype == fb.float32 and tloss.dtype == torch.float32
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-2)
    for g, t in zip(grads, tgrads, strict=True):
        assert g.dtype == fb.float32 and t.dtype == torch.float32
        got, want = g.numpy(), t.numpy()
        # Each gradient is a bfloat16 product (or sum) cast to float32, as torch's.
        np.testing.assert_array_equal(got, g.to(fb.bfloat16).float().numpy())
        # Within a few bfloat16 units of torch's (other summation orders, bfloat16 activations).
        np.testing.assert_allclose(got, want, rtol=0, atol=2.0**-5 * np.abs(want).max())
        assert np.corrcoef(got.ravel(), want.ravel())[0, 1] > 0.999
