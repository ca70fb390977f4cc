"""default_collate / default_convert against PyTorch's (outputs converted to plain lists)."""

from __future__ import annotations

import collections

import flambeau_core as fc
import flambeau_data as data
import numpy as np
import pytest
import torch
from conftest import to_py
from torch.utils.data import default_collate as torch_collate  # noqa: E402
from torch.utils.data import default_convert as torch_convert  # noqa: E402

Point = collections.namedtuple("Point", ["x", "y"])


def _samples(tensor):
    """The same batches built with flambeau's or torch's tensor constructor."""
    return {
        "tensors": [tensor([1.0, 2.0]), tensor([3.0, 4.0]), tensor([5.0, 6.0])],
        "tuple": [(tensor([[1, 2], [3, 4]]), 0), (tensor([[5, 6], [7, 8]]), 1)],
        "floats": [0.5, 1.5, 2.5],
        "ints": [1, 2, 3],
        "bools": [True, False, True],
        "strings": ["a", "bc"],
        "dict": [{"x": tensor([1.0]), "label": 3, "name": "p"}, {"x": tensor([2.0]), "label": 4, "name": "q"}],
        "namedtuple": [Point(1.0, tensor([1])), Point(2.0, tensor([2]))],
        "nested_lists": [[1, [2.0, "s"]], [3, [4.0, "t"]]],
        "dict_of_tuples": [{"a": (1, 2.0)}, {"a": (3, 4.0)}],
        "scalar_tensors": [tensor(1.5), tensor(2.5)],
    }


@pytest.mark.parametrize("case", list(_samples(lambda *a: None)))
def test_default_collate_matches_pytorch(case):
    ours = data.default_collate(_samples(fc.tensor)[case])
    theirs = torch_collate(_samples(torch.tensor)[case])
    assert to_py(ours) == to_py(theirs)


@pytest.mark.parametrize(
    "batch",
    [
        [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), dtype=np.float32)],
        [np.array([1, 2], dtype=np.int64), np.array([3, 4], dtype=np.int64)],
        [np.float64(1.5), np.float64(2.5)],
        [np.int32(3), np.int32(4)],
        [(np.zeros(2, dtype=np.uint8), np.bool_(True)), (np.ones(2, dtype=np.uint8), np.bool_(False))],
    ],
)
def test_default_collate_numpy_matches_pytorch(batch):
    assert to_py(data.default_collate(batch)) == to_py(torch_collate(batch))


def test_default_convert_matches_pytorch():
    for sample in [np.arange(4, dtype=np.int64), (np.zeros(2, dtype=np.float32), 3, "s"), {"a": np.ones(1)}, 5, "x"]:
        assert to_py(data.default_convert(sample)) == to_py(torch_convert(sample))


def test_collate_errors_like_pytorch():
    with pytest.raises(
        TypeError,
        match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found <class 'object'>",
    ):
        data.default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        data.default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        data.default_collate([[1, 2], [3]])
    with pytest.raises((ValueError, RuntimeError)):
        data.default_collate([fc.tensor([1.0, 2.0]), fc.tensor([1.0])])


def test_collate_custom_map():
    class Box:
        def __init__(self, v):
            self.v = v

    fn_map = dict(data.default_collate_fn_map)
    fn_map[Box] = lambda batch, *, collate_fn_map=None: sum(b.v for b in batch)
    assert data.collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=fn_map)[0] == 4
