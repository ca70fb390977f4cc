// The softmax row loops compiled for avx512 (Note [Softmax rows] in softmax_rows.h).
#define FB_CPU_CAPABILITY avx512
#define FB_FILL_SOFTMAX_ROWS fill_softmax_rows_avx512
#include "vec_softmax.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(softmax_rows_stub, avx512, (&table_of<SoftmaxRowTable, fill_softmax_rows_avx512>));
}  // namespace flambeau::cpu
