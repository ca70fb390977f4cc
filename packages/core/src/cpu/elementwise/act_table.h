#pragma once
// Note [Activation loops]
// The activations of nn (gelu, silu, mish, leaky_relu, elu, softplus,
// hardtanh, hardswish, hardsigmoid, log_sigmoid, softsign, threshold) and
// their fused backward loops, plus the row loops of the fused cross entropy,
// are compiled once per CPU capability like the vector table (Note [CPU
// capabilities] in dispatch_stub.h): vec_act_base.cpp, vec_act_avx2.cpp and
// vec_act_avx512.cpp include vec_act_kernels.inc and register their table
// with act_table_stub. The loops are those of loops.h
// (unary_loop for forward: data {out, x}; binary_loop for backward: data
// {grad_input, grad_output, x}); `p` holds the op's scalar parameters.
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

using ActLoop = void (*)(char** data, const int64_t* strides, int64_t n, const double* p);

enum ActOp : int {
  kActGelu,      // approximate='none'
  kActGeluTanh,  // approximate='tanh'
  kActSilu,
  kActMish,
  kActLeakyRelu,  // p: negative_slope
  kActElu,        // p: alpha, scale, input_scale
  kActSoftplus,   // p: beta, threshold
  kActHardtanh,   // p: min_val, max_val
  kActHardswish,
  kActHardsigmoid,
  kActLogSigmoid,
  kActSoftsign,
  kActThreshold,  // backward only (relu): p: threshold
  kActGlu,        // forward only, data {out, a, b}: a * sigmoid(b)
  kNumActOps
};

struct ActTable {
  ActLoop fwd_f32[kNumActOps];
  ActLoop fwd_f64[kNumActOps];
  ActLoop bwd_f32[kNumActOps];
  ActLoop bwd_f64[kNumActOps];
  // relu's backward on bfloat16 storage, data {grad_input, grad_output, x} (uint16_t bits):
  // grad_output where x > threshold (x widened to float32), else +0; exact, no float32 copies.
  ActLoop threshold_bwd_bf16;
  // Cross entropy rows: sum of exp(x[j] - shift) over n contiguous elements
  // (accumulated in double), and out[j] = scale * exp(x[j] - shift).
  double (*sum_exp_f32)(const float* x, int64_t n, float shift);
  double (*sum_exp_f64)(const double* x, int64_t n, double shift);
  void (*scaled_exp_f32)(float* out, const float* x, int64_t n, float shift, float scale);
  void (*scaled_exp_f64)(double* out, const double* x, int64_t n, double shift, double scale);
};

void fill_act_table_base(ActTable& t);
void fill_act_table_avx2(ActTable& t);
void fill_act_table_avx512(ActTable& t);

FB_DECLARE_DISPATCH(const ActTable& (*)(), act_table_stub);

/// The table of the active instruction set (Note [CPU capabilities] in dispatch_stub.h).
const ActTable& act_table();

}  // namespace flambeau::cpu
