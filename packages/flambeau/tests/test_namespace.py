"""The meta-package wires the subsystems under PyTorch's names."""

import importlib
import sys

import flambeau as fb
import flambeau_alloc
import flambeau_autograd
import flambeau_core
import flambeau_data
import flambeau_interop
import flambeau_nn
import pytest


def test_subsystems_are_aliased_not_copied():
    assert fb.nn is flambeau_nn
    assert fb.optim is flambeau_nn.optim
    assert fb.autograd is flambeau_autograd
    assert fb.utils.data is flambeau_data
    assert fb.multiprocessing is flambeau_data.multiprocessing
    assert fb.nn.functional is flambeau_nn.functional
    # `import flambeau.nn.functional` gives the same module object, not a re-import
    assert importlib.import_module("flambeau.nn.functional") is flambeau_nn.functional
    assert sys.modules["flambeau.utils.data"] is flambeau_data
    assert fb.utils.checkpoint is flambeau_nn.utils.checkpoint
    assert importlib.import_module("flambeau.utils.checkpoint").checkpoint_sequential is not None


def test_pytorch_names_exist():
    for name in [
        "tensor",
        "zeros",
        "ones",
        "randn",
        "rand",
        "arange",
        "manual_seed",
        "float32",
        "float64",
        "int64",
        "bool",
        "no_grad",
        "enable_grad",
        "from_numpy",
        "from_dlpack",
        "save",
        "load",
        "Tensor",
        "set_num_threads",
        "get_num_threads",
        "memory_format",
        "contiguous_format",
        "preserve_format",
        "channels_last",
        "channels_last_3d",
    ]:
        assert hasattr(fb, name), name
    assert fb.Tensor is flambeau_core.Tensor
    assert fb.from_numpy is flambeau_interop.from_numpy
    for name in ["memory_stats", "memory_allocated", "max_memory_allocated", "empty_cache", "set_allocator"]:
        assert callable(getattr(fb.memory, name)), name
    # A raw, trusted address: fb.memory only, never the top-level namespace.
    assert fb.memory.allocator_from_c_abi is flambeau_core.memory.allocator_from_c_abi
    assert not hasattr(fb, "allocator_from_c_abi") and not hasattr(flambeau_core, "allocator_from_c_abi")


def test_import_activates_the_caching_allocator():
    current = flambeau_core.get_allocator("cpu")
    assert current.name == flambeau_alloc.caching_allocator().name
    x = fb.zeros(256, 256)
    assert x._allocator == current.name
    assert fb.memory.memory_allocated() >= 256 * 256 * 4


def test_end_to_end_gradient():
    x = fb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [[2.0, 4.0], [6.0, 8.0]]


def test_swapping_the_allocator_back_and_forth():
    caching = fb.memory.get_allocator()
    kept = fb.ones(1000)
    try:
        fb.memory.set_allocator(fb.memory.system_allocator())
        y = fb.ones(1000)
        assert y._allocator == "system"
        assert kept._allocator == caching.name
    finally:
        fb.memory.set_allocator(caching)
    del kept, y
    with pytest.raises(TypeError, match="set_allocator"):
        fb.memory.set_allocator(object())


def test_distributed_is_wired():
    import flambeau_distributed

    assert fb.distributed is flambeau_distributed
    assert fb.nn.parallel.DistributedDataParallel is flambeau_distributed.DistributedDataParallel
    assert importlib.import_module("flambeau.nn.parallel") is flambeau_distributed.parallel
    assert fb.distributed.DistributedSampler is fb.utils.data.DistributedSampler
    # importing flambeau does not start MPI
    assert not fb.distributed.is_initialized()


def test_probed_names_are_core_objects_and_importable():
    for name in ("backends", "accelerator", "random"):
        module = getattr(fb, name)
        assert module is getattr(flambeau_core, name)
        assert importlib.import_module(f"flambeau.{name}") is module
    for sub in ("cpu", "cuda", "cudnn", "mps", "mkldnn", "mkl", "openmp", "opt_einsum"):
        assert importlib.import_module(f"flambeau.backends.{sub}") is getattr(fb.backends, sub)
    for name in [
        "Size",
        "FloatTensor",
        "LongTensor",
        "BoolTensor",
        "set_printoptions",
        "get_printoptions",
        "use_deterministic_algorithms",
        "are_deterministic_algorithms_enabled",
        "is_deterministic_algorithms_warn_only_enabled",
        "get_rng_state",
        "set_rng_state",
        "seed",
        "initial_seed",
    ]:
        assert getattr(fb, name) is getattr(flambeau_core, name), name
    assert importlib.import_module("flambeau.onnx") is fb.onnx and importlib.import_module("flambeau.hub") is fb.hub


def test_meta_package_exposes_cuda():
    """fb.cuda is core's CUDA module (flambeau-cuda, when installed, registers into it)."""
    import flambeau as fb
    import flambeau_core as fc

    assert fb.cuda is fc.cuda
    assert fb.cuda.device_count() == fc.cuda.device_count()


TOP_LEVEL_FUNCTIONAL = [
    ("conv3d", lambda m: (m.ones(1, 2, 4, 4, 4), m.ones(3, 2, 2, 2, 2))),
    ("conv_transpose3d", lambda m: (m.ones(1, 2, 3, 3, 3), m.ones(2, 3, 2, 2, 2))),
    ("layer_norm", lambda m: (m.arange(12.0).reshape(3, 4), [4])),
    ("group_norm", lambda m: (m.arange(24.0).reshape(2, 4, 3), 2)),
    ("rms_norm", lambda m: (m.arange(12.0).reshape(3, 4), [4])),
    ("avg_pool1d", lambda m: (m.arange(12.0).reshape(1, 2, 6), 2)),
    ("avg_pool1d", lambda m: (m.arange(14.0).reshape(1, 2, 7), 3, 2, 1)),
    ("max_pool1d", lambda m: (m.arange(12.0).reshape(1, 2, 6), 2)),
    ("max_pool2d", lambda m: (m.arange(32.0).reshape(1, 2, 4, 4), 2)),
    ("max_pool3d", lambda m: (m.arange(64.0).reshape(1, 1, 4, 4, 4), 2)),
    ("cosine_similarity", lambda m: (m.arange(6.0).reshape(2, 3), m.ones(2, 3))),
    ("pairwise_distance", lambda m: (m.arange(6.0).reshape(2, 3), m.ones(2, 3))),
    ("pdist", lambda m: (m.arange(6.0).reshape(3, 2),)),
    ("bilinear", lambda m: (m.ones(2, 3), m.ones(2, 4), m.ones(5, 3, 4))),
    ("celu", lambda m: (m.arange(-3.0, 3.0),)),
    ("selu", lambda m: (m.arange(-3.0, 3.0),)),
    ("threshold", lambda m: (m.arange(-3.0, 3.0), 0.5, -1.0)),
    ("hardshrink", lambda m: (m.arange(-3.0, 3.0),)),
    ("channel_shuffle", lambda m: (m.arange(16.0).reshape(1, 4, 2, 2), 2)),
    ("celu_", lambda m: (m.arange(-3.0, 3.0), 0.5)),
    ("selu_", lambda m: (m.arange(-3.0, 3.0),)),
    ("threshold_", lambda m: (m.arange(-3.0, 3.0), 0.5, -1.0)),
]


@pytest.mark.parametrize(("name", "args"), TOP_LEVEL_FUNCTIONAL, ids=[n for n, _ in TOP_LEVEL_FUNCTIONAL])
def test_top_level_functional_ops_match_torch(name, args):
    import flambeau as fb
    import numpy as np
    import torch

    assert getattr(fb, name) is getattr(fb.nn.functional, name)
    ours = getattr(fb, name)(*args(fb))
    theirs = getattr(torch, name)(*args(torch))
    np.testing.assert_allclose(np.array(ours.tolist()), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_torch_spellings_of_functional_ops_are_top_level():
    """torch.dropout(input, p, train), torch.kl_div(..., reduction=1), ...: flambeau_nn._torch_forms's."""
    import flambeau_nn._torch_forms as forms
    import torch

    for name, fn in forms.TOP_LEVEL.items():
        assert getattr(fb, name) is fn and callable(getattr(torch, name)), name
    x = fb.arange(6.0).reshape(2, 3)
    assert fb.dropout(x, 0.5, False).tolist() == torch.dropout(torch.arange(6.0).reshape(2, 3), 0.5, False).tolist()
    assert x.hardshrink(2.0).tolist() == torch.arange(6.0).reshape(2, 3).hardshrink(2.0).tolist()


def test_autograd_state_readers_are_top_level():
    import torch

    for name in (
        "is_inference_mode_enabled",
        "is_anomaly_enabled",
        "set_anomaly_enabled",
        "is_anomaly_check_nan_enabled",
        "detach",
        "detach_",
    ):
        assert getattr(fb, name) is getattr(fb.autograd, name) and callable(getattr(torch, name)), name
    assert fb.autograd.set_multithreading_enabled is flambeau_autograd.grad_mode.set_multithreading_enabled
    with fb.inference_mode():
        assert fb.is_inference_mode_enabled()


def test_asarray_shares_numpy_memory_and_sets_requires_grad():
    import numpy as np
    import torch

    a = np.arange(3.0)
    ours, theirs = fb.asarray(a), torch.asarray(a)
    a[0] = 9.0
    assert ours.tolist() == theirs.tolist() == [9.0, 1.0, 2.0]
    x = fb.asarray([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf
    y = x * 2
    alias = fb.asarray(y, requires_grad=False)
    assert not alias.requires_grad and alias.data_ptr() == y.data_ptr() and y.requires_grad
    assert fb.asarray(y).requires_grad  # defaults to obj's own, as torch's


def test_layout_is_the_type_of_strided():
    import torch

    assert isinstance(fb.strided, fb.layout) and isinstance(fb.sparse_coo, fb.layout)
    assert isinstance(torch.strided, torch.layout) and fb.layout.__name__ == torch.layout.__name__
