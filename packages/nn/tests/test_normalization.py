"""RMSNorm / F.rms_norm, LocalResponseNorm / F.local_response_norm and CrossMapLRN2d against PyTorch:
values, gradients of input and weight in float32 and float64, init, state_dict keys, gradcheck, errors."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import pytest
import torch
import torch.nn.functional as TF
from nn_testing import TOLERANCES, compare_forward_backward, copy_params

DTYPES = [torch.float32, torch.float64]
FB = {torch.float32: fc.float32, torch.float64: fc.float64}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,normalized", [((4, 6), 6), ((2, 3, 4, 5), (4, 5)), ((3, 7), [7])])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(shape, normalized, eps, dtype):
    x = torch.randn(*shape, dtype=dtype)
    nshape = (normalized,) if isinstance(normalized, int) else tuple(normalized)
    w = torch.randn(*nshape, dtype=dtype)
    compare_forward_backward(
        lambda x, w: F.rms_norm(x, normalized, w, eps),
        lambda x, w: TF.rms_norm(x, list(nshape), w, eps),
        [x, w],
        **TOLERANCES[dtype],
    )
    ours, theirs = nn.RMSNorm(normalized, eps=eps, dtype=FB[dtype]), torch.nn.RMSNorm(normalized, eps=eps, dtype=dtype)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    assert repr(ours) == repr(theirs)
    with torch.no_grad():
        theirs.weight.normal_()
    copy_params(ours, theirs)
    compare_forward_backward(ours, theirs, [x], **TOLERANCES[dtype])


def test_rms_norm_init_and_no_affine():
    m = nn.RMSNorm((2, 3), elementwise_affine=False)
    assert m.weight is None and list(m.state_dict()) == []
    assert nn.RMSNorm(4).weight.tolist() == [1.0, 1.0, 1.0, 1.0]
    x = fc.randn(2, 3, 4, dtype=fc.float64, requires_grad=True)
    w = fc.randn(4, dtype=fc.float64, requires_grad=True)
    assert fa.gradcheck(lambda x, w: F.rms_norm(x, 4, w, 1e-5), (x, w))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 7), (2, 6, 3, 4), (1, 4, 2, 3, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_local_response_norm(shape, size, dtype):
    x = torch.randn(*shape, dtype=dtype)
    kw = dict(alpha=0.3, beta=0.6, k=1.5)
    compare_forward_backward(
        lambda x: F.local_response_norm(x, size, **kw),
        lambda x: TF.local_response_norm(x, size, **kw),
        [x],
        **TOLERANCES[dtype],
    )
    compare_forward_backward(
        nn.LocalResponseNorm(size, **kw), torch.nn.LocalResponseNorm(size, **kw), [x], **TOLERANCES[dtype]
    )


@pytest.mark.parametrize("channels", [1, 3, 6, 9])
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_cross_map_lrn2d_values(channels, size):
    x = torch.randn(2, channels, 3, 4, dtype=torch.float64)
    ours, theirs = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=2.0), torch.nn.CrossMapLRN2d(size, 0.5, 0.7, 2.0)
    from nn_testing import assert_close, from_torch

    assert_close(ours(from_torch(x)), theirs(x), rtol=1e-10, atol=1e-12)
    assert repr(ours) == repr(theirs)
    assert repr(nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3))


def test_cross_map_lrn2d_gradcheck():
    x = fc.randn(1, 6, 2, 3, dtype=fc.float64, requires_grad=True)
    assert fa.gradcheck(nn.CrossMapLRN2d(3, alpha=0.5, beta=0.7, k=2.0), (x,))


def test_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[rms_norm\] expected an input whose trailing dims"):
        F.rms_norm(fc.randn(2, 3), (4,))
    with pytest.raises(fc.FlambeauError, match=r"\[rms_norm\] weight must have shape \(3,\)"):
        F.rms_norm(fc.randn(2, 3), 3, fc.ones(4))
    with pytest.raises(fc.FlambeauError, match=r"\[local_response_norm\] Expected 3D or higher"):
        F.local_response_norm(fc.randn(2, 3), 2)
    with pytest.raises(fc.FlambeauError, match=r"\[CrossMapLRN2d\] expected 4D input"):
        nn.CrossMapLRN2d(3)(fc.randn(2, 3, 4))
