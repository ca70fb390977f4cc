#pragma once
// The per-step cell updates of the recurrent layers (rnn.cpp), fused: one pass
// over a step's rows applies the gate nonlinearities and the state update
// (forward), or their derivatives (backward). Written once here and compiled
// for each CPU capability (rnn.cpp: baseline, rnn_avx2.cpp: AVX2+FMA; Note [CPU
// capabilities] in dispatch_stub.h); float32 uses the branch-free exp/tanh of
// loops.h so the loops vectorize. The GEMMs around them are rnn.cpp's.
//
// Layouts (row r of a step, H the hidden size): gates are G*H wide in
// PyTorch's order (LSTM i f g o, GRU r z n); states h, c are H wide.
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

template <class T>
struct RnnKernels {
  // LSTM: ig, hg gate pre-activations (4H, b = b_hh or zeros); h, c state rows
  // updated in place; out the step's output rows; ws rows (6H: i f g o c tanh(c)).
  void (*lstm_fwd)(int64_t r0, int64_t r1, int64_t H, const T* ig, const T* hg, const T* b, T* h, T* c,
                   T* out, T* ws);
  // GRU: ws rows (4H: r z n hg_n+b_n).
  void (*gru_fwd)(int64_t r0, int64_t r1, int64_t H, const T* ig, const T* hg, const T* b, T* h, T* out,
                  T* ws);
  // Elman RNN, tanh or relu.
  void (*rnn_fwd)(int64_t r0, int64_t r1, int64_t H, const T* ig, const T* hg, const T* b, T* h, T* out,
                  bool relu);
  // LSTM backward: dh (state) + go (grad of the step's output, may be null),
  // dc (state, replaced by the gradient of c_prev), cprev rows; writes dg (4H).
  void (*lstm_bwd)(int64_t r0, int64_t r1, int64_t H, const T* ws, const T* cprev, const T* go, const T* dh,
                   T* dc, T* dg);
  // GRU backward: dig, dhg (3H); dh replaced by its direct part dh_total * z.
  void (*gru_bwd)(int64_t r0, int64_t r1, int64_t H, const T* ws, const T* hprev, const T* go, T* dh, T* dig,
                  T* dhg);
  // RNN backward from the step's output y: dg (H).
  void (*rnn_bwd)(int64_t r0, int64_t r1, int64_t H, const T* y, const T* go, const T* dh, T* dg, bool relu);
};

struct RnnKernelTable {
  RnnKernels<float> f32;
  RnnKernels<double> f64;
};

void fill_rnn_kernels_base(RnnKernelTable& t);
void fill_rnn_kernels_avx2(RnnKernelTable& t);
void fill_rnn_kernels_avx512(RnnKernelTable& t);

FB_DECLARE_DISPATCH(const RnnKernelTable& (*)(), rnn_kernels_stub);

}  // namespace flambeau::cpu
