// The convolution loops of conv_kernels.inc compiled for AVX2 + FMA
// (Note [CPU capabilities]); conv.cpp calls them when the CPU has both.
#include <algorithm>
#include <cstring>
#include <vector>

#include "conv_kernels.h"

namespace flambeau::cpu::conv_avx2 {
#include "conv_kernels.inc"
}  // namespace flambeau::cpu::conv_avx2
