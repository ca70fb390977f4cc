"""flambeau.utils.cpp_extension: extensions compiled on demand, cached, locked, ABI-checked.

Builds are few and small (the machine compiles on 2 shared cores): one pybind11
extension over flambeau tensors for the whole module, and C++ libraries without
Python or flambeau headers (loaded with is_python_module=False) for the cache,
lock and error paths, which compile in about a second.
"""

import ctypes
import glob
import importlib.machinery
import importlib.util
import os
import signal
import subprocess
import sys
import textwrap

import flambeau as fb
import flambeau_core
import numpy as np
import pytest
from flambeau.utils import cpp_extension

FUSED_MUL_ADD = """
using flambeau::Tensor;
using flambeau::data_ptr;
using flambeau::shape_str;

Tensor fused_mul_add(const Tensor& a, const Tensor& b, const Tensor& c) {
  FB_CHECK_TYPE(a.dtype() == flambeau::ScalarType::Float32, "[fused_mul_add] expected float32, got ", a.describe());
  FB_CHECK_VALUE(std::ranges::equal(a.sizes(), b.sizes()) && std::ranges::equal(a.sizes(), c.sizes()),
                 "[fused_mul_add] expected one shape, got ", shape_str(a.sizes()), ", ", shape_str(b.sizes()),
                 ", ", shape_str(c.sizes()));
  auto x = flambeau::contiguous(a), y = flambeau::contiguous(b), z = flambeau::contiguous(c);
  auto out = flambeau::empty_like(x);
  const float *px = data_ptr<float>(x), *py = data_ptr<float>(y), *pz = data_ptr<float>(z);
  float* po = data_ptr<float>(out);
  flambeau::parallel_for(0, x.numel(), flambeau::kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) po[i] = px[i] * py[i] + pz[i];
  });
  return out;
}
"""

# A library without flambeau or Python headers: cheap to compile.
PLAIN = 'extern "C" int answer() {{ return {value}; }}\n'


@pytest.fixture(scope="module")
def fma_ext(ext_root):
    return cpp_extension.load_inline("fused_mul_add_ext", FUSED_MUL_ADD, functions=["fused_mul_add"])


def _plain(tmp_path, name, value):
    src = tmp_path / f"{name}.cpp"
    src.write_text(PLAIN.format(value=value))
    return src


def _answer(path):
    return ctypes.CDLL(path).answer()


def test_load_inline_function_over_tensors(fma_ext):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((3, 1000)).astype(np.float32) for _ in range(3))
    out = fma_ext.fused_mul_add(fb.tensor(a), fb.tensor(b), fb.tensor(c))
    # The extension's pybind11 shares core's Tensor type (same pybind11, Note [ABI tag]).
    assert type(out) is fb.Tensor
    np.testing.assert_allclose(out.numpy(), a * b + c, rtol=1e-6)
    # A non-contiguous input goes through contiguous().
    t = fb.tensor(a).t()
    np.testing.assert_allclose(fma_ext.fused_mul_add(t, t, t).numpy(), a.T * a.T + a.T, rtol=1e-6)


def test_checks_in_an_extension_raise_flambeau_exceptions(fma_ext):
    # core's exception translator is pybind11's (process-wide): FB_CHECK_* map as in core.
    x = fb.ones(3, dtype=fb.float64)
    with pytest.raises(TypeError, match=r"\[fused_mul_add\] expected float32, got Tensor\(shape=\(3,\), dtype=float64"):
        fma_ext.fused_mul_add(x, x, x)
    y = fb.ones(3)
    with pytest.raises(flambeau_core.FlambeauError, match=r"expected one shape, got \(3,\), \(2,\), \(3,\)"):
        fma_ext.fused_mul_add(y, fb.ones(2), y)
    with pytest.raises(TypeError):
        fma_ext.fused_mul_add(1.0, 2.0, 3.0)


def test_cached_load_does_not_rebuild(fma_ext, monkeypatch):
    so = fma_ext.__file__
    mtime = os.stat(so).st_mtime_ns

    def no_build(*args, **kwargs):
        raise AssertionError("an unchanged extension was rebuilt")

    monkeypatch.setattr(cpp_extension, "_build", no_build)
    again = cpp_extension.load_inline("fused_mul_add_ext", FUSED_MUL_ADD, functions=["fused_mul_add"])
    assert again.__file__ == so and os.stat(so).st_mtime_ns == mtime


def test_load_from_files_rebuilds_on_change(tmp_path, ext_root, monkeypatch):
    src = _plain(tmp_path, "plain_lib", 41)
    first = cpp_extension.load("plain_lib", [str(src)], is_python_module=False)
    assert _answer(first) == 41
    # Unchanged: the same library, no compiler call.
    builds = []
    real_build = cpp_extension._build
    monkeypatch.setattr(cpp_extension, "_build", lambda *a: (builds.append(a), real_build(*a)))
    assert cpp_extension.load("plain_lib", [str(src)], is_python_module=False) == first
    assert builds == []
    # Changed source, then changed flags: each is a new build, and the old library is removed.
    src.write_text(PLAIN.format(value=42))
    second = cpp_extension.load("plain_lib", [str(src)], is_python_module=False)
    assert second != first and not os.path.exists(first) and _answer(second) == 42
    third = cpp_extension.load("plain_lib", [str(src)], extra_cflags=["-O0"], is_python_module=False)
    assert third != second and len(builds) == 2


def test_an_edited_header_rebuilds_and_a_touched_one_does_not(tmp_path, ext_root, monkeypatch):
    include = tmp_path / "include"
    include.mkdir()
    header = include / "answer_value.h"
    header.write_text("#define ANSWER_VALUE 41\n")
    src = tmp_path / "header_lib.cpp"
    src.write_text('#include "answer_value.h"\nextern "C" int answer() { return ANSWER_VALUE; }\n')

    def load():
        return cpp_extension.load("header_lib", [str(src)], extra_include_paths=[str(include)], is_python_module=False)

    first = load()
    assert _answer(first) == 41
    assert str(header) in open(first + ".deps").read()
    builds = []
    real_build = cpp_extension._build
    monkeypatch.setattr(cpp_extension, "_build", lambda *a: (builds.append(a), real_build(*a)))
    # Touched (new mtime, same text): the content hash says unchanged.
    os.utime(header, ns=(0, 10**18))
    assert load() == first and builds == []
    # Edited: rebuilt in place (a process loads a library path once, so the value is read in a fresh one).
    header.write_text("#define ANSWER_VALUE 42\n")
    assert load() == first and len(builds) == 1
    code = f"import ctypes; print(ctypes.CDLL({first!r}).answer())"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "42\n"
    assert load() == first and len(builds) == 1  # and then cached again
    # A header that disappeared: rebuilt (here the compile then fails, naming it).
    header.unlink()
    with pytest.raises(RuntimeError, match="answer_value.h"):
        load()


def test_lock_left_by_a_killed_process_is_recovered(tmp_path, ext_root):
    folder = tmp_path / "build"
    folder.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time
            from flambeau.utils import cpp_extension
            with cpp_extension._build_lock({str(folder)!r}, "locked_lib", False):
                print("locked", flush=True)
                time.sleep(600)
        """)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        holder.kill()
    assert (folder / "lock").read_text() == str(holder.pid)  # the killed owner's lock file is still there
    src = _plain(tmp_path, "locked_lib", 7)
    path = cpp_extension.load("locked_lib", [str(src)], build_directory=str(folder), is_python_module=False)
    assert _answer(path) == 7


def test_two_processes_load_the_same_extension_at_once(tmp_path, ext_root):
    src = _plain(tmp_path, "shared_lib", 5)
    code = textwrap.dedent(f"""
        import ctypes
        from flambeau.utils import cpp_extension
        path = cpp_extension.load("shared_lib", [{str(src)!r}], build_directory={str(tmp_path / "b")!r},
                                  is_python_module=False, verbose=True)
        print(ctypes.CDLL(path).answer())
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]  # fmt: skip
    results = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert [out.strip() for out, _ in results] == ["5", "5"]
    # One built it; the other found it built once it had the lock.
    assert sum("built extension 'shared_lib'" in err for _, err in results) == 1


def test_extension_built_for_another_abi_is_refused(ext_root, other_abi_cflags):
    source = "flambeau::Tensor twice(const flambeau::Tensor& x) { return flambeau::add(x, x); }"
    with pytest.raises(ImportError, match=r"built for flambeau ABI 'flambeau-0\.0\.0/gcc-1/other'.*rebuild"):
        cpp_extension.load_inline("other_abi", source, functions=["twice"], extra_cflags=other_abi_cflags)
    # Imported without load's check, the module's own init refuses it before binding anything.
    (built,) = glob.glob(os.path.join(ext_root, "*", "other_abi", "other_abi_*.so"))
    loader = importlib.machinery.ExtensionFileLoader("other_abi", built)
    spec = importlib.util.spec_from_file_location("other_abi", built, loader=loader)
    with pytest.raises(
        ImportError, match=r"other_abi was built for flambeau ABI 'flambeau-0\.0\.0/gcc-1/other'.*rebuild"
    ):
        loader.exec_module(importlib.util.module_from_spec(spec))


def test_compile_error_carries_the_compiler_message(tmp_path, ext_root):
    src = tmp_path / "broken.cpp"
    src.write_text('extern "C" int answer() {\n  return undeclared_name + 1;\n}\n')
    with pytest.raises(RuntimeError, match="building extension 'broken' failed") as info:
        cpp_extension.load("broken", [str(src)], is_python_module=False)
    message = str(info.value)
    assert "broken.cpp:2:" in message and "undeclared_name" in message
    assert "return undeclared_name + 1;" in message  # the source line, as the compiler shows it


def test_missing_nvcc_is_a_clear_error(tmp_path, ext_root, monkeypatch):
    src = tmp_path / "kernel.cu"
    src.write_text("__global__ void k() {}\n")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + "/usr/bin" + os.pathsep + "/bin")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    with pytest.raises(RuntimeError, match="nvcc was not found on PATH"):
        cpp_extension.load("needs_nvcc", [str(src)], is_python_module=False)


@pytest.mark.skipif(cpp_extension._nvcc() is None, reason="nvcc is not installed (no CUDA toolkit)")
def test_cuda_source_compiles_with_nvcc(tmp_path, ext_root):
    src = tmp_path / "scale.cu"
    src.write_text(
        textwrap.dedent("""
        __global__ void scale_kernel(float* x, float a, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) x[i] *= a;
        }
        extern "C" int scale(float* x, float a, int n) {
          scale_kernel<<<(n + 255) / 256, 256>>>(x, a, n);
          return static_cast<int>(cudaGetLastError());
        }
        extern "C" int answer() { return 3; }
    """)
    )
    path = cpp_extension.load("scale_cuda", [str(src)], is_python_module=False)
    assert _answer(path) == 3  # built and loaded (libcudart loads without a GPU)


@pytest.mark.skipif(cpp_extension._nvcc() is None, reason="nvcc is not installed (no CUDA toolkit)")
def test_cuda_source_includes_the_extension_header(tmp_path, ext_root):
    # A .cu works with flambeau::Tensor as a .cpp does (nvcc's host pass once rejected core's headers).
    src = tmp_path / "scale_tensor.cu"
    src.write_text(
        textwrap.dedent("""
        #include <flambeau/extension.h>
        __global__ void scale_kernel(float* x, float a, int64_t n) {
          int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
          if (i < n) x[i] *= a;
        }
        flambeau::Tensor scale(const flambeau::Tensor& x, float a) {
          FB_CHECK_TYPE(x.dtype() == flambeau::ScalarType::Float32, "[scale] expected float32, got ", x.describe());
          flambeau::Tensor y = flambeau::contiguous(x);
          scale_kernel<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), a, y.numel());
          return y;
        }
        extern "C" int answer() { return 3; }
    """)
    )
    path = cpp_extension.load("scale_tensor_cuda", [str(src)], is_python_module=False)
    assert _answer(path) == 3


def test_bad_name_and_missing_source(tmp_path, ext_root):
    with pytest.raises(ValueError, match=r"\[load\] name must be a Python identifier"):
        cpp_extension.load("not-an-identifier", [str(_plain(tmp_path, "x", 1))])
    with pytest.raises(FileNotFoundError, match=r"\[load\] extension 'nosrc': source file not found"):
        cpp_extension.load("nosrc", [str(tmp_path / "absent.cpp")])


def test_include_paths_find_the_extension_header():
    assert any(os.path.isfile(os.path.join(p, "flambeau", "extension.h")) for p in cpp_extension.include_paths())
    assert os.path.isfile(os.path.join(cpp_extension.library_paths()[0], "libflambeau_core.so"))


def test_extension_function_as_a_custom_op_with_a_gradient(fma_ext):
    # The documented way to give an extension function autograd and a shape rule.
    @fb.library.custom_op("cpp_extension_test::fused_mul_add", mutates_args=())
    def fused_mul_add(a: fb.Tensor, b: fb.Tensor, c: fb.Tensor) -> fb.Tensor:
        return fma_ext.fused_mul_add(a, b, c)

    fused_mul_add.register_fake(lambda a, b, c: fb.empty_like(a))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], inputs[1])

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * a, grad

    fused_mul_add.register_autograd(backward, setup_context=setup_context)
    a, b, c = (fb.randn(5, generator=fb.Generator().manual_seed(i), requires_grad=True) for i in range(3))
    out = fb.ops.cpp_extension_test.fused_mul_add(a, b, c)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), (a * b + c).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), b.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(c.grad.numpy(), np.ones(5, np.float32))
    assert fused_mul_add(fb.empty(4, 3, device="meta"), fb.empty(4, 3, device="meta"),
                         fb.empty(4, 3, device="meta")).shape == (4, 3)  # fmt: skip
