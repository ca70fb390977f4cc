"""scaled_dot_product_attention and MultiheadAttention against PyTorch: outputs, weights and gradients."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import pytest
import torch
from nn_testing import assert_close, copy_params, from_torch

pytestmark = pytest.mark.on_devices

TOL = {torch.float32: dict(rtol=2e-4, atol=2e-5), torch.float64: dict(rtol=1e-9, atol=1e-10)}
FB_DTYPE = {torch.float32: fc.float32, torch.float64: fc.float64}


def _leaf(x: torch.Tensor):
    return from_torch(x).requires_grad_(True), x.detach().clone().requires_grad_(True)


def _mask(kind, shape_ls, dtype):
    L, S = shape_ls
    if kind is None or kind == "causal":
        return None
    if kind == "bool":
        m = torch.rand(L, S) > 0.3
        m[:, 0] = True  # every row keeps one position
        return m
    if kind == "bool_bcast":
        m = torch.rand(2, 1, L, S) > 0.3
        m[..., 0] = True
        return m
    if kind == "float":
        return torch.randn(L, S, dtype=dtype)
    if kind == "float_full":
        return torch.randn(2, 3, L, S, dtype=dtype)
    raise AssertionError(kind)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mask", [None, "bool", "bool_bcast", "float", "float_full", "causal"])
@pytest.mark.parametrize("scale", [None, 0.3])
@pytest.mark.parametrize("L,S", [(5, 7), (6, 6)])
def test_sdpa_matches_torch(dtype, mask, scale, L, S):
    q = torch.randn(2, 3, L, 8, dtype=dtype)
    k = torch.randn(2, 3, S, 8, dtype=dtype)
    v = torch.randn(2, 3, S, 5, dtype=dtype)
    m = _mask(mask, (L, S), dtype)
    (qo, qt), (ko, kt), (vo, vt) = _leaf(q), _leaf(k), _leaf(v)
    causal = mask == "causal"
    mo = from_torch(m) if m is not None else None
    yo = F.scaled_dot_product_attention(qo, ko, vo, attn_mask=mo, is_causal=causal, scale=scale)
    yt = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=m, is_causal=causal, scale=scale)
    assert_close(yo, yt, **TOL[dtype])
    g = torch.randn(yt.shape, dtype=dtype)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    for a, b in ((qo, qt), (ko, kt), (vo, vt)):
        assert_close(a.grad, b.grad, **TOL[dtype])


def test_sdpa_3d_and_broadcast_batch():
    q, k, v = torch.randn(4, 3, 6), torch.randn(1, 5, 6), torch.randn(1, 5, 2)
    yo = F.scaled_dot_product_attention(from_torch(q), from_torch(k), from_torch(v))
    yt = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert_close(yo, yt, **TOL[torch.float32])
    # non-contiguous inputs
    q2 = torch.randn(3, 5, 4).transpose(0, 1)
    yo = F.scaled_dot_product_attention(from_torch(q2).transpose(0, 1).transpose(0, 1), from_torch(q2), from_torch(q2))
    yt = torch.nn.functional.scaled_dot_product_attention(q2, q2, q2)
    assert_close(yo, yt, **TOL[torch.float32])


def test_sdpa_gradcheck():
    d = fc.float64
    q, k, v = (fc.randn(2, 3, 4, dtype=d).requires_grad_(True) for _ in range(3))
    m = fc.randn(3, 3, dtype=d).requires_grad_(True)
    assert fa.gradcheck(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), (q, k, v, m))
    assert fa.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))


def test_sdpa_dropout():
    q = fc.randn(2, 4, 3)
    y = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    assert y.abs().sum().item() == 0.0
    y = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert tuple(y.shape) == (2, 4, 3)


def test_sdpa_errors():
    q = fc.randn(2, 4, 3)
    with pytest.raises(fc.FlambeauError, match="should not be set when is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=fc.ones(4, 4, dtype=fc.bool), is_causal=True)
    with pytest.raises(fc.FlambeauError, match=r"attn_mask of shape \(3, 4\) does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=fc.ones(3, 4, dtype=fc.bool))
    with pytest.raises(fc.FlambeauError, match="same embedding size"):
        F.scaled_dot_product_attention(q, fc.randn(2, 4, 5), q)
    with pytest.raises(fc.FlambeauError, match="same sequence length"):
        F.scaled_dot_product_attention(q, q, fc.randn(2, 5, 3))
    with pytest.raises(TypeError, match="same floating point dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)
    with pytest.raises(TypeError, match="attn_mask must be bool or floating"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=fc.ones(4, 4, dtype=fc.int64))
    with pytest.raises(fc.FlambeauError, match="at least 2 dims"):
        F.scaled_dot_product_attention(fc.randn(3), q, q)


def _mha_pair(E, H, dtype, **kw):
    theirs = torch.nn.MultiheadAttention(E, H, dtype=dtype, **kw)
    ours = nn.MultiheadAttention(E, H, dtype=FB_DTYPE[dtype], **kw)
    with torch.no_grad():  # non-zero biases exercise them
        for n, p in theirs.named_parameters():
            if "bias" in n:
                p.normal_()
    copy_params(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize(
    "masks", [None, "attn_bool", "attn_float", "attn_3d", "kpm_bool", "kpm_float", "both", "causal"]
)
@pytest.mark.parametrize("attn_kind", ["self", "cross", "kdim"])
def test_mha_matches_torch(dtype, batch_first, need_weights, average, masks, attn_kind):
    E, H, L, S, N = 8, 2, 4, 6, 3
    kw = dict(batch_first=batch_first)
    if attn_kind == "kdim":
        kw.update(kdim=5, vdim=7)
    ours, theirs = _mha_pair(E, H, dtype, **kw)
    if attn_kind == "self":
        S = L
    kd, vd = (5, 7) if attn_kind == "kdim" else (E, E)

    def shape(T, D):
        return (N, T, D) if batch_first else (T, N, D)

    q = torch.randn(shape(L, E), dtype=dtype)
    qo, qt = _leaf(q)
    if attn_kind == "self":
        ko, kt, vo, vt = qo, qt, qo, qt
    else:
        ko, kt = _leaf(torch.randn(shape(S, kd), dtype=dtype))
        vo, vt = _leaf(torch.randn(shape(S, vd), dtype=dtype))
    am = kpm = None
    causal = False
    if masks in ("attn_bool", "both"):
        am = torch.rand(L, S) > 0.7
        am[:, 0] = False
    elif masks == "attn_float":
        am = torch.randn(L, S, dtype=dtype)
    elif masks == "attn_3d":
        am = torch.randn(N * H, L, S, dtype=dtype)
    elif masks == "causal":
        am = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=dtype)[:, :S] if S == L else None
        causal = am is not None
    if masks in ("kpm_bool", "both"):
        kpm = torch.zeros(N, S, dtype=torch.bool)
        kpm[0, -2:] = True
        kpm[2, 1] = True
    elif masks == "kpm_float":
        kpm = torch.randn(N, S, dtype=dtype)
    conv = lambda m: from_torch(m) if m is not None else None  # noqa: E731
    yo, wo = ours(
        qo,
        ko,
        vo,
        key_padding_mask=conv(kpm),
        need_weights=need_weights,
        attn_mask=conv(am),
        average_attn_weights=average,
        is_causal=causal,
    )
    yt, wt = theirs(
        qt,
        kt,
        vt,
        key_padding_mask=kpm,
        need_weights=need_weights,
        attn_mask=am,
        average_attn_weights=average,
        is_causal=causal,
    )
    tol = TOL[dtype]
    assert_close(yo, yt, **tol)
    if need_weights:
        assert_close(wo, wt, **tol)
    else:
        assert wo is None and wt is None
    g = torch.randn(yt.shape, dtype=dtype)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    their = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        assert_close(p.grad, their[n].grad, **tol)
    assert_close(qo.grad, qt.grad, **tol)
    if attn_kind != "self":
        assert_close(ko.grad, kt.grad, **tol)
        assert_close(vo.grad, vt.grad, **tol)


@pytest.mark.parametrize("bias", [True, False])
def test_mha_unbatched_and_no_bias(bias):
    ours, theirs = _mha_pair(6, 3, torch.float32, bias=bias)
    x = torch.randn(5, 6)
    kpm = torch.tensor([False, False, True, False, False])
    yo, wo = ours(from_torch(x), from_torch(x), from_torch(x), key_padding_mask=from_torch(kpm))
    yt, wt = theirs(x, x, x, key_padding_mask=kpm)
    assert_close(yo, yt, **TOL[torch.float32])
    assert_close(wo, wt, **TOL[torch.float32])


def test_mha_state_dict_and_init():
    for kw in ({}, {"kdim": 3, "vdim": 5}, {"bias": False}):
        ours, theirs = nn.MultiheadAttention(8, 4, **kw), torch.nn.MultiheadAttention(8, 4, **kw)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
            assert tuple(p.shape) == tuple(q.shape), n
    m = nn.MultiheadAttention(8, 4)
    assert m.in_proj_bias.abs().sum().item() == 0.0
    assert m.out_proj.bias.abs().sum().item() == 0.0
    bound = (6 / (8 + 24)) ** 0.5
    assert m.in_proj_weight.abs().max().item() <= bound


def test_mha_dropout_train_eval():
    m = nn.MultiheadAttention(4, 2, dropout=0.5)
    x = fc.randn(3, 2, 4)
    m.eval()
    a = m(x, x, x)[0]
    b = m(x, x, x)[0]
    assert (a - b).abs().max().item() == 0.0
    m.train()
    assert tuple(m(x, x, x)[0].shape) == (3, 2, 4)


def test_mha_errors():
    with pytest.raises(fc.FlambeauError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    m = nn.MultiheadAttention(8, 2)
    x = fc.randn(4, 3, 8)
    with pytest.raises(fc.FlambeauError, match=r"The shape of the 2D attn_mask is \(4, 5\), but should be \(4, 4\)"):
        m(x, x, x, attn_mask=fc.zeros(4, 5))
    with pytest.raises(
        fc.FlambeauError, match=r"The shape of the 3D attn_mask is \(2, 4, 4\), but should be \(6, 4, 4\)"
    ):
        m(x, x, x, attn_mask=fc.zeros(2, 4, 4))
    with pytest.raises(fc.FlambeauError, match=r"expecting key_padding_mask shape of \(3, 4\), but got \(3, 5\)"):
        m(x, x, x, key_padding_mask=fc.zeros(3, 5, dtype=fc.bool))
    with pytest.raises(fc.FlambeauError, match="expecting embedding dimension of 8, but got 6"):
        m(fc.randn(4, 3, 6), x, x)
    with pytest.raises(fc.FlambeauError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(fc.FlambeauError, match="unbatched 2D or batched 3D"):
        m(fc.randn(8), x, x)
    with pytest.raises(TypeError, match="only bool and floating types of attn_mask"):
        m(x, x, x, attn_mask=fc.zeros(4, 4, dtype=fc.int64))


# ---- add_bias_kv, add_zero_attn and F.multi_head_attention_forward (static_k/static_v) ----


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias_kv,zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("kpm", [False, True])
def test_mha_bias_kv_and_zero_attn(dtype, bias_kv, zero_attn, need_weights, kpm):
    from nn_testing import TOLERANCES

    E, H, L, S, N = 8, 2, 4, 5, 3
    ours, theirs = _mha_pair(E, H, dtype, add_bias_kv=bias_kv, add_zero_attn=zero_attn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    (qo, qt), (ko, kt) = _leaf(torch.randn(L, N, E, dtype=dtype)), _leaf(torch.randn(S, N, E, dtype=dtype))
    mask = torch.zeros(N, S, dtype=torch.bool)
    mask[1, -2:] = True
    m = dict(key_padding_mask=mask) if kpm else {}
    yt, wt = theirs(qt, kt, kt, need_weights=need_weights, **m)
    yo, wo = ours(qo, ko, ko, need_weights=need_weights, **{k: from_torch(v) for k, v in m.items()})
    tol = TOLERANCES[dtype]
    assert_close(yo, yt, **tol)
    if need_weights:
        assert_close(wo, wt, **tol)
    g = torch.randn(yt.shape, dtype=dtype)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    their = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        assert_close(p.grad, their[n].grad, **tol)
    assert_close(qo.grad, qt.grad, **tol)
    assert_close(ko.grad, kt.grad, **tol)


def test_bias_kv_init_is_xavier_normal():
    m = nn.MultiheadAttention(64, 4, add_bias_kv=True)
    std = (2.0 / (64 + 64)) ** 0.5  # xavier_normal_ on (1, 1, 64): fan_in = fan_out = 64
    vals = m.bias_k.flatten().tolist() + m.bias_v.flatten().tolist()
    mean = sum(vals) / len(vals)
    sd = (sum((v - mean) ** 2 for v in vals) / len(vals)) ** 0.5
    assert 0.7 * std < sd < 1.3 * std


def test_functional_with_static_kv_matches_torch():
    E, H, L, S, N = 8, 2, 3, 4, 2
    x = torch.randn(L, N, E, dtype=torch.float64)
    w_in, b_in = torch.randn(3 * E, E, dtype=torch.float64), torch.randn(3 * E, dtype=torch.float64)
    w_out, b_out = torch.randn(E, E, dtype=torch.float64), torch.randn(E, dtype=torch.float64)
    sk, sv = torch.randn(N * H, S, E // H, dtype=torch.float64), torch.randn(N * H, S, E // H, dtype=torch.float64)
    args_t = (x, x, x, E, H, w_in, b_in, None, None, False, 0.0, w_out, b_out)
    yt, wt = torch.nn.functional.multi_head_attention_forward(*args_t, static_k=sk, static_v=sv)
    args_o = tuple(from_torch(a) if isinstance(a, torch.Tensor) else a for a in args_t)
    yo, wo = F.multi_head_attention_forward(*args_o, static_k=from_torch(sk), static_v=from_torch(sv))
    assert_close(yo, yt, rtol=1e-9, atol=1e-10)
    assert_close(wo, wt, rtol=1e-9, atol=1e-10)
    with pytest.raises(fc.FlambeauError, match=r"\[multi_head_attention_forward\] expecting static_k of shape"):
        F.multi_head_attention_forward(*args_o, static_k=from_torch(sk[:, :, :2]), static_v=from_torch(sv))
