#pragma once
// Shared by the elementwise kernel files (binary.cpp, unary.cpp): choosing a
// 1-D loop for a compute dtype. float32/float64 loops come from the
// run-time-selected vector table (Note [CPU capabilities]); bool/int32/int64
// loops are the baseline instantiations passed in `ints`.
#include "flambeau/error.h"
#include "loops.h"
#include "tensor_iterator.h"
#include "vec_table.h"

namespace flambeau::cpu {

/// Loops for bool, uint8, int8, int16, int32, int64 in ScalarType order
/// (nullptr: the op does not support that dtype).
struct IntLoops {
  Loop1D by_type[6];
};
#define FB_INT_LOOPS(fn)                                                             \
  ::flambeau::cpu::IntLoops {                                                        \
    {                                                                                \
      &fn<bool>, &fn<uint8_t>, &fn<int8_t>, &fn<int16_t>, &fn<int32_t>, &fn<int64_t> \
    }                                                                                \
  }
#define FB_INT_LOOPS_NO_BOOL(fn)                                                   \
  ::flambeau::cpu::IntLoops {                                                      \
    {                                                                              \
      nullptr, &fn<uint8_t>, &fn<int8_t>, &fn<int16_t>, &fn<int32_t>, &fn<int64_t> \
    }                                                                              \
  }
inline constexpr IntLoops kNoIntLoops{};

[[noreturn]] inline void unsupported_dtype(const char* op, ScalarType t) {
  if (t == ScalarType::Bool) throw TypeError(detail::cat_str("[", op, "] is not supported for bool tensors"));
  throw TypeError(detail::cat_str("[", op, "] dtype ", dtype_name(t), " is not supported yet"));
}

inline Loop1D pick_loop(const char* op, ScalarType t, VecOp vop, const IntLoops& ints) {
  Loop1D f = nullptr;
  switch (t) {
    case ScalarType::Float32:
      f = vec_table().f32[vop];
      break;
    case ScalarType::Float64:
      f = vec_table().f64[vop];
      break;
    default:
      if (is_integral(t, /*include_bool=*/true)) f = ints.by_type[static_cast<int>(t)];
      break;
  }
  if (!f) unsupported_dtype(op, t);
  return f;
}

/// grain: Note [Elementwise grain].
inline void run_loop(const TensorIterator& it, Loop1D loop, double param, int64_t grain = kMemoryBoundGrain) {
  it.for_each([loop, param](char** d, const int64_t* s, int64_t n) { loop(d, s, n, param); }, grain);
}

}  // namespace flambeau::cpu
