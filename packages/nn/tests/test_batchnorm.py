"""nn.SyncBatchNorm within one process (PyTorch's BatchNorm there) and convert_sync_batchnorm, against torch."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from nn_testing import assert_close, compare_forward_backward, copy_params


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_sync_batch_norm_matches_torch(shape, training):
    ours, theirs = nn.SyncBatchNorm(3, momentum=0.2), torch.nn.SyncBatchNorm(3, momentum=0.2)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    copy_params(ours, theirs)
    ours.train(training)
    theirs.train(training)
    compare_forward_backward(ours, theirs, [torch.randn(*shape)], rtol=1e-5, atol=1e-5)
    assert_close(ours.running_mean, theirs.running_mean)
    assert_close(ours.running_var, theirs.running_var)


def test_convert_sync_batchnorm_shares_the_state():
    bn = nn.BatchNorm2d(4)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), bn, nn.Sequential(nn.BatchNorm1d(2)))
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][0]) is nn.SyncBatchNorm
    assert converted[1].weight is bn.weight and converted[1].running_mean is bn.running_mean
    theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(
        torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Sequential(torch.nn.BatchNorm1d(2))
        )
    )
    assert list(converted.state_dict()) == list(theirs.state_dict())


def test_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[SyncBatchNorm\] expected at least 2D input"):
        nn.SyncBatchNorm(3)(fc.ones(3))
