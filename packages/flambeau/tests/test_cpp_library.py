"""Operators registered from C++ with FLAMBEAU_LIBRARY: calls, autograd, meta, opcheck, errors.

One library of good operators for the whole module (a build takes a while on 2 shared cores), one of
broken registrations for the error paths, one built for another ABI.
"""

import ctypes
import glob
import os

import flambeau as fb
import flambeau_sim
import numpy as np
import pytest
import torch
from flambeau.library import OpCheckError, opcheck
from flambeau.library._cpp import register_pending
from flambeau.utils import cpp_extension
from flambeau_core import FlambeauError

# The example of docs/tutorials/custom-ops.md ("Operators in C++"): keep them the same.
MUL_ADD = r"""
#include <flambeau/extension.h>
using flambeau::Tensor;

// out = a + alpha * a * b, elementwise over two tensors of one shape.
template <class T>
void mul_add_loop(const Tensor& a, const Tensor& b, double alpha, Tensor& out) {
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* po = out.data_ptr<T>();
  const T s = static_cast<T>(alpha);
  flambeau::parallel_for(0, a.numel(), flambeau::kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) po[i] = pa[i] + s * pa[i] * pb[i];
  });
}

void check_inputs(const Tensor& a, const Tensor& b) {
  FB_CHECK_VALUE(std::ranges::equal(a.sizes(), b.sizes()), "[mylib::mul_add] a and b must have one shape, got ",
                 flambeau::shape_str(a.sizes()), " and ", flambeau::shape_str(b.sizes()));
  FB_CHECK_TYPE(a.dtype() == b.dtype(), "[mylib::mul_add] a and b must have one dtype");
}

Tensor& mul_add_out(const Tensor& a, const Tensor& b, double alpha, Tensor& out) {
  check_inputs(a, b);
  FB_CHECK_VALUE(std::ranges::equal(out.sizes(), a.sizes()) && out.is_contiguous(),
                 "[mylib::mul_add] out must be contiguous, of shape ", flambeau::shape_str(a.sizes()));
  const Tensor x = flambeau::contiguous(a), y = flambeau::contiguous(b);
  switch (a.dtype()) {
    case flambeau::ScalarType::Float32: mul_add_loop<float>(x, y, alpha, out); break;
    case flambeau::ScalarType::Float64: mul_add_loop<double>(x, y, alpha, out); break;
    default: throw flambeau::TypeError("[mylib::mul_add] expected float32 or float64 tensors");
  }
  return out;
}

Tensor mul_add(const Tensor& a, const Tensor& b, double alpha) {
  check_inputs(a, b);
  Tensor out = flambeau::empty_like(flambeau::contiguous(a));
  return mul_add_out(a, b, alpha, out);
}

// On meta tensors: the shape and dtype of the result, no data.
Tensor mul_add_fake(const Tensor& a, const Tensor& b, double /*alpha*/) {
  check_inputs(a, b);
  return flambeau::empty_like(a);
}

// d/da = grad * (1 + alpha * b), d/db = grad * alpha * a: one gradient per Tensor argument.
std::tuple<Tensor, Tensor> mul_add_backward(const Tensor& grad, const Tensor& a, const Tensor& b, double alpha,
                                            const Tensor& /*out*/) {
  const Tensor s = flambeau::full({}, alpha, grad.dtype(), grad.device());
  const Tensor grad_alpha = flambeau::mul(grad, s);
  return {flambeau::add(grad, flambeau::mul(grad_alpha, b)), flambeau::mul(grad_alpha, a)};
}

FLAMBEAU_LIBRARY(mylib, m) {
  m.def("mul_add(Tensor a, Tensor b, float alpha=1.0) -> Tensor");
  m.impl("mul_add", flambeau::kCPU, &mul_add);
  m.impl_fake("mul_add", &mul_add_fake);
  m.impl_backward("mul_add", &mul_add_backward);
  m.def("mul_add.out(Tensor a, Tensor b, float alpha=1.0, *, Tensor(a!) out) -> Tensor(a!)");
  m.impl("mul_add.out", flambeau::kCPU, &mul_add_out);
}
"""

# More argument and result types, and the operators the error paths and the benchmark use.
MORE = r"""
Tensor scaled_sum(const std::vector<Tensor>& xs, std::vector<int64_t> weights, const std::optional<Tensor>& bias,
                  std::string_view mode) {
  FB_CHECK_VALUE(!xs.empty() && xs.size() == weights.size(), "[mylib::scaled_sum] one weight per tensor");
  Tensor acc = bias ? *bias : flambeau::zeros_like(xs[0]);
  for (size_t i = 0; i < xs.size(); ++i)
    acc = flambeau::add(acc, xs[i], static_cast<int64_t>(weights[i]));
  if (mode == "mean") acc = flambeau::div(acc, flambeau::full({}, static_cast<double>(xs.size()), acc.dtype()));
  else FB_CHECK_VALUE(mode == "sum", "[mylib::scaled_sum] mode must be 'sum' or 'mean', got '", mode, "'");
  return acc;
}

std::tuple<Tensor, Tensor> halves(const Tensor& x) {
  const int64_t h = x.size(0) / 2;
  return {flambeau::clone(flambeau::slice(x, 0, 0, h, 1)), flambeau::clone(flambeau::slice(x, 0, h, x.size(0), 1))};
}
std::tuple<Tensor, Tensor> halves_fake(const Tensor& x) {
  const int64_t h = x.size(0) / 2;
  return {flambeau::zeros(flambeau::Shape{h}, x.dtype(), x.device()),
          flambeau::zeros(flambeau::Shape{x.size(0) - h}, x.dtype(), x.device())};
}
Tensor halves_backward(const Tensor& g0, const Tensor& g1, const Tensor& /*x*/, const Tensor& lo, const Tensor& hi) {
  const Tensor a = g0.defined() ? g0 : flambeau::zeros_like(lo);
  const Tensor b = g1.defined() ? g1 : flambeau::zeros_like(hi);
  return flambeau::cat({a, b}, 0);
}

int64_t count(const Tensor& x, bool nonzero) {
  return nonzero ? flambeau::count_nonzero(x).data<int64_t>()[0] : x.numel();
}

Tensor twice(const Tensor& x) { return flambeau::add(x, x); }
Tensor wrong_size(const Tensor& x) { return flambeau::zeros(flambeau::Shape{x.numel() + 1}, x.dtype(), x.device()); }
Tensor plain_add(const Tensor& a, const Tensor& b) { return flambeau::add(a, b); }

FLAMBEAU_LIBRARY(mylib, m) {
  m.def("scaled_sum(Tensor[] xs, int[] weights, Tensor? bias=None, *, str mode=\"sum\") -> Tensor");
  m.impl("scaled_sum", flambeau::kCPU, &scaled_sum);
  m.def("halves(Tensor x) -> (Tensor, Tensor)");
  m.impl("halves", "CPU", &halves);
  m.impl_fake("halves", &halves_fake);
  m.impl_backward("halves", &halves_backward);
  m.def("count(Tensor x, bool nonzero=False) -> int");
  m.impl("count", flambeau::kCPU, &count);
  m.def("cpu_only(Tensor x) -> Tensor");
  m.impl("cpu_only", flambeau::kCPU, &twice);
  m.def("bad_fake(Tensor x) -> Tensor");
  m.impl("bad_fake", flambeau::kCPU, &twice);
  m.impl_fake("bad_fake", &wrong_size);
  m.def("add(Tensor a, Tensor b) -> Tensor");
  m.impl("add", flambeau::kCPU, &plain_add);
  m.impl_fake("add", [](const Tensor& a, const Tensor& b) { return flambeau::add(a, b); });
}
"""

BROKEN = r"""
#include <flambeau/extension.h>
using flambeau::Tensor;
Tensor twice(const Tensor& x) { return flambeau::add(x, x); }
Tensor scale(const Tensor& x, int64_t k) { return flambeau::mul(x, flambeau::full({}, k, x.dtype())); }

FLAMBEAU_LIBRARY(badlib, m) {
  m.def("broken(Tensor x -> Tensor");
  m.def("twice(Tensor x) -> Tensor");
  m.def("twice(Tensor x) -> Tensor");
  m.impl("missing", flambeau::kCPU, &twice);
  m.impl("twice", flambeau::kCPU, &scale);
  m.impl("twice", flambeau::kCPU, &twice);
  m.impl("twice", "XPU", &twice);
}
"""


@pytest.fixture(scope="module")
def mylib(ext_root):
    return cpp_extension.load_inline("cpp_library_ext", MUL_ADD + MORE, is_python_module=False)


def _rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_forward_matches_numpy(mylib):
    a, b = _rand(3, 4), _rand(3, 4, seed=1)
    got = fb.ops.mylib.mul_add(fb.tensor(a), fb.tensor(b), alpha=2.0)
    np.testing.assert_allclose(got.numpy(), a + 2.0 * a * b, rtol=1e-6)
    # The default alpha, a positional alpha, an int for a float, the packet's overload and a strided input.
    np.testing.assert_allclose(fb.ops.mylib.mul_add(fb.tensor(a), fb.tensor(b)).numpy(), a + a * b, rtol=1e-6)
    np.testing.assert_allclose(fb.ops.mylib.mul_add.default(fb.tensor(a), fb.tensor(b), 3).numpy(), a + 3 * a * b)
    t = fb.tensor(a).t()
    np.testing.assert_allclose(fb.ops.mylib.mul_add(t, t, alpha=0.5).numpy(), a.T + 0.5 * a.T * a.T, rtol=1e-6)


def test_out_overload_writes_into_out(mylib):
    a, b = _rand(5), _rand(5, seed=2)
    out = fb.empty(5)
    result = fb.ops.mylib.mul_add.out(fb.tensor(a), fb.tensor(b), alpha=2.0, out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), a + 2.0 * a * b, rtol=1e-6)
    assert fb.ops.mylib.mul_add.overloads() == ["default", "out"]
    # Through the packet, out= picks the .out overload (as torch's packet does).
    again = fb.empty(5)
    assert fb.ops.mylib.mul_add(fb.tensor(a), fb.tensor(b), alpha=2.0, out=again) is again
    np.testing.assert_allclose(again.numpy(), a + 2.0 * a * b, rtol=1e-6)


def test_compile_keeps_a_cpp_op_as_one_node(mylib):
    # The C++ kernel is invisible to the recorder; reported as one op, it is a node of the graph (it was a break).
    g = fb.compile(lambda a, b: fb.ops.mylib.mul_add(a.relu(), b, alpha=3.0) - 1)
    a, b = _rand(6), _rand(6, seed=3)
    for _ in range(3):
        np.testing.assert_allclose(g(fb.tensor(a), fb.tensor(b)).numpy(), np.maximum(a, 0) * (1 + 3 * b) - 1, rtol=1e-6)
    assert g.break_reasons == [] and [n.name for n in g.graphs[0].nodes] == ["relu", "mylib::mul_add", "sub"]


def test_more_argument_and_result_types(mylib):
    xs = [fb.tensor(_rand(3, seed=i)) for i in range(3)]
    want = sum(w * x.numpy() for w, x in zip([1, 2, 3], xs, strict=True))
    np.testing.assert_allclose(fb.ops.mylib.scaled_sum(xs, [1, 2, 3]).numpy(), want, rtol=1e-6)
    bias = fb.ones(3)
    np.testing.assert_allclose(
        fb.ops.mylib.scaled_sum(xs, (1, 2, 3), bias, mode="mean").numpy(), (want + 1) / 3, rtol=1e-6
    )
    lo, hi = fb.ops.mylib.halves(fb.arange(5.0))
    assert lo.tolist() == [0.0, 1.0] and hi.tolist() == [2.0, 3.0, 4.0]
    x = fb.tensor([0.0, 1.0, 0.0, 2.0])
    assert fb.ops.mylib.count(x) == 4 and fb.ops.mylib.count(x, nonzero=True) == 2
    with pytest.raises(FlambeauError, match=r"\[mylib::scaled_sum\] mode must be 'sum' or 'mean', got 'max'"):
        fb.ops.mylib.scaled_sum(xs, [1, 2, 3], mode="max")


def test_gradcheck_through_the_cpp_backward(mylib):
    a = fb.tensor(_rand(2, 3, dtype=np.float64), requires_grad=True)
    b = fb.tensor(_rand(2, 3, dtype=np.float64, seed=1), requires_grad=True)
    assert fb.autograd.gradcheck(lambda a, b: fb.ops.mylib.mul_add(a, b, alpha=1.5), (a, b))
    # Against torch's autograd of the same formula.
    out = fb.ops.mylib.mul_add(a, b, alpha=1.5)
    out.backward(fb.ones_like(out))
    ta = torch.tensor(a.detach().numpy(), requires_grad=True)
    tb = torch.tensor(b.detach().numpy(), requires_grad=True)
    (ta + 1.5 * ta * tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)
    # Two outputs, one of them unused: the backward gets an undefined gradient for it.
    x = fb.arange(5.0, dtype=fb.float64).requires_grad_()
    lo, hi = fb.ops.mylib.halves(x)
    (hi * 3).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 3.0, 3.0, 3.0]
    assert fb.autograd.gradcheck(lambda x: fb.ops.mylib.halves(x), (x.detach().requires_grad_(),))


def test_no_grad_and_an_op_without_backward(mylib):
    a = fb.ones(2, requires_grad=True)
    with fb.no_grad():
        assert not fb.ops.mylib.mul_add(a, a).requires_grad
    out = fb.ops.mylib.cpu_only(a)
    with pytest.raises(RuntimeError, match=r"\[mylib::cpu_only\] trying to backward through mylib::cpu_only"):
        out.sum().backward()


def test_meta_through_the_fake_rule(mylib):
    a, b = fb.empty(7, 3, device="meta"), fb.empty(7, 3, device="meta", dtype=fb.float32)
    out = fb.ops.mylib.mul_add(a, b, alpha=2.0)
    assert out.device.type == "meta" and out.shape == (7, 3) and out.dtype == fb.float32
    lo, hi = fb.ops.mylib.halves(fb.empty(9, device="meta", dtype=fb.float64))
    assert (lo.shape, hi.shape, hi.dtype) == ((4,), (5,), fb.float64)
    with pytest.raises(FlambeauError, match=r"\[mylib::mul_add\] a and b must have one shape, got \(7, 3\) and \(3,\)"):
        fb.ops.mylib.mul_add(a, fb.empty(3, device="meta"))


def test_opcheck(mylib):
    a, b = fb.tensor(_rand(3, 2)), fb.tensor(_rand(3, 2, seed=1))
    opcheck(fb.ops.mylib.mul_add, (a, b), {"alpha": 0.5})
    opcheck(fb.ops.mylib.mul_add, (a.requires_grad_(), b.requires_grad_()))
    opcheck(fb.ops.mylib.halves, (fb.arange(6.0, requires_grad=True),))
    with pytest.raises(
        OpCheckError, match=r"output 0 of the 'cpu' kernel has shape \(4,\) but the fake rule says \(5,\)"
    ):
        opcheck(fb.ops.mylib.bad_fake, (fb.ones(4),), test_utils="test_faketensor")


def test_missing_kernel_for_a_device(mylib):
    with pytest.raises(
        NotImplementedError, match=r"\[mylib::cpu_only\] has no fake rule, so it cannot run on the 'meta'"
    ):
        fb.ops.mylib.cpu_only(fb.empty(2, device="meta"))
    flambeau_sim.register(num_devices=2)  # as test_library.py: one registration per process
    no_kernel = r"\[mylib::mul_add\] has no kernel for the 'sim' device \(it has kernels for: cpu, meta \(fake rule\)\)"
    with pytest.raises(NotImplementedError, match=no_kernel):
        fb.ops.mylib.mul_add(fb.ones(2, device="sim"), fb.ones(2, device="sim"))


def test_wrong_argument_types_name_the_op(mylib):
    a = fb.ones(2)
    with pytest.raises(TypeError, match=r"\[mylib::mul_add\] argument 'alpha' must be a float, got str"):
        fb.ops.mylib.mul_add(a, a, alpha="x")
    with pytest.raises(TypeError, match=r"\[mylib::mul_add\] argument 'b' must be a Tensor, got list"):
        fb.ops.mylib.mul_add(a, [1.0, 2.0])
    with pytest.raises(TypeError, match=r"\[mylib::mul_add\] missing required argument 'b'"):
        fb.ops.mylib.mul_add(a)
    with pytest.raises(TypeError, match=r"\[mylib::scaled_sum\] argument 'xs' must be a list or tuple of Tensors"):
        fb.ops.mylib.scaled_sum([a, 1], [1, 2])
    # A kernel's own check raises the exception it threw.
    with pytest.raises(TypeError, match=r"\[mylib::mul_add\] expected float32 or float64 tensors"):
        fb.ops.mylib.mul_add(fb.ones(2, dtype=fb.int64), fb.ones(2, dtype=fb.int64))


def test_profiler_records_the_op(mylib):
    a = fb.ones(2)
    with fb.profiler.profile() as prof:
        fb.ops.mylib.mul_add(a, a)
    assert "mylib::mul_add" in {e.name for e in prof.events()}


def test_second_load_reuses_the_build(mylib, monkeypatch):
    def no_build(*args, **kwargs):
        raise AssertionError("rebuilt")

    monkeypatch.setattr(cpp_extension, "_build", no_build)
    again = cpp_extension.load_inline("cpp_library_ext", MUL_ADD + MORE, is_python_module=False)
    assert again == mylib
    fb.ops.load_library(mylib)  # loaded already: its blocks do not run again
    assert fb.ops.mylib.mul_add(fb.ones(1), fb.ones(1)).tolist() == [2.0]


LAZY = r"""
#include <flambeau/extension.h>
FLAMBEAU_LIBRARY(lazylib, m) {
  const double k = 3.0;  // a kernel may be a lambda with captures
  m.def("scale(Tensor x) -> Tensor");
  m.impl("scale", flambeau::kCPU, [k](const flambeau::Tensor& x) {
    return flambeau::mul(x, flambeau::full({}, k, x.dtype()));
  });
}
"""


def test_library_loaded_otherwise_registers_on_first_lookup(ext_root, monkeypatch):
    # Loaded without registering (as ctypes.CDLL would): fb.ops.<ns> takes its blocks when first asked.
    with monkeypatch.context() as m:
        m.setattr("flambeau.library._cpp.register_pending", lambda source=None: None)
        cpp_extension.load_inline("cpp_library_lazy", LAZY, is_python_module=False)
    assert fb.ops.lazylib.scale(fb.tensor([1.0, 2.0])).tolist() == [3.0, 6.0]


def test_python_module_with_a_library_block(ext_root):
    # A pybind11 module (functions=) whose source also registers operators: loading it does both.
    source = r"""
flambeau::Tensor negate(const flambeau::Tensor& x) { return flambeau::neg(x); }
FLAMBEAU_LIBRARY(modlib, m) {
  m.def("negate(Tensor x) -> Tensor");
  m.impl("negate", flambeau::kCPU, &negate);
}
"""
    module = cpp_extension.load_inline("cpp_library_module", source, functions=["negate"])
    x = fb.tensor([1.0, -2.0])
    assert module.negate(x).tolist() == [-1.0, 2.0]
    assert fb.ops.modlib.negate(x).tolist() == [-1.0, 2.0]


def test_broken_registrations_are_reported_by_op(ext_root):
    with pytest.raises(FlambeauError) as info:
        cpp_extension.load_inline("cpp_library_broken", BROKEN, is_python_module=False)
    msg = str(info.value)
    assert msg.startswith("[load_library] ") and "registers operators with errors" in msg
    assert "[badlib::broken] cannot parse the schema of 'badlib::broken' at position 16" in msg
    assert "[badlib::twice] the operator 'badlib::twice' (overload 'default') is defined already" in msg
    assert "[badlib::missing] impl of an operator that is not defined" in msg
    assert "[badlib::twice] the cpu kernel takes and returns (Tensor, int) -> (Tensor) in C++" in msg
    assert "[badlib::twice] unknown dispatch key 'XPU' in m.impl" in msg
    # What was right in the block is registered.
    assert fb.ops.badlib.twice(fb.ones(2)).tolist() == [2.0, 2.0]


def test_library_built_for_another_abi_is_refused(ext_root, other_abi_cflags):
    source = 'FLAMBEAU_LIBRARY(otherabi, m) { m.def("f(Tensor x) -> Tensor"); }'
    with pytest.raises(ImportError, match=r"built for flambeau ABI 'flambeau-0\.0\.0/gcc-1/other'.*rebuild"):
        cpp_extension.load_inline(
            "cpp_library_other_abi", source, is_python_module=False, extra_cflags=other_abi_cflags
        )
    # Loaded without load's check of the file, the registry refuses its blocks.
    (built,) = glob.glob(os.path.join(ext_root, "*", "cpp_library_other_abi", "cpp_library_other_abi_*.so"))
    ctypes.CDLL(built)
    with pytest.raises(ImportError, match=r"FLAMBEAU_LIBRARY\(otherabi\) block .* built for flambeau ABI .*rebuild"):
        register_pending()
    assert "f" not in fb.ops.otherabi.__dict__
