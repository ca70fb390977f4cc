"""Note [Structured kernels] for the LAPACK primitives (src/cpu/linalg/lapack.cpp, lapack_lu.cpp,
linalg_pinv.cpp; their rules in src/meta/linalg_rules.cpp): _linalg_inv, _linalg_solve, _linalg_slogdet,
_linalg_cholesky, _linalg_qr, _linalg_svd, _linalg_eigh, _linalg_eig, _linalg_pinv, _linalg_lu_factor_ex,
_linalg_lu_solve, _lu_pivots_to_permutation, _linalg_ldl_factor_ex, _linalg_ldl_solve, _geqrf and _ormqr run
their meta step (the checks, dtypes and shapes of batches of matrices, the outputs allocated) and one out
kernel that computes into the outputs. Values against PyTorch 2.13 on the cpu and the simulated device
(float32/float64/complex), batched and empty batches, the meta device (shapes and dtypes, no arithmetic),
out= of the public functions written by the kernel (no copy) or copied in with the messages as before,
and torch's error types (a non-square matrix, a singular one)."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from flambeau_core.testing import devices, kernel_trace

RNG = np.random.default_rng(23)
STRUCTURED = """_linalg_inv _linalg_solve _linalg_slogdet _linalg_cholesky _linalg_qr _linalg_svd _linalg_eigh
    _linalg_eig _linalg_pinv _linalg_lu_factor_ex _linalg_lu_solve _lu_pivots_to_permutation _linalg_ldl_factor_ex
    _linalg_ldl_solve _geqrf _ormqr""".split()
DTYPES = ["float32", "float64", "complex64", "complex128"]
TOL = {"float32": 2e-4, "float64": 1e-10, "complex64": 2e-4, "complex128": 1e-10}
SHAPES = [(3, 3), (2, 4, 4), (2, 1, 3, 3), (0, 3, 3), (2, 0, 0), (1, 1)]


def make(shape, dtype, device="cpu", kind="general"):
    a = RNG.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * RNG.standard_normal(shape)
    if kind == "spd" and shape[-1]:
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    if kind == "sym":
        a = a + np.conj(np.swapaxes(a, -1, -2))
    t = torch.from_numpy(np.ascontiguousarray(a)).to(getattr(torch, dtype))
    return fc.tensor(a, dtype=getattr(fc, dtype)).to(device), t


def npy(t):
    if isinstance(t, torch.Tensor):
        return t.resolve_conj().numpy()
    return np.array(memoryview(t.cpu().contiguous())) if t.numel() else np.zeros(tuple(t.shape))


def close(got, expected, dtype, device="cpu"):
    assert got.device.type == fc.device(device).type
    assert tuple(got.shape) == tuple(expected.shape), (tuple(got.shape), tuple(expected.shape))
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(npy(got), npy(expected), rtol=TOL[dtype], atol=TOL[dtype])


def test_the_ops_are_structured_with_a_meta_step():
    # The functional kernel is the generated adapter (meta step, outputs, out kernel): has_kernel still holds.
    for name in STRUCTURED:
        assert _C._has_kernel(name, "CPU"), name
        assert _C._has_kernel(name, "Meta"), name
    assert not _C._has_kernel("_linalg_lstsq", "Meta")  # its residuals' shape depends on the ranks


# ---- values against torch ----


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_square_factorizations(device, dtype, shape):
    a, ta = make(shape, dtype, device)
    close(fc.linalg.inv(a), torch.linalg.inv(ta), dtype, device)
    sign, logabs = fc.linalg.slogdet(a)
    tsign, tlogabs = torch.linalg.slogdet(ta)
    close(sign, tsign, dtype, device)
    close(logabs, tlogabs, dtype.replace("complex64", "float32").replace("complex128", "float64"), device)
    s, ts = make(shape, dtype, device, "spd")
    for upper in (False, True):
        close(fc.linalg.cholesky(s, upper=upper), torch.linalg.cholesky(ts, upper=upper), dtype, device)
    b, tb = make((*shape[:-1], 2), dtype, device)
    close(fc.linalg.solve(a, b), torch.linalg.solve(ta, tb), dtype, device)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3), (0, 2, 3), (2, 0, 3), (3, 0)])
def test_qr_svd_and_geqrf(device, dtype, shape):
    a, ta = make(shape, dtype, device)
    real = dtype.replace("complex64", "float32").replace("complex128", "float64")
    for mode in ("reduced", "complete", "r"):
        q, r = fc.linalg.qr(a, mode=mode)
        tq, tr = torch.linalg.qr(ta, mode=mode)
        close(q, tq, dtype, device)
        close(r, tr, dtype, device)
    for full in (True, False):
        u, s, vh = fc.linalg.svd(a, full_matrices=full)
        tu, ts, tvh = torch.linalg.svd(ta, full_matrices=full)
        close(s, ts, real, device)
        assert tuple(u.shape) == tuple(tu.shape) and tuple(vh.shape) == tuple(tvh.shape)
        k = min(shape[-2:])
        recon = u[..., :k] * s.to(a.dtype).unsqueeze(-2) @ vh[..., :k, :]
        np.testing.assert_allclose(npy(recon), npy(ta), atol=TOL[dtype] * 10)
    close(fc.linalg.svdvals(a), torch.linalg.svdvals(ta), real, device)
    ga, gtau = fc.geqrf(a)
    tga, tgtau = torch.geqrf(ta)
    close(ga, tga, dtype, device)
    close(gtau, tgtau, dtype, device)
    for left in (True, False):
        for transpose in (True, False):
            c, tc = make((*shape[:-2], shape[-2], 2) if left else (*shape[:-2], 2, shape[-2]), dtype, device)
            close(fc.ormqr(ga, gtau, c, left, transpose), torch.ormqr(tga, tgtau, tc, left, transpose), dtype, device)


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2), (2, 0, 0)])
def test_eigen_decompositions(device, dtype, shape):
    a, ta = make(shape, dtype, device, "sym")
    real = dtype.replace("complex64", "float32").replace("complex128", "float64")
    for uplo in ("L", "U"):
        w, v = fc.linalg.eigh(a, UPLO=uplo)
        tw, tv = torch.linalg.eigh(ta, UPLO=uplo)
        close(w, tw, real, device)
        close(fc.linalg.eigvalsh(a, UPLO=uplo), torch.linalg.eigvalsh(ta, UPLO=uplo), real, device)
        # eigenvectors up to a phase: |V^H V_torch| is the identity
        overlap = np.abs(np.swapaxes(np.conj(npy(v)), -1, -2) @ npy(tv))
        np.testing.assert_allclose(overlap, np.broadcast_to(np.eye(shape[-1]), overlap.shape), atol=1e-3)
    g, tg = make(shape, dtype, device)
    lam, vec = fc.linalg.eig(g)
    tlam = torch.linalg.eigvals(tg)
    key = lambda x: np.sort_complex(np.round(x, 3))  # noqa: E731
    np.testing.assert_allclose(key(npy(lam)), key(npy(tlam)), atol=1e-2)
    assert tuple(vec.shape) == shape and str(vec.dtype) == str(lam.dtype) == str(tlam.dtype).replace(
        "torch", "flambeau"
    )
    np.testing.assert_allclose(npy(fc.linalg.eigvals(g)), npy(lam))


@devices(types=("cpu", "sim"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 3, 3), (2, 0, 0), (3, 2), (2, 3)])
def test_lu_ldl_and_pinv(device, dtype, shape):
    a, ta = make(shape, dtype, device)
    lu, piv, info = fc.linalg.lu_factor_ex(a)
    tlu, tpiv, tinfo = torch.linalg.lu_factor_ex(ta)
    close(lu, tlu, dtype, device)
    assert npy(piv).tolist() == npy(tpiv).tolist() and npy(info).tolist() == npy(tinfo).tolist()
    p, lo, up = fc.lu_unpack(lu, piv)
    tp, tlo, tup = torch.lu_unpack(tlu, tpiv)
    close(p, tp, dtype, device)
    close(lo, tlo, dtype, device)
    for hermitian in (False, True):
        close(fc.linalg.pinv(a, hermitian=hermitian and shape[-1] == shape[-2]),
              torch.linalg.pinv(ta, hermitian=hermitian and shape[-1] == shape[-2]), dtype, device)  # fmt: skip
    if shape[-1] != shape[-2]:
        return
    for left in (True, False):
        for adjoint in (False, True):
            b, tb = make((*shape[:-1], 2) if left else (*shape[:-2], 2, shape[-1]), dtype, device)
            close(fc.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint),
                  torch.linalg.lu_solve(tlu, tpiv, tb, left=left, adjoint=adjoint), dtype, device)  # fmt: skip
    s, ts = make(shape, dtype, device, "sym")
    for hermitian in (False, True):
        ld, lpiv, linfo = fc.linalg.ldl_factor_ex(s, hermitian=hermitian)
        tld, tlpiv, tlinfo = torch.linalg.ldl_factor_ex(ts, hermitian=hermitian)
        close(ld, tld, dtype, device)
        assert npy(lpiv).tolist() == npy(tlpiv).tolist() and npy(linfo).tolist() == npy(tlinfo).tolist()
        b, tb = make((*shape[:-1], 2), dtype, device)
        close(fc.linalg.ldl_solve(ld, lpiv, b, hermitian=hermitian),
              torch.linalg.ldl_solve(tld, tlpiv, tb, hermitian=hermitian), dtype, device)  # fmt: skip


# ---- the meta device: shapes and dtypes, nothing computed ----


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 5, 5), (0, 4, 4), (4, 2), (2, 3, 5)])
def test_meta_device_gives_the_cpu_shapes_and_dtypes(dtype, shape):
    a, _ = make(shape, dtype)
    m = a.to("meta")
    square = shape[-1] == shape[-2]
    b, _ = make((*shape[:-1], 2), dtype)
    calls = [
        lambda x: _C._linalg_qr(x, "reduced"),
        lambda x: _C._linalg_qr(x, "complete"),
        lambda x: _C._linalg_qr(x, "r"),
        lambda x: _C._linalg_svd(x, True, True),
        lambda x: _C._linalg_svd(x, False, False),
        lambda x: _C._linalg_lu_factor_ex(x, True, False),
        lambda x: _C._geqrf(x),
        lambda x: _C._linalg_pinv(x, _tol(x, 0.0), _tol(x, [1e-7]), False),
    ]
    if square:
        calls += [
            lambda x: _C._linalg_inv(x),
            lambda x: _C._linalg_slogdet(x),
            lambda x: _C._linalg_cholesky(x if x.is_meta else _spd(x), False),
            lambda x: _C._linalg_eigh(x, "L", True),
            lambda x: _C._linalg_eigh(x, "U", False),
            lambda x: _C._linalg_eig(x, True),
            lambda x: _C._linalg_eig(x, False),
            lambda x: _C._linalg_ldl_factor_ex(x, False, False),
            lambda x: _C._linalg_solve(x, b.to(x.device)),
        ]
    for call in calls:
        got, ref = call(m), call(a)
        got, ref = (got, ref) if isinstance(ref, tuple) else ((got,), (ref,))
        for g, r in zip(got, ref, strict=True):
            assert g.is_meta
            assert (tuple(g.shape), g.dtype) == (tuple(r.shape), r.dtype)


def _tol(x, value):
    return fc.tensor(value, dtype=fc.float64).to(x.device)


def _spd(x):
    return x @ x.mH + fc.eye(x.shape[-1], dtype=x.dtype) * x.shape[-1]


def test_meta_device_of_the_solves_against_torch():
    lu, piv = fc.empty(2, 4, 4, device="meta"), fc.empty(2, 4, dtype=fc.int32, device="meta")
    b = fc.empty(2, 4, 3, device="meta")
    tlu, tpiv = torch.empty(2, 4, 4, device="meta"), torch.empty(2, 4, dtype=torch.int32, device="meta")
    tb = torch.empty(2, 4, 3, device="meta")
    x = _C._linalg_lu_solve(lu, piv, b, True, False)
    assert x.is_meta and tuple(x.shape) == tuple(torch.linalg.lu_solve(tlu, tpiv, tb).shape)
    assert tuple(_C._linalg_ldl_solve(lu, piv, b, False).shape) == (2, 4, 3)
    assert tuple(_C._lu_pivots_to_permutation(piv, 6).shape) == (2, 6)
    assert _C._lu_pivots_to_permutation(piv, 6).dtype == fc.int64
    a, tau = fc.empty(2, 5, 3, device="meta"), fc.empty(2, 3, device="meta")
    c = fc.empty(2, 5, 4, device="meta")
    assert tuple(_C._ormqr(a, tau, c, True, False).shape) == (2, 5, 4)
    # the checks run on meta too, with the cpu's messages
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.lu_solve\] incompatible shapes of LU and B"):
        _C._linalg_lu_solve(lu, piv, fc.empty(2, 3, 3, device="meta"), True, False)
    with pytest.raises(fc.FlambeauError, match=r"\[lu_unpack\] expected at least as many rows as pivots"):
        _C._lu_pivots_to_permutation(piv, 3)
    with pytest.raises(TypeError, match=r"\[linalg.eig\] expected a float32, float64, complex64 or complex128"):
        _C._linalg_eig(fc.empty(3, 3, dtype=fc.int64, device="meta"), True)
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.eigvals\] A must be batches of square matrices"):
        _C._linalg_eig(fc.empty(3, 2, device="meta"), False)


def test_pinv_batch_broadcasts_with_the_tolerances():
    a, ta = make((3, 4, 2), "float64")
    rtol = fc.tensor([[1e-8], [0.5]], dtype=fc.float64).unsqueeze(-1)  # (2, 1, 1): batch (2, 3)
    out = _C._linalg_pinv(a, fc.zeros([], dtype=fc.float64), rtol.squeeze(-1), False)
    assert tuple(out.shape) == (2, 3, 2, 4)
    assert tuple(_C._linalg_pinv(a.to("meta"), fc.zeros([]).to("meta"), rtol.squeeze(-1).to("meta"), False).shape) == (
        2,
        3,
        2,
        4,
    )
    expected = torch.linalg.pinv(ta, rtol=torch.tensor([[1e-8], [0.5]], dtype=torch.float64))
    np.testing.assert_allclose(npy(out), expected.numpy(), atol=1e-10)
    with pytest.raises(fc.FlambeauError, match=r"\[mul\]"):
        _C._linalg_pinv(a, fc.zeros([]), fc.zeros(5), False)


# ---- out= of the public functions ----


def kernel_counts(fn):
    """The cpu kernels a call ran (the meta step of the out= check runs on meta stand-ins), by name."""
    with kernel_trace() as rows:
        fn()
    names = [r[0] for r in rows if r[1] == "cpu"]
    return {n: names.count(n) for n in set(names)}


def test_out_is_written_by_the_kernel():
    # out= of the result's dtype runs the op's kernel once into out: no result to copy in (the kernel's
    # LAPACK buffer is its own)
    a, ta = make((3, 4, 4), "float64")
    out = fc.empty(3, 4, 4, dtype=fc.float64)
    assert kernel_counts(lambda: fc.linalg.inv(a, out=out)) == {"_linalg_inv": 1}
    assert kernel_counts(lambda: out.copy_(fc.linalg.inv(a))) == {"_linalg_inv": 1, "copy_": 1}
    close(out, torch.linalg.inv(ta), "float64")
    s, ts = make((3, 4, 4), "float64", kind="spd")
    assert kernel_counts(lambda: fc.linalg.cholesky(s, out=out)) == {"_linalg_cholesky": 1}
    close(out, torch.linalg.cholesky(ts), "float64")
    q, r = fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.float64)  # empty outs: resized silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = fc.linalg.qr(a, out=(q, r))
    assert res.Q is q and res.R is r
    tq, tr = torch.linalg.qr(ta)
    close(q, tq, "float64")
    close(r, tr, "float64")
    outs = (fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.float64))
    assert kernel_counts(lambda: fc.linalg.svd(a, out=outs))["_linalg_svd"] == 1
    close(outs[1], torch.linalg.svdvals(ta), "float64")
    sign, logabs = fc.empty(3, dtype=fc.float64), fc.empty(3, dtype=fc.float64)
    res = fc.linalg.slogdet(a, out=(sign, logabs))
    assert res.sign is sign and res.logabsdet is logabs
    tsign, tlogabs = torch.linalg.slogdet(ta)
    close(sign, tsign, "float64")
    close(logabs, tlogabs, "float64")
    lam, vec = fc.empty(3, 4, dtype=fc.complex128), fc.empty(3, 4, 4, dtype=fc.complex128)
    assert kernel_counts(lambda: fc.linalg.eig(a, out=(lam, vec)))["_linalg_eig"] == 1
    np.testing.assert_allclose(npy(lam), npy(fc.linalg.eigvals(a)))
    w, v = fc.empty(3, 4, dtype=fc.float64), fc.empty(3, 4, 4, dtype=fc.float64)
    sym, tsym = make((3, 4, 4), "float64", kind="sym")
    fc.linalg.eigh(sym, out=(w, v))
    close(w, torch.linalg.eigvalsh(tsym), "float64")
    lu, piv, info = fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.int32), fc.empty(0, dtype=fc.int32)
    fc.linalg.lu_factor_ex(a, out=(lu, piv, info))
    tlu, tpiv, _ = torch.linalg.lu_factor_ex(ta)
    close(lu, tlu, "float64")
    assert npy(piv).tolist() == tpiv.tolist() and npy(info).tolist() == [0, 0, 0]
    b, tb = make((3, 4, 2), "float64")
    x = fc.empty(3, 4, 2, dtype=fc.float64)
    assert kernel_counts(lambda: fc.linalg.lu_solve(lu, piv, b, out=x))["_linalg_lu_solve"] == 1
    close(x, torch.linalg.lu_solve(tlu, tpiv, tb), "float64")
    assert kernel_counts(lambda: fc.linalg.solve(a, b, out=x))["_linalg_solve"] == 1
    close(x, torch.linalg.solve(ta, tb), "float64")
    ld, lpiv, linfo = fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.int32), fc.empty(0, dtype=fc.int32)
    fc.linalg.ldl_factor_ex(sym, out=(ld, lpiv, linfo))
    close(ld, torch.linalg.ldl_factor_ex(tsym).LD, "float64")
    fc.linalg.ldl_solve(ld, lpiv, b, out=x)
    close(x, torch.linalg.ldl_solve(*torch.linalg.ldl_factor(tsym), tb), "float64")
    ga, gtau = fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.float64)
    fc.geqrf(a, out=(ga, gtau))
    tga, tgtau = torch.geqrf(ta)
    close(ga, tga, "float64")
    close(gtau, tgtau, "float64")
    pi = fc.empty(3, 4, 4, dtype=fc.float64)
    assert kernel_counts(lambda: fc.linalg.pinv(a, out=pi))["_linalg_pinv"] == 1
    close(pi, torch.linalg.pinv(ta), "float64")


def test_strided_and_aliasing_outs():
    a, ta = make((4, 4), "float32")
    out = fc.empty(4, 4).transpose(0, 1)  # strided: the result is copied in
    fc.linalg.inv(a, out=out)
    close(out, torch.linalg.inv(ta), "float32")
    b = a.clone()
    fc.linalg.inv(b, out=b)  # out is the input: read before written
    close(b, torch.linalg.inv(ta), "float32")
    s, ts = make((3, 3), "float64", kind="spd")
    fc.linalg.cholesky(s, out=s)
    close(s, torch.linalg.cholesky(ts), "float64")
    g, tg = make((5, 3), "float64")
    ga, gtau = fc.geqrf(g)
    c, tc = make((5, 2), "float64")
    fc.ormqr(ga, gtau, c, out=c)
    close(c, torch.ormqr(*torch.geqrf(tg), tc), "float64")


def test_out_errors_and_warnings_keep_their_messages():
    a, ta = make((3, 3), "float32")
    with pytest.raises(TypeError, match=r"\[linalg.inv\] expected out tensor to have dtype float32, but got float64"):
        fc.linalg.inv(a, out=fc.empty(3, 3, dtype=fc.float64))
    with pytest.raises(RuntimeError):  # torch's type for a wrong out dtype
        torch.linalg.inv(ta, out=torch.empty(3, 3, dtype=torch.float64))
    out = fc.empty(2, 2)
    with pytest.warns(UserWarning, match=r"\[linalg.inv\] An output with one or more elements was resized"):
        fc.linalg.inv(a, out=out)
    assert tuple(out.shape) == (3, 3)
    with pytest.raises(TypeError, match=r"\[linalg.qr\] out= must be a tuple of 2 tensors, got 3"):
        fc.linalg.qr(a, out=(fc.empty(0), fc.empty(0), fc.empty(0)))
    with pytest.raises(TypeError, match=r"\[linalg.eig\] expected out tensor to have dtype complex64"):
        fc.linalg.eig(a, out=(fc.empty(0), fc.empty(0)))
    # pinv's out may be of a dtype the result casts to (torch's rule): computed and copied in
    o64 = fc.empty(3, 3, dtype=fc.float64)
    fc.linalg.pinv(a, out=o64)
    np.testing.assert_allclose(npy(o64), torch.linalg.pinv(ta).double().numpy(), atol=1e-5)


# ---- errors: torch's types, the messages as before ----


@devices(types=("cpu", "sim"))
def test_errors_of_shapes_and_values(device):
    rect, trect = make((2, 3), "float64", device)
    with pytest.raises(RuntimeError, match=r"\[linalg.inv\] A must be batches of square matrices, but they are 2 by 3"):
        _C._linalg_inv(rect)
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        torch.linalg.inv(trect)
    sing = fc.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=fc.float64).to(device)
    tsing = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r"linalg.inv: The diagonal element 2 is zero, the inversion could not"):
        fc.linalg.inv(sing)
    with pytest.raises(RuntimeError, match="The diagonal element 2 is zero"):
        torch.linalg.inv(tsing)
    with pytest.raises(RuntimeError, match=r"linalg.cholesky: .*not positive-definite"):
        fc.linalg.cholesky(-fc.eye(2, dtype=fc.float64).to(device))
    with pytest.raises(
        RuntimeError, match=r"\(Batch element 1\): The solver failed because the input matrix is singular"
    ):
        fc.linalg.solve(
            fc.stack([fc.eye(2, dtype=fc.float64).to(device), sing]), fc.ones(2, 2, 1, dtype=fc.float64).to(device)
        )
    _, info = fc.linalg.inv_ex(sing)  # the _ex forms read the info at the call
    assert info.item() == torch.linalg.inv_ex(tsing).info.item() == 2
    lu, piv, info = fc.linalg.lu_factor_ex(sing)
    assert info.item() == torch.linalg.lu_factor_ex(tsing).info.item()
    with pytest.raises(RuntimeError, match=r"\[linalg.lu_factor\] U\[2,2\] is zero"):
        fc.linalg.lu_factor(sing)
    with pytest.raises(RuntimeError, match=r"\[lu_unpack\] pivots must be 1-based row indices in \[1, 2\], got 3"):
        _C._lu_pivots_to_permutation(fc.tensor([3, 1], dtype=fc.int32).to(device), 2)
    with pytest.raises(
        TypeError, match=r"\[linalg.solve\] expected A and B to have the same dtype, got float64 and float32"
    ):
        _C._linalg_solve(fc.eye(2, dtype=fc.float64).to(device), fc.ones(2, 1).to(device))
    with pytest.raises(TypeError, match=r"\[linalg.qr\] expected a float32 or float64 tensor for A, got int64"):
        _C._linalg_qr(fc.ones(2, 2, dtype=fc.int64).to(device), "reduced")
    with pytest.raises(RuntimeError, match=r"\[linalg.eigh\] Expected UPLO argument to be 'L' or 'U', but got X"):
        _C._linalg_eigh(fc.eye(2).to(device), "X", True)
    with pytest.raises(
        RuntimeError, match=r"\[ormqr\] tau.shape\[-1\] must be less than or equal to input.shape\[-1\]"
    ):
        _C._ormqr(fc.ones(3, 1).to(device), fc.ones(2).to(device), fc.ones(3, 2).to(device), True, False)


@devices(types=("cpu", "sim"))
def test_empty_batches_and_matrices(device):
    for shape in [(0, 3, 3), (4, 0, 0), (0, 0)]:
        a, ta = make(shape, "float64", device)
        assert tuple(fc.linalg.inv(a).shape) == tuple(torch.linalg.inv(ta).shape)
        assert tuple(fc.linalg.det(a).shape) == tuple(torch.linalg.det(ta).shape)
        w, v = fc.linalg.eigh(a)
        tw, tv = torch.linalg.eigh(ta)
        assert (tuple(w.shape), tuple(v.shape)) == (tuple(tw.shape), tuple(tv.shape))
        q, r = fc.linalg.qr(a, mode="complete")
        tq, tr = torch.linalg.qr(ta, mode="complete")
        close(q, tq, "float64", device)
        close(r, tr, "float64", device)
    # a (0,) result for what the arguments do not ask for, as torch's
    a, ta = make((2, 3), "float64", device)
    u, s, vh = _C._linalg_svd(a, False, False)
    assert tuple(u.shape) == tuple(vh.shape) == (0,)
    q, r = fc.linalg.qr(a, mode="r")
    assert tuple(q.shape) == tuple(torch.linalg.qr(ta, mode="r").Q.shape) == (0,)
