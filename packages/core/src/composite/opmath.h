// Composites that compute as PyTorch's CPU kernels do (addcmul, addcdiv, lerp): float16/bfloat16
// operands in float32 arithmetic with one rounding at the end (PyTorch's opmath), and the fused
// multiply-add kernel on the CPU (Note [Fused addcmul], src/cpu/elementwise/addcmul.cpp).
#pragma once

#include <initializer_list>

#include "flambeau/ops.h"
#include "flambeau/tensor_iterator.h"

namespace flambeau::opmath {

inline bool is_16bit(ScalarType t) { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }

/// A float16/bfloat16 tensor as float32 (exact), any other as it is.
inline Tensor widen(const Tensor& x) { return is_16bit(x.dtype()) ? to_dtype(x, ScalarType::Float32) : x; }

/// The promoted dtype of the operands.
inline ScalarType promoted(std::initializer_list<const Tensor*> operands) {
  return result_type(std::span<const Tensor* const>(operands.begin(), operands.size()));
}

/// Every operand on the CPU and a real floating result: _addcmul_fused computes it there.
inline bool fused_on_cpu(std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    if (!t->device().is_cpu()) return false;
  const ScalarType t = promoted(operands);
  return is_floating(t) && !is_complex(t);
}

}  // namespace flambeau::opmath
