// Note [AVX2 direct convolution]
// On AVX2 CPUs a float32 convolution otherwise runs as im2col + OpenBLAS's GEMM, and for ResNet's small
// 3x3 layers (16..64 channels, 32x32..8x8) the copies cost as much as the multiply-adds: im2col writes
// nine copies of each image (21% of a ResNet-8 eval call in perf) and the GEMM packs them once more (10%).
// This kernel reads each image once, as planes laid out so that every tap is one flat offset:
//   * the image is copied, per input channel, into its stride-by-stride phases (one phase at stride 1:
//     the zero-padded plane), each Hq x Wq with Hq = Hs + (kh-1)/s and Wq = Ws + (kw-1)/s, phase (a, b)
//     holding padded[y*s + a][x*s + b];
//   * output (oh, ow) computed on the "wide" grid p = oh*Wq + ow (Wq >= Ws columns, the last (kw-1)/s
//     of each row junk) reads tap (i, j) at phase (i%s, j%s), offset p + (i/s)*Wq + j/s: the taps are
//     unit-stride vectors over p, whatever the row width (8x8 planes fill vectors as 32x32 ones do);
//   * a tile of 4 output channels x 24 positions (12 accumulators) sums over input channels and taps,
//     one broadcast weight per channel and tap, started from the bias;
//   * the wide result is then stored without its junk columns, + residual and relu on each value.
// The sums run over input channels, then taps, in order: one rounding order for every tile (the same
// bits from a call with and without the residual epilogue, as conv_packed's fallback needs).
#include "conv_direct_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "flambeau/parallel.h"

namespace flambeau::cpu::conv_avx2 {
namespace {

constexpr int64_t kOc = 4;            // output channels per tile
constexpr int64_t kVecs = 3;          // vectors of 8 positions per full tile (tile() names them)
constexpr int64_t kTile = 8 * kVecs;  // positions per tile

struct Plan {
  int64_t s, Hq, Wq, phases_h, phases_w, plane, chan, P, Pr, kk;
  std::vector<int64_t> tap_offset;  // per tap (i, j): its phase's start + its offset within the phase
};

Plan make_plan(const ConvGeo& g) {
  Plan p;
  p.s = g.sh;
  p.Hq = g.Hs + (g.kh - 1) / p.s, p.Wq = g.Ws + (g.kw - 1) / p.s;
  p.phases_h = std::min(p.s, g.kh), p.phases_w = std::min(p.s, g.kw);
  p.plane = p.Hq * p.Wq;
  p.chan = p.phases_h * p.phases_w * p.plane;
  p.P = g.Hs * p.Wq;
  p.Pr = (p.P + 7) / 8 * 8;  // whole vectors: the last tile has 1 to kVecs of them
  p.kk = g.kk();
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j)
      p.tap_offset.push_back(((i % p.s) * p.phases_w + j % p.s) * p.plane + (i / p.s) * p.Wq + j / p.s);
  return p;
}

/// row[x] = src[2x] for x in [lo, hi): eight at a time from two vectors' even lanes (a scalar loop
/// here took half of a stride-2 layer's time), the last few one by one, never reading past src[2(hi-1)].
inline void gather_even(const float* src, float* row, int64_t lo, int64_t hi) {
  int64_t x = lo;
  for (; x + 8 < hi; x += 8) {  // reads src[2x .. 2x + 15] <= src[2(hi - 1)]
    const __m256 v0 = _mm256_loadu_ps(src + 2 * x), v1 = _mm256_loadu_ps(src + 2 * x + 8);
    const __m256 e = _mm256_shuffle_ps(v0, v1, _MM_SHUFFLE(2, 0, 2, 0));  // 0 2 8 10 | 4 6 12 14
    _mm256_storeu_ps(row + x, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
  }
  for (; x < hi; ++x) row[x] = src[2 * x];
}

/// The phases of every input channel of one image (Note [AVX2 direct convolution]).
void build_phases(const ConvGeo& g, const Plan& p, const float* img, float* buf) {
  const int64_t s = p.s;
  for (int64_t c = 0; c < g.Cb; ++c) {
    const float* plane = img + c * g.big_hw();
    for (int64_t a = 0; a < p.phases_h; ++a)
      for (int64_t b = 0; b < p.phases_w; ++b) {
        float* dst = buf + c * p.chan + (a * p.phases_w + b) * p.plane;
        // columns x whose input column x*s + b - pw lies in the image: [lo, hi)
        const int64_t off = b - g.pw;
        int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
        int64_t hi = off >= g.Wb ? 0 : (g.Wb - 1 - off) / s + 1;
        lo = std::min(lo, p.Wq), hi = std::min(hi, p.Wq);
        if (hi < lo) hi = lo;
        for (int64_t y = 0; y < p.Hq; ++y) {
          float* row = dst + y * p.Wq;
          const int64_t h = y * s + a - g.ph;
          if (h < 0 || h >= g.Hb) {
            std::fill(row, row + p.Wq, 0.f);
            continue;
          }
          const float* src = plane + h * g.Wb + off;
          std::fill(row, row + lo, 0.f);
          if (s == 1)
            std::memcpy(row + lo, src + lo, static_cast<size_t>(hi - lo) * sizeof(float));
          else
            gather_even(src, row, lo, hi);
          std::fill(row + hi, row + p.Wq, 0.f);
        }
      }
  }
}

/// The weight as tiles of kOc output channels, per input channel and tap (zeros past Cs).
void pack_weight(const ConvGeo& g, const float* w, float* packed) {
  const int64_t kk = g.kk(), K = g.Cb * kk, blocks = (g.Cs + kOc - 1) / kOc;
  for (int64_t ob = 0; ob < blocks; ++ob)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t o = 0; o < kOc; ++o) {
        const int64_t oc = ob * kOc + o;
        packed[(ob * K + k) * kOc + o] = oc < g.Cs ? w[oc * K + k] : 0.f;
      }
}

/// wide[o][q] for the kOc channels of one tile and positions [q0, q0 + 8 V). Named accumulators (V
/// of them per channel): an array of them was kept on the stack, a store per multiply-add.
template <int V>
inline void tile(const Plan& p, int64_t Cb, const float* planes, const float* wt, const float* bias4,
                 int64_t q0, float* wide) {
  static_assert(V >= 1 && V <= kVecs);
  __m256 a00 = _mm256_set1_ps(bias4[0]), a01 = a00, a02 = a00;
  __m256 a10 = _mm256_set1_ps(bias4[1]), a11 = a10, a12 = a10;
  __m256 a20 = _mm256_set1_ps(bias4[2]), a21 = a20, a22 = a20;
  __m256 a30 = _mm256_set1_ps(bias4[3]), a31 = a30, a32 = a30;
  const int64_t kk = p.kk;
  const int64_t* toff = p.tap_offset.data();
  for (int64_t c = 0; c < Cb; ++c) {
    const float* pc = planes + c * p.chan + q0;
    const float* wv = wt + c * kk * kOc;
    for (int64_t t = 0; t < kk; ++t, wv += kOc) {
      const float* src = pc + toff[t];
      const __m256 x0 = _mm256_loadu_ps(src);
      const __m256 x1 = V > 1 ? _mm256_loadu_ps(src + 8) : x0, x2 = V > 2 ? _mm256_loadu_ps(src + 16) : x0;
      __m256 w = _mm256_broadcast_ss(wv);
      a00 = _mm256_fmadd_ps(w, x0, a00);
      if constexpr (V > 1) a01 = _mm256_fmadd_ps(w, x1, a01);
      if constexpr (V > 2) a02 = _mm256_fmadd_ps(w, x2, a02);
      w = _mm256_broadcast_ss(wv + 1);
      a10 = _mm256_fmadd_ps(w, x0, a10);
      if constexpr (V > 1) a11 = _mm256_fmadd_ps(w, x1, a11);
      if constexpr (V > 2) a12 = _mm256_fmadd_ps(w, x2, a12);
      w = _mm256_broadcast_ss(wv + 2);
      a20 = _mm256_fmadd_ps(w, x0, a20);
      if constexpr (V > 1) a21 = _mm256_fmadd_ps(w, x1, a21);
      if constexpr (V > 2) a22 = _mm256_fmadd_ps(w, x2, a22);
      w = _mm256_broadcast_ss(wv + 3);
      a30 = _mm256_fmadd_ps(w, x0, a30);
      if constexpr (V > 1) a31 = _mm256_fmadd_ps(w, x1, a31);
      if constexpr (V > 2) a32 = _mm256_fmadd_ps(w, x2, a32);
    }
  }
  const auto store = [&](float* dst, __m256 v0, __m256 v1, __m256 v2) {
    _mm256_storeu_ps(dst, v0);
    if constexpr (V > 1) _mm256_storeu_ps(dst + 8, v1);
    if constexpr (V > 2) _mm256_storeu_ps(dst + 16, v2);
  };
  float* w0 = wide + q0;
  store(w0, a00, a01, a02);
  store(w0 + p.Pr, a10, a11, a12);
  store(w0 + 2 * p.Pr, a20, a21, a22);
  store(w0 + 3 * p.Pr, a30, a31, a32);
}

}  // namespace

/// Floats of either per-thread buffer (an image's phases, its wide result) at most: 16 MiB. Larger
/// images go to im2col + GEMM, whose buffers hold a block of columns, not the whole image's result.
constexpr int64_t kMaxBufferFloats = int64_t{1} << 22;

bool direct_conv_suits(const ConvGeo& g) {
  if (!(g.groups == 1 && !g.pointwise() && g.dh == 1 && g.dw == 1 && g.sh == g.sw && g.sh >= 1 && g.sh <= 2 &&
        g.kh <= 7 && g.kw <= 7 && g.ph < g.kh && g.pw < g.kw && g.Hs > 0 && g.Ws > 0 && g.Cs <= 256 &&
        g.Cb * g.kk() <= 1152))
    return false;
  // Cb <= 1152 and Hq * Wq below a tensor's element count: no overflow.
  const int64_t s = g.sh, Hq = g.Hs + (g.kh - 1) / s, Wq = g.Ws + (g.kw - 1) / s;
  const int64_t phases = std::min(s, g.kh) * std::min(s, g.kw);
  return g.Cb * phases * Hq * Wq <= kMaxBufferFloats && (g.Cs + kOc) * (g.Hs * Wq + 8) <= kMaxBufferFloats;
}

void direct_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small,
                 const float* residual, bool relu) {
  const Plan p = make_plan(g);
  const int64_t blocks = (g.Cs + kOc - 1) / kOc, K = g.Cb * p.kk;
  std::vector<float> packed(static_cast<size_t>(blocks * K * kOc));
  pack_weight(g, w, packed.data());
  std::vector<float> bias_pad(static_cast<size_t>(blocks * kOc), 0.f);
  if (bias) std::copy(bias, bias + g.Cs, bias_pad.begin());
  const int64_t L = g.small_hw();
  parallel_for(0, g.N, 1, [&](int64_t begin, int64_t end) {
    // The last tile reads up to kTile + kw positions past the last channel's phases.
    thread_local std::vector<float> planes_buf, wide_buf;
    const size_t planes_n = static_cast<size_t>(g.Cb * p.chan + kTile + g.kw + 8);
    if (planes_buf.size() < planes_n) planes_buf.assign(planes_n, 0.f);
    const size_t wide_n = static_cast<size_t>(blocks * kOc * p.Pr);
    if (wide_buf.size() < wide_n) wide_buf.resize(wide_n);
    float* planes = planes_buf.data();
    std::fill(planes + g.Cb * p.chan, planes + planes_n, 0.f);
    float* wide = wide_buf.data();
    for (int64_t n = begin; n < end; ++n) {
      build_phases(g, p, big + n * g.Cb * g.big_hw(), planes);
      // Every block of output channels for one run of positions, then the next run: the run's input
      // stays in L1 while the weights (16 bytes per 12 multiply-adds) stream from L2.
      for (int64_t q0 = 0; q0 < p.Pr; q0 += kTile) {
        const int64_t vecs = std::min(kVecs, (p.Pr - q0) / 8);
        for (int64_t ob = 0; ob < blocks; ++ob) {
          const float* wt = packed.data() + ob * K * kOc;
          const float* b4 = bias_pad.data() + ob * kOc;
          float* wd = wide + ob * kOc * p.Pr;
          if (vecs == 3)
            tile<3>(p, g.Cb, planes, wt, b4, q0, wd);
          else if (vecs == 2)
            tile<2>(p, g.Cb, planes, wt, b4, q0, wd);
          else
            tile<1>(p, g.Cb, planes, wt, b4, q0, wd);
        }
      }
      // Stored without the junk columns, with the epilogue.
      for (int64_t c = 0; c < g.Cs; ++c) {
        float* out = small + (n * g.Cs + c) * L;
        const float* res = residual ? residual + (n * g.Cs + c) * L : nullptr;
        for (int64_t oh = 0; oh < g.Hs; ++oh) {
          const float* src = wide + c * p.Pr + oh * p.Wq;
          float* dst = out + oh * g.Ws;
          const float* r = res ? res + oh * g.Ws : nullptr;
          if (!r && !relu) {
            std::memcpy(dst, src, static_cast<size_t>(g.Ws) * sizeof(float));
            continue;
          }
          for (int64_t x = 0; x < g.Ws; ++x) {
            float v = src[x];
            if (r) v += r[x];
            dst[x] = relu ? std::max(v, 0.f) : v;
          }
        }
      }
    }
  });
}

}  // namespace flambeau::cpu::conv_avx2

namespace flambeau::cpu {
namespace {
void fill_direct_avx2(ConvDirectAvx2Kernels& t) {
  t = {conv_avx2::direct_conv_suits, conv_avx2::direct_conv};
}
}  // namespace
FB_REGISTER_DISPATCH(conv_direct_avx2_stub, avx2, (&table_of<ConvDirectAvx2Kernels, fill_direct_avx2>));
}  // namespace flambeau::cpu
