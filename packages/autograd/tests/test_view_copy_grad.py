"""Gradients of the view copies (t_copy, unfold_copy, ...), the scatters (slice_scatter, ...), Tensor.unfold
and the split spellings against PyTorch 2.13 in float64, and gradcheck. They are compositions of core ops
(flambeau_core/_view_copy.py, _views.py, _splits.py), differentiated through the ops they call."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(17)


def arr(*shape):
    return RNG.standard_normal(shape)


def joined_pieces(lib, name, args):
    """lib.name(x, *args)'s pieces as one tensor, each weighted by its place (every piece gets its own gradient)."""

    def fn(x):
        return lib.cat([p.reshape(-1) * (i + 1) for i, p in enumerate(getattr(lib, name)(x, *args))])

    return fn


COPIES = [
    ("alias_copy", (3, 4), ()),
    ("as_strided_copy", (12,), ((3, 2), (2, 1))),
    ("as_strided_copy", (12,), ((3, 3), (1, 1), 2)),  # overlapping windows
    ("diagonal_copy", (3, 4), (1,)),
    ("expand_copy", (3, 1), ((2, 3, 4),)),
    ("narrow_copy", (3, 4), (1, 1, 2)),
    ("permute_copy", (2, 3, 4), ((2, 0, 1),)),
    ("squeeze_copy", (3, 1, 4), (1,)),
    ("t_copy", (3, 4), ()),
    ("transpose_copy", (2, 3, 4), (0, 2)),
    ("unfold_copy", (3, 7), (1, 3, 1)),
    ("unfold_copy", (5, 4), (0, 2, 2)),
    ("unsqueeze_copy", (3, 4), (1,)),
    ("view_copy", (3, 4), ((2, 6),)),
]


@pytest.mark.parametrize(("name", "shape", "args"), COPIES, ids=[f"{c[0]}{c[2]}" for c in COPIES])
def test_copy_gradients(name, shape, args):
    compare_with_torch(lambda x: getattr(fc, name)(x, *args), lambda x: getattr(torch, name)(x, *args), [arr(*shape)])


@pytest.mark.parametrize(
    ("name", "args"), [("unbind_copy", (1,)), ("split_copy", (2, 1)), ("split_with_sizes_copy", ([1, 3], 1))]
)
def test_list_copy_gradients(name, args):
    compare_with_torch(joined_pieces(fc, name, args), joined_pieces(torch, name, args), [arr(3, 4)])


SCATTERS = [
    ("slice_scatter", (3, 4), (3, 2), (1, 0, None, 2)),
    ("slice_scatter", (3, 4), (1, 4), (0, -1)),
    ("select_scatter", (3, 4), (4,), (0, 1)),
    ("select_scatter", (2, 3, 4), (2, 4), (1, -1)),
    ("diagonal_scatter", (3, 4), (3,), (1,)),
    ("diagonal_scatter", (2, 3, 4), (2, 3), (0, 2, 1)),
]


@pytest.mark.parametrize(("name", "shape", "src_shape", "args"), SCATTERS, ids=[f"{c[0]}{c[3]}" for c in SCATTERS])
def test_scatter_gradients(name, shape, src_shape, args):
    compare_with_torch(
        lambda x, s: getattr(fc, name)(x, s, *args),
        lambda x, s: getattr(torch, name)(x, s, *args),
        [arr(*shape), arr(*src_shape)],
    )


@pytest.mark.parametrize("which", ["input", "src"])
def test_scatter_gradient_for_one_operand(which):
    """Only one operand requires grad: the other is plain data (the in-place form could not record src alone)."""
    x, s = fb_tensor(arr(3, 4), requires_grad=which == "input"), fb_tensor(arr(3, 2), requires_grad=which == "src")
    out = fc.slice_scatter(x, s, 1, 1, 3)
    assert out.requires_grad
    w = arr(3, 4)
    (out * fb_tensor(w)).sum().backward()
    expected = w.copy()
    expected[:, 1:3] = 0
    got = x.grad if which == "input" else s.grad
    np.testing.assert_allclose(to_np(got), expected if which == "input" else w[:, 1:3])


def test_as_strided_scatter_gradient_is_the_derivative():
    """PyTorch's input gradient for as_strided_scatter fails PyTorch's own gradcheck (its OpInfo marks
    TestBwdGradients.test_fn_grad an expected failure): the check here is finite differences, and PyTorch
    for src only."""
    x, s = fb_tensor(arr(3, 3), requires_grad=True), fb_tensor(arr(2, 2), requires_grad=True)
    assert ag.gradcheck(lambda a, b: fc.as_strided_scatter(a, b, (2, 2), (1, 2), 1), [x, s])
    w = arr(3, 3)
    (fc.as_strided_scatter(x, s, (2, 2), (1, 2), 1) * fb_tensor(w)).sum().backward()
    tx, ts = torch.tensor(to_np(x), requires_grad=True), torch.tensor(to_np(s), requires_grad=True)
    (torch.as_strided_scatter(tx, ts, (2, 2), (1, 2), 1) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(s.grad), ts.grad.numpy())
    expected = w.reshape(-1).copy()
    expected[[1, 2, 3, 4]] = 0  # the places src overwrote get nothing
    np.testing.assert_allclose(to_np(x.grad).reshape(-1), expected)


@pytest.mark.parametrize(("dimension", "size", "step"), [(1, 3, 1), (0, 2, 2), (1, 2, 3), (1, 0, 1)])
@pytest.mark.parametrize("transposed", [False, True])
def test_unfold_gradients(dimension, size, step, transposed):
    def ours(x):
        return (x.t() if transposed else x).unfold(dimension, size, step)

    def theirs(x):
        return (x.t() if transposed else x).unfold(dimension, size, step)

    compare_with_torch(ours, theirs, [arr(5, 6)])


def test_unfold_twice_gradient():
    """Patches of an image: unfold of an unfold (a non-contiguous input the second time)."""
    compare_with_torch(
        lambda x: x.unfold(0, 2, 1).unfold(1, 3, 2), lambda x: x.unfold(0, 2, 1).unfold(1, 3, 2), [arr(4, 7)]
    )


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("split_with_sizes", ([2, 0, 3], 1)),
        ("unsafe_split", (2, 1)),
        ("unsafe_chunk", (3, 0)),
        ("unsafe_split_with_sizes", ([1, 3], 0)),
        ("hsplit", ([1, 4],)),
        ("vsplit", (2,)),
    ],
)
def test_split_gradients(name, args):
    compare_with_torch(joined_pieces(fc, name, args), joined_pieces(torch, name, args), [arr(4, 5)])
