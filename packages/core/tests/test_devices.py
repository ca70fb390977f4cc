"""Device-generic parts of core without any device backend (Note [Device backends]).

Without flambeau-cuda: fc.cuda answers "not available", a cuda tensor is a
clear error naming the missing package, devices parse with their index.
"""

import sys
import threading

import flambeau_core as fc
import pytest


def _missing() -> str:
    """What a cuda call says here: flambeau-cuda may have been imported earlier in this process (the
    flambeau meta-package imports it, e.g. in a doctest); on a machine without a GPU it then says so."""
    return "no CUDA GPU is available" if "flambeau_cuda" in sys.modules else "flambeau-cuda is not installed"


def test_device_parsing():
    d = fc.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1"
    assert fc.device("cuda").index is None
    assert fc.device("cuda", 3) == "cuda:3"
    assert fc.device("cpu").type == "cpu"
    with pytest.raises(ValueError, match=r"\[device\] unknown device 'tpu:0'"):
        fc.device("tpu:0")
    with pytest.raises(ValueError, match=r"bad device index in 'cuda:x'"):
        fc.device("cuda:x")
    with pytest.raises(ValueError, match=r"bad device index in 'cuda:-1'"):
        fc.device("cuda:-1")


def test_cuda_module_not_available():
    assert fc.cuda.is_available() is False
    assert fc.cuda.device_count() == 0
    assert fc.device_module("cuda") is fc.cuda
    for call in (
        fc.cuda.current_device,
        fc.cuda.synchronize,
        fc.cuda.current_stream,
        fc.cuda.default_stream,
        fc.cuda.Stream,
        fc.cuda.memory_allocated,
        fc.cuda.max_memory_allocated,
        fc.cuda.memory_reserved,
        fc.cuda.memory_stats,
        fc.cuda.memory_snapshot,
        # with flambeau-cuda and no GPU, empty_cache has nothing to release (as torch's)
        *(() if "flambeau_cuda" in sys.modules else (fc.cuda.empty_cache,)),
    ):
        with pytest.raises(RuntimeError, match=_missing()):
            call()
    with pytest.raises(RuntimeError, match=_missing()):
        fc.cuda.set_device(0)
    with pytest.raises(AttributeError, match="no attribute 'not_a_function'"):
        fc.cuda.not_a_function  # noqa: B018
    e = fc.cuda.Event()  # an event is created lazily, on record
    assert e.query() is True
    with pytest.raises(RuntimeError, match=_missing()):
        e.record()


def _plugin_registered():
    try:
        return fc.device_module("sim").is_available()
    except ValueError:
        return False


def test_cuda_tensors_not_available():
    t = fc.ones(2)
    for make in (
        lambda: fc.zeros(2, device="cuda"),
        lambda: fc.tensor([1.0], device="cuda:0"),
        lambda: fc.empty(3, device=fc.device("cuda", 1)),
        lambda: t.to("cuda"),
        lambda: t.cuda(),
        lambda: t.to("cuda:0", non_blocking=True),
    ):
        with pytest.raises(RuntimeError, match=_missing()):
            make()
    if _plugin_registered():
        # flambeau_core.testing's device parametrisation (test_device_ops.py)
        # registered the sim device in this process: it serves pinned memory.
        assert t.pin_memory().is_pinned() is True
    else:
        with pytest.raises(RuntimeError, match=r"\[pin_memory\] no device is available"):
            t.pin_memory()
    assert t.is_pinned() is False
    assert t.is_cuda is False
    assert t.cpu() is t
    assert t.to("cpu", non_blocking=True) is t


def test_device_predicates_answer_for_the_tensor_device():
    import torch

    t, expected = fc.zeros(2), torch.zeros(2)
    for name in (
        "is_cpu",
        "is_cuda",
        "is_mps",
        "is_xpu",
        "is_meta",
        "is_xla",
        "is_ipu",
        "is_mtia",
        "is_maia",
        "is_vulkan",
    ):
        assert getattr(t, name) is getattr(expected, name), name
    assert isinstance(fc.Tensor.is_mps, property)  # answers the tensor's device, not a fixed value


def test_device_module_errors():
    with pytest.raises(ValueError, match=r"\[device_module\] unknown device type 'tpu'"):
        fc.device_module("tpu")
    with pytest.raises(ValueError, match="the cpu has no device module"):
        fc.device_module("cpu")
    with pytest.raises(TypeError, match=r"\[device_module\] expected a device type name"):
        fc.device_module(3)


def test_to_argument_forms():
    t = fc.arange(0, 4, 1, dtype=fc.float32) if hasattr(fc, "arange") else fc.ones(4)
    assert t.to("cpu", fc.float64, False).dtype == fc.float64
    assert t.to(fc.float64, non_blocking=True, copy=True).dtype == fc.float64
    assert t.to("cpu", copy=True) is not t


def test_cuda_module_is_usable_from_threads():
    errors = []

    def worker():
        try:
            assert fc.cuda.device_count() == 0
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    th = threading.Thread(target=worker)
    th.start()
    th.join()
    assert not errors


def test_get_device_module_matches_torch_names():
    import torch

    assert fc.get_device_module("cpu") is fc.cpu and torch.get_device_module("cpu") is torch.cpu
    assert fc.get_device_module(fc.device("cpu")) is fc.cpu
    assert fc.get_device_module("cuda:1") is fc.cuda and fc.get_device_module(fc.device("cuda")) is fc.cuda
    expected = (
        fc.cpu
        if fc.accelerator.current_accelerator() is None
        else fc.device_module(fc.accelerator.current_accelerator().type)
    )
    assert fc.get_device_module() is expected
    with pytest.raises(ValueError, match=r"\[get_device_module\] unknown device type 'foo'"):
        fc.get_device_module("foo")
    with pytest.raises(TypeError, match=r"\[get_device_module\] expected a device, a device string or None"):
        fc.get_device_module(3)
