// The float kernels compiled for avx512 (Note [CPU capabilities] in vec_table.h).
#define FB_CPU_CAPABILITY avx512
#define FB_CPU_CAPABILITY_NAME "avx512"
#define FB_FILL_VEC_TABLE fill_vec_table_avx512
#include "vec_kernels.inc"
