#pragma once
// The vector table: the hot loops over float32/float64 (elementwise arithmetic, unary math, the
// sum kernel), compiled once per instruction set from vec_kernels.inc (vec_base.cpp, vec_avx2.cpp,
// vec_avx512.cpp) and chosen by vec_table_stub (Note [CPU capabilities] in dispatch_stub.h).
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"
#include "flambeau/elementwise_math.h"
#include "flambeau/macros.h"

namespace flambeau::cpu {

// The float-valued unary math (FB_FLOAT_UNARY_MATH) and the rounding ops
// (FB_FLOAT_ROUNDING) come from the list every backend shares (Note
// [Elementwise math list]). Each gets a VecOp kVec_<name>, a loop
// <name>_loop<T> (loops.h) compiled per capability, and for the first list a
// CPU kernel (unary_math.cpp) where integer inputs compute in float32.
// float32 versions with a branch-free polynomial (as exp_f32) can replace the
// expression for one dtype inside its loop.

enum VecOp : int {
  kVecAdd,
  kVecSub,
  kVecMul,
  kVecDiv,
  kVecMaximum,
  kVecMinimum,
  kVecXlogy,  // binary ops: before kVecNeg (half_loops.cpp); their vector loops are vec_special.inc's
  kVecXlog1py,
  kVecNeg,
  kVecAbs,
  kVecRelu,
  kVecSqrt,
  kVecExp,
  kVecLog,
  kVecTanh,
  kVecSigmoid,
#define FB_VEC_ENUM(name, expr) kVec_##name,
  FB_FLOAT_UNARY_MATH(FB_VEC_ENUM) FB_FLOAT_ROUNDING(FB_VEC_ENUM)
#undef FB_VEC_ENUM
      kNumVecOps
};

/// A 1-D loop of the iterator (Note [TensorIterator]); `param` is alpha for add/sub.
using Loop1D = void (*)(char** data, const int64_t* strides, int64_t n, double param);

struct VecTable {
  const char* name;
  Loop1D f32[kNumVecOps];
  Loop1D f64[kNumVecOps];
  double (*sum_f32)(const char* p, int64_t n, int64_t stride);
  double (*sum_f64)(const char* p, int64_t n, int64_t stride);
  void (*accumulate_row_f32)(double* acc, const char* p, int64_t n, int64_t stride);
  void (*accumulate_row_f64)(double* acc, const char* p, int64_t n, int64_t stride);
};

void fill_vec_table_base(VecTable& t);
void fill_vec_table_avx2(VecTable& t);
void fill_vec_table_avx512(VecTable& t);

FB_DECLARE_DISPATCH(const VecTable& (*)(), vec_table_stub);

/// The table of the active instruction set (vec_table.cpp).
const VecTable& vec_table();

}  // namespace flambeau::cpu
