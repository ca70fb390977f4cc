"""The view-copy (``t_copy``, ``unbind_copy``, ...) and scatter (``slice_scatter``, ...) functions against
PyTorch 2.13: values, dtypes, shapes, contiguity and layout, no memory shared with the input, out=,
the error types and messages, and fuzzed size arguments (errors, never a crash). Gradients are in
flambeau-autograd's tests (test_view_copy_grad.py)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import same_as_torch_or_refused, to_numpy

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 4, 5)).astype(np.float32)

# (name, args after input, input array): torch and flambeau get the same arguments.
COPY_CASES = [
    ("alias_copy", (), A),
    ("as_strided_copy", ((2, 3), (1, 2)), A),
    ("as_strided_copy", ((2, 3), (5, 1), 7), A),
    ("diagonal_copy", (), A),
    ("diagonal_copy", (1, 2, 0), A),
    ("diagonal_copy", (-1, -1, -2), A),
    ("expand_copy", ((2, 3, 4, 5),), A),
    ("expand_copy", ((3, -1, 5),), A[:, :1]),
    ("narrow_copy", (1, 1, 2), A),
    ("narrow_copy", (2, -2, 2), A),
    ("permute_copy", ((2, 0, 1),), A),
    ("squeeze_copy", (), A[:, :1, None]),
    ("squeeze_copy", (1,), A[:, :1]),
    ("squeeze_copy", ((1, 3),), A[:, :1, None]),
    ("t_copy", (), A[0]),
    ("t_copy", (), A[0, 0]),
    ("transpose_copy", (0, 2), A),
    ("unfold_copy", (2, 2, 1), A),
    ("unfold_copy", (0, 3, 2), A),
    ("unsqueeze_copy", (-1,), A),
    ("view_copy", ((12, 5),), A),
    ("view_copy", ((-1,),), A),
    ("select_copy", (1, 2), A),
    ("select_copy", (2, -1), A),
    ("slice_copy", (), A),
    ("slice_copy", (1, 1, 3), A),
    ("slice_copy", (2, 0, None, 2), A),
    ("slice_copy", (-1, -3, 10, 1), A),
]
LIST_CASES = [
    ("unbind_copy", (), A),
    ("unbind_copy", (2,), A),
    ("split_copy", (2, 1), A),
    ("split_with_sizes_copy", ([1, 4], 2), A),
]


def case_id(case) -> str:
    return f"{case[0]}{case[1]}"


@pytest.mark.parametrize("case", COPY_CASES, ids=case_id)
def test_copy_values_and_layout(case):
    name, args, a = case
    x = fc.tensor(a)
    expected = getattr(torch, name)(torch.from_numpy(np.ascontiguousarray(a)), *args)
    got = getattr(fc, name)(x, *args)
    assert got.shape == tuple(expected.shape)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    assert got.is_contiguous() and expected.is_contiguous()
    # a copy: writing to it leaves the input alone
    before = to_numpy(x).copy()
    if got.numel():
        got.fill_(123.0)
    np.testing.assert_array_equal(to_numpy(x), before)


def test_complex_view_copies_match_torch():
    z = (A[..., :2] + 1j * A[..., 2:4]).astype(np.complex64)
    real = fc.view_as_real_copy(fc.tensor(z))
    expected = torch.view_as_real_copy(torch.from_numpy(z))
    assert real.dtype == fc.float32 and real.is_contiguous()
    np.testing.assert_array_equal(to_numpy(real), expected.numpy())
    back = fc.view_as_complex_copy(real)
    assert back.dtype == fc.complex64 and back.data_ptr() != real.data_ptr()
    np.testing.assert_array_equal(to_numpy(back), torch.view_as_complex_copy(expected).numpy())
    with pytest.raises(RuntimeError):
        torch.view_as_complex_copy(torch.ones(3, 3))
    with pytest.raises(fc.FlambeauError, match=r"^\[view_as_complex_copy\] "):
        fc.view_as_complex_copy(fc.ones(3, 3))


@pytest.mark.parametrize("case", LIST_CASES, ids=case_id)
def test_list_copies(case):
    name, args, a = case
    expected = getattr(torch, name)(torch.from_numpy(a), *args)
    got = getattr(fc, name)(fc.tensor(a), *args)
    assert isinstance(got, tuple) and len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.is_contiguous()
        np.testing.assert_array_equal(to_numpy(g), e.numpy())


def test_copy_of_a_non_contiguous_input_is_contiguous():
    x = fc.tensor(A).transpose(0, 2)
    got = fc.permute_copy(x, (1, 0, 2))
    expected = torch.permute_copy(torch.from_numpy(A).transpose(0, 2), (1, 0, 2))
    assert got.stride() == expected.stride()
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


def test_view_copy_takes_what_view_refuses():
    """view_copy copies anyway, so a layout view() refuses is fine (PyTorch's view_copy does the same)."""
    x = fc.tensor(A[0]).t()
    np.testing.assert_array_equal(to_numpy(fc.view_copy(x, (20,))), torch.from_numpy(A[0]).t().reshape(20).numpy())
    assert fc.view_copy(fc.tensor(A[0]), fc.float32).shape == (4, 5)
    with pytest.raises(NotImplementedError, match=r"^\[view_copy\] .*view\(dtype\)"):
        fc.view_copy(fc.tensor(A[0]), fc.int32)


def test_keyword_arguments_and_the_method():
    x = fc.tensor(A)
    got = fc.narrow_copy(x, dim=2, start=1, length=3)
    np.testing.assert_array_equal(to_numpy(got), torch.narrow_copy(torch.from_numpy(A), 2, 1, 3).numpy())
    np.testing.assert_array_equal(to_numpy(x.narrow_copy(0, 1, 1)), torch.from_numpy(A).narrow_copy(0, 1, 1).numpy())
    expected = torch.diagonal_copy(torch.from_numpy(A), dim1=1, dim2=2, offset=1)
    np.testing.assert_array_equal(to_numpy(fc.diagonal_copy(x, dim1=1, dim2=2, offset=1)), expected.numpy())
    assert fc.expand_copy(x[:, :1], size=(3, 2, 5), implicit=True).shape == (3, 2, 5)


def test_copy_out():
    x = fc.tensor(A[0])
    out = fc.empty(0)
    assert fc.t_copy(x, out=out) is out
    np.testing.assert_array_equal(to_numpy(out), A[0].T)
    with pytest.raises(TypeError, match=r"^\[t_copy\] expected out tensor to have dtype float32"):
        fc.t_copy(x, out=fc.empty(5, 4, dtype=fc.float64))  # PyTorch's rule here: the exact dtype
    outs = [fc.empty(5) for _ in range(4)]
    assert fc.unbind_copy(x, out=outs) is None
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(to_numpy(o), A[0][i])
    with pytest.raises(fc.FlambeauError, match=r"^\[unbind_copy\] expected an out= list of 4 tensors, got 2"):
        fc.unbind_copy(x, out=outs[:2])
    with pytest.raises(TypeError, match=r"^\[unbind_copy\] out= must be a list"):
        fc.unbind_copy(x, out=fc.empty(4))


COPY_ERRORS = [
    (lambda x: fc.transpose_copy(x, 0, 5), IndexError, r"^\[transpose_copy\] dimension 5 out of range"),
    (lambda x: fc.permute_copy(x, (1, 0)), fc.FlambeauError, r"^\[permute_copy\] got 2 dims"),
    (lambda x: fc.expand_copy(x, (3, 5, 5)), fc.FlambeauError, r"^\[expand_copy\] cannot expand shape \(3, 4, 5\)"),
    (lambda x: fc.expand_copy(x, 3, 4, 5), TypeError, r"^\[expand_copy\] too many positional arguments"),
    (lambda x: fc.unsqueeze_copy(x, 4), IndexError, r"^\[unsqueeze_copy\] dimension 4 out of range"),
    (lambda x: fc.view_copy(x, (7, 3)), fc.FlambeauError, r"^\[view_copy\] .*\(7, 3\)"),
    (lambda x: fc.narrow_copy(x, 1, 3, 2), fc.FlambeauError, r"^\[narrow_copy\] start \(3\) \+ length \(2\)"),
    (lambda x: fc.t_copy(x), fc.FlambeauError, r"^\[t_copy\] .*\(3, 4, 5\)"),
    (lambda x: fc.t_copy([1.0]), TypeError, r"^\[t_copy\] expected a Tensor as 'input', got list"),
    (lambda x: fc.diagonal_copy(x, 0, 1, 1), fc.FlambeauError, r"^\[diagonal_copy\] diagonal dimensions cannot"),
    (lambda x: fc.unfold_copy(x, 1, 5, 1), fc.FlambeauError, r"^\[unfold_copy\] maximum size .* is 4 but size is 5"),
    (lambda x: fc.unfold_copy(x, 1, 2, 0), fc.FlambeauError, r"^\[unfold_copy\] step is 0 but must be > 0"),
    (lambda x: fc.as_strided_copy(x, (2, 2), (-1, 2)), fc.FlambeauError, r"^\[as_strided_copy\] negative stride"),
    (lambda x: fc.as_strided_copy(x, (2, 2), (1, 2), 59), fc.FlambeauError, r"^\[as_strided_copy\] .*storage"),
    (lambda x: fc.split_copy(x, [1, 3]), TypeError, r"^\[split_copy\] expected an int 'split_size', got list"),
    (lambda x: fc.split_with_sizes_copy(x, [1, 1]), fc.FlambeauError, r"^\[split_with_sizes_copy\] .*sum"),
    (
        lambda x: fc.split_with_sizes_copy(x, 3),
        TypeError,
        r"^\[split_with_sizes_copy\] expected 'split_sizes' as a list",
    ),
    (lambda x: fc.squeeze_copy(x, 3), IndexError, r"^\[squeeze_copy\] dimension 3 out of range"),
    (lambda x: fc.unbind_copy(x, -4), IndexError, r"^\[unbind_copy\]"),
]


@pytest.mark.parametrize(("call", "error", "message"), COPY_ERRORS, ids=[m for _, _, m in COPY_ERRORS])
def test_copy_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(fc.tensor(A))


def test_torch_raises_the_same_kinds_of_error():
    """The error type of each case above is PyTorch's (IndexError for a dim, RuntimeError for a size)."""
    t = torch.from_numpy(A)
    with pytest.raises(IndexError):
        torch.transpose_copy(t, 0, 5)
    with pytest.raises(RuntimeError):
        torch.expand_copy(t, (3, 5, 5))
    with pytest.raises(RuntimeError):
        torch.narrow_copy(t, 1, 3, 2)
    with pytest.raises(RuntimeError):
        torch.unfold_copy(t, 1, 5, 1)
    with pytest.raises(TypeError):
        torch.split_copy(t, [1, 3])


# ---- scatters ----

Z = np.zeros((3, 4), dtype=np.float32)
SCATTER_CASES = [
    ("slice_scatter", Z, (3, 2), (1, 0, None, 2)),
    ("slice_scatter", Z, (3, 2), (1, 0, 2)),
    ("slice_scatter", Z, (1, 4), (0, -1)),
    ("slice_scatter", Z, (0, 4), (0, 5)),
    ("slice_scatter", Z, (3, 4), (0, None, 100)),
    ("slice_scatter", Z, (3, 4), ()),
    ("select_scatter", Z, (4,), (0, 1)),
    ("select_scatter", Z, (3,), (1, -1)),
    ("select_scatter", np.zeros(3, np.float32), (), (0, 2)),
    ("diagonal_scatter", Z, (3,), ()),
    ("diagonal_scatter", Z, (3,), (1,)),
    ("diagonal_scatter", Z, (2,), (-1,)),
    ("diagonal_scatter", Z, (0,), (10,)),
    ("diagonal_scatter", np.zeros((2, 3, 4), np.float32), (2, 3), (0, 2, 1)),
    ("as_strided_scatter", Z, (2, 2), ((2, 2), (1, 2))),
    ("as_strided_scatter", Z, (2, 2), ((2, 2), (1, 2), 3)),
    ("as_strided_scatter", Z, (), ((), (), 5)),
]


def scatter_inputs(shape, src_shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    src = RNG.standard_normal(src_shape).astype(np.float32)
    return x, src


@pytest.mark.parametrize("case", SCATTER_CASES, ids=lambda c: f"{c[0]}{c[3]}")
def test_scatter_values(case):
    name, z, src_shape, args = case
    x, src = scatter_inputs(z.shape, src_shape)
    expected = getattr(torch, name)(torch.from_numpy(x), torch.from_numpy(src), *args)
    got = getattr(fc, name)(fc.tensor(x), fc.tensor(src), *args)
    assert got.shape == tuple(expected.shape) and got.dtype == fc.float32
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    # the method form, and the input left alone
    np.testing.assert_array_equal(to_numpy(getattr(fc.tensor(x), name)(fc.tensor(src), *args)), expected.numpy())


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_scatter_keeps_the_input_layout(layout):
    base = RNG.standard_normal((4, 6)).astype(np.float32)
    make = {
        "transposed": lambda t: t.t(),
        "sliced": lambda t: t[:, 1:4],
        "expanded": lambda t: t[:1].expand(5, 6),
    }[layout]
    x, tx = make(fc.tensor(base)), make(torch.from_numpy(base))
    src = RNG.standard_normal((1,) + tuple(tx.shape[1:])).astype(np.float32)
    got = fc.slice_scatter(x, fc.tensor(src), 0, 1, 2)
    expected = torch.slice_scatter(tx, torch.from_numpy(src), 0, 1, 2)
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    if layout == "transposed":  # a dense input: PyTorch's strides exactly
        assert got.stride() == expected.stride()
    # as_strided_scatter addresses the storage: the input's storage offset and strides matter
    slot = torch.as_strided(tx, (2,), (1,))
    got = fc.as_strided_scatter(x, fc.ones(2), (2,), (1,))
    expected = torch.as_strided_scatter(tx, torch.ones_like(slot), (2,), (1,))
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


@pytest.mark.parametrize(
    ("x_dtype", "src_dtype"),
    [(fc.float32, fc.float64), (fc.float32, fc.int64), (fc.int64, fc.float32), (fc.bool, fc.bool)],
)
def test_scatter_casts_src_to_the_input_dtype(x_dtype, src_dtype):
    x, src = fc.zeros(3, 4, dtype=x_dtype), fc.ones(3, 2, dtype=src_dtype)
    tname = {fc.float32: torch.float32, fc.float64: torch.float64, fc.int64: torch.int64, fc.bool: torch.bool}
    expected = torch.slice_scatter(
        torch.zeros(3, 4, dtype=tname[x_dtype]), torch.ones(3, 2, dtype=tname[src_dtype]), 1, 1, 3
    )
    got = fc.slice_scatter(x, src, 1, 1, 3)
    assert got.dtype == x_dtype
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


def test_scatter_out_and_keywords():
    out = fc.empty(0)
    got = fc.select_scatter(fc.zeros(2, 3), src=fc.ones(3), dim=0, index=1, out=out)
    assert got is out and out.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    with pytest.raises(TypeError, match=r"^\[select_scatter\] expected out tensor to have dtype float32"):
        fc.select_scatter(fc.zeros(2, 3), fc.ones(3), 0, 1, out=fc.empty(2, 3, dtype=fc.float64))


SCATTER_ERRORS = [
    (
        lambda x: fc.slice_scatter(x, fc.ones(3, 3), 1, 0, 2),
        fc.FlambeauError,
        r"^\[slice_scatter\] expected src to have the shape of the slice of input, \(3, 2\), got src of shape \(3, 3\)",
    ),
    (
        lambda x: fc.slice_scatter(x, fc.ones(3, 4), step=0),
        fc.FlambeauError,
        r"^\[slice_scatter\] step must be positive",
    ),
    (lambda x: fc.slice_scatter(x, fc.ones(3, 4), step=-1), fc.FlambeauError, r"^\[slice_scatter\] step must be posit"),
    (lambda x: fc.slice_scatter(x, fc.ones(3, 4), dim=2), IndexError, r"^\[slice_scatter\] dimension 2 out of range"),
    (lambda x: fc.slice_scatter(x, [1.0]), TypeError, r"^\[slice_scatter\] expected a Tensor as 'src', got list"),
    (lambda x: fc.select_scatter(x, fc.ones(4), 0, 3), IndexError, r"^\[select_scatter\] index 3 is out of bounds"),
    (lambda x: fc.select_scatter(x, fc.ones(4), 0, -4), IndexError, r"^\[select_scatter\] index -4 is out of bounds"),
    (
        lambda x: fc.select_scatter(x, fc.ones(1, 4), 0, 1),
        fc.FlambeauError,
        r"^\[select_scatter\] expected src to have the shape of the selection of input, \(4,\)",
    ),
    (
        lambda x: fc.diagonal_scatter(x, fc.ones(4)),
        fc.FlambeauError,
        r"^\[diagonal_scatter\] expected src to have the shape of the diagonal of input, \(3,\)",
    ),
    (lambda x: fc.diagonal_scatter(x, fc.ones(3), 0, 0, 0), fc.FlambeauError, r"^\[diagonal_scatter\] diagonal dim"),
    (
        lambda x: fc.as_strided_scatter(x, fc.ones(2, 3), (2, 2), (1, 2)),
        fc.FlambeauError,
        r"^\[as_strided_scatter\] expected src to have the shape of the strided view of input, \(2, 2\)",
    ),
    (
        lambda x: fc.as_strided_scatter(x, fc.ones(2, 2), (2, 2), (1, 2), 100),
        fc.FlambeauError,
        r"^\[as_strided_scatter\] .*storage",
    ),
    (
        lambda x: fc.as_strided_scatter(x, fc.ones(2, 2), (2, 2), (0, 1)),
        fc.FlambeauError,
        r"^\[as_strided_scatter\] more than one element of the view",
    ),
    (lambda x: fc.select_scatter(x, fc.ones(4)), TypeError, r"^\[select_scatter\] missing a required argument"),
]


@pytest.mark.parametrize(("call", "error", "message"), SCATTER_ERRORS, ids=[m for _, _, m in SCATTER_ERRORS])
def test_scatter_errors(call, error, message):
    x = fc.zeros(3, 4)
    with pytest.raises(error, match=message):
        call(x)
    assert to_numpy(x).sum() == 0  # input untouched


def test_torch_raises_the_same_kinds_of_scatter_error():
    t = torch.zeros(3, 4)
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        torch.slice_scatter(t, torch.ones(3, 3), 1, 0, 2)
    with pytest.raises(IndexError):
        torch.select_scatter(t, torch.ones(4), 0, 3)
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        torch.slice_scatter(t, torch.ones(3, 4), step=0)


# ---- fuzzed size arguments: an error or PyTorch's result, never a crash ----

SIZES = [-(2**62), -5, -1, 0, 1, 2, 3, 7, 2**31, 2**62]


@pytest.mark.parametrize("n", SIZES)
def test_fuzzed_sizes(n):
    x, t = fc.tensor(A), torch.from_numpy(A)
    calls = [
        ("narrow_copy", (1, n, 1)),
        ("narrow_copy", (1, 0, n)),
        ("expand_copy", ((n, 4, 5),)),
        ("unfold_copy", (1, n, 1)),
        ("unfold_copy", (1, 1, n)),
        ("view_copy", ((n, -1),)),
        ("as_strided_copy", ((n, 2), (1, 1))),
        ("as_strided_copy", ((2, 2), (n, 1))),
        ("as_strided_copy", ((2, 2), (1, 1), n)),
        ("split_copy", (n, 1)),
        ("split_with_sizes_copy", ([n, 4 - n], 1)),
        ("diagonal_copy", (n,)),
        ("transpose_copy", (n, 0)),
    ]
    for name, args in calls:
        same_as_torch_or_refused(name, getattr(fc, name), getattr(torch, name), (x, *args), (t, *args))
    for name, src_shape, args in [
        ("slice_scatter", (3, 4, 5), (0, n, None, 1)),
        ("slice_scatter", (3, 4, 5), (0, 0, n, 1)),
        ("select_scatter", (4, 5), (0, n)),
        ("diagonal_scatter", (0,), (n,)),
        ("as_strided_scatter", (2,), ((2,), (n,))),
    ]:
        our_args, their_args = (x, fc.ones(*src_shape), *args), (t, torch.ones(*src_shape), *args)
        same_as_torch_or_refused(name, getattr(fc, name), getattr(torch, name), our_args, their_args)
