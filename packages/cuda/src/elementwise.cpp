// CUDA kernels of the elementwise ops: arithmetic, comparisons, unary math,
// activations and relu's backward, and the in-place arithmetic.
//
// Every launch is driven by core's TensorIterator (Note [CUDA launcher on
// TensorIterator]): broadcasting, PyTorch's result_type, casts of inputs to
// the compute dtype (on the device), host scalars (a wrapped number or a 0-dim
// cpu tensor, passed to the kernel by value), the in-place rules (self's dtype
// and shape kept, the promoted type must cast to it, an overlapping input is
// copied first), the output's allocation and the coalescing of dims are the
// CPU's; this file only picks the compute dtype of each op (true-valued ops
// compute integer inputs in the default float dtype, comparisons of integers
// in int64) and translates the description into an OffsetCalculator.
// Compute dtypes: float32, float64 and int64 (others raise "not yet
// implemented on CUDA").
#include "elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "backend.h"
#include "elementwise_math.h"
#include "flambeau/dispatch.h"
#include "flambeau/elementwise_math.h"
#include "flambeau/ops.h"
#include "flambeau/tensor_iterator.h"
#include "flambeau_cuda/iterator_offsets.h"
#include "structured_out.h"

namespace flambeau::cuda {
namespace {

int compute_code(ScalarType t, const char* op) {
  if (t == ScalarType::Float32) return 0;
  if (t == ScalarType::Float64) return 1;
  if (t == ScalarType::Int64) return 2;
  throw TypeError(std::string("[") + op + "] with dtype " + dtype_name(t) +
                  " is not yet implemented on CUDA (float32, float64 and int64 are)");
}

bool is_host_scalar(const Tensor& t) { return t.device().is_cpu() && t.dim() == 0; }

/// Launches `op` over the iterator's operands (output, input 0, input 1).
void launch(int op, const char* name, const TensorIterator& it, double alpha, double extra, bool math = false,
            double extra2 = 0) {
  if (it.numel() == 0) return;
  EwArgs args;
  args.calc = offset_calculator<3>(it, name);
  args.out = it.data(0);
  for (int k = 1; k < it.ntensors(); ++k) {
    if (it.is_host_scalar(k)) {
      FB_CHECK_TYPE(!is_complex(it.dtype(k)), "[", name,
                    "] complex operands are not yet implemented on CUDA");
      convert_element(it.dtype(k), it.data(k), ScalarType::Float64, &args.scalar[k - 1]);
    } else {
      args.in[k - 1] = it.data(k);
    }
  }
  args.alpha = alpha;
  args.extra = extra;
  args.extra2 = extra2;
  args.contiguous = it.is_contiguous();
  const Device dev = it.device();
  CudaDeviceSetter guard(dev.index);
  const int code = compute_code(it.compute_dtype(), name);
  const int err = math ? launch_math(op, code, args, it.dtype(0) == ScalarType::Bool, it.numel(),
                                     current_cuda_stream(dev))
                       : launch_elementwise(op, code, args, it.numel(), current_cuda_stream(dev));
  if (err != 0) throw_cuda_error("elementwise kernel launch", static_cast<cudaError_t>(err));
}

// Note [Structured kernels]: the out kernel of add, sub, mul, div and the comparisons. out has the
// meta step's dtype, or self's for the in-place forms: arithmetic computes in it, a comparison in
// the inputs' promoted dtype (integers and bool exactly in int64).
void binary_out(int op, const char* name, const Tensor& out, const Tensor& a, const Tensor& b, double alpha = 1) {
  const bool cmp = ew_is_comparison(op);
  ScalarType compute = cmp ? result_type(a, b) : out.dtype();
  FB_CHECK_TYPE(compute != ScalarType::Bool || cmp, "[", name,
                "] with dtype bool is not yet implemented on CUDA");
  if (cmp && is_integral(compute, true)) compute = ScalarType::Int64;
  compute_code(compute, name);
  launch(op, name, TensorIterator::into(name, out, a, b, compute), alpha, 0);
}

#define FBC_BINARY_OUT(opname, code)                                             \
  void opname##_out_cuda(const Tensor& out, const Tensor& a, const Tensor& b) { \
    binary_out(code, #opname, out, a, b);                                       \
  }
FBC_BINARY_OUT(mul, kEwMul)
FBC_BINARY_OUT(maximum, kEwMaximum)
FBC_BINARY_OUT(minimum, kEwMinimum)
FBC_BINARY_OUT(pow, kEwPow)
FBC_BINARY_OUT(div, kEwDiv)
FBC_BINARY_OUT(eq, kEwEq)
FBC_BINARY_OUT(ne, kEwNe)
FBC_BINARY_OUT(lt, kEwLt)
FBC_BINARY_OUT(le, kEwLe)
FBC_BINARY_OUT(gt, kEwGt)
FBC_BINARY_OUT(ge, kEwGe)
#undef FBC_BINARY_OUT

void add_out_cuda(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  binary_out(kEwAdd, "add", out, a, b, alpha.to_double());
}
void sub_out_cuda(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  binary_out(kEwSub, "sub", out, a, b, alpha.to_double());
}
// Note [Structured kernels]: out has self's dtype and shape; grad is read in it.
void threshold_backward_out_cuda(const Tensor& out, const Tensor& grad, const Tensor& self,
                                 const Scalar& threshold) {
  const char* name = "threshold_backward";
  compute_code(out.dtype(), name);
  launch(kEwThresholdBackward, name, TensorIterator::into(name, out, grad, self, out.dtype()), 1,
         threshold.to_double());
}

// Note [Structured kernels]: out has the meta step's dtype (a's, or the float dtype of exp ...
// sigmoid), or self's in place, and the kernel computes in it. A complex input (abs's real out)
// is not yet implemented on CUDA.
void unary_out(int op, const char* name, const Tensor& out, const Tensor& a) {
  if (is_complex(a.dtype())) compute_code(a.dtype(), name);
  compute_code(out.dtype(), name);
  launch(op, name, TensorIterator::into(name, out, a, out.dtype()), 1, 0);
}

#define FBC_UNARY_OUT(opname, code) \
  void opname##_out_cuda(const Tensor& out, const Tensor& a) { unary_out(code, #opname, out, a); }
FBC_UNARY_OUT(neg, kEwNeg)
FBC_UNARY_OUT(abs, kEwAbs)
FBC_UNARY_OUT(relu, kEwRelu)
FBC_UNARY_OUT(exp, kEwExp)
FBC_UNARY_OUT(log, kEwLog)
FBC_UNARY_OUT(sqrt, kEwSqrt)
FBC_UNARY_OUT(tanh, kEwTanh)
FBC_UNARY_OUT(sigmoid, kEwSigmoid)
#undef FBC_UNARY_OUT

// where: condition (bool, on the device or a host scalar) picks self or other,
// all three broadcast; self/other promote as a binary op (wrapped numbers weak)
// and are cast to that dtype; a host scalar goes to the kernel as bytes. Note [Structured kernels]:
// out has that dtype, on the device.
void where_out_cuda(const Tensor& out, const Tensor& condition, const Tensor& self, const Tensor& other) {
  const char* name = "where";  // condition is bool: the meta step checked it (Note [Meta step])
  const Device dev = out.device();
  Tensor cond = condition;
  if (is_host_scalar(condition)) {
    cond = op::empty(Shape{}, ScalarType::Bool, dev);  // a host bool condition: one byte on the device
    op::copy_(cond, condition);
  }
  const ScalarType dtype = out.dtype();
  const Tensor* ins[3] = {&cond, &self, &other};
  const TensorIterator it(name, &out, dtype, ins, dtype, /*keep_dtype_mask=*/1);  // cond stays bool
  if (it.numel() == 0) return;
  WhereArgs args;
  args.calc = offset_calculator<4>(it, name);
  args.out = it.data(0);
  args.cond = reinterpret_cast<const bool*>(it.data(1));
  for (int k = 2; k < 4; ++k) {
    if (it.is_host_scalar(k))
      std::memcpy(args.scalar[k - 2], it.data(k), itemsize(dtype));  // already in the output dtype
    else
      args.in[k - 2] = it.data(k);
  }
  CudaDeviceSetter guard(dev.index);
  const int err = launch_where(args, static_cast<int>(itemsize(dtype)), it.numel(), current_cuda_stream(dev));
  if (err != 0) throw_cuda_error("where kernel launch", static_cast<cudaError_t>(err));
}

// ---- the elementwise math of elementwise_math.h ----
// Dtype rules, as the CPU kernels: FloatValued ops compute integer and bool
// inputs in the default float dtype; SameType ops keep an integer input's
// dtype (rounding, sign); FloatOnly ops (the activations) take float32 and
// float64 only; predicates and logical ops write bool.

enum class Kind { FloatValued, SameType, FloatOnly, Predicate, IntOnly };

void check_float_input(const char* op, const Tensor& t, const char* what) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op, "] ", what,
                " must be a float32 or float64 tensor on CUDA, got dtype ", dtype_name(t.dtype()));
}

/// The compute dtype of a predicate or logical op: floats keep theirs, bool
/// and integers compare exactly in int64.
ScalarType logical_compute(ScalarType t) { return is_floating(t) ? t : ScalarType::Int64; }

// Note [Structured kernels]: out has the dtype the rules below give, or self's in place.
void math_unary_into(const Tensor& out, int op, const char* name, const Tensor& a, Kind kind, double p0 = 0,
                     double p1 = 0, double p2 = 0) {
  ScalarType compute = a.dtype();
  switch (kind) {
    case Kind::FloatValued:
      if (!is_floating(compute)) compute = default_float_dtype();
      break;
    case Kind::SameType:
      if (compute == ScalarType::Bool && op == kM_sign) {
        compute = ScalarType::Int64;  // sign of a bool is itself (the output stays bool)
        break;
      }
      FB_CHECK_TYPE(compute != ScalarType::Bool, "[", name, "] is not implemented for bool tensors");
      break;
    case Kind::FloatOnly:
      check_float_input(name, a, "input");
      break;
    case Kind::Predicate:
      compute = logical_compute(compute);
      break;
    case Kind::IntOnly:
      FB_CHECK_TYPE(is_integral(compute, true), "[", name,
                    "] is only implemented for integer and bool tensors, got dtype ", dtype_name(compute));
      if (compute == ScalarType::Bool) {  // bitwise_not of a bool is logical not
        launch(kMLogicalNot, name, TensorIterator::into(name, out, a, ScalarType::Int64), 0, 0, true);
        return;
      }
      break;
  }
  compute_code(compute, name);
  launch(op, name, TensorIterator::into(name, out, a, compute), p0, p1, true, p2);
}

/// An integer divisor holding a 0 is an error, as on the CPU (one device sync).
void check_nonzero_divisor(const char* name, const Tensor& b, ScalarType compute) {
  if (!is_integral(compute, false) || b.numel() == 0) return;
  const Tensor zeros = op::sum(to_dtype(op::eq(b, scalar_to_tensor(Scalar(int64_t{0}))), ScalarType::Int64),
                               std::nullopt, false, std::nullopt);
  Tensor h = op::empty(Shape{}, ScalarType::Int64, Device(DeviceType::CPU));
  op::copy_(h, zeros);
  FB_CHECK_VALUE(h.data<int64_t>()[0] == 0, "[", name, "] ZeroDivisionError: integer division by zero (a ",
                 dtype_name(b.dtype()), " divisor of shape ", shape_str(b.sizes()), " holds a 0)");
}

// Note [Structured kernels]: out has the dtype the rules below give, or self's in place.
void math_binary_into(const Tensor& out, int op, const char* name, const Tensor& a, const Tensor& b, Kind kind,
                        double p0 = 0, double p1 = 0, double p2 = 0) {
  ScalarType compute = result_type(a, b);
  switch (kind) {
    case Kind::FloatValued:
      if (!is_floating(compute)) compute = default_float_dtype();
      break;
    case Kind::SameType:
      FB_CHECK_TYPE(compute != ScalarType::Bool, "[", name, "] is not implemented for bool tensors");
      break;
    case Kind::FloatOnly:
      FB_CHECK_TYPE(is_floating(compute), "[", name, "] is only implemented for floating point tensors, got ",
                    dtype_name(compute));
      break;
    case Kind::Predicate:
      compute = logical_compute(compute);
      break;
    case Kind::IntOnly:
      FB_CHECK_TYPE(is_integral(compute, true), "[", name,
                    "] is only implemented for integer and bool tensors, got dtype ", dtype_name(compute));
      if (compute == ScalarType::Bool) compute = ScalarType::Int64;  // and the output stays bool
      break;
  }
  compute_code(compute, name);
  if (kind == Kind::SameType) check_nonzero_divisor(name, b, compute);
  launch(op, name, TensorIterator::into(name, out, a, b, compute), p0, p1, true, p2);
}

/// An activation's backward (Note [Structured kernels]): out has self's dtype and shape, grad_output
/// passed the meta step's check_activation_grad; float32 and float64 on CUDA.
void act_backward_out(const Tensor& out, int op, const char* name, const Tensor& grad, const Tensor& self,
                      double p0 = 0, double p1 = 0, double p2 = 0) {
  check_float_input(name, self, "input");
  check_float_input(name, grad, "grad_output");
  launch(op, name, TensorIterator::into(name, out, grad, self, out.dtype()), p0, p1, true, p2);
}

// The ops of core's shared list (Note [Elementwise math list]): a wrapper
// per entry, registered in register_math_kernels; the dtype rule is the
// list's (rounding: integers keep their dtype, frac takes floats only).
Kind binary_kind(math::Kind k) {
  return k == math::Kind::FloatValued ? Kind::FloatValued
         : k == math::Kind::FloatOnly ? Kind::FloatOnly
                                      : Kind::SameType;  // Division: and zero divisors checked
}
constexpr Kind rounding_kind(int op) { return op == kM_frac ? Kind::FloatOnly : Kind::SameType; }

// Note [Structured kernels]: out has the float dtype of the meta step (or self's, in place).
void float_unary_out(int op, const char* name, const Tensor& out, const Tensor& a) {
  compute_code(out.dtype(), name);
  launch(op, name, TensorIterator::into(name, out, a, out.dtype()), 0, 0, true);
}
#define FBC_FLOAT_UNARY(name, expr) \
  void name##_out_cuda(const Tensor& out, const Tensor& a) { float_unary_out(kM_##name, #name, out, a); }
#define FBC_ROUNDING(name, expr)                                                \
  void name##_out_cuda(const Tensor& out, const Tensor& a) {                    \
    math_unary_into(out, kM_##name, #name, a, rounding_kind(kM_##name));       \
  }
#define FBC_BINARY(name, kind, expr)                                                   \
  void name##_out_cuda(const Tensor& out, const Tensor& a, const Tensor& b) {          \
    math_binary_into(out, kM_##name, #name, a, b, binary_kind(math::Kind::kind));     \
  }
FB_FLOAT_UNARY_MATH(FBC_FLOAT_UNARY)
FB_FLOAT_ROUNDING(FBC_ROUNDING)
FB_BINARY_MATH(FBC_BINARY)
#undef FBC_FLOAT_UNARY
#undef FBC_ROUNDING
#undef FBC_BINARY

#define FBC_MATH_UNARY_OUT(opname, code, kind)                \
  void opname##_out_cuda(const Tensor& out, const Tensor& a) { \
    math_unary_into(out, code, #opname, a, Kind::kind);      \
  }
FBC_MATH_UNARY_OUT(silu, kMSilu, FloatOnly)
FBC_MATH_UNARY_OUT(mish, kMMish, FloatOnly)
FBC_MATH_UNARY_OUT(hardswish, kMHardswish, FloatOnly)
FBC_MATH_UNARY_OUT(hardsigmoid, kMHardsigmoid, FloatOnly)
FBC_MATH_UNARY_OUT(log_sigmoid, kMLogSigmoid, FloatOnly)
FBC_MATH_UNARY_OUT(softsign, kMSoftsign, FloatOnly)
FBC_MATH_UNARY_OUT(sgn, kM_sign, SameType)  // sgn of a real tensor is its sign (complex: not yet on CUDA)
FBC_MATH_UNARY_OUT(isnan, kMIsnan, Predicate)
FBC_MATH_UNARY_OUT(isinf, kMIsinf, Predicate)
FBC_MATH_UNARY_OUT(isfinite, kMIsfinite, Predicate)
FBC_MATH_UNARY_OUT(signbit, kMSignbit, Predicate)
FBC_MATH_UNARY_OUT(logical_not, kMLogicalNot, Predicate)
FBC_MATH_UNARY_OUT(bitwise_not, kMBitwiseNot, IntOnly)
#undef FBC_MATH_UNARY_OUT

#define FBC_MATH_BINARY(opname, code, kind)                                  \
  void opname##_out_cuda(const Tensor& out, const Tensor& a, const Tensor& b) { \
    math_binary_into(out, code, #opname, a, b, Kind::kind);                  \
  }
FBC_MATH_BINARY(logical_and, kMLogicalAnd, Predicate)
FBC_MATH_BINARY(logical_or, kMLogicalOr, Predicate)
FBC_MATH_BINARY(logical_xor, kMLogicalXor, Predicate)
FBC_MATH_BINARY(bitwise_and, kMBitwiseAnd, IntOnly)
FBC_MATH_BINARY(bitwise_or, kMBitwiseOr, IntOnly)
FBC_MATH_BINARY(bitwise_xor, kMBitwiseXor, IntOnly)
FBC_MATH_BINARY(bitwise_left_shift, kMBitwiseLeftShift, IntOnly)
FBC_MATH_BINARY(bitwise_right_shift, kMBitwiseRightShift, IntOnly)
#undef FBC_MATH_BINARY

void div_mode_out_cuda(const Tensor& out, const Tensor& a, const Tensor& b, std::optional<std::string_view> mode) {
  if (!mode) return op::div.run_out(out, a, b);
  if (*mode == "floor") {
    math_binary_into(out, kM_floor_divide, "div", a, b, Kind::SameType);
    return;
  }
  // else 'trunc' (meta::check_rounding_mode, the op's check step)
  math_binary_into(out, kMTruncDivide, "div", a, b, Kind::SameType);
}

// op::round takes decimals: its registration picks this overload; the list's
// round_out_cuda(out, a) is its decimals == 0 case.
void round_out_cuda(const Tensor& out, const Tensor& a, int64_t decimals) {
  if (decimals == 0) return round_out_cuda(out, a);
  const double d = static_cast<double>(decimals);
  math_unary_into(out, kMRoundDecimals, "round", a, Kind::FloatOnly, d, std::pow(10.0, d < 0 ? -d : d));
}

// approximate is 'none' or 'tanh': the meta step's check_gelu_approximate.
int gelu_code(std::string_view approximate, bool backward) {
  if (approximate == "tanh") return backward ? kMGeluTanhBackward : kMGeluTanh;
  return backward ? kMGeluBackward : kMGelu;
}

// Note [Structured kernels]: the activations' out kernels; out has self's dtype and shape (or is
// self, in place).
void gelu_out_cuda(const Tensor& out, const Tensor& x, std::string_view approximate) {
  math_unary_into(out, gelu_code(approximate, false), "gelu", x, Kind::FloatOnly);
}
void leaky_relu_out_cuda(const Tensor& out, const Tensor& x, const Scalar& slope) {
  math_unary_into(out, kMLeakyRelu, "leaky_relu", x, Kind::FloatOnly, slope.to_double());
}
void elu_out_cuda(const Tensor& out, const Tensor& x, const Scalar& alpha, const Scalar& scale,
                  const Scalar& input_scale) {
  math_unary_into(out, kMElu, "elu", x, Kind::FloatOnly, alpha.to_double(), scale.to_double(),
                  input_scale.to_double());
}
void softplus_out_cuda(const Tensor& out, const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  math_unary_into(out, kMSoftplus, "softplus", x, Kind::FloatOnly, beta.to_double(), threshold.to_double());
}
void hardtanh_out_cuda(const Tensor& out, const Tensor& x, const Scalar& lo, const Scalar& hi) {
  math_unary_into(out, kMHardtanh, "hardtanh", x, Kind::FloatOnly, lo.to_double(), hi.to_double());
}

void gelu_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x, std::string_view approximate) {
  act_backward_out(out, gelu_code(approximate, true), "gelu_backward", g, x);
}
void silu_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out(out, kMSiluBackward, "silu_backward", g, x);
}
void mish_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out(out, kMMishBackward, "mish_backward", g, x);
}
void leaky_relu_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x, const Scalar& slope) {
  act_backward_out(out, kMLeakyReluBackward, "leaky_relu_backward", g, x, slope.to_double());
}
void elu_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x, const Scalar& alpha,
                           const Scalar& scale, const Scalar& input_scale) {
  act_backward_out(out, kMEluBackward, "elu_backward", g, x, alpha.to_double(), scale.to_double(),
                   input_scale.to_double());
}
void softplus_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x, const Scalar& beta,
                                const Scalar& threshold) {
  act_backward_out(out, kMSoftplusBackward, "softplus_backward", g, x, beta.to_double(), threshold.to_double());
}
void hardtanh_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x, const Scalar& lo,
                                const Scalar& hi) {
  act_backward_out(out, kMHardtanhBackward, "hardtanh_backward", g, x, lo.to_double(), hi.to_double());
}
void hardswish_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out(out, kMHardswishBackward, "hardswish_backward", g, x);
}
void hardsigmoid_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out(out, kMHardsigmoidBackward, "hardsigmoid_backward", g, x);
}
void log_sigmoid_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out(out, kMLogSigmoidBackward, "log_sigmoid_backward", g, x);
}
void softsign_backward_out_cuda(const Tensor& out, const Tensor& g, const Tensor& x) {
  act_backward_out(out, kMSoftsignBackward, "softsign_backward", g, x);
}

// Note [Structured kernels]: out has a's dtype (or is a itself, in place); integers are copied.
void nan_to_num_out_cuda(const Tensor& out, const Tensor& a, std::optional<double> nan,
                         std::optional<double> posinf, std::optional<double> neginf) {
  if (!is_floating(a.dtype())) {
    if (out.impl() == a.impl()) return;
    Tensor dst = out;
    op::copy_(dst, a);
    return;
  }
  const bool f32 = a.dtype() == ScalarType::Float32;
  const double big =
      f32 ? static_cast<double>(std::numeric_limits<float>::max()) : std::numeric_limits<double>::max();
  math_unary_into(out, kMNanToNum, "nan_to_num", a, Kind::FloatOnly, nan.value_or(0.0), posinf.value_or(big),
                  neginf.value_or(-big));
}

// glu: out = a * sigmoid(b) for the halves a, b of dim; backward from the same halves. The check step
// (meta::check_glu, check_glu_grad) checked the input, dim and grad_output's shape.
int64_t glu_dim(const char* op, const Tensor& x, int64_t dim) { return wrap_dim(dim, x.dim(), op); }
Tensor glu_cuda(const Tensor& self, int64_t dim) {
  const int64_t d = glu_dim("glu", self, dim);
  const int64_t h = self.sizes()[static_cast<size_t>(d)] / 2;
  const Tensor a = op::slice(self, d, 0, h, 1), b = op::slice(self, d, h, 2 * h, 1);
  return op::mul(a, op::sigmoid(b));
}
Tensor glu_backward_cuda(const Tensor& grad, const Tensor& self, int64_t dim) {
  const int64_t d = glu_dim("glu_backward", self, dim);
  const int64_t h = self.sizes()[static_cast<size_t>(d)] / 2;
  const Tensor a = op::slice(self, d, 0, h, 1), b = op::slice(self, d, h, 2 * h, 1);
  const Tensor g = to_dtype(grad, self.dtype());
  const Tensor sb = op::sigmoid(b);
  const Tensor ga = op::mul(g, sb);
  // d/db a sigmoid(b) = a sigmoid(b) (1 - sigmoid(b))
  const Tensor gb = op::mul(op::mul(ga, a), op::sub(scalar_to_tensor(Scalar(1.0)), sb, Scalar(1)));
  return op::cat(TensorList{ga, gb}, d);
}

// prelu: weight broadcast along dim 1 (one per channel) or shared. The check step (meta::check_prelu,
// check_prelu_grad) checked the input, the weight, their devices and grad_output's shape.
Tensor prelu_weight(const Tensor& x, const Tensor& w) {
  const int64_t ch = x.dim() >= 2 ? x.sizes()[1] : 1;
  if (w.numel() == 1) return op::reshape(w, Shape{});
  Shape s(static_cast<size_t>(x.dim() - 1), 1);
  s[0] = ch;
  return op::reshape(w, s);  // (C, 1, ..., 1): lines up with dim 1 of x
}
Tensor positive(const Tensor& x) { return op::gt(x, scalar_to_tensor(Scalar(0.0))); }
Tensor prelu_cuda(const Tensor& self, const Tensor& weight) {
  const Tensor w = prelu_weight(self, weight);
  return op::where(positive(self), self, op::mul(w, self));
}
Tensor prelu_backward_input_cuda(const Tensor& grad, const Tensor& self, const Tensor& weight) {
  const Tensor w = prelu_weight(self, weight);
  const Tensor g = to_dtype(grad, self.dtype());
  return op::where(positive(self), g, op::mul(w, g));
}
// _addcmul_fused from the device's mul and add: two roundings where the CPU kernel rounds once (Note [Fused
// addcmul]). addcmul on CUDA is the composite's product and sum already, so this serves direct calls.
Tensor addcmul_fused_cuda(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {
  return op::add(self, op::mul(op::mul(tensor1, scalar_to_tensor(value)), tensor2), Scalar(1));
}
Tensor prelu_backward_weight_cuda(const Tensor& grad, const Tensor& self, const Tensor& weight) {
  const Tensor g = to_dtype(grad, self.dtype());
  const Tensor zero = scalar_to_tensor(Scalar(0.0));
  const Tensor contrib = op::where(positive(self), zero, op::mul(g, self));  // d/dw of w x where x <= 0
  Tensor total;
  if (weight.numel() == 1 || self.dim() < 2) {
    total = op::sum(contrib, std::nullopt, false, std::nullopt);
  } else {
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < self.dim(); ++i)
      if (i != 1) dims.push_back(i);
    total = op::sum(contrib, IntArrayRef(dims), false, std::nullopt);
  }
  return op::reshape(total, weight.sizes());
}

void register_math_kernels() {
#define FBC_REG_OUT(opname, ...) op::opname.register_out_kernel(DispatchKey::CUDA, opname##_out_cuda);
  FB_FLOAT_UNARY_MATH(FBC_REG_OUT)
  FB_FLOAT_ROUNDING(FBC_REG_OUT)
  FB_BINARY_MATH(FBC_REG_OUT)
#undef FBC_REG_OUT
  op::isnan.register_out_kernel(DispatchKey::CUDA, isnan_out_cuda);
  op::isinf.register_out_kernel(DispatchKey::CUDA, isinf_out_cuda);
  op::isfinite.register_out_kernel(DispatchKey::CUDA, isfinite_out_cuda);
#define FBC_REG_OUT(opname) op::opname.register_out_kernel(DispatchKey::CUDA, opname##_out_cuda);
  FBC_REG_OUT(signbit)
  FBC_REG_OUT(logical_not)
  FBC_REG_OUT(bitwise_not)
  FBC_REG_OUT(div_mode)
  FBC_REG_OUT(logical_and)
  FBC_REG_OUT(logical_or)
  FBC_REG_OUT(logical_xor)
  FBC_REG_OUT(bitwise_and)
  FBC_REG_OUT(bitwise_or)
  FBC_REG_OUT(bitwise_xor)
  FBC_REG_OUT(bitwise_left_shift)
  FBC_REG_OUT(bitwise_right_shift)
  FBC_REG_OUT(gelu)
  FBC_REG_OUT(silu)
  FBC_REG_OUT(mish)
  FBC_REG_OUT(leaky_relu)
  FBC_REG_OUT(elu)
  FBC_REG_OUT(softplus)
  FBC_REG_OUT(hardtanh)
  FBC_REG_OUT(hardswish)
  FBC_REG_OUT(hardsigmoid)
  FBC_REG_OUT(log_sigmoid)
  FBC_REG_OUT(softsign)
  FBC_REG_OUT(gelu_backward)
  FBC_REG_OUT(silu_backward)
  FBC_REG_OUT(mish_backward)
  FBC_REG_OUT(leaky_relu_backward)
  FBC_REG_OUT(elu_backward)
  FBC_REG_OUT(softplus_backward)
  FBC_REG_OUT(hardtanh_backward)
  FBC_REG_OUT(hardswish_backward)
  FBC_REG_OUT(hardsigmoid_backward)
  FBC_REG_OUT(log_sigmoid_backward)
  FBC_REG_OUT(softsign_backward)
  FBC_REG_OUT(sgn)
#undef FBC_REG_OUT
  op::nan_to_num.register_out_kernel(DispatchKey::CUDA, nan_to_num_out_cuda);
  // Structured (Note [Structured kernels]): out= runs the functional kernel and copies.
  register_out_via_copy<glu_cuda>(op::glu);
  register_out_via_copy<glu_backward_cuda>(op::glu_backward);
  register_out_via_copy<prelu_cuda>(op::prelu);
  register_out_via_copy<addcmul_fused_cuda>(op::_addcmul_fused);
  register_out_via_copy<prelu_backward_input_cuda>(op::_prelu_backward_input);
  register_out_via_copy<prelu_backward_weight_cuda>(op::_prelu_backward_weight);
}

}  // namespace

void register_elementwise_kernels() {
  register_math_kernels();
  op::where.register_out_kernel(DispatchKey::CUDA, where_out_cuda);
  op::add.register_out_kernel(DispatchKey::CUDA, add_out_cuda);
  op::sub.register_out_kernel(DispatchKey::CUDA, sub_out_cuda);
  op::mul.register_out_kernel(DispatchKey::CUDA, mul_out_cuda);
  op::div.register_out_kernel(DispatchKey::CUDA, div_out_cuda);
  op::maximum.register_out_kernel(DispatchKey::CUDA, maximum_out_cuda);
  op::minimum.register_out_kernel(DispatchKey::CUDA, minimum_out_cuda);
  op::pow.register_out_kernel(DispatchKey::CUDA, pow_out_cuda);
  op::eq.register_out_kernel(DispatchKey::CUDA, eq_out_cuda);
  op::ne.register_out_kernel(DispatchKey::CUDA, ne_out_cuda);
  op::lt.register_out_kernel(DispatchKey::CUDA, lt_out_cuda);
  op::le.register_out_kernel(DispatchKey::CUDA, le_out_cuda);
  op::gt.register_out_kernel(DispatchKey::CUDA, gt_out_cuda);
  op::ge.register_out_kernel(DispatchKey::CUDA, ge_out_cuda);
  op::threshold_backward.register_out_kernel(DispatchKey::CUDA, threshold_backward_out_cuda);
  op::neg.register_out_kernel(DispatchKey::CUDA, neg_out_cuda);
  op::abs.register_out_kernel(DispatchKey::CUDA, abs_out_cuda);
  op::relu.register_out_kernel(DispatchKey::CUDA, relu_out_cuda);
  op::exp.register_out_kernel(DispatchKey::CUDA, exp_out_cuda);
  op::log.register_out_kernel(DispatchKey::CUDA, log_out_cuda);
  op::sqrt.register_out_kernel(DispatchKey::CUDA, sqrt_out_cuda);
  op::tanh.register_out_kernel(DispatchKey::CUDA, tanh_out_cuda);
  op::sigmoid.register_out_kernel(DispatchKey::CUDA, sigmoid_out_cuda);
}

}  // namespace flambeau::cuda
