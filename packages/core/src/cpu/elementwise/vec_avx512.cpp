// The float kernels compiled for avx512 (Note [CPU capabilities] in dispatch_stub.h).
#define FB_CPU_CAPABILITY avx512
#define FB_CPU_CAPABILITY_NAME "avx512"
#define FB_FILL_VEC_TABLE fill_vec_table_avx512
#include "vec_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(vec_table_stub, avx512, (&table_of<VecTable, fill_vec_table_avx512>));
}  // namespace flambeau::cpu
