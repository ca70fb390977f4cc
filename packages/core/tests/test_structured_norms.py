"""Note [Structured kernels] for the ops with several results in src/cpu/pool/pool.cpp and src/cpu/norm/:
max_pool2d_with_indices, adaptive_max_pool2d, native_batch_norm, native_layer_norm, native_group_norm
and the norms' fused backwards run their meta step and one out kernel writing every result the meta
step allocated (a gradient not asked for stays undefined), on the cpu, the simulated device and cuda,
and on the meta device. Values, shapes and dtypes (mixed precision included), the kernel trace, empty
batches and errors against PyTorch 2.13."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import devices, kernel_trace

RNG = np.random.default_rng(3)
TOL = {"float32": 1e-4, "float64": 1e-12, "bfloat16": 3e-2, "float16": 1e-2}
MASKS = [(True, True, True), (True, False, False), (False, True, True), (False, False, True), (False, False, False)]


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.float().numpy() if t.dtype in (torch.float16, torch.bfloat16) else t.numpy()
    t = t.cpu()
    return np.array(memoryview((t.float() if t.dtype in (fc.float16, fc.bfloat16) else t).contiguous()))


def pair(a: np.ndarray, dtype: str, device: str = "cpu", channels_last: bool = False):
    f = fc.tensor(a).to(getattr(fc, dtype))
    t = torch.from_numpy(a).to(getattr(torch, dtype))
    if channels_last:
        f, t = f.contiguous(memory_format=fc.channels_last), t.contiguous(memory_format=torch.channels_last)
    return f.to(device), t


def opt(a, dtype, device):
    return (None, None) if a is None else pair(a, dtype, device)


def assert_same(got, expected, dtype: str) -> None:
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(expected.shape)
    e = npy(expected)
    # 16-bit sums (the parameters' gradients) are compared relative to their largest value.
    scale = max(1.0, float(np.abs(e).max())) if e.size and dtype in ("bfloat16", "float16") else 1.0
    np.testing.assert_allclose(npy(got), e, rtol=TOL[dtype], atol=TOL[dtype] * scale)


def trace(fn) -> list[str]:
    with kernel_trace() as rows:
        fn()
    return [r[0] for r in rows]


def skip_cuda_16bit(device, dtype):
    if device.startswith("cuda") and dtype in ("bfloat16", "float16"):
        pytest.skip("flambeau-cuda's norms and pools are float32 and float64")


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_max_pools_with_indices_match_torch(dtype, channels_last, device):
    skip_cuda_16bit(device, dtype)
    x, t = pair(RNG.standard_normal((2, 3, 9, 8)), dtype, device, channels_last)
    for k, s, p, d, ceil in [([2, 2], [2, 2], [0, 0], [1, 1], False), ([3, 3], [2, 1], [1, 1], [1, 2], True)]:
        out, idx = torch.ops.aten.max_pool2d_with_indices(t, k, s, p, d, ceil)
        got = fc.max_pool2d_with_indices(x, k, s, p, d, ceil)
        assert_same(got[0], out, dtype)
        np.testing.assert_array_equal(npy(got[1]), idx.numpy())
    if device.startswith("cuda"):
        return  # flambeau-cuda has no adaptive max pooling
    for size in [[1, 1], [4, 3], [9, 8]]:
        out, idx = torch._C._nn.adaptive_max_pool2d(t, size)
        got = fc.adaptive_max_pool2d(x, size)
        assert_same(got[0], out, dtype)
        np.testing.assert_array_equal(npy(got[1]), idx.numpy())


def batch_norm_case(shape, dtype, device, params: str, training: bool, channels_last=False):
    """flambeau and torch arguments of native_batch_norm; params: "none", "same" (the input's dtype) or
    "float32" (mixed precision)."""
    c = shape[1]
    x, t = pair(RNG.standard_normal(shape) * 2 + 1, dtype, device, channels_last)
    pdt = dtype if params != "float32" else "float32"
    if params == "none" and training:
        return (x, None, None, None, None), (t, None, None, None, None)
    w, tw = pair(RNG.standard_normal(c), pdt, device)
    b, tb = pair(RNG.standard_normal(c), pdt, device)
    rm, trm = pair(RNG.standard_normal(c), pdt, device)
    rv, trv = pair(np.abs(RNG.standard_normal(c)) + 0.5, pdt, device)
    if params == "none":
        return (x, None, None, rm, rv), (t, None, None, trm, trv)
    return (x, w, b, rm, rv), (t, tw, tb, trm, trv)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize(
    ("dtype", "params"),
    [(d, p) for d in ("float32", "float64", "bfloat16", "float16") for p in ("none", "same")]
    + [("bfloat16", "float32"), ("float16", "float32")],  # mixed precision: a 16-bit input, float32 parameters
)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_and_backward_match_torch(dtype, training, params, device):
    skip_cuda_16bit(device, dtype)
    for shape, channels_last in [((4, 3, 5, 6), False), ((4, 3, 5, 6), True), ((6, 5), False), ((3, 4, 7), False)]:
        fa, ta = batch_norm_case(shape, dtype, device, params, training, channels_last)
        expected = torch.native_batch_norm(*ta, training, 0.1, 1e-5)
        got = fc.native_batch_norm(*fa, training, 0.1, 1e-5)
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e, dtype)
        for g, e in zip(fa[3:], ta[3:], strict=True):  # the running statistics, updated in place
            if e is not None:
                assert_same(g, e, dtype if params != "float32" else "float32")
        gy, tgy = pair(RNG.standard_normal(shape), dtype, device)
        x, w = fa[0], fa[1]
        if training:
            sm, si = got[1], got[2]
        else:
            si = fc.tensor(1.0 / np.sqrt(npy(fa[4]).astype(np.float64) + 1e-5)).to(fa[4].dtype).to(device)
            sm = fa[3]
        for mask in MASKS:
            expected = torch.ops.aten.native_batch_norm_backward(
                tgy,
                ta[0],
                ta[1],
                ta[3],
                ta[4],
                expected_stats(training, got, ta)[0],
                expected_stats(training, got, ta)[1],
                training,
                1e-5,
                list(mask),
            )
            res = fc._C._native_batch_norm_backward(gy, x, w, sm, si, training, *mask)
            for g, e in zip(res, expected, strict=True):
                assert_same(g, e, dtype)


def expected_stats(training, got, ta):
    if not training:
        return None, None
    return torch.from_numpy(npy(got[1])).to(
        ta[0].dtype if got[1].dtype != fc.float32 else torch.float32
    ), torch.from_numpy(npy(got[2])).to(ta[0].dtype if got[2].dtype != fc.float32 else torch.float32)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_and_backward_match_torch(dtype, affine, device):
    skip_cuda_16bit(device, dtype)
    for shape, ns in [((4, 6), [6]), ((2, 3, 5), [3, 5]), ((3, 2, 16), [16])]:
        x, t = pair(RNG.standard_normal(shape), dtype, device)
        w, tw = opt(RNG.standard_normal(ns) if affine else None, dtype, device)
        b, tb = opt(RNG.standard_normal(ns) if affine else None, dtype, device)
        expected = torch.native_layer_norm(t, ns, tw, tb, 1e-5)
        got = fc.native_layer_norm(x, ns, w, b, 1e-5)
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e, dtype)
        gy, tgy = pair(RNG.standard_normal(shape), dtype, device)
        for mask in MASKS:
            if not affine and mask[1:] != (False, False):
                continue
            e = torch.ops.aten.native_layer_norm_backward(tgy, t, ns, expected[1], expected[2], tw, tb, list(mask))
            res = fc._C._native_layer_norm_backward(gy, x, ns, got[1], got[2], w, *mask)
            for g, ee in zip(res, e, strict=True):
                assert_same(g, ee, dtype)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_and_backward_match_torch(dtype, affine, device):
    for shape, group in [((2, 6, 4, 4), 3), ((3, 4, 5), 2), ((2, 4), 4)]:
        n, c = shape[0], shape[1]
        hw = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        x, t = pair(RNG.standard_normal(shape), dtype, device)
        w, tw = opt(RNG.standard_normal(c) if affine else None, dtype, device)
        b, tb = opt(RNG.standard_normal(c) if affine else None, dtype, device)
        expected = torch.native_group_norm(t, tw, tb, n, c, hw, group, 1e-5)
        got = fc.native_group_norm(x, w, b, n, c, hw, group, 1e-5)
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e, dtype)
        gy, tgy = pair(RNG.standard_normal(shape), dtype, device)
        for mask in MASKS:
            if not affine and mask[1:] != (False, False):
                continue
            e = torch.ops.aten.native_group_norm_backward(
                tgy, t, expected[1], expected[2], tw, n, c, hw, group, list(mask)
            )
            res = fc._C._native_group_norm_backward(gy, x, got[1], got[2], w, n, c, hw, group, *mask)
            for g, ee in zip(res, e, strict=True):
                assert_same(g, ee, dtype)


def test_functional_forms_run_one_kernel_and_no_copy():
    x = fc.tensor(RNG.standard_normal((4, 3, 6, 6)).astype(np.float32))
    w, b, rm, rv = fc.ones(3), fc.zeros(3), fc.zeros(3), fc.ones(3)
    o, sm, si = fc.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
    lo, lm, lr = fc.native_layer_norm(x, [6, 6], None, None, 1e-5)
    go, gm, gr = fc.native_group_norm(x, w, b, 4, 3, 36, 3, 1e-5)
    calls = {
        "max_pool2d_with_indices": lambda: fc.max_pool2d_with_indices(x, [2, 2], [], [0, 0], [1, 1]),
        "adaptive_max_pool2d": lambda: fc.adaptive_max_pool2d(x, [2, 2]),
        "native_batch_norm": lambda: fc.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5),
        "native_batch_norm_backward": lambda: fc._C._native_batch_norm_backward(
            x, x, w, sm, si, True, True, True, True
        ),
        "native_layer_norm": lambda: fc.native_layer_norm(x, [6, 6], None, None, 1e-5),
        "native_layer_norm_backward": lambda: fc._C._native_layer_norm_backward(
            x, x, [6, 6], lm, lr, None, True, False, False
        ),
        "native_group_norm": lambda: fc.native_group_norm(x, w, b, 4, 3, 36, 3, 1e-5),
        "native_group_norm_backward": lambda: fc._C._native_group_norm_backward(
            x, x, gm, gr, w, 4, 3, 36, 3, True, True, True
        ),
    }
    for name, call in calls.items():
        names = trace(call)
        assert names.count(name) == 1 and "copy_" not in names, (name, names)
    # No gradient asked for: nothing runs, every result undefined.
    names = trace(lambda: fc._C._native_batch_norm_backward(x, x, w, sm, si, True, False, False, False))
    assert fc._C._native_batch_norm_backward(x, x, w, sm, si, True, False, False, False) == (None, None, None)


@pytest.mark.parametrize("training", [True, False])
def test_meta_device_as_torch(training):
    # Batch norm against torch's cpu results (torch's meta function gives evaluation mode (C,) statistics
    # and mixed-precision ones float32 where its cpu kernel gives (0,) and the input's dtype).
    for dtype, params in [("float32", "float32"), ("bfloat16", "float32"), ("bfloat16", "bfloat16")]:
        x = fc.empty((4, 3, 5, 5), dtype=getattr(fc, dtype), device="meta")
        t = torch.ones((4, 3, 5, 5), dtype=getattr(torch, dtype))
        p = [fc.empty((3,), dtype=getattr(fc, params), device="meta") for _ in range(4)]
        tp = [torch.ones((3,), dtype=getattr(torch, params)) for _ in range(4)]
        got = fc.native_batch_norm(x, *p, training, 0.1, 1e-5)
        expected = torch.native_batch_norm(t, *tp, training, 0.1, 1e-5)
        for g, e in zip(got, expected, strict=True):
            assert g.is_meta and tuple(g.shape) == tuple(e.shape)
            assert str(g.dtype).removeprefix("flambeau.") == str(e.dtype).removeprefix("torch.")
    x = fc.empty((4, 3, 5, 5), device="meta")
    t = torch.empty((4, 3, 5, 5), device="meta")
    for got, expected in [
        (fc.native_layer_norm(x, [5, 5], None, None, 1e-5), torch.native_layer_norm(t, [5, 5], None, None, 1e-5)),
        (
            fc.native_group_norm(x, None, None, 4, 3, 25, 3, 1e-5),
            torch.native_group_norm(t, None, None, 4, 3, 25, 3, 1e-5),
        ),
        (fc.max_pool2d_with_indices(x, [2, 2], [], [0, 0], [1, 1]), torch.ops.aten.max_pool2d_with_indices(t, [2, 2])),
        (fc.adaptive_max_pool2d(x, [2, 3]), torch._C._nn.adaptive_max_pool2d(t, [2, 3])),
    ]:
        for g, e in zip(got, expected, strict=True):
            assert g.is_meta and tuple(g.shape) == tuple(e.shape)
            assert str(g.dtype).removeprefix("flambeau.") == str(e.dtype).removeprefix("torch.")
    res = fc._C._native_batch_norm_backward(
        x, x, None, fc.empty((3,), device="meta"), fc.empty((3,), device="meta"), True, True, False, True
    )
    assert res[0].is_meta and tuple(res[0].shape) == (4, 3, 5, 5)
    assert res[1] is None and tuple(res[2].shape) == (3,)


@devices(types=("cpu", "sim"))
def test_empty_batch(device):
    x, t = pair(np.zeros((0, 3, 4, 4)), "float32", device)
    # Layer and group norm, the poolings and evaluation-mode batch norm: empty results as torch's.
    for got, expected in [
        (fc.native_layer_norm(x, [4, 4], None, None, 1e-5), torch.native_layer_norm(t, [4, 4], None, None, 1e-5)),
        (
            fc.native_group_norm(x, None, None, 0, 3, 16, 3, 1e-5),
            torch.native_group_norm(t, None, None, 0, 3, 16, 3, 1e-5),
        ),
        (fc.max_pool2d_with_indices(x, [2, 2], [], [0, 0], [1, 1]), torch.ops.aten.max_pool2d_with_indices(t, [2, 2])),
        (fc.adaptive_max_pool2d(x, [2, 2]), torch._C._nn.adaptive_max_pool2d(t, [2, 2])),
        (
            fc.native_batch_norm(
                x, None, None, fc.zeros(3, device=device), fc.ones(3, device=device), False, 0.1, 1e-5
            ),
            torch.native_batch_norm(t, None, None, torch.zeros(3), torch.ones(3), False, 0.1, 1e-5),
        ),
    ]:
        for g, e in zip(got, expected, strict=True):
            assert tuple(g.shape) == tuple(e.shape)
    # Training batch norm of an empty batch: torch refuses; flambeau gives NaN statistics and an empty output.
    with pytest.raises(RuntimeError):
        torch.native_batch_norm(t, None, None, None, None, True, 0.1, 1e-5)
    out, mean, invstd = fc.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    assert tuple(out.shape) == (0, 3, 4, 4) and np.isnan(npy(mean)).all() and np.isnan(npy(invstd)).all()


def test_errors_as_torch():
    x, t = pair(RNG.standard_normal((2, 3, 4, 4)), "float32")
    # A weight of another length: torch's native_batch_norm reads past it; flambeau checks (F.batch_norm's
    # RuntimeError).
    with pytest.raises(RuntimeError):
        torch.nn.functional.batch_norm(t, None, None, torch.ones(4), None, True)
    with pytest.raises(RuntimeError, match=r"\[batch_norm\] weight must have shape \(3,\)"):
        fc.native_batch_norm(x, fc.ones(4), None, None, None, True, 0.1, 1e-5)
    cases = [
        (
            lambda: torch.native_layer_norm(t, [5], None, None, 1e-5),
            lambda: fc.native_layer_norm(x, [5], None, None, 1e-5),
            r"\[layer_norm\] Given normalized_shape",
        ),
        (
            lambda: torch.native_group_norm(t, None, None, 2, 3, 16, 2, 1e-5),
            lambda: fc.native_group_norm(x, None, None, 2, 3, 16, 2, 1e-5),
            r"\[group_norm\]",
        ),
        (
            lambda: torch.ops.aten.max_pool2d_with_indices(t, [2, 2], [1, 1], [2, 2]),
            lambda: fc.max_pool2d_with_indices(x, [2, 2], [1, 1], [2, 2], [1, 1]),
            r"\[max_pool2d\] pad should be",
        ),
        (
            lambda: torch._C._nn.adaptive_max_pool2d(t, [-1, 2]),
            lambda: fc.adaptive_max_pool2d(x, [-1, 2]),
            r"\[adaptive_max_pool2d\]",
        ),
    ]
    for tcall, fcall, msg in cases:
        with pytest.raises(RuntimeError) as te:
            tcall()
        with pytest.raises(type(te.value), match=msg):
            fcall()
    with pytest.raises(NotImplementedError, match=r"\[max_pool2d\] \"max_pool2d\" not implemented for 'Bool'"):
        fc.max_pool2d_with_indices(fc.ones(1, 1, 2, 2, dtype=fc.bool), [2, 2], [], [0, 0], [1, 1])


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_max_pools_out_written_in_place_as_torch(dtype, device):
    skip_cuda_16bit(device, dtype)
    x, t = pair(RNG.standard_normal((2, 3, 7, 8)), dtype, device)
    forms = [
        ("max_pool2d_with_indices", ([3, 3], [2, 2], [1, 1], [1, 1], True), ([3, 3], [2, 2], [1, 1], [1, 1], True))
    ]
    if not device.startswith("cuda"):  # flambeau-cuda has no adaptive max pooling
        forms.append(("adaptive_max_pool2d", ([3, 5],), ([3, 5],)))
    for name, args, targs in forms:
        tv, ti = torch.empty(0, dtype=t.dtype), torch.empty(0, dtype=torch.int64)
        getattr(torch._C._nn, name)(t, *targs, out=(tv, ti))
        v = fc.empty(tuple(tv.shape), dtype=x.dtype, device=device)
        i = fc.empty(tuple(ti.shape), dtype=fc.int64, device=device)
        ptrs = (v.data_ptr(), i.data_ptr())
        res = getattr(fc, name)(x, *args, out=(v, i))
        assert res[0] is v and res[1] is i and (v.data_ptr(), i.data_ptr()) == ptrs
        assert_same(v, tv, dtype)
        np.testing.assert_array_equal(npy(i), ti.numpy())
        # Empty outs are resized; a transposed values out gets the values in its elements.
        v, i = fc.empty((0,), dtype=x.dtype, device=device), fc.empty((0,), dtype=fc.int64, device=device)
        getattr(fc, name)(x, *args, out=(v, i))
        assert_same(v, tv, dtype)
        vt = fc.zeros(tuple(tv.shape)[::-1], dtype=x.dtype, device=device).permute(3, 2, 1, 0)
        getattr(fc, name)(x, *args, out=(vt, i))
        assert_same(vt, tv, dtype)
        # Indices of another dtype: torch and flambeau refuse them.
        with pytest.raises(RuntimeError):
            getattr(torch._C._nn, name)(t, *targs, out=(torch.empty(0, dtype=t.dtype), torch.empty(0)))
        with pytest.raises((TypeError, RuntimeError), match=rf"\[{name}\]"):
            getattr(fc, name)(
                x, *args, out=(fc.empty((0,), dtype=x.dtype, device=device), fc.empty((0,), device=device))
            )


def test_max_pool_out_runs_the_kernel_without_a_copy():
    x = fc.tensor(RNG.standard_normal((2, 3, 8, 8)).astype(np.float32))
    for name, args in [("max_pool2d_with_indices", ([2, 2], [], [0, 0], [1, 1])), ("adaptive_max_pool2d", ([3, 3],))]:
        v, i = getattr(fc, name)(x, *args)
        outs = (fc.empty(tuple(v.shape)), fc.empty(tuple(i.shape), dtype=fc.int64))
        names = trace(lambda name=name, args=args, outs=outs: getattr(fc, name)(x, *args, out=outs))
        assert names.count(name) == 1 and "copy_" not in names and "empty" not in names, names
        np.testing.assert_array_equal(npy(outs[0]), npy(v))
        np.testing.assert_array_equal(npy(outs[1]), npy(i))
