"""The direct float32 convolution (Note [Direct convolution], conv_direct_avx512.cpp)
against PyTorch 2.13 (CPU): the shapes it takes on an AVX-512 CPU (3x3 and
other kernels, strides 1 and 2, padding, dilation, groups, output channels
that do not fill a block of 8, planes whose width is or is not a multiple of
16, the ResNet-8 layers), float32 and float64 (float64 and CPUs without
AVX-512 take im2col + GEMM: the same tests check that path), non-contiguous
inputs; and the same values from every CPU capability, each in a child
process."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

DT = {"float32": (fc.float32, torch.float32, np.float32), "float64": (fc.float64, torch.float64, np.float64)}
TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def rng_for(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def noncontig(a: np.ndarray) -> fc.Tensor:
    """The values of a as a non-contiguous flambeau view (every other column of a wider tensor)."""
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    t = fc.tensor(wide)[..., ::2]
    assert not t.is_contiguous()
    return t


# (N, Cin, Cout, H, W, kernel, stride, padding, dilation, groups)
CASES = [
    # the ResNet-8 layers (batch cut to 3)
    (3, 3, 16, 32, 32, 3, 1, 1, 1, 1),
    (3, 16, 16, 32, 32, 3, 1, 1, 1, 1),
    (3, 16, 32, 32, 32, 3, 2, 1, 1, 1),
    (3, 32, 32, 16, 16, 3, 1, 1, 1, 1),
    (3, 16, 32, 32, 32, 1, 2, 0, 1, 1),
    (3, 32, 64, 16, 16, 3, 2, 1, 1, 1),
    (3, 64, 64, 8, 8, 3, 1, 1, 1, 1),
    (3, 32, 64, 16, 16, 1, 2, 0, 1, 1),
    # odd sizes: output channels not a multiple of 8, odd planes, one channel
    (2, 5, 13, 11, 9, 3, 1, 1, 1, 1),
    (2, 5, 13, 11, 9, 3, 2, 1, 1, 1),
    (2, 7, 3, 15, 17, 3, 2, 1, 1, 1),
    (1, 1, 9, 7, 23, 3, 1, 0, 1, 1),
    (2, 3, 17, 5, 5, 3, 1, 1, 1, 1),
    (1, 2, 8, 3, 3, 3, 1, 1, 1, 1),
    (2, 4, 8, 1, 40, (1, 3), 1, (0, 1), 1, 1),
    (2, 4, 9, 40, 1, (3, 1), 2, (1, 0), 1, 1),
    # other kernels, mixed strides, asymmetric padding, dilation, groups
    (2, 6, 10, 12, 14, 5, 1, 2, 1, 1),
    (2, 6, 10, 13, 12, (5, 3), (2, 1), (2, 0), 1, 1),
    (2, 6, 10, 13, 12, (3, 5), (1, 2), (0, 2), 1, 1),
    (2, 4, 12, 12, 12, 3, 1, 2, 2, 1),
    (2, 4, 12, 15, 13, 3, 2, 2, (2, 3), 1),
    (2, 6, 12, 10, 10, 3, 1, 1, 1, 2),
    (2, 6, 9, 10, 11, 3, 2, 1, 1, 3),
    (2, 3, 8, 9, 9, 2, 2, 0, 1, 1),
    (2, 3, 8, 10, 10, 4, 2, 1, 1, 1),
    (1, 3, 8, 33, 47, 3, 1, 1, 1, 1),
]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_conv2d_direct_matches_torch(case, bias, dtype):
    n, cin, cout, h, w, k, s, p, d, g = case
    fdt, _, ndt = DT[dtype]
    r = rng_for("direct", case, bias, dtype)
    kh, kw = (k, k) if isinstance(k, int) else k
    x = r.standard_normal((n, cin, h, w)).astype(ndt)
    wt = r.standard_normal((cout, cin // g, kh, kw)).astype(ndt)
    b = r.standard_normal(cout).astype(ndt) if bias else None
    expected = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(wt), None if b is None else torch.from_numpy(b), s, p, d, g
    ).numpy()
    got = fc.conv2d(fc.tensor(x), fc.tensor(wt), None if b is None else fc.tensor(b), s, p, d, g)
    assert got.dtype == fdt
    np.testing.assert_allclose(to_numpy(got), expected, **TOL[dtype])
    # the same from a non-contiguous input and weight
    got_nc = fc.conv2d(noncontig(x), noncontig(wt), None if b is None else fc.tensor(b), s, p, d, g)
    np.testing.assert_allclose(to_numpy(got_nc), expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("case", [(3, 4, 10, 37, 3, 1, 1), (2, 5, 9, 64, 3, 2, 1), (2, 3, 16, 20, 5, 2, 2)])
def test_conv1d_direct_matches_torch(case, dtype):
    n, cin, cout, length, k, s, p = case
    _, _, ndt = DT[dtype]
    r = rng_for("direct1d", case, dtype)
    x = r.standard_normal((n, cin, length)).astype(ndt)
    wt = r.standard_normal((cout, cin, k)).astype(ndt)
    b = r.standard_normal(cout).astype(ndt)
    expected = torch.nn.functional.conv1d(torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b), s, p)
    got = fc.conv1d(fc.tensor(x), fc.tensor(wt), fc.tensor(b), s, p)
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), **TOL[dtype])


def test_conv2d_direct_threads_and_large_batch():
    """More images than threads and fewer: the same values with 1 and 2 threads."""
    r = rng_for("threads")
    x = r.standard_normal((5, 16, 12, 12)).astype(np.float32)
    wt = r.standard_normal((24, 16, 3, 3)).astype(np.float32)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), None, 2, 1).numpy()
    old = fc.get_num_threads()
    try:
        for threads in (1, 2):
            fc.set_num_threads(threads)
            for batch in (1, 5):
                got = fc.conv2d(fc.tensor(x[:batch]), fc.tensor(wt), None, 2, 1)
                np.testing.assert_allclose(to_numpy(got), expected[:batch], rtol=2e-4, atol=2e-4)
    finally:
        fc.set_num_threads(old)


# The cpu's kernels per ISA, in child processes: a test of the host.
@pytest.mark.on_devices(types=("cpu",))
def test_conv2d_every_cpu_capability_gives_the_same_values():
    """The direct kernel (AVX-512) and im2col + GEMM (AVX2, base) agree, each in a child process."""
    code = (
        "import flambeau_core as fc, numpy as np, sys\n"
        "r = np.random.default_rng(3)\n"
        "out = []\n"
        "for (n, ci, co, h, k, s, p) in [(2, 16, 16, 32, 3, 1, 1), (2, 16, 32, 32, 3, 2, 1), (1, 5, 13, 9, 3, 2, 0)]:\n"
        "    x = fc.tensor(r.standard_normal((n, ci, h, h)).astype(np.float32))\n"
        "    w = fc.tensor(r.standard_normal((co, ci, k, k)).astype(np.float32))\n"
        "    out.append(np.array(memoryview(fc.conv2d(x, w, None, s, p))).ravel())\n"
        "print(fc._C._cpu_capability()); np.save(sys.argv[1], np.concatenate(out))\n"
    )
    results = {}
    for cap in ("base", "avx2", "avx512"):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fb_convd_{os.getpid()}_{cap}.npy")
        env = dict(os.environ, FLAMBEAU_CPU_CAPABILITY=cap)
        r = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True, check=True)
        results[r.stdout.strip()] = np.load(path)
        os.remove(path)
    ref = next(iter(results.values()))
    for cap, v in results.items():
        np.testing.assert_allclose(v, ref, rtol=2e-4, atol=2e-4, err_msg=cap)


# The cpu's two AVX-512 kernels: a test of the host.
@pytest.mark.on_devices(types=("cpu",))
@pytest.mark.parametrize("kernel", ["flat", "cv"])
def test_both_direct_kernels_match_torch(kernel, cpu_settings):
    """backends.cpu.conv_direct_kernel = "flat" | "cv" forces one of the two AVX-512 kernels for
    every float32 case (else the output-channel count picks one), against torch."""
    cpu_settings(conv_direct_kernel=kernel)
    cases = [c for c in CASES if isinstance(c[5], int) and isinstance(c[6], int) and isinstance(c[8], int)]
    r = np.random.default_rng(5)
    for n, ci, co, h, w, k, s, p, d, g in cases:
        x = r.standard_normal((n, ci, h, w)).astype(np.float32)
        wt = r.standard_normal((co, ci // g, k, k)).astype(np.float32)
        b = r.standard_normal(co).astype(np.float32)
        y = fc.conv2d(fc.tensor(x), fc.tensor(wt), fc.tensor(b), s, p, d, g)
        expected = torch.nn.functional.conv2d(
            torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b), s, p, d, g
        )
        np.testing.assert_allclose(np.array(memoryview(y)), expected.numpy(), rtol=2e-4, atol=2e-4)
