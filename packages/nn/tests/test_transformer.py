"""Transformer layers against PyTorch: same weights, outputs and gradients in train (dropout 0) and eval."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import pytest
import torch
from nn_testing import assert_close, copy_params, from_torch

TOL = {torch.float32: dict(rtol=2e-4, atol=2e-5), torch.float64: dict(rtol=1e-9, atol=1e-10)}
FB_DTYPE = {torch.float32: fc.float32, torch.float64: fc.float64}


def _randomize(m: torch.nn.Module) -> None:
    with torch.no_grad():  # non-trivial norms and biases
        for n, p in m.named_parameters():
            if "norm" in n or "bias" in n:
                p.normal_()


def _leaf(x: torch.Tensor):
    return from_torch(x).requires_grad_(True), x.detach().clone().requires_grad_(True)


def _check_grads(ours, theirs, pairs, tol):
    their = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        assert_close(p.grad, their[n].grad, **tol)
    for a, b in pairs:
        assert_close(a.grad, b.grad, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("masks", [None, "causal", "kpm"])
def test_encoder_layer(dtype, norm_first, batch_first, activation, mode, masks):
    E, H, FF, L, N = 8, 2, 16, 5, 3
    act_t = torch.nn.functional.silu if activation == "callable" else activation
    act_o = F.silu if activation == "callable" and hasattr(F, "silu") else (lambda x: x * fc.sigmoid(x))
    kw = dict(dim_feedforward=FF, dropout=0.0, norm_first=norm_first, batch_first=batch_first, layer_norm_eps=1e-6)
    theirs = torch.nn.TransformerEncoderLayer(E, H, activation=act_t, dtype=dtype, **kw)
    ours = nn.TransformerEncoderLayer(
        E, H, activation=act_o if activation == "callable" else activation, dtype=FB_DTYPE[dtype], **kw
    )
    _randomize(theirs)
    copy_params(ours, theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if mode == "eval":
        ours.eval()
        theirs.eval()
    x = torch.randn((N, L, E) if batch_first else (L, N, E), dtype=dtype)
    xo, xt = _leaf(x)
    mask = kpm = None
    if masks == "causal":
        mask = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=dtype)
    elif masks == "kpm":
        kpm = torch.zeros(N, L, dtype=torch.bool)
        kpm[1, -2:] = True
    conv = lambda m: from_torch(m) if m is not None else None  # noqa: E731
    yt = theirs(xt, src_mask=mask, src_key_padding_mask=kpm, is_causal=masks == "causal")
    yo = ours(xo, src_mask=conv(mask), src_key_padding_mask=conv(kpm), is_causal=masks == "causal")
    tol = TOL[dtype]
    assert_close(yo, yt, **tol)
    g = torch.randn(yt.shape, dtype=dtype)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    _check_grads(ours, theirs, [(xo, xt)], tol)


@pytest.mark.parametrize("with_norm", [False, True])
def test_encoder_stack(with_norm):
    E, H = 8, 4
    layer_t = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=12, dropout=0.0)
    enc_t = torch.nn.TransformerEncoder(
        layer_t, 3, norm=torch.nn.LayerNorm(E) if with_norm else None, enable_nested_tensor=False
    )
    _randomize(enc_t)
    layer_o = nn.TransformerEncoderLayer(E, H, dim_feedforward=12, dropout=0.0)
    enc_o = nn.TransformerEncoder(layer_o, 3, norm=nn.LayerNorm(E) if with_norm else None)
    assert list(enc_o.state_dict()) == list(enc_t.state_dict())
    copy_params(enc_o, enc_t)
    x = torch.randn(6, 2, E)
    xo, xt = _leaf(x)
    yo, yt = enc_o(xo), enc_t(xt)
    assert_close(yo, yt, **TOL[torch.float32])
    g = torch.randn(yt.shape)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    _check_grads(enc_o, enc_t, [(xo, xt)], TOL[torch.float32])
    # the copies are independent
    assert enc_o.layers[0].linear1.weight is not enc_o.layers[1].linear1.weight


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("masks", [False, True])
def test_decoder_layer(dtype, norm_first, batch_first, mode, masks):
    E, H, FF, L, S, N = 8, 2, 16, 4, 6, 3
    kw = dict(dim_feedforward=FF, dropout=0.0, norm_first=norm_first, batch_first=batch_first, activation="gelu")
    theirs = torch.nn.TransformerDecoderLayer(E, H, dtype=dtype, **kw)
    ours = nn.TransformerDecoderLayer(E, H, dtype=FB_DTYPE[dtype], **kw)
    _randomize(theirs)
    copy_params(ours, theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if mode == "eval":
        ours.eval()
        theirs.eval()
    tgt = torch.randn((N, L, E) if batch_first else (L, N, E), dtype=dtype)
    mem = torch.randn((N, S, E) if batch_first else (S, N, E), dtype=dtype)
    (to, tt), (mo, mt) = _leaf(tgt), _leaf(mem)
    kwargs_t: dict = {}
    if masks:
        kwargs_t = dict(
            tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=dtype),
            memory_key_padding_mask=torch.tensor([[False] * (S - 1) + [True]] * N),
            tgt_is_causal=True,
        )
    kwargs_o = {k: (from_torch(v) if isinstance(v, torch.Tensor) else v) for k, v in kwargs_t.items()}
    yt = theirs(tt, mt, **kwargs_t)
    yo = ours(to, mo, **kwargs_o)
    tol = TOL[dtype]
    assert_close(yo, yt, **tol)
    g = torch.randn(yt.shape, dtype=dtype)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    _check_grads(ours, theirs, [(to, tt), (mo, mt)], tol)


def test_transformer_errors():
    with pytest.raises(fc.FlambeauError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(fc.FlambeauError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerEncoderLayer(8, 3)
    with pytest.raises(fc.FlambeauError, match="num_layers"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), -1)


# ---- the full encoder-decoder Transformer and the decoder stack ----


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", [None, "causal", "kpm"])
def test_transformer(dtype, norm_first, batch_first, masks):
    E, H, FF, S, T, N = 8, 2, 16, 5, 4, 3
    kw = dict(
        d_model=E,
        nhead=H,
        num_encoder_layers=2,
        num_decoder_layers=2,
        dim_feedforward=FF,
        dropout=0.0,
        norm_first=norm_first,
        batch_first=batch_first,
    )
    theirs = torch.nn.Transformer(dtype=dtype, **kw)
    ours = nn.Transformer(dtype=FB_DTYPE[dtype], **kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _randomize(theirs)
    copy_params(ours, theirs)
    src = torch.randn((N, S, E) if batch_first else (S, N, E), dtype=dtype)
    tgt = torch.randn((N, T, E) if batch_first else (T, N, E), dtype=dtype)
    (so, st), (to, tt) = _leaf(src), _leaf(tgt)
    margs: dict = {}
    if masks == "causal":
        margs["tgt_mask"] = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=dtype)
    elif masks == "kpm":
        kpm = torch.zeros(N, S, dtype=torch.bool)
        kpm[0, -2:] = True
        margs["src_key_padding_mask"] = kpm
        margs["memory_key_padding_mask"] = kpm
        tkpm = torch.zeros(N, T, dtype=torch.bool)
        tkpm[2, -1] = True
        margs["tgt_key_padding_mask"] = tkpm
    yt = theirs(st, tt, **margs)
    yo = ours(so, to, **{k: from_torch(v) for k, v in margs.items()})
    tol = TOL[dtype]
    assert_close(yo, yt, **tol)
    g = torch.randn(yt.shape, dtype=dtype)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    _check_grads(ours, theirs, [(so, st), (to, tt)], tol)


def test_decoder_stack_matches_torch():
    layer_t = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    theirs = torch.nn.TransformerDecoder(layer_t, 3, norm=torch.nn.LayerNorm(8))
    ours = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 3, norm=nn.LayerNorm(8))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _randomize(theirs)
    copy_params(ours, theirs)
    tgt, mem = torch.randn(4, 2, 8), torch.randn(6, 2, 8)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert_close(
        ours(from_torch(tgt), from_torch(mem), tgt_mask=from_torch(mask)),
        theirs(tgt, mem, tgt_mask=mask),
        **TOL[torch.float32],
    )


def test_transformer_init_and_causal_mask():
    assert_close(
        nn.Transformer.generate_square_subsequent_mask(4), torch.nn.Transformer.generate_square_subsequent_mask(4)
    )
    model = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64)
    w = model.encoder.layers[0].linear1.weight  # xavier_uniform_: U(+-sqrt(6 / (fan_in + fan_out)))
    bound = (6 / (16 + 64)) ** 0.5
    vals = w.abs().max().item()
    assert 0.9 * bound < vals <= bound
    assert model.encoder.layers[0].linear1.bias.abs().max().item() <= 0.25  # biases keep Linear's init


def test_encoder_decoder_errors():
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(fc.FlambeauError, match=r"\[Transformer\] the batch number of src and tgt must be equal"):
        model(fc.randn(5, 2, 8), fc.randn(4, 3, 8))
    with pytest.raises(fc.FlambeauError, match=r"\[Transformer\] the feature number of src and tgt must be equal"):
        model(fc.randn(5, 2, 8), fc.randn(4, 2, 6))
    with pytest.raises(fc.FlambeauError, match=r"\[TransformerDecoder\] num_layers must be a non-negative int"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2), -1)
