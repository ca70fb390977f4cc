#pragma once
// Note [Low-precision kernels]: the CPU kernels of the ops autocast feeds float16/bfloat16
// (convolution, pooling, batch and layer norm, softmax, prelu, embedding's backward) compute
// them as PyTorch's CPU kernels do, in float32: the float32 kernel runs on float32 copies of the
// 16-bit operands and each result is rounded to the 16-bit dtype once, on the way out. The
// float32 parameters of a mixed-precision call (batch norm's weight and running statistics) are
// used as they are, so running statistics updated in place stay float32.
// bfloat16 batch norm (more than one value per image and channel), max pooling and relu's
// backward skip the copies: they widen blocks in cache (Note [Batch norm in bfloat16]) or
// compare widened values and pass the selected 16-bit values through (exact).
#include <optional>

#include "flambeau/dtype.h"
#include "flambeau/ops.h"
#include "flambeau/tensor.h"

namespace flambeau::cpu {

inline bool is_low_precision(ScalarType t) { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }

/// t in float32 (t itself when it is float32 already).
inline Tensor to_float32(const Tensor& t) { return to_dtype(t, ScalarType::Float32); }
inline std::optional<Tensor> to_float32(const std::optional<Tensor>& t) {
  return t ? std::optional<Tensor>(to_float32(*t)) : std::nullopt;
}

/// A float32 result rounded to `dt` once; an undefined result (a gradient not asked for) stays so.
inline Tensor round_to(const Tensor& t, ScalarType dt) { return t.defined() ? to_dtype(t, dt) : t; }

}  // namespace flambeau::cpu
