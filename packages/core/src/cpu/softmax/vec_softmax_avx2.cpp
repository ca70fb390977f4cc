// The softmax row loops compiled for avx2 (Note [Softmax rows] in softmax_rows.h).
#define FB_CPU_CAPABILITY avx2
#define FB_FILL_SOFTMAX_ROWS fill_softmax_rows_avx2
#include "vec_softmax.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(softmax_rows_stub, avx2, (&table_of<SoftmaxRowTable, fill_softmax_rows_avx2>));
}  // namespace flambeau::cpu
