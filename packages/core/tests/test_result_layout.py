"""The layout of new results (Note [Result layout], src/result_layout.cpp) against PyTorch: the same
values and the same strides for contiguous, channels-last, mixed, broadcast, size-0/1 and sliced
inputs, through elementwise ops, cat/stack, pooling, upsampling, padding and the norms."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

CL = {fc: fc.channels_last, torch: torch.channels_last}
CL3D = {fc: fc.channels_last_3d, torch: torch.channels_last_3d}


def _lay(lib, x, layout, shape):
    """x (of a base shape) laid out as `layout`, with `shape` as its final shape."""
    if layout == "contiguous":
        return x
    if layout == "channels_last":
        return x.contiguous(memory_format=CL[lib])
    if layout == "channels_last_3d":
        return x.contiguous(memory_format=CL3D[lib])
    if layout == "reversed":  # dense, every dim's order reversed
        rev = list(range(x.dim()))[::-1]
        return x.permute(*rev).contiguous().permute(*rev)
    if layout == "sliced":
        return x[..., ::2]
    if layout == "sliced_channels_last":
        return x.contiguous(memory_format=CL[lib])[..., ::2]
    if layout == "expanded":
        return x.expand(*shape)
    raise AssertionError(layout)


def make(shape, layout="contiguous", *, seed=0, dtype=np.float32):
    """The same values as a flambeau and a torch tensor of `shape`, both laid out as `layout`."""
    shape = tuple(shape)
    base = shape
    if layout.startswith("sliced"):
        base = (*shape[:-1], 2 * shape[-1])
    elif layout == "expanded":
        base = (1, *shape[1:])
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(base) * 3).astype(dtype) if dtype != np.int64 else rng.integers(-5, 6, base)
    f, t = fc.tensor(a), torch.from_numpy(np.array(a))
    f, t = _lay(fc, f, layout, shape), _lay(torch, t, layout, shape)
    if f.numel() == 0 and tuple(f.stride()) != tuple(t.stride()):
        # An empty tensor's strides in a format differ (0 or 1 per empty dim); the rule under test
        # starts from the same input strides.
        t = torch.empty_strided(shape, tuple(f.stride()), dtype=t.dtype)
    assert tuple(f.stride()) == tuple(t.stride())
    return f, t


def assert_as_torch(ours, theirs):
    """Same shape, strides, values and format flags as torch's result."""
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride()), (tuple(ours.stride()), tuple(theirs.stride()))
    for ours_fmt, torch_fmt in ((fc.contiguous_format, torch.contiguous_format), (fc.channels_last, None)):
        if torch_fmt is None and theirs.dim() != 4:
            continue
        assert ours.is_contiguous(memory_format=ours_fmt) == theirs.is_contiguous(
            memory_format=torch_fmt or torch.channels_last
        )
    expected = theirs.detach().numpy()
    got = to_numpy(ours)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


LAYOUTS_4D = ["contiguous", "channels_last", "reversed", "sliced", "sliced_channels_last", "expanded"]
# Shapes where a channels-last layout is ambiguous (size-1 dims) or empty.
SHAPES_4D = [
    (2, 3, 4, 5),
    (2, 1, 4, 5),
    (2, 3, 1, 1),
    (1, 3, 1, 1),
    (2, 3, 1, 5),
    (1, 1, 1, 1),
    (2, 0, 4, 5),
    (0, 3, 4, 5),
]

UNARY = {
    "neg": lambda lib, x: lib.neg(x),
    "exp": lambda lib, x: lib.exp(x),
    "sigmoid": lambda lib, x: lib.sigmoid(x),
    "relu": lambda lib, x: lib.relu(x),
    "isnan": lambda lib, x: lib.isnan(x),
    "clamp": lambda lib, x: lib.clamp(x, -0.5, 0.5),
    "to_float64": lambda lib, x: x.to(lib.float64),
    "mul_scalar": lambda lib, x: x * 2.5,
    "add_0d": lambda lib, x: x + lib.tensor(1.5),
    "sort_values": lambda lib, x: lib.sort(x, 1)[0],
}


@pytest.mark.parametrize("shape", SHAPES_4D)
@pytest.mark.parametrize("layout", LAYOUTS_4D)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_results_keep_the_layout_as_torch(op, layout, shape):
    if op == "sort_values" and 0 in shape:
        shape = (2, 3, 4, 5)
    if op == "to_float64" and (0 in shape or "sliced" in layout):
        shape, layout = (2, 3, 4, 5), layout.removeprefix("sliced_")  # casts keep their own rule
    f, t = make(shape, layout)
    assert_as_torch(UNARY[op](fc, f), UNARY[op](torch, t))


BINARY = {
    "add": lambda lib, a, b: a + b,
    "mul": lambda lib, a, b: a * b,
    "sub_alpha": lambda lib, a, b: lib.sub(a, b, alpha=2),
    "div": lambda lib, a, b: a / b,
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "lt": lambda lib, a, b: a < b,
    "atan2": lambda lib, a, b: lib.atan2(a, b),
}
# (layout of a, shape of a, layout of b, shape of b): same layouts, mixed, broadcast bias, sliced.
PAIRS = [
    ("channels_last", (2, 3, 4, 5), "channels_last", (2, 3, 4, 5)),
    ("channels_last", (2, 3, 4, 5), "contiguous", (2, 3, 4, 5)),
    ("contiguous", (2, 3, 4, 5), "channels_last", (2, 3, 4, 5)),
    ("channels_last", (2, 3, 4, 5), "contiguous", (1, 3, 1, 1)),
    ("contiguous", (3, 1, 1), "channels_last", (2, 3, 4, 5)),
    ("contiguous", (5,), "channels_last", (2, 3, 4, 5)),
    ("reversed", (2, 3, 4, 5), "channels_last", (2, 3, 4, 5)),
    ("sliced_channels_last", (2, 3, 4, 5), "channels_last", (2, 3, 4, 5)),
    ("sliced", (2, 3, 4, 5), "sliced_channels_last", (2, 3, 4, 5)),
    ("expanded", (2, 3, 4, 5), "channels_last", (2, 3, 4, 5)),
    ("channels_last", (2, 1, 4, 5), "contiguous", (2, 1, 4, 5)),
    ("channels_last", (2, 3, 1, 1), "contiguous", (2, 3, 1, 1)),
    ("contiguous", (2, 3, 1, 1), "channels_last", (2, 3, 1, 1)),
    ("channels_last", (2, 3, 4, 1), "contiguous", (1, 1, 1, 1)),
    ("channels_last", (2, 0, 4, 5), "contiguous", (1, 1, 1, 5)),
    ("channels_last", (2, 3, 4, 5), "channels_last", (1, 3, 4, 5)),
    ("contiguous", (2, 3, 4, 5), "contiguous", (1, 3, 1, 5)),
    ("channels_last_3d", (2, 3, 2, 4, 5), "contiguous", (1, 3, 1, 1, 1)),
    ("contiguous", (2, 3, 2, 4, 5), "channels_last_3d", (2, 3, 2, 4, 5)),
    ("reversed", (3, 4), "contiguous", (3, 4)),
    ("reversed", (3, 4), "contiguous", (4,)),
]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}{p[1]}-{p[2]}{p[3]}")
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_results_follow_torchs_elementwise_rule(op, pair):
    la, sa, lb, sb = pair
    fa, ta = make(sa, la, seed=1)
    fb_, tb = make(sb, lb, seed=2)
    assert_as_torch(BINARY[op](fc, fa, fb_), BINARY[op](torch, ta, tb))


def test_type_promotion_keeps_the_first_layout():
    fa, ta = make((2, 3, 4, 5), "channels_last", dtype=np.int64)
    fb_, tb = make((2, 3, 4, 5), "contiguous", seed=3)
    assert_as_torch(fa + fb_, ta + tb)
    assert_as_torch(fb_ * fa, tb * ta)
    assert_as_torch(fa.to(fc.float32), ta.to(torch.float32))


@pytest.mark.parametrize(
    "layouts",
    [
        ("channels_last",) * 3,
        ("contiguous", "channels_last", "channels_last"),
        ("channels_last", "contiguous", "sliced"),
    ],
)
def test_ternary_results_follow_the_first_dense_input(layouts):
    (fc_, tc), (fa, ta), (fb_, tb) = (make((2, 3, 4, 5), lay, seed=i) for i, lay in enumerate(layouts))
    assert_as_torch(fc.where(fc_ > 0, fa, fb_), torch.where(tc > 0, ta, tb))
    assert_as_torch(fc.addcmul(fc_, fa, fb_, value=0.5), torch.addcmul(tc, ta, tb, value=0.5))
    assert_as_torch(fc.lerp(fc_, fa, 0.25), torch.lerp(tc, ta, 0.25))


@pytest.mark.parametrize("out_layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("in_layout", ["contiguous", "channels_last"])
def test_out_and_inplace_keep_the_given_tensors_layout(in_layout, out_layout):
    fa, ta = make((2, 3, 4, 5), in_layout, seed=1)
    fb_, tb = make((2, 3, 4, 5), in_layout, seed=2)
    fo, to = make((2, 3, 4, 5), out_layout, seed=3)
    r = fc.add(fa, fb_, out=fo)
    torch.add(ta, tb, out=to)
    assert r is fo
    assert_as_torch(fo, to)
    fc.exp(fa, out=fo)
    torch.exp(ta, out=to)
    assert_as_torch(fo, to)
    fo.mul_(fb_)
    to.mul_(tb)
    assert_as_torch(fo, to)
    fo.sigmoid_()
    to.sigmoid_()
    assert_as_torch(fo, to)


CAT_CASES = [
    (["channels_last", "channels_last"], 1),
    (["channels_last", "channels_last"], 0),
    (["channels_last", "channels_last", "channels_last"], 3),
    (["channels_last", "contiguous"], 1),
    (["contiguous", "channels_last"], 1),
    (["channels_last", "sliced_channels_last"], 2),
    (["channels_last", "reversed"], 1),
    (["channels_last", "empty_1d"], 1),
]


@pytest.mark.parametrize("case", CAT_CASES, ids=lambda c: "-".join(c[0]) + f"-dim{c[1]}")
def test_cat_and_stack_keep_channels_last_as_torch(case):
    layouts, dim = case
    fs, ts = [], []
    for i, lay in enumerate(layouts):
        if lay == "empty_1d":
            fs.append(fc.zeros(0))
            ts.append(torch.zeros(0))
            continue
        f, t = make((2, 3, 4, 5), lay, seed=i)
        fs.append(f)
        ts.append(t)
    assert_as_torch(fc.cat(fs, dim), torch.cat(ts, dim))
    if "empty_1d" not in layouts:
        for d in (0, 1, 4):
            assert_as_torch(fc.stack(fs, d), torch.stack(ts, d))


def test_cat_of_channels_last_3d_and_size_one_channels():
    fs, ts = zip(*(make((2, 3, 2, 4, 5), "channels_last_3d", seed=i) for i in range(2)), strict=True)
    assert_as_torch(fc.cat(list(fs), 1), torch.cat(list(ts), 1))
    fs, ts = zip(*(make((2, 1, 4, 5), "channels_last", seed=i) for i in range(2)), strict=True)
    assert_as_torch(fc.cat(list(fs), 1), torch.cat(list(ts), 1))


POOL_SHAPES = [(2, 3, 6, 8), (2, 1, 6, 8), (1, 3, 4, 4)]


@pytest.mark.parametrize("shape", POOL_SHAPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "sliced_channels_last"])
def test_pooling_and_upsampling_keep_channels_last_as_torch(layout, shape):
    f, t = make(shape, layout)
    for fr, tr in zip(
        fc.max_pool2d_with_indices(f, [2, 2], [2, 2], [0, 0], [1, 1]),
        torch.ops.aten.max_pool2d_with_indices(t, [2, 2], [2, 2], [0, 0], [1, 1]),
        strict=True,
    ):
        assert_as_torch(fr, tr)
    assert_as_torch(fc.avg_pool2d(f, [2, 2], [2, 2], [0, 0]), torch.ops.aten.avg_pool2d(t, [2, 2], [2, 2], [0, 0]))
    assert_as_torch(fc.adaptive_avg_pool2d(f, [3, 2]), torch.ops.aten._adaptive_avg_pool2d(t, [3, 2]))
    for fr, tr in zip(fc.adaptive_max_pool2d(f, [3, 2]), torch.ops.aten.adaptive_max_pool2d(t, [3, 2]), strict=True):
        assert_as_torch(fr, tr)
    assert_as_torch(fc.upsample_nearest2d(f, [12, 16]), torch.ops.aten.upsample_nearest2d(t, [12, 16]))
    assert_as_torch(fc.upsample_bilinear2d(f, [9, 11], False), torch.ops.aten.upsample_bilinear2d(t, [9, 11], False))
    assert_as_torch(fc.constant_pad_nd(f, [1, 2, 0, 1], 0.5), torch.constant_pad_nd(t, [1, 2, 0, 1], 0.5))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_pooling_backwards_keep_the_gradients_layout(layout):
    # PyTorch lays a pooling gradient out as the forward input; flambeau's backwards see the
    # output gradient only, which has the input's layout on autograd's path: both are given here.
    f, t = make((2, 3, 6, 8), layout)
    fv, fi = fc.max_pool2d_with_indices(f, [2, 2], [2, 2], [0, 0], [1, 1])
    tv, ti = torch.ops.aten.max_pool2d_with_indices(t, [2, 2], [2, 2], [0, 0], [1, 1])
    fg, tg = make(tuple(tv.shape), layout, seed=5)
    assert_as_torch(
        fc.max_pool_backward(fg, fi, [2, 3, 6, 8]),
        torch.ops.aten.max_pool2d_with_indices_backward(tg, t, [2, 2], [2, 2], [0, 0], [1, 1], False, ti),
    )
    assert_as_torch(
        fc.avg_pool2d_backward(fg, [2, 3, 6, 8], [2, 2], [2, 2], [0, 0], False, True, None),
        torch.ops.aten.avg_pool2d_backward(tg, t, [2, 2], [2, 2], [0, 0], False, True, None),
    )
    assert_as_torch(
        fc.adaptive_avg_pool2d_backward(fg, [2, 3, 6, 8]), torch.ops.aten._adaptive_avg_pool2d_backward(tg, t)
    )
    fg, tg = make((2, 3, 12, 16), layout, seed=6)
    assert_as_torch(
        fc.upsample_nearest2d_backward(fg, [2, 3, 6, 8], [12, 16]),
        torch.ops.aten.upsample_nearest2d_backward(tg, [12, 16], [2, 3, 6, 8]),
    )
    assert_as_torch(
        fc.upsample_bilinear2d_backward(fg, [2, 3, 6, 8], [12, 16], False),
        torch.ops.aten.upsample_bilinear2d_backward(tg, [12, 16], [2, 3, 6, 8], False),
    )


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_batch_and_group_norm_keep_channels_last_as_torch(layout, training):
    f, t = make((4, 3, 5, 6), layout)
    w, b = fc.tensor([1.0, 2.0, 0.5]), fc.tensor([0.0, 0.1, -0.2])
    tw, tb = torch.tensor([1.0, 2.0, 0.5]), torch.tensor([0.0, 0.1, -0.2])
    rm, rv, trm, trv = fc.zeros(3), fc.ones(3), torch.zeros(3), torch.ones(3)
    fr = fc.native_batch_norm(f, w, b, rm, rv, training, 0.1, 1e-5)
    tr = torch.native_batch_norm(t, tw, tb, trm, trv, training, 0.1, 1e-5)
    assert_as_torch(fr[0], tr[0])
    assert_as_torch(
        fc.native_group_norm(f, w, b, 4, 3, 30, 3, 1e-5)[0], torch.native_group_norm(t, tw, tb, 4, 3, 30, 3, 1e-5)[0]
    )


def test_pointwise_losses_without_reduction_keep_the_layout():
    fa, ta = make((2, 3, 4, 5), "channels_last", seed=1)
    fb_, tb = make((2, 3, 4, 5), "contiguous", seed=2)
    assert_as_torch(fc.mse_loss(fa, fb_, 0), torch.ops.aten.mse_loss(ta, tb, 0))
    assert_as_torch(fc.mse_loss(fb_, fa, 0), torch.ops.aten.mse_loss(tb, ta, 0))
    assert_as_torch(fc.mse_loss(fa, fb_, 1), torch.ops.aten.mse_loss(ta, tb, 1))


def test_ops_pytorch_leaves_contiguous_stay_contiguous():
    f, t = make((2, 3, 4, 5), "channels_last")
    assert_as_torch(fc.softmax(f, 1), torch.softmax(t, 1))
    assert_as_torch(fc.log_softmax(f, 1), torch.log_softmax(t, 1))
    assert_as_torch(fc.cumsum(f, 1), torch.cumsum(t, 1))
    assert_as_torch(f.sum(1, keepdim=True), t.sum(1, keepdim=True))
    assert_as_torch(fc.tril(f), torch.tril(t))
    assert_as_torch(f.masked_fill(f > 0, 1.0), t.masked_fill(t > 0, 1.0))


def test_a_bad_call_still_raises_with_a_channels_last_input():
    f, t = make((2, 3, 4, 5), "channels_last")
    g, u = make((2, 3, 4, 4), "channels_last")
    with pytest.raises(RuntimeError, match=r"\[add\].*\(2, 3, 4, 5\).*\(2, 3, 4, 4\)") as ours:
        f + g
    with pytest.raises(RuntimeError):
        t + u
    assert isinstance(ours.value, ValueError)
    with pytest.raises(RuntimeError, match=r"\[cat\]") as ours:
        fc.cat([f, g], 1)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        torch.cat([t, u], 1)


@pytest.mark.parametrize("shape", [(2, 0, 4, 5), (0, 3, 4, 5), (2, 3, 0, 5), (2, 1, 1, 1)])
def test_an_empty_or_size_one_tensor_in_channels_last_has_torchs_strides(shape):
    f = fc.empty(shape).contiguous(memory_format=fc.channels_last)
    t = torch.empty(shape).contiguous(memory_format=torch.channels_last)
    assert tuple(f.stride()) == tuple(t.stride())
    for ours, theirs in ((f, t), (fc.empty(shape), torch.empty(shape))):
        assert ours.is_contiguous(memory_format=fc.channels_last) == theirs.is_contiguous(
            memory_format=torch.channels_last
        )
        assert ours.is_contiguous() == theirs.is_contiguous()


def test_the_meta_device_lays_results_out_as_the_cpu():
    x = fc.randn(2, 3, 4, 6).contiguous(memory_format=fc.channels_last)
    m = fc.empty(2, 3, 4, 6, device="meta").contiguous(memory_format=fc.channels_last)
    bias, mbias = fc.randn(1, 3, 1, 1), fc.empty(1, 3, 1, 1, device="meta")
    cases = [
        lambda t, b: t + b,
        lambda t, b: b * t,
        lambda t, b: fc.relu(t),
        lambda t, b: fc.cat([t, t], 1),
        lambda t, b: fc.sort(t, 1)[1],
        lambda t, b: fc.max_pool2d_with_indices(t, [2, 2], [2, 2], [0, 0], [1, 1])[1],
        lambda t, b: fc.upsample_nearest2d(t, [8, 12]),
        lambda t, b: fc.native_batch_norm(t, None, None, None, None, True, 0.1, 1e-5)[0],
        lambda t, b: fc.softmax(t, 1),
    ]
    for f in cases:
        cpu, meta = f(x, bias), f(m, mbias)
        assert meta.device.type == "meta"
        assert tuple(meta.shape) == tuple(cpu.shape) and tuple(meta.stride()) == tuple(cpu.stride())
