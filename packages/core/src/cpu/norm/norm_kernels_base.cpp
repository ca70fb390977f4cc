// The normalization loops compiled for base (Note [Normalization kernels] in norm_kernels.h).
#define FB_CPU_CAPABILITY base
#define FB_CPU_CAPABILITY_NAME "base"
#define FB_FILL_NORM_TABLE fill_norm_table_base
#include "norm_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(norm_table_stub, base, (&table_of<NormTable, fill_norm_table_base>));
}  // namespace flambeau::cpu
