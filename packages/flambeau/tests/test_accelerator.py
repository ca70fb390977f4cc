"""flambeau.accelerator with the simulated device as the accelerator (registered by this test; the
case without any accelerator, against torch, is in packages/core/tests/test_accelerator.py)."""

import os

import flambeau as fb
import flambeau_sim
import pytest


@pytest.fixture(scope="module")
def sim():
    if fb.cuda.is_available():
        pytest.skip("a CUDA GPU is the accelerator here")
    return fb.utils.register_sim()


def test_sim_is_the_accelerator(sim):
    A = fb.accelerator
    assert A.is_available() and A.current_accelerator() == fb.device("sim")
    assert A.current_accelerator(check_available=True) == fb.device("sim")
    assert A.device_count() == sim.device_count() >= 2
    x = fb.ones(3, device=A.current_accelerator())
    assert x.device.type == "sim"


def test_device_index_and_synchronize(sim):
    A = fb.accelerator
    start = A.current_device_index()
    try:
        A.set_device_index(1)
        assert A.current_device_index() == sim.current_device() == 1
        A.set_device_index("sim:0")
        assert A.current_device_index() == 0
        with A.device_index(1):
            assert A.current_device_index() == 1
            y = fb.ones(2, device="sim") * 2
        assert A.current_device_index() == 0 and y.device == fb.device("sim:1")
        A.synchronize()
        A.synchronize(1)
        assert A.current_stream() == sim.current_stream()
        assert A.memory_allocated(1) == sim.memory_allocated(1)
        A.reset_accumulated_memory_stats()
        with pytest.warns(FutureWarning, match="set_device_index"):
            A.set_device_idx(1)
        with pytest.warns(FutureWarning, match="current_device_index"):
            assert A.current_device_idx() == 1
    finally:
        A.set_device_index(start)


def test_bad_devices(sim):
    A = fb.accelerator
    with pytest.raises(ValueError, match=r"\[accelerator.set_device_index\] expected a sim device"):
        A.set_device_index("cpu")
    with pytest.raises(TypeError, match="expected a device index, string or device, got float"):
        A.set_device_index(1.0)
    with pytest.raises(TypeError, match="got None"):
        A.set_device_index(None)


def test_memory_info_capability_and_host_cache(sim):
    A = fb.accelerator
    page = os.sysconf("SC_PAGE_SIZE")
    for device in (None, 1, "sim:1", fb.device("sim:0")):
        free, total = A.get_memory_info(device)
        assert total == page * os.sysconf("SC_PHYS_PAGES")  # sim memory is host pages, no limit set here
        assert 0 <= free <= total
    x = fb.ones(1 << 20, device="sim:1")
    free, total = A.get_memory_info(1)
    assert free <= total - sim.memory_reserved(1) and A.get_memory_info(1) == sim.mem_get_info(1)
    del x
    with pytest.raises(ValueError, match=r"\[accelerator.get_memory_info\] expected a sim device"):
        A.get_memory_info("cpu")
    caps = A.get_device_capability()
    assert set(caps) == {"supported_dtypes"} and {fb.float32, fb.bfloat16, fb.bool} <= caps["supported_dtypes"]
    assert A.get_device_capability("sim:1") == caps
    pinned = fb.ones(1000).pin_memory()
    del pinned
    allocator = flambeau_sim.pinned_allocator()
    assert allocator.memory_reserved() > 0
    A.empty_host_cache()
    assert allocator.memory_reserved() == 0
