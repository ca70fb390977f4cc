"""Every nn test starts from the same seeds (flambeau's and PyTorch's generators)."""

import flambeau_core as fc
import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    fc.manual_seed(0)
    torch.manual_seed(0)
