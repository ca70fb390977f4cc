// CPU kernels of _pack_linear_weight and _linear_packed: linear on a weight whose W^T was packed beforehand.
//
// Note [Packed linear weight]
// linear (linear.cpp) on the own float32 GEMM (Note [Own sgemm] in sgemm.h) packs W^T, 64 columns at a
// time, on every call: W is (out, in) row-major, so op(B) = W^T has strided columns, and each panel is
// transposed (16 x 16 in-register transposes) before the kernel reads it. At the benchmark MLP's shapes that
// is about 4% of the call (128 x 784 @ W^T 784 x 512: 920 against 883 us on one thread). A caller that runs
// many calls on the same weight, as fb.compile's eval graphs do (Note [Epilogue pass] in
// flambeau/compiler/_epilogue.py, which refreshes the copy when the weight's version or memory changes),
// packs it once with _pack_linear_weight (own_sgemm_pack: panels of 64 columns, each `in` rows of 64
// floats) and calls _linear_packed, which runs own_sgemm_packed on it.
// - The result is the bits linear gives on the own GEMM: each element's sum starts from the bias and runs
//   over k in order (own_sgemm's depth chunks store and reload float32 accumulators, which changes nothing).
// - The work is split as gemm() splits linear's (gemm_cut, Note [GEMM threads]): along the larger of the
//   output's dims, one block per thread on the GEMM pool; a column block is a run of whole panels, which is
//   itself a packed matrix (panel p starts at p * 64 * in floats).
// - _pack_linear_weight returns an empty tensor where the own GEMM cannot take the weight (no AVX-512, the
//   setting backends.cpu.sgemm = 'openblas', another dtype, fewer than 16 rows or columns), and
//   _linear_packed runs linear itself whenever the packed copy does not fit (another size) or the own GEMM
//   would not run this call (gemm_runs_own in gemm.h, which cuts the call as gemm() does): the packed path
//   is only ever a faster form of linear.
#include <algorithm>
#include <array>
#include <climits>
#include <optional>

#include "cpu/linalg/gemm.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "settings.h"

namespace flambeau {
namespace {

constexpr int kMinPackDim = 16;

bool packable(const Tensor& weight) {
  return weight.dtype() == ScalarType::Float32 && weight.dim() == 2 && weight.sizes()[0] >= kMinPackDim &&
         weight.sizes()[1] >= kMinPackDim && weight.sizes()[0] <= INT_MAX && weight.sizes()[1] <= INT_MAX &&
         cpu::own_sgemm_available() && settings::sgemm() == settings::SgemmBackend::Own;
}

Tensor pack_linear_weight_cpu(const Tensor& weight) {
  if (!packable(weight)) return op::empty(IntArrayRef(std::array<int64_t, 1>{0}), ScalarType::Float32, weight.device());
  const int64_t out_f = weight.sizes()[0], in_f = weight.sizes()[1];
  const Tensor w = weight.is_contiguous() ? weight : op::contiguous(weight, MemoryFormat::Contiguous);
  Tensor packed = op::empty(IntArrayRef(std::array<int64_t, 1>{cpu::own_sgemm_packed_size(in_f, out_f)}),
                            ScalarType::Float32, weight.device());
  // op(B) = W^T: B stored transposed (tb), row stride in_f.
  cpu::own_sgemm_pack(true, w.data<float>(), in_f, static_cast<int>(in_f), static_cast<int>(out_f),
                      packed.data<float>());
  return packed;
}

void linear_packed_out_cpu(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& packed,
                           const std::optional<Tensor>& bias) {
  const int64_t out_f = weight.sizes()[0], in_f = weight.sizes()[1];
  const int64_t n = input.dim() == 1 ? 1 : input.numel() / std::max<int64_t>(in_f, 1);
  const bool row_bias = !bias || (bias->dim() == 1 && bias->sizes()[0] == out_f);
  const bool fits = input.dtype() == ScalarType::Float32 && packed.dtype() == ScalarType::Float32 &&
                    packed.is_contiguous() && packed.numel() == cpu::own_sgemm_packed_size(in_f, out_f) &&
                    row_bias && n <= INT_MAX && out_f <= INT_MAX && in_f <= INT_MAX &&
                    cpu::gemm_runs_own(static_cast<int>(n), static_cast<int>(out_f), static_cast<int>(in_f),
                                       1.0f, bias ? 1.0f : 0.0f);
  if (!fits) {
    cpu::copy_out(out, op::linear(input, weight, bias));
    return;
  }
  if (out.numel() == 0) return;
  const int64_t shape[2] = {n, in_f};
  const Tensor x = op::contiguous(op::reshape(input, IntArrayRef(shape)), MemoryFormat::Contiguous);
  Tensor b;
  if (bias) b = bias->is_contiguous() ? *bias : op::contiguous(*bias, MemoryFormat::Contiguous);
  const std::initializer_list<const Tensor*> args = {&input, &weight, &packed, bias ? &*bias : nullptr};
  cpu::write_contiguous(out, args, [&](const Tensor& dst) {
    const int m = static_cast<int>(n), cols = static_cast<int>(out_f), k = static_cast<int>(in_f);
    const float* a = x.data<float>();
    const float* pk = packed.data<float>();
    const float* pb = bias ? b.data<float>() : nullptr;
    float* c = dst.data<float>();
    // gemm()'s cut of linear's call (Note [GEMM threads]), but columns in whole 64-column panels (a run of
    // panels is itself a packed matrix).
    const cpu::GemmCut cut = cpu::gemm_cut(m, cols, k, cpu::kOwnSgemmPanel, cpu::kGemmAlign<float>);
    auto block = [&](int64_t blk) {
      const int lo = cut.lo(blk), hi = cut.hi(blk);
      if (lo >= hi) return;
      if (cut.split_n)
        cpu::own_sgemm_packed(m, hi - lo, k, a, k, pk + int64_t{lo} * k, c + lo, cols, false, pb ? pb + lo : nullptr);
      else
        cpu::own_sgemm_packed(hi - lo, cols, k, a + int64_t{lo} * k, k, pk, c + int64_t{lo} * cols, cols, false, pb);
    };
    if (cut.blocks <= 1) {
      block(0);
      return;
    }
    const int blocks = cut.blocks, nt = cut.threads;
    if (cpu::gemm_pool_for(blocks, nt, block)) return;  // Note [GEMM pool]
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) block(blk);
    });
  });
}

FB_REGISTER_KERNEL(op::_pack_linear_weight, CPU, pack_linear_weight_cpu);
FB_REGISTER_OUT_KERNEL(op::_linear_packed, CPU, linear_packed_out_cpu);

}  // namespace
}  // namespace flambeau
