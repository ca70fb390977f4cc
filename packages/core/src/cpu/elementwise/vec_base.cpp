// The float kernels compiled for base (Note [CPU capabilities] in vec_table.h).
#define FB_CPU_CAPABILITY base
#define FB_CPU_CAPABILITY_NAME "base"
#define FB_FILL_VEC_TABLE fill_vec_table_base
#include "vec_kernels.inc"
