// The reduction loops compiled for base (Note [Reduction kernels] in vec_reduce.h).
#define FB_CPU_CAPABILITY base
#define FB_CPU_CAPABILITY_NAME "base"
#define FB_FILL_REDUCE_TABLE fill_reduce_table_base
#include "vec_reduce.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(reduce_table_stub, base, (&table_of<ReduceTable, fill_reduce_table_base>));
}  // namespace flambeau::cpu
