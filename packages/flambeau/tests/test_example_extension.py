"""examples/extension (flambeau-example-ops): an operator package built as a wheel against the installed core.

The wheel is built once for the module the way the example's README says (``pip wheel
--no-build-isolation``: scikit-build-core and CMake against this environment's flambeau-core), installed
into a temporary ``--target`` folder and imported from there; its ``example::lstm_cell`` is checked
against PyTorch's LSTM cell, by gradcheck, on meta tensors and with opcheck.
"""

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile

import flambeau as fb
import numpy as np
import pytest
import torch
from flambeau.library import opcheck
from flambeau.utils import cpp_extension
from flambeau_core import FlambeauError

EXAMPLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "extension"))


def _missing_build_tools():
    missing = [m for m in ("scikit_build_core", "pip") if importlib.util.find_spec(m) is None]
    return missing + [p for p in ("cmake", "c++") if shutil.which(p) is None]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The example's wheel, built and installed into a temporary folder: (wheel path, imported package)."""
    missing = _missing_build_tools()
    if missing and os.environ.get("CI"):  # CI installs the build tools: a skip there would hide the test
        pytest.fail(f"CI must install the example package's build tools; missing: {', '.join(missing)}")
    if missing:
        pytest.skip(f"cannot build the example package without {', '.join(missing)}")
    root = tmp_path_factory.mktemp("example_extension")
    command = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v", "-w", root / "dist"]
    nvcc = cpp_extension._nvcc()
    if nvcc is not None:  # the nvcc cpp_extension uses, where CMake's own search might not look
        command.append(f"-Ccmake.define.CMAKE_CUDA_COMPILER={nvcc}")
    build = subprocess.run([*command, EXAMPLE], capture_output=True, text=True)
    assert build.returncode == 0, f"building the example's wheel failed:\n{build.stdout[-8000:]}\n{build.stderr}"
    (wheel,) = (root / "dist").glob("flambeau_example_ops-*.whl")
    target = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", target, wheel],
        check=True,
    )
    sys.path.insert(0, str(target))
    try:
        package = importlib.import_module("flambeau_example_ops")
        yield wheel, package, build.stdout + build.stderr
    finally:
        sys.path.remove(str(target))
        sys.modules.pop("flambeau_example_ops", None)


def _torch_cell(n, hidden, dtype, seed=0):
    """An LSTM cell's inputs and torch's results: (gates, c, h', c') with gates = the two matmuls plus biases."""
    torch.manual_seed(seed)
    cell = torch.nn.LSTMCell(5, hidden, dtype=dtype)
    x, h, c = torch.randn(n, 5, dtype=dtype), torch.randn(n, hidden, dtype=dtype), torch.randn(n, hidden, dtype=dtype)
    with torch.no_grad():
        gates = x @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh
        h_next, c_next = cell(x, (h, c))
    return gates, c, h_next, c_next


def test_wheel_holds_the_library_and_its_package(built):
    wheel, package, log = built
    names = zipfile.ZipFile(wheel).namelist()
    assert {"flambeau_example_ops/__init__.py", "flambeau_example_ops/libexample_ops.so"} <= set(names)
    assert os.path.isfile(package.library_path)
    with open(package.library_path, "rb") as f:
        binary = f.read()
    assert b"FLAMBEAU_ABI_TAG=" in binary  # the marker that load_library checks
    # The CUDA kernel is compiled in exactly when CMake found nvcc (check_language(CUDA)), which it
    # must where cpp_extension finds one.
    with_cuda = "flambeau-example-ops: with the CUDA kernel" in log
    assert with_cuda or "flambeau-example-ops: CPU only" in log, log[-4000:]
    assert (b"lstm_cell_kernel" in binary) == with_cuda  # the __global__ function (mangled)
    assert with_cuda == (cpp_extension._nvcc() is not None)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_matches_torch_lstm_cell(built, dtype):
    gates, c, h_want, c_want = _torch_cell(6, 7, dtype)
    fdtype = fb.float32 if dtype == torch.float32 else fb.float64
    h, c_next = fb.ops.example.lstm_cell(fb.tensor(gates.numpy()), fb.tensor(c.numpy()))
    assert (h.dtype, c_next.dtype, h.shape, c_next.shape) == (fdtype, fdtype, (6, 7), (6, 7))
    tol = 1e-6 if dtype == torch.float32 else 1e-13
    np.testing.assert_allclose(h.numpy(), h_want.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(c_next.numpy(), c_want.numpy(), rtol=tol, atol=tol)
    # Strided inputs go through contiguous(); the package's function is the operator.
    gates_t = fb.tensor(gates.numpy().T.copy()).t()
    h2, c2 = built[1].lstm_cell(gates_t, fb.tensor(c.numpy()))
    np.testing.assert_array_equal(h2.numpy(), h.numpy())
    np.testing.assert_array_equal(c2.numpy(), c_next.numpy())


def test_gradients_match_torch_and_gradcheck(built):
    gates, c, _, _ = _torch_cell(3, 4, torch.float64, seed=1)
    g = fb.tensor(gates.numpy(), requires_grad=True)
    fc = fb.tensor(c.numpy(), requires_grad=True)
    assert fb.autograd.gradcheck(lambda g, c: fb.ops.example.lstm_cell(g, c), (g, fc))
    # Against torch's autograd of the cell's formula, once with both outputs used, once with h only
    # (the backward gets an undefined gradient for c_next) and once with c_next only.
    rng = np.random.default_rng(2)
    wh, wc = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for use_h, use_c in [(True, True), (True, False), (False, True)]:
        g.grad = fc.grad = None
        tg, tc = gates.clone().requires_grad_(), c.clone().requires_grad_()
        i, f, gg, o = tg.chunk(4, dim=1)
        tc_next = torch.sigmoid(f) * tc + torch.sigmoid(i) * torch.tanh(gg)
        th = torch.sigmoid(o) * torch.tanh(tc_next)
        (use_h * (th * torch.tensor(wh)).sum() + use_c * (tc_next * torch.tensor(wc)).sum()).backward()
        h, c_next = fb.ops.example.lstm_cell(g, fc)
        loss = (h * fb.tensor(wh)).sum() if use_h else None
        if use_c:
            term = (c_next * fb.tensor(wc)).sum()
            loss = term if loss is None else loss + term
        loss.backward()
        np.testing.assert_allclose(g.grad.numpy(), tg.grad.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(fc.grad.numpy(), tc.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_meta_shapes_through_the_fake_rule(built):
    h, c_next = fb.ops.example.lstm_cell(
        fb.empty(9, 4 * 16, device="meta", dtype=fb.float64), fb.empty(9, 16, device="meta", dtype=fb.float64)
    )
    assert (h.device.type, h.shape, c_next.shape, c_next.dtype) == ("meta", (9, 16), (9, 16), fb.float64)
    with pytest.raises(FlambeauError, match=r"\[example::lstm_cell\] expected gates of shape \(N, 4\*H\) .* \(9, 60\)"):
        fb.ops.example.lstm_cell(fb.empty(9, 60, device="meta"), fb.empty(9, 16, device="meta"))


def test_opcheck(built):
    gates, c, _, _ = _torch_cell(4, 3, torch.float64, seed=3)
    opcheck(fb.ops.example.lstm_cell, (fb.tensor(gates.numpy()), fb.tensor(c.numpy())))
    opcheck(
        fb.ops.example.lstm_cell,
        (fb.tensor(gates.numpy(), requires_grad=True), fb.tensor(c.numpy(), requires_grad=True)),
    )


def test_bad_inputs_name_the_op(built):
    with pytest.raises(
        TypeError, match=r"\[example::lstm_cell\] expected gates and c of one dtype, float32 or float64"
    ):
        fb.ops.example.lstm_cell(fb.zeros(2, 8, dtype=fb.int64), fb.zeros(2, 2, dtype=fb.int64))
    with pytest.raises(TypeError, match=r"\[example::lstm_cell\] expected gates and c of one dtype"):
        fb.ops.example.lstm_cell(fb.zeros(2, 8), fb.zeros(2, 2, dtype=fb.float64))
    with pytest.raises(FlambeauError, match=r"\[example::lstm_cell\] expected gates of shape \(N, 4\*H\) and c of"):
        fb.ops.example.lstm_cell(fb.zeros(2, 8), fb.zeros(3, 2))
    with pytest.raises(FlambeauError, match=r"got \(8,\) and \(2,\)"):
        fb.ops.example.lstm_cell(fb.zeros(8), fb.zeros(2))


@pytest.mark.skipif(not fb.cuda.is_available(), reason="the CUDA kernel runs only where there is a GPU")
def test_cuda_kernel_matches_cpu(built):
    gates, c, h_want, c_want = _torch_cell(33, 40, torch.float32, seed=4)
    h, c_next = fb.ops.example.lstm_cell(fb.tensor(gates.numpy(), device="cuda"), fb.tensor(c.numpy(), device="cuda"))
    assert h.device.type == "cuda"
    np.testing.assert_allclose(h.cpu().numpy(), h_want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c_next.cpu().numpy(), c_want.numpy(), rtol=1e-5, atol=1e-6)
