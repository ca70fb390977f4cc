"""fb.onnx.export of attention: F.scaled_dot_product_attention (no mask, a bool or float attn_mask, is_causal),
nn.MultiheadAttention and nn.TransformerEncoderLayer, as flambeau decomposes them (matmul, softmax, where,
reshapes whose sizes follow the batch and the sequence length); checked by ONNX Runtime at other batch sizes
and sequence lengths against flambeau's forward and torch's (same weights)."""

import flambeau as fb
import pytest
import torch
from onnx_testing import assert_onnx_matches, export_checked, torch_twin

nn = fb.nn


class Attention(nn.Module):
    def __init__(self, lib, mask):
        super().__init__()
        self.lib, self.mask = lib, mask

    def forward(self, q, k, v):
        F = self.lib.nn.functional
        if self.mask == "causal":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        if self.mask == "bool":  # keys whose first feature is negative take no part
            return F.scaled_dot_product_attention(q, k, v, attn_mask=(k[..., 0] > -1.0).unsqueeze(-2))
        if self.mask == "float":
            bias = q @ k.transpose(-2, -1) * 0.5
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3)
        return F.scaled_dot_product_attention(q, k, v)


class TorchAttention(torch.nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.inner = Attention(torch, mask)

    def forward(self, q, k, v):
        return self.inner.forward(q, k, v)


@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
def test_scaled_dot_product_attention_with_dynamic_batch_and_length(mask):
    fb.manual_seed(40)
    model = Attention(fb, mask)
    names = ["q", "k", "v"]
    dynamic = {n: {0: "batch", 2: "seq"} for n in names}
    example = [fb.randn(2, 3, 4, 8) for _ in names]
    data = export_checked(model, tuple(example), names, dynamic)
    for n, steps in ((3, 6), (1, 1), (2, 4)):
        inputs = [fb.randn(n, 3, steps, 8) for _ in names]
        assert_onnx_matches(data, names, model, inputs, TorchAttention(mask))


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_agrees_with_torch(batch_first):
    fb.manual_seed(41)
    # 4 heads and a batch of 4: sizes that are equal in the example must stay apart in the file.
    model = nn.MultiheadAttention(16, 4, batch_first=batch_first)
    reference = torch_twin(model, torch.nn.MultiheadAttention(16, 4, batch_first=batch_first))
    seq, batch = (1, 0) if batch_first else (0, 1)

    def shape(steps, n):
        return (n, steps, 16) if batch_first else (steps, n, 16)

    dynamic = {"x": {seq: "seq", batch: "batch"}, "output_0": {seq: "seq", batch: "batch"}}
    dynamic["output_1"] = {0: "batch", 1: "seq", 2: "seq"}

    class SelfAttention(nn.Module):
        def __init__(self, mha):
            super().__init__()
            self.mha = mha

        def forward(self, x):
            return self.mha(x, x, x)

    wrapped = SelfAttention(model)
    data = export_checked(wrapped, (fb.randn(*shape(5, 4)),), ["x"], dynamic)

    class TorchSelfAttention(torch.nn.Module):
        def forward(self, x):
            return reference(x, x, x)

    for steps, n in ((7, 2), (3, 4), (2, 1)):
        assert_onnx_matches(data, ["x"], wrapped, [fb.randn(*shape(steps, n))], TorchSelfAttention())


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_agrees_with_torch(norm_first):
    fb.manual_seed(42)
    kwargs = dict(d_model=16, nhead=2, dim_feedforward=32, batch_first=True, norm_first=norm_first, activation="gelu")
    model = nn.TransformerEncoderLayer(**kwargs)
    reference = torch_twin(model, torch.nn.TransformerEncoderLayer(**kwargs))
    data = export_checked(model, (fb.randn(2, 5, 16),), ["x"], {"x": {0: "batch", 1: "seq"}})
    for n, steps in ((3, 9), (1, 2)):
        assert_onnx_matches(data, ["x"], model, [fb.randn(n, steps, 16)], reference, atol=1e-4)


def test_multihead_attention_with_a_key_padding_mask_and_a_causal_mask():
    fb.manual_seed(43)
    model = nn.MultiheadAttention(8, 2, batch_first=True)
    reference = torch_twin(model, torch.nn.MultiheadAttention(8, 2, batch_first=True))

    def program(lib, mha, x, padding):
        steps = x.shape[1]
        causal = lib.ones(steps, steps, dtype=lib.bool).triu(1)  # a factory of the length, then triu
        return mha(x, x, x, key_padding_mask=padding, attn_mask=causal, need_weights=False)[0]

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = model

        def forward(self, x, padding):
            return program(fb, self.mha, x, padding)

    class TorchMasked(torch.nn.Module):
        def forward(self, x, padding):
            return program(torch, reference, x, padding)

    def inputs(n, steps):
        padding = fb.zeros(n, steps, dtype=fb.bool)
        padding[:, steps - 1 :] = True  # the last key is padding (the first query still sees itself)
        return [fb.randn(n, steps, 8), padding]

    dynamic = {"x": {0: "batch", 1: "seq"}, "padding": {0: "batch", 1: "seq"}}
    data = export_checked(Masked(), tuple(inputs(3, 4)), ["x", "padding"], dynamic)
    for n, steps in ((2, 6), (1, 3)):
        assert_onnx_matches(data, ["x", "padding"], Masked(), inputs(n, steps), TorchMasked())
    with pytest.raises(fb.onnx.UnsupportedOperatorError, match=r"'triu' to ONNX opset version 13 .* Trilu needs"):
        fb.onnx.export(
            Masked(), tuple(inputs(3, 4)), input_names=["x", "padding"], dynamic_axes=dynamic, opset_version=13
        )


def test_transformer_encoder_with_a_causal_mask_of_the_length_and_a_padding_mask():
    # generate_square_subsequent_mask(x.size(1)) is made in forward from the length, and the encoder compares
    # it with the causal mask and reads the answer (.item()): a computation on sizes only, folded.
    fb.manual_seed(44)
    layer = dict(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), num_layers=2, enable_nested_tensor=False)
    reference = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(**layer), num_layers=2, enable_nested_tensor=False
    )
    torch_twin(model, reference)

    def program(lib, encoder, x, padding):
        causal = lib.nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return encoder(x, mask=causal, src_key_padding_mask=padding)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = model

        def forward(self, x, padding):
            return program(fb, self.encoder, x, padding)

    class TorchEncoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = reference

        def forward(self, x, padding):
            return program(torch, self.encoder, x, padding.float().masked_fill(padding, float("-inf")))

    def inputs(n, steps):
        padding = fb.zeros(n, steps, dtype=fb.bool)
        padding[:, steps - 1 :] = True
        return [fb.randn(n, steps, 16), padding]

    dynamic = {"x": {0: "batch", 1: "seq"}, "padding": {0: "batch", 1: "seq"}}
    data = export_checked(Encoder(), tuple(inputs(2, 5)), ["x", "padding"], dynamic)
    for n, steps in ((3, 7), (1, 2)):
        assert_onnx_matches(data, ["x", "padding"], Encoder(), inputs(n, steps), TorchEncoder(), atol=1e-4)
