"""flambeau-cuda on a GPU: factories, copies, streams, events and memory (skipped with "no CUDA GPU" elsewhere).

Values are checked against NumPy. Parametrised over the CUDA devices present.
"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import HAS_GPU, requires_gpu
from cuda_testing import to_numpy

pytestmark = requires_gpu
DEVICES = [f"cuda:{i}" for i in range(fc.cuda.device_count())] if HAS_GPU else ["cuda:0"]
DTYPES = [fc.float32, fc.float64, fc.int64, fc.int32, fc.int16, fc.int8, fc.uint8, fc.bool, fc.float16, fc.bfloat16]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_factories(device, dtype):
    z = fc.zeros(2, 3, dtype=dtype, device=device)
    assert z.device == fc.device(device) and z.dtype == dtype
    assert to_numpy(z).tolist() == np.zeros((2, 3)).tolist()
    o = fc.ones(5, dtype=dtype, device=device)
    assert to_numpy(o).tolist() == np.ones(5).tolist()
    f = fc.full((3, 2), 7, dtype=dtype, device=device) if dtype != fc.bool else fc.full((3, 2), True, device=device)
    assert (to_numpy(f) == (7 if dtype != fc.bool else True)).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64, fc.int64, fc.uint8, fc.float16])
def test_round_trip_contiguous_and_strided(device, dtype):
    a = np.arange(60).reshape(3, 4, 5) % 17
    x = fc.tensor(a.tolist(), dtype=dtype)
    y = x.to(device)
    assert y.is_cuda
    assert to_numpy(y).tolist() == to_numpy(x).tolist()
    # non-contiguous host -> device, device -> device (strided kernel), device -> host
    t = x.transpose(0, 2).to(device)
    assert to_numpy(t).tolist() == to_numpy(x.transpose(0, 2)).tolist()
    s = y[:, 1:3, ::2]
    assert to_numpy(s).tolist() == to_numpy(x[:, 1:3, ::2]).tolist()
    c = y.transpose(0, 1).contiguous()
    assert to_numpy(c).tolist() == to_numpy(x.transpose(0, 1)).tolist()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (fc.float32, fc.int64),
        (fc.int64, fc.float64),
        (fc.float64, fc.float16),
        (fc.int32, fc.bool),
        (fc.float32, fc.bfloat16),
        (fc.uint8, fc.float32),
    ],
)
def test_casts_on_device_match_cpu(device, src, dst):
    x = fc.tensor([[-3.5, 0.0, 1.25], [2.0, 7.75, -0.5]]).to(src)
    expected = x.to(dst)
    got = x.to(device).to(dst)
    assert got.dtype == dst and got.is_cuda
    assert got.cpu().tolist() == expected.tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_copy_broadcast_and_errors(device):
    d = fc.zeros(2, 3, device=device)
    d.copy_(fc.tensor([1.0, 2.0, 3.0]))  # host source broadcast
    assert d.cpu().tolist() == [[1.0, 2.0, 3.0]] * 2
    d.copy_(fc.tensor([[5.0], [6.0]], device=device))  # device source broadcast
    assert d.cpu().tolist() == [[5.0] * 3, [6.0] * 3]
    with pytest.raises(ValueError, match="cannot be broadcast"):
        d.copy_(fc.ones(4, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_non_blocking_from_pinned(device):
    x = fc.arange(1 << 16, dtype=fc.float32).pin_memory()
    assert x.is_pinned()
    y = x.to(device, non_blocking=True)
    fc.cuda.synchronize()
    assert y.cpu().tolist() == x.tolist()
    back = y.to("cpu", non_blocking=True)
    fc.cuda.synchronize()
    assert back.tolist() == x.tolist()


def test_streams_events_and_memory():
    s = fc.cuda.Stream()
    e0, e1 = fc.cuda.Event(enable_timing=True), fc.cuda.Event(enable_timing=True)
    with fc.cuda.stream(s):
        e0.record()
        x = fc.ones(1 << 20, device="cuda")
        e1.record()
    e1.synchronize()
    assert e0.query() and e1.query() and e0.elapsed_time(e1) >= 0
    assert s.query() in (True, False)
    s.synchronize()
    assert fc.cuda.memory_allocated() >= 4 << 20
    assert fc.cuda.memory_stats()["allocated_bytes.all.current"] == fc.cuda.memory_allocated()
    del x
    fc.cuda.empty_cache()
    assert fc.cuda.memory_reserved() >= fc.cuda.memory_allocated()
    assert isinstance(fc.cuda.get_device_name(), str) and fc.cuda.get_device_name()
    assert fc.cuda.default_stream().stream_id == 0


def test_op_without_kernel_names_it():
    x = fc.ones(1, 1, 4, 4, device="cuda")
    w = fc.ones(1, 1, 3, 3, device="cuda")
    with pytest.raises(NotImplementedError, match=r"is not yet implemented on CUDA"):
        fc.conv2d(x, w)
