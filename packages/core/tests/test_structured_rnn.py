"""Note [Structured kernels] for the recurrent layer primitives _rnn_layer (4 results) and _rnn_layer_backward
(5 results): their meta step (src/meta/rnn_rules.cpp) checks the arguments and gives every result's shape and
dtype, and one out kernel computes, on the cpu and the simulated device (whose out kernel takes any number of
results); the meta device runs only the meta step. Values against PyTorch 2.13's recurrent layers (weights
copied; torch.autograd for the gradients), the kernel trace, empty sequences, and the errors (type and
message) on every device."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from flambeau_core.testing import device_params, devices, kernel_trace

RNG = np.random.default_rng(11)
KINDS = {0: ("RNN", "tanh"), 1: ("RNN", "relu"), 2: ("LSTM", None), 3: ("GRU", None)}
GATES = {0: 1, 1: 1, 2: 4, 3: 3}
WS = {0: 0, 1: 0, 2: 6, 3: 4}


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    if t.requires_grad:  # (detach is flambeau-autograd's)
        t = t.detach()
    return np.array(memoryview(t.cpu().contiguous()))


def tol(dtype) -> dict:
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-10, "atol": 1e-12}


def to_fc(t: torch.Tensor, device: str = "cpu") -> fc.Tensor:
    return fc.tensor(t.detach().numpy().copy()).to(device)


def torch_layer(mode: int, dtype, IN: int, H: int, bias: bool = True) -> torch.nn.Module:
    kind, nl = KINDS[mode]
    kw = {"nonlinearity": nl} if nl else {}
    torch.manual_seed(mode)
    return getattr(torch.nn, kind)(IN, H, bidirectional=True, bias=bias, dtype=dtype, **kw)


def layer_case(mode, dtype, lengths, reverse, bias, device):
    """One direction of torch's bidirectional layer and the matching _rnn_layer arguments on `device`."""
    T, B, IN, H = 5, 4, 3, 6
    m = torch_layer(mode, dtype, IN, H, bias)
    sfx = "_reverse" if reverse else ""
    w_ih, w_hh = getattr(m, "weight_ih_l0" + sfx), getattr(m, "weight_hh_l0" + sfx)
    x = torch.randn(T, B, IN, dtype=dtype, generator=torch.Generator().manual_seed(3))
    h0 = torch.randn(2, B, H, dtype=dtype, generator=torch.Generator().manual_seed(4)).requires_grad_(True)
    c0 = torch.randn(2, B, H, dtype=dtype, generator=torch.Generator().manual_seed(5)).requires_grad_(True)
    lstm = mode == 2
    inp = x if lengths is None else torch.nn.utils.rnn.pack_padded_sequence(x, lengths)
    y, st = m(inp, (h0, c0) if lstm else h0)
    batch_sizes = [B] * T if lengths is None else inp.batch_sizes.tolist()
    xin = (x if lengths is None else inp.data).reshape(-1, IN)
    ig = xin @ w_ih.T + (getattr(m, "bias_ih_l0" + sfx) if bias else 0)
    d = 1 if reverse else 0
    empty = fc.empty(0, dtype=fc.float32 if dtype == torch.float32 else fc.float64, device=device)
    args = (
        to_fc(ig, device),
        to_fc(w_hh, device),
        to_fc(getattr(m, "bias_hh_l0" + sfx), device) if bias else empty,
        to_fc(h0[d], device),
        to_fc(c0[d], device) if lstm else empty,
        mode,
        batch_sizes,
        reverse,
    )
    out = (y if lengths is None else y.data).reshape(-1, 2 * H)[:, d * H : (d + 1) * H]
    hn = st[0] if lstm else st
    expected = (out, hn[d], st[1][d] if lstm else None)
    # What torch differentiates: igates' gradient reaches w_ih (g^T @ x) and b_ih (column sums).
    torch_inputs = {
        "w_ih": w_ih,
        "b_ih": getattr(m, "bias_ih_l0" + sfx) if bias else None,
        "w_hh": w_hh,
        "b_hh": getattr(m, "bias_hh_l0" + sfx) if bias else None,
        "h0": h0,
        "c0": c0 if lstm else None,
        "x": xin.detach(),
    }
    return args, expected, torch_inputs, d


def layer_params(fn):
    """Every mode, float32 and float64, padded and packed, both directions, on the cpu and the sim."""
    for name, values in (
        ("reverse", [False, True]),
        ("lengths", [None, [5, 3, 3, 1]]),
        ("dtype", [torch.float32, torch.float64]),
        ("mode", [0, 1, 2, 3]),
    ):
        fn = pytest.mark.parametrize(name, values)(fn)
    return devices(types=("cpu", "sim"))(fn)


@layer_params
def test_rnn_layer_matches_torch(mode, dtype, lengths, reverse, device):
    args, (out_t, hy_t, cy_t), _, _ = layer_case(mode, dtype, lengths, reverse, True, device)
    out, hy, cy, ws = _C._rnn_layer(*args)
    N, H = out_t.shape
    B = hy_t.shape[0]
    for t in (out, hy, cy, ws):
        assert t.device.type == device and t.dtype == args[0].dtype and t.is_contiguous()
    assert tuple(cy.shape) == ((B, H) if mode == 2 else (0, H))
    assert tuple(ws.shape) == (N, WS[mode] * H)
    np.testing.assert_allclose(npy(out), npy(out_t), **tol(dtype))
    np.testing.assert_allclose(npy(hy), npy(hy_t), **tol(dtype))
    if mode == 2:
        np.testing.assert_allclose(npy(cy), npy(cy_t), **tol(dtype))


@layer_params
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_layer_backward_matches_torch_autograd(mode, dtype, lengths, reverse, bias, device):
    """_rnn_layer_backward (reached through autograd: it has no Python binding) gives all five gradients."""
    fa = pytest.importorskip("flambeau_autograd", reason="the backward is reached through flambeau-autograd")
    args, (out_t, hy_t, cy_t), torch_inputs, d = layer_case(mode, dtype, lengths, reverse, bias, device)
    leaves = [a.detach().requires_grad_(True) if isinstance(a, fc.Tensor) and a.numel() else a for a in args]
    out, hy, cy, _ = _C._rnn_layer(*leaves)
    g_out = RNG.standard_normal(tuple(out.shape))
    g_hy = RNG.standard_normal(tuple(hy.shape))
    g_cy = RNG.standard_normal(tuple(cy.shape))
    loss = (out * fc.tensor(g_out, dtype=out.dtype).to(device)).sum() + (
        hy * fc.tensor(g_hy, dtype=out.dtype).to(device)
    ).sum()
    loss_t = (out_t * torch.from_numpy(g_out).to(dtype)).sum() + (hy_t * torch.from_numpy(g_hy).to(dtype)).sum()
    if mode == 2:
        loss = loss + (cy * fc.tensor(g_cy, dtype=out.dtype).to(device)).sum()
        loss_t = loss_t + (cy_t * torch.from_numpy(g_cy).to(dtype)).sum()
    names = [n for n in ("w_ih", "b_ih", "w_hh", "b_hh", "h0", "c0") if torch_inputs[n] is not None]
    expected = dict(zip(names, torch.autograd.grad(loss_t, [torch_inputs[n] for n in names]), strict=True))
    wanted = [i for i in range(5) if isinstance(leaves[i], fc.Tensor) and leaves[i].requires_grad]
    got = dict(zip(wanted, fa.grad(loss, [leaves[i] for i in wanted]), strict=True))
    assert sorted(got) == ([0, 1, 2, 3] if bias else [0, 1, 3]) + ([4] if mode == 2 else [])
    for g in got.values():
        assert g.device.type == device and g.dtype == args[0].dtype
    g_ig = torch.from_numpy(npy(got[0]))
    np.testing.assert_allclose(npy(g_ig.T @ torch_inputs["x"]), npy(expected["w_ih"]), **tol(dtype))
    np.testing.assert_allclose(npy(got[1]), npy(expected["w_hh"]), **tol(dtype))
    if bias:
        np.testing.assert_allclose(npy(g_ig.sum(0)), npy(expected["b_ih"]), **tol(dtype))
        np.testing.assert_allclose(npy(got[2]), npy(expected["b_hh"]), **tol(dtype))
    np.testing.assert_allclose(npy(got[3]), npy(expected["h0"][d]), **tol(dtype))
    if mode == 2:
        np.testing.assert_allclose(npy(got[4]), npy(expected["c0"][d]), **tol(dtype))


@pytest.mark.parametrize("mode", [0, 2, 3])
def test_sim_results_are_the_cpu_bits(mode):
    """The simulated device runs the same CPU out kernels (the 4- and 5-result ones) on its memory."""
    fa = pytest.importorskip("flambeau_autograd", reason="the backward is reached through flambeau-autograd")
    results = {}
    for device in ("cpu", "sim"):
        args, *_ = layer_case(mode, torch.float32, [5, 3, 3, 1], True, True, device)
        leaves = [a.detach().requires_grad_(True) if isinstance(a, fc.Tensor) and a.numel() else a for a in args]
        out, hy, cy, ws = _C._rnn_layer(*leaves)
        loss = out.sum() + (hy * hy).sum() + (cy * 0.5).sum()
        grads = fa.grad(loss, [t for t in leaves[:5] if isinstance(t, fc.Tensor) and t.requires_grad])
        results[device] = [npy(t) for t in (out, hy, cy, ws, *grads)]
    for a, b in zip(results["cpu"], results["sim"], strict=True):
        assert a.shape == b.shape and a.tobytes() == b.tobytes()


def test_kernel_trace_shows_each_ops_own_kernel_and_no_copy():
    fa = pytest.importorskip("flambeau_autograd", reason="the backward is reached through flambeau-autograd")
    args, *_ = layer_case(2, torch.float32, None, False, True, "cpu")
    leaves = [a.detach().requires_grad_(True) if isinstance(a, fc.Tensor) else a for a in args]
    with kernel_trace() as fwd:
        out, hy, cy, _ = _C._rnn_layer(*args)
    assert [list(r) for r in fwd if r[0] in ("_rnn_layer", "copy_", "empty")] == [["_rnn_layer", "cpu", "own"]]
    out, hy, cy, _ = _C._rnn_layer(*leaves)
    loss = out.sum() + hy.sum() + cy.sum()
    with kernel_trace() as bwd:
        fa.grad(loss, leaves[:5])
    # (the seed gradients of the sums are the other rows: empty, fill_, expand, unsqueeze)
    assert [list(r) for r in bwd if r[0] in ("_rnn_layer_backward", "copy_", "zeros")] == [
        ["_rnn_layer_backward", "cpu", "own"]
    ]


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("reverse", [False, True])
def test_empty_sequence_returns_the_initial_state(mode, reverse):
    """No steps (batch_sizes empty): no output rows, hy = hx and cy = cx (the recurrence's definition)."""
    H, B = 3, 2
    GH = GATES[mode] * H
    hx = fc.tensor(RNG.standard_normal((B, H)))
    cx = fc.tensor(RNG.standard_normal((B, H))) if mode == 2 else fc.empty(0, dtype=fc.float64)
    out, hy, cy, ws = _C._rnn_layer(
        fc.empty(0, GH, dtype=fc.float64),
        fc.zeros(GH, H, dtype=fc.float64),
        fc.empty(0, dtype=fc.float64),
        hx,
        cx,
        mode,
        [],
        reverse,
    )
    assert tuple(out.shape) == (0, H) and tuple(ws.shape) == (0, WS[mode] * H)
    assert npy(hy).tobytes() == npy(hx).tobytes()
    if mode == 2:
        assert npy(cy).tobytes() == npy(cx).tobytes()
    else:
        assert tuple(cy.shape) == (0, H)


def test_strided_inputs_give_the_contiguous_inputs_results():
    args, *_ = layer_case(2, torch.float64, [5, 3, 3, 1], False, True, "cpu")
    ig, w, b, hx, cx = args[:5]
    strided = [t.t().contiguous().t() for t in (ig, w, hx, cx)]
    assert not strided[0].is_contiguous()
    got = _C._rnn_layer(strided[0], strided[1], b, strided[2], strided[3], *args[5:])
    for a, e in zip(got, _C._rnn_layer(*args), strict=True):
        assert npy(a).tobytes() == npy(e).tobytes()


# ---- the meta device ----


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("bias", [True, False])
def test_meta_device_gives_every_results_shape_and_dtype(mode, bias):
    H, B, bs = 5, 3, [3, 3, 2, 1]
    N, GH = sum(bs), GATES[mode] * H
    e = fc.empty(0, device="meta")
    args = (
        fc.empty(N, GH, device="meta"),
        fc.empty(GH, H, device="meta"),
        fc.empty(GH, device="meta") if bias else e,
        fc.empty(B, H, device="meta"),
        fc.empty(B, H, device="meta") if mode == 2 else e,
        mode,
        bs,
    )
    res = _C._rnn_layer(*args)
    want = [(N, H), (B, H), (B if mode == 2 else 0, H), (N, WS[mode] * H)]
    assert [tuple(t.shape) for t in res] == want
    assert all(t.device.type == "meta" and t.dtype == fc.float32 for t in res)
    fa = pytest.importorskip("flambeau_autograd", reason="the backward is reached through flambeau-autograd")
    leaves = [a.requires_grad_(True) if isinstance(a, fc.Tensor) and a.numel() else a for a in args]
    out, hy, cy, _ = _C._rnn_layer(*leaves)
    grads = fa.grad(out.sum() + hy.sum(), [t for t in leaves[:5] if isinstance(t, fc.Tensor) and t.requires_grad])
    assert [tuple(g.shape) for g in grads] == [
        tuple(t.shape) for t in leaves[:5] if isinstance(t, fc.Tensor) and t.requires_grad
    ]
    assert all(g.device.type == "meta" for g in grads)


# ---- errors: the meta step's, with the CPU kernel's messages, on every device ----

E = fc.FlambeauError
ERRORS = [
    # (description, exception, message, igates, w_hh, b_hh, hx, cx, mode, batch_sizes)
    (
        "mode",
        E,
        r"mode must be 0 \(RNN_TANH\), 1 \(RNN_RELU\), 2 \(LSTM\) or 3 \(GRU\), got 7",
        (4, 8),
        (8, 2),
        (0,),
        (2, 2),
        (0,),
        7,
        [2, 2],
    ),
    (
        "dtype",
        TypeError,
        r"expected a float32 or float64 input, got dtype int64",
        ((4, 8), fc.int64),
        (8, 2),
        (0,),
        (2, 2),
        (0,),
        2,
        [2, 2],
    ),
    (
        "mixed dtypes",
        TypeError,
        r"expected all tensors to have dtype float32, got float64",
        (4, 8),
        ((8, 2), fc.float64),
        (0,),
        (2, 2),
        (2, 2),
        2,
        [2, 2],
    ),
    ("w_hh dims", E, r"w_hh must be 2-D, got shape \(8,\)", (4, 8), (8,), (0,), (2, 2), (2, 2), 2, [2, 2]),
    (
        "w_hh rows",
        E,
        r"GRU expects w_hh of shape \(6, 2\), got \(8, 2\)",
        (4, 6),
        (8, 2),
        (0,),
        (2, 2),
        (0,),
        3,
        [2, 2],
    ),
    ("b_hh", E, r"expected b_hh of shape \(8\) or empty, got \(7,\)", (4, 8), (8, 2), (7,), (2, 2), (2, 2), 2, [2, 2]),
    ("igates", E, r"expected igates of shape \(N, 8\), got \(4, 7\)", (4, 7), (8, 2), (0,), (2, 2), (2, 2), 2, [2, 2]),
    ("hx", E, r"expected hx of shape \(B, 2\), got \(2, 3\)", (4, 8), (8, 2), (0,), (2, 3), (2, 2), 2, [2, 2]),
    ("cx", E, r"expected cx of shape \(2, 2\), got \(0,\)", (4, 8), (8, 2), (0,), (2, 2), (0,), 2, [2, 2]),
    (
        "increasing",
        E,
        r"batch_sizes must be positive, non-increasing and at most the batch size 2, got 3 at step 1",
        (5, 8),
        (8, 2),
        (0,),
        (2, 2),
        (2, 2),
        2,
        [2, 3],
    ),
    (
        "zero",
        E,
        r"batch_sizes must be positive, non-increasing and at most the batch size 2, got 0 at step 1",
        (2, 8),
        (8, 2),
        (0,),
        (2, 2),
        (2, 2),
        2,
        [2, 0],
    ),
    (
        "first",
        E,
        r"batch_sizes\[0\] = 1 does not match the batch size of hx, 2",
        (2, 8),
        (8, 2),
        (0,),
        (2, 2),
        (2, 2),
        2,
        [1, 1],
    ),
    ("rows", E, r"igates has 5 rows but batch_sizes sum to 6", (5, 8), (8, 2), (0,), (3, 2), (3, 2), 2, [3, 3]),
]


def _make(spec, device):
    shape, dtype = spec if isinstance(spec[0], tuple) else (spec, fc.float32)
    return fc.zeros(*shape, dtype=dtype, device=device)


@pytest.mark.parametrize("device", [*device_params(("cpu", "sim")), "meta"])
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_name_the_op_with_the_kernels_messages(case, device):
    """The meta step raises at the call on every device, before anything is allocated or run."""
    _, exc, msg, *tensors, mode, bs = case
    args = [_make(s, device) for s in tensors]
    with pytest.raises(exc, match=r"^\[_rnn_layer\] " + msg):
        _C._rnn_layer(*args, mode, bs)


def test_error_order_is_the_kernels():
    """Several wrong arguments: the first check of the kernel's order wins (mode, then dtype, then shapes)."""
    with pytest.raises(E, match=r"\[_rnn_layer\] mode must be"):
        _C._rnn_layer(fc.zeros(4, 8, dtype=fc.int32), fc.zeros(3), fc.zeros(5), fc.zeros(1), fc.empty(0), 9, [0])
    with pytest.raises(TypeError, match=r"\[_rnn_layer\] expected a float32 or float64 input, got dtype float16"):
        _C._rnn_layer(fc.zeros(4, 8, dtype=fc.float16), fc.zeros(3), fc.zeros(5), fc.zeros(1), fc.empty(0), 2, [0])
