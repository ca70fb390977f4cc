#pragma once
// The CUDA kernels of native_layer_norm / native_batch_norm and their backwards
// (norm.cpp), made of dispatched ops: on cpu tensors they run core's CPU kernels
// step by step, which the host tests use (module.cpp's _norm_on_host).
#include <optional>
#include <tuple>

#include "flambeau/tensor.h"

namespace flambeau::cuda {

using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;
using OptTensor = std::optional<Tensor>;

struct NormFunctions {
  Tensor3 (*layer_norm)(const Tensor&, IntArrayRef, const OptTensor&, const OptTensor&, double);
  Tensor3 (*layer_norm_backward)(const Tensor&, const Tensor&, IntArrayRef, const Tensor&, const Tensor&,
                                 const OptTensor&, bool, bool, bool);
  Tensor3 (*batch_norm)(const Tensor&, const OptTensor&, const OptTensor&, const OptTensor&, const OptTensor&,
                        bool, double, double);
  Tensor3 (*batch_norm_backward)(const Tensor&, const Tensor&, const OptTensor&, const Tensor&, const Tensor&,
                                 bool, bool, bool, bool);
};
NormFunctions norm_functions();

}  // namespace flambeau::cuda
