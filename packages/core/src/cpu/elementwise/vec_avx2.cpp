// The float kernels compiled for avx2 (Note [CPU capabilities] in dispatch_stub.h).
#define FB_CPU_CAPABILITY avx2
#define FB_CPU_CAPABILITY_NAME "avx2"
#define FB_FILL_VEC_TABLE fill_vec_table_avx2
#include "vec_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(vec_table_stub, avx2, (&table_of<VecTable, fill_vec_table_avx2>));
}  // namespace flambeau::cpu
