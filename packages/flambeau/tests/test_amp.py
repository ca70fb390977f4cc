"""fb.amp against torch.amp on the CPU: GradScaler on the same sequence of gradients (scale, unscale_,
skipped steps, growth and backoff, state dicts, enabled=False), and training under bfloat16 autocast
(an MLP and the benchmark CNNs, LeNet-5 and ResNet-8: losses close to torch's, float32 gradients through
the casts, the weight cache)."""

from __future__ import annotations

import math

import flambeau as fb
import flambeau_core
import numpy as np
import pytest
import torch


def _params(seed: int = 0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    return fb.nn.Parameter(fb.tensor(w)), torch.nn.Parameter(torch.tensor(w))


# Gradient multipliers per step: some steps carry an inf or a NaN (skipped, the scale backs off).
STEPS = [1.0, 2.0, math.inf, 0.5, 1.0, 1.0, math.nan, 1.0, 3.0, 1.0, 1.0, 1.0, 1.0]


def _run_scaler(framework, make_scaler, p, steps, unscale_first=False):
    opt = framework.optim.SGD([p], lr=0.1)
    scaler = make_scaler()
    history = []
    for i, factor in enumerate(steps):
        opt.zero_grad()
        x = framework.arange(12, dtype=framework.float32).reshape(3, 4) / 7.0 - 0.5
        loss = (p * x).sum() * factor if not math.isnan(factor) else (p * x).sum() * float("nan")
        scaler.scale(loss).backward()
        if unscale_first and i % 2 == 0:
            scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), scaler._get_growth_tracker(), p.detach().numpy().copy()))
    return history, scaler


@pytest.mark.parametrize("unscale_first", [False, True])
def test_grad_scaler_matches_torch(unscale_first):
    fp, tp = _params()
    kw = dict(init_scale=2.0**10, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    ours, fs = _run_scaler(fb, lambda: fb.amp.GradScaler("cpu", **kw), fp, STEPS, unscale_first)
    theirs, ts = _run_scaler(torch, lambda: torch.amp.GradScaler("cpu", **kw), tp, STEPS, unscale_first)
    for (s1, g1, p1), (s2, g2, p2) in zip(ours, theirs, strict=True):
        assert s1 == s2 and g1 == g2
        np.testing.assert_allclose(p1, p2, rtol=1e-6, atol=1e-7)
    assert fs.state_dict() == ts.state_dict()


def test_grad_scaler_state_dict_round_trip():
    fp, tp = _params()
    ours, fs = _run_scaler(fb, lambda: fb.amp.GradScaler("cpu", growth_interval=2), fp, STEPS[:5])
    theirs, ts = _run_scaler(torch, lambda: torch.amp.GradScaler("cpu", growth_interval=2), tp, STEPS[:5])
    state = fs.state_dict()
    assert state == ts.state_dict()
    assert set(state) == {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
    restored = fb.amp.GradScaler("cpu")
    restored.load_state_dict(state)
    assert restored.state_dict() == state
    # Continuing from the restored state gives what continuing the original does.
    fp2, _ = _params()
    with fb.no_grad():
        fp2.copy_(fp)
    more_a, _ = _run_scaler(fb, lambda: restored, fp2, STEPS[5:])
    more_b, _ = _run_scaler(fb, lambda: fs, fp, STEPS[5:])
    assert [h[:2] for h in more_a] == [h[:2] for h in more_b]


def test_grad_scaler_disabled_is_a_pass_through():
    fp, _ = _params()
    opt = fb.optim.SGD([fp], lr=0.1)
    scaler = fb.amp.GradScaler("cpu", enabled=False)
    loss = fp.sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    before = fp.detach().numpy().copy()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(fp.detach().numpy(), before - 0.1, rtol=1e-6)
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()
    scaler.load_state_dict({})  # a no-op when disabled


def test_grad_scaler_cuda_default_warns_and_disables():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = fb.amp.GradScaler()
    assert not scaler.is_enabled()


def test_grad_scaler_scales_iterables():
    scaler = fb.amp.GradScaler("cpu", init_scale=4.0)
    a, b = scaler.scale([fb.tensor(1.0), (fb.tensor(2.0), fb.tensor(3.0))])
    assert a.item() == 4.0 and [t.item() for t in b] == [8.0, 12.0]


def test_grad_scaler_cpu_amp_spelling():
    scaler = fb.cpu.amp.GradScaler(init_scale=8.0, growth_interval=5)
    assert scaler.is_enabled() and scaler.get_scale() == 8.0 and scaler.get_growth_interval() == 5


def test_grad_scaler_errors():
    fp, _ = _params()
    opt = fb.optim.SGD([fp], lr=0.1)
    scaler = fb.amp.GradScaler("cpu")
    with pytest.raises(RuntimeError, match=r"\[GradScaler.step\] Attempted step but _scale is None"):
        scaler.step(opt)
    scaler.scale(fp.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"\[GradScaler.unscale_\] unscale_\(\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"\[GradScaler.step\] step\(\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"\[GradScaler.unscale_\] unscale_\(\) is being called after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"\[GradScaler.step\] Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0.0)
    scaler.update()
    with pytest.raises(RuntimeError, match=r"\[GradScaler.update\] No inf checks were recorded prior to update"):
        scaler.update()
    with pytest.raises(ValueError, match=r"\[GradScaler.scale\] outputs must be a Tensor or an iterable"):
        scaler.scale([1.0])
    with pytest.raises(RuntimeError, match=r"\[GradScaler.load_state_dict\] The source state dict is empty"):
        scaler.load_state_dict({})
    with pytest.raises(ValueError, match=r"\[GradScaler\] The growth factor must be > 1.0"):
        fb.amp.GradScaler("cpu", growth_factor=1.0)
    scaler.update(0.5)
    assert scaler.get_scale() == 0.5


# ---- training under autocast ----


def _mlp_pair(seed: int = 0):
    torch.manual_seed(seed)
    theirs = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5))
    ours = fb.nn.Sequential(fb.nn.Linear(20, 32), fb.nn.ReLU(), fb.nn.Linear(32, 5))
    ours.load_state_dict({k: fb.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _train(framework, model, steps=15, input_shape=(20,), classes=5, batch=64, lr=0.2, seed=3) -> list[float]:
    """Losses of SGD steps under bfloat16 autocast on one fixed random batch (the model is trained in place)."""
    rng = np.random.default_rng(seed)
    x = framework.tensor(rng.standard_normal((batch, *input_shape)).astype(np.float32))
    y = framework.tensor(rng.integers(0, classes, batch))
    opt = framework.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with framework.autocast("cpu", dtype=framework.bfloat16):
            out = model(x)
            loss = framework.nn.functional.cross_entropy(out, y)
        assert out.dtype == framework.bfloat16 and loss.dtype == framework.float32
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_training_loss_under_bf16_autocast_matches_torch():
    ours, theirs = _mlp_pair()
    fl, tl = _train(fb, ours), _train(torch, theirs)
    assert fl[-1] < 0.8 * fl[0]  # it learns
    np.testing.assert_allclose(fl, tl, rtol=3e-2, atol=3e-2)
    for p in ours.parameters():
        assert p.dtype == fb.float32 and p.grad.dtype == fb.float32


# The CNNs of benchmarks/models.py (LeNet-5 and ResNet-8), written once for both libraries: under autocast
# their convolutions and linears run in bfloat16 and feed pooling, batch norm and ReLU a bfloat16 input.
def _lenet5(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
    )  # fmt: skip


def _resnet8(lib):
    nn, F = lib.nn, lib.nn.functional

    def conv_bn(cin, cout, k, stride=1):
        return [nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False), nn.BatchNorm2d(cout)]

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = conv_bn(cin, cout, 3, stride)
            self.conv2, self.bn2 = conv_bn(cout, cout, 3)
            changes = stride != 1 or cin != cout
            self.shortcut = nn.Sequential(*conv_bn(cin, cout, 1, stride)) if changes else nn.Identity()

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))

    return nn.Sequential(
        *conv_bn(3, 16, 3), nn.ReLU(), BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )  # fmt: skip


# The PReLU variant of LeNet-5 with average pooling: prelu is lowered to bfloat16 by autocast.
def _lenet5_prelu(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.PReLU(6), nn.AvgPool2d(2),
        nn.Conv2d(6, 16, 5), nn.PReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 10),
    )  # fmt: skip


CNNS = {
    "lenet5": (_lenet5, (1, 28, 28)),
    "resnet8": (_resnet8, (3, 32, 32)),
    "lenet5_prelu": (_lenet5_prelu, (1, 28, 28)),
}


@pytest.mark.parametrize("name", list(CNNS))
def test_cnn_training_under_bf16_autocast_matches_torch(name):
    make, input_shape = CNNS[name]
    torch.manual_seed(0)
    theirs = make(torch)
    ours = make(fb)
    ours.load_state_dict({k: fb.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    cnn = {"steps": 6, "input_shape": input_shape, "classes": 10, "batch": 16, "lr": 0.05, "seed": 7}
    fl, tl = _train(fb, ours, **cnn), _train(torch, theirs, **cnn)
    assert fl[-1] < fl[0]  # it learns
    # Both round the same bfloat16 products in possibly different orders; the trajectories stay together
    # (measured: within 2e-3 over the six steps).
    np.testing.assert_allclose(fl, tl, rtol=1e-2, atol=1e-2)
    theirs_state = theirs.state_dict()
    for k, v in ours.state_dict().items():
        assert v.dtype == getattr(fb, str(theirs_state[k].dtype).removeprefix("torch.")), k
        if v.dtype == fb.float32:  # parameters and running statistics, after the steps
            np.testing.assert_allclose(v.numpy(), theirs_state[k].numpy(), rtol=5e-2, atol=5e-2, err_msg=k)
    for p in ours.parameters():
        assert p.dtype == fb.float32 and p.grad.dtype == fb.float32


def test_gradients_flow_through_the_casts_in_float32():
    w = fb.nn.Parameter(fb.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tw = torch.nn.Parameter(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    x, tx = fb.tensor([[0.5, -1.0]]), torch.tensor([[0.5, -1.0]])
    with fb.autocast("cpu"):
        out = (x @ w).float().sum()
    with torch.autocast("cpu"):
        tout = (tx @ tw).float().sum()
    out.backward()
    tout.backward()
    assert w.grad.dtype == fb.float32
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


def test_weight_casts_are_cached_within_the_outermost_region():
    layer = fb.nn.Linear(4, 4)
    x = fb.ones(2, 4)
    with fb.autocast("cpu"):
        a = layer(x)
        assert flambeau_core._C._autocast_cache_size() == 2  # weight and bias, cast once
        with fb.autocast("cpu"):
            b = layer(a)
        assert flambeau_core._C._autocast_cache_size() == 2  # an inner region neither adds nor clears
        c = layer(x)
    assert flambeau_core._C._autocast_cache_size() == 0
    np.testing.assert_array_equal(a.detach().float().numpy(), c.detach().float().numpy())
    assert b.dtype == fb.bfloat16
    with fb.autocast("cpu", cache_enabled=False):
        layer(x)
        assert flambeau_core._C._autocast_cache_size() == 0
    with fb.no_grad():
        plain = fb.ones(4, 4)  # not a leaf that requires grad: never cached
        with fb.autocast("cpu"):
            x @ plain
            assert flambeau_core._C._autocast_cache_size() == 0


# ---- custom_fwd / custom_bwd (flambeau_core/amp/custom_functions.py) ----


def _matmul_function(m, cast_inputs):
    class MatMul(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            seen.append(("forward", m.is_autocast_enabled("cpu"), str(x.dtype).split(".")[-1]))
            return x @ w

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            seen.append(("backward", m.is_autocast_enabled("cpu"), str(grad.dtype).split(".")[-1]))
            return grad @ w.t(), x.t() @ grad

    seen = []
    return MatMul, seen


@pytest.mark.parametrize("cast", [None, "float32"])
@pytest.mark.parametrize("in_autocast", [True, False])
def test_custom_fwd_bwd_follow_torch(cast, in_autocast):
    import contextlib

    import torch

    results = []
    for m in (fb, torch):
        fn, seen = _matmul_function(m, None if cast is None else getattr(m, cast))
        x, w = m.ones(2, 3, requires_grad=True), m.ones(3, 2, requires_grad=True)
        with m.autocast("cpu") if in_autocast else contextlib.nullcontext():
            y = fn.apply(x, w)
        y.float().sum().backward()
        results.append((seen, str(y.dtype).split(".")[-1], str(x.grad.dtype).split(".")[-1]))
    assert results[0] == results[1]


def test_custom_fwd_leaves_float64_and_checks_device_type():
    import torch

    fn, seen = _matmul_function(fb, fb.float32)
    with fb.autocast("cpu"):
        fn.apply(fb.ones(2, 2, dtype=fb.float64), fb.ones(2, 2, dtype=fb.float64))
    assert seen == [("forward", False, "float64")]
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        torch.amp.custom_fwd(device_type=None)
    with pytest.raises(TypeError, match=r"\[custom_fwd\] Expected `device_type` of type `str`, got: `NoneType`"):
        fb.amp.custom_fwd(device_type=None)
    with pytest.raises(TypeError, match=r"\[custom_bwd\] Expected `device_type` of type `str`"):
        fb.amp.custom_bwd(device_type=3)


def test_custom_bwd_needs_custom_fwd():
    class Half(fb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x / 2

        @staticmethod
        @fb.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            return grad / 2

    x = fb.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\[custom_bwd\] the Function's forward was not decorated with custom_fwd"):
        Half.apply(x).sum().backward()


def test_grad_scaler_is_top_level_as_in_torch():
    import torch

    assert torch.GradScaler is torch.amp.GradScaler
    assert fb.GradScaler is fb.amp.GradScaler


_RNG = np.random.default_rng(7)
_A, _B = _RNG.standard_normal((2, 4, 4, 4)).astype(np.float32), _RNG.standard_normal((2, 4, 4, 4)).astype(np.float32)
_POS = np.abs(_A) + 0.5
# Calls of functions written in Python (nn's composites, linalg, fft), each of PyTorch's CPU float32 autocast
# list (autocast_float32), of table ops of its float32 list (quantile, polar, view_as_complex) and of its
# lower-precision list (addmm, baddbmm, addbmm); m is fb or torch.
_AUTOCAST_CALLS = {
    "avg_pool3d": lambda m, a, b: m.nn.functional.avg_pool3d(a[None], 2),
    "max_pool3d": lambda m, a, b: m.nn.functional.max_pool3d(a[None], 2, 1, 1),
    "adaptive_avg_pool3d": lambda m, a, b: m.nn.functional.adaptive_avg_pool3d(a[None], 3),
    "adaptive_max_pool3d": lambda m, a, b: m.nn.functional.adaptive_max_pool3d(a[None], 3),
    "max_unpool2d": lambda m, a, b: m.nn.functional.max_unpool2d(
        *m.nn.functional.max_pool2d(a, 2, return_indices=True), 2
    ),
    "kl_div": lambda m, a, b: m.nn.functional.kl_div(a, b.abs() + 0.5, reduction="batchmean"),
    "poisson_nll_loss": lambda m, a, b: m.nn.functional.poisson_nll_loss(a, b.abs()),
    "cosine_embedding_loss": lambda m, a, b: m.nn.functional.cosine_embedding_loss(a[0, 0], b[0, 0], m.ones(4)),
    "hinge_embedding_loss": lambda m, a, b: m.nn.functional.hinge_embedding_loss(a, m.ones(2, 4, 4, 4)),
    "margin_ranking_loss": lambda m, a, b: m.nn.functional.margin_ranking_loss(a, b, m.ones(2, 4, 4, 4)),
    "soft_margin_loss": lambda m, a, b: m.nn.functional.soft_margin_loss(a, m.ones(2, 4, 4, 4)),
    "triplet_margin_loss": lambda m, a, b: m.nn.functional.triplet_margin_loss(a[0, 0], b[0, 0], a[1, 0]),
    "multi_margin_loss": lambda m, a, b: m.nn.functional.multi_margin_loss(a[0, 0], m.tensor([0, 1, 2, 3])),
    "multilabel_margin_loss": lambda m, a, b: m.nn.functional.multilabel_margin_loss(
        a[0, 0], m.tensor([[0, 1, -1, 0]] * 4)
    ),
    "ctc_loss": lambda m, a, b: m.nn.functional.ctc_loss(
        a[0].log_softmax(2), m.tensor([[1, 2], [1, 1], [2, 3], [3, 1]]), m.tensor([4] * 4), m.tensor([2] * 4)
    ),
    "reflection_pad2d": lambda m, a, b: m.nn.functional.pad(a, (1, 2, 2, 1), mode="reflect"),
    "replication_pad1d": lambda m, a, b: m.nn.functional.pad(a[0], (1, 2), mode="replicate"),
    "replication_pad3d": lambda m, a, b: m.nn.functional.pad(a, (1, 1, 0, 1, 1, 0), mode="replicate"),
    "grid_sample": lambda m, a, b: m.nn.functional.grid_sample(a, b[:, :3, :3, :2] * 0.5, align_corners=False),
    "linalg.inv": lambda m, a, b: m.linalg.inv(a[0, 0] + 4 * m.eye(4)),
    "linalg.svdvals": lambda m, a, b: m.linalg.svdvals(a[0]),
    "linalg.eigh": lambda m, a, b: m.linalg.eigh(a[0, 0] + a[0, 0].mT)[0],
    "cholesky_inverse": lambda m, a, b: m.cholesky_inverse(m.linalg.cholesky(a[0, 0] @ a[0, 0].mT + m.eye(4))),
    "pinverse": lambda m, a, b: m.pinverse(a[0, 0]),
    "fft.rfft": lambda m, a, b: m.fft.rfft(a[0, 0]),
    "fft.irfft2": lambda m, a, b: m.fft.irfft2(a[0]),
    "stft": lambda m, a, b: m.stft(a.reshape(-1)[:64], 16, window=m.ones(16), return_complex=True),
    "cdist": lambda m, a, b: m.cdist(a[0, 0], b[0, 0]),
    "quantile": lambda m, a, b: m.quantile(a[0, 0], 0.3, dim=1),
    "nanquantile": lambda m, a, b: m.nanquantile(a[0, 0], m.tensor([0.25, 0.5]), dim=0),
    "polar": lambda m, a, b: m.polar(a[0, 0].abs(), b[0, 0]),
    "view_as_complex": lambda m, a, b: m.view_as_complex(a[0, 0, :, :2].contiguous()),
    "mv": lambda m, a, b: m.mv(a[0, 0], b[0, 0, 0]),  # of no list in PyTorch: runs as called
    "addmm": lambda m, a, b: m.addmm(a[0, 0], a[0, 1], b[0, 0]),
    "baddbmm": lambda m, a, b: m.baddbmm(a[0], a[1], b[0], beta=0.5, alpha=2.0),
    "addbmm": lambda m, a, b: m.addbmm(a[0, 0], a[1], b[0]),
}


@pytest.mark.parametrize("low_inputs", [False, True], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("name", list(_AUTOCAST_CALLS))
def test_autocast_dtypes_and_values_of_composites_match_torch(name, low_inputs):
    call = _AUTOCAST_CALLS[name]
    results = []
    for m in (fb, torch):
        a, b = m.tensor(_A), m.tensor(_B)
        if low_inputs:  # what a lowered convolution or linear hands on
            a, b = a.to(m.bfloat16), b.to(m.bfloat16)
        with m.autocast("cpu", dtype=m.bfloat16):
            out = call(m, a, b)
        results.append(out)
    ours, theirs = results
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    if not ours.is_complex():
        ours, theirs = ours.float(), theirs.float()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-2, atol=2e-2)
