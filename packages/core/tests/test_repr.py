"""repr/str of tensors follow PyTorch's layout; PyTorch is the oracle."""

import flambeau_core as fc
import numpy as np
import pytest
import torch


def same_repr(t_fc, t_torch):
    return repr(t_fc) == repr(t_torch).replace("torch.", "flambeau.")


@pytest.mark.parametrize(
    "data",
    [
        [[1.0, 2.0], [3.0, 4.0]],
        [1, 2, 3],
        3.5,
        7,
        [True, False],
        [1e-5, 1.0],
        [1.5, 2.25, -3.125],
        [[0.1] * 20] * 3,
        [float("nan"), 1.0, float("inf"), float("-inf")],
        [1e9, 1.0],
        [0.0, 0.0],
        [123456789, -5],
        [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
    ],
)
def test_small_tensors_match_torch(data):
    assert same_repr(fc.tensor(data), torch.tensor(data))
    assert str(fc.tensor(data)) == repr(fc.tensor(data))


@pytest.mark.parametrize("shape", [(2000,), (40, 40), (3, 400), (11, 12, 13), (0, 3), (0,), (1001,)])
def test_large_and_empty_match_torch(shape):
    x = torch.from_numpy(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    assert same_repr(fc.tensor(x.numpy()), x)


def test_dtype_suffix():
    assert repr(fc.tensor([1.0, 2.0], dtype=fc.float64)) == "tensor([1., 2.], dtype=flambeau.float64)"
    assert repr(fc.tensor([1, 2], dtype=fc.int32)) == "tensor([1, 2], dtype=flambeau.int32)"
    assert repr(fc.zeros(0, dtype=fc.float64)) == "tensor([], dtype=flambeau.float64)"
    assert repr(fc.tensor(3.5)) == "tensor(3.5000)"
    assert repr(fc.tensor([1, 2, 3])) == "tensor([1, 2, 3])"


def test_noncontiguous_views_print_their_values():
    t = fc.arange(12.0).view(3, 4)
    assert same_repr(t.T, torch.arange(12.0).view(3, 4).T)
    assert same_repr(t[:, ::2], torch.arange(12.0).view(3, 4)[:, ::2])


class _GradView:
    """A tensor seen with autograd attributes set (core alone cannot set requires_grad)."""

    def __init__(self, t, requires_grad=False, grad_fn=None):
        self._t, self.requires_grad, self.grad_fn = t, requires_grad, grad_fn

    def __getattr__(self, name):
        return getattr(self._t, name)

    def __getitem__(self, index):
        return self._t[index]


class AddBackward0:
    pass


def test_requires_grad_and_grad_fn_suffixes():
    from flambeau_core._format import tensor_repr

    t = fc.tensor([1.0, 2.0])
    assert tensor_repr(_GradView(t, requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert tensor_repr(_GradView(t, True, AddBackward0())) == "tensor([1., 2.], grad_fn=<AddBackward0>)"
    x = torch.arange(30.0).view(3, 10).requires_grad_()
    got = tensor_repr(_GradView(fc.arange(30.0).view(3, 10), requires_grad=True))
    assert got == repr(x)
