// float16/bfloat16 loops of the vectorized elementwise ops: each 1-D loop of
// the iterator is cut into blocks of kBlock elements that are converted to
// float32 (half_convert.h), run through the float32 loop of the vector table
// (Note [CPU capabilities]) and converted back, all in L1-resident buffers:
// load-convert-compute-convert-store, with the CPU's conversion instructions.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "elementwise.h"
#include "half_convert.h"

namespace flambeau::cpu {
namespace {

constexpr int64_t kBlock = 512;

template <bool BF>
inline void to_f32(const char* src, int64_t stride, float* dst, int64_t n, const HalfConvert& c) {
  if (stride == 2) {
    (BF ? c.bf16_to_f32 : c.f16_to_f32)(reinterpret_cast<const uint16_t*>(src), dst, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, src + i * stride, 2);
    dst[i] = BF ? detail::bf16_bits_to_fp32(b) : detail::fp16_bits_to_fp32(b);
  }
}

template <bool BF>
inline void from_f32(const float* src, char* dst, int64_t stride, int64_t n, const HalfConvert& c) {
  if (stride == 2) {
    (BF ? c.f32_to_bf16 : c.f32_to_f16)(src, reinterpret_cast<uint16_t*>(dst), n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = BF ? detail::fp32_to_bf16_bits(src[i]) : detail::fp32_to_fp16_bits(src[i]);
    std::memcpy(dst + i * stride, &b, 2);
  }
}

// ScalarB: operand 2 is not the iterator's but the float32 number `param` (half_scalar_loop); the
// vector-table loop then gets it as a broadcast float32 operand (mul and div ignore their param).
template <bool BF, int Op, bool ScalarB = false>
void half_vec_loop(char** d, const int64_t* s, int64_t n, double param) {
  constexpr int nin = Op < kVecNeg ? 2 : 1;  // add .. minimum are binary
  const HalfConvert& c = half_convert();
  if constexpr (Op <= kVecDiv) {
    const HalfConvert::FusedBinary fused = (BF ? c.bf16_binary : c.f16_binary)[Op];
    if (fused && s[0] == 2 && s[1] == 2 && (ScalarB || s[2] == 2 || s[2] == 0)) {
      const auto* a = reinterpret_cast<const uint16_t*>(d[1]);
      auto* out = reinterpret_cast<uint16_t*>(d[0]);
      if constexpr (ScalarB) {
        fused(a, nullptr, static_cast<float>(param), out, n, 1.0f);
      } else {
        const auto* b = reinterpret_cast<const uint16_t*>(d[2]);
        const float b0 = BF ? detail::bf16_bits_to_fp32(b[0]) : detail::fp16_bits_to_fp32(b[0]);
        fused(a, s[2] == 0 ? nullptr : b, b0, out, n, static_cast<float>(param));
      }
      return;
    }
  }
  if constexpr (Op == kVecExp || Op == kVec_sin || Op == kVec_cos) {
    constexpr int k = Op == kVecExp ? kUnaryExp : Op == kVec_sin ? kUnarySin : kUnaryCos;
    const HalfConvert::FusedUnary fused = (BF ? c.bf16_unary : c.f16_unary)[k];
    if (fused && s[0] == 2 && s[1] == 2) {
      fused(reinterpret_cast<const uint16_t*>(d[1]), reinterpret_cast<uint16_t*>(d[0]), n);
      return;
    }
    if (fused) {
      // Strided operands: the same fused loop on blocks gathered into L1 (one result per input
      // value whatever the layout; exp_ on a view equals exp of its copy, bit for bit).
      alignas(64) uint16_t in[kBlock], out[kBlock];
      for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
        const int64_t m = std::min(kBlock, n - i0);
        for (int64_t i = 0; i < m; ++i) std::memcpy(in + i, d[1] + (i0 + i) * s[1], 2);
        fused(in, out, m);
        for (int64_t i = 0; i < m; ++i) std::memcpy(d[0] + (i0 + i) * s[0], out + i, 2);
      }
      return;
    }
  }
  const Loop1D f = vec_table().f32[Op];
  alignas(64) float buf[1 + nin][kBlock];
  int64_t st[3] = {4, 4, 4};
  char* ptrs[3] = {reinterpret_cast<char*>(buf[0]), nullptr, nullptr};
  // Broadcast (stride 0) inputs are converted once.
  for (int k = 1; k <= nin; ++k) {
    ptrs[k] = reinterpret_cast<char*>(buf[k]);
    if (ScalarB && k == 2) {
      buf[2][0] = static_cast<float>(param);
      st[2] = 0;
    } else if (s[k] == 0) {
      to_f32<BF>(d[k], 2, buf[k], 1, c);
      st[k] = 0;
    }
  }
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    for (int k = 1; k <= nin; ++k)
      if (st[k] != 0) to_f32<BF>(d[k] + i0 * s[k], s[k], buf[k], m, c);
    f(ptrs, st, m, param);
    from_f32<BF>(buf[0], d[0] + i0 * s[0], s[0], m, c);
  }
}

template <bool BF, int... Ops>
constexpr std::array<Loop1D, kNumVecOps> make_table(std::integer_sequence<int, Ops...>) {
  return {&half_vec_loop<BF, Ops>...};
}

constexpr auto kF16Loops = make_table<false>(std::make_integer_sequence<int, kNumVecOps>{});
constexpr auto kBF16Loops = make_table<true>(std::make_integer_sequence<int, kNumVecOps>{});

}  // namespace

Loop1D half_scalar_loop(ScalarType t, VecOp op) {
  const bool bf = t == ScalarType::BFloat16;
  if (t != ScalarType::Float16 && !bf) return nullptr;
  if (op == kVecMul) return bf ? &half_vec_loop<true, kVecMul, true> : &half_vec_loop<false, kVecMul, true>;
  if (op == kVecDiv) return bf ? &half_vec_loop<true, kVecDiv, true> : &half_vec_loop<false, kVecDiv, true>;
  return nullptr;
}

Loop1D half_loop(ScalarType t, VecOp op) {
  if (!vec_table().f32[op]) return nullptr;
  if (t == ScalarType::Float16) return kF16Loops[op];
  if (t == ScalarType::BFloat16) return kBF16Loops[op];
  return nullptr;
}

}  // namespace flambeau::cpu
