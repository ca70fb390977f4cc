// The reduction loops compiled for avx512 (Note [Reduction kernels] in vec_reduce.h).
#define FB_CPU_CAPABILITY avx512
#define FB_CPU_CAPABILITY_NAME "avx512"
#define FB_FILL_REDUCE_TABLE fill_reduce_table_avx512
#include "vec_reduce.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(reduce_table_stub, avx512, (&table_of<ReduceTable, fill_reduce_table_avx512>));
}  // namespace flambeau::cpu
