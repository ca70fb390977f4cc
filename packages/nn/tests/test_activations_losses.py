"""Activations, losses and distances against PyTorch: values and gradients in
float32 and float64, odd shapes, non-contiguous inputs, every option,
gradcheck in float64, edge values, modules (repr, state_dict) and errors."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from flambeau_core.testing import raises_when_run
from nn_testing import DTYPES, close, compare_forward_backward, fb, from_torch, npy, run_both, th

pytestmark = pytest.mark.on_devices

# ---- activations ----

ACTIVATIONS = [
    ("relu", F.relu, TF.relu),
    ("gelu", F.gelu, TF.gelu),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
    ("silu", F.silu, TF.silu),
    ("mish", F.mish, TF.mish),
    ("leaky_relu", F.leaky_relu, TF.leaky_relu),
    ("leaky_relu_0.2", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    ("elu", F.elu, TF.elu),
    ("elu_0.5", lambda x: F.elu(x, 0.5), lambda x: TF.elu(x, 0.5)),
    ("selu", F.selu, TF.selu),
    ("celu", F.celu, TF.celu),
    ("celu_2", lambda x: F.celu(x, 2.0), lambda x: TF.celu(x, 2.0)),
    ("softplus", F.softplus, TF.softplus),
    ("softplus_b2_t3", lambda x: F.softplus(x, 2.0, 3.0), lambda x: TF.softplus(x, 2.0, 3.0)),
    ("hardtanh", F.hardtanh, TF.hardtanh),
    ("hardtanh_m2_3", lambda x: F.hardtanh(x, -2.0, 3.0), lambda x: TF.hardtanh(x, -2.0, 3.0)),
    ("relu6", F.relu6, TF.relu6),
    ("hardswish", F.hardswish, TF.hardswish),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
    ("softsign", F.softsign, TF.softsign),
    ("glu", F.glu, TF.glu),
    ("glu_dim0", lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0)),
]
SHAPES = [(6,), (4, 6), (4, 3, 2, 6), (2, 17, 6)]


def _grad_rtol(name):
    # PyTorch's hardsigmoid_backward multiplies by the float32 constant 1.0f / 6.0f even in float64.
    return 1e-7 if name == "hardsigmoid" else None


def _act_input(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.standard_normal(shape) * 3)
    # keep away from the kinks (finite differences and ties)
    x[np.abs(x) < 1e-3] = 0.5
    x[np.abs(np.abs(x) - 3) < 1e-3] = 2.5
    x[np.abs(x - 6) < 1e-3] = 5.5
    x[np.abs(x - 1) < 1e-3] = 0.9
    x[np.abs(x + 1) < 1e-3] = -0.9
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name,fb_fn,th_fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_grads(name, fb_fn, th_fn, shape, dtype):
    run_both(fb_fn, th_fn, [_act_input(shape)], dtype, grad_rtol=_grad_rtol(name))


@pytest.mark.parametrize("name,fb_fn,th_fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_noncontiguous(name, fb_fn, th_fn):
    run_both(fb_fn, th_fn, [_act_input((6, 4, 2))], "float64", noncontig=True, grad_rtol=_grad_rtol(name))
    run_both(fb_fn, th_fn, [_act_input((6, 5, 2))], "float32", noncontig=True)


@pytest.mark.parametrize("name,fb_fn,th_fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_gradcheck(name, fb_fn, th_fn):
    x = fb(_act_input((4, 4), seed=3), fc.float64, True)
    assert fa.gradcheck(fb_fn, (x,))


@pytest.mark.parametrize("name,fb_fn,th_fn", ACTIVATIONS[:-2], ids=[a[0] for a in ACTIVATIONS[:-2]])
def test_activation_scalar_and_empty(name, fb_fn, th_fn):
    run_both(fb_fn, th_fn, [np.array(0.7)], "float64", grad_rtol=_grad_rtol(name))
    run_both(fb_fn, th_fn, [np.zeros((0, 3))], "float32")


EDGE = np.array([-1e4, -100.0, -50.0, -30.0, -20.5, -15.0, -5.0, -1e-7, 0.0, 1e-7, 5.0, 15.0, 20.5, 30.0, 50.0, 1e4])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fb_fn,th_fn", ACTIVATIONS[:-2], ids=[a[0] for a in ACTIVATIONS[:-2]])
def test_activation_edge_values(name, fb_fn, th_fn, dtype):
    run_both(fb_fn, th_fn, [EDGE], dtype, grad_rtol=_grad_rtol(name))


@pytest.mark.parametrize("name,fb_fn,th_fn", ACTIVATIONS[:-2], ids=[a[0] for a in ACTIVATIONS[:-2]])
def test_activation_inf_nan(name, fb_fn, th_fn):
    x = np.array([-np.inf, np.inf, np.nan, 1.0])
    for d in ("float32", "float64"):
        fdt, tdt, rtol, atol = DTYPES[d]
        ours, theirs = fb_fn(fb(x, fdt)), th_fn(th(x, tdt))
        if name.startswith("gelu") and d == "float32":
            # PyTorch's vectorized float32 gelu gives nan at +inf; gelu(+inf) = +inf (as its float64 path).
            assert npy(ours)[1] == np.inf
            ours, theirs = ours[[0, 2, 3]], theirs[[0, 2, 3]]
        close(ours, theirs, rtol, atol, name)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("shape", [(20,), (1, 0, 3), ()])
def test_silu_complex(dtype, shape):
    # torch computes silu on complex inputs (z * sigmoid(z)); out of place and in place
    rng = np.random.default_rng(3)
    z = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    close(F.silu(fc.tensor(z)), TF.silu(torch.tensor(z)), tol, tol)
    ours, theirs = fc.tensor(z), torch.tensor(z)
    assert F.silu(ours, inplace=True) is ours
    TF.silu(theirs, inplace=True)
    close(ours, theirs, tol, tol)


def test_silu_complex_gradient_is_the_derivative():
    # torch refuses complex silu's gradient; flambeau's (composed) passes finite differences
    rng = np.random.default_rng(4)
    re, im = (fc.tensor(rng.standard_normal(5), requires_grad=True) for _ in range(2))
    assert fa.gradcheck(lambda a, b: fc.view_as_real(F.silu(fc.complex(a, b))), (re, im))


INPLACE = [
    ("relu", lambda x: F.relu(x, inplace=True), lambda x: TF.relu(x, inplace=True)),
    ("relu_", F.relu_, torch.relu_),
    ("silu", lambda x: F.silu(x, inplace=True), lambda x: TF.silu(x, inplace=True)),
    ("mish", lambda x: F.mish(x, inplace=True), lambda x: TF.mish(x, inplace=True)),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1, True), lambda x: TF.leaky_relu(x, 0.1, True)),
    ("leaky_relu_", F.leaky_relu_, TF.leaky_relu_),
    ("elu", lambda x: F.elu(x, 0.7, True), lambda x: TF.elu(x, 0.7, True)),
    ("elu_", F.elu_, TF.elu_),
    ("selu", lambda x: F.selu(x, True), lambda x: TF.selu(x, True)),
    ("celu", lambda x: F.celu(x, 1.5, True), lambda x: TF.celu(x, 1.5, True)),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.5, True), lambda x: TF.hardtanh(x, -0.5, 0.5, True)),
    ("hardtanh_", F.hardtanh_, TF.hardtanh_),
    ("relu6", lambda x: F.relu6(x, True), lambda x: TF.relu6(x, True)),
    ("hardswish", lambda x: F.hardswish(x, True), lambda x: TF.hardswish(x, True)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x, True), lambda x: TF.hardsigmoid(x, True)),
]


@pytest.mark.parametrize("name,fb_fn,th_fn", INPLACE, ids=[a[0] for a in INPLACE])
def test_activation_inplace(name, fb_fn, th_fn):
    x = _act_input((5, 7))
    # on a plain tensor: the same object comes back, modified
    a = fb(x)
    r = fb_fn(a)
    assert r is a or r.data_ptr() == a.data_ptr()
    close(a, th_fn(th(x)), 1e-10, 1e-12, name)
    # through autograd: in place on a non-leaf
    leaf_f, leaf_t = fb(x, requires_grad=True), th(x, requires_grad=True)
    of = fb_fn(leaf_f * 1.0)
    ot = th_fn(leaf_t * 1.0)
    close(of, ot, 1e-10, 1e-12, name)
    w = np.random.default_rng(1).standard_normal(x.shape)
    (of * fb(w)).sum().backward()
    (ot * th(w)).sum().backward()
    close(leaf_f.grad, leaf_t.grad, _grad_rtol(name) or 1e-9, 1e-12, name + " grad")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape,wshape", [((5, 3), (3,)), ((5, 3), (1,)), ((2, 4, 3, 3), (4,)), ((7,), (1,)), ((), (1,))]
)
def test_prelu(shape, wshape, dtype):
    x = _act_input(shape)
    w = np.random.default_rng(2).uniform(-0.5, 0.5, wshape)
    run_both(F.prelu, TF.prelu, [x, w], dtype)


def test_prelu_noncontiguous_and_gradcheck():
    x = _act_input((6, 3, 4))
    w = np.array([0.1, -0.3, 0.25])
    run_both(lambda a, b: F.prelu(a.transpose(1, 2).transpose(1, 2), b), TF.prelu, [x, w], "float64")
    xf = fb(np.swapaxes(x, 1, 2), requires_grad=True)
    wf = fb(w, requires_grad=True)
    assert fa.gradcheck(lambda a, b: F.prelu(a.transpose(1, 2), b), (xf, wf))


def test_glu_gradcheck_odd_dims():
    x = fb(_act_input((3, 4, 5)), requires_grad=True)
    assert fa.gradcheck(lambda a: F.glu(a, 1), (x,))


# ---- modules ----

MODULES = [
    ("GELU", {}),
    ("GELU", {"approximate": "tanh"}),
    ("SiLU", {}),
    ("SiLU", {"inplace": True}),
    ("Mish", {}),
    ("LeakyReLU", {}),
    ("LeakyReLU", {"negative_slope": 0.2, "inplace": True}),
    ("ELU", {}),
    ("ELU", {"alpha": 0.5, "inplace": True}),
    ("SELU", {}),
    ("CELU", {"alpha": 2.0}),
    ("Softplus", {}),
    ("Softplus", {"beta": 2.0, "threshold": 5.0}),
    ("Hardtanh", {}),
    ("Hardtanh", {"min_val": -2.0, "max_val": 3.0, "inplace": True}),
    ("ReLU6", {}),
    ("ReLU6", {"inplace": True}),
    ("Hardswish", {}),
    ("Hardsigmoid", {}),
    ("LogSigmoid", {}),
    ("Softsign", {}),
    ("PReLU", {}),
    ("PReLU", {"num_parameters": 3, "init": 0.1}),
    ("GLU", {}),
    ("GLU", {"dim": 0}),
    ("ReLU", {"inplace": True}),
    ("BCELoss", {}),
    ("BCEWithLogitsLoss", {"reduction": "sum"}),
    ("CrossEntropyLoss", {"label_smoothing": 0.1}),
    ("NLLLoss", {"ignore_index": 2}),
    ("L1Loss", {}),
    ("SmoothL1Loss", {"beta": 0.5}),
    ("HuberLoss", {"delta": 2.0}),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}),
    ("MarginRankingLoss", {"margin": 0.5}),
    ("MSELoss", {"reduction": "none"}),
    ("CosineSimilarity", {"dim": 0, "eps": 1e-6}),
    ("PairwiseDistance", {"p": 1.0, "keepdim": True}),
]


@pytest.mark.parametrize("name,kwargs", MODULES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)])
def test_module_repr_and_state_dict(name, kwargs):
    ours = getattr(nn, name)(**kwargs)
    theirs = getattr(torch.nn, name)(**kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
    for k, v in theirs.state_dict().items():
        close(ours.state_dict()[k], v, 0, 0, k)


@pytest.mark.parametrize(
    "name,kwargs",
    [m for m in MODULES if hasattr(torch.nn.modules.activation, m[0]) and m[0] not in ("GLU",)],
)
def test_activation_module_forward(name, kwargs):
    x = _act_input((4, 3, 5))
    ours = getattr(nn, name)(**kwargs)
    theirs = getattr(torch.nn, name)(**kwargs)
    fo = ours(fb(x, fc.float32) * 1.0)
    to = theirs(th(x, torch.float32) * 1.0)
    close(fo, to, 2e-5, 2e-6, name)


def test_prelu_module_trains():
    m = nn.PReLU(3)
    tm = torch.nn.PReLU(3)
    x = _act_input((4, 3, 2))
    m(fb(x, fc.float32)).sum().backward()
    tm(th(x, torch.float32)).sum().backward()
    close(m.weight.grad, tm.weight.grad, 1e-5, 1e-6)


@pytest.mark.on_devices(types=("cpu", "sim"))  # the CUDA kernel takes float32 and float64
@pytest.mark.parametrize("shape, channels", [((4, 3, 5, 5), 3), ((4, 3, 5, 5), 1), ((6, 7), 7)])
def test_prelu_in_bfloat16(shape, channels):
    # Autocast lowers prelu to bfloat16 (PyTorch's CPU list); computed in float32 and rounded once.
    g = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=g).bfloat16().requires_grad_(True)
    w = (torch.rand(channels, generator=g) - 0.5).bfloat16().requires_grad_(True)
    xo, wo = from_torch(x).requires_grad_(True), from_torch(w).requires_grad_(True)
    yo, yt = F.prelu(xo, wo), TF.prelu(x, w)
    assert yo.dtype == fc.bfloat16
    close(yo, yt, 2**-7, 2**-7)
    up = torch.randn(shape, generator=g).bfloat16()
    (yo * from_torch(up)).sum().backward()
    (yt * up).sum().backward()
    assert xo.grad.dtype == wo.grad.dtype == fc.bfloat16
    close(xo.grad, x.grad, 2**-7, 2**-7)
    # summed over all but the channel dim: float32 accumulation in both, in different orders
    close(wo.grad, w.grad, 2e-2, 2e-2, scale_atol=True)


@pytest.mark.on_devices(types=("cpu", "sim"))
def test_prelu_dtype_errors():
    with pytest.raises(
        TypeError, match=r"^\[prelu\] input must be a float16, bfloat16, float32 or float64 tensor, got dtype int64"
    ):
        fc.prelu(fc.zeros(2, 3, dtype=fc.int64), fc.ones(3, dtype=fc.int64))
    with pytest.raises(TypeError, match=r"^\[prelu\] weight dtype float32 must match the input dtype bfloat16"):
        fc.prelu(fc.zeros(2, 3, dtype=fc.bfloat16), fc.ones(3))
    with pytest.raises(fc.FlambeauError, match=r"3 elements.*\(2, 4\).*4 channels"):
        F.prelu(fc.zeros(2, 4, dtype=fc.bfloat16), fc.ones(3, dtype=fc.bfloat16))
    with pytest.raises(fc.FlambeauError, match=r"\[prelu_backward\] grad_output shape \(2, 3\) does not match"):
        fc._C._prelu_backward_input(
            fc.zeros(2, 3, dtype=fc.bfloat16), fc.zeros(2, 4, dtype=fc.bfloat16), fc.ones(4, dtype=fc.bfloat16)
        )


def test_weighted_loss_state_dict():
    w = np.array([1.0, 2.0, 0.5])
    ours = nn.CrossEntropyLoss(weight=fb(w, fc.float32))
    theirs = torch.nn.CrossEntropyLoss(weight=th(w, torch.float32))
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys()) == ["weight"]
    pw = np.array([2.0, 3.0, 1.0])
    ours = nn.BCEWithLogitsLoss(weight=fb(w), pos_weight=fb(pw))
    theirs = torch.nn.BCEWithLogitsLoss(weight=th(w), pos_weight=th(pw))
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())


# ---- cross entropy and nll_loss ----

REDUCTIONS = ["mean", "sum", "none"]


def _ce_case(shape, seed=0, ignore=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 2
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + tuple(shape[2:]) if len(shape) > 1 else ()
    t = rng.integers(0, c, size=tshape)
    if ignore is not None and t.ndim > 0:
        t.flat[:: max(1, t.size // 3)] = ignore
    return x, t


CE_SHAPES = [(7, 5), (1, 3), (5,), (4, 3, 2), (3, 4, 2, 3), (64, 10), (5, 1000)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CE_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_class_indices(shape, reduction, dtype, weighted, smoothing):
    x, t = _ce_case(shape, ignore=1 if len(shape) > 1 else None)
    c = shape[1] if len(shape) > 1 else shape[0]
    w = np.random.default_rng(1).uniform(0.2, 2.0, c) if weighted else None
    fdt, tdt, _, _ = DTYPES[dtype]
    kw = {"reduction": reduction, "ignore_index": 1, "label_smoothing": smoothing}
    run_both(
        lambda a: F.cross_entropy(a, fc.tensor(t), weight=None if w is None else fb(w, fdt), **kw),
        lambda a: TF.cross_entropy(a, torch.tensor(t), weight=None if w is None else th(w, tdt), **kw),
        [x],
        dtype,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(7, 5), (5,), (4, 3, 2)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(shape, reduction, dtype, weighted, smoothing):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    cdim = 1 if len(shape) > 1 else 0
    p = rng.uniform(0, 1, shape)
    p = p / p.sum(axis=cdim, keepdims=True)
    c = shape[cdim]
    w = rng.uniform(0.2, 2.0, c) if weighted else None
    fdt, tdt, _, _ = DTYPES[dtype]
    kw = {"reduction": reduction, "label_smoothing": smoothing}
    run_both(
        lambda a: F.cross_entropy(a, fb(p, fdt), weight=None if w is None else fb(w, fdt), **kw),
        lambda a: TF.cross_entropy(a, th(p, tdt), weight=None if w is None else th(w, tdt), **kw),
        [x],
        dtype,
    )


def test_cross_entropy_noncontiguous_and_gradcheck():
    x, t = _ce_case((6, 5))
    run_both(
        lambda a: F.cross_entropy(a, fc.tensor(t)),
        lambda a: TF.cross_entropy(a, torch.tensor(t)),
        [x.T.copy().T],
        "float64",
    )
    x2 = np.random.default_rng(3).standard_normal((5, 6))
    run_both(
        lambda a: F.cross_entropy(a, fc.tensor(t)),
        lambda a: TF.cross_entropy(a, torch.tensor(t)),
        [x2.T],
        "float32",
        noncontig=True,
    )
    for shape in [(4, 3), (3, 4, 2)]:
        x, t = _ce_case(shape)
        w = fb(np.array([0.5, 1.0, 2.0, 1.5][: shape[1]]))
        for kw in ({}, {"label_smoothing": 0.1}, {"reduction": "none"}, {"weight": w, "label_smoothing": 0.2}):
            xf = fb(x, requires_grad=True)
            assert fa.gradcheck(lambda a, kw=kw, t=t: F.cross_entropy(a, fc.tensor(t), **kw), (xf,))


def test_cross_entropy_extreme_logits():
    x = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4], [50.0, 50.0, 50.0]])
    t = np.array([2, 0, 1])
    for d in ("float32", "float64"):
        run_both(
            lambda a: F.cross_entropy(a, fc.tensor(t), reduction="none"),
            lambda a: TF.cross_entropy(a, torch.tensor(t), reduction="none"),
            [x],
            d,
        )
    xi = np.array([[-np.inf, 0.0, 1.0], [np.inf, 0.0, 1.0]])
    fo = F.cross_entropy(fb(xi), fc.tensor([1, 1]), reduction="none")
    to = TF.cross_entropy(th(xi), torch.tensor([1, 1]), reduction="none")
    np.testing.assert_allclose(npy(fo), to.numpy())


def test_cross_entropy_all_ignored_is_nan_like_torch():
    x, _ = _ce_case((3, 4))
    t = np.array([-100, -100, -100])
    fo = F.cross_entropy(fb(x), fc.tensor(t))
    to = TF.cross_entropy(th(x), torch.tensor(t))
    assert np.isnan(fo.item()) and np.isnan(to.item())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(7, 5), (5,), (4, 3, 2), (2, 3, 2, 2)])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(shape, reduction, dtype, weighted):
    x, t = _ce_case(shape, ignore=2 if len(shape) > 1 else None)
    c = shape[1] if len(shape) > 1 else shape[0]
    w = np.random.default_rng(1).uniform(0.2, 2.0, c) if weighted else None
    fdt, tdt, _, _ = DTYPES[dtype]
    kw = {"reduction": reduction, "ignore_index": 2}
    run_both(
        lambda a: F.nll_loss(a, fc.tensor(t), weight=None if w is None else fb(w, fdt), **kw),
        lambda a: TF.nll_loss(a, torch.tensor(t), weight=None if w is None else th(w, tdt), **kw),
        [x],
        dtype,
    )


def test_nll_loss_gradcheck():
    x, t = _ce_case((4, 3, 2))
    assert fa.gradcheck(
        lambda a: F.nll_loss(a, fc.tensor(t), weight=fb(np.array([1.0, 2.0, 0.5]))), (fb(x, requires_grad=True),)
    )


def test_cross_entropy_module_matches_functional():
    x, t = _ce_case((8, 5))
    ours = nn.CrossEntropyLoss(weight=fb(np.linspace(0.5, 1.5, 5)), ignore_index=3, label_smoothing=0.1)
    theirs = torch.nn.CrossEntropyLoss(weight=th(np.linspace(0.5, 1.5, 5)), ignore_index=3, label_smoothing=0.1)
    close(ours(fb(x), fc.tensor(t)), theirs(th(x), torch.tensor(t)), 1e-10, 1e-12)


# ---- pointwise losses ----


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(), (7,), (4, 5), (2, 3, 4)])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(shape, reduction, dtype, weighted):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.02, 0.98, shape)
    t = rng.uniform(0, 1, shape)
    w = rng.uniform(0.5, 2, shape[-1:] if shape else ()) if weighted else None
    fdt, tdt, _, _ = DTYPES[dtype]
    run_both(
        lambda a: F.binary_cross_entropy(a, fb(t, fdt), None if w is None else fb(w, fdt), reduction=reduction),
        lambda a: TF.binary_cross_entropy(a, th(t, tdt), None if w is None else th(w, tdt), reduction=reduction),
        [x],
        dtype,
    )


def test_binary_cross_entropy_clamps_log_like_torch():
    x = np.array([0.0, 1.0, 0.0, 1.0, 1e-50, 0.5])
    t = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.5])
    for d in ("float32", "float64"):
        run_both(
            lambda a, d=d: F.binary_cross_entropy(a, fb(t, DTYPES[d][0]), reduction="none"),
            lambda a, d=d: TF.binary_cross_entropy(a, th(t, DTYPES[d][1]), reduction="none"),
            [x],
            d,
            grad_rtol=1e-8 if d == "float64" else None,  # gradients near 1e12
        )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(), (9,), (1024, 1), (4, 5), (2, 3, 4)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos", [False, True])
def test_bce_with_logits(shape, reduction, dtype, weighted, pos):
    rng = np.random.default_rng(0)
    x = np.asarray(rng.standard_normal(shape) * 3)
    t = rng.uniform(0, 1, shape)
    w = rng.uniform(0.5, 2, shape[-1:] if shape else ()) if weighted else None
    pw = rng.uniform(0.5, 3, shape[-1:] if shape else ()) if pos else None
    fdt, tdt, _, _ = DTYPES[dtype]
    run_both(
        lambda a: F.binary_cross_entropy_with_logits(
            a,
            fb(t, fdt),
            None if w is None else fb(w, fdt),
            reduction=reduction,
            pos_weight=None if pw is None else fb(pw, fdt),
        ),
        lambda a: TF.binary_cross_entropy_with_logits(
            a,
            th(t, tdt),
            None if w is None else th(w, tdt),
            reduction=reduction,
            pos_weight=None if pw is None else th(pw, tdt),
        ),
        [x],
        dtype,
    )


def test_bce_with_logits_large_logits():
    x = np.array([-1e4, -200.0, -50.0, -20.0, 0.0, 20.0, 50.0, 200.0, 1e4])
    t = np.array([1.0, 1.0, 0.0, 0.3, 0.5, 0.7, 1.0, 0.0, 0.0])
    for d in ("float32", "float64"):
        fdt, tdt, _, _ = DTYPES[d]
        for pw in (None, np.full(9, 2.0)):
            run_both(
                lambda a, pw=pw, fdt=fdt: F.binary_cross_entropy_with_logits(
                    a, fb(t, fdt), reduction="none", pos_weight=None if pw is None else fb(pw, fdt)
                ),
                lambda a, pw=pw, tdt=tdt: TF.binary_cross_entropy_with_logits(
                    a, th(t, tdt), reduction="none", pos_weight=None if pw is None else th(pw, tdt)
                ),
                [x],
                d,
            )


POINTWISE = [
    ("l1_loss", F.l1_loss, TF.l1_loss, {}),
    ("mse_loss", F.mse_loss, TF.mse_loss, {}),
    ("smooth_l1_loss", F.smooth_l1_loss, TF.smooth_l1_loss, {}),
    ("smooth_l1_loss_b0.3", F.smooth_l1_loss, TF.smooth_l1_loss, {"beta": 0.3}),
    ("smooth_l1_loss_b0", F.smooth_l1_loss, TF.smooth_l1_loss, {"beta": 0.0}),
    ("huber_loss", F.huber_loss, TF.huber_loss, {}),
    ("huber_loss_d2.5", F.huber_loss, TF.huber_loss, {"delta": 2.5}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(), (7,), (4, 5), (2, 3, 4)])
@pytest.mark.parametrize("name,fb_fn,th_fn,kw", POINTWISE, ids=[p[0] for p in POINTWISE])
def test_pointwise_losses(name, fb_fn, th_fn, kw, shape, reduction, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) * 2
    t = rng.standard_normal(shape) * 2
    run_both(
        lambda a, b: fb_fn(a, b, reduction=reduction, **kw),
        lambda a, b: th_fn(a, b, reduction=reduction, **kw),
        [x, t],
        dtype,
    )


@pytest.mark.parametrize("name,fb_fn,th_fn,kw", POINTWISE, ids=[p[0] for p in POINTWISE])
def test_pointwise_losses_noncontiguous_gradcheck(name, fb_fn, th_fn, kw):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4)) * 2
    t = rng.standard_normal((5, 4)) * 2
    run_both(lambda a, b: fb_fn(a, b, **kw), lambda a, b: th_fn(a, b, **kw), [x, t], "float64", noncontig=True)
    xf, tf = fb(x, requires_grad=True), fb(t, requires_grad=True)
    assert fa.gradcheck(lambda a, b: fb_fn(a, b, reduction="sum", **kw), (xf, tf))


def test_pointwise_losses_broadcast_target():
    x = np.random.default_rng(0).standard_normal((4, 3))
    t = np.random.default_rng(1).standard_normal((3,))
    with pytest.warns(UserWarning):
        theirs = TF.mse_loss(th(x), th(t))
    close(F.mse_loss(fb(x), fb(t)), theirs, 1e-10, 1e-12)


def test_bce_gradcheck():
    rng = np.random.default_rng(0)
    x = fb(rng.uniform(0.1, 0.9, (3, 4)), requires_grad=True)
    t = fb(rng.uniform(0, 1, (3, 4)))
    w = fb(rng.uniform(0.5, 2, (4,)))
    assert fa.gradcheck(lambda a: F.binary_cross_entropy(a, t, w), (x,))
    xl = fb(rng.standard_normal((3, 4)), requires_grad=True)
    assert fa.gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, t, w, pos_weight=w), (xl,))


# ---- composite losses and distances ----


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, dtype, log_target):
    rng = np.random.default_rng(0)
    x = np.log(rng.dirichlet(np.ones(5), size=4))
    t = rng.dirichlet(np.ones(5), size=4)
    t[0, 0] = 0.0
    if log_target:
        t = np.log(t + 0.01)
    run_both(
        lambda a: F.kl_div(a, fb(t, DTYPES[dtype][0]), reduction=reduction, log_target=log_target),
        lambda a: TF.kl_div(a, th(t, DTYPES[dtype][1]), reduction=reduction, log_target=log_target),
        [x],
        dtype,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.7])
def test_margin_ranking_loss(reduction, dtype, margin):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(9), rng.standard_normal(9)
    y = np.sign(rng.standard_normal(9))
    run_both(
        lambda p, q: F.margin_ranking_loss(p, q, fb(y, DTYPES[dtype][0]), margin=margin, reduction=reduction),
        lambda p, q: TF.margin_ranking_loss(p, q, th(y, DTYPES[dtype][1]), margin=margin, reduction=reduction),
        [a, b],
        dtype,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shapes,dim", [(((5, 4), (5, 4)), 1), (((5, 4), (5, 4)), 0), (((3, 5, 4), (5, 4)), -1), (((6,), (6,)), 0)]
)
def test_cosine_similarity(shapes, dim, dtype):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    run_both(lambda p, q: F.cosine_similarity(p, q, dim), lambda p, q: TF.cosine_similarity(p, q, dim), [a, b], dtype)


def test_cosine_similarity_eps_and_zero_vector():
    a = np.zeros((2, 3))
    b = np.ones((2, 3))
    close(F.cosine_similarity(fb(a), fb(b), eps=1e-4), TF.cosine_similarity(th(a), th(b), eps=1e-4), 1e-10, 1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
# negative p too: torch computes (sum |d|^p)^(1/p) for it, and the minimum of |d| for -inf
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf"), -1.0, -2.5, float("-inf")])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape", [(5, 4), (4,), (2, 3, 4)])
def test_pairwise_distance(p, keepdim, shape, dtype):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    run_both(
        lambda x, y: F.pairwise_distance(x, y, p=p, keepdim=keepdim),
        lambda x, y: TF.pairwise_distance(x, y, p=p, keepdim=keepdim),
        [a, b],
        dtype,
    )


def test_distance_modules():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    close(nn.CosineSimilarity(dim=1)(fb(a), fb(b)), torch.nn.CosineSimilarity(dim=1)(th(a), th(b)), 1e-10, 1e-12)
    close(nn.PairwiseDistance(p=3.0)(fb(a), fb(b)), torch.nn.PairwiseDistance(p=3.0)(th(a), th(b)), 1e-10, 1e-12)
    assert fa.gradcheck(lambda x, y: F.cosine_similarity(x, y), (fb(a, requires_grad=True), fb(b, requires_grad=True)))


# ---- errors ----


# A target out of range is found by the kernel: on a device asynchronously (raised by the
# next synchronous op, as on CUDA), so this error test is the cpu's.
@pytest.mark.on_devices(types=("cpu",))
def test_cross_entropy_target_out_of_range():
    x = fb(np.zeros((3, 10)))
    with pytest.raises(IndexError, match="cross_entropy: target 12 is out of bounds for 10 classes"):
        F.cross_entropy(x, fc.tensor([1, 12, 3]))
    with pytest.raises(IndexError, match="target -1 is out of bounds for 10 classes"):
        F.cross_entropy(x, fc.tensor([1, -1, 3]))
    with pytest.raises(IndexError, match="nll_loss: target 10 is out of bounds for 10 classes"):
        F.nll_loss(x, fc.tensor([10, 0, 0]))
    with pytest.raises(IndexError, match="out of bounds"):
        F.nll_loss(fb(np.zeros((2, 3, 4))), fc.tensor([[0, 1, 2, 3], [0, 0, 0, 0]]))
    # the ignored index may be out of range
    F.cross_entropy(x, fc.tensor([1, -100, 3]))


def test_class_losses_shape_and_dtype_errors():
    x = fb(np.zeros((3, 10)))
    with pytest.raises(fc.FlambeauError, match=r"\(3, 10\).*\(3,\).*\(4,\)"):
        F.cross_entropy(x, fc.tensor([1, 2, 3, 4]))
    with pytest.raises(fc.FlambeauError, match=r"\(3, 10\).*\(3,\).*\(3, 1\)"):
        F.nll_loss(x, fc.tensor([[1], [2], [3]]))
    with pytest.raises(TypeError, match="int64"):
        F.cross_entropy(x, fc.tensor([1, 2, 3], dtype=fc.int32))
    with pytest.raises(TypeError, match="int64"):
        F.cross_entropy(x, fc.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="int64"):
        F.nll_loss(x, fc.zeros(3, 10))
    with pytest.raises(fc.FlambeauError, match=r"\(3, 10\).*\(3, 9\)"):
        F.cross_entropy(x, fc.zeros(3, 9))
    with pytest.raises(fc.FlambeauError, match="weight"):
        F.cross_entropy(x, fc.tensor([1, 2, 3]), weight=fc.ones(9))
    with pytest.raises(fc.FlambeauError, match="reduction"):
        F.cross_entropy(x, fc.tensor([1, 2, 3]), reduction="avg")
    with pytest.raises(fc.FlambeauError, match="label_smoothing"):
        F.cross_entropy(x, fc.tensor([1, 2, 3]), label_smoothing=1.5)
    with pytest.raises(TypeError, match="float"):
        F.cross_entropy(fc.zeros(3, 10, dtype=fc.int64), fc.tensor([1, 2, 3]))
    with pytest.raises(fc.FlambeauError, match="at least 1 dim"):
        F.cross_entropy(fc.tensor(1.0), fc.tensor(0))


def test_bce_errors():
    bce = F.binary_cross_entropy
    raises_when_run(fc.FlambeauError, "between 0 and 1", bce, fc.tensor([0.5, 1.5]), fc.tensor([0.0, 1.0]))
    raises_when_run(fc.FlambeauError, "between 0 and 1", bce, fc.tensor([0.5, float("nan")]), fc.tensor([0.0, 1.0]))
    with pytest.raises(fc.FlambeauError, match=r"\(3,\).*\(2,\)"):
        F.binary_cross_entropy(fc.tensor([0.5, 0.5]), fc.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(fc.FlambeauError, match=r"\(2, 1\).*\(2,\)"):
        F.binary_cross_entropy_with_logits(fc.tensor([0.5, 0.5]), fc.zeros(2, 1))
    with pytest.raises(TypeError, match="dtype"):
        F.binary_cross_entropy(fc.tensor([0.5, 0.5]), fc.tensor([0, 1]))
    with pytest.raises(fc.FlambeauError, match="pos_weight"):
        F.binary_cross_entropy_with_logits(fc.zeros(4, 3), fc.zeros(4, 3), pos_weight=fc.ones(2))


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_loss_checks_left_to_core_keep_their_messages(device):
    # binary_cross_entropy[_with_logits]'s target shape and cross_entropy's label_smoothing are checked
    # by core's meta step (on every device, the meta device too), with the words the wrappers used.
    # torch raises ValueError for the shapes and RuntimeError for label_smoothing: FlambeauError is both.
    x = fc.full((2,), 0.5, device=device)
    with pytest.raises(ValueError):
        TF.binary_cross_entropy(torch.full((2,), 0.5), torch.zeros(3))
    with pytest.raises(
        ValueError, match=r"^\[binary_cross_entropy\] target shape \(3,\) must be the same as input shape \(2,\)$"
    ):
        F.binary_cross_entropy(x, fc.zeros(3, device=device))
    with pytest.raises(ValueError):
        TF.binary_cross_entropy_with_logits(torch.zeros(2), torch.zeros(2, 1))
    with pytest.raises(
        ValueError,
        match=r"^\[binary_cross_entropy_with_logits\] target shape \(2, 1\) must be the same as input shape \(2,\)$",
    ):
        F.binary_cross_entropy_with_logits(x, fc.zeros(2, 1, device=device))
    logits, target = fc.zeros(3, 4, device=device), fc.zeros(3, dtype=fc.int64, device=device)
    with pytest.raises(RuntimeError):
        TF.cross_entropy(torch.zeros(3, 4), torch.zeros(3, dtype=torch.long), label_smoothing=1.5)
    # A negative one (torch accepts it unchecked) was refused by the wrapper and is by core.
    for bad in (1.5, -0.25):
        with pytest.raises(
            RuntimeError, match=rf"^\[cross_entropy\] label_smoothing must be between 0.0 and 1.0, got {bad}$"
        ):
            F.cross_entropy(logits, target, label_smoothing=bad)
    # The bounds themselves are valid.
    assert F.cross_entropy(logits, target, label_smoothing=1.0).shape == ()


def test_activation_errors():
    with pytest.raises(TypeError, match=r"\[gelu\].*int64"):
        F.gelu(fc.tensor([1, 2]))
    with pytest.raises(TypeError, match="silu"):
        fc.silu(fc.tensor([1, 2]))
    with pytest.raises(fc.FlambeauError, match="approximate"):
        F.gelu(fc.zeros(3), approximate="fast")
    with pytest.raises(fc.FlambeauError, match="approximate"):
        fc.gelu(fc.zeros(3), approximate="fast")
    with pytest.raises(fc.FlambeauError, match=r"halving dimension must be even.*size 5"):
        F.glu(fc.zeros(2, 5))
    with pytest.raises(fc.FlambeauError, match=r"3 elements.*\(2, 4\).*4 channels"):
        F.prelu(fc.zeros(2, 4), fc.ones(3))
    with pytest.raises(fc.FlambeauError, match="min_val"):
        fc.hardtanh(fc.zeros(2), 2.0, 1.0)
    with pytest.raises(fc.FlambeauError, match="beta"):
        F.smooth_l1_loss(fc.zeros(2), fc.zeros(2), beta=-1.0)
    with pytest.raises(fc.FlambeauError, match="delta"):
        F.huber_loss(fc.zeros(2), fc.zeros(2), delta=0.0)
    with pytest.raises(fc.FlambeauError, match="do not broadcast|broadcast"):
        F.mse_loss(fc.zeros(2, 3), fc.zeros(4))
    with pytest.raises(fc.FlambeauError, match="reduction"):
        nn.L1Loss(reduction="avg")
    with pytest.raises(fc.FlambeauError, match="same number of dims"):
        F.margin_ranking_loss(fc.zeros(3), fc.zeros(3), fc.zeros(3, 1))


# A target out of range is found by the kernel: on a device asynchronously (raised by the
# next synchronous op, as on CUDA), so this error test is the cpu's.
@pytest.mark.on_devices(types=("cpu",))
def test_backward_ops_check_their_inputs():
    x = fb(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="out of bounds"):
        fc._C._cross_entropy_backward(
            fc.tensor(1.0, dtype=fc.float64), x, fc.tensor([0, 9, 1]), fc.zeros(3, dtype=fc.float64), None, 1, -100, 0.0
        )
    with pytest.raises(fc.FlambeauError, match="lse"):
        fc._C._cross_entropy_backward(
            fc.tensor(1.0, dtype=fc.float64), x, fc.tensor([0, 1, 1]), fc.zeros(2, dtype=fc.float64), None, 1, -100, 0.0
        )
    with pytest.raises(fc.FlambeauError, match="grad_output"):
        fc.gelu_backward(fc.zeros(3, dtype=fc.float64), fb(np.zeros(4)))


# ---- second order ----


@pytest.mark.parametrize(
    "fn",
    [
        F.relu,
        lambda x: F.leaky_relu(x, 0.2),
        F.hardtanh,
        F.hardsigmoid,
        lambda x: F.mse_loss(x, fb(np.linspace(-1, 1, 12).reshape(3, 4))),
        lambda x: F.mse_loss(x, fb(np.linspace(-1, 1, 12).reshape(3, 4)), reduction="none"),
        lambda x: F.l1_loss(x, fb(np.linspace(-1, 1, 12).reshape(3, 4)), reduction="sum"),
    ],
    ids=["relu", "leaky_relu", "hardtanh", "hardsigmoid", "mse_mean", "mse_none", "l1_sum"],
)
def test_second_order(fn):
    x = fb(_act_input((3, 4), seed=7), requires_grad=True)
    assert fa.gradgradcheck(fn, (x,), atol=1e-4)


def test_mse_loss_second_order_in_target():
    x = fb(_act_input((3, 4), seed=7), requires_grad=True)
    t = fb(_act_input((3, 4), seed=8), requires_grad=True)
    assert fa.gradgradcheck(lambda a, b: F.mse_loss(a, b), (x, t), atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cosine_similarity_16_bit(dtype):
    # the norms' clamp_min_ takes the 16-bit dtypes; values and gradients within about one 16-bit ulp
    x, y = torch.randn(6, 16).to(dtype), torch.randn(6, 16).to(dtype)
    ours, theirs = compare_forward_backward(
        lambda p, q: F.cosine_similarity(p, q), lambda p, q: TF.cosine_similarity(p, q), [x, y], rtol=1e-2, atol=4e-3
    )
    assert ours.dtype == getattr(fc, str(dtype).removeprefix("torch."))
