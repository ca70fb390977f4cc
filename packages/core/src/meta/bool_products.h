#pragma once
// The bool rule of the matrix products (mm, bmm, linear, matmul, mv, addmm, addmv, baddbmm, addbmm).
//
// Note [Bool products]
// PyTorch has no bool GEMM kernel: a product of bool matrices raises "not implemented for 'Bool'"
// (NotImplementedError). It returns before looking for a kernel when there is nothing to compute, so an
// empty result, or k = 0 (a result of zeros, False), is still made for bool. flambeau follows both,
// raising its dtype error class, TypeError (Note [Errors]), named for the op the user called.
#include <cstdint>

#include "flambeau/dtype.h"
#include "flambeau/error.h"

namespace flambeau::meta {

/// Refuses a bool product with work to do: `out_numel` elements, each a sum over `k` products.
inline void check_bool_product(const char* op, ScalarType dtype, int64_t out_numel, int64_t k) {
  FB_CHECK_TYPE(dtype != ScalarType::Bool || out_numel == 0 || k == 0, "[", op,
                "] is not supported for bool tensors (PyTorch has no bool matrix product)");
}

}  // namespace flambeau::meta
