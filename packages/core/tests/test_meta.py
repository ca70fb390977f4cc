"""The meta device and its tensors (Note [Meta device], Note [Meta step] in flambeau/meta.h).

Factories, copies, repr and mixed devices here, and the check that every op with a Meta kernel is in one
of the op families (meta_helpers.py) that the topic files test_meta_<topic>.py run on meta and on cpu
tensors, comparing shapes, dtypes and errors word for word (and with PyTorch's meta device)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
from meta_helpers import FC, MIGRATED, TH, outcome

# ---- the device and its tensors ----


def test_factories_make_storage_less_meta_tensors():
    t = fc.empty(2, 3, device="meta")
    assert t.device.type == "meta" and str(t.device) == "meta" and t.is_meta
    assert t.shape == (2, 3) and t.dtype == fc.float32 and t.stride() == (3, 1)
    assert outcome(fc.add, t, t) == ("ok", ((2, 3), "float32"))
    for make in (fc.zeros, fc.ones, fc.rand, fc.randn):
        u = make(4, 5, dtype=fc.float64, device="meta")
        assert u.is_meta and u.shape == (4, 5) and u.dtype == fc.float64
    assert fc.full((2,), 7, device="meta").shape == (2,)
    assert fc.device("meta").type == "meta"
    # No memory: 4 TiB of float32 costs nothing, and neither does adding two of them.
    huge = fc.empty(2**20, 2**20, device="meta")
    s = huge + huge
    assert s.shape == (2**20, 2**20) and s.is_meta


def test_to_meta_keeps_shape_dtype_and_views_work():
    x = fc.arange(12).reshape(3, 4).to("meta")
    assert x.is_meta and x.shape == (3, 4) and x.dtype == fc.int64
    assert x.t().shape == (4, 3) and x[1].shape == (4,) and x[:, 1:3].shape == (3, 2)
    assert x.reshape(2, 6).shape == (2, 6) and x.unsqueeze(0).shape == (1, 3, 4)
    assert x.to("meta") is x or x.to("meta").is_meta


def test_repr_is_pytorchs():
    cases = [((3,), "float32"), ((2, 3), "int32"), ((0,), "float32"), ((), "float32"), ((2,), "bool")]
    for shape, dt in cases:
        ours = repr(fc.empty(shape, dtype=FC[dt], device="meta"))
        theirs = repr(torch.empty(shape, dtype=TH[dt], device="meta"))
        assert ours == theirs.replace("torch.", "flambeau.")


def test_copying_out_of_meta_raises():
    x = fc.ones(2, 3, device="meta")
    for read in (lambda: x.cpu(), lambda: x.tolist(), lambda: x.to("cpu"), lambda: x[0, 0].item()):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            read()
    with pytest.raises(NotImplementedError):
        torch.ones(2, 3, device="meta").cpu()


def test_copy_into_meta_checks_shapes():
    x = fc.empty(2, 3, device="meta")
    assert x.copy_(fc.ones(3)) is x
    with pytest.raises(fc.FlambeauError, match=r"\[copy_\] shape \(4,\) cannot be broadcast to the shape \(2, 3\)"):
        x.copy_(fc.ones(4))


def test_op_without_rule_names_op_and_meta():
    x = fc.ones(3, device="meta")
    # nonzero's shape depends on the values: it can never have a meta rule.
    with pytest.raises(NotImplementedError, match=r"^\[nonzero\] .*'meta'"):
        fc.nonzero(x)


def test_mixed_devices():
    x = fc.ones(2, 3, device="meta")
    assert (x + fc.tensor(2.0)).is_meta  # a 0-dim cpu tensor goes with any device
    assert (x * 2).is_meta
    with pytest.raises(RuntimeError, match=r"\[add\] expected all tensors to be on the same device.*meta.*cpu"):
        x + fc.ones(2, 3)


# ---- every op with a meta kernel is tested ----


def test_every_op_with_a_meta_kernel_is_tested_here():
    hand_written = {"empty", "fill_", "copy_", "clone", "cast", "uniform_", "normal_", "random_", "bernoulli_",
                    "bernoulli__tensor"}  # fmt: skip
    with_meta = {n for n in fc._C._registered_ops() if fc._C._has_kernel(n, "Meta")}
    assert with_meta - hand_written == set(MIGRATED)
