// The softmax row loops compiled for base (Note [Softmax rows] in softmax_rows.h).
#define FB_CPU_CAPABILITY base
#define FB_FILL_SOFTMAX_ROWS fill_softmax_rows_base
#include "vec_softmax.inc"
