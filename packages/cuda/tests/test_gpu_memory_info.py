"""fb.cuda.mem_get_info and fb.accelerator.get_memory_info on a GPU: the driver's (free, total) bytes
(cudaMemGetInfo), as torch.cuda.mem_get_info. Skipped without a GPU (test_registration.py checks that path)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
from conftest import requires_gpu
from flambeau_cuda import _C

pytestmark = requires_gpu


def test_free_and_total():
    free, total = fc.cuda.mem_get_info()
    assert isinstance(free, int) and isinstance(total, int)
    assert 0 < free <= total
    for device in (0, "cuda:0", fc.device("cuda", 0)):
        assert fc.cuda.mem_get_info(device)[1] == total
    assert fc.accelerator.get_memory_info()[1] == total


def test_free_falls_when_the_allocator_reserves():
    fc.cuda.empty_cache()
    before, _ = fc.cuda.mem_get_info()
    x = fc.empty(256 << 20, dtype=fc.uint8, device="cuda")  # 256 MiB, reserved from the driver
    after, _ = fc.cuda.mem_get_info()
    assert before - after >= 256 << 20
    del x
    fc.cuda.empty_cache()
    assert fc.cuda.mem_get_info()[0] >= after + (256 << 20)


def test_every_device_and_a_bad_index():
    n = fc.cuda.device_count()
    for i in range(n):
        free, total = fc.cuda.mem_get_info(i)
        assert 0 < free <= total
    assert fc.cuda.current_device() == 0  # asking about device i does not switch to it
    with pytest.raises(ValueError, match=rf"\[mem_get_info\] invalid CUDA device index {n} \({n} devices\)"):
        _C._mem_get_info(n)
