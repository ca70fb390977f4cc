"""Note [Structured kernels] for the GEMM family and the samplers (src/cpu/linalg/linalg.cpp, linear.cpp,
src/cpu/conv/conv.cpp, src/cpu/random/distributions.cpp): mm, bmm, linear, convolution, its weight
gradient, _standard_gamma, _standard_gamma_grad, poisson and binomial run their meta step (checks, dtype,
shape, the output allocated) and one out kernel that writes the GEMM's (or sampler's) result into that
output: a new tensor, or the user's out= with no copy when it is contiguous and shares no memory with an
operand (else a contiguous result copied in). Values against PyTorch 2.13 on the cpu and the simulated
device, the meta device, out= resizing and errors, empty dims, and seeded samples as before."""

from __future__ import annotations

import math
import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from flambeau_core.testing import devices
from test_structured_kernels import trace  # the kernels a call ran, by name

RNG = np.random.default_rng(17)
STRUCTURED = ["mm", "bmm", "linear", "convolution", "convolution_backward_weight"]
STRUCTURED += ["_standard_gamma", "_standard_gamma_grad", "poisson", "binomial"]


def npy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype in (torch.float16, torch.bfloat16) else t).numpy()
    t = t.cpu()
    return np.array(memoryview((t.float() if t.dtype in (fc.float16, fc.bfloat16) else t).contiguous()))


def make(shape, dtype="float32", device="cpu"):
    if dtype in ("int32", "int64"):
        a = RNG.integers(-4, 5, shape)
    else:
        a = RNG.standard_normal(shape)
    t = torch.from_numpy(a).to(getattr(torch, dtype))
    return fc.tensor(a).to(getattr(fc, dtype)).to(device), t


TOL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2e-2, "int64": 0, "int32": 0}


def close(got, expected, dtype):
    tol = TOL[dtype]
    np.testing.assert_allclose(npy(got), npy(expected), rtol=tol, atol=tol)


def test_the_ops_are_structured():
    # The functional kernel is the generated adapter (meta step, output, out kernel): has_kernel still holds.
    for name in STRUCTURED:
        assert _C._has_kernel(name, "CPU"), name


# ---- mm and bmm ----


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bfloat16"])
@pytest.mark.parametrize("layout", ["plain", "a_transposed", "b_transposed", "strided"])
def test_mm_forms_match_torch(device, dtype, layout):
    if device.startswith("cuda") and dtype not in ("float32", "float64"):
        pytest.skip("CUDA GEMM: float32 and float64")
    n, k, m = 5, 7, 3
    if layout == "a_transposed":
        (a, ta), (b, tb) = make((k, n), dtype, device), make((k, m), dtype, device)
        a, ta = a.transpose(0, 1), ta.transpose(0, 1)
    elif layout == "b_transposed":
        (a, ta), (b, tb) = make((n, k), dtype, device), make((m, k), dtype, device)
        b, tb = b.transpose(0, 1), tb.transpose(0, 1)
    elif layout == "strided":
        (a, ta), (b, tb) = make((n, 2 * k), dtype, device), make((k, m), dtype, device)
        a, ta = a[:, ::2], ta[:, ::2]
    else:
        (a, ta), (b, tb) = make((n, k), dtype, device), make((k, m), dtype, device)
    expected = torch.mm(ta, tb)
    got = fc.mm(a, b)
    assert got.device.type == device.split(":")[0] and got.dtype == getattr(fc, dtype)
    close(got, expected, dtype)
    out = fc.empty((n, m), dtype=getattr(fc, dtype), device=device)
    ptr = out.data_ptr()
    assert fc.mm(a, b, out=out) is out and out.data_ptr() == ptr
    close(out, expected, dtype)
    # A transposed out: the kernel's contiguous result is copied into it.
    tout = fc.empty((m, n), dtype=getattr(fc, dtype), device=device).transpose(0, 1)
    fc.mm(a, b, out=tout)
    assert tuple(tout.stride()) == (1, n)
    close(tout, expected, dtype)


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_bmm_forms_match_torch(device, dtype):
    if device.startswith("cuda") and dtype == "int32":
        pytest.skip("CUDA GEMM: float32 and float64")
    (a, ta), (b, tb) = make((4, 3, 6), dtype, device), make((4, 2, 6), dtype, device)
    b, tb = b.transpose(1, 2), tb.transpose(1, 2)
    expected = torch.bmm(ta, tb)
    close(fc.bmm(a, b), expected, dtype)
    out = fc.empty((0,), dtype=getattr(fc, dtype), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently, as PyTorch
        fc.bmm(a, b, out=out)
    assert tuple(out.shape) == (4, 3, 2)
    close(out, expected, dtype)
    # An expanded (stride-0) batch operand.
    (c, tc) = make((1, 6, 2), dtype, device)
    close(fc.bmm(a, c.expand(4, 6, 2)), torch.bmm(ta, tc.expand(4, 6, 2)), dtype)


def test_mm_out_is_written_by_the_kernel():
    (a, ta), (b, tb) = make((8, 4)), make((4, 6))
    out = fc.empty((8, 6))
    assert trace(lambda: fc.mm(a, b, out=out)) == {"mm"}  # no result tensor to copy
    close(out, torch.mm(ta, tb), "float32")
    out3 = fc.empty((2, 8, 6))
    (c, tc), (d, td) = make((2, 8, 4)), make((2, 4, 6))
    assert trace(lambda: fc.bmm(c, d, out=out3)) == {"bmm"}
    close(out3, torch.bmm(tc, td), "float32")
    # A strided out gets the kernel's contiguous result copied in (inside the kernel: one traced op).
    tout = fc.empty((6, 8)).transpose(0, 1)
    ptr = tout.data_ptr()
    assert trace(lambda: fc.mm(a, b, out=tout)) == {"mm"}
    assert tout.data_ptr() == ptr and tuple(tout.stride()) == (1, 8)
    close(tout, torch.mm(ta, tb), "float32")


@pytest.mark.parametrize("which", ["self", "mat2"])
def test_mm_out_sharing_an_operand(which):
    # out= may be an operand: the GEMM computes into a new buffer, then copies (as PyTorch's result).
    (a, ta), (b, tb) = make((5, 5), "float64"), make((5, 5), "float64")
    expected = torch.mm(ta, tb)
    out = a if which == "self" else b
    fc.mm(a, b, out=out)
    close(out, expected, "float64")


def test_mm_out_resizing_and_dtype_errors():
    (a, ta), (b, tb) = make((3, 4)), make((4, 2))
    out = fc.empty((5,))
    with pytest.warns(UserWarning, match=r"\[mm\] An output with one or more elements was resized"):
        fc.mm(a, b, out=out)
    assert tuple(out.shape) == (3, 2)
    close(out, torch.mm(ta, tb), "float32")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double"):
        torch.mm(ta, tb, out=torch.empty(3, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"\[mm\] expected out tensor to have dtype float32, but got float64"):
        fc.mm(a, b, out=fc.empty((3, 2), dtype=fc.float64))


def test_gemm_shape_errors_name_the_shapes():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        torch.mm(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(RuntimeError, match=r"\[mm\] shapes \(2, 3\) and \(4, 5\) cannot be multiplied: 3 != 4"):
        fc.mm(fc.ones(2, 3), fc.ones(4, 5))
    with pytest.raises(RuntimeError, match=r"\[mm\] shapes \(2, 3\) and \(4, 5\) cannot be multiplied"):
        fc.mm(fc.ones(2, 3), fc.ones(4, 5), out=fc.empty((2, 5)))
    with pytest.raises(RuntimeError):
        torch.bmm(torch.ones(2, 2, 3), torch.ones(3, 3, 5))
    with pytest.raises(RuntimeError, match=r"\[bmm\] batch sizes differ: shapes \(2, 2, 3\) and \(3, 3, 5\)"):
        fc.bmm(fc.ones(2, 2, 3), fc.ones(3, 3, 5))
    with pytest.raises(RuntimeError, match=r"\[mm\] expected two 2-D tensors, got shapes \(2, 3, 4\) and \(4, 5\)"):
        fc.mm(fc.ones(2, 3, 4), fc.ones(4, 5))
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(RuntimeError, match=r"\[linear\] input shape \(2, 3\) does not match weight shape \(4, 5\)"):
        fc.linear(fc.ones(2, 3), fc.ones(4, 5))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bfloat16"])
def test_empty_inner_dim_gives_zeros(dtype):
    (a, ta), (b, tb) = make((3, 0), dtype), make((0, 4), dtype)
    close(fc.mm(a, b), torch.mm(ta, tb), dtype)
    assert npy(fc.mm(a, b)).tolist() == [[0] * 4] * 3
    out = fc.full((3, 4), 7, dtype=getattr(fc, dtype))
    fc.mm(a, b, out=out)
    assert npy(out).tolist() == [[0] * 4] * 3
    (c, tc), (d, td) = make((2, 3, 0), dtype), make((2, 0, 4), dtype)
    close(fc.bmm(c, d), torch.bmm(tc, td), dtype)
    # linear with in_features == 0 is the bias in every row.
    (x, tx), (w, tw), (bias, tbias) = make((3, 0), dtype), make((4, 0), dtype), make((4,), dtype)
    close(fc.linear(x, w, bias), torch.nn.functional.linear(tx, tw, tbias), dtype)
    # Empty outputs.
    assert tuple(fc.mm(make((0, 3), dtype)[0], make((3, 4), dtype)[0]).shape) == (0, 4)
    assert tuple(fc.linear(make((2, 0, 5), dtype)[0], make((3, 5), dtype)[0]).shape) == (2, 0, 3)


# ---- linear ----


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int64"])
@pytest.mark.parametrize("case", ["2d_bias", "3d_no_bias", "1d_input", "transposed_weight", "broadcast_bias"])
def test_linear_matches_torch(device, dtype, case):
    if device.startswith("cuda") and dtype not in ("float32", "float64"):
        pytest.skip("CUDA GEMM: float32 and float64")
    shape = {"3d_no_bias": (2, 5, 16), "1d_input": (16,)}.get(case, (6, 16))
    (x, tx) = make(shape, dtype, device)
    if case == "transposed_weight":
        w, tw = make((16, 9), dtype, device)
        w, tw = w.transpose(0, 1), tw.transpose(0, 1)
    else:
        w, tw = make((9, 16), dtype, device)
    bias, tbias = make((1, 9) if case == "broadcast_bias" else (9,), dtype, device)
    if case == "3d_no_bias":
        bias, tbias = None, None
    expected = torch.nn.functional.linear(tx, tw, tbias)
    got = fc.linear(x, w, bias)
    assert tuple(got.shape) == tuple(expected.shape) and got.dtype == getattr(fc, dtype)
    close(got, expected, dtype)


def test_linear_bfloat16_bias_in_the_gemm_is_one_rounding():
    # bfloat16 linear with a bias (autocast's) accumulates onto the bias in float32 and rounds once, as
    # PyTorch's bf16 addmm on the CPU.
    (x, tx), (w, tw), (b, tb) = make((32, 64), "bfloat16"), make((48, 64), "bfloat16"), make((48,), "bfloat16")
    expected = (tx.float() @ tw.float().T + tb.float()).to(torch.bfloat16)
    np.testing.assert_allclose(npy(fc.linear(x, w, b)), npy(expected), rtol=1e-2, atol=1e-2)


# ---- convolution and its weight gradient ----

CONVS = [
    # (dims, N, Cin, Cout, kernel, stride, padding, dilation, groups, transposed, output_padding)
    (2, 2, 3, 4, 3, 1, 1, 1, 1, False, 0),
    (2, 2, 4, 6, 3, 2, 1, 1, 2, False, 0),
    (2, 1, 6, 6, 3, 1, 2, 2, 6, False, 0),
    (2, 3, 1, 6, 5, 1, 2, 1, 1, False, 0),
    (2, 2, 8, 4, 1, 1, 0, 1, 1, False, 0),
    (1, 2, 3, 5, 3, 2, 1, 1, 1, False, 0),
    (2, 2, 4, 6, 3, 2, 1, 1, 2, True, 1),
    (2, 2, 3, 4, 3, 1, 1, 1, 1, True, 0),
    (1, 2, 4, 2, 3, 2, 0, 2, 2, True, 1),
]


CONV_ARGS = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)


def conv_inputs(case, dtype, device):
    dims, N, cin, cout, k, s, p, d, g, tr, op = case
    x = make((N, cin) + (9,) * dims, dtype, device)
    w = make(((cin, cout // g) if tr else (cout, cin // g)) + (k,) * dims, dtype, device)
    b = make((cout,), dtype, device)
    args = ([s] * dims, [p] * dims, [d] * dims, tr, [op] * dims, g)
    return x, w, b, args


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("case", CONVS, ids=[str(i) for i in range(len(CONVS))])
def test_convolution_matches_torch(device, dtype, case):
    if device != "cpu" and dtype == "bfloat16":
        with pytest.raises(TypeError, match=r"\[convolution\] expected a float32 or float64 input \(bfloat16"):
            fc.convolution(*(make(s, dtype, device)[0] for s in ((1, 1, 3, 3), (1, 1, 1, 1))), None, *CONV_ARGS)
        return
    (x, tx), (w, tw), (b, tb), args = conv_inputs(case, dtype, device)
    # bfloat16 against the exact values: torch's bfloat16 kernels on a CPU without AVX512-BF16 round partial
    # sums (0.1 off on case 7 on AMD Zen 3, flambeau 0.03, half a unit at 8).
    if dtype == "bfloat16":
        tx, tw, tb = tx.double(), tw.double(), tb.double()
    expected = torch.convolution(tx, tw, tb, *args)
    got = fc.convolution(x, w, b, *args)
    assert tuple(got.shape) == tuple(expected.shape) and got.device.type == device.split(":")[0]
    close(got, expected, dtype)
    # A channels-last (strided) input: the same values.
    close(
        fc.convolution(x.transpose(1, -1).contiguous().transpose(1, -1), w, None, *args),
        torch.convolution(tx, tw, None, *args),
        dtype,
    )


@devices(types=("cpu", "sim", "cuda"))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CONVS, ids=[str(i) for i in range(len(CONVS))])
def test_convolution_weight_gradient_matches_torch(device, dtype, case):
    (x, tx), (w, tw), _, args = conv_inputs(case, dtype, device)
    tw.requires_grad_(True)
    ty = torch.convolution(tx, tw, None, *args)
    go, tgo = make(tuple(ty.shape), dtype, device)
    ty.backward(tgo)
    got = _C._convolution_backward_weight(go, x, list(w.shape), *args)
    assert tuple(got.shape) == tuple(w.shape)
    close(got, tw.grad, dtype)


def test_convolution_empty_inputs():
    # No input channels: each output channel is its bias (the sum over no inputs, plus the bias).
    x, w, (b, tb) = fc.empty((2, 0, 5, 5)), fc.empty((3, 0, 3, 3)), make((3,))
    args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    expected = np.broadcast_to(npy(tb)[None, :, None, None], (2, 3, 5, 5))
    np.testing.assert_array_equal(npy(fc.convolution(x, w, b, *args)), expected)
    np.testing.assert_array_equal(npy(fc.convolution(x, w, None, *args)), np.zeros((2, 3, 5, 5)))
    e = fc.convolution(make((0, 2, 5, 5))[0], make((3, 2, 3, 3))[0], None, *args)
    assert tuple(e.shape) == (0, 3, 5, 5)
    gw = _C._convolution_backward_weight(fc.empty((0, 3, 5, 5)), fc.empty((0, 2, 5, 5)), [3, 2, 3, 3], *args)
    assert npy(gw).tolist() == np.zeros((3, 2, 3, 3)).tolist()


def test_convolution_errors_as_before():
    args = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    with pytest.raises(RuntimeError):
        torch.convolution(torch.ones(2, 3, 5, 5), torch.ones(4, 2, 3, 3), None, *args)
    with pytest.raises(RuntimeError, match=r"\[convolution\] expected input\[2, 3, 5, 5\] to have 2 channels"):
        fc.convolution(fc.ones(2, 3, 5, 5), fc.ones(4, 2, 3, 3), None, *args)
    with pytest.raises(RuntimeError, match=r"\[convolution\] kernel size 3 \(dilated\) is larger than the padded"):
        fc.convolution(fc.ones(2, 3, 2, 2), fc.ones(4, 3, 3, 3), None, *args)


# ---- the meta device ----


def test_meta_device_shapes_and_dtypes():
    def meta(*shape, dtype=fc.float32):
        return fc.empty(shape, dtype=dtype, device="meta")

    def tmeta(*shape, dtype=torch.float32):
        return torch.empty(shape, dtype=dtype, device="meta")

    r = fc.mm(meta(3, 4), meta(4, 5))
    assert r.is_meta and tuple(r.shape) == tuple(torch.mm(tmeta(3, 4), tmeta(4, 5)).shape)
    out = meta(0)
    assert fc.mm(meta(3, 4), meta(4, 5), out=out) is out and tuple(out.shape) == (3, 5)
    assert tuple(fc.bmm(meta(2, 3, 4), meta(2, 4, 5)).shape) == (2, 3, 5)
    r = fc.linear(meta(7, 2, 16, dtype=fc.bfloat16), meta(9, 16, dtype=fc.bfloat16), meta(9, dtype=fc.bfloat16))
    t = torch.nn.functional.linear(tmeta(7, 2, 16), tmeta(9, 16), tmeta(9))
    assert r.is_meta and tuple(r.shape) == tuple(t.shape) and r.dtype == fc.bfloat16
    args = ([2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    r = fc.convolution(meta(2, 3, 9, 9), meta(4, 3, 3, 3), None, *args)
    assert tuple(r.shape) == tuple(torch.convolution(tmeta(2, 3, 9, 9), tmeta(4, 3, 3, 3), None, *args).shape)
    assert tuple(_C._convolution_backward_weight(r, meta(2, 3, 9, 9), [4, 3, 3, 3], *args).shape) == (4, 3, 3, 3)
    assert tuple(fc._standard_gamma(meta(3, 2)).shape) == (3, 2)
    assert tuple(fc._standard_gamma_grad(meta(3, 1), meta(4)).shape) == (3, 4)
    assert tuple(fc.poisson(meta(5, dtype=fc.float64)).shape) == (5,)
    assert fc.binomial(meta(2, 1), meta(3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match=r"\[mm\] shapes \(3, 4\) and \(5, 5\) cannot be multiplied"):
        fc.mm(meta(3, 4), meta(5, 5))


# ---- the samplers ----

# Seeded samples recorded before the samplers became out kernels: the same generator draws give the same
# values (each element keys its own stream at generator offset + its index).
GOLDEN = {
    "gamma": [0.2334398627281189, 0.6742239594459534, 3.9123623371124268, 8.96847915649414],
    "poisson": [2.0, 1.0, 11.0, 56.0],
    "binomial": [[0.0, 6.0, 10.0], [10.0, 16.0, 44.0]],
    "gamma_gen64": [0.15874771703594148, 3.8093761401607207],
}


@devices(types=("cpu", "sim"))
def test_seeded_samples_as_before(device):
    fc.manual_seed(7)
    a = fc.tensor([0.5, 1.0, 2.5, 9.0], device=device)
    assert fc._standard_gamma(a).cpu().tolist() == GOLDEN["gamma"]
    assert fc.poisson(fc.tensor([0.5, 4.0, 12.0, 40.0], device=device)).cpu().tolist() == GOLDEN["poisson"]
    n, p = fc.tensor([[10.0], [50.0]], device=device), fc.tensor([0.2, 0.5, 0.9], device=device)
    assert fc.binomial(n, p).cpu().tolist() == GOLDEN["binomial"]
    g = fc.Generator().manual_seed(3)
    x = fc._standard_gamma(fc.tensor([0.3, 7.0], dtype=fc.float64, device=device), g)
    assert x.dtype == fc.float64 and x.cpu().tolist() == GOLDEN["gamma_gen64"]


def _gamma_cdf(a: float, x: float) -> float:
    """The regularised lower incomplete gamma P(a, x), by its series x^a e^-x / Gamma(a) * sum x^n / (a)_(n+1)."""
    term = total = 1.0 / a
    n = 0
    while abs(term) > 1e-17 * abs(total):
        n += 1
        term *= x / (a + n)
        total += term
    return math.exp(a * math.log(x) - x - math.lgamma(a)) * total


def test_standard_gamma_grad_matches_the_implicit_derivative():
    # d x / d alpha at a fixed CDF value: -(dF/dalpha) / (dF/dx), F the regularised lower incomplete gamma
    # (its series, differentiated in alpha by central differences), broadcast as PyTorch.
    alpha = np.array([[0.5], [2.0], [7.5]])
    x = np.array([0.1, 1.0, 5.0])
    a, xx = np.broadcast_arrays(alpha, x)
    expected = np.empty(a.shape)
    for i, j in np.ndindex(a.shape):
        ai, xi = float(a[i, j]), float(xx[i, j])
        h = 1e-6 * ai
        dfda = (_gamma_cdf(ai + h, xi) - _gamma_cdf(ai - h, xi)) / (2 * h)
        pdf = math.exp((ai - 1) * math.log(xi) - xi - math.lgamma(ai))
        expected[i, j] = -dfda / pdf
    got = fc._standard_gamma_grad(fc.tensor(alpha), fc.tensor(x))
    assert got.dtype == fc.float64 and tuple(got.shape) == (3, 3)
    np.testing.assert_allclose(npy(got), expected, rtol=1e-5)
    assert tuple(torch._standard_gamma_grad(torch.tensor(a), torch.tensor(xx)).shape) == (3, 3)
    got32 = fc._standard_gamma_grad(fc.tensor(alpha).float(), fc.tensor(x).float())
    assert got32.dtype == fc.float32
    np.testing.assert_allclose(npy(got32), expected, rtol=1e-5)


def test_sampler_errors_as_before():
    with pytest.raises(RuntimeError):
        torch.poisson(torch.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"\[poisson\] invalid Poisson rate, expected rate to be finite"):
        fc.poisson(fc.tensor([-1.0]))
    with pytest.raises(RuntimeError, match=r"\[binomial\] shapes \(3,\) and \(4,\) cannot be broadcast"):
        fc.binomial(fc.ones(3), fc.ones(4))
    with pytest.raises(TypeError, match=r"\[binomial\] expected count and prob of one dtype"):
        fc.binomial(fc.ones(3), fc.ones(3, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[_standard_gamma\] expected a floating point concentration"):
        fc._standard_gamma(fc.ones(3, dtype=fc.int64))
    with pytest.raises(RuntimeError, match=r"\[_standard_gamma_grad\] shapes \(3,\) and \(4,\) cannot be broadcast"):
        fc._standard_gamma_grad(fc.ones(3), fc.ones(4))
