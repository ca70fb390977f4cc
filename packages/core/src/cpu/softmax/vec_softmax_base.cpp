// The softmax row loops compiled for base (Note [Softmax rows] in softmax_rows.h).
#define FB_CPU_CAPABILITY base
#define FB_FILL_SOFTMAX_ROWS fill_softmax_rows_base
#include "vec_softmax.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(softmax_rows_stub, base, (&table_of<SoftmaxRowTable, fill_softmax_rows_base>));
}  // namespace flambeau::cpu
