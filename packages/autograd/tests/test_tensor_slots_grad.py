"""The Tensor type's C slots (core's Note [Tensor slots]) under autograd: ``x[i]`` records select's
backward, and ``_C._stack_samples`` leaves samples that need a gradient to stack, against PyTorch."""

from __future__ import annotations

import flambeau_autograd  # noqa: F401  (installs the autograd kernels)
import flambeau_core as fc
import numpy as np
import torch
from flambeau_core import _C

_DATA = np.arange(24, dtype=np.float32).reshape(4, 3, 2)


def test_int_index_records_select_backward():
    x = fc.tensor(_DATA).requires_grad_()
    tx = torch.tensor(_DATA, requires_grad=True)
    (x[1] * x[-1]).sum().backward()
    (tx[1] * tx[-1]).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()
    assert x[2].requires_grad and not x.detach()[2].requires_grad


def test_stack_samples_leaves_grad_to_stack():
    w = fc.tensor(_DATA).requires_grad_()
    assert _C._stack_samples([w[0], w[1]]) is None
    assert _C._stack_samples([w[0].detach(), w[1].detach()]).tolist() == _DATA[:2].tolist()
