#pragma once
// The elementwise math launcher (elementwise_math.cu): unary float math,
// rounding, the activations and their backward, the binary float math, the
// integer division ops, logical and bitwise ops, and float predicates, over
// the EwArgs of the elementwise launcher (elementwise.h). Parameters:
// args.alpha, args.extra, args.extra2 are the op's p0, p1, p2.
#include "elementwise.h"

namespace flambeau::cuda {

enum MathOp : int {
  // unary (input 0 only)
  kMSin,
  kMCos,
  kMTan,
  kMAsin,
  kMAcos,
  kMAtan,
  kMSinh,
  kMCosh,
  kMAsinh,
  kMAcosh,
  kMAtanh,
  kMExpm1,
  kMLog1p,
  kMLog2,
  kMLog10,
  kMExp2,
  kMErf,
  kMErfc,
  kMErfinv,
  kMRsqrt,
  kMReciprocal,
  kMFloor,
  kMCeil,
  kMTrunc,
  kMRound,  // p0 decimals, p1 10^|decimals|
  kMFrac,
  kMSign,
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
  kMAtan2 = kMFirstBinary,
  kMHypot,
  kMCopysign,
  kMNextafter,
  kMLogaddexp,
  kMFmod,
  kMRemainder,
  kMFloorDivide,
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

/// compute: 0 float32, 1 float64, 2 int64; out_bool: the output is bool
/// (r != 0), else of the compute dtype. Returns the cudaError_t of the launch.
int launch_math(int op, int compute, const EwArgs& args, bool out_bool, int64_t n, void* stream);

}  // namespace flambeau::cuda
