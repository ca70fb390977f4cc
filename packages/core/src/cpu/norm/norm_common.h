#pragma once
// Checks and layout helpers shared by the normalization, dropout and embedding
// kernels (norm_batch.cpp, norm_layer.cpp, norm_dropout.cpp, embedding.cpp).
#include <optional>
#include <string>

#include "flambeau/error.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/tensor.h"
#include "flambeau/type_dispatch.h"

namespace flambeau::cpu {

inline void check_floating(const Tensor& t, const char* op, const char* what) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, "[", op, "] ", what,
                " must be a float32 or float64 tensor, got dtype ", dtype_name(t.dtype()));
}

inline Tensor contig(const Tensor& t) { return op::contiguous(t, MemoryFormat::Contiguous); }

/// Data of an optional parameter made contiguous (kept alive by `holder`), or null.
template <class T>
const T* opt_data(const std::optional<Tensor>& p, Tensor& holder) {
  if (!p) return nullptr;
  holder = contig(*p);
  return holder.data<T>();
}

}  // namespace flambeau::cpu
