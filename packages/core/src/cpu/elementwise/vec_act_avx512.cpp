// The activation loops compiled for avx512 (Note [Activation loops] in act_table.h).
#define FB_CPU_CAPABILITY avx512
#define FB_FILL_ACT_TABLE fill_act_table_avx512
#include "vec_act_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(act_table_stub, avx512, (&table_of<ActTable, fill_act_table_avx512>));
}  // namespace flambeau::cpu
