"""The torch names flambeau._torch_names provides: the recurrent cell functions, norm_except_dim, orgqr, the
build queries and the removed functions, against PyTorch 2.13 (values, gradients, errors)."""

from __future__ import annotations

import os

import flambeau as fb
import numpy as np
import pytest
import torch

CELLS = {"lstm_cell": 4, "gru_cell": 3, "rnn_tanh_cell": 1, "rnn_relu_cell": 1}


def both(a: np.ndarray):
    return fb.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def close(x, t, tol=1e-5):
    np.testing.assert_allclose(np.array(x.tolist()), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.parametrize("bias", [True, False])
def test_cells_values_and_gradients(name, bias):
    rng = np.random.default_rng(7)
    n, i, h = 3, 4, 5
    g = CELLS[name] * h
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(n, i), (n, h), (n, h), (g, i), (g, h), (g,), (g,)]]
    ours, theirs = zip(*(both(a) for a in arrays), strict=True)

    def call(lib, t):
        x, h0, c0, w_ih, w_hh, b_ih, b_hh = t
        hx = (h0, c0) if name == "lstm_cell" else h0
        out = getattr(lib, name)(x, hx, w_ih, w_hh, *((b_ih, b_hh) if bias else ()))
        return out if isinstance(out, tuple) else (out,)

    got, expected = call(fb, ours), call(torch, theirs)
    for a, b in zip(got, expected, strict=True):
        close(a, b)
    sum(o.sum() * (k + 1) for k, o in enumerate(got)).backward()
    sum(o.sum() * (k + 1) for k, o in enumerate(expected)).backward()
    for a, b in zip(ours, theirs, strict=True):
        if b.grad is None:
            assert a.grad is None
        else:
            close(a.grad, b.grad, 1e-4)


def test_cells_errors():
    x, h = fb.zeros(3, 4), fb.zeros(3, 5)
    tx, th = torch.zeros(3, 4), torch.zeros(3, 5)
    for lib, a, b in ((fb, x, h), (torch, tx, th)):
        with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 4 expected 3"):
            lib.rnn_tanh_cell(a, b, lib.zeros(5, 3), lib.zeros(5, 5))
        with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 4, expected 5"):
            lib.rnn_tanh_cell(a, b[:, :4], lib.zeros(5, 4), lib.zeros(5, 5))
        with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states"):
            lib.lstm_cell(a, (b,), lib.zeros(20, 4), lib.zeros(20, 5))
    with pytest.raises(TypeError, match=r"\[gru_cell\] input must be a Tensor, got list"):
        fb.gru_cell([1.0], h, fb.zeros(15, 4), fb.zeros(15, 5))
    with pytest.raises(RuntimeError, match=r"\[gru_cell\] weights of shapes w_ih \(14, 4\)"):
        fb.gru_cell(x, h, fb.zeros(14, 4), fb.zeros(14, 5))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("p", [2, 1, 3])
def test_norm_except_dim(dim, p):
    a = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    x, t = both(a)
    y, u = fb.norm_except_dim(x, p, dim), torch.norm_except_dim(t, p, dim)
    assert tuple(y.shape) == tuple(u.shape)
    close(y, u)
    (y * fb.arange(1.0, y.numel() + 1).reshape(y.shape)).sum().backward()
    (u * torch.arange(1.0, u.numel() + 1).reshape(u.shape)).sum().backward()
    close(x.grad, t.grad, 1e-4)
    for lib, v in ((fb, x), (torch, t)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.norm_except_dim(v, 2, 3)
        with pytest.raises(TypeError, match="argument 'pow' \\(position 2\\) must be int, not float"):
            lib.norm_except_dim(v, 2.5, 0)


def test_orgqr_is_householder_product():
    a = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float64)
    tau = np.array([1.2, 0.3, 1.9])
    close(fb.orgqr(fb.tensor(a), fb.tensor(tau)), torch.orgqr(torch.tensor(a), torch.tensor(tau)))
    close(fb.tensor(a).orgqr(fb.tensor(tau)), torch.tensor(a).orgqr(torch.tensor(tau)))


def test_build_queries():
    assert fb.compiled_with_cxx11_abi() is torch.compiled_with_cxx11_abi() is True
    assert fb.is_vulkan_available() is torch.is_vulkan_available() is False
    assert fb.is_distributed(fb.ones(2)) is torch.is_distributed(torch.ones(2)) is False
    assert fb.ones(2).is_distributed() is torch.ones(2).is_distributed() is False
    for lib in (fb, torch):
        with pytest.raises(TypeError, match="must be Tensor, not list"):
            lib.is_distributed([1.0])


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.solve(lib.eye(2), lib.eye(2)),
        lambda lib: lib.eig(lib.eye(2), eigenvectors=True),
        lambda lib: lib.lstsq(lib.eye(2), lib.eye(2)),
        lambda lib: lib.symeig(lib.eye(2)),
        lambda lib: lib.eye(2).solve(lib.eye(2)),
        lambda lib: lib.eye(2).eig(),
        lambda lib: lib.eye(2).lstsq(lib.eye(2)),
        lambda lib: lib.eye(2).symeig(),
        lambda lib: lib.eye(2).reinforce(1.0),
    ],
)
def test_removed_functions_raise_torch_error(call):
    messages = []
    for lib in (fb, torch):
        with pytest.raises(RuntimeError) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_conv_tbc_top_level():
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(5, 2, 3), (3, 3, 4), (4,)])
    close(
        fb.conv_tbc(fb.tensor(x), fb.tensor(w), fb.tensor(b), 1),
        torch.conv_tbc(torch.tensor(x), torch.tensor(w), torch.tensor(b), 1),
    )


LAYERS = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


@pytest.mark.parametrize("name", list(LAYERS))
@pytest.mark.parametrize(
    ("bias", "layers", "bidirectional", "batch_first"), [(True, 1, False, False), (False, 2, True, True)]
)
def test_whole_layers_values_and_gradients(name, bias, layers, bidirectional, batch_first):
    rng = np.random.default_rng(11)
    seq, n, i, h = 5, 3, 4, 6
    d = 2 if bidirectional else 1
    g = LAYERS[name] * h
    shapes = []
    for layer in range(layers):
        for _ in range(d):
            shapes += [(g, i if layer == 0 else h * d), (g, h)] + ([(g,), (g,)] if bias else [])
    weights = [(rng.standard_normal(s) * 0.5).astype(np.float32) for s in shapes]
    x = rng.standard_normal((n, seq, i) if batch_first else (seq, n, i)).astype(np.float32)
    h0 = rng.standard_normal((layers * d, n, h)).astype(np.float32)

    def run(lib, make):
        params = [make(w) for w in weights]
        inp, state = make(x), make(h0)
        hx = [state, state * 0.5] if name == "lstm" else state
        out = getattr(lib, name)(inp, hx, params, bias, layers, 0.0, True, bidirectional, batch_first)
        sum(o.sum() * (k + 1) for k, o in enumerate(out)).backward()
        return out, [inp.grad, state.grad] + [p.grad for p in params]

    got, got_grads = run(fb, lambda a: fb.tensor(a, requires_grad=True))
    expected, expected_grads = run(torch, lambda a: torch.tensor(a, requires_grad=True))
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        close(a, b, 1e-4)
    for a, b in zip(got_grads, expected_grads, strict=True):
        close(a, b, 1e-3)


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_whole_layers_packed_form(name):
    rng = np.random.default_rng(2)
    g = LAYERS[name] * 5
    weights = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in [(g, 3), (g, 5), (g,), (g,)]]
    data = rng.standard_normal((6, 3)).astype(np.float32)  # batch sizes 3, 2, 1
    h0 = np.zeros((1, 3, 5), dtype=np.float32)
    outs = []
    for lib in (fb, torch):
        hx = [lib.tensor(h0), lib.tensor(h0)] if name == "lstm" else lib.tensor(h0)
        sizes = lib.tensor([3, 2, 1])
        outs.append(
            getattr(lib, name)(
                lib.tensor(data), sizes, hx, [lib.tensor(w) for w in weights], True, 1, 0.0, False, False
            )
        )
    for a, b in zip(*outs, strict=True):
        close(a, b, 1e-5)


def test_whole_layers_errors():
    x, h = fb.zeros(5, 3, 4), fb.zeros(1, 3, 6)
    with pytest.raises(RuntimeError, match=r"\[gru\] expected 4 weight tensors .* got 2"):
        fb.gru(x, h, [fb.zeros(18, 4), fb.zeros(18, 6)], True, 1, 0.0, False, False, False)
    with pytest.raises(TypeError, match=r"lstm\(\) takes 9 arguments, got 3"):
        fb.lstm(x, [h, h], [])


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "bfloat16", "uint8"])
def test_from_file_private_and_shared(tmp_path, dtype):
    path = str(tmp_path / "data.bin")
    np.arange(64, dtype=np.uint8).tofile(path)
    n = 32 // getattr(torch, dtype).itemsize
    got = fb.from_file(path, size=n, dtype=getattr(fb, dtype))
    expected = torch.from_file(path, size=n, dtype=getattr(torch, dtype))
    assert got.tolist() == expected.tolist() and str(got.dtype) == str(expected.dtype).replace("torch", "flambeau")
    got.zero_()  # a private mapping: the file is untouched
    assert np.fromfile(path, dtype=np.uint8).tolist() == list(range(64))
    shared = fb.from_file(path, shared=True, size=n, dtype=getattr(fb, dtype))
    shared.fill_(1)
    assert torch.from_file(path, size=n, dtype=getattr(torch, dtype)).tolist() == shared.tolist()


def test_from_file_sizes_and_errors(tmp_path):
    path = str(tmp_path / "data.bin")
    np.arange(10, dtype=np.float32).tofile(path)
    for lib in (fb, torch):
        assert lib.from_file(path, size=0).tolist() == []
        assert lib.from_file(path).tolist() == []
        with pytest.raises(RuntimeError, match=r"size <40> is smaller than the required mapping size <44>"):
            lib.from_file(path, size=11)
        with pytest.raises(RuntimeError, match=r"unable to open file <.*missing.bin> in read-only mode: No such file"):
            lib.from_file(str(tmp_path / "missing.bin"), size=3)
    grown = str(tmp_path / "grown.bin")
    assert fb.from_file(grown, shared=True, size=3).tolist() == [0.0, 0.0, 0.0]  # created
    assert os.path.getsize(grown) == 12
    fb.from_file(grown, shared=True, size=5)  # grown to the size asked for, as torch's
    assert os.path.getsize(grown) == 20
    with pytest.raises(RuntimeError, match=r"\[from_file\] makes strided tensors in cpu memory only"):
        fb.from_file(path, size=2, pin_memory=True)
    huge = str(tmp_path / "huge.bin")
    with pytest.raises(RuntimeError, match=r"\[from_file\] size 4611686018427387904 of .*is 18446744073709551616"):
        fb.from_file(huge, shared=True, size=2**62)
    assert not os.path.exists(huge)  # refused before the file is made


def test_get_autocast_gpu_dtype_warns_as_torch():
    for lib in (fb, torch):
        with pytest.warns(DeprecationWarning, match=r"torch.get_autocast_gpu_dtype\(\) is deprecated"):
            got = lib.get_autocast_gpu_dtype()
        assert str(got).split(".")[-1] == str(lib.get_autocast_dtype("cuda")).split(".")[-1] == "float16"


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "max", "min", "amax", "amin"])
@pytest.mark.parametrize("initial", [None, 2.5])
@pytest.mark.parametrize("form", ["lengths", "offsets"])
def test_segment_reduce_values_and_gradients(reduce, initial, form):
    # Ties (3, 3) and a zero (for prod's gradient), an empty segment, trailing dims.
    a = np.array([[1.0, 2], [3, 3], [3, 0.5], [0, 4], [5, -1], [6, 6]], dtype=np.float64)
    lengths = np.array([2, 0, 3, 1])
    kw = {}
    for lib in (fb, torch):
        lens = lib.tensor(lengths)
        kw[lib] = (
            {"lengths": lens}
            if form == "lengths"
            else {"offsets": lib.cat([lib.zeros(1, dtype=lens.dtype), lens.cumsum(0)])}
        )
    x, t = both(a)
    y = fb.segment_reduce(x, reduce, initial=initial, **kw[fb])
    u = torch.segment_reduce(t, reduce, initial=initial, **kw[torch])
    np.testing.assert_allclose(np.array(y.tolist()), u.detach().numpy(), rtol=1e-12)
    weights = np.arange(1.0, 9.0).reshape(4, 2)
    (y * fb.tensor(weights)).nan_to_num(0.0).sum().backward()
    (u * torch.tensor(weights)).nan_to_num(0.0).sum().backward()
    np.testing.assert_allclose(np.array(x.grad.tolist()), t.grad.numpy(), rtol=1e-12)


def test_segment_reduce_batched_lengths():
    a = np.arange(12.0).reshape(2, 6)
    lengths = np.array([[2, 4], [3, 3]])
    for reduce in ("sum", "max", "mean"):
        got = fb.segment_reduce(fb.tensor(a), reduce, lengths=fb.tensor(lengths), axis=1)
        expected = torch.segment_reduce(torch.tensor(a), reduce, lengths=torch.tensor(lengths), axis=-1)
        assert got.tolist() == expected.tolist()


def test_segment_reduce_errors():
    for lib in (fb, torch):
        d = lib.tensor([1.0, 2.0, 3.0])
        with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got foo"):
            lib.segment_reduce(d, "foo", lengths=lib.tensor([3]))
        with pytest.raises(RuntimeError, match="Either lengths or offsets must be defined"):
            lib.segment_reduce(d, "sum")
        with pytest.raises(RuntimeError, match="indices based reduction is not supported yet"):
            lib.segment_reduce(d, "sum", indices=lib.tensor([3]))
        with pytest.raises(RuntimeError, match="Expected all rows of lengths along axis to sum to"):
            lib.segment_reduce(d, "sum", lengths=lib.tensor([1, 1]))
        with pytest.raises(RuntimeError, match="Expected axis to be the last dimension of lengths but got 1"):
            lib.segment_reduce(lib.zeros(2, 3), "sum", lengths=lib.tensor([1, 1]), axis=1)


@pytest.mark.parametrize(("size", "shape"), [([2, 1, 4, 5], (2, 2, 3)), ([2, 1, 3, 4, 5], (2, 3, 4))])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_generator(size, shape, align_corners):
    theta = np.random.default_rng(4).standard_normal(shape)
    x, t = both(theta)
    y, u = fb.affine_grid_generator(x, size, align_corners), torch.affine_grid_generator(t, size, align_corners)
    close(y, u, 1e-12)
    y.sum().backward()
    u.sum().backward()
    close(x.grad, t.grad, 1e-12)
    for lib, th in ((fb, x), (torch, t)):
        with pytest.raises(RuntimeError, match="AffineGridGenerator needs 4d"):
            lib.affine_grid_generator(th, [2, 4, 5], False)
        with pytest.raises(TypeError):
            lib.affine_grid_generator(th, size)  # align_corners is required
