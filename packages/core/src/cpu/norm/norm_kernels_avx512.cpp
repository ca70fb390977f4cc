// The normalization loops compiled for avx512 (Note [Normalization kernels] in norm_kernels.h).
#define FB_CPU_CAPABILITY avx512
#define FB_CPU_CAPABILITY_NAME "avx512"
#define FB_FILL_NORM_TABLE fill_norm_table_avx512
#include "norm_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(norm_table_stub, avx512, (&table_of<NormTable, fill_norm_table_avx512>));
}  // namespace flambeau::cpu
