"""pickle, copy.copy and copy.deepcopy of tensors (_copying.py) against PyTorch 2.13: values, dtype,
sizes, strides and storage offset survive; copy.copy shares memory, deepcopy and pickle do not;
views of one storage share the copy within one deepcopy; requires_grad, .grad and subclasses."""

import copy
import pickle

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _copying
from flambeau_core.testing import devices


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64, fc.int64, fc.bool])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3)])
def test_pickle_round_trip(dtype, shape):
    src = (fc.arange(int(np.prod(shape)) if shape else 1) * 7 - 3).to(dtype).reshape(shape)
    out = pickle.loads(pickle.dumps(src))
    assert out.dtype == dtype and out.shape == src.shape
    assert out.tolist() == src.tolist()
    if src.numel():
        assert out.data_ptr() != src.data_ptr()


@pytest.mark.parametrize("lib", [fc, torch], ids=["flambeau", "torch"])
@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.transpose(0, 1),
        lambda t: t[1:, 1:3],
        lambda t: t[:, ::2],
        lambda t: t[2],
        lambda t: t.reshape(-1)[5:9],
        lambda t: t[:1].expand(4, 3, 4),
        lambda t: t[0, 0],
    ],
    ids=["transposed", "sliced", "strided", "row", "offset", "expanded", "scalar"],
)
def test_views_keep_strides_and_offset(lib, copier, view):
    src = view(lib.arange(36.0).reshape(3, 3, 4))
    out = pickle.loads(pickle.dumps(src)) if copier == "pickle" else copy.deepcopy(src)
    want = view(torch.arange(36.0).reshape(3, 3, 4))
    assert out.tolist() == want.tolist()
    assert tuple(out.stride()) == tuple(want.stride())
    assert out.storage_offset() == src.storage_offset()
    assert out.data_ptr() != src.data_ptr()


def test_copy_shares_memory_as_torch():
    for lib in (fc, torch):
        src = lib.arange(4.0)
        out = copy.copy(src)
        assert out is not src
        out[0] = 100.0
        assert src[0].item() == 100.0, lib.__name__


def test_deepcopy_shares_one_copy_between_views():
    for lib in (fc, torch):
        base = lib.arange(6.0)
        a, b, other = copy.deepcopy([base, base[2:], lib.arange(3.0)])
        a[3] = -1.0
        assert b.tolist() == [2.0, -1.0, 4.0, 5.0], lib.__name__
        assert base[3].item() == 3.0 and other.tolist() == [0.0, 1.0, 2.0]


def test_pickle_does_not_share_between_tensors():
    # PyTorch's plain pickle writes each tensor's storage on its own: no sharing after loading.
    for lib in (fc, torch):
        base = lib.arange(4.0)
        a, b = pickle.loads(pickle.dumps([base, base[1:]]))
        a[1] = 100.0
        assert b.tolist() == [1.0, 2.0, 3.0], lib.__name__


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_protocols_and_old_form(protocol):
    src = fc.arange(6, dtype=fc.int32).reshape(2, 3)
    assert pickle.loads(pickle.dumps(src, protocol=protocol)).tolist() == src.tolist()
    # the 4-argument form written before strides were kept still loads
    old = _copying._rebuild_tensor(bytes(memoryview(src)), "int32", (2, 3), False)
    assert old.tolist() == src.tolist() and old.stride() == (3, 1)


class Tagged(fc.Tensor):
    """A module-level subclass (pickle finds classes by name)."""


def test_subclass_keeps_type_and_attributes():
    t = Tagged(fc.arange(3.0))
    t.tag = {"name": "w"}
    for out in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert type(out) is Tagged and out.tolist() == [0.0, 1.0, 2.0]
        assert out.tag == {"name": "w"} and out.tag is not t.tag
    shallow = copy.copy(t)
    assert type(shallow) is Tagged and shallow.tag is t.tag and shallow.data_ptr() == t.data_ptr()


@pytest.fixture
def autograd():
    return pytest.importorskip("flambeau_autograd", reason="requires_grad needs flambeau-autograd")


@pytest.mark.parametrize(
    "copier", [lambda t: pickle.loads(pickle.dumps(t)), copy.deepcopy, copy.copy], ids=["pickle", "deepcopy", "copy"]
)
def test_requires_grad_survives(autograd, copier):
    for lib in (fc, torch):
        out = copier(lib.ones(2, requires_grad=True))
        assert out.requires_grad and out.is_leaf, lib.__name__


def test_grad_is_deep_copied_not_pickled(autograd):
    for lib in (fc, torch):
        x = lib.ones(2, requires_grad=True)
        x.grad = lib.full((2,), 3.0)
        d = copy.deepcopy(x)
        assert d.grad.tolist() == [3.0, 3.0] and d.grad.data_ptr() != x.grad.data_ptr(), lib.__name__
        assert pickle.loads(pickle.dumps(x)).grad is None, lib.__name__


def test_non_leaf(autograd):
    for lib in (fc, torch):
        y = lib.arange(3.0, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="graph leaves"):
            copy.deepcopy(y)
        p = pickle.loads(pickle.dumps(y))  # pickling keeps values and requires_grad, as PyTorch 2.13
        assert p.tolist() == [0.0, 2.0, 4.0] and p.requires_grad and p.is_leaf, lib.__name__
        c = copy.copy(y)
        assert c.requires_grad and c.is_leaf and c.data_ptr() == y.data_ptr(), lib.__name__


def test_deepcopy_copies_memory():
    src = fc.ones(4)
    out = copy.deepcopy(src)
    out.add_(1)
    assert src.tolist() == [1.0] * 4
    assert out.tolist() == [2.0] * 4
    pair = copy.deepcopy([src, src])
    assert pair[0] is pair[1]


def test_dtypes_and_devices_pickle():
    for dt in [fc.bool, fc.uint8, fc.int64, fc.float16, fc.float32, fc.float64]:
        assert pickle.loads(pickle.dumps(dt)) == dt
    assert pickle.loads(pickle.dumps(fc.device("cpu"))) == fc.device("cpu")


@devices
def test_device_tensors_keep_device_strides_and_values(device):
    src = fc.arange(12.0).reshape(3, 4).to(device).t()
    for out in (pickle.loads(pickle.dumps(src)), copy.deepcopy(src), copy.copy(src)):
        assert out.device == src.device and out.stride() == (1, 4)
        assert out.cpu().tolist() == src.cpu().tolist()
