// The reduction loops compiled for avx512 (Note [Reduction kernels] in vec_reduce.h).
#define FB_CPU_CAPABILITY avx512
#define FB_CPU_CAPABILITY_NAME "avx512"
#define FB_FILL_REDUCE_TABLE fill_reduce_table_avx512
#include "vec_reduce.inc"
