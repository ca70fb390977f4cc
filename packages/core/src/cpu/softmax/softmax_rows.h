#pragma once
// Note [Softmax rows]
// softmax / log_softmax along a dim whose elements are contiguous (the last
// dim, the common case: logits of shape (rows, classes)) run a few passes over
// each row while it sits in cache: the max; then the sum of exp(x - max),
// softmax storing the exps as it goes; then one scaling pass. log_softmax
// writes (x - max) - log(sum) directly. The backward kernels take the saved
// output y: softmax's gradient is y * (g - sum(g * y)), log_softmax's
// g - exp(y) * sum(g). No temporaries and no separate exp/mul/sum ops, which
// is what made softmax (computed as exp(log_softmax(x))) and its gradient
// (five elementwise ops and a reduction) slower than PyTorch's fused kernels.
// The loops are compiled per ISA (Note [CPU capabilities]: vec_softmax_*.cpp
// from vec_softmax.inc); float32 uses the branch-free exp_f32/log of loops.h
// with float sums over vector lanes, float64 the C library. An all -inf row
// gives NaN (as PyTorch: exp(-inf - -inf)), a NaN anywhere makes its row NaN.
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

/// `rows` contiguous rows of `n` elements each, row r at offset r * n.
template <class T>
using SoftmaxFwd = void (*)(const T* x, T* y, int64_t rows, int64_t n);
template <class T>
using SoftmaxBwd = void (*)(const T* grad, const T* out, T* grad_in, int64_t rows, int64_t n);

struct SoftmaxRowTable {
  SoftmaxFwd<float> softmax_f32;
  SoftmaxFwd<double> softmax_f64;
  SoftmaxFwd<float> log_softmax_f32;
  SoftmaxFwd<double> log_softmax_f64;
  SoftmaxBwd<float> softmax_bwd_f32;
  SoftmaxBwd<double> softmax_bwd_f64;
  SoftmaxBwd<float> log_softmax_bwd_f32;
  SoftmaxBwd<double> log_softmax_bwd_f64;
};

void fill_softmax_rows_base(SoftmaxRowTable& t);
void fill_softmax_rows_avx2(SoftmaxRowTable& t);
void fill_softmax_rows_avx512(SoftmaxRowTable& t);

FB_DECLARE_DISPATCH(const SoftmaxRowTable& (*)(), softmax_rows_stub);

/// The table of the active instruction set (Note [CPU capabilities] in dispatch_stub.h).
const SoftmaxRowTable& softmax_rows();

}  // namespace flambeau::cpu
