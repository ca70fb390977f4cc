#pragma once
// Advanced indexing on CUDA (Note [CUDA advanced indexing] in advanced_index.cpp).
#include <cstdint>
#include <functional>

#include "flambeau/tensor.h"

namespace flambeau::cuda {

struct IndexPlan {
  Shape index_shape;   // B, the broadcast shape of the index tensors
  Shape result_shape;  // pre + B + post
  Tensor offsets;      // int64, result_shape, contiguous: element offsets into self (on self's device)
};

/// The plan of `indices`, which passed meta::check_index (index's check step), made with dispatched ops.
IndexPlan plan_index(const char* op, const Tensor& self, const OptionalTensorList& indices);
/// self[indices].
Tensor index_impl(const Tensor& self, const OptionalTensorList& indices);
/// Writes (or adds) `values` (contiguous, result_shape, self's dtype and device) at `offsets` of self.
using PutFn = std::function<void(Tensor& self, const Tensor& offsets, const Tensor& values, bool accumulate)>;
/// self[indices] = values (+= with accumulate): checks, plans, then `put`.
Tensor& index_put_impl(Tensor& self, const OptionalTensorList& indices, const Tensor& values, bool accumulate,
                       const PutFn& put);

/// self_data[offsets[i]] = (or +=) values[i], i < n; elements of `itemsize` bytes of dtype code `dtype`.
int launch_index_put(void* self_data, const int64_t* offsets, const void* values, int64_t n, int dtype,
                     int itemsize, bool accumulate, void* stream);

}  // namespace flambeau::cuda
