// CPU out kernels (Note [Structured kernels]): neg, abs, relu (keep the dtype)
// and exp, log, tanh, sigmoid, sqrt (integer and bool inputs compute in the
// default float dtype).
#include "elementwise.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {
using namespace cpu;

// Note [Structured kernels]: out has the meta step's dtype (the input's, or for exp ... sqrt the
// float dtype of the `float` rule), or self's in place, and the loops compute in it.
void unary_out(const char* op, const Tensor& out, const Tensor& a, VecOp vop, const IntLoops& ints,
               int64_t grain = kMemoryBoundGrain) {
  const ScalarType t = out.dtype();
  const Loop1D loop = pick_loop(op, t, vop, ints);
  run_loop(TensorIterator::into(op, out, a, t), loop, 0, grain);
}

void neg_out_cpu(const Tensor& out, const Tensor& a) {
  unary_out("neg", out, a, kVecNeg, FB_INT_LOOPS_NO_BOOL(base::neg_loop));
}
// abs of a complex tensor is real (the `real` rule): out has the real dtype.
void abs_out_cpu(const Tensor& out, const Tensor& a) {
  if (is_complex(a.dtype())) return complex_abs_into(out, a);
  unary_out("abs", out, a, kVecAbs, FB_INT_LOOPS_NO_BOOL(base::abs_loop));
}
void relu_out_cpu(const Tensor& out, const Tensor& a) {
  unary_out("relu", out, a, kVecRelu, FB_INT_LOOPS_NO_BOOL(base::relu_loop));
}
void exp_out_cpu(const Tensor& out, const Tensor& a) { unary_out("exp", out, a, kVecExp, kNoIntLoops, kGrainSize); }
void log_out_cpu(const Tensor& out, const Tensor& a) { unary_out("log", out, a, kVecLog, kNoIntLoops, kGrainSize); }
void tanh_out_cpu(const Tensor& out, const Tensor& a) {
  unary_out("tanh", out, a, kVecTanh, kNoIntLoops, kGrainSize);
}
void sigmoid_out_cpu(const Tensor& out, const Tensor& a) {
  unary_out("sigmoid", out, a, kVecSigmoid, kNoIntLoops, kGrainSize);
}
void sqrt_out_cpu(const Tensor& out, const Tensor& a) { unary_out("sqrt", out, a, kVecSqrt, kNoIntLoops); }

FB_REGISTER_OUT_KERNEL(op::neg, CPU, neg_out_cpu);
FB_REGISTER_OUT_KERNEL(op::abs, CPU, abs_out_cpu);
FB_REGISTER_OUT_KERNEL(op::relu, CPU, relu_out_cpu);
FB_REGISTER_OUT_KERNEL(op::exp, CPU, exp_out_cpu);
FB_REGISTER_OUT_KERNEL(op::log, CPU, log_out_cpu);
FB_REGISTER_OUT_KERNEL(op::tanh, CPU, tanh_out_cpu);
FB_REGISTER_OUT_KERNEL(op::sigmoid, CPU, sigmoid_out_cpu);
FB_REGISTER_OUT_KERNEL(op::sqrt, CPU, sqrt_out_cpu);

}  // namespace
}  // namespace flambeau
