// The bfloat16 convolution kernels for AVX512-BF16 CPUs (conv_bf16.h). The file is compiled for
// AVX-512; the bf16 instructions are enabled per function, and conv.cpp runs them only on a CPU that
// has them (bf16_gemm_kernel_available).
//
// Note [bfloat16 convolution]
// vdpbf16ps adds, into each float32 lane, the products of the lane's two bfloat16 values of each
// operand: the reduced dimension must come in pairs. As Note [Direct convolution] does for float32,
// the zero-padded input of an image is split into stride phases (phase (a, b): padded pixels (r, c)
// with r % sh == a, c % sw == b, planes of Hq x Wq, Hq = ceil(Hp / sh), Wq = ceil(Wp / sw)) and the
// output is computed over the flat domain q = y * Wq + x (Hs rows of Wq; the Wq - Ws extra columns
// of a row are computed and thrown away): tap (i, j) of every output q reads the flat position
// q + off(i, j) of phase (i*dh % sh, j*dw % sw), off = (i*dh / sh) * Wq + j*dw / sw. No im2col.
//
// Forward: the phase planes hold channel pairs, interleaved, [phase][channel pair][flat q][2]
// (an odd channel count gets a zero channel), so 32 consecutive outputs of one (tap, channel pair)
// are one 64-byte load: the pair layout vdpbf16ps reads (Note [Low-precision GEMM]). The weights
// are packed [output channel][tap][channel pair][2]; a tile holds 8 output channels x 32 flat
// outputs in 16 zmm accumulators, the weight pair of each channel broadcast, summed over taps and
// channel pairs in float32, the bias added, rounded to bfloat16 once; the extra columns are
// squeezed out when the tile's rows are copied out. A stride-1 transposed convolution (the input
// gradient of a stride-1 convolution) is the plain convolution of the flipped kernel with its
// channel dims swapped, padded by dilation * (k - 1) - padding (Note [Stride-1 transposed
// convolution] in conv.cpp): the same kernel, the weights packed flipped.
//
// Weight gradient: dw^T (tap, input channel; output channel) = sum over q of the input window
// (phase planes per channel, not interleaved: [phase][channel][flat q], so a row of the tile is a
// channel read from flat position off(tap), and two consecutive q are one 32-bit broadcast) times
// the output gradient, stored [q pair][output channel][2] with zeros on the extra columns (which
// is what keeps them out of the sum). Tiles of 8 rows x 16 or 32 output channels accumulate in
// float32 over the q pairs of an image and into float32 partial sums over images (Note [Partial
// sums in slice order]); the sum is transposed and rounded to bfloat16 once.
//
// Threads: the forward splits images over threads (each building its image's planes in its own
// scratch), the weight gradient slices of images.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "conv_bf16.h"
#include "cpu/ordered_partials.h"
#include "flambeau/error.h"
#include "flambeau/half.h"
#include "flambeau/parallel.h"

namespace flambeau::cpu::conv_bf16 {
namespace {

#define FB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

constexpr int64_t kRows = 8;  // accumulator rows of a tile
constexpr int64_t kCols = 32;  // outputs per tile (2 zmm of 16 float32 lanes)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// a * b (+ c), raising on int64 overflow (the scratch sizes).
int64_t mul_checked(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(a, b, &r), "[", op, "] the scratch size overflows");
  return r;
}

__mmask16 lanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(count, 0)) - 1u);
}

/// Accumulates R rows x NV vectors over `taps` taps of kp pairs each: row r's pair p of tap t is the
/// 32-bit word at a + arow[r] + t * a_tap + 2p; the NV vectors of pair p of tap t are at
/// b + boff[t] + p * ldb (+ 32 per vector), all in uint16 units. ACC: c is float32 (row stride ldc),
/// the sums added to it under the masks; else c is bfloat16, the bias (per row, may be null) added
/// and the sums rounded once.
template <int R, int NV, bool ACC>
FB_BF16_TARGET void tile(int64_t taps, int64_t kp, const uint16_t* a, const int64_t* arow, int64_t a_tap,
                         const uint16_t* b, const int64_t* boff, int64_t ldb, void* c, int64_t ldc,
                         const float* bias, const __mmask16* m) {
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = bias ? _mm512_set1_ps(bias[r]) : _mm512_setzero_ps();
  const uint16_t* ar[R];
  for (int r = 0; r < R; ++r) ar[r] = a + arow[r];
  for (int64_t t = 0; t < taps; ++t) {
    const uint16_t* bt = b + boff[t];
    for (int64_t p = 0; p < kp; ++p) {
      __m512bh bv[NV];
      for (int v = 0; v < NV; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(bt + p * ldb + 32 * v);
      for (int r = 0; r < R; ++r) {
        int32_t pair;
        __builtin_memcpy(&pair, ar[r] + t * a_tap + 2 * p, sizeof(pair));
        const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) {
      if constexpr (ACC) {
        float* dst = static_cast<float*>(c) + r * ldc + 16 * v;
        _mm512_mask_storeu_ps(dst, m[v], _mm512_add_ps(_mm512_maskz_loadu_ps(m[v], dst), acc[r][v]));
      } else {
        uint16_t* dst = static_cast<uint16_t*>(c) + r * ldc + 16 * v;
        _mm256_mask_storeu_epi16(dst, m[v], (__m256i)_mm512_cvtneps_pbh(acc[r][v]));
      }
    }
}

/// tile<R, NV, ACC> for rows = 1..kRows (a tail of fewer rows than kRows).
template <int NV, bool ACC>
FB_BF16_TARGET void tile_rows(int64_t rows, int64_t taps, int64_t kp, const uint16_t* a, const int64_t* arow,
                              int64_t a_tap, const uint16_t* b, const int64_t* boff, int64_t ldb, void* c,
                              int64_t ldc, const float* bias, const __mmask16* m) {
  switch (rows) {
#define FB_ROWS(R)                                                                \
  case R:                                                                         \
    tile<R, NV, ACC>(taps, kp, a, arow, a_tap, b, boff, ldb, c, ldc, bias, m); \
    break;
    FB_ROWS(1) FB_ROWS(2) FB_ROWS(3) FB_ROWS(4) FB_ROWS(5) FB_ROWS(6) FB_ROWS(7) FB_ROWS(8)
#undef FB_ROWS
    default:
      break;
  }
}

/// The phase geometry of Note [bfloat16 convolution] for a forward geometry g.
struct Phases {
  int64_t Hq, Wq, P;  // phase plane height and width, number of phases (sh * sw)
  int64_t Q;          // flat outputs: Hs * Wq
  int64_t taps;
  std::vector<int64_t> phase, off;  // per tap (i, j): its phase and flat offset
  int64_t max_off = 0;
  Phases(const ConvGeo& g) {
    const int64_t Hp = g.Hb + 2 * g.ph, Wp = g.Wb + 2 * g.pw;
    Hq = ceil_div(Hp, g.sh), Wq = ceil_div(Wp, g.sw), P = g.sh * g.sw;
    Q = g.Hs * Wq;
    taps = g.kk();
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t di = i * g.dh, dj = j * g.dw;
        phase.push_back((di % g.sh) * g.sw + dj % g.sw);
        off.push_back((di / g.sh) * Wq + dj / g.sw);
        max_off = std::max(max_off, off.back());
      }
  }
  /// Flat positions per (phase, channel) plane: the plane's pixels and every read past them.
  int64_t plane_size(int64_t reach) const { return std::max(Hq * Wq, max_off + reach) + 32; }
};

/// For each phase, channel (pair) and pixel of the phase plane: the padded input pixel it holds, or
/// nothing (zero). f(plane_pixel_row_ptr_index...) calls put(dst_index, src_row, src_col) for the
/// pixels inside the input; the rest of the buffer is zeroed by the caller.
template <class Put>
void for_phase_pixels(const ConvGeo& g, const Phases& ph, const Put& put) {
  for (int64_t a = 0; a < g.sh; ++a)
    for (int64_t b = 0; b < g.sw; ++b) {
      const int64_t phase = a * g.sw + b;
      // Columns c of the plane with an input column: 0 <= c * sw + b - pw < Wb.
      int64_t c0 = 0;
      while (c0 < ph.Wq && c0 * g.sw + b - g.pw < 0) ++c0;
      int64_t c1 = c0;
      while (c1 < ph.Wq && c1 * g.sw + b - g.pw < g.Wb) ++c1;
      for (int64_t r = 0; r < ph.Hq; ++r) {
        const int64_t y = r * g.sh + a - g.ph;
        if (y < 0 || y >= g.Hb || c0 >= c1) continue;
        put(phase, r * ph.Wq + c0, y, c0 * g.sw + b - g.pw, c1 - c0);
      }
    }
}

template <class T>
T* scratch(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

/// The forward of a geometry g on packed weights wp ([group][out channel][tap][pair][2]).
FB_BF16_TARGET void forward_packed(const ConvGeo& g, const uint16_t* big, const uint16_t* wp,
                                   const float* bias, uint16_t* small) {
  const char* op = "convolution";
  const int64_t G = g.groups, Cb_g = g.Cb / G, Cs_g = g.Cs / G, CP = ceil_div(Cb_g, 2);
  const Phases ph(g);
  const int64_t panels = ceil_div(ph.Q, kCols), Qpan = panels * kCols;
  const int64_t PS = ph.plane_size(Qpan);  // words (pairs) per (phase, channel pair)
  const int64_t words = mul_checked(mul_checked(ph.P, CP, op), PS, op);
  mul_checked(Cs_g, Qpan, op);
  const int64_t a_tap = 2 * CP, lda = ph.taps * a_tap;
  const int64_t HWb = g.big_hw(), HWs = g.small_hw();
  // boff per tap in uint16 units: phase plane base + flat offset, pairs interleaved.
  std::vector<int64_t> boff(static_cast<size_t>(ph.taps));
  for (int64_t t = 0; t < ph.taps; ++t) boff[static_cast<size_t>(t)] = 2 * (ph.phase[t] * CP * PS + ph.off[t]);
  const __mmask16 full[2] = {0xFFFF, 0xFFFF};
  int64_t arow[kRows];
  for (int64_t r = 0; r < kRows; ++r) arow[r] = r * lda;
  parallel_for(0, g.N * G, 1, [&](int64_t i0, int64_t i1) {
    thread_local std::vector<uint32_t> planes_buf;
    thread_local std::vector<uint16_t> out_buf;
    uint32_t* planes = scratch(planes_buf, words);
    uint16_t* out = scratch(out_buf, Cs_g * Qpan);
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t n = item / G, gi = item % G;
      const uint16_t* x = big + (n * g.Cb + gi * Cb_g) * HWb;
      std::memset(planes, 0, static_cast<size_t>(words) * sizeof(uint32_t));
      for_phase_pixels(g, ph, [&](int64_t phase, int64_t dst, int64_t y, int64_t x0, int64_t len) {
        for (int64_t cp = 0; cp < CP; ++cp) {
          uint32_t* d = planes + (phase * CP + cp) * PS + dst;
          const uint16_t* s0 = x + (2 * cp) * HWb + y * g.Wb + x0;
          if (2 * cp + 1 < Cb_g) {
            const uint16_t* s1 = s0 + HWb;
            if (g.sw == 1) {
              for (int64_t k = 0; k < len; ++k) d[k] = uint32_t(s0[k]) | (uint32_t(s1[k]) << 16);
            } else {
              for (int64_t k = 0; k < len; ++k)
                d[k] = uint32_t(s0[k * g.sw]) | (uint32_t(s1[k * g.sw]) << 16);
            }
          } else {
            for (int64_t k = 0; k < len; ++k) d[k] = uint32_t(s0[k * g.sw]);
          }
        }
      });
      const auto* b = reinterpret_cast<const uint16_t*>(planes);
      const uint16_t* w = wp + gi * Cs_g * lda;
      const float* bg = bias ? bias + gi * Cs_g : nullptr;
      for (int64_t pn = 0; pn < panels; ++pn) {
        const uint16_t* bp = b + 2 * pn * kCols;
        for (int64_t r = 0; r < Cs_g; r += kRows) {
          const int64_t rows = std::min(kRows, Cs_g - r);
          tile_rows<2, false>(rows, ph.taps, CP, w + r * lda, arow, a_tap, bp, boff.data(), 2 * PS,
                              out + r * Qpan + pn * kCols, Qpan, bg ? bg + r : nullptr, full);
        }
      }
      // The valid columns of each flat row.
      uint16_t* y = small + (n * g.Cs + gi * Cs_g) * HWs;
      for (int64_t o = 0; o < Cs_g; ++o)
        for (int64_t r = 0; r < g.Hs; ++r)
          std::memcpy(y + o * HWs + r * g.Ws, out + o * Qpan + r * ph.Wq, static_cast<size_t>(g.Ws) * 2);
    }
  });
}

/// Packs weights for forward_packed: wp[gi][o][t][cp][2] = w(gi, o, c = 2cp (+1), t), zero past Cb_g.
/// `at(gi, o, c, t)` reads one weight.
template <class At>
std::vector<uint16_t> pack_weights(const ConvGeo& g, const At& at) {
  const int64_t G = g.groups, Cb_g = g.Cb / G, Cs_g = g.Cs / G, CP = ceil_div(Cb_g, 2), T = g.kk();
  std::vector<uint16_t> wp(static_cast<size_t>(G * Cs_g * T * CP * 2), 0);
  for (int64_t gi = 0; gi < G; ++gi)
    for (int64_t o = 0; o < Cs_g; ++o)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < Cb_g; ++c)
          wp[static_cast<size_t>((((gi * Cs_g + o) * T + t) * CP) * 2 + c)] = at(gi, o, c, t);
  return wp;
}

std::vector<float> bias_f32(const uint16_t* bias, int64_t n) {
  std::vector<float> b;
  if (bias)
    for (int64_t i = 0; i < n; ++i) b.push_back(detail::bf16_bits_to_fp32(bias[i]));
  return b;
}

void forward(const ConvGeo& g, const uint16_t* big, const uint16_t* w, const uint16_t* bias, uint16_t* small) {
  const int64_t G = g.groups, Cb_g = g.Cb / G, Cs_g = g.Cs / G, T = g.kk();
  const std::vector<uint16_t> wp = pack_weights(g, [&](int64_t gi, int64_t o, int64_t c, int64_t t) {
    return w[((gi * Cs_g + o) * Cb_g + c) * T + t];
  });
  const std::vector<float> bf = bias_f32(bias, g.Cs);
  forward_packed(g, big, wp.data(), bias ? bf.data() : nullptr, small);
}

bool transposed(const ConvGeo& g, const uint16_t* small, const uint16_t* w, const uint16_t* bias, uint16_t* big) {
  if (g.sh != 1 || g.sw != 1) return false;
  ConvGeo f;
  f.N = g.N, f.Cb = g.Cs, f.Hb = g.Hs, f.Wb = g.Ws, f.Cs = g.Cb, f.Hs = g.Hb, f.Ws = g.Wb;
  f.kh = g.kh, f.kw = g.kw, f.dh = g.dh, f.dw = g.dw, f.groups = g.groups;
  f.ph = g.dh * (g.kh - 1) - g.ph, f.pw = g.dw * (g.kw - 1) - g.pw;
  if (f.ph < 0 || f.pw < 0) return false;
  // An output_padding makes the big image larger than the plain convolution's output.
  if (f.Hb + 2 * f.ph - g.dh * (g.kh - 1) != f.Hs || f.Wb + 2 * f.pw - g.dw * (g.kw - 1) != f.Ws) return false;
  // f's weight (out = g's big channel cb, in = g's small channel cs, tap t) is w[cs][cb][flipped t].
  const int64_t G = g.groups, fCb_g = f.Cb / G, fCs_g = f.Cs / G, T = g.kk();
  const std::vector<uint16_t> wp = pack_weights(f, [&](int64_t gi, int64_t o, int64_t c, int64_t t) {
    return w[((gi * fCb_g + c) * fCs_g + o) * T + (T - 1 - t)];
  });
  const std::vector<float> bf = bias_f32(bias, f.Cs);
  forward_packed(f, small, wp.data(), bias ? bf.data() : nullptr, big);
  return true;
}

FB_BF16_TARGET void weight_grad(const ConvGeo& g, const uint16_t* small, const uint16_t* big, uint16_t* dw) {
  const char* op = "convolution_backward_weight";
  const int64_t G = g.groups, Cb_g = g.Cb / G, Cs_g = g.Cs / G, T = g.kk();
  const Phases ph(g);
  const int64_t Qe = ph.Q + (ph.Q & 1), kp = Qe / 2;
  const int64_t PS = ph.plane_size(Qe);  // uint16 per (phase, channel)
  const int64_t Cpad = Cs_g <= 16 ? 16 : ceil_div(Cs_g, kCols) * kCols;
  const int64_t NV = Cpad == 16 ? 1 : 2, width = 16 * NV;
  const int64_t plane_elems = mul_checked(mul_checked(ph.P, Cb_g, op), PS, op);
  const int64_t bw_elems = mul_checked(Qe, Cpad, op);
  const int64_t acc_rows = mul_checked(T, Cb_g, op), acc_group = mul_checked(acc_rows, Cpad, op);
  const int64_t acc_size = mul_checked(acc_group, G, op);
  const int64_t HWb = g.big_hw(), HWs = g.small_hw();
  std::vector<float> acc(static_cast<size_t>(acc_size));
  const int64_t zero_off = 0;
  sum_in_slice_order(g.N, 1, acc_size, acc.data(), false, [&](int64_t n0, int64_t n1, float* sum) {
    thread_local std::vector<uint16_t> planes_buf, bw_buf;
    uint16_t* planes = scratch(planes_buf, plane_elems);
    uint16_t* bw = scratch(bw_buf, bw_elems);
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t gi = 0; gi < G; ++gi) {
        const uint16_t* x = big + (n * g.Cb + gi * Cb_g) * HWb;
        std::memset(planes, 0, static_cast<size_t>(plane_elems) * 2);
        for_phase_pixels(g, ph, [&](int64_t phase, int64_t dst, int64_t y, int64_t x0, int64_t len) {
          for (int64_t c = 0; c < Cb_g; ++c) {
            uint16_t* d = planes + (phase * Cb_g + c) * PS + dst;
            const uint16_t* s = x + c * HWb + y * g.Wb + x0;
            if (g.sw == 1)
              std::memcpy(d, s, static_cast<size_t>(len) * 2);
            else
              for (int64_t k = 0; k < len; ++k) d[k] = s[k * g.sw];
          }
        });
        // bw[q / 2][o][q % 2] = dy[o] at flat q, zero on the extra columns and past Q.
        std::memset(bw, 0, static_cast<size_t>(bw_elems) * 2);
        const uint16_t* dy = small + (n * g.Cs + gi * Cs_g) * HWs;
        for (int64_t r = 0; r < g.Hs; ++r)
          for (int64_t xx = 0; xx < g.Ws; ++xx) {
            const int64_t q = r * ph.Wq + xx;
            uint16_t* d = bw + (q >> 1) * 2 * Cpad + (q & 1);
            const uint16_t* s = dy + r * g.Ws + xx;
            for (int64_t o = 0; o < Cs_g; ++o) d[2 * o] = s[o * HWs];
          }
        // Rows k = (tap, input channel), 8 at a time whatever the channel count.
        float* sg = sum + gi * acc_group;
        for (int64_t k0 = 0; k0 < acc_rows; k0 += kRows) {
          const int64_t rows = std::min(kRows, acc_rows - k0);
          int64_t arow[kRows];
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t t = (k0 + r) / Cb_g, c = (k0 + r) % Cb_g;
            arow[r] = (ph.phase[t] * Cb_g + c) * PS + ph.off[t];
          }
          for (int64_t col = 0; col < Cs_g; col += width) {
            const __mmask16 m[2] = {lanes(Cs_g - col), lanes(Cs_g - col - 16)};
            float* cptr = sg + k0 * Cpad + col;
            if (NV == 1)
              tile_rows<1, true>(rows, 1, kp, planes, arow, 0, bw + 2 * col, &zero_off, 2 * Cpad, cptr, Cpad,
                                 nullptr, m);
            else
              tile_rows<2, true>(rows, 1, kp, planes, arow, 0, bw + 2 * col, &zero_off, 2 * Cpad, cptr, Cpad,
                                 nullptr, m);
          }
        }
      }
  });
  for (int64_t gi = 0; gi < G; ++gi)
    for (int64_t o = 0; o < Cs_g; ++o)
      for (int64_t c = 0; c < Cb_g; ++c)
        for (int64_t t = 0; t < T; ++t)
          dw[((gi * Cs_g + o) * Cb_g + c) * T + t] =
              detail::fp32_to_bf16_bits(acc[static_cast<size_t>(gi * acc_group + (t * Cb_g + c) * Cpad + o)]);
}

}  // namespace
}  // namespace flambeau::cpu::conv_bf16

namespace flambeau::cpu {
namespace {
void fill_bf16_kernels(ConvBf16Kernels& t) {
  t = {conv_bf16::forward, conv_bf16::transposed, conv_bf16::weight_grad};
}
}  // namespace
FB_REGISTER_DISPATCH(conv_bf16_stub, avx512, (&table_of<ConvBf16Kernels, fill_bf16_kernels>));
}  // namespace flambeau::cpu
