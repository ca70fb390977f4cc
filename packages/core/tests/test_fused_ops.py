"""Core's fused nn ops against NumPy: linear (one GEMM with the bias epilogue) and the fused
optimizer steps over tensor lists (_fused_sgd_/_fused_adam_/_fused_rmsprop_/_fused_adagrad_, _foreach_zero_)."""

from __future__ import annotations

import math

import flambeau_core as fc
import numpy as np
import pytest
from flambeau_core._C import _foreach_zero_, _fused_adagrad_, _fused_adam_, _fused_rmsprop_, _fused_sgd_
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

DT = {"float32": (fc.float32, np.float32, 2e-5), "float64": (fc.float64, np.float64, 1e-12)}
SHAPES = [(3, 4), (5,), (), (0, 2), (70001,)]


def _lists(dt, rng, n=3):
    fdt, ndt, _ = DT[dt]
    arrays = [[rng.standard_normal(s).astype(ndt) for s in SHAPES] for _ in range(n)]
    return [[fc.tensor(a, dtype=fdt) if a.ndim else fc.tensor(float(a), dtype=fdt) for a in arr] for arr in arrays], [
        [a.astype(np.float64) for a in arr] for arr in arrays
    ]


@pytest.mark.parametrize("dt", sorted(DT))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xshape", [(7, 5), (1, 5), (5,), (2, 3, 5), (0, 5)])
def test_linear_matches_numpy(dt, bias, xshape):
    fdt, ndt, tol = DT[dt]
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(xshape).astype(ndt), rng.standard_normal((4, 5)).astype(ndt), rng.standard_normal(4)
    b = b.astype(ndt)
    got = fc.linear(fc.tensor(x), fc.tensor(w), fc.tensor(b) if bias else None)
    want = x.astype(np.float64) @ w.T.astype(np.float64) + (b if bias else 0)
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(to_numpy(got, widen=True).reshape(want.shape), want, rtol=tol * 10, atol=tol * 10)


def test_linear_empty_in_features_gives_bias():
    assert fc.linear(fc.ones(2, 0), fc.ones(3, 0), fc.tensor([1.0, 2.0, 3.0])).tolist() == [[1.0, 2.0, 3.0]] * 2
    assert fc.linear(fc.ones(2, 0), fc.ones(3, 0)).tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("dt", sorted(DT))
@pytest.mark.parametrize(
    "momentum, dampening, nesterov, wd, maximize",
    [
        (0.0, 0.0, False, 0.0, False),
        (0.9, 0.0, False, 0.01, False),
        (0.9, 0.2, False, 0.0, True),
        (0.8, 0.0, True, 0.1, False),
    ],
)
def test_fused_sgd_matches_numpy(dt, momentum, dampening, nesterov, wd, maximize):
    rng = np.random.default_rng(1)
    (params, g1, g2), (P, G1, G2) = _lists(dt, rng)
    bufs = [fc.empty_like(p) for p in params] if momentum else []
    B = [None] * len(P)
    lr = 0.1
    for step, (grads, G) in enumerate(((g1, G1), (g2, G2))):
        _fused_sgd_(
            params,
            grads,
            bufs,
            weight_decay=wd,
            momentum=momentum,
            lr=lr,
            dampening=dampening,
            nesterov=nesterov,
            maximize=maximize,
            is_first_step=step == 0,
        )
        for i in range(len(P)):
            d = (-G[i] if maximize else G[i]) + wd * P[i]
            if momentum:
                B[i] = d.copy() if step == 0 else momentum * B[i] + (1 - dampening) * d
                d = d + momentum * B[i] if nesterov else B[i]
            P[i] = P[i] - lr * d
    tol = DT[dt][2]
    for p, want in zip(params, P, strict=True):
        np.testing.assert_allclose(to_numpy(p, widen=True).reshape(want.shape), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", sorted(DT))
@pytest.mark.parametrize(
    "amsgrad, wd, decoupled, maximize",
    [(False, 0.0, False, False), (True, 0.1, False, False), (False, 0.1, True, True), (True, 0.05, True, False)],
)
def test_fused_adam_matches_numpy(dt, amsgrad, wd, decoupled, maximize):
    fdt = DT[dt][0]
    rng = np.random.default_rng(2)
    (params, g1, g2), (P, G1, G2) = _lists(dt, rng)
    m = [fc.zeros_like(p) for p in params]
    v = [fc.zeros_like(p) for p in params]
    mx = [fc.zeros_like(p) for p in params] if amsgrad else []
    steps = [fc.zeros((), dtype=fc.float32) for _ in params]
    M, V, MX = [np.zeros_like(a) for a in P], [np.zeros_like(a) for a in P], [np.zeros_like(a) for a in P]
    lr, b1, b2, eps = 0.01, 0.9, 0.99, 1e-8
    for t, (grads, G) in enumerate(((g1, G1), (g2, G2)), start=1):
        _fused_adam_(
            params,
            grads,
            m,
            v,
            mx,
            steps,
            lr=lr,
            beta1=b1,
            beta2=b2,
            weight_decay=wd,
            eps=eps,
            amsgrad=amsgrad,
            maximize=maximize,
            decoupled_weight_decay=decoupled,
        )
        for i in range(len(P)):
            g = -G[i] if maximize else G[i]
            if decoupled:
                P[i] = P[i] * (1 - lr * wd)
            else:
                g = g + wd * P[i]
            M[i] = b1 * M[i] + (1 - b1) * g
            V[i] = b2 * V[i] + (1 - b2) * g * g
            MX[i] = np.maximum(MX[i], V[i])
            denom = np.sqrt(MX[i] if amsgrad else V[i]) / math.sqrt(1 - b2**t) + eps
            P[i] = P[i] - lr / (1 - b1**t) * M[i] / denom
    assert [s.item() for s in steps] == [2.0] * len(steps) and steps[0].dtype == fc.float32
    tol = 1e-4 if fdt == fc.float32 else 1e-10
    for p, want in zip(params, P, strict=True):
        np.testing.assert_allclose(to_numpy(p, widen=True).reshape(want.shape), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", sorted(DT))
@pytest.mark.parametrize(
    "centered, momentum, wd, maximize",
    [(False, 0.0, 0.0, False), (True, 0.0, 0.1, False), (False, 0.9, 0.0, True), (True, 0.5, 0.01, False)],
)
def test_fused_rmsprop_matches_numpy(dt, centered, momentum, wd, maximize):
    fdt = DT[dt][0]
    rng = np.random.default_rng(3)
    (params, g1, g2), (P, G1, G2) = _lists(dt, rng)
    sq = [fc.zeros_like(p) for p in params]
    ga = [fc.zeros_like(p) for p in params] if centered else []
    bufs = [fc.zeros_like(p) for p in params] if momentum else []
    steps = [fc.zeros(()) for _ in params]
    SQ, GA, BUF = ([np.zeros_like(a) for a in P] for _ in range(3))
    lr, alpha, eps = 0.01, 0.9, 1e-8
    for grads, G in ((g1, G1), (g2, G2)):
        _fused_rmsprop_(
            params,
            grads,
            sq,
            ga,
            bufs,
            steps,
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=wd,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
        )
        for i in range(len(P)):
            g = (-G[i] if maximize else G[i]) + wd * P[i]
            SQ[i] = alpha * SQ[i] + (1 - alpha) * g * g
            if centered:
                GA[i] = alpha * GA[i] + (1 - alpha) * g
                avg = np.sqrt(SQ[i] - GA[i] ** 2) + eps
            else:
                avg = np.sqrt(SQ[i]) + eps
            if momentum:
                BUF[i] = momentum * BUF[i] + g / avg
                P[i] = P[i] - lr * BUF[i]
            else:
                P[i] = P[i] - lr * g / avg
    tol = 1e-4 if fdt == fc.float32 else 1e-9
    for p, want in zip(params, P, strict=True):
        np.testing.assert_allclose(to_numpy(p, widen=True).reshape(want.shape), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", sorted(DT))
def test_fused_adagrad_matches_numpy(dt):
    fdt = DT[dt][0]
    rng = np.random.default_rng(4)
    (params, g1, g2), (P, G1, G2) = _lists(dt, rng)
    sums = [fc.full(tuple(p.shape), 0.1, dtype=fdt) for p in params]
    steps = [fc.zeros(()) for _ in params]
    S = [np.full(a.shape, 0.1) for a in P]
    lr, lr_decay, wd, eps = 0.05, 0.1, 0.01, 1e-10
    for t, (grads, G) in enumerate(((g1, G1), (g2, G2)), start=1):
        _fused_adagrad_(params, grads, sums, steps, lr=lr, lr_decay=lr_decay, weight_decay=wd, eps=eps, maximize=False)
        for i in range(len(P)):
            g = G[i] + wd * P[i]
            S[i] = S[i] + g * g
            P[i] = P[i] - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(S[i]) + eps)
    tol = 1e-5 if fdt == fc.float32 else 1e-12
    for p, want in zip(params, P, strict=True):
        np.testing.assert_allclose(to_numpy(p, widen=True).reshape(want.shape), want, rtol=tol, atol=tol)


def test_fused_ops_mixed_dtypes_in_one_list_and_empty_lists():
    ps = [fc.ones(3), fc.ones(2, dtype=fc.float64)]
    _fused_sgd_(
        ps,
        [fc.ones(3), fc.ones(2, dtype=fc.float64)],
        [],
        weight_decay=0.0,
        momentum=0.0,
        lr=0.5,
        dampening=0.0,
        nesterov=False,
        maximize=False,
        is_first_step=False,
    )
    assert ps[0].tolist() == [0.5] * 3 and ps[1].tolist() == [0.5] * 2
    _fused_sgd_(
        [],
        [],
        [],
        weight_decay=0.0,
        momentum=0.0,
        lr=0.5,
        dampening=0.0,
        nesterov=False,
        maximize=False,
        is_first_step=False,
    )
    _foreach_zero_([])


def test_bad_step_tensor_changes_nothing():
    p, s_ok = fc.ones(2), fc.zeros(())
    with pytest.raises(TypeError, match=r"state_steps\[1\] must be float32 or float64, got int64"):
        _fused_adagrad_(
            [p, fc.ones(2)],
            [fc.ones(2), fc.ones(2)],
            [fc.zeros(2), fc.zeros(2)],
            [s_ok, fc.zeros((), dtype=fc.int64)],
            lr=0.1,
            lr_decay=0.0,
            weight_decay=0.0,
            eps=1e-10,
            maximize=False,
        )
    assert s_ok.item() == 0.0 and p.tolist() == [1.0, 1.0]
