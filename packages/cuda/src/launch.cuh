// Launch geometry shared by flambeau-cuda's .cu files.
#pragma once

#include <cstdint>

namespace flambeau::cuda {

// Threads per block of every 1-D kernel.
inline constexpr int kThreads = 256;

// Blocks for n elements, capped at 2^20: every 1-D kernel loops with a grid
// stride (i += blockDim.x * gridDim.x), so a capped grid still covers n.
inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < (int64_t{1} << 20) ? blocks : (int64_t{1} << 20));
}

}  // namespace flambeau::cuda
