// The convolution loops of conv_kernels.inc for any x86-64 (or other) CPU.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "conv_kernels.h"

namespace flambeau::cpu::conv_base {
#include "conv_kernels.inc"
}  // namespace flambeau::cpu::conv_base

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(conv_loops_stub, base, (&table_of<ConvLoops, conv_base::fill_loops>));
}  // namespace flambeau::cpu
