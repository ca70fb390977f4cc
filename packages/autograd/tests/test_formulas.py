"""Every entry of the formula table: against PyTorch 2.13.0 and finite differences (float64)."""

from __future__ import annotations

import functools

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, make_inputs, to_np, torch

pytestmark = pytest.mark.on_devices

# (name, flambeau fn, torch fn, input shapes, positive inputs)
CASES = [
    ("add", lambda a, b: a + b, lambda a, b: a + b, [(2, 3), (2, 3)], False),
    ("add_broadcast", lambda a, b: a + b, lambda a, b: a + b, [(2, 3), (3,)], False),
    ("add_broadcast_both", lambda a, b: a + b, lambda a, b: a + b, [(4, 1), (1, 3)], False),
    ("add_alpha", lambda a, b: fc.add(a, b, alpha=2.5), lambda a, b: torch.add(a, b, alpha=2.5), [(3,), (2, 3)], False),
    ("add_scalar", lambda a: a + 2.0, lambda a: a + 2.0, [(3,)], False),
    ("sub", lambda a, b: a - b, lambda a, b: a - b, [(2, 3), (2, 1)], False),
    ("sub_alpha", lambda a, b: fc.sub(a, b, alpha=3), lambda a, b: torch.sub(a, b, alpha=3), [(2,), (2,)], False),
    ("rsub", lambda a: 1.0 - a, lambda a: 1.0 - a, [(3,)], False),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [(2, 3), (2, 3)], False),
    ("mul_broadcast", lambda a, b: a * b, lambda a, b: a * b, [(2, 1, 3), (4, 1)], False),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [(2, 3), (3,)], True),
    ("rdiv", lambda a: 2.0 / a, lambda a: 2.0 / a, [(3,)], True),
    ("pow", lambda a, b: a**b, lambda a, b: a**b, [(2, 3), (2, 3)], True),
    ("pow_scalar", lambda a: a**3, lambda a: a**3, [(4,)], False),
    ("rpow", lambda a: 2.0**a, lambda a: 2.0**a, [(4,)], False),
    ("maximum", lambda a, b: fc.maximum(a, b), torch.maximum, [(2, 3), (3,)], False),
    ("minimum", lambda a, b: fc.minimum(a, b), torch.minimum, [(2, 3), (2, 3)], False),
    ("neg", lambda a: -a, lambda a: -a, [(2, 3)], False),
    ("exp", lambda a: a.exp(), lambda a: a.exp(), [(2, 3)], False),
    ("log", lambda a: a.log(), lambda a: a.log(), [(2, 3)], True),
    ("tanh", lambda a: a.tanh(), lambda a: a.tanh(), [(2, 3)], False),
    ("sigmoid", lambda a: a.sigmoid(), lambda a: a.sigmoid(), [(2, 3)], False),
    ("relu", lambda a: a.relu(), lambda a: a.relu(), [(3, 4)], False),
    ("sqrt", lambda a: a.sqrt(), lambda a: a.sqrt(), [(2, 3)], True),
    ("abs", lambda a: a.abs(), lambda a: a.abs(), [(2, 3)], False),
    ("clone", lambda a: a.clone() * 2, lambda a: a.clone() * 2, [(2, 3)], False),
    ("view", lambda a: a.view(3, 2) * 1.5, lambda a: a.view(3, 2) * 1.5, [(2, 3)], False),
    ("reshape_noncontig", lambda a: a.t().reshape(6), lambda a: a.t().reshape(6), [(2, 3)], False),
    ("permute", lambda a: a.permute(2, 0, 1) * 2, lambda a: a.permute(2, 0, 1) * 2, [(2, 3, 4)], False),
    ("transpose", lambda a: a.transpose(0, 2).exp(), lambda a: a.transpose(0, 2).exp(), [(2, 3, 4)], False),
    ("unsqueeze", lambda a: a.unsqueeze(1) * 2, lambda a: a.unsqueeze(1) * 2, [(2, 3)], False),
    ("squeeze", lambda a: a.squeeze() * 2, lambda a: a.squeeze() * 2, [(2, 1, 3)], False),
    ("squeeze_dim", lambda a: a.squeeze(1) * 2, lambda a: a.squeeze(1) * 2, [(2, 1, 3)], False),
    ("expand", lambda a: a.expand(4, 2, 3).exp(), lambda a: a.expand(4, 2, 3).exp(), [(2, 1)], False),
    ("slice", lambda a: a[:, 1:3] * 2, lambda a: a[:, 1:3] * 2, [(3, 4)], False),
    ("slice_step", lambda a: a[1::2] * 2, lambda a: a[1::2] * 2, [(5, 2)], False),
    ("select", lambda a: a[1] * 2, lambda a: a[1] * 2, [(3, 4)], False),
    ("select_neg", lambda a: a[:, -1] * 2, lambda a: a[:, -1] * 2, [(3, 4)], False),
    ("narrow", lambda a: a.narrow(1, 1, 2) * 2, lambda a: a.narrow(1, 1, 2) * 2, [(3, 4)], False),
    ("sum_all", lambda a: a.sum(), lambda a: a.sum(), [(2, 3)], False),
    ("sum_dim", lambda a: a.sum(1), lambda a: a.sum(1), [(2, 3, 4)], False),
    ("sum_keepdim", lambda a: a.sum((0, 2), keepdim=True), lambda a: a.sum((0, 2), keepdim=True), [(2, 3, 4)], False),
    ("sum_neg_dim", lambda a: a.sum(-1), lambda a: a.sum(-1), [(2, 3)], False),
    ("mean", lambda a: a.mean(), lambda a: a.mean(), [(2, 3)], False),
    ("mean_dim", lambda a: a.mean(0), lambda a: a.mean(0), [(2, 3)], False),
    ("max_all", lambda a: a.max(), lambda a: a.max(), [(3, 4)], False),
    ("max_dim", lambda a: a.max(1)[0], lambda a: a.max(1)[0], [(3, 4)], False),
    ("max_dim_keepdim", lambda a: a.max(0, keepdim=True)[0], lambda a: a.max(0, keepdim=True)[0], [(3, 4)], False),
    ("mm", lambda a, b: a.mm(b), lambda a, b: a.mm(b), [(2, 3), (3, 4)], False),
    ("bmm", lambda a, b: a.bmm(b), lambda a, b: a.bmm(b), [(2, 2, 3), (2, 3, 2)], False),
    ("matmul_1d", lambda a, b: a.matmul(b), lambda a, b: a.matmul(b), [(3,), (3, 2)], False),
    ("matmul_batched", lambda a, b: a.matmul(b), lambda a, b: a.matmul(b), [(2, 2, 3), (3, 4)], False),
    ("log_softmax", lambda a: a.log_softmax(1), lambda a: a.log_softmax(1), [(3, 4)], False),
    ("log_softmax0", lambda a: a.log_softmax(0), lambda a: a.log_softmax(0), [(3, 4)], False),
    ("softmax", lambda a: a.softmax(-1), lambda a: a.softmax(-1), [(3, 4)], False),
    ("cat", lambda a, b: fc.cat([a, b], 1), lambda a, b: torch.cat([a, b], 1), [(2, 3), (2, 2)], False),
    ("stack", lambda a, b: fc.stack([a, b], 0), lambda a, b: torch.stack([a, b], 0), [(2, 3), (2, 3)], False),
    ("cast", lambda a: a.float().double() * 2, lambda a: a.float().double() * 2, [(3,)], False),
]


@pytest.mark.parametrize("name,fb_fn,th_fn,shapes,positive", CASES, ids=[c[0] for c in CASES])
def test_formula(name, fb_fn, th_fn, shapes, positive):
    arrays = make_inputs(shapes, seed=hash(name) % 1000, positive=positive)
    # the cast case rounds through float32: finite differences see that
    gradcheck = name != "cast"
    compare_with_torch(fb_fn, th_fn, arrays, gradcheck=gradcheck)


def test_maximum_minimum_ties_split_like_pytorch():
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([1.0, 0.0, 3.0])
    compare_with_torch(lambda x, y: fc.maximum(x, y), torch.maximum, [a, b], gradcheck=False)
    compare_with_torch(lambda x, y: fc.minimum(x, y), torch.minimum, [a, b], gradcheck=False)


def test_maximum_minimum_give_the_whole_gradient_to_both_at_nan():
    # a NaN on either side is neither a tie nor a loss: PyTorch passes the gradient to both operands
    nan = float("nan")
    a = np.array([nan, 1.0, 2.0, 3.0, nan])
    b = np.array([1.0, nan, 2.0, 0.0, nan])
    compare_with_torch(lambda x, y: fc.maximum(x, y), torch.maximum, [a, b], gradcheck=False)
    compare_with_torch(lambda x, y: fc.minimum(x, y), torch.minimum, [a, b], gradcheck=False)


def test_max_all_distributes_among_ties():
    a = np.array([[1.0, 5.0], [5.0, 2.0]])
    compare_with_torch(lambda x: x.max(), lambda x: x.max(), [a], gradcheck=False)


def test_where():
    cond = np.array([[True, False, True], [False, False, True]])
    arrays = make_inputs([(2, 3), (3,)], seed=3)
    compare_with_torch(
        lambda a, b: fc.where(fb_tensor(cond), a, b), lambda a, b: torch.where(torch.tensor(cond), a, b), arrays
    )


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_gather_and_scatter_add(index_dtype):
    idx = np.array([[0, 2], [1, 0], [2, 2]], dtype=index_dtype)
    compare_with_torch(
        lambda a: a.gather(1, fb_tensor(idx)), lambda a: a.gather(1, torch.tensor(idx)), make_inputs([(3, 3)])
    )
    compare_with_torch(
        lambda a, s: a.scatter_add(1, fb_tensor(idx), s),
        lambda a, s: a.scatter_add(1, torch.tensor(idx), s),
        make_inputs([(3, 3), (3, 2)]),
    )


def _scatter_reduce(a, i, s, reduce):
    return a.scatter_reduce(0, i, s, reduce)


@pytest.mark.parametrize(
    "scatter",
    [
        ("scatter_add", lambda a, i, s: a.scatter_add(0, i, s)),
        ("scatter", lambda a, i, s: a.scatter(0, i, s)),
        *[(r, functools.partial(_scatter_reduce, reduce=r)) for r in ("sum", "prod", "mean", "amax")],
        ("amin without self", lambda a, i, s: a.scatter_reduce(0, i, s, "amin", include_self=False)),
    ],
    ids=lambda c: c[0],
)
def test_a_scatter_source_larger_than_the_index_gets_zeros_outside_it(scatter):
    # Only src's leading index-shaped block is scattered. torch's engine refuses the gradient its formula
    # gives (index-shaped), so the oracle is torch on that block, zeros elsewhere, and gradcheck.
    _, fn = scatter
    idx = np.array([[0, 1, 2, 0], [1, 2, 0, 1]])
    a, s = make_inputs([(3, 4), (5, 6)])
    fa, fs = fb_tensor(a, requires_grad=True), fb_tensor(s, requires_grad=True)
    ta, ts = torch.tensor(a, requires_grad=True), torch.tensor(s[:2, :4], requires_grad=True)
    fn(fa, fb_tensor(idx), fs).sum().backward()
    fn(ta, torch.tensor(idx), ts).sum().backward()
    expected = np.zeros((5, 6))
    expected[:2, :4] = ts.grad.numpy()
    np.testing.assert_allclose(to_np(fs.grad), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_np(fa.grad), ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert ag.gradcheck(
        lambda x, y: fn(x, fb_tensor(idx), y), [fb_tensor(a, requires_grad=True), fb_tensor(s, requires_grad=True)]
    )


def test_copy_():
    def fb(a, b):
        out = a * 1.0
        out.copy_(b)
        return out * a

    def th(a, b):
        out = a * 1.0
        out.copy_(b)
        return out * a

    compare_with_torch(fb, th, make_inputs([(2, 3), (2, 3)]))


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_"])
def test_inplace_rebases_history(op):
    def run(a, b):
        y = a * 2.0
        getattr(y, op)(b)
        return y * a

    arrays = make_inputs([(2, 3), (3,)], seed=7, positive=True)
    fb_in = compare_with_torch(run, run, arrays)
    y = fb_in[0] * 2.0
    getattr(y, op)(fb_in[1])
    assert (
        y.grad_fn.name()
        == {"add_": "AddBackward0", "sub_": "SubBackward0", "mul_": "MulBackward0", "div_": "DivBackward0"}[op]
    )
    assert not y.is_leaf


def test_inplace_on_tensor_not_requiring_grad_gains_history():
    a = fb_tensor([1.0, 2.0], requires_grad=True)
    buf = fc.zeros(2, dtype=fc.float64)
    buf.add_(a * a)
    assert buf.requires_grad and buf.grad_fn.name() == "AddBackward0"
    buf.sum().backward()
    assert a.grad.tolist() == [2.0, 4.0]


def test_type_promotion_grad_dtype_matches_input():
    a = fc.tensor([1.0, 2.0], dtype=fc.float32, requires_grad=True)
    b = fc.tensor([3.0, 4.0], dtype=fc.float64, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == fc.float32 and b.grad.dtype == fc.float64
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]


def test_non_differentiable_outputs_never_require_grad():
    a = fb_tensor([[1.0, 3.0], [2.0, 0.0]], requires_grad=True)
    assert not (a > 1).requires_grad
    assert not a.argmax().requires_grad
    values, indices = a.max(1)
    assert values.requires_grad and not indices.requires_grad
    assert not a.long().requires_grad


def test_as_strided():
    # a non-overlapping window (every other element of the last two rows)
    compare_with_torch(
        lambda a: a.as_strided((2, 2), (4, 2), 5) * 3.0,
        lambda a: a.as_strided((2, 2), (4, 2), 5) * 3.0,
        make_inputs([(3, 4)]),
    )


# (input shape, a view of it taken first (None: the tensor itself), as_strided's size, stride, offset)
AS_STRIDED_GEOMETRIES = [
    ((16,), None, (2, 2, 2, 2), (1, 1, 1, 1), 0),  # every view element on a few locations: they add up
    ((16,), None, (2, 1, 1, 2), (1, 7, 7, 1), 0),
    ((4,), None, (3, 2), (1, 1), 0),  # sliding windows
    ((2, 3), "t", (2, 2), (1, 1), 1),  # a transposed (non-contiguous) input
    ((3,), "expand", (2,), (1,), 0),  # an input that shows each location 4 times: each gets a quarter
    ((20,), "middle", (2, 2), (1, 2), 0),  # a view of the storage partly outside the input
    ((20,), "middle", (2, 2), (1, 2), 10),
]


def _strided_input(x, how):
    if how == "t":
        return x.t()
    if how == "expand":
        return x.expand(4, 3)
    if how == "middle":
        return x[5:15]
    return x


@pytest.mark.parametrize(("shape", "how", "size", "stride", "offset"), AS_STRIDED_GEOMETRIES)
def test_as_strided_any_geometry_matches_torch(shape, how, size, stride, offset):
    """PyTorch's as_strided backward: the gradient summed into the storage through the view's strides, each
    location shown k times by the input divided by k; first and second order."""

    def fn(x):
        return _strided_input(x, how).as_strided(size, stride, offset) * 3.0

    # A view reaching outside its input reads storage that is no function of the input: finite differences
    # see the base change there, torch's gradient (and flambeau's) does not.
    inside = how != "middle" or offset >= 5
    compare_with_torch(fn, fn, make_inputs([shape]), gradcheck=inside)
    if inside:
        x = fb_tensor(make_inputs([shape], seed=3)[0], requires_grad=True)
        assert ag.gradgradcheck(lambda x: fn(x) ** 2, [x])


def test_mlp_step_matches_torch():
    rng = np.random.default_rng(0)
    x, w1, b1, w2, b2 = (rng.standard_normal(s) for s in [(8, 5), (5, 6), (6,), (6, 3), (3,)])
    target = np.array([0, 2, 1, 1, 0, 2, 2, 1])

    def fb(x, w1, b1, w2, b2):
        h = (x.matmul(w1) + b1).relu()
        logp = (h.matmul(w2) + b2).log_softmax(1)
        return -(logp.gather(1, fb_tensor(target).unsqueeze(1))).mean()

    def th(x, w1, b1, w2, b2):
        h = (x @ w1 + b1).relu()
        return torch.nn.functional.cross_entropy(h @ w2 + b2, torch.tensor(target))

    compare_with_torch(fb, th, [x, w1, b1, w2, b2])


# "cast" rounds through float32, which finite differences cannot resolve.
SMOOTH_CASES = [c for c in CASES if c[0] != "cast"]


@pytest.mark.parametrize("name,fb_fn,th_fn,shapes,positive", SMOOTH_CASES, ids=[c[0] for c in SMOOTH_CASES])
def test_formula_second_order(name, fb_fn, th_fn, shapes, positive):
    """create_graph through every formula: gradgradcheck (finite differences of the VJP)."""
    arrays = make_inputs(shapes, seed=hash(name) % 1000 + 1, positive=positive)
    inputs = [fb_tensor(a, requires_grad=True) for a in arrays]
    assert ag.gradgradcheck(fb_fn, inputs, atol=1e-4)


def test_second_order_where_gather_scatter_copy():
    idx = fb_tensor(np.array([[0, 2], [1, 0], [2, 2]]))
    cond = fb_tensor(np.array([True, False, True]))
    a, b = (fb_tensor(v, requires_grad=True) for v in make_inputs([(3, 3), (3, 2)], seed=5))
    assert ag.gradgradcheck(lambda x: x.gather(1, idx) ** 2, [a])
    assert ag.gradgradcheck(lambda x, s: x.scatter_add(1, idx, s * s), [a, b])
    assert ag.gradgradcheck(lambda x: fc.where(cond, x * x, x), [a])

    def copy_fn(x):
        out = x * 1.0
        out.copy_(x * x)
        return out

    assert ag.gradgradcheck(copy_fn, [a])


@pytest.mark.parametrize("fill", ["fill_", "zero_", "uniform_", "normal_"])
def test_overwriting_inplace_ops_cut_the_old_history(fill):
    def run(x, lib):
        y = x * 2.0
        if fill == "fill_":
            y.fill_(3.0)
        elif fill == "zero_":
            y.zero_()
        else:
            getattr(y, fill)()
            with ag.no_grad() if lib == "fb" else torch.no_grad():
                y.fill_(0.5)  # same values on both sides
        return (y * x).sum()

    x = fb_tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    out = run(x, "fb")
    run(tx, "torch").backward()
    out.backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy())


# ---- advanced indexing: index (x[...]) and index_put_ (x[...] = v) ----

MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, False]])
# Index tuples on a (3, 4, 5) input; NumPy arrays become tensors on both sides.
INDEX_CASES = [
    ([2, 0, 2],),  # a repeated row: its gradient adds up
    ([0, 2], [1, 3]),
    ([[0], [2]], [1, -1]),  # broadcast, negative
    ([0, 2, 0], slice(None), [4, 4, 1]),  # separated: the indexed dims go first
    (slice(1, None), [3, 3], slice(None, None, 2)),
    (Ellipsis, [0, 0], None, [1, 2]),
    (1, [0, 3], [2, 2]),
    (MASK,),
    (MASK, [1, 1, 0, 3, 3, 2]),
    ([True, False, True],),
    (np.array([2, 0], np.int32), np.array(1)),
    ([], slice(None), []),
]


def _lib_index(idx, lib):
    return tuple(
        (fb_tensor(i) if lib == "fc" else torch.from_numpy(i)) if isinstance(i, np.ndarray) else i for i in idx
    )


@pytest.mark.parametrize("idx", INDEX_CASES, ids=repr)
def test_index_backward(idx):
    fi, ti = _lib_index(idx, "fc"), _lib_index(idx, "torch")
    compare_with_torch(lambda a: a[fi], lambda a: a[ti], make_inputs([(3, 4, 5)], seed=7))
    # a non-contiguous input
    compare_with_torch(
        lambda a: a.permute(2, 1, 0)[fi], lambda a: a.permute(2, 1, 0)[ti], make_inputs([(5, 4, 3)], seed=8)
    )


@pytest.mark.parametrize("idx", INDEX_CASES, ids=repr)
def test_setitem_backward(idx):
    fi, ti = _lib_index(idx, "fc"), _lib_index(idx, "torch")
    shape = tuple(torch.zeros(3, 4, 5)[ti].shape)

    def run(a, v, index):
        out = a * 1.0
        out[index] = v * v
        return out * a

    # A repeated position is written more than once; the gradient of values counts every write
    # (as PyTorch's does), which finite differences cannot see.
    written = torch.arange(60).reshape(3, 4, 5)[ti].flatten()
    compare_with_torch(
        lambda a, v: run(a, v, fi),
        lambda a, v: run(a, v, ti),
        make_inputs([(3, 4, 5), shape[-1:]], seed=9),
        gradcheck=written.unique().numel() == written.numel(),
    )


def test_negative_slice_step_backward():
    # PyTorch refuses negative steps; its flip of the same positive-step slice is the oracle
    def fc_read(a):
        return a[::-1, 3:0:-2] * a[2::-1, 2::-2]

    def torch_read(a):
        return torch.flip(a[:, 1:4:2], [0, 1]) * torch.flip(a[0:3, 0:3:2], [0, 1])

    compare_with_torch(fc_read, torch_read, make_inputs([(3, 4, 5)], seed=10))

    def run(a, v, flipped):
        out = a * 1.0
        if flipped:
            out[1:4:2] = torch.flip(v * v, [0])
        else:
            out[3:0:-2] = v * v
        return out * a

    compare_with_torch(
        lambda a, v: run(a.permute(1, 0, 2), v, False).permute(1, 0, 2),
        lambda a, v: run(a.permute(1, 0, 2), v, True).permute(1, 0, 2),
        make_inputs([(3, 4, 5), (2, 3, 5)], seed=11),
    )


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_backward(accumulate):
    i0, i1 = np.array([[0, 2, 0], [1, 1, 1]]), np.array([3, -1, 3])  # duplicates among the pairs

    def run(a, v, lib):
        idx = tuple(fb_tensor(i) if lib == "fc" else torch.from_numpy(i) for i in (i0, i1))
        return (a * 2.0).index_put_(idx, v.exp(), accumulate=accumulate) * a

    compare_with_torch(
        lambda a, v: run(a, v, "fc"),
        lambda a, v: run(a, v, "torch"),
        make_inputs([(3, 4, 5), (2, 3, 5)], seed=11),
        gradcheck=accumulate,  # with repeated indices the kept write is a choice of the kernel
    )
    # the out-of-place form, broadcast values
    compare_with_torch(
        lambda a, v: fc.index_put(a, (fb_tensor(i1),), v, accumulate=accumulate),
        lambda a, v: torch.index_put(a, (torch.from_numpy(i1),), v, accumulate=accumulate),
        make_inputs([(4, 2), (2,)], seed=12),
        gradcheck=accumulate,
    )


def test_index_put_backward_without_repeats_gradchecks():
    idx = (fb_tensor(np.array([2, 0])), fb_tensor(np.array([1, 3])))
    a, v = (fb_tensor(x, requires_grad=True) for x in make_inputs([(3, 4), (2,)], seed=13))
    assert ag.gradcheck(lambda x, y: (x * 1.0).index_put_(idx, y * y) * x, [a, v])
    assert ag.gradgradcheck(lambda x, y: (x * 1.0).index_put_(idx, y * y) * x, [a, v])


def test_index_second_order():
    a = fb_tensor(make_inputs([(3, 4, 5)], seed=14)[0], requires_grad=True)
    idx = _lib_index(([0, 2, 0], slice(None), [4, 4, 1]), "fc")
    assert ag.gradgradcheck(lambda x: x[idx] ** 2, [a])
    assert ag.gradgradcheck(lambda x: x[fb_tensor(MASK)] ** 3, [a])


def test_index_grad_fn_names_and_non_float():
    a = fb_tensor(np.ones((3, 4)), requires_grad=True)
    assert a[[0, 1], [1, 2]].grad_fn.name() == "IndexBackward0"
    assert (a * 1.0).index_put_((fb_tensor(np.array([0])),), fb_tensor(1.0)).grad_fn.name() == "IndexPutBackward0"
    assert fc.tensor([1, 2, 3])[[0, 2]].grad_fn is None  # integer results are not differentiable


# The message pins the saved version: a tensor made on a device by fc.tensor(..., device=d) starts at
# version 1 there (the copy from the host counts), not 0 as in PyTorch. The check itself is device-generic.
@pytest.mark.on_devices(types=("cpu",))
def test_index_backward_checks_the_saved_indices():
    a = fb_tensor(np.ones((3, 4)), requires_grad=True)
    i = fb_tensor(np.array([0, 2]))
    out = a[i]
    i[0] = 1  # the index changed after it was saved
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[IndexBackward0\] saved version 0"):
        out.sum().backward()
    out = a[[0, 1], [2, 2]]
    out.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()


def test_index_put_leaf_and_value_errors():
    a = fb_tensor(np.ones((3, 4)), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a[[0, 1]] = 0.0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        a.index_put_((fb_tensor(np.array([0])),), fb_tensor(1.0))
