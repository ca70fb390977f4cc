// The normalization loops compiled for avx2 (Note [Normalization kernels] in norm_kernels.h).
#define FB_CPU_CAPABILITY avx2
#define FB_CPU_CAPABILITY_NAME "avx2"
#define FB_FILL_NORM_TABLE fill_norm_table_avx2
#include "norm_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(norm_table_stub, avx2, (&table_of<NormTable, fill_norm_table_avx2>));
}  // namespace flambeau::cpu
