// The fused optimizer loops for baseline x86-64 (Note [Fused optimizer loops] in foreach.h).
#define FB_FOREACH_NS foreach_base
#define FB_FILL_FOREACH_TABLE fill_foreach_table_base
#include "foreach_kernels.inc"
