"""nn.DataParallel (one process, at most one device) and the deprecated nn.Container against PyTorch's."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from nn_testing import compare_forward_backward, copy_params


def test_data_parallel_calls_the_module_and_keeps_torch_keys():
    theirs = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)))
    ours = nn.DataParallel(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_params(ours, theirs)
    compare_forward_backward(ours, theirs, [torch.randn(5, 3)])
    assert ours.device_ids == theirs.device_ids == []


def test_data_parallel_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[DataParallel\] replicating over several devices"):
        nn.DataParallel(nn.Linear(2, 2), device_ids=[0, 1])
    with pytest.raises(TypeError, match=r"\[DataParallel\] module must be a Module"):
        nn.DataParallel(lambda x: x)


def test_container_is_deprecated_and_registers_its_kwargs():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        ours = nn.Container(a=nn.Linear(2, 3), b=nn.ReLU())
    with pytest.warns(FutureWarning):
        theirs = torch.nn.Container(a=torch.nn.Linear(2, 3), b=torch.nn.ReLU())
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
