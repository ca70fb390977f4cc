// The recurrent cell kernels compiled for AVX-512 (rnn_kernels.inc): 16 lanes a vector for the gates'
// sigmoids and tanhs of a row, twice the AVX2 kernels' 8.
#define FB_CPU_CAPABILITY avx512
#define FB_FILL_RNN_KERNELS fill_rnn_kernels_avx512
#include "rnn_kernels.inc"

namespace flambeau::cpu {
FB_REGISTER_DISPATCH(rnn_kernels_stub, avx512, (&table_of<RnnKernelTable, fill_rnn_kernels_avx512>));
}  // namespace flambeau::cpu
