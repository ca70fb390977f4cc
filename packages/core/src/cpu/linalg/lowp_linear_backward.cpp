// _linear_backward on bfloat16 (Note [bfloat16 linear backward] in lowp_gemm.h).
#include <algorithm>

#include "cpu/elementwise/half_convert.h"
#include "cpu/elementwise/vec_table.h"
#include "cpu/linalg/gemm.h"
#include "cpu/linalg/lowp_gemm.h"
#include "flambeau/half.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"

namespace flambeau::cpu {
namespace {

// gb[c] = sum over the rows of g (n x out_f, bfloat16, row stride ldg) of column c, in double, rounded once:
// each row's run widened to float32 (exact) and added by the vector row accumulation sum(0) uses.
void bf16_column_sums(const uint16_t* g, int64_t ldg, int64_t n, int64_t out_f, uint16_t* gb) {
  const HalfConvert& hc = half_convert();
  const auto acc_row = vec_table().accumulate_row_f32;
  constexpr int64_t kCols = 2048;
  double acc[kCols];
  float row[kCols];
  for (int64_t c0 = 0; c0 < out_f; c0 += kCols) {
    const int64_t len = std::min(kCols, out_f - c0);
    std::fill(acc, acc + len, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      hc.bf16_to_f32(g + r * ldg + c0, row, len);
      acc_row(acc, reinterpret_cast<const char*>(row), len, sizeof(float));
    }
    for (int64_t c = 0; c < len; ++c) gb[c0 + c] = detail::fp32_to_bf16_bits(static_cast<float>(acc[c]));
  }
}

}  // namespace

void lowp_linear_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, Tensor* gi,
                          Tensor* gw, Tensor* gb) {
  const int64_t n = grad.sizes()[0], out_f = weight.sizes()[0];
  // grad_bias reads g's rows: a g with strided rows is copied once.
  const Tensor g_rows = gb && grad.strides()[1] != 1 ? op::contiguous(grad, MemoryFormat::Contiguous) : grad;
  auto input_part = [&] { lowp_matmul_into(grad, weight, *gi); };
  auto weight_part = [&] {
    if (gw) lowp_matmul_into(op::transpose(grad, 0, 1), input, *gw);
    if (gb)
      bf16_column_sums(static_cast<const uint16_t*>(g_rows.data_ptr()), g_rows.strides()[0], n, out_f,
                       static_cast<uint16_t*>(gb->data_ptr()));
  };
  // Both products: one task each (the other threads' share of each product would cost a fork and a join per
  // packing and per product); the weight's task also sums grad_bias. One product: split as the GEMM splits
  // it. OpenBLAS is held to one thread around the fork: without the bfloat16 kernel each product is the
  // float32 GEMM, which inside a parallel region calls OpenBLAS as is (Note [GEMM threads]), and two
  // threaded OpenBLAS calls at once on two cores spin against each other (measured on an AVX2 host: the
  // MLP's autocast step 7x its float32 one, half of it in OpenBLAS's thread server).
  if (gi && (gw || gb) && get_num_threads() > 1 && !in_parallel_region()) {
    const SerialBlasScope serial;
    parallel_for(0, 2, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) i == 0 ? input_part() : weight_part();
    });
    return;
  }
  if (gi) input_part();
  weight_part();
}

}  // namespace flambeau::cpu
