"""Shared test helpers: move values between flambeau and PyTorch (the oracle) by copy."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import torch
from flambeau_core.testing import to_host

_TORCH_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "bool": torch.bool,
}


def to_numpy(t: fc.Tensor) -> np.ndarray:
    """A NumPy copy of a flambeau tensor (through the buffer protocol; bfloat16, which NumPy lacks, as
    float32).

    A result of an ``on_devices`` case must be on its device (flambeau_core.testing.to_host),
    and is copied to the cpu first."""
    t = to_host(t.detach())
    return np.array(memoryview(t.float() if t.dtype == fc.bfloat16 else t))


def to_torch(t: fc.Tensor) -> torch.Tensor:
    return torch.from_numpy(to_numpy(t))


def from_torch(x: torch.Tensor) -> fc.Tensor:
    """A flambeau copy of x, of its dtype (bfloat16 through float32)."""
    if x.dtype == torch.bfloat16:
        return fc.tensor(x.detach().float().numpy()).to(fc.bfloat16)
    return fc.tensor(x.detach().numpy().copy())


def assert_close(
    ours: fc.Tensor,
    theirs: torch.Tensor,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    what: str = "",
    *,
    scale_atol: bool = False,
) -> None:
    """ours has theirs' shape and values within rtol/atol (``what`` names the value in a failure).

    ``scale_atol``: atol times max(1, max |theirs|), for float32 sums of many products taken in
    another order than PyTorch's (their error grows with the values' magnitude, not each element's)."""
    prefix = f"{what}: " if what else ""
    assert ours is not None, f"{prefix}flambeau value is None"
    a = to_numpy(ours)
    b = theirs.detach().float().numpy() if theirs.dtype == torch.bfloat16 else theirs.detach().numpy()
    assert a.shape == b.shape, f"{prefix}shape {a.shape} != {b.shape}"
    if scale_atol:
        atol *= max(1.0, float(np.abs(b).max()))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


def copy_params(ours, theirs) -> None:
    """Copies a torch module's parameters into the flambeau module with the same structure."""
    import flambeau_autograd as fa

    their_params = dict(theirs.named_parameters())
    with fa.no_grad():
        for name, p in ours.named_parameters():
            p.copy_(from_torch(their_params[name]))


# ---- running one function on both frameworks (values and gradients) ----

DTYPES = {"float32": (fc.float32, torch.float32, 2e-5, 2e-6), "float64": (fc.float64, torch.float64, 1e-10, 1e-12)}


def fb(a, dtype=fc.float64, requires_grad=False):
    t = fc.tensor(np.ascontiguousarray(a)).to(dtype)
    return t.requires_grad_() if requires_grad else t


def th(a, dtype=torch.float64, requires_grad=False):
    return torch.tensor(np.ascontiguousarray(a), dtype=dtype, requires_grad=requires_grad)


# The short names the run_both tests use.
npy = to_numpy
close = assert_close


def run_both(fb_fn, th_fn, arrays, dtype_name, *, noncontig=False, grad=True, extra_fb=(), extra_th=(), grad_rtol=None):
    """Runs fb_fn(*tensors, *extra) and th_fn likewise, compares values and input gradients."""
    fdt, tdt, rtol, atol = DTYPES[dtype_name]
    grad_rtol = grad_rtol or rtol * 10
    fin, tin = [], []
    fleaf, tleaf = [], []
    for a in arrays:
        if noncontig and a.ndim >= 2:
            at = np.ascontiguousarray(np.swapaxes(a, 0, 1))
            fl, tl = fb(at, fdt, grad), th(at, tdt, grad)
            fin.append(fl.transpose(0, 1))
            tin.append(tl.transpose(0, 1))
        else:
            fl, tl = fb(a, fdt, grad), th(a, tdt, grad)
            fin.append(fl)
            tin.append(tl)
        fleaf.append(fl)
        tleaf.append(tl)
    fo = fb_fn(*fin, *extra_fb)
    to = th_fn(*tin, *extra_th)
    close(fo, to, rtol, atol, "value")
    if grad:
        w = np.random.default_rng(5).standard_normal(tuple(to.shape))
        (fo * fb(w, fdt)).sum().backward()
        (to * th(w, tdt)).sum().backward()
        for i, (a, b) in enumerate(zip(fleaf, tleaf, strict=True)):
            assert a.grad is not None, f"input {i} got no gradient"
            close(a.grad, b.grad, grad_rtol, atol * 10, f"grad of input {i}")
    return fo


def compare_forward_backward(f_ours, f_theirs, tensors, rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0):
    """Calls both functions on copies of the same leaves (``None`` passes through), compares the outputs, then
    backpropagates one random output gradient through both and compares every leaf's gradient.

    Integer tensors are passed as plain copies without gradients. Returns the two outputs."""
    pairs = []
    for t in tensors:
        if t is None:
            pairs.append((None, None))
        elif t.is_floating_point():
            ours = from_torch(t).requires_grad_(True)
            pairs.append((ours, t.detach().clone().requires_grad_(True)))
        else:
            pairs.append((from_torch(t), t.clone()))
    yo = f_ours(*[p[0] for p in pairs])
    yt = f_theirs(*[p[1] for p in pairs])
    assert_close(yo, yt, rtol=rtol, atol=atol)
    g = torch.randn(yt.shape, dtype=yt.dtype, generator=torch.Generator().manual_seed(seed))
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    for o, t in pairs:
        if o is not None and t.requires_grad:
            assert_close(o.grad, t.grad, rtol=rtol, atol=atol)
    return yo, yt


TOLERANCES = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-10)}
