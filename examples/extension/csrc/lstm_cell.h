// example::lstm_cell's pieces shared by the C++ file and the CUDA file.
#pragma once

#include <flambeau/extension.h>

#include <tuple>

namespace example {

// gates (N, 4H) and c (N, H) of one floating dtype (float32 or float64) and one device.
void check_lstm_cell_inputs(const flambeau::Tensor& gates, const flambeau::Tensor& c);

#ifdef FLAMBEAU_EXAMPLE_WITH_CUDA
// lstm_cell_cuda.cu: the fused loop as a CUDA kernel.
std::tuple<flambeau::Tensor, flambeau::Tensor> lstm_cell_cuda(const flambeau::Tensor& gates,
                                                              const flambeau::Tensor& c);
#endif

}  // namespace example
