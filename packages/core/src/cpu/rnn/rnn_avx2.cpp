// The recurrent cell kernels compiled for AVX2+FMA (rnn_kernels.inc).
#define FB_CPU_CAPABILITY avx2
#define FB_FILL_RNN_KERNELS fill_rnn_kernels_avx2
#include "rnn_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(rnn_kernels_stub, avx2, (&table_of<RnnKernelTable, fill_rnn_kernels_avx2>));
}  // namespace flambeau::cpu
