// The convolution loops of conv_kernels.inc compiled for AVX2 + FMA
// (Note [CPU capabilities] in dispatch_stub.h).
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "conv_kernels.h"

namespace flambeau::cpu::conv_avx2 {
#include "conv_kernels.inc"
}  // namespace flambeau::cpu::conv_avx2

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(conv_loops_stub, avx2, (&table_of<ConvLoops, conv_avx2::fill_loops>));
}  // namespace flambeau::cpu
