"""fb.autocast on the CPU against torch.autocast: the dtype each op gives inside a region (Note [Autocast]),
nesting, enabled=False, the decorator form, the per-thread state and the errors."""

from __future__ import annotations

import threading

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import from_torch, to_numpy

RNG = np.random.default_rng(0)


def _pair(*shape: int, dtype: str = "float32") -> tuple[fc.Tensor, torch.Tensor]:
    t = torch.tensor(RNG.standard_normal(shape).astype(np.float32)).to(getattr(torch, dtype))
    return from_torch(t), t


def _name(dtype: object) -> str:
    return str(dtype).split(".")[-1]


X, TX = _pair(4, 8)
W, TW = _pair(8, 8)
XB, TXB = _pair(4, 8, dtype="bfloat16")
X64, TX64 = _pair(4, 8, dtype="float64")
IMG, TIMG = _pair(2, 3, 6, 6)
K, TK = _pair(4, 3, 3, 3)
LABELS, TLABELS = fc.tensor([0, 3, 1, 7]), torch.tensor([0, 3, 1, 7])

# (name, flambeau call, torch call): each run inside both frameworks' autocast regions, given a tensor of
# the region's low-precision dtype (lo / tlo).
CASES = [
    ("mm", lambda lo: fc.mm(X, W), lambda tlo: torch.mm(TX, TW)),
    ("matmul", lambda lo: X @ W, lambda tlo: TX @ TW),
    ("matmul_vector", lambda lo: fc.matmul(X, W[0]), lambda tlo: torch.matmul(TX, TW[0])),
    ("bmm", lambda lo: fc.bmm(X[None], W[None]), lambda tlo: torch.bmm(TX[None], TW[None])),
    ("matmul_float64", lambda lo: X64 @ X64.t(), lambda tlo: TX64 @ TX64.t()),
    ("linear", lambda lo: fc.linear(X, W, W[0]), lambda tlo: torch.nn.functional.linear(TX, TW, TW[0])),
    ("addmm", lambda lo: fc.addmm(X, X, W), lambda tlo: torch.addmm(TX, TX, TW)),
    ("addmm_low_self", lambda lo: fc.addmm(lo, X, W, beta=0.5), lambda tlo: torch.addmm(tlo, TX, TW, beta=0.5)),
    (
        "baddbmm",
        lambda lo: fc.baddbmm(X[None], X[None], W[None]),
        lambda tlo: torch.baddbmm(TX[None], TX[None], TW[None]),
    ),
    ("addbmm", lambda lo: fc.addbmm(X, lo[None], W[None]), lambda tlo: torch.addbmm(TX, tlo[None], TW[None])),
    (
        "addmm_float64",
        lambda lo: fc.addmm(X64[:, :4], X64, X64.t()),
        lambda tlo: torch.addmm(TX64[:, :4], TX64, TX64.t()),
    ),
    ("conv2d", lambda lo: fc.conv2d(IMG, K, padding=1), lambda tlo: torch.conv2d(TIMG, TK, padding=1)),
    (
        "conv_transpose2d",
        lambda lo: fc.conv_transpose2d(IMG, K.transpose(0, 1)),
        lambda tlo: torch.conv_transpose2d(TIMG, TK.transpose(0, 1)),
    ),
    ("mse_loss", lambda lo: fc.mse_loss(lo, lo), lambda tlo: torch.nn.functional.mse_loss(tlo, tlo)),
    ("l1_loss", lambda lo: fc.l1_loss(lo, X), lambda tlo: torch.nn.functional.l1_loss(tlo, TX)),
    ("prod", lambda lo: lo.prod(), lambda tlo: tlo.prod()),
    ("prod_dim", lambda lo: lo.prod(1), lambda tlo: tlo.prod(1)),
    ("cat", lambda lo: fc.cat([X, lo]), lambda tlo: torch.cat([TX, tlo])),
    ("cat_low", lambda lo: fc.cat([lo, lo]), lambda tlo: torch.cat([tlo, tlo])),
    ("cat_float64", lambda lo: fc.cat([X64, lo]), lambda tlo: torch.cat([TX64, tlo])),
    ("stack", lambda lo: fc.stack([lo, X]), lambda tlo: torch.stack([tlo, TX])),
    ("add", lambda lo: X + lo, lambda tlo: TX + tlo),
    ("softmax", lambda lo: fc.softmax(lo, 1), lambda tlo: torch.softmax(tlo, 1)),
    ("exp", lambda lo: lo.exp(), lambda tlo: tlo.exp()),
    ("sum", lambda lo: lo.sum(), lambda tlo: tlo.sum()),
    ("relu", lambda lo: lo.relu(), lambda tlo: tlo.relu()),
    ("mm_then_relu", lambda lo: fc.mm(X, W).relu(), lambda tlo: torch.mm(TX, TW).relu()),
    # A CNN's ops after a lowered convolution: prelu is lowered; pooling and batch norm keep their input's
    # dtype (float32 parameters with a low-precision input: Note [Batch norm's mixed precision]).
    ("prelu", lambda lo: fc.prelu(IMG, IMG[0, :, 0, 0]), lambda tlo: torch.prelu(TIMG, TIMG[0, :, 0, 0])),
    ("prelu_low", lambda lo: fc.prelu(lo, lo[0]), lambda tlo: torch.prelu(tlo, tlo[0])),
    (
        "max_pool2d",
        lambda lo: fc.max_pool2d_with_indices(lo[None], [2], [], [0], [1])[0],
        lambda tlo: torch.nn.functional.max_pool2d(tlo[None], 2),
    ),
    (
        "avg_pool2d",
        lambda lo: fc.avg_pool2d(lo[None], [2], [], [0]),
        lambda tlo: torch.nn.functional.avg_pool2d(tlo[None], 2),
    ),
    (
        "adaptive_avg_pool2d",
        lambda lo: fc.adaptive_avg_pool2d(lo[None], [1]),
        lambda tlo: torch.nn.functional.adaptive_avg_pool2d(tlo[None], 1),
    ),
    (
        "batch_norm",
        lambda lo: fc.native_batch_norm(lo, X[0], X[1], None, None, True, 0.1, 1e-5)[0],
        lambda tlo: torch.native_batch_norm(tlo, TX[0], TX[1], None, None, True, 0.1, 1e-5)[0],
    ),
    (
        "batch_norm_stats",
        lambda lo: fc.native_batch_norm(lo, X[0], X[1], None, None, True, 0.1, 1e-5)[1],
        lambda tlo: torch.native_batch_norm(tlo, TX[0], TX[1], None, None, True, 0.1, 1e-5)[1],
    ),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_dtype_inside_region_matches_torch(case, dtype):
    _, ours, theirs = case
    low, tlow = _pair(4, 8, dtype=dtype)
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        expected = theirs(tlow)
    with fc.autocast("cpu", dtype=getattr(fc, dtype)):
        got = ours(low)
    assert _name(got.dtype) == _name(expected.dtype)
    assert tuple(got.shape) == tuple(expected.shape)


def test_values_inside_region_match_torch():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = torch.nn.functional.linear(TX, TW, TW[0]).float().numpy()
    with fc.autocast("cpu", dtype=fc.bfloat16):
        got = to_numpy(fc.linear(X, W, W[0]).float())
    np.testing.assert_allclose(got, expected, rtol=1e-2, atol=1e-2)


def test_outside_region_nothing_is_cast():
    assert fc.mm(X, W).dtype == fc.float32
    assert fc.cat([X, XB]).dtype == fc.float32
    assert not fc.is_autocast_enabled("cpu")


def test_nesting_and_enabled_false():
    with fc.autocast("cpu"):
        assert fc.is_autocast_enabled("cpu")
        assert fc.mm(X, W).dtype == fc.bfloat16
        with fc.autocast("cpu", enabled=False):
            assert not fc.is_autocast_enabled("cpu")
            assert fc.mm(X, W).dtype == fc.float32
            with fc.autocast("cpu", dtype=fc.float16):
                assert fc.get_autocast_dtype("cpu") == fc.float16
                assert fc.mm(X, W).dtype == fc.float16
            assert fc.get_autocast_dtype("cpu") == fc.bfloat16
        assert fc.mm(X, W).dtype == fc.bfloat16
    assert not fc.is_autocast_enabled("cpu")
    assert fc.mm(X, W).dtype == fc.float32


def test_state_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with fc.autocast("cpu"):
            1 / 0  # noqa: B018
    assert not fc.is_autocast_enabled("cpu")
    assert fc.mm(X, W).dtype == fc.float32


def test_decorator_form():
    @fc.autocast("cpu", dtype=fc.float16)
    def product(a, b):
        return a @ b

    assert product(X, W).dtype == fc.float16
    assert (X @ W).dtype == fc.float32
    assert product.__name__ == "product"


def test_cpu_amp_spellings():
    with fc.cpu.amp.autocast():
        assert fc.mm(X, W).dtype == fc.bfloat16
    with fc.amp.autocast("cpu", dtype=fc.float16):
        assert fc.mm(X, W).dtype == fc.float16
    with fc.cpu.amp.autocast(enabled=False):
        assert fc.mm(X, W).dtype == fc.float32


def test_state_is_per_thread():
    seen = []
    with fc.autocast("cpu"):
        worker = threading.Thread(target=lambda: seen.append((fc.is_autocast_enabled("cpu"), fc.mm(X, W).dtype)))
        worker.start()
        worker.join()
        assert fc.mm(X, W).dtype == fc.bfloat16
    assert seen == [(False, fc.float32)]


def test_state_functions_as_torch():
    assert fc.get_autocast_dtype("cpu") == fc.bfloat16 and torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert fc.is_autocast_enabled() is torch.is_autocast_enabled() is False
    assert fc.is_autocast_cache_enabled() is torch.is_autocast_cache_enabled() is True
    assert fc.amp.is_autocast_available("cpu") and not fc.amp.is_autocast_available("xla")


def test_table_policies():
    assert fc._C._autocast_policy("mm") == "lower"
    assert fc._C._autocast_policy("_cross_entropy") == "fp32"
    assert fc._C._autocast_policy("cat") == "promote"
    assert fc._C._autocast_policy("add") is None


def test_unsupported_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        region = fc.autocast("cpu", dtype=fc.float64)
    with region:
        assert fc.mm(X, W).dtype == fc.float32


def test_cuda_device_type_warns_and_disables():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        region = fc.autocast("cuda")
    with region:
        assert fc.mm(X, W).dtype == fc.float32


def test_errors():
    with pytest.raises(ValueError, match=r"\[autocast\] Expected `device_type` of type `str`"):
        fc.autocast(0)
    with pytest.raises(RuntimeError, match=r"\[autocast\] User specified an unsupported autocast device_type 'xla'"):
        fc.autocast("xla")
    with pytest.raises(TypeError, match=r"\[autocast\] .*bfloat16 and .*float16"):
        fc.set_autocast_dtype("cpu", fc.float32)


def test_deprecated_cpu_spellings_match_torch():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert fc.is_autocast_cpu_enabled() is torch.is_autocast_cpu_enabled() is False
        assert str(fc.get_autocast_cpu_dtype()).split(".")[-1] == str(torch.get_autocast_cpu_dtype()).split(".")[-1]
        with fc.autocast("cpu"), torch.autocast("cpu"):
            assert fc.is_autocast_cpu_enabled() is torch.is_autocast_cpu_enabled() is True
        fc.set_autocast_cpu_enabled(True)
        assert fc.is_autocast_enabled("cpu")
        fc.set_autocast_cpu_enabled(False)
        assert not fc.is_autocast_enabled("cpu")
        fc.set_autocast_cpu_dtype(fc.float16)
        assert fc.get_autocast_dtype("cpu") == fc.float16
        fc.set_autocast_cpu_dtype(fc.bfloat16)
    with pytest.warns(DeprecationWarning, match=r"\[get_autocast_cpu_dtype\] get_autocast_cpu_dtype\(\) is deprecated"):
        fc.get_autocast_cpu_dtype()
