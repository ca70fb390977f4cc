"""Normalization, dropout and embedding kernels (core only, no autograd) against PyTorch."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import raises_when_run
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="group_norm, dropout: no flambeau-cuda kernel yet")


def rand(shape, dtype=np.float32, seed=0, scale=1.0, shift=0.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(dtype)


TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


# ---- batch norm ----
@pytest.mark.parametrize("shape", [(6, 3), (4, 5, 7), (3, 4, 5, 6), (2, 3, 1, 1), (5, 2, 3, 2, 2), (33, 17, 9)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_matches_torch(shape, dtype, affine):
    x = rand(shape, dtype, scale=3.0, shift=2.0)
    c = shape[1]
    w = rand((c,), dtype, seed=1) if affine else None
    b = rand((c,), dtype, seed=2) if affine else None
    rm, rv = rand((c,), dtype, seed=3), np.abs(rand((c,), dtype, seed=4)) + 0.5
    ours_rm, ours_rv = fc.tensor(rm), fc.tensor(rv)
    th_rm, th_rv = torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy())
    out, mean, invstd = fc.native_batch_norm(
        fc.tensor(x),
        None if w is None else fc.tensor(w),
        None if b is None else fc.tensor(b),
        ours_rm,
        ours_rv,
        True,
        0.3,
        1e-5,
    )
    t_out, t_mean, t_invstd = torch.native_batch_norm(
        torch.from_numpy(x),
        None if w is None else torch.from_numpy(w),
        None if b is None else torch.from_numpy(b),
        th_rm,
        th_rv,
        True,
        0.3,
        1e-5,
    )
    tol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(out), t_out.numpy(), **tol)
    np.testing.assert_allclose(to_numpy(mean), t_mean.numpy(), **tol)
    np.testing.assert_allclose(to_numpy(invstd), t_invstd.numpy(), **tol)
    np.testing.assert_allclose(to_numpy(ours_rm), th_rm.numpy(), **tol)
    np.testing.assert_allclose(to_numpy(ours_rv), th_rv.numpy(), **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_eval_uses_running_stats(dtype):
    x = rand((4, 3, 5), dtype)
    rm, rv = rand((3,), dtype, seed=1), np.abs(rand((3,), dtype, seed=2)) + 0.1
    w, b = rand((3,), dtype, seed=3), rand((3,), dtype, seed=4)
    ours_rm = fc.tensor(rm)
    out, mean, invstd = fc.native_batch_norm(
        fc.tensor(x), fc.tensor(w), fc.tensor(b), ours_rm, fc.tensor(rv), False, 0.1, 1e-3
    )
    # No statistics saved in evaluation mode: (0,), as torch's (its gradient reads the running ones)
    t_stats = torch.native_batch_norm(*(torch.from_numpy(a) for a in (x, w, b, rm, rv)), False, 0.1, 1e-3)[1:]
    for ours, theirs in zip((mean, invstd), t_stats, strict=True):
        assert ours.shape == tuple(theirs.shape) == (0,)
        assert str(ours.dtype).removeprefix("flambeau.") == str(theirs.dtype).removeprefix("torch.")
    want = torch.nn.functional.batch_norm(
        torch.from_numpy(x),
        torch.from_numpy(rm),
        torch.from_numpy(rv),
        torch.from_numpy(w),
        torch.from_numpy(b),
        False,
        0.1,
        1e-3,
    )
    np.testing.assert_allclose(to_numpy(out), want.numpy(), **TOL[dtype])
    np.testing.assert_array_equal(to_numpy(ours_rm), rm)  # not updated in eval


def test_batch_norm_large_mean_is_accurate():
    # One-pass statistics stay accurate when |mean| >> std (shifted sums).
    x = rand((64, 4, 16, 16), np.float32, scale=1e-2, shift=1000.0)
    out, mean, invstd = fc.native_batch_norm(fc.tensor(x), None, None, None, None, True, 0.1, 1e-5)
    want = torch.native_batch_norm(torch.from_numpy(x), None, None, None, None, True, 0.1, 1e-5)
    x64 = x.astype(np.float64)
    var = x64.var(axis=(0, 2, 3))
    np.testing.assert_allclose(1 / to_numpy(invstd).astype(np.float64) ** 2 - 1e-5, var, rtol=2e-3)
    np.testing.assert_allclose(to_numpy(out), want[0].numpy(), rtol=0, atol=5e-3)


def test_batch_norm_noncontiguous_input():
    x = rand((6, 5, 4), np.float32)
    t = fc.tensor(x.transpose(2, 1, 0).copy()).permute(2, 1, 0)
    assert not t.is_contiguous()
    out = fc.native_batch_norm(t, None, None, None, None, True, 0.1, 1e-5)[0]
    want = torch.native_batch_norm(torch.from_numpy(x), None, None, None, None, True, 0.1, 1e-5)[0]
    np.testing.assert_allclose(to_numpy(out), want.numpy(), rtol=1e-4, atol=1e-5)


def test_batch_norm_running_stats_over_steps():
    rm, rv = fc.zeros(4), fc.ones(4)
    trm, trv = torch.zeros(4), torch.ones(4)
    for step in range(5):
        x = rand((8, 4, 3), np.float32, seed=step, shift=step)
        fc.native_batch_norm(fc.tensor(x), None, None, rm, rv, True, 0.1, 1e-5)
        torch.native_batch_norm(torch.from_numpy(x), None, None, trm, trv, True, 0.1, 1e-5)
    np.testing.assert_allclose(to_numpy(rm), trm.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(rv), trv.numpy(), rtol=1e-5, atol=1e-6)


def test_batch_norm_errors():
    x = fc.ones(2, 3, 4)
    with pytest.raises(ValueError, match=r"running_mean must have shape \(3,\).*\(2, 3, 4\).*got shape \(5,\)"):
        fc.native_batch_norm(x, None, None, fc.zeros(5), fc.ones(3), True, 0.1, 1e-5)
    with pytest.raises(ValueError, match="must be given in evaluation mode"):
        fc.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(ValueError, match="at least 2 dims"):
        fc.native_batch_norm(fc.ones(3), None, None, None, None, True, 0.1, 1e-5)
    with pytest.raises(TypeError, match="float32 or float64.*int64"):
        fc.native_batch_norm(fc.ones(2, 3, dtype=fc.int64), None, None, None, None, True, 0.1, 1e-5)
    with pytest.raises(TypeError, match="weight must have the input's dtype float32, got float64"):
        fc.native_batch_norm(x, fc.ones(3, dtype=fc.float64), None, None, None, True, 0.1, 1e-5)


# ---- batch norm in bfloat16 (autocast: a lowered convolution feeds a batch norm with float32 parameters) ----
# Computed in float32 and rounded once (Note [Low-precision kernels]); PyTorch's dtype rules (Note [Batch
# norm's mixed precision]): float32 parameters give float32 statistics and gradients, bfloat16 ones bfloat16.
BF16_TOL = dict(rtol=2**-7, atol=2**-7)


def bf16(a):
    return torch.from_numpy(a).bfloat16()


def from_torch(t):
    return (
        None
        if t is None
        else (fc.tensor(t.float().numpy()).to(fc.bfloat16) if t.dtype == torch.bfloat16 else fc.tensor(t.numpy()))
    )


def close_as_torch(ours, theirs):
    assert str(ours.dtype).removeprefix("flambeau.") == str(theirs.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(to_numpy(ours), theirs.float().numpy(), **BF16_TOL)


@pytest.mark.on_devices(types=("cpu", "sim"))  # the CUDA kernel takes float32 and float64
@pytest.mark.parametrize("params", ["float32", "bfloat16", "none"])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(8, 3, 5, 5), (16, 4)])
def test_batch_norm_bfloat16_matches_torch(shape, training, params):
    c = shape[1]
    x = bf16(rand(shape, scale=2.0, shift=1.0))
    pdt = torch.bfloat16 if params == "bfloat16" else torch.float32
    w = torch.from_numpy(rand((c,), seed=1)).to(pdt) if params != "none" else None
    b = torch.from_numpy(rand((c,), seed=2)).to(pdt) if params != "none" else None
    rm = torch.from_numpy(rand((c,), seed=3)).to(pdt)
    rv = torch.from_numpy(np.abs(rand((c,), seed=4)) + 0.5).to(pdt)
    ours_rm, ours_rv = from_torch(rm), from_torch(rv)
    got = fc.native_batch_norm(from_torch(x), from_torch(w), from_torch(b), ours_rm, ours_rv, training, 0.1, 1e-5)
    want = torch.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)
    close_as_torch(got[0], want[0])
    close_as_torch(got[1], want[1])  # evaluation mode: (0,) statistics, as PyTorch's
    close_as_torch(got[2], want[2])
    assert got[1].dtype == got[2].dtype == (fc.bfloat16 if params == "bfloat16" else fc.float32)
    close_as_torch(ours_rm, rm)  # updated in place (training) in its own dtype
    close_as_torch(ours_rv, rv)
    # The backward: grad_input in bfloat16, the parameters' gradients in the statistics' dtype.
    g = bf16(rand(shape, seed=5))
    weight = w if w is not None else torch.ones(c, dtype=pdt)
    # The backward takes the statistics the forward used: in evaluation mode the running ones (what autograd's
    # formula passes it), 1/sqrt(var + eps) in float64 rounded to their dtype.
    mean, invstd = got[1], got[2]
    if not training:
        mean, invstd = ours_rm, (ours_rv.to(fc.float64) + 1e-5).rsqrt().to(ours_rv.dtype)
    gi, gw, gb = fc._C._native_batch_norm_backward(
        from_torch(g), from_torch(x), from_torch(weight), mean, invstd, training, True, True, True
    )
    smean, sinv = (want[1], want[2]) if training else (None, None)
    tgi, tgw, tgb = torch.ops.aten.native_batch_norm_backward(
        g,
        x,
        weight,
        rm if not training else None,
        rv if not training else None,
        smean,
        sinv,
        training,
        1e-5,
        [True, True, True],
    )
    close_as_torch(gi, tgi)
    np.testing.assert_allclose(to_numpy(gw), tgw.float().numpy(), rtol=2e-2, atol=2e-2 * np.sqrt(x.numel() / c))
    np.testing.assert_allclose(to_numpy(gb), tgb.float().numpy(), rtol=2e-2, atol=2e-2)
    assert str(gw.dtype).removeprefix("flambeau.") == str(tgw.dtype).removeprefix("torch.")


@pytest.mark.on_devices(types=("cpu", "sim"))
def test_batch_norm_bfloat16_mixed_dtype_errors():
    x = fc.ones(2, 3, 4, dtype=fc.bfloat16)
    f32, b16 = fc.ones(3), fc.ones(3, dtype=fc.bfloat16)
    with pytest.raises(TypeError, match=r"^\[batch_norm\] bias must be float32 .* bfloat16 input .*got bfloat16"):
        fc.native_batch_norm(x, f32, b16, None, None, True, 0.1, 1e-5)
    with pytest.raises(TypeError, match=r"^\[batch_norm\] running_var must be float32"):
        fc.native_batch_norm(x, None, None, fc.zeros(3), b16, True, 0.1, 1e-5)
    # A float32 input takes no bfloat16 parameters (PyTorch: "mixed dtype (CPU): expect parameter to have
    # scalar type of Float").
    with pytest.raises(TypeError, match="weight must have the input's dtype float32, got bfloat16"):
        fc.native_batch_norm(fc.ones(2, 3), b16, None, None, None, True, 0.1, 1e-5)
    with pytest.raises(TypeError, match="weight must have the input's dtype float16, got bfloat16"):
        fc.native_batch_norm(fc.ones(2, 3, dtype=fc.float16), b16, None, None, None, True, 0.1, 1e-5)
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\)"):
        fc.native_batch_norm(x, fc.ones(4), None, None, None, True, 0.1, 1e-5)
    out, mean, invstd = fc.native_batch_norm(x, f32, f32, None, None, True, 0.1, 1e-5)
    with pytest.raises(TypeError, match="grad_out dtype float32 does not match input dtype bfloat16"):
        fc._C._native_batch_norm_backward(fc.ones(2, 3, 4), x, f32, mean, invstd, True, True, True, True)
    with pytest.raises(TypeError, match=r"save_mean must be float32"):
        fc._C._native_batch_norm_backward(out, x, f32, mean.bfloat16(), invstd, True, True, True, True)
    with pytest.raises(ValueError, match="grad_out shape"):
        fc._C._native_batch_norm_backward(out[:1], x, f32, mean, invstd, True, True, True, True)


# ---- layer norm and group norm ----
@pytest.mark.parametrize("shape, norm", [((4, 7), (7,)), ((2, 3, 5), (3, 5)), ((3, 1000), (1000,)), ((5,), (5,))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_torch(shape, norm, dtype, affine):
    x = rand(shape, dtype, scale=2.0, shift=-3.0)
    w = rand(norm, dtype, seed=1) if affine else None
    b = rand(norm, dtype, seed=2) if affine else None
    out, mean, rstd = fc.native_layer_norm(
        fc.tensor(x), norm, None if w is None else fc.tensor(w), None if b is None else fc.tensor(b), 1e-5
    )
    t_out, t_mean, t_rstd = torch.native_layer_norm(
        torch.from_numpy(x),
        norm,
        None if w is None else torch.from_numpy(w),
        None if b is None else torch.from_numpy(b),
        1e-5,
    )
    np.testing.assert_allclose(to_numpy(out), t_out.numpy(), **TOL[dtype])
    assert mean.shape == tuple(t_mean.shape)
    np.testing.assert_allclose(to_numpy(mean), t_mean.numpy(), **TOL[dtype])
    np.testing.assert_allclose(to_numpy(rstd), t_rstd.numpy(), **TOL[dtype])


def test_layer_norm_shape_mismatch_names_both():
    with pytest.raises(ValueError, match=r"normalized_shape=\(4,\).*\(\*, 4\).*\(2, 5\)"):
        fc.native_layer_norm(fc.ones(2, 5), (4,), None, None, 1e-5)
    with pytest.raises(ValueError, match=r"weight must have shape \(5,\)"):
        fc.native_layer_norm(fc.ones(2, 5), (5,), fc.ones(4), None, 1e-5)


@pytest.mark.parametrize("shape, groups", [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4), 4), ((1, 8, 7, 7), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_group_norm_matches_torch(shape, groups, dtype):
    x = rand(shape, dtype, scale=2.0, shift=1.0)
    c = shape[1]
    w, b = rand((c,), dtype, seed=1), rand((c,), dtype, seed=2)
    hxw = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    out, mean, rstd = fc.native_group_norm(fc.tensor(x), fc.tensor(w), fc.tensor(b), shape[0], c, hxw, groups, 1e-5)
    t_out, t_mean, t_rstd = torch.native_group_norm(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), shape[0], c, hxw, groups, 1e-5
    )
    np.testing.assert_allclose(to_numpy(out), t_out.numpy(), **TOL[dtype])
    np.testing.assert_allclose(to_numpy(mean), t_mean.numpy(), **TOL[dtype])
    np.testing.assert_allclose(to_numpy(rstd), t_rstd.numpy(), **TOL[dtype])


def test_group_norm_errors():
    with pytest.raises(ValueError, match=r"divisible by num_groups.*\(2, 6, 4\).*num_groups=4"):
        fc.native_group_norm(fc.ones(2, 6, 4), None, None, 2, 6, 4, 4, 1e-5)
    with pytest.raises(ValueError, match="do not describe"):
        fc.native_group_norm(fc.ones(2, 6, 4), None, None, 2, 6, 5, 3, 1e-5)
    with pytest.raises(ValueError, match="num_groups must be positive"):
        fc.native_group_norm(fc.ones(2, 6, 4), None, None, 2, 6, 4, 0, 1e-5)


# ---- dropout ----
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_dropout_mask_and_scale(dtype):
    x = fc.randn(300, 200).to(dtype)
    out, mask = fc.native_dropout(x, 0.3, True)
    assert mask.dtype == fc.bool and out.dtype == dtype
    o, m, xv = to_numpy(out), to_numpy(mask), to_numpy(x)
    np.testing.assert_allclose(o[m], xv[m] / 0.7, rtol=1e-6)
    assert (o[~m] == 0).all()
    assert abs(m.mean() - 0.7) < 0.01  # 60,000 draws: std ~0.002
    # backward reuses the mask
    g = fc.randn(300, 200).to(dtype)
    gb = to_numpy(fc.native_dropout_backward(g, mask, 1 / 0.7))
    np.testing.assert_allclose(gb, np.where(m, to_numpy(g) / 0.7, 0), rtol=1e-6)


def test_dropout_reproducible_and_thread_independent():
    x = fc.ones(100_000)
    fc.manual_seed(3)
    a = to_numpy(fc.native_dropout(x, 0.5, True)[1])
    n = fc.get_num_threads()
    try:
        fc.set_num_threads(1)
        fc.manual_seed(3)
        b = to_numpy(fc.native_dropout(x, 0.5, True)[1])
    finally:
        fc.set_num_threads(n)
    assert (a == b).all()
    c = to_numpy(fc.native_dropout(x, 0.5, True)[1])
    assert not (a == c).all()  # the generator moved on


def test_dropout_edge_cases():
    x = fc.randn(5, 4)
    out, mask = fc.native_dropout(x, 0.0, True)
    assert to_numpy(mask).all() and (to_numpy(out) == to_numpy(x)).all()
    out, mask = fc.native_dropout(x, 1.0, True)
    assert not to_numpy(mask).any() and (to_numpy(out) == 0).all()
    out, mask = fc.native_dropout(x, 0.5, False)
    assert to_numpy(mask).all() and (to_numpy(out) == to_numpy(x)).all()
    assert fc.native_dropout(fc.ones(0, 3), 0.5, True)[0].shape == (0, 3)
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        fc.native_dropout(x, 1.5, True)


def test_feature_dropout_zeroes_whole_channels():
    x = fc.randn(16, 32, 5, 5)
    out, mask = fc._feature_dropout(x, 0.4)
    assert mask.shape == (16, 32, 1, 1)
    o, m, xv = to_numpy(out), to_numpy(mask), to_numpy(x)
    np.testing.assert_allclose(o, np.where(m, xv / 0.6, 0), rtol=1e-6)
    assert abs(m.mean() - 0.6) < 0.08
    g = fc.randn(16, 32, 5, 5)
    np.testing.assert_allclose(
        to_numpy(fc.native_dropout_backward(g, mask, 1 / 0.6)), np.where(m, to_numpy(g) / 0.6, 0), rtol=1e-6
    )


# ---- embedding ----
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_embedding_matches_torch(dtype, idx_dtype):
    w = rand((10, 7), dtype)
    idx = np.random.default_rng(1).integers(0, 10, size=(4, 5)).astype(idx_dtype)
    got = fc.embedding(fc.tensor(w), fc.tensor(idx))
    np.testing.assert_array_equal(to_numpy(got), w[idx])
    # non-contiguous indices and weight
    wt = fc.tensor(w.T.copy()).T
    it = fc.tensor(idx.T.copy()).T
    np.testing.assert_array_equal(to_numpy(fc.embedding(wt, it)), w[idx])


def test_embedding_backward_matches_torch():
    idx = np.random.default_rng(2).integers(0, 50, size=(35, 20))
    g = rand((35, 20, 16), np.float32)
    for pad, freq in [(-1, False), (3, False), (-1, True), (7, True)]:
        got = fc.embedding_dense_backward(fc.tensor(g), fc.tensor(idx), 50, pad, freq)
        want = torch.ops.aten.embedding_dense_backward(torch.from_numpy(g), torch.from_numpy(idx), 50, pad, freq)
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_backward_reads_strided_rows_in_place(dtype):
    # A column slice of a wider gradient (as cat's backward hands each embedding), an expanded
    # gradient (row stride 0), a transposed one (copied first) and many rows across threads.
    idx = np.random.default_rng(3).integers(0, 300, size=(1000,))
    wide = rand((1000, 40), dtype, seed=5)
    cases = [
        (fc.tensor(wide)[:, 8:24], wide[:, 8:24]),
        (fc.tensor(wide[0]).expand(1000, 40), np.broadcast_to(wide[0], (1000, 40))),
        (fc.tensor(wide.T.copy()).T, wide),
        (fc.tensor(wide)[::2, 3:5], wide[::2, 3:5]),
    ]
    for g, g_np in cases:
        ix = idx[: g_np.shape[0]]
        for pad, freq in [(-1, False), (17, False), (-1, True)]:
            got = fc.embedding_dense_backward(g, fc.tensor(ix), 300, pad, freq)
            want = torch.ops.aten.embedding_dense_backward(
                torch.from_numpy(np.ascontiguousarray(g_np)), torch.from_numpy(ix), 300, pad, freq
            )
            np.testing.assert_allclose(to_numpy(got), want.numpy(), **TOL[dtype])
            # The same sums in the same order as from a contiguous copy.
            dense = fc.embedding_dense_backward(fc.tensor(np.ascontiguousarray(g_np)), fc.tensor(ix), 300, pad, freq)
            np.testing.assert_array_equal(to_numpy(got), to_numpy(dense))


def test_embedding_index_errors_never_read_outside():
    w = fc.randn(10, 3)
    raises_when_run(
        IndexError, "index 10 is out of range for an embedding table of 10 rows", fc.embedding, w, fc.tensor([1, 10])
    )
    raises_when_run(IndexError, "index -1 is out of range", fc.embedding, w, fc.tensor([-1]))
    raises_when_run(IndexError, "index 1000000000000", fc.embedding, w, fc.tensor([1000000000000]))
    with pytest.raises(TypeError, match="int64 or int32.*float32"):
        fc.embedding(w, fc.tensor([1.0]))
    with pytest.raises(ValueError, match=r"weight must be 2-D.*\(10,\)"):
        fc.embedding(fc.randn(10), fc.tensor([1]))
    raises_when_run(
        IndexError, "index 12", fc.embedding_dense_backward, fc.randn(2, 3), fc.tensor([1, 12]), 10, -1, False
    )


def test_embedding_renorm():
    w = rand((6, 4), np.float32, scale=3.0)
    ours, theirs = fc.tensor(w), torch.from_numpy(w.copy())
    idx = np.array([0, 2, 2, 5])
    fc.embedding_renorm_(ours, fc.tensor(idx), 1.5, 2.0)
    torch.embedding_renorm_(theirs, torch.from_numpy(idx), 1.5, 2.0)
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("padding_idx", [-1, 4])
def test_embedding_bag_matches_torch(mode, include_last_offset, padding_idx):
    w = rand((12, 5), np.float64)
    idx = np.random.default_rng(3).integers(0, 12, size=20)
    offsets = np.array([0, 3, 3, 9, 15] + ([20] if include_last_offset else []))
    psw = rand((20,), np.float64, seed=4) if mode == 0 else None
    got = fc._embedding_bag(
        fc.tensor(w),
        fc.tensor(idx),
        fc.tensor(offsets),
        False,
        mode,
        False,
        None if psw is None else fc.tensor(psw),
        include_last_offset,
        padding_idx,
    )
    want = torch._embedding_bag(
        torch.from_numpy(w),
        torch.from_numpy(idx),
        torch.from_numpy(offsets),
        False,
        mode,
        False,
        None if psw is None else torch.from_numpy(psw),
        include_last_offset,
        padding_idx,
    )
    np.testing.assert_allclose(to_numpy(got[0]), want[0].numpy(), rtol=1e-12, atol=1e-12)


def test_embedding_bag_bad_offsets():
    w, idx = fc.randn(5, 2), fc.tensor([0, 1, 2, 3])
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        fc._embedding_bag(w, idx, fc.tensor([1, 2]))
    with pytest.raises(ValueError, match="non-decreasing"):
        fc._embedding_bag(w, idx, fc.tensor([0, 3, 2]))
    with pytest.raises(ValueError, match="can not be greater than input's length 4"):
        fc._embedding_bag(w, idx, fc.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="not in the valid range"):  # PyTorch's RuntimeError, not IndexError
        torch.embedding_bag(torch.randn(5, 2), torch.tensor([0, 9]), torch.tensor([0]))
    with pytest.raises(fc.FlambeauError, match=r"^\[embedding_bag\] index 9 is out of range"):
        fc._embedding_bag(w, fc.tensor([0, 9]), fc.tensor([0]))
    with pytest.raises(TypeError, match="offsets must be an int64 or int32"):
        fc._embedding_bag(w, idx, fc.tensor([0.0]))
