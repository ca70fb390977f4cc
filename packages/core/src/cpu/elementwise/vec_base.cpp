// The float kernels compiled for base (Note [CPU capabilities] in dispatch_stub.h).
#define FB_CPU_CAPABILITY base
#define FB_CPU_CAPABILITY_NAME "base"
#define FB_FILL_VEC_TABLE fill_vec_table_base
#include "vec_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(vec_table_stub, base, (&table_of<VecTable, fill_vec_table_base>));
}  // namespace flambeau::cpu
