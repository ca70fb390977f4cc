"""The in-place view ops (flambeau_core/_inplace_views.py) against PyTorch: each leaves self with the shape,
strides and offset of the out-of-place view, keeps its identity and its storage."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

CASES = [
    ("t_", (2, 3), ()),
    ("t_", (4,), ()),
    ("transpose_", (2, 3, 4), (0, 2)),
    ("swapdims_", (2, 3, 4), (-1, 0)),
    ("swapaxes_", (2, 3), (0, 1)),
    ("squeeze_", (1, 3, 1), ()),
    ("squeeze_", (1, 3, 1), (0,)),
    ("squeeze_", (1, 3, 1), ((0, 2),)),
    ("unsqueeze_", (3, 2), (1,)),
    ("unsqueeze_", (3, 2), (-1,)),
    ("as_strided_", (12,), ((3, 2), (2, 1), 1)),
    ("as_strided_", (12,), ((2, 2), (3, 1))),
]


@pytest.mark.parametrize(("op", "shape", "args"), CASES)
def test_inplace_view_matches_torch(op, shape, args):
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t, x = torch.tensor(base), fc.tensor(base)
    ptr = x.data_ptr()
    assert getattr(x, op)(*args) is x
    getattr(t, op)(*args)
    assert (tuple(x.shape), tuple(x.stride()), x.storage_offset()) == (
        tuple(t.shape),
        tuple(t.stride()),
        t.storage_offset(),
    )
    assert x.data_ptr() == t.data_ptr() - t.untyped_storage().data_ptr() + ptr
    np.testing.assert_array_equal(to_numpy(x), t.numpy())


def test_inplace_view_of_a_view_writes_through():
    base = fc.zeros(2, 3)
    row = base[0]
    row.unsqueeze_(0)
    row[0, 1] = 5.0
    assert tuple(row.shape) == (1, 3)
    assert float(base[0, 1]) == 5.0


@pytest.mark.parametrize(
    ("op", "args", "error", "message"),
    [
        ("transpose_", (0, 5), IndexError, r"^\[transpose\] dimension"),
        ("t_", (), fc.FlambeauError, r"^\[t\]"),
        ("unsqueeze_", (9,), IndexError, r"^\[unsqueeze\] dimension"),
        ("as_strided_", ((100,), (1,)), fc.FlambeauError, r"^\[as_strided\]"),
    ],
)
def test_inplace_view_errors_leave_self_unchanged(op, args, error, message):
    x = fc.zeros(2, 3, 4)
    with pytest.raises(error, match=message):
        getattr(x, op)(*args)
    assert (tuple(x.shape), tuple(x.stride()), x.storage_offset()) == ((2, 3, 4), (12, 4, 1), 0)
