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


@pytest.fixture
def default_printoptions():
    yield
    fc.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


PRINT_CASES = [
    dict(precision=2),
    dict(precision=8),
    dict(threshold=5),
    dict(threshold=5, edgeitems=1),
    dict(linewidth=30),
    dict(sci_mode=True),
    dict(sci_mode=False),
    dict(profile="short"),
    dict(profile="full"),
    dict(profile="short", precision=6),
]


@pytest.mark.parametrize("options", PRINT_CASES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.arange(24, dtype=m.float32).reshape(4, 6) / 7,
        lambda m: m.arange(2000, dtype=m.float32) * 1.5,  # default dtype: no suffix (its name differs)
        lambda m: m.tensor([1e-5, 1.0, 123.0]),
        lambda m: m.tensor([1.0, 2.0, 3.0]),
        lambda m: m.arange(30).reshape(3, 10),
        lambda m: m.tensor(3.14159265),
    ],
    ids=["matrix", "long", "small-values", "int-valued", "integers", "scalar"],
)
def test_printoptions_match_torch(default_printoptions, options, make):
    fc.set_printoptions(**options)
    torch.set_printoptions(**options)
    assert fc.get_printoptions() == torch._tensor_str.get_printoptions()
    assert same_repr(make(fc), make(torch))


def test_printoptions_context_and_errors(default_printoptions):
    with fc.printoptions(precision=1, sci_mode=True):
        assert fc.get_printoptions()["precision"] == 1
        with torch._tensor_str.printoptions(precision=1, sci_mode=True):
            assert same_repr(fc.tensor([0.25, 3.0]), torch.tensor([0.25, 3.0]))
    assert fc.get_printoptions() == {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }
    with pytest.raises(ValueError, match=r"\[set_printoptions\] profile must be one of"):
        fc.set_printoptions(profile="tiny")
    with pytest.raises(TypeError, match=r"\[set_printoptions\] precision must be an int, got float"):
        fc.set_printoptions(precision=2.5)
    with pytest.raises(ValueError, match=r"\[set_printoptions\] linewidth must be non-negative"):
        fc.set_printoptions(linewidth=-1)
    with pytest.raises(TypeError, match=r"\[set_printoptions\] sci_mode must be a bool or None"):
        fc.set_printoptions(sci_mode="yes")
    assert fc.get_printoptions()["precision"] == 4
