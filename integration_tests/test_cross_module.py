"""A core tensor crossing the other extension modules (autograd, interop, alloc) and back.

Every flambeau extension shares core's Tensor type through one pybind11 caster
(Note [Python Tensor identity] in core's python/bindings.h): a tensor passed to
another module's C++ function and returned comes back as the *same* Python
object, with its dtype and reference count intact.
"""

from __future__ import annotations

import gc
import sys

import flambeau as fb
import flambeau_core
import flambeau_interop
import numpy as np
import pytest

DTYPES = [fb.float32, fb.float64, fb.int64, fb.bool]


def _make(dtype):
    return fb.ones(2, 3, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_interop_roundtrip_keeps_identity_dtype_and_refcount(dtype):
    t = _make(dtype)
    before = sys.getrefcount(t)
    for _ in range(100):
        back = flambeau_interop._C._roundtrip(t)
        assert back is t
        assert back.dtype == dtype
        del back
    assert sys.getrefcount(t) == before


def test_interop_roundtrip_of_a_view_and_of_a_subclass():
    base = fb.arange(12, dtype=fb.float32).view(3, 4)
    view = base.transpose(0, 1)[1:]
    before = sys.getrefcount(view)
    assert flambeau_interop._C._roundtrip(view) is view
    assert sys.getrefcount(view) == before
    assert view.shape == (3, 3) and view.stride() == (1, 4)

    p = fb.nn.Parameter(fb.zeros(3))
    assert flambeau_interop._C._roundtrip(p) is p
    assert type(flambeau_interop._C._roundtrip(p)) is type(p)


def test_interop_rejects_non_tensors():
    with pytest.raises(TypeError):
        flambeau_interop._C._roundtrip(np.ones(3))


def test_numpy_roundtrip_shares_memory_and_keeps_refcounts():
    a = np.arange(6, dtype=np.float32)
    a_refs = sys.getrefcount(a)
    t = fb.from_numpy(a)
    assert isinstance(t, flambeau_core.Tensor) and t.dtype == fb.float32
    assert t.data_ptr() == a.ctypes.data  # zero copy
    back = t.numpy()
    assert np.shares_memory(back, a)
    t.add_(1.0)  # a core kernel writing through interop's external storage
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    del t, back
    gc.collect()
    assert sys.getrefcount(a) == a_refs, "the tensor must release its reference to the NumPy array"


def test_dlpack_roundtrip_through_torch_keeps_memory_and_dtype():
    import torch

    t = fb.arange(5, dtype=fb.int64)
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr() and tt.dtype == torch.int64
    back = fb.from_dlpack(tt)
    assert back.data_ptr() == t.data_ptr() and back.dtype == fb.int64
    tt.mul_(3)
    assert t.tolist() == [0, 3, 6, 9, 12]
    del tt, back
    gc.collect()
    assert t.tolist() == [0, 3, 6, 9, 12]


def test_autograd_detach_shares_storage_and_keeps_type():
    x = fb.ones(4, requires_grad=True)
    x_refs = sys.getrefcount(x)
    d = x.detach()
    assert type(d) is flambeau_core.Tensor and d is not x
    assert d.data_ptr() == x.data_ptr() and d.dtype == x.dtype
    assert d.requires_grad is False and x.requires_grad is True
    assert flambeau_interop._C._roundtrip(d) is d
    del d
    assert sys.getrefcount(x) == x_refs


def test_autograd_hook_sees_a_core_tensor_and_returns_it():
    x = fb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    seen = []

    def hook(grad):
        assert type(grad) is flambeau_core.Tensor and grad.dtype == fb.float32
        assert flambeau_interop._C._roundtrip(grad) is grad
        seen.append(sys.getrefcount(grad))
        return grad * 10

    x.register_hook(hook)
    (x * x).sum().backward()
    assert len(seen) == 1
    assert x.grad.tolist() == [20.0, 40.0, 60.0]
    assert x.grad is x.grad  # one Python object for the accumulated gradient
    assert flambeau_interop._C._roundtrip(x.grad) is x.grad


def test_autograd_backward_leaves_leaf_refcount_unchanged():
    x = fb.randn(8, 8, requires_grad=True)
    w = fb.randn(8, 8, requires_grad=True)
    x_refs, w_refs = sys.getrefcount(x), sys.getrefcount(w)
    for _ in range(5):
        loss = (x @ w).relu().sum()
        loss.backward()
        del loss
    gc.collect()
    assert sys.getrefcount(x) == x_refs and sys.getrefcount(w) == w_refs
    (gx,) = fb.autograd.grad((x * w).sum(), [x])
    assert type(gx) is flambeau_core.Tensor
    assert np.allclose(gx.numpy(), w.detach().numpy())


def test_caching_allocator_tags_tensors_it_made():
    assert fb.zeros(10)._allocator == "caching"
    fb.memory.set_allocator(fb.memory.system_allocator())
    try:
        assert fb.zeros(10)._allocator == "system"
    finally:
        fb.memory.set_allocator(fb.memory.caching_allocator())


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64], ids=str)
def test_autograd_saved_tensor_roundtrip_keeps_identity_and_refcount(dtype):
    """A tensor stored in autograd's C++ SavedVariable and unpacked is the same object."""
    from flambeau_autograd import _C as autograd_C

    x = fb.ones(3, dtype=dtype, requires_grad=True)
    before = sys.getrefcount(x)
    for _ in range(50):
        saved = autograd_C._SavedTensor(x, False, "x")
        back = saved.unpack()
        assert back is x and back.dtype == dtype
        del saved, back
    assert sys.getrefcount(x) == before


def test_autograd_graph_node_returns_the_leaf_itself():
    x = fb.ones(2, 2, requires_grad=True)
    before = sys.getrefcount(x)
    y = x * 2
    accumulate = y.grad_fn.next_functions[0][0]
    assert accumulate.name() == "AccumulateGrad"
    assert accumulate.variable is x
    assert flambeau_interop._C._roundtrip(accumulate.variable) is x
    del y, accumulate
    gc.collect()
    assert sys.getrefcount(x) == before
