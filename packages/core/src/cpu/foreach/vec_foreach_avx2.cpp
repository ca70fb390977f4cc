// The fused optimizer loops compiled for AVX2+FMA (Note [Fused optimizer loops] in foreach.h).
#define FB_FOREACH_NS foreach_avx2
#define FB_FILL_FOREACH_TABLE fill_foreach_table_avx2
#include "foreach_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(foreach_table_stub, avx2, (&table_of<ForeachTable, fill_foreach_table_avx2>));
}  // namespace flambeau::cpu
