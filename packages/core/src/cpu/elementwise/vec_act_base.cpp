// The activation loops compiled for base (Note [Activation loops] in act_table.h).
#define FB_CPU_CAPABILITY base
#define FB_FILL_ACT_TABLE fill_act_table_base
#include "vec_act_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(act_table_stub, base, (&table_of<ActTable, fill_act_table_base>));
}  // namespace flambeau::cpu
