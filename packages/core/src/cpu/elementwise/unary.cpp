// CPU kernels: neg, abs, relu (keep the dtype) and exp, log, tanh, sigmoid,
// sqrt (integer and bool inputs compute in the default float dtype).
#include "elementwise.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {
using namespace cpu;

Tensor unary(const char* op, const Tensor& a, VecOp vop, const IntLoops& ints) {
  const ScalarType t = a.dtype();
  const Loop1D loop = pick_loop(op, t, vop, ints);
  TensorIterator it = TensorIterator::unary(op, a, t, t);
  run_loop(it, loop, 0);
  return it.output();
}

Tensor unary_float(const char* op, const Tensor& a, VecOp vop) {
  const ScalarType t = to_float_dtype(a.dtype());
  const Loop1D loop = pick_loop(op, t, vop, kNoIntLoops);
  TensorIterator it = TensorIterator::unary(op, a, t, t);
  run_loop(it, loop, 0, vop == kVecSqrt ? kMemoryBoundGrain : kGrainSize);
  return it.output();
}

Tensor neg_cpu(const Tensor& a) { return unary("neg", a, kVecNeg, FB_INT_LOOPS_NO_BOOL(base::neg_loop)); }
Tensor abs_cpu(const Tensor& a) {
  if (is_complex(a.dtype())) return complex_abs(a);
  return unary("abs", a, kVecAbs, FB_INT_LOOPS_NO_BOOL(base::abs_loop));
}
Tensor relu_cpu(const Tensor& a) { return unary("relu", a, kVecRelu, FB_INT_LOOPS_NO_BOOL(base::relu_loop)); }
Tensor exp_cpu(const Tensor& a) { return unary_float("exp", a, kVecExp); }
Tensor log_cpu(const Tensor& a) { return unary_float("log", a, kVecLog); }
Tensor tanh_cpu(const Tensor& a) { return unary_float("tanh", a, kVecTanh); }
Tensor sigmoid_cpu(const Tensor& a) { return unary_float("sigmoid", a, kVecSigmoid); }
Tensor sqrt_cpu(const Tensor& a) { return unary_float("sqrt", a, kVecSqrt); }

FB_REGISTER_KERNEL(op::neg, CPU, neg_cpu);
FB_REGISTER_KERNEL(op::abs, CPU, abs_cpu);
FB_REGISTER_KERNEL(op::relu, CPU, relu_cpu);
FB_REGISTER_KERNEL(op::exp, CPU, exp_cpu);
FB_REGISTER_KERNEL(op::log, CPU, log_cpu);
FB_REGISTER_KERNEL(op::tanh, CPU, tanh_cpu);
FB_REGISTER_KERNEL(op::sigmoid, CPU, sigmoid_cpu);
FB_REGISTER_KERNEL(op::sqrt, CPU, sqrt_cpu);

}  // namespace
}  // namespace flambeau
