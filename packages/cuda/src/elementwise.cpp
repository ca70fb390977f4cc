// CUDA kernels of the elementwise ops: arithmetic, comparisons, unary math,
// activations and relu's backward, and the in-place arithmetic.
//
// The description of an elementwise call follows core's TensorIterator (Note
// [TensorIterator]) rule for rule, written here against core's public API
// (core's iterator is private to libflambeau_core):
//   * broadcasting: broadcast_shapes over the inputs; strides 0 on
//     broadcast dims (OffsetCalculator<3>, coalesced, with a contiguous fast
//     path when every tensor operand is contiguous in the output's shape);
//   * dtypes: PyTorch's result_type (dim tensors > 0-dim tensors > wrapped
//     numbers; a lower class only raises the category), inputs cast to the
//     compute dtype (on the device) unless they are host scalars, which go to
//     the kernel by value; true-valued ops (div, exp, log, sqrt, tanh,
//     sigmoid) compute integer inputs in the default float dtype;
//   * in-place: self's dtype and shape are kept; the promoted type must cast
//     to it; an input overlapping self is copied first.
// Compute dtypes: float32, float64 and int64 (others raise "not yet
// implemented on CUDA").
#include "elementwise.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "backend.h"
#include "flambeau/dispatch.h"
#include "flambeau/ops.h"

namespace flambeau::cuda {
namespace {

int dtype_category(ScalarType t) {
  if (t == ScalarType::Bool) return 0;
  if (is_complex(t)) return 3;
  if (is_floating(t)) return 2;
  return 1;
}

/// PyTorch's combine_categories: a lower priority class only raises the category.
std::optional<ScalarType> combine(std::optional<ScalarType> higher, std::optional<ScalarType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (dtype_category(*higher) >= dtype_category(*lower)) return higher;
  return promote_types(*higher, *lower);
}

ScalarType result_type(std::initializer_list<const Tensor*> operands) {
  std::optional<ScalarType> dims, zero, wrapped;
  for (const Tensor* t : operands) {
    std::optional<ScalarType>* slot =
        t->impl()->is_wrapped_number() ? &wrapped : (t->dim() == 0 ? &zero : &dims);
    ScalarType dt = t->dtype();
    if (t->impl()->is_wrapped_number() && is_floating(dt)) dt = default_float_dtype();
    *slot = *slot ? promote_types(**slot, dt) : dt;
  }
  return *combine(dims, combine(zero, wrapped));
}

int compute_code(ScalarType t, const char* op) {
  if (t == ScalarType::Float32) return 0;
  if (t == ScalarType::Float64) return 1;
  if (t == ScalarType::Int64) return 2;
  throw TypeError(std::string("[") + op + "] with dtype " + dtype_name(t) +
                  " is not yet implemented on CUDA (float32, float64 and int64 are)");
}

bool is_host_scalar(const Tensor& t) { return t.device().is_cpu() && t.dim() == 0; }

void check_devices(const char* op, Device dev, std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs) {
    if (t->device() == dev || is_host_scalar(*t)) continue;
    FB_CHECK(false, "[", op,
             "] expected all tensors to be on the same device, but found at least two devices, ", dev.str(),
             " and ", t->device().str());
  }
}

Shape broadcast_strides(const Tensor& t, IntArrayRef sizes) {
  Shape out(sizes.size(), 0);
  const auto ss = t.sizes();
  const auto st = t.strides();
  const size_t lead = sizes.size() - ss.size();
  for (size_t i = 0; i < ss.size(); ++i) out[lead + i] = ss[i] == 1 ? 0 : st[i];
  return out;
}

/// Runs `op` into `out` (allocated by the caller with the broadcast shape).
void run(int op, const char* name, Tensor& out, const Tensor* a, const Tensor* b, ScalarType compute,
         double alpha, double extra) {
  const Device dev = out.device();
  EwArgs args;
  Tensor keep[2];
  const Tensor* ins[2] = {a, b};
  Shape strides[3];
  strides[0] = Shape(out.strides().begin(), out.strides().end());
  bool contiguous = out.is_contiguous();
  for (int k = 0; k < 2; ++k) {
    strides[k + 1] = Shape(out.dim(), 0);
    if (!ins[k]) continue;
    const Tensor& t = *ins[k];
    if (is_host_scalar(t)) {
      FB_CHECK_TYPE(!is_complex(t.dtype()), "[", name, "] complex operands are not yet implemented on CUDA");
      args.scalar[k] = to_dtype(t, ScalarType::Float64).data<double>()[0];
      continue;
    }
    keep[k] = to_dtype(t, compute);  // a cast on the device when the dtype differs
    args.in[k] = keep[k].data_ptr();
    strides[k + 1] = broadcast_strides(keep[k], out.sizes());
    contiguous = contiguous && keep[k].is_contiguous() && std::ranges::equal(keep[k].sizes(), out.sizes());
  }
  if (out.numel() == 0) return;
  FB_CHECK_VALUE(out.dim() <= kMaxDims, "[", name, "] CUDA kernels handle up to ", kMaxDims, " dims, got ",
                 out.dim());
  auto& c = args.calc;
  c.ndim = static_cast<int>(out.dim());
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = out.sizes()[static_cast<size_t>(d)];
    for (int k = 0; k < 3; ++k) c.strides[k][d] = strides[k][static_cast<size_t>(d)];
  }
  coalesce(c);
  if (c.ndim == 0) {
    c.ndim = 1;
    c.sizes[0] = 1;
  }
  args.out = out.data_ptr();
  args.alpha = alpha;
  args.extra = extra;
  args.contiguous = contiguous;
  CudaDeviceSetter guard(dev.index);
  const int err =
      launch_elementwise(op, compute_code(compute, name), args, out.numel(), current_cuda_stream(dev));
  if (err != 0) throw_cuda_error("elementwise kernel launch", static_cast<cudaError_t>(err));
}

Device device_of(const Tensor& a, const Tensor* b) {
  if (a.device().type == DeviceType::CUDA) return a.device();
  return b->device();
}

Tensor binary(int op, const char* name, const Tensor& a, const Tensor& b, bool true_valued, double alpha = 1,
              double extra = 0) {
  const Device dev = device_of(a, &b);
  check_devices(name, dev, {&a, &b});
  ScalarType compute = result_type({&a, &b});
  if (true_valued && !is_floating(compute)) compute = default_float_dtype();
  const bool cmp = ew_is_comparison(op);
  FB_CHECK_TYPE(compute != ScalarType::Bool || cmp, "[", name,
                "] with dtype bool is not yet implemented on CUDA");
  if (compute == ScalarType::Bool || (cmp && is_integral(compute, true) && compute != ScalarType::Int64))
    compute = ScalarType::Int64;  // exact for every integer and bool comparison
  compute_code(compute, name);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = op::empty(shape, cmp ? ScalarType::Bool : compute, dev);
  run(op, name, out, &a, &b, compute, alpha, extra);
  return out;
}

Tensor unary(int op, const char* name, const Tensor& a, bool true_valued) {
  ScalarType compute = a.dtype();
  if (true_valued && !is_floating(compute)) compute = default_float_dtype();
  compute_code(compute, name);
  Tensor out = op::empty(a.sizes(), compute, a.device());
  run(op, name, out, &a, nullptr, compute, 1, 0);
  return out;
}

Tensor& inplace(int op, const char* name, Tensor& self, const Tensor& other, double alpha, bool true_valued) {
  check_devices(name, self.device(), {&other});
  ScalarType promoted = result_type({&self, &other});
  if (true_valued && !is_floating(promoted)) promoted = default_float_dtype();
  FB_CHECK_TYPE(dtype_category(promoted) <= dtype_category(self.dtype()), "[", name, "] result type ",
                dtype_name(promoted), " can't be cast to the desired output type ", dtype_name(self.dtype()));
  const Shape shape = broadcast_shapes(self.sizes(), other.sizes(), name);
  FB_CHECK_VALUE(std::ranges::equal(shape, self.sizes()), "[", name, "] the other operand of shape ",
                 shape_str(other.sizes()), " cannot be broadcast to self's shape ", shape_str(self.sizes()));
  check_no_internal_overlap(self, name);
  compute_code(self.dtype(), name);
  Tensor src = other;
  // An input sharing self's memory in another layout is read before it is overwritten.
  if (!is_host_scalar(other) && other.impl()->storage() == self.impl()->storage() &&
      !(other.data_ptr() == self.data_ptr() && std::ranges::equal(other.strides(), self.strides())))
    src = op::clone(other, MemoryFormat::Contiguous);
  run(op, name, self, &self, &src, self.dtype(), alpha, 0);
  self.impl()->bump_version();
  return self;
}

#define FBC_BINARY(opname, code, tv) \
  Tensor opname##_cuda(const Tensor& a, const Tensor& b) { return binary(code, #opname, a, b, tv); }
FBC_BINARY(mul, kEwMul, false)
FBC_BINARY(div, kEwDiv, true)
FBC_BINARY(maximum, kEwMaximum, false)
FBC_BINARY(minimum, kEwMinimum, false)
FBC_BINARY(pow, kEwPow, false)
FBC_BINARY(eq, kEwEq, false)
FBC_BINARY(ne, kEwNe, false)
FBC_BINARY(lt, kEwLt, false)
FBC_BINARY(le, kEwLe, false)
FBC_BINARY(gt, kEwGt, false)
FBC_BINARY(ge, kEwGe, false)
#undef FBC_BINARY

Tensor add_cuda(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary(kEwAdd, "add", a, b, false, alpha.to_double());
}
Tensor sub_cuda(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary(kEwSub, "sub", a, b, false, alpha.to_double());
}
Tensor threshold_backward_cuda(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  FB_CHECK_TYPE(grad.dtype() == self.dtype(),
                "[threshold_backward] grad_output and self must have one dtype, got ",
                dtype_name(grad.dtype()), " and ", dtype_name(self.dtype()));
  return binary(kEwThresholdBackward, "threshold_backward", grad, self, false, 1, threshold.to_double());
}

Tensor& add__cuda(Tensor& self, const Tensor& other, const Scalar& alpha) {
  return inplace(kEwAdd, "add_", self, other, alpha.to_double(), false);
}
Tensor& sub__cuda(Tensor& self, const Tensor& other, const Scalar& alpha) {
  return inplace(kEwSub, "sub_", self, other, alpha.to_double(), false);
}
Tensor& mul__cuda(Tensor& self, const Tensor& other) {
  return inplace(kEwMul, "mul_", self, other, 1, false);
}
Tensor& div__cuda(Tensor& self, const Tensor& other) { return inplace(kEwDiv, "div_", self, other, 1, true); }

#define FBC_UNARY(opname, code, tv) \
  Tensor opname##_cuda(const Tensor& a) { return unary(code, #opname, a, tv); }
FBC_UNARY(neg, kEwNeg, false)
FBC_UNARY(abs, kEwAbs, false)
FBC_UNARY(relu, kEwRelu, false)
FBC_UNARY(exp, kEwExp, true)
FBC_UNARY(log, kEwLog, true)
FBC_UNARY(sqrt, kEwSqrt, true)
FBC_UNARY(tanh, kEwTanh, true)
FBC_UNARY(sigmoid, kEwSigmoid, true)
#undef FBC_UNARY

// where: condition (bool, on the device or a host scalar) picks self or other,
// all three broadcast; self/other promote as a binary op (wrapped numbers weak)
// and are cast to that dtype; a host scalar goes to the kernel as bytes.
Tensor where_cuda(const Tensor& condition, const Tensor& self, const Tensor& other) {
  const char* name = "where";
  const Device dev = condition.device().type == DeviceType::CUDA ? condition.device()
                     : self.device().type == DeviceType::CUDA    ? self.device()
                                                                 : other.device();
  check_devices(name, dev, {&condition, &self, &other});
  FB_CHECK_TYPE(condition.dtype() == ScalarType::Bool, "[where] condition must be a bool tensor, got ",
                dtype_name(condition.dtype()));
  const ScalarType dtype = result_type({&self, &other});
  Shape shape =
      broadcast_shapes(broadcast_shapes(condition.sizes(), self.sizes(), name), other.sizes(), name);
  shape_nbytes(shape, dtype, name);
  Tensor out = op::empty(shape, dtype, dev);
  if (out.numel() == 0) return out;
  FB_CHECK_VALUE(out.dim() <= kMaxDims, "[where] CUDA kernels handle up to ", kMaxDims, " dims");
  WhereArgs args;
  Tensor keep[3];
  Shape strides[4];
  strides[0] = Shape(out.strides().begin(), out.strides().end());
  const Tensor* ins[3] = {&condition, &self, &other};
  for (int k = 0; k < 3; ++k) {
    const Tensor& t = *ins[k];
    strides[k + 1] = Shape(out.dim(), 0);
    const ScalarType want = k == 0 ? ScalarType::Bool : dtype;
    keep[k] = to_dtype(t, want);
    if (is_host_scalar(t)) {
      if (k == 0) {
        keep[0] = op::empty(Shape{}, ScalarType::Bool, dev);  // a host bool condition: one byte on the device
        op::copy_(keep[0], t);
      } else {
        std::memcpy(args.scalar[k - 1], keep[k].data_ptr(), itemsize(dtype));
        continue;
      }
    }
    strides[k + 1] = broadcast_strides(keep[k], out.sizes());
    if (k == 0)
      args.cond = static_cast<const bool*>(keep[0].data_ptr());
    else
      args.in[k - 1] = keep[k].data_ptr();
  }
  auto& c = args.calc;
  c.ndim = static_cast<int>(out.dim());
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = out.sizes()[static_cast<size_t>(d)];
    for (int k = 0; k < 4; ++k) c.strides[k][d] = strides[k][static_cast<size_t>(d)];
  }
  coalesce(c);
  if (c.ndim == 0) {
    c.ndim = 1;
    c.sizes[0] = 1;
  }
  args.out = out.data_ptr();
  CudaDeviceSetter guard(dev.index);
  const int err =
      launch_where(args, static_cast<int>(itemsize(dtype)), out.numel(), current_cuda_stream(dev));
  if (err != 0) throw_cuda_error("where kernel launch", static_cast<cudaError_t>(err));
  return out;
}

}  // namespace

void register_elementwise_kernels() {
  op::where.register_kernel(DispatchKey::CUDA, where_cuda);
  op::add.register_kernel(DispatchKey::CUDA, add_cuda);
  op::sub.register_kernel(DispatchKey::CUDA, sub_cuda);
  op::mul.register_kernel(DispatchKey::CUDA, mul_cuda);
  op::div.register_kernel(DispatchKey::CUDA, div_cuda);
  op::maximum.register_kernel(DispatchKey::CUDA, maximum_cuda);
  op::minimum.register_kernel(DispatchKey::CUDA, minimum_cuda);
  op::pow.register_kernel(DispatchKey::CUDA, pow_cuda);
  op::eq.register_kernel(DispatchKey::CUDA, eq_cuda);
  op::ne.register_kernel(DispatchKey::CUDA, ne_cuda);
  op::lt.register_kernel(DispatchKey::CUDA, lt_cuda);
  op::le.register_kernel(DispatchKey::CUDA, le_cuda);
  op::gt.register_kernel(DispatchKey::CUDA, gt_cuda);
  op::ge.register_kernel(DispatchKey::CUDA, ge_cuda);
  op::threshold_backward.register_kernel(DispatchKey::CUDA, threshold_backward_cuda);
  op::add_.register_kernel(DispatchKey::CUDA, add__cuda);
  op::sub_.register_kernel(DispatchKey::CUDA, sub__cuda);
  op::mul_.register_kernel(DispatchKey::CUDA, mul__cuda);
  op::div_.register_kernel(DispatchKey::CUDA, div__cuda);
  op::neg.register_kernel(DispatchKey::CUDA, neg_cuda);
  op::abs.register_kernel(DispatchKey::CUDA, abs_cuda);
  op::relu.register_kernel(DispatchKey::CUDA, relu_cuda);
  op::exp.register_kernel(DispatchKey::CUDA, exp_cuda);
  op::log.register_kernel(DispatchKey::CUDA, log_cuda);
  op::sqrt.register_kernel(DispatchKey::CUDA, sqrt_cuda);
  op::tanh.register_kernel(DispatchKey::CUDA, tanh_cuda);
  op::sigmoid.register_kernel(DispatchKey::CUDA, sigmoid_cuda);
}

}  // namespace flambeau::cuda
