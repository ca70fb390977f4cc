// The reduction loops compiled for avx2 (Note [Reduction kernels] in vec_reduce.h).
#define FB_CPU_CAPABILITY avx2
#define FB_CPU_CAPABILITY_NAME "avx2"
#define FB_FILL_REDUCE_TABLE fill_reduce_table_avx2
#include "vec_reduce.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(reduce_table_stub, avx2, (&table_of<ReduceTable, fill_reduce_table_avx2>));
}  // namespace flambeau::cpu
