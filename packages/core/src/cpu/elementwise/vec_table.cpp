// The vector table's stub (Note [CPU capabilities] in dispatch_stub.h).
#include "cpu/elementwise/vec_table.h"

namespace flambeau::cpu {

FB_DEFINE_DISPATCH(vec_table_stub);

const VecTable& vec_table() { return vec_table_stub.get()(); }

}  // namespace flambeau::cpu
