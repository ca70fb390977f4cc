// The activation loops compiled for avx2 (Note [Activation loops] in act_table.h).
#define FB_CPU_CAPABILITY avx2
#define FB_FILL_ACT_TABLE fill_act_table_avx2
#include "vec_act_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(act_table_stub, avx2, (&table_of<ActTable, fill_act_table_avx2>));
}  // namespace flambeau::cpu
