"""Manipulation and creation ops of the "shape" area (cat on any dim, split/chunk, flip/roll/rot90,
repeat/tile/repeat_interleave, movedim, diagonal/diag/diag_embed, tril/triu, meshgrid, broadcast_*,
atleast_*, unflatten, linspace/logspace/eye/empty_strided/tril_indices) against PyTorch, over several
dtypes, odd and empty shapes and non-contiguous inputs, and their error paths."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

DTYPES = {
    "float32": (fc.float32, torch.float32, np.float32),
    "float64": (fc.float64, torch.float64, np.float64),
    "int64": (fc.int64, torch.int64, np.int64),
    "int32": (fc.int32, torch.int32, np.int32),
    "uint8": (fc.uint8, torch.uint8, np.uint8),
    "bool": (fc.bool, torch.bool, np.bool_),
}
LAYOUTS = ("contiguous", "transposed", "sliced")


def pair(shape, dtype="float32", layout="contiguous", seed=0):
    """The same values as a flambeau and a torch tensor, laid out as `layout`."""
    rng = np.random.default_rng(seed)
    npd = DTYPES[dtype][2]
    if dtype == "bool":
        arr = rng.random(shape) < 0.5
    elif dtype in ("float32", "float64"):
        arr = rng.standard_normal(shape).astype(npd)
    else:
        arr = rng.integers(0, 50, size=shape).astype(npd)
    if layout == "contiguous" or len(shape) < 2:
        f = fc.tensor(arr, dtype=DTYPES[dtype][0])
    elif layout == "transposed":
        rev = tuple(range(len(shape)))[::-1]
        f = fc.tensor(np.ascontiguousarray(arr.transpose(rev)), dtype=DTYPES[dtype][0]).permute(*rev)
    else:
        big = np.repeat(arr, 2, axis=-1)
        f = fc.tensor(big, dtype=DTYPES[dtype][0])[..., ::2]
    assert f.shape == tuple(shape)
    return f, torch.from_numpy(np.array(arr))


def check(ours, theirs):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            check(a, b)
        return
    assert ours.shape == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- cat and friends


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
def test_cat_any_dim(dtype, layout, dim):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if (k - dim) % 3 else s + i for k, s in enumerate(sh)) for i, sh in enumerate(shapes)]
    pairs = [pair(s, dtype, layout, seed=i) for i, s in enumerate(shapes)]
    check(fc.cat([p[0] for p in pairs], dim), torch.cat([p[1] for p in pairs], dim))
    check(fc.concat([p[0] for p in pairs], dim=dim), torch.concat([p[1] for p in pairs], dim=dim))
    check(fc.concatenate([p[0] for p in pairs], dim), torch.concatenate([p[1] for p in pairs], dim))


def test_cat_promotes_and_skips_empty_and_out():
    a, ta = pair((2, 3), "int64")
    b, tb = pair((2, 2), "float32", seed=1)
    check(fc.cat([a, b], 1), torch.cat([ta, tb], 1))
    e = fc.zeros(2, 0, dtype=fc.int64)
    check(fc.cat([a, e, a], 1), torch.cat([ta, torch.zeros(2, 0, dtype=torch.int64), ta], 1))
    check(fc.cat([fc.zeros(0), a]), torch.cat([torch.zeros(0), ta]))
    out = fc.empty(4, 3, dtype=fc.int64)
    r = fc.cat([a, a], 0, out=out)
    assert r is out
    check(out, torch.cat([ta, ta]))


def test_cat_errors_name_tensor_and_shapes():
    with pytest.raises(fc.FlambeauError, match=r"\[cat\].*\(2, 3\).*\(2, 4\)"):
        fc.cat([fc.zeros(2, 3), fc.zeros(2, 4)], 0)
    with pytest.raises(fc.FlambeauError, match=r"\[cat\].*same number of dims"):
        fc.cat([fc.zeros(2, 3), fc.zeros(2, 3, 1)])
    with pytest.raises(IndexError, match="cat"):
        fc.cat([fc.zeros(2, 3)], 2)
    with pytest.raises(fc.FlambeauError, match=r"\[stack\].*tensor 1 has shape \(3,\)"):
        fc.stack([fc.zeros(2), fc.zeros(3)])


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 2)])
def test_stacks(name, shape):
    pairs = [pair(shape, "float64", seed=i) for i in range(3)]
    check(getattr(fc, name)([p[0] for p in pairs]), getattr(torch, name)([p[1] for p in pairs]))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_stack_dims(dim):
    pairs = [pair((2, 3), "int64", "transposed", seed=i) for i in range(3)]
    check(fc.stack([p[0] for p in pairs], dim), torch.stack([p[1] for p in pairs], dim))


@pytest.mark.parametrize("shape", [(0,), (3,), (2, 0), (2, 3, 4)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_stack_every_dim_is_a_fresh_tensor(shape, layout):
    # Note [Stack as cat]: stacking along a dim the inputs have writes one cat into the result; along
    # the new last dim it unsqueezes. Every dim, layout, empty inputs and a promoted dtype, against
    # torch; the result owns its memory (not a view of a temporary, as torch's).
    pairs = [pair(shape, "float32", layout, seed=i) for i in range(3)] + [pair(shape, "int64", layout, seed=3)]
    for dim in range(-len(shape) - 1, len(shape) + 1):
        ours = fc.stack([p[0] for p in pairs], dim)
        check(ours, torch.stack([p[1] for p in pairs], dim))
        assert not ours._is_view and ours.is_contiguous()
        out = fc.empty((0,))
        assert fc.stack([p[0] for p in pairs], dim, out=out) is out
        check(out, torch.stack([p[1] for p in pairs], dim))


# ---------------------------------------------------------------- split family (views)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_split_chunk_tensor_split(layout, dim):
    f, t = pair((7, 5, 6), "float32", layout)
    for size in (1, 2, 3, 7, 10):
        check(fc.split(f, size, dim), torch.split(t, size, dim))
        check(f.split(size, dim=dim), t.split(size, dim=dim))
        check(f.chunk(size, dim), t.chunk(size, dim))
        check(fc.tensor_split(f, size, dim), torch.tensor_split(t, size, dim))
    n = t.shape[dim]
    sizes = [1, n - 3, 2]
    check(fc.split(f, sizes, dim), torch.split(t, sizes, dim))
    for idx in ([1, 3], [0, 2, 2], [-2], [4, 100]):
        check(fc.tensor_split(f, idx, dim), torch.tensor_split(t, idx, dim))
    check(f.unbind(dim), t.unbind(dim))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_tensor_split_points_given_as_a_tensor(dim):
    """A 0-d tensor is the number of sections, a 1-D one the indices (a one-element 1-D tensor too)."""
    f, t = pair((7, 5, 6))
    for points in (3, [2, 4], [1], [0, 9]):
        fp = fc.tensor(points, device="cpu")
        check(fc.tensor_split(f, fp, dim), torch.tensor_split(t, torch.tensor(points), dim))
        check(f.tensor_split(fp, dim=dim), t.tensor_split(torch.tensor(points), dim=dim))


def test_tensor_split_points_tensor_errors():
    f = fc.zeros(5)
    with pytest.raises(
        RuntimeError, match=r"\[tensor_split\] expected tensor_indices_or_sections to have dtype int64, got float32"
    ):
        fc.tensor_split(f, fc.tensor([2.0], device="cpu"))
    with pytest.raises(RuntimeError, match=r"\[tensor_split\].*0-d or 1-d, got shape \(1, 1\)"):
        fc.tensor_split(f, fc.tensor([[1]], device="cpu"))


def test_split_views_share_memory():
    f = fc.zeros(4, 3)
    a, b = f.split(2)
    a.fill_(1.0)
    assert to_numpy(f)[:2].sum() == 6
    assert f.chunk(2, 1)[0].shape == (4, 2)


def test_split_empty_and_errors():
    f, t = pair((0, 3))
    check(f.split(2), t.split(2))
    check(f.chunk(3), t.chunk(3))
    with pytest.raises(fc.FlambeauError, match=r"\[split\].*sum exactly to 5"):
        fc.split(fc.zeros(5), [2, 2])
    with pytest.raises(fc.FlambeauError, match=r"\[chunk\].*greater than 0"):
        fc.zeros(5).chunk(0)
    with pytest.raises(fc.FlambeauError, match=r"\[tensor_split\].*larger than 0"):
        fc.tensor_split(fc.zeros(5), 0)
    with pytest.raises(
        fc.FlambeauError, match=r"\[tensor_split\] splitting dim 0 of shape \(5,\) into 4611686018427387904 sections"
    ):
        fc.tensor_split(fc.zeros(5), 2**62)
    with pytest.raises(IndexError, match=r"split"):
        fc.split(fc.zeros(5), 2, 3)


# ---------------------------------------------------------------- flips, rolls, rotations


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (-1,), (0, 2), (0, 1, 2), ()])
def test_flip(dtype, layout, dims):
    f, t = pair((3, 4, 5), dtype, layout)
    check(fc.flip(f, dims), torch.flip(t, dims))
    check(f.flip(dims), t.flip(dims))


def test_flip_odd_shapes_and_lr_ud():
    for shape in [(), (0,), (1,), (1, 7), (5, 0, 2), (2, 1, 3)]:
        f, t = pair(shape)
        dims = list(range(len(shape)))
        check(fc.flip(f, dims), torch.flip(t, dims))
    f, t = pair((3, 4), "int64", "transposed")
    check(fc.fliplr(f), torch.fliplr(t))
    check(fc.flipud(f), torch.flipud(t))
    with pytest.raises(fc.FlambeauError, match="appears multiple times"):
        fc.flip(f, [0, 0])
    with pytest.raises(fc.FlambeauError, match="fliplr"):
        fc.fliplr(fc.zeros(3))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_roll(layout):
    f, t = pair((4, 5, 3), "float64", layout)
    for shifts, dims in [(1, 0), (-2, 1), (7, -1), ((1, 2), (0, 2)), (13, None), (0, 0), ((3, -4), (1, 1))]:
        check(fc.roll(f, shifts, dims), torch.roll(t, shifts, dims))
        check(f.roll(shifts, dims), t.roll(shifts, dims))
    with pytest.raises(fc.FlambeauError, match=r"\[roll\]"):
        fc.roll(f, (1, 2), (0,))


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (1, 2), (-1, 0)])
def test_rot90(k, dims):
    f, t = pair((2, 3, 4), "int32", "sliced")
    check(fc.rot90(f, k, dims), torch.rot90(t, k, dims))
    with pytest.raises(fc.FlambeauError, match=r"\[rot90\]"):
        fc.rot90(f, 1, (0, 0))


# ---------------------------------------------------------------- repetition


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_repeat_tile(dtype, layout):
    f, t = pair((2, 3), dtype, layout)
    for reps in [(1, 1), (2, 3), (3, 1, 2), (0, 2), (2, 1, 1, 1)]:
        check(f.repeat(*reps), t.repeat(*reps))
        check(f.repeat(reps), t.repeat(reps))
        check(fc.tile(f, reps), torch.tile(t, reps))
    check(fc.tile(f, (2,)), torch.tile(t, (2,)))
    s, ts = pair(())
    check(s.repeat(3, 2), ts.repeat(3, 2))
    with pytest.raises(fc.FlambeauError, match=r"\[repeat\]"):
        f.repeat(2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_repeat_interleave(layout):
    f, t = pair((3, 4), "float32", layout)
    check(fc.repeat_interleave(f, 2), torch.repeat_interleave(t, 2))
    check(f.repeat_interleave(3, dim=1), t.repeat_interleave(3, dim=1))
    check(f.repeat_interleave(0, 0), t.repeat_interleave(0, 0))
    r = torch.tensor([1, 0, 2])
    check(f.repeat_interleave(fc.tensor([1, 0, 2]), dim=0), t.repeat_interleave(r, dim=0))
    check(fc.repeat_interleave(fc.tensor([2, 0, 3])), torch.repeat_interleave(torch.tensor([2, 0, 3])))
    check(f.repeat_interleave(fc.tensor([2]), dim=1), t.repeat_interleave(torch.tensor([2]), dim=1))
    with pytest.raises(fc.FlambeauError, match="negative"):
        fc.repeat_interleave(fc.tensor([1, -1]))
    with pytest.raises(TypeError, match="repeat_interleave"):
        fc.repeat_interleave(fc.tensor([1.0, 2.0]))
    with pytest.raises(fc.FlambeauError, match="same size as input"):
        f.repeat_interleave(fc.tensor([1, 2]), dim=0)


# ---------------------------------------------------------------- dims


def test_movedim_swap_unflatten_broadcast():
    f, t = pair((2, 3, 4, 5), "float32", "transposed")
    for s, d in [(0, 3), (-1, 0), ((0, 1), (2, 3)), ((3, 0), (0, 3)), ((), ())]:
        check(fc.movedim(f, s, d), torch.movedim(t, s, d))
        check(f.moveaxis(s, d), t.moveaxis(s, d))
    check(fc.swapaxes(f, 0, 2), torch.swapaxes(t, 0, 2))
    check(f.swapdims(1, -1), t.swapdims(1, -1))
    check(fc.unflatten(f, 1, (3, 1)), torch.unflatten(t, 1, (3, 1)))
    check(f.unflatten(-1, (-1, 5)), t.unflatten(-1, (-1, 5)))
    check(fc.broadcast_to(f[:, :1], (2, 3, 4, 5)), torch.broadcast_to(t[:, :1], (2, 3, 4, 5)))
    a, ta = pair((3, 1))
    b, tb = pair((1, 4), seed=1)
    check(fc.broadcast_tensors(a, b), torch.broadcast_tensors(ta, tb))
    check(fc.broadcast_tensors([a, b]), torch.broadcast_tensors(ta, tb))
    with pytest.raises(fc.FlambeauError, match="movedim"):
        fc.movedim(f, (0, 0), (1, 2))
    with pytest.raises(fc.FlambeauError, match="unflatten"):
        fc.unflatten(f, 1, (2, 2))


def test_atleast():
    for shape in [(), (3,), (2, 3), (2, 3, 4)]:
        f, t = pair(shape)
        check(fc.atleast_1d(f), torch.atleast_1d(t))
        check(fc.atleast_2d(f), torch.atleast_2d(t))
        check(fc.atleast_3d(f), torch.atleast_3d(t))
    a, ta = pair(())
    b, tb = pair((2,))
    check(fc.atleast_2d(a, b), torch.atleast_2d(ta, tb))
    check(fc.atleast_3d([a, b]), torch.atleast_3d([ta, tb]))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    a, ta = pair((3,), "int64")
    b, tb = pair((4,), "int64", seed=1)
    c, tc = pair((), "int64", seed=2)
    check(fc.meshgrid(a, b, indexing=indexing), torch.meshgrid(ta, tb, indexing=indexing))
    check(fc.meshgrid([a, b, c], indexing=indexing), torch.meshgrid([ta, tb, tc], indexing=indexing))
    check(fc.meshgrid(a, indexing=indexing), torch.meshgrid(ta, indexing=indexing))
    with pytest.raises(fc.FlambeauError, match="meshgrid"):
        fc.meshgrid(fc.zeros(2, 2))


# ---------------------------------------------------------------- diagonals and triangles


@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 2, 5])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_diagonal_diag_embed(offset, layout):
    f, t = pair((3, 4, 5), "float32", layout)
    for d1, d2 in [(0, 1), (1, 2), (2, 0), (-1, -2)]:
        check(fc.diagonal(f, offset, d1, d2), torch.diagonal(t, offset, d1, d2))
        check(f.diagonal(offset=offset, dim1=d1, dim2=d2), t.diagonal(offset=offset, dim1=d1, dim2=d2))
        check(fc.diag_embed(f, offset, d1, d2), torch.diag_embed(t, offset, d1, d2))
    m, tm = pair((4, 6), "int64", layout)
    check(fc.diag(m, offset), torch.diag(tm, offset))
    v, tv = pair((4,), "int64")
    check(fc.diag(v, offset), torch.diag(tv, offset))


@pytest.mark.parametrize("offset", [-(2**63), 2**63 - 1, -(2**62)])
def test_diagonal_offsets_at_the_int64_limits(offset):
    # An offset past either edge is an empty diagonal, as PyTorch's (no overflow negating INT64_MIN).
    got = fc.diagonal(fc.ones(2, 3), offset)
    assert tuple(got.shape) == tuple(torch.diagonal(torch.ones(2, 3), offset).shape) == (0,)


def test_diag_embed_offset_int64_min_raises_named():
    with pytest.raises(fc.FlambeauError, match=r"\[diag_embed\] offset -9223372036854775808 is too large"):
        fc.diag_embed(fc.ones(2), -(2**63))


def test_diagonal_is_a_view():
    f = fc.zeros(3, 3)
    f.diagonal().fill_(1.0)
    np.testing.assert_array_equal(to_numpy(f), np.eye(3, dtype=np.float32))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("k", [-5, -1, 0, 1, 3, 10, 2**62, -(2**62)])
def test_tril_triu(dtype, layout, k):
    f, t = pair((2, 4, 5), dtype, layout)
    check(fc.tril(f, k), torch.tril(t, k))
    check(f.triu(k), t.triu(k))
    g = f.contiguous().clone()
    g.tril_(k)
    check(g, torch.tril(t, k))


def test_tril_empty_and_error():
    for shape in [(0, 3), (3, 0), (2, 0, 4)]:
        f, t = pair(shape)
        check(fc.tril(f), torch.tril(t))
        check(fc.triu(f, 1), torch.triu(t, 1))
    with pytest.raises(fc.FlambeauError, match=r"\[tril\].*at least 2 dims"):
        fc.tril(fc.zeros(3))


# ---------------------------------------------------------------- creation


@pytest.mark.parametrize("steps", [0, 1, 2, 5, 100])
def test_linspace_logspace(steps):
    for start, end in [(0, 1), (-3.5, 7.25), (10, -10), (2, 2)]:
        check(fc.linspace(start, end, steps), torch.linspace(start, end, steps))
        check(fc.linspace(start, end, steps, dtype=fc.float64), torch.linspace(start, end, steps, dtype=torch.float64))
        ours = fc.logspace(start, end, steps, dtype=fc.float64)
        theirs = torch.logspace(start, end, steps, dtype=torch.float64)
        np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-12)
        check(fc.logspace(start, end, steps, base=2.0), torch.logspace(start, end, steps, base=2.0))
    check(fc.linspace(0, 10, 4, dtype=fc.int64), torch.linspace(0, 10, 4, dtype=torch.int64))
    out = fc.empty(5)
    assert fc.linspace(0, 1, 5, out=out) is out
    with pytest.raises(fc.FlambeauError, match=r"\[linspace\].*non-negative"):
        fc.linspace(0, 1, -1)


def test_eye_empty_strided_like():
    for n, m in [(0, None), (1, None), (3, None), (3, 5), (4, 2), (2, 0)]:
        check(fc.eye(n, m) if m is not None else fc.eye(n), torch.eye(n, m) if m is not None else torch.eye(n))
    check(fc.eye(3, dtype=fc.int64), torch.eye(3, dtype=torch.int64))
    check(fc.eye(2, 3, dtype=fc.bool), torch.eye(2, 3, dtype=torch.bool))
    with pytest.raises(fc.FlambeauError, match=r"\[eye\]"):
        fc.eye(-1)
    e = fc.empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2) and e.dtype == fc.float32
    assert fc.empty_strided((2, 3), (3, 1), dtype=fc.int64).dtype == fc.int64
    assert fc.empty_strided((0, 3), (3, 1)).shape == (0, 3)
    with pytest.raises(fc.FlambeauError, match="empty_strided"):
        fc.empty_strided((2, 3), (1,))
    f, _ = pair((2, 3), "int64")
    assert fc.empty_like(f).shape == (2, 3) and fc.empty_like(f, dtype=fc.float64).dtype == fc.float64
    check(fc.full_like(f, 7), torch.full_like(torch.zeros(2, 3, dtype=torch.int64), 7))
    check(fc.full_like(f, 2.5, dtype=fc.float32), torch.full((2, 3), 2.5))


@pytest.mark.parametrize("row,col", [(0, 0), (1, 1), (3, 3), (4, 2), (2, 5)])
@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 3])
def test_tril_triu_indices(row, col, offset):
    check(fc.tril_indices(row, col, offset), torch.tril_indices(row, col, offset))
    check(fc.triu_indices(row, col, offset), torch.triu_indices(row, col, offset))
    check(fc.tril_indices(row, col, offset, dtype=fc.int32), torch.tril_indices(row, col, offset, dtype=torch.int32))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_view_as_reshape_as(layout):
    ours, theirs = pair((4, 6), layout=layout)
    # torch's operand laid out as ours is (pair gives a contiguous one).
    theirs = {"transposed": theirs.t().contiguous().t(), "sliced": theirs.repeat_interleave(2, -1)[..., ::2]}.get(
        layout, theirs
    )
    assert ours.stride() == theirs.stride()
    fc_other, torch_other = fc.zeros(2, 12), torch.zeros(2, 12)
    np.testing.assert_array_equal(to_numpy(ours.reshape_as(fc_other)), theirs.reshape_as(torch_other).numpy())
    try:
        expected = theirs.view_as(torch_other)
    except RuntimeError:  # both refuse to view memory that is not laid out for the shape
        with pytest.raises(fc.FlambeauError, match=r"\[view\]"):
            ours.view_as(fc_other)
        return
    view = ours.view_as(fc_other)
    np.testing.assert_array_equal(to_numpy(view), expected.numpy())
    view[0, 0] = 7  # a view: writes reach the tensor it views
    assert ours[0, 0].item() == 7


def test_view_as_reshape_as_errors():
    with pytest.raises(TypeError, match=r"\[view_as\] expected a Tensor as 'other', got tuple"):
        fc.zeros(6).view_as((2, 3))
    with pytest.raises(TypeError, match=r"\[reshape_as\] expected a Tensor as 'other', got int"):
        fc.zeros(6).reshape_as(6)
    with pytest.raises(fc.FlambeauError, match=r"\[view\].*\(4,\)"):
        fc.zeros(6).view_as(fc.zeros(4))
