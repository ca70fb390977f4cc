#pragma once
// The elementwise math launcher (elementwise_math.cu): the ops of core's
// shared list (unary float math, rounding, binary math), round with
// decimals, the activations and their backward, trunc division, logical and
// bitwise ops, and float predicates, over
// the EwArgs of the elementwise launcher (elementwise.h). Parameters:
// args.alpha, args.extra, args.extra2 are the op's p0, p1, p2.
#include "elementwise.h"
#include "flambeau/elementwise_math.h"

namespace flambeau::cuda {

// The op codes: first those of core's shared list (Note [Elementwise math
// list] in flambeau/elementwise_math.h), kM_<name>, then the ops of this
// file's own switch cases.
#define FBC_MATH_CODE(name, ...) kM_##name,
enum MathOp : int {
  // unary (input 0 only)
  FB_FLOAT_UNARY_MATH(FBC_MATH_CODE) FB_FLOAT_ROUNDING(FBC_MATH_CODE)
  kMRoundDecimals,  // p0 decimals, p1 10^|decimals|
  kMSquare,
  kMGelu,
  kMGeluTanh,
  kMSilu,
  kMMish,
  kMLeakyRelu,  // p0 negative_slope
  kMElu,        // p0 alpha, p1 scale, p2 input_scale
  kMSoftplus,   // p0 beta, p1 threshold
  kMHardtanh,   // p0 min_val, p1 max_val
  kMHardswish,
  kMHardsigmoid,
  kMLogSigmoid,
  kMSoftsign,
  kMNanToNum,  // p0 nan, p1 posinf, p2 neginf
  kMIsnan,     // predicates: bool output
  kMIsinf,
  kMIsfinite,
  kMSignbit,
  kMLogicalNot,
  kMBitwiseNot,  // integers only
  // binary (input 0 and 1)
  kMFirstBinary,
  FB_BINARY_MATH(FBC_MATH_CODE)
  kMTruncDivide,
  kMLogicalAnd,
  kMLogicalOr,
  kMLogicalXor,
  kMBitwiseAnd,  // integers only
  kMBitwiseOr,
  kMBitwiseXor,
  kMBitwiseLeftShift,
  kMBitwiseRightShift,
  // activation backward: input 0 grad_output, input 1 self
  kMGeluBackward,
  kMGeluTanhBackward,
  kMSiluBackward,
  kMMishBackward,
  kMLeakyReluBackward,
  kMEluBackward,
  kMSoftplusBackward,
  kMHardtanhBackward,
  kMHardswishBackward,
  kMHardsigmoidBackward,
  kMLogSigmoidBackward,
  kMSoftsignBackward,
};
#undef FBC_MATH_CODE

/// compute: 0 float32, 1 float64, 2 int64; out_bool: the output is bool
/// (r != 0), else of the compute dtype. Returns the cudaError_t of the launch.
int launch_math(int op, int compute, const EwArgs& args, bool out_bool, int64_t n, void* stream);

}  // namespace flambeau::cuda
