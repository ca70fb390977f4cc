// The fused optimizer loops for baseline x86-64 (Note [Fused optimizer loops] in foreach.h).
#define FB_FOREACH_NS foreach_base
#define FB_FILL_FOREACH_TABLE fill_foreach_table_base
#include "foreach_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(foreach_table_stub, base, (&table_of<ForeachTable, fill_foreach_table_base>));
}  // namespace flambeau::cpu
