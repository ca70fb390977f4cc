#pragma once
// The elementwise launcher (elementwise.cu): one output and up to two inputs
// walked by an OffsetCalculator<3> (Note [CUDA index math]); an input may be
// a host scalar passed by value (a wrapped number or a 0-dim cpu tensor).
#include <cstdint>

#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

enum EwOp : int {
  // binary (out dtype = compute dtype)
  kEwAdd,  // a + alpha * b
  kEwSub,  // a - alpha * b
  kEwMul,
  kEwDiv,
  kEwMaximum,
  kEwMinimum,
  kEwPow,
  kEwThresholdBackward,  // b <= extra ? 0 : a   (a: grad_output, b: self)
  // comparisons (out dtype bool)
  kEwEq,
  kEwNe,
  kEwLt,
  kEwLe,
  kEwGt,
  kEwGe,
  // unary (input 0 only)
  kEwNeg,
  kEwAbs,
  kEwRelu,
  kEwExp,
  kEwLog,
  kEwSqrt,
  kEwTanh,
  kEwSigmoid,
};

inline bool ew_is_comparison(int op) { return op >= kEwEq && op <= kEwGe; }
inline bool ew_is_unary(int op) { return op >= kEwNeg; }

struct EwArgs {
  OffsetCalculator<3> calc;  // element strides of out, in0, in1
  void* out = nullptr;
  const void* in[2] = {nullptr, nullptr};  // nullptr: use scalar[k]
  double scalar[2] = {0, 0};
  double alpha = 1;
  double extra = 0;
  double extra2 = 0;        // a third parameter (elementwise_math.h)
  bool contiguous = false;  // every tensor operand contiguous with the output's shape
};

/// compute: 0 float32, 1 float64, 2 int64. Returns the cudaError_t of the launch.
int launch_elementwise(int op, int compute, const EwArgs& args, int64_t n, void* stream);

/// where: out[c0] = cond[c1] ? a[c2] : b[c3]; a/b may be host scalars
/// (nullptr: scalar[k]); elements of `elem_size` bytes (1, 2, 4, 8, 16).
struct WhereArgs {
  OffsetCalculator<4> calc;
  void* out = nullptr;
  const bool* cond = nullptr;
  const void* in[2] = {nullptr, nullptr};
  unsigned char scalar[2][16] = {};  // a host scalar's bytes in the output dtype
};
int launch_where(const WhereArgs& args, int elem_size, int64_t n, void* stream);

}  // namespace flambeau::cuda
