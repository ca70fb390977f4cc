// Note [Direct convolution]
// A float32 forward convolution without im2col, for AVX-512 CPUs (conv.cpp
// picks it when cpu_capability() is "avx512"; other CPUs and float64 keep
// im2col + GEMM). Per image, the zero-padded input is split into stride
// phases: with strides (sh, sw), phase (a, b) is the plane of padded pixels
// (r, c) with r % sh == a and c % sw == b, each Hq x Wq (Hq = ceil(Hp / sh),
// Wq = ceil(Wp / sw)). The tap (i, j) of output pixel (y, x) reads padded
// pixel (y*sh + i*dh, x*sw + j*dw), which is pixel (y + i*dh/sh, x + j*dw/sw)
// of phase (i*dh % sh, j*dw % sw): in a phase plane read as one flat row of
// width Wq, every tap is a fixed offset from the output's flat position
// y*Wq + x. The output is computed over that flat domain (Hs rows of Wq;
// the Wq - Ws extra columns of each row are computed and thrown away), so the
// inner loop is one unaligned vector load per 16 outputs and tap, whatever the
// stride, padding or dilation, and no bounds test.
//
// Register blocking: 8 output channels x V vectors of 16 flat outputs (V <= 3:
// 24 accumulators), summed over input channels and taps, the weights of the 8
// channels packed side by side for each (input channel, tap) and broadcast.
// The accumulators are stored with the extra columns squeezed out
// (vcompressps in a register, then a masked store): the valid lanes of a
// vector are consecutive output pixels. Row-aligned blocks instead when they
// need fewer multiply-adds (plan_blocks): one output row per vector, no extra
// columns, and the kernel rows that read only padding skipped in the first
// and last rows.
//
// Threads: items are (image, group, block of 8 output channels), split in
// contiguous ranges, each thread building an image's phase planes once in
// its own scratch buffer.
//
// With many output channels per group (64 and more, or 32 of a 1x1 kernel)
// a second kernel wins: it vectorizes over 16 output channels instead of
// pixels (up to 4 vectors x 6 pixels in registers; per input channel and tap,
// the weight vectors are loaded and each pixel broadcast from the plain
// zero-padded plane, any stride), so small planes (8x8) waste no lanes; the
// pixels of a block are stored through a small tile, channel by channel;
// they run per class of in-image taps (Note [Pixel classes]).
// FLAMBEAU_CONV_DIRECT=flat|cv forces one kernel (for tests and benchmarks).
//
// Note [Direct weight gradient]
// dw[co, ci, tap] = sum over images and output pixels q of dy[co, q] *
// x[ci, q + tap]: on the same flat domain and phase planes as the flat kernel
// above (every tap a fixed offset from the flat output position), with the
// output gradient copied flat too (rows Wq wide). Registers hold 8 output
// channels x 3 taps of vector sums over the flat positions of a batch of
// images; the extra columns of the flat domain are left out by masked FMAs
// (not by zeros: an inf or NaN the window never reaches must not leak in as
// 0 * inf), and each sum is reduced once per batch. Threads split the images,
// each chunk summing into its own dw, added up at the end.
// A second kernel (the usual choice: with 48 (input channel, tap) pairs and
// more) vectorizes over output channels instead, like the forward's
// channel-vectorized one: 16 output channels x P pairs in registers, the
// output gradient copied pixel-major (a row of channels per pixel), and per
// output pixel CV gradient vectors times P broadcast input values of the
// plain zero-padded plane; no lanes go to waste whatever the plane size, no
// horizontal sums. FLAMBEAU_CONV_WGRAD=flat|cv forces one of the two.
//
// Note [Strided transposed convolution]
// A transposed convolution of stride s (the input gradient of a strided
// convolution) splits its output into s*s phases (pixels (Y, X) with Y % sh,
// X % sw fixed): in each, a pixel reads the small image through a fixed
// subset of the taps, each at a fixed offset from the pixel's position in a
// zero-padded small plane, so a phase is a plain stride-1 gather (no
// scatter, no col2im, no zero-inserted input). It runs on the channel-
// vectorized layout: 16 output channels x P pixels of one phase in
// registers, the phase's weights packed per (small channel, tap), the pixels
// stored through a small tile at their big-plane indices; per class of
// in-image taps (Note [Pixel classes]), on the forward's gather microkernel.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "conv_direct.h"
#include "cpu/linalg/gemm_pool.h"
#include "flambeau/parallel.h"
#include "settings.h"

namespace flambeau::cpu::conv_avx512 {
namespace {

constexpr int64_t kCo = 8;      // output channels per block
constexpr int64_t kLanes = 16;  // floats per vector
// The phase planes of one image above this many floats go the im2col way.
constexpr int64_t kMaxPlaneFloats = int64_t{1} << 24;

struct Plan {
  int64_t Cg, Sg;               // big- and small-side channels per group
  int64_t Hp, Wp;               // padded input
  int64_t Hq, Wq;               // one phase plane
  int64_t PS;                   // floats per phase plane (multiple of 16)
  int64_t CS;                   // floats per input channel (all phases)
  int64_t nvec;                 // vectors covering the Hs * Wq flat outputs
  int64_t V;                    // vectors per register block
  int64_t nvecR;                // nvec rounded up to a multiple of V
  int64_t buf;                  // floats of one image's scratch (phases + read slack)
  int64_t ncob;                 // blocks of kCo output channels per group
  std::vector<int64_t> toff;    // per tap: offset of its reads from the flat output position
  std::vector<__mmask16> mask;  // per vector: its lanes that are real output pixels
  std::vector<int64_t> dst;     // per vector: the output index of its first real pixel
  // The forward's register blocks (Note [Direct convolution], rows): flat or row-aligned.
  struct TapSet {
    std::vector<int64_t> toff, woff;  // per tap: read offset; offset of its kCo packed weights
  };
  struct Block {
    int V;              // vectors (1 to 3)
    int tapset;         // the taps it reads (tsets)
    int64_t base[3];    // per vector: position of its first lane in the phase planes' flat domain
    int64_t dst[3];     // per vector: output index of its first real pixel
    __mmask16 mask[3];  // per vector: its lanes that are real (consecutive) output pixels
  };
  std::vector<TapSet> tsets;
  std::vector<Block> blocks;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The vectors per block that waste the fewest lanes (ties: more vectors).
int64_t pick_v(int64_t nvec) {
  int64_t best = 3;
  double best_score = -1;
  for (int64_t v = 3; v >= 1; --v) {
    const double fill = static_cast<double>(nvec) / static_cast<double>(ceil_div(nvec, v) * v);
    const double score = fill * (v == 3 ? 1.0 : v == 2 ? 0.95 : 0.8);
    if (score > best_score + 1e-9) best = v, best_score = score;
  }
  return best;
}

/// Note [Direct convolution], rows: the forward's register blocks. Flat: V
/// consecutive vectors of the flat domain, every tap. Row-aligned: each vector
/// holds 16 pixels of one output row (no extra columns computed), and the
/// blocks group rows that read the same kernel rows inside the image, so that
/// the taps of a kernel row that reads only padding (the first and last output
/// rows of a padded convolution) are skipped: exact for finite weights, they
/// would add 0 * w. Whichever needs fewer vector multiply-adds (3x3, padding
/// 1: 8% fewer at 32x32, 15% at 16x16). FLAMBEAU_CONV_ROWS=off|on forces one.
void plan_blocks(const ConvGeo& g, Plan& p) {
  const int64_t kk = g.kk();
  p.tsets.clear();
  p.blocks.clear();
  Plan::TapSet all;
  for (int64_t t = 0; t < kk; ++t)
    all.toff.push_back(p.toff[static_cast<size_t>(t)]), all.woff.push_back(t * kCo);
  p.tsets.push_back(all);
  const double flat_cost = static_cast<double>(p.nvecR * kk);
  // Row-aligned plan and its cost (the kernel rows of each output row as a bitmask).
  const int64_t vpr = ceil_div(g.Ws, kLanes);  // vectors per output row
  double row_cost = 0;
  std::vector<Plan::Block> rows;
  std::vector<Plan::TapSet> sets(1, all);
  std::vector<uint64_t> keys(1, g.kh >= 64 ? ~uint64_t{0} : (uint64_t{1} << g.kh) - 1);
  if (g.kh <= 64 && g.Hs * vpr <= (int64_t{1} << 22)) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (g.Ws - (vpr - 1) * kLanes)) - 1u);
    int64_t y = 0;
    while (y < g.Hs) {
      uint64_t m = 0;
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t r = y * g.sh + i * g.dh - g.ph;
        if (r >= 0 && r < g.Hb) m |= uint64_t{1} << i;
      }
      int64_t y1 = y + 1;  // the run of rows with the same kernel rows
      for (; y1 < g.Hs; ++y1) {
        uint64_t m1 = 0;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t r = y1 * g.sh + i * g.dh - g.ph;
          if (r >= 0 && r < g.Hb) m1 |= uint64_t{1} << i;
        }
        if (m1 != m) break;
      }
      size_t set = static_cast<size_t>(std::find(keys.begin(), keys.end(), m) - keys.begin());
      if (set == keys.size()) {
        keys.push_back(m);
        Plan::TapSet ts;
        for (int64_t i = 0; i < g.kh; ++i)
          if (m >> i & 1)
            for (int64_t j = 0; j < g.kw; ++j) {
              ts.toff.push_back(p.toff[static_cast<size_t>(i * g.kw + j)]);
              ts.woff.push_back((i * g.kw + j) * kCo);
            }
        sets.push_back(std::move(ts));
      }
      const int64_t nt = static_cast<int64_t>(sets[set].toff.size());
      const int64_t nv = (y1 - y) * vpr;
      for (int64_t v0 = 0; v0 < nv; v0 += 3) {
        Plan::Block b{};
        b.V = static_cast<int>(std::min<int64_t>(3, nv - v0));
        b.tapset = static_cast<int>(set);
        for (int v = 0; v < b.V; ++v) {
          const int64_t yy = y + (v0 + v) / vpr, xv = (v0 + v) % vpr;
          b.base[v] = yy * p.Wq + xv * kLanes;
          b.dst[v] = yy * g.Ws + xv * kLanes;
          b.mask[v] = xv == vpr - 1 ? tail : static_cast<__mmask16>(0xFFFF);
        }
        rows.push_back(b);
        // A block of fewer vectors does as many weight broadcasts: cost it a little higher.
        row_cost += static_cast<double>(nt) * (b.V == 3 ? 3.0 : b.V == 2 ? 2.1 : 1.25);
      }
      y = y1;
    }
  }
  // backends.cpu.conv_row_blocks (Note [Settings]): tests and benchmarks compare both in one process.
  const settings::Toggle rows_setting = settings::conv_row_blocks();
  const bool force_off = rows_setting == settings::Toggle::Off,
             force_on = rows_setting == settings::Toggle::On;
  if (!rows.empty() && !force_off && (force_on || row_cost < 0.98 * flat_cost)) {
    p.tsets = std::move(sets);
    p.blocks = std::move(rows);
    return;
  }
  for (int64_t v0 = 0; v0 < p.nvecR; v0 += p.V) {
    Plan::Block b{};
    b.V = static_cast<int>(p.V);
    b.tapset = 0;
    for (int v = 0; v < b.V; ++v) {
      b.base[v] = (v0 + v) * kLanes;
      b.dst[v] = p.dst[static_cast<size_t>(v0 + v)];
      b.mask[v] = p.mask[static_cast<size_t>(v0 + v)];
    }
    p.blocks.push_back(b);
  }
}

/// The plan of g, or false when its sizes are out of the kernel's range.
bool make_plan(const ConvGeo& g, Plan& p) {
  if (g.groups < 1 || g.Cb % g.groups || g.Cs % g.groups) return false;
  if (g.sh < 1 || g.sw < 1 || g.sh > 2 || g.sw > 2 || g.dh < 1 || g.dw < 1) return false;
  if (g.Hs < 1 || g.Ws < 1 || g.Hb < 1 || g.Wb < 1) return false;
  if (g.Hb > (1 << 20) || g.Wb > (1 << 20) || g.ph > (1 << 20) || g.pw > (1 << 20) || g.kh > (1 << 10) ||
      g.kw > (1 << 10) || g.dh > (1 << 10) || g.dw > (1 << 10))
    return false;
  p.Cg = g.Cb / g.groups;
  p.Sg = g.Cs / g.groups;
  p.Hp = g.Hb + 2 * g.ph;
  p.Wp = g.Wb + 2 * g.pw;
  p.Hq = ceil_div(p.Hp, g.sh);
  p.Wq = ceil_div(p.Wp, g.sw);
  if (p.Hq * p.Wq > kMaxPlaneFloats) return false;
  p.PS = ceil_div(p.Hq * p.Wq, kLanes) * kLanes;
  p.CS = g.sh * g.sw * p.PS;
  if (p.CS > kMaxPlaneFloats || p.Cg > kMaxPlaneFloats / p.CS) return false;
  p.nvec = ceil_div(g.Hs * p.Wq, kLanes);
  p.V = pick_v(p.nvec);
  p.nvecR = ceil_div(p.nvec, p.V) * p.V;
  int64_t max_off = 0;
  p.toff.clear();
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t r = i * g.dh, c = j * g.dw;
      const int64_t phase = (r % g.sh) * g.sw + c % g.sw;
      const int64_t off = (r / g.sh) * p.Wq + c / g.sw;
      max_off = std::max(max_off, off);
      p.toff.push_back(phase * p.PS + off);
    }
  // Reads of the last channel run past its planes by up to nvecR*16 + max_off.
  p.buf = p.Cg * p.CS + p.nvecR * kLanes + max_off + kLanes;
  p.ncob = ceil_div(p.Sg, kCo);
  p.mask.resize(static_cast<size_t>(p.nvecR));
  p.dst.resize(static_cast<size_t>(p.nvecR));
  for (int64_t v = 0; v < p.nvecR; ++v) {
    const int64_t q0 = v * kLanes;
    __mmask16 m = 0;
    for (int64_t l = 0; l < kLanes; ++l) {
      const int64_t q = q0 + l, y = q / p.Wq, x = q % p.Wq;
      if (y < g.Hs && x < g.Ws) m = static_cast<__mmask16>(m | (1u << l));
    }
    const int64_t y0 = q0 / p.Wq, x0 = q0 % p.Wq;
    p.mask[static_cast<size_t>(v)] = m;
    p.dst[static_cast<size_t>(v)] = y0 >= g.Hs ? g.Hs * g.Ws : y0 * g.Ws + std::min(x0, g.Ws);
  }
  plan_blocks(g, p);
  return true;
}

/// dst[0, n) = src[0, n): vector copies (rows are short: a memcpy call per row costs as much).
inline void copy_row(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) _mm512_storeu_ps(dst + i, _mm512_loadu_ps(src + i));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
  }
}

/// The phase planes of one group of one image (Cg channels of Hb x Wb), zero-padded.
/// Every image of a geometry writes the same positions: the zeros around them
/// (padding, row ends, read slack) are written only when `zero` (the buffer's
/// first image in a call).
void build_planes(const ConvGeo& g, const Plan& p, const float* img, float* buf, bool zero) {
  if (zero) std::memset(buf, 0, static_cast<size_t>(p.buf) * sizeof(float));
  for (int64_t c = 0; c < p.Cg; ++c) {
    const float* plane = img + c * g.Hb * g.Wb;
    float* dst = buf + c * p.CS;
    for (int64_t h = 0; h < g.Hb; ++h) {
      const int64_t r = h + g.ph;
      const float* src = plane + h * g.Wb;
      float* row = dst + (r % g.sh) * g.sw * p.PS + (r / g.sh) * p.Wq;
      if (g.sw == 1) {
        copy_row(src, row + g.pw, g.Wb);
      } else {
        float* even = row;
        float* odd = row + p.PS;
        // Source pixel w goes to column w + pw: phase (w + pw) & 1, index (w + pw) >> 1. From an even
        // w0, the even pixels of 32 are 16 consecutive columns of one phase, the odd ones of the other.
        float* to_even = ((g.pw & 1) ? odd : even) + (g.pw >> 1);
        float* to_odd = ((g.pw & 1) ? even : odd) + ((g.pw + 1) >> 1);
        const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        int64_t w = 0;
        for (; w + 32 <= g.Wb; w += 32) {
          const __m512 a = _mm512_loadu_ps(src + w), b = _mm512_loadu_ps(src + w + 16);
          _mm512_storeu_ps(to_even + w / 2, _mm512_permutex2var_ps(a, ie, b));
          _mm512_storeu_ps(to_odd + w / 2, _mm512_permutex2var_ps(a, io, b));
        }
        for (; w < g.Wb; ++w) {
          const int64_t c2 = w + g.pw;
          ((c2 & 1) ? odd : even)[c2 >> 1] = src[w];
        }
      }
    }
  }
}

/// Weights packed per group and block of `blk` output channels: [g][cob][ci][tap][blk], zero past
/// the group's Sg output channels (Cg input channels per group).
std::vector<float> pack_weight_blocks(const ConvGeo& g, int64_t Cg, int64_t Sg, int64_t blk, const float* w) {
  const int64_t kk = g.kk(), ncob = ceil_div(Sg, blk);
  std::vector<float> out(static_cast<size_t>(g.groups * ncob * Cg * kk * blk), 0.0f);
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t co = 0; co < Sg; ++co) {
      const int64_t cob = co / blk, k = co % blk;
      const float* src = w + (gi * Sg + co) * Cg * kk;
      float* dst = out.data() + ((gi * ncob + cob) * Cg * kk) * blk + k;
      for (int64_t t = 0; t < Cg * kk; ++t) dst[t * blk] = src[t];
    }
  return out;
}

/// One register block (Plan::Block) of kCo output channels of one image.
template <int V>
void conv_block(const Plan& p, const Plan::Block& blk, int64_t kk, int64_t HW, const float* planes,
                const float* wp, const __m512* b, int64_t nco, float* out) {
  const Plan::TapSet& ts = p.tsets[static_cast<size_t>(blk.tapset)];
  const int64_t nt = static_cast<int64_t>(ts.toff.size()), Cg = p.Cg, CS = p.CS;
  const int64_t* toff = ts.toff.data();
  const int64_t* woff = ts.woff.data();
  __m512 acc[kCo][V];
#pragma GCC unroll 8
  for (int k = 0; k < kCo; ++k)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) acc[k][v] = b[k];
  const float* src[V];
#pragma GCC unroll 3
  for (int v = 0; v < V; ++v) src[v] = planes + blk.base[v];
  for (int64_t ci = 0; ci < Cg; ++ci) {
    const float* wc = wp + ci * kk * kCo;
    const int64_t cb = ci * CS;
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t o = cb + toff[t];
      const float* w = wc + woff[t];
      __m512 x[V];
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) x[v] = _mm512_loadu_ps(src[v] + o);
#pragma GCC unroll 8
      for (int k = 0; k < kCo; ++k) {
        const __m512 wv = _mm512_set1_ps(w[k]);
#pragma GCC unroll 3
        for (int v = 0; v < V; ++v) acc[k][v] = _mm512_fmadd_ps(wv, x[v], acc[k][v]);
      }
    }
  }
#pragma GCC unroll 3
  for (int v = 0; v < V; ++v) {
    const __mmask16 m = blk.mask[v];
    if (!m) continue;
    const __mmask16 head = static_cast<__mmask16>((1u << __builtin_popcount(m)) - 1u);
    float* o = out + blk.dst[v];
    if (m == 0xFFFF) {
      for (int k = 0; k < kCo; ++k)
        if (k < nco) _mm512_storeu_ps(o + k * HW, acc[k][v]);
    } else {
      for (int k = 0; k < kCo; ++k)
        if (k < nco) _mm512_mask_storeu_ps(o + k * HW, head, _mm512_maskz_compress_ps(m, acc[k][v]));
    }
  }
}

/// Every register block of kCo output channels (bias may be null) over one image.
void conv_blocks(const ConvGeo& g, const Plan& p, const float* planes, const float* wp, const float* bias,
                 int64_t nco, float* out) {
  const int64_t kk = g.kk(), HW = g.Hs * g.Ws;
  __m512 b[kCo];
  for (int k = 0; k < kCo; ++k) b[k] = _mm512_set1_ps(bias && k < nco ? bias[k] : 0.0f);
  for (const Plan::Block& blk : p.blocks) {
    switch (blk.V) {
      case 3:
        conv_block<3>(p, blk, kk, HW, planes, wp, b, nco, out);
        break;
      case 2:
        conv_block<2>(p, blk, kk, HW, planes, wp, b, nco, out);
        break;
      default:
        conv_block<1>(p, blk, kk, HW, planes, wp, b, nco, out);
        break;
    }
  }
}

// ---- channel-vectorized variant (Note [Direct convolution], last part) ----

constexpr int64_t kCvCo = 64;  // output channels per block: up to 4 vectors
constexpr int64_t kMaxP = 24;  // the most pixels of one register block
constexpr size_t kMaxClasses = 32;

/// Note [Pixel classes]
/// The channel-vectorized kernels (forward and strided transposed) gather, per
/// output pixel, the taps of a window at a fixed offset (toff) from the pixel's
/// origin in a zero-padded plane (poff). Near the borders some taps read only
/// padding: the pixels are grouped by the set of taps that read inside the
/// image, and each class runs on its own taps only (the others would add
/// 0 * w: skipping them is exact for finite weights). 3x3 on 8x8 with padding
/// 1: the interior 36 pixels read 9 taps, the edges 6, the corners 4 (16% of
/// the multiply-adds saved). One microkernel (gather_block) serves both.
struct PixelClass {
  std::vector<int64_t> toff;  // per tap: offset of its read from a pixel's origin
  std::vector<int64_t> woff;  // per tap: offset of its kCvCo packed weights within one input channel's
  std::vector<int64_t> poff;  // per pixel (+ kMaxP copies of the last: reads past the end, not stored)
  std::vector<int64_t> oidx;  // per pixel: its index in the output plane
  int64_t HW = 0;             // pixels
};

/// The register blocks' pixels per output channel of CV vectors (as class_blocks splits them).
constexpr int p_max(int CV) { return CV == 1 ? 24 : CV == 2 ? 12 : CV == 3 ? 8 : 6; }

/// The estimated time of n pixels of one class per tap, in FMA-vector units per
/// output vector: blocks of P pixels as class_blocks runs them (a remainder of at
/// most P/2 in smaller blocks), a block of P pixels costing at least the FMA
/// latency (4 cycles over its CV * P chains) and the loads (CV + P, 2 a cycle).
double block_cost(int64_t n, int CV) {
  auto one = [CV](int64_t P) {
    return std::max({static_cast<double>(P), 4.0 / CV, static_cast<double>(CV + P) / (2.0 * CV)});
  };
  double cost = 0;
  int64_t P = p_max(CV);
  while (n > 0) {
    cost += static_cast<double>(n / P) * one(P);
    n %= P;
    if (n == 0) break;
    if (P == 1 || n > P / 2) {
      cost += one(P);
      break;
    }
    P /= 2;
  }
  return cost;
}

/// Builds the classes of a set of pixels, each added with the bitmask of its in-image taps.
class ClassBuilder {
 public:
  ClassBuilder(const std::vector<int64_t>& toff, const std::vector<int64_t>& woff)
      : toff_(toff), woff_(woff) {
    all_ = toff.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << toff.size()) - 1;
  }
  /// Whether taps can be told apart (a bitmask of 64).
  bool splits() const { return toff_.size() <= 64; }
  void add(int64_t poff, int64_t oidx, uint64_t mask) {
    if (!splits()) mask = all_;
    pixels_.push_back({poff, oidx});
    masks_.push_back(mask);
  }
  /// The classes; one class with every tap when there would be too many, when
  /// splitting saves too little (Note [Pixel classes]) or FLAMBEAU_CONV_CLASSES=off
  /// (read per call: benchmarks compare both in one process).
  std::vector<PixelClass> finish(int CV) {
    std::vector<uint64_t> keys;
    std::vector<int64_t> count;
    for (uint64_t m : masks_) {
      const size_t k = static_cast<size_t>(std::find(keys.begin(), keys.end(), m) - keys.begin());
      if (k == keys.size()) keys.push_back(m), count.push_back(0);
      ++count[k];
    }
    double split = 0;
    for (size_t k = 0; k < keys.size(); ++k)
      split += block_cost(count[k], CV) * static_cast<double>(__builtin_popcountll(keys[k]));
    const double whole =
        block_cost(static_cast<int64_t>(masks_.size()), CV) * static_cast<double>(__builtin_popcountll(all_));
    const bool off =
        settings::conv_pixel_classes() == settings::Toggle::Off;  // backends.cpu.conv_pixel_classes
    if (keys.size() > kMaxClasses || split > 0.97 * whole || off) {
      std::fill(masks_.begin(), masks_.end(), all_);
      keys.assign(1, all_);
    }
    std::vector<PixelClass> out(keys.size());
    for (size_t k = 0; k < keys.size(); ++k)
      for (size_t t = 0; t < toff_.size(); ++t)
        if (!splits() || (keys[k] >> t & 1)) {
          out[k].toff.push_back(toff_[t]);
          out[k].woff.push_back(woff_[t]);
        }
    size_t last = 0;
    for (size_t q = 0; q < pixels_.size(); ++q) {
      if (masks_[q] != keys[last])
        last = static_cast<size_t>(std::find(keys.begin(), keys.end(), masks_[q]) - keys.begin());
      out[last].poff.push_back(pixels_[q].first);
      out[last].oidx.push_back(pixels_[q].second);
    }
    for (PixelClass& c : out) {
      c.HW = static_cast<int64_t>(c.oidx.size());
      for (int64_t k = 0; k < kMaxP; ++k) c.poff.push_back(c.poff.back());
    }
    return out;
  }

 private:
  const std::vector<int64_t>& toff_;
  const std::vector<int64_t>& woff_;
  uint64_t all_;
  std::vector<std::pair<int64_t, int64_t>> pixels_;
  std::vector<uint64_t> masks_;
};

/// Bitmask over k taps (index i of a kernel row or column): those whose read at
/// origin + i*d lands in [0, n).
uint64_t in_range_taps(int64_t origin, int64_t k, int64_t d, int64_t n) {
  uint64_t m = 0;
  for (int64_t i = 0; i < k && i < 64; ++i) {
    const int64_t r = origin + i * d;
    if (r >= 0 && r < n) m |= uint64_t{1} << i;
  }
  return m;
}

struct CvPlan {
  int64_t Cg, Sg, Hp, Wp, PSz;      // channels per group, padded plane, floats per plane
  int64_t HW;                       // output pixels
  int64_t ncob;                     // blocks of kCvCo output channels per group
  std::vector<int64_t> toff;        // per tap: offset in the padded plane
  std::vector<int64_t> poff;        // per output pixel (padded to a block): offset of its window
  std::vector<PixelClass> classes;  // the forward's (Note [Pixel classes]); empty unless asked for
};

bool make_cv_plan(const ConvGeo& g, CvPlan& p, bool classes = false) {
  if (g.groups < 1 || g.Cb % g.groups || g.Cs % g.groups) return false;
  if (g.Hs < 1 || g.Ws < 1 || g.Hb < 1 || g.Wb < 1) return false;
  p.Cg = g.Cb / g.groups;
  p.Sg = g.Cs / g.groups;
  p.Hp = g.Hb + 2 * g.ph;
  p.Wp = g.Wb + 2 * g.pw;
  if (p.Hp > kMaxPlaneFloats || p.Wp > kMaxPlaneFloats || p.Hp * p.Wp > kMaxPlaneFloats) return false;
  p.PSz = p.Hp * p.Wp;
  if (p.Cg > kMaxPlaneFloats / p.PSz) return false;
  p.HW = g.Hs * g.Ws;
  if (p.HW > kMaxPlaneFloats) return false;
  p.ncob = ceil_div(p.Sg, kCvCo);
  p.toff.clear();
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) p.toff.push_back(i * g.dh * p.Wp + j * g.dw);
  p.poff.resize(static_cast<size_t>(p.HW + kMaxP));
  for (int64_t q = 0; q < p.HW + kMaxP; ++q) {
    const int64_t qq = std::min(q, p.HW - 1);  // past the end: the last pixel again (not stored)
    p.poff[static_cast<size_t>(q)] = (qq / g.Ws) * g.sh * p.Wp + (qq % g.Ws) * g.sw;
  }
  p.classes.clear();
  if (classes) {
    std::vector<int64_t> woff;
    for (int64_t t = 0; t < g.kk(); ++t) woff.push_back(t * kCvCo);
    ClassBuilder cb(p.toff, woff);
    for (int64_t y = 0; y < g.Hs; ++y) {
      const uint64_t rows = in_range_taps(y * g.sh - g.ph, g.kh, g.dh, g.Hb);
      for (int64_t x = 0; x < g.Ws; ++x) {
        const uint64_t cols = in_range_taps(x * g.sw - g.pw, g.kw, g.dw, g.Wb);
        uint64_t mask = 0;
        if (g.kk() <= 64)
          for (int64_t i = 0; i < g.kh; ++i)
            if (rows >> i & 1) mask |= cols << (i * g.kw);
        cb.add(y * g.sh * p.Wp + x * g.sw, y * g.Ws + x, mask);
      }
    }
    p.classes = cb.finish(static_cast<int>(std::min<int64_t>(4, ceil_div(p.Sg, 16))));
  }
  return true;
}

/// The zero-padded planes of one group of one image; the padding written only when `zero`
/// (the buffer's first image in a call: the next ones write the same positions).
void build_padded(const ConvGeo& g, const CvPlan& p, const float* img, float* buf, bool zero) {
  if (zero) std::memset(buf, 0, static_cast<size_t>(p.Cg * p.PSz) * sizeof(float));
  for (int64_t c = 0; c < p.Cg; ++c)
    for (int64_t h = 0; h < g.Hb; ++h)
      copy_row(img + (c * g.Hb + h) * g.Wb, buf + c * p.PSz + (h + g.ph) * p.Wp + g.pw, g.Wb);
}

/// CV vectors of 16 output channels x P pixels [q0, q0 + np) of one class in
/// registers (Note [Pixel classes]), summed over Cg input channels (planes PSz
/// floats apart, weights wci floats apart) and the class's taps: per (channel,
/// tap) CV weight vectors and P broadcast pixels. Stored through a small tile at
/// the pixels' output indices, channels out_hw apart.
template <int CV, int P>
void gather_block(const PixelClass& pc, int64_t q0, int64_t np, int64_t Cg, int64_t PSz, int64_t wci,
                  const float* planes, const float* wp, const float* bpad, int64_t nco, float* out,
                  int64_t out_hw) {
  const int64_t nt = static_cast<int64_t>(pc.toff.size());
  const int64_t* toff = pc.toff.data();
  const int64_t* woff = pc.woff.data();
  __m512 acc[P][CV];
#pragma GCC unroll 24
  for (int k = 0; k < P; ++k)
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) acc[k][c] = _mm512_load_ps(bpad + 16 * c);
  const float* px[P];
#pragma GCC unroll 24
  for (int k = 0; k < P; ++k) px[k] = planes + pc.poff[static_cast<size_t>(q0 + k)];
  for (int64_t ci = 0; ci < Cg; ++ci) {
    const int64_t cbase = ci * PSz;
    const float* wc = wp + ci * wci;
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t o = cbase + toff[t];
      const float* w = wc + woff[t];
      __m512 wv[CV];
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) wv[c] = _mm512_loadu_ps(w + 16 * c);
#pragma GCC unroll 24
      for (int k = 0; k < P; ++k) {
        const __m512 xb = _mm512_set1_ps(px[k][o]);
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) acc[k][c] = _mm512_fmadd_ps(wv[c], xb, acc[k][c]);
      }
    }
  }
  alignas(64) float tile[P][CV * 16];
#pragma GCC unroll 24
  for (int k = 0; k < P; ++k)
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) _mm512_store_ps(&tile[k][16 * c], acc[k][c]);
  const int64_t* oi = pc.oidx.data() + q0;
  for (int64_t co = 0; co < nco; ++co) {
    float* o = out + co * out_hw;
    for (int64_t k = 0; k < np; ++k) o[oi[k]] = tile[k][co];
  }
}

/// The pixels [q0, HW) of one class in blocks of P; a remainder of at most P/2 in smaller blocks.
template <int CV, int P>
void class_blocks(const PixelClass& pc, int64_t q0, int64_t Cg, int64_t PSz, int64_t wci, const float* planes,
                  const float* wp, const float* bpad, int64_t nco, float* out, int64_t out_hw) {
  for (; q0 + P <= pc.HW; q0 += P)
    gather_block<CV, P>(pc, q0, P, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw);
  const int64_t r = pc.HW - q0;
  if (r <= 0) return;
  if constexpr (P > 1) {
    if (r <= P / 2) {
      class_blocks<CV, P / 2>(pc, q0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw);
      return;
    }
  }
  gather_block<CV, P>(pc, q0, r, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw);
}

/// Every class of pixels for nco (<= kCvCo) output channels: bias (may be null) plus the gathered sums.
void run_classes(const std::vector<PixelClass>& classes, int64_t Cg, int64_t PSz, int64_t wci,
                 const float* planes, const float* wp, const float* bias, int64_t nco, float* out,
                 int64_t out_hw) {
  alignas(64) float bpad[kCvCo];
  for (int64_t k = 0; k < kCvCo; ++k) bpad[k] = bias && k < nco ? bias[k] : 0.0f;
  for (const PixelClass& pc : classes) {
    switch ((nco + 15) / 16) {
      case 1:
        class_blocks<1, 24>(pc, 0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw);
        break;
      case 2:
        class_blocks<2, 12>(pc, 0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw);
        break;
      case 3:
        class_blocks<3, 8>(pc, 0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw);
        break;
      default:
        class_blocks<4, 6>(pc, 0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw);
        break;
    }
  }
}

void cv_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small) {
  CvPlan p;
  if (!make_cv_plan(g, p, true)) return;
  const std::vector<float> wp = pack_weight_blocks(g, p.Cg, p.Sg, kCvCo, w);
  const int64_t G = g.groups, per_image = G * p.ncob, kk = g.kk(), big_hw = g.Hb * g.Wb;
  const int64_t macs = p.Cg * kk * kCvCo * p.HW;  // per item
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, macs));
  pool_parallel_for(0, g.N * per_image, grain, [&](int64_t begin, int64_t end) {  // Note [GEMM pool]
    thread_local std::vector<float> scratch;
    const size_t need = static_cast<size_t>(p.Cg * p.PSz);
    if (scratch.size() < need) scratch.resize(need);
    float* planes = scratch.data();
    int64_t loaded = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / per_image, rest = item % per_image;
      const int64_t gi = rest / p.ncob, cob = rest % p.ncob;
      const int64_t key = n * G + gi;
      if (key != loaded) {
        build_padded(g, p, big + (n * g.Cb + gi * p.Cg) * big_hw, planes, loaded < 0);
        loaded = key;
      }
      const int64_t co0 = gi * p.Sg + cob * kCvCo, nco = std::min(kCvCo, p.Sg - cob * kCvCo);
      run_classes(p.classes, p.Cg, p.PSz, kk * kCvCo, planes,
                  wp.data() + (gi * p.ncob + cob) * p.Cg * kk * kCvCo, bias ? bias + co0 : nullptr, nco,
                  small + (n * g.Cs + co0) * p.HW, p.HW);
    }
  });
}

bool prefer_cv(const ConvGeo& g) {
  const settings::ConvKernel forced = settings::conv_direct_kernel();  // backends.cpu.conv_direct_kernel
  if (forced != settings::ConvKernel::Auto) return forced == settings::ConvKernel::ChannelVectorized;
  // Measured on the ResNet-8 layers (benchmarks/ops_conv.py): the flat kernel
  // wins up to 32 output channels of 3x3, this one from 64 and on 1x1 kernels.
  const int64_t Sg = g.Cs / g.groups;
  return Sg >= 64 || (g.kk() == 1 && Sg >= 32);
}

// ---- weight gradient (Note [Direct weight gradient]) ----

/// dw += one thread's partial weight gradient (the first one copied), under mu.
void add_partial(std::mutex& mu, bool& first, const std::vector<float>& local, float* dw) {
  std::lock_guard<std::mutex> lock(mu);
  if (first) {
    std::memcpy(dw, local.data(), local.size() * sizeof(float));
    first = false;
  } else {
    for (size_t i = 0; i < local.size(); ++i) dw[i] += local[i];
  }
}

/// TJ taps (offsets toff[0..TJ)) of one input channel for kCo output channels,
/// summed over nimg images' flat outputs: dw[k * Cgk + t] += the sums.
template <int TJ>
void wgrad_block(const Plan& p, const float* planes, int64_t img_planes, const float* dyf, int64_t img_dy,
                 int64_t nimg, const int64_t* toff, int64_t nco, float* dw, int64_t Cgk) {
  __m512 acc[kCo][TJ];
#pragma GCC unroll 8
  for (int k = 0; k < kCo; ++k)
#pragma GCC unroll 3
    for (int t = 0; t < TJ; ++t) acc[k][t] = _mm512_setzero_ps();
  const int64_t vstride = p.nvec * kLanes;  // floats of one channel's flat gradient
  for (int64_t b = 0; b < nimg; ++b) {
    const float* xb = planes + b * img_planes;
    const float* db = dyf + b * img_dy;
    for (int64_t v = 0; v < p.nvec; ++v) {
      const __mmask16 m = p.mask[static_cast<size_t>(v)];
      const int64_t q = v * kLanes;
      __m512 x[TJ];
#pragma GCC unroll 3
      for (int t = 0; t < TJ; ++t) x[t] = _mm512_loadu_ps(xb + toff[t] + q);
#pragma GCC unroll 8
      for (int k = 0; k < kCo; ++k) {
        const __m512 d = _mm512_load_ps(db + k * vstride + q);
#pragma GCC unroll 3
        for (int t = 0; t < TJ; ++t) acc[k][t] = _mm512_mask3_fmadd_ps(d, x[t], acc[k][t], m);
      }
    }
  }
  for (int64_t k = 0; k < nco; ++k)
    for (int t = 0; t < TJ; ++t) dw[k * Cgk + t] += _mm512_reduce_add_ps(acc[k][t]);
}

/// The gradient of one image's kCo-blocks laid out flat (rows Wq wide), zero past each block's channels.
void build_dy_flat(const ConvGeo& g, const Plan& p, const float* dy, int64_t Sg, float* out, bool zero) {
  const int64_t vstride = p.nvec * kLanes, nb = p.ncob * kCo;
  if (zero) std::memset(out, 0, static_cast<size_t>(nb * vstride) * sizeof(float));
  for (int64_t c = 0; c < Sg; ++c)
    for (int64_t y = 0; y < g.Hs; ++y)
      copy_row(dy + (c * g.Hs + y) * g.Ws, out + c * vstride + y * p.Wq, g.Ws);
}

/// r[k] <- column k of the 16x16 block whose rows are r[0..16).
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}
/// dst[q * ld + c] = src[c * HW + q] for c < C, q < HW: planes (channel-major) to
/// pixel-major rows, by 16x16 register transposes (scalar at the tails).
void to_pixel_major(const float* src, int64_t C, int64_t HW, float* dst, int64_t ld) {
  const int64_t C16 = C / kLanes * kLanes, HW16 = HW / kLanes * kLanes;
  for (int64_t c0 = 0; c0 < C16; c0 += kLanes) {
    for (int64_t q0 = 0; q0 < HW16; q0 += kLanes) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (c0 + i) * HW + q0);
      transpose16(r);
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + (q0 + i) * ld + c0, r[i]);
    }
    for (int64_t c = c0; c < c0 + kLanes; ++c)
      for (int64_t q = HW16; q < HW; ++q) dst[q * ld + c] = src[c * HW + q];
  }
  for (int64_t c = C16; c < C; ++c)
    for (int64_t q = 0; q < HW; ++q) dst[q * ld + c] = src[c * HW + q];
}

/// Channel-vectorized weight gradient (Note [Direct weight gradient], last
/// part): CV vectors of 16 output channels x P (input channel, tap) pairs in
/// registers, summed over every output pixel of nimg images: per pixel, CV
/// vectors of the pixel-major gradient and P broadcast input values.
template <int CV, int P>
void cv_wgrad_block(const CvPlan& p, const float* planes, const float* dyt, int64_t Sgp, int64_t nimg,
                    const int64_t* coff, int64_t npair, int64_t nco, float* dw, int64_t Cgk) {
  __m512 acc[P][CV];
#pragma GCC unroll 24
  for (int k = 0; k < P; ++k)
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) acc[k][c] = _mm512_setzero_ps();
  const int64_t img_planes = p.Cg * p.PSz, img_dy = p.HW * Sgp;
  const int64_t* poff = p.poff.data();
  for (int64_t b = 0; b < nimg; ++b) {
    const float* px[P];
#pragma GCC unroll 24
    for (int k = 0; k < P; ++k) px[k] = planes + b * img_planes + coff[k < npair ? k : 0];
    const float* d = dyt + b * img_dy;
    for (int64_t q = 0; q < p.HW; ++q, d += Sgp) {
      const int64_t o = poff[q];
      __m512 dv[CV];
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) dv[c] = _mm512_loadu_ps(d + 16 * c);
#pragma GCC unroll 24
      for (int k = 0; k < P; ++k) {
        const __m512 xb = _mm512_set1_ps(px[k][o]);
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) acc[k][c] = _mm512_fmadd_ps(dv[c], xb, acc[k][c]);
      }
    }
  }
  alignas(64) float tile[CV * 16];
  for (int64_t k = 0; k < npair; ++k) {
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) _mm512_store_ps(tile + 16 * c, acc[k][c]);
    for (int64_t co = 0; co < nco; ++co) dw[co * Cgk + k] += tile[co];
  }
}

template <int CV, int P>
void cv_wgrad_pairs(const CvPlan& p, const float* planes, const float* dyt, int64_t Sgp, int64_t nimg,
                    const int64_t* coff, int64_t Cgk, int64_t nco, float* dw) {
  for (int64_t c0 = 0; c0 < Cgk; c0 += P)
    cv_wgrad_block<CV, P>(p, planes, dyt, Sgp, nimg, coff + c0, std::min<int64_t>(P, Cgk - c0), nco, dw + c0,
                          Cgk);
}

bool prefer_cv_wgrad(const ConvGeo& g) {
  const settings::ConvKernel forced =
      settings::conv_weight_grad_kernel();  // backends.cpu.conv_weight_grad_kernel
  if (forced != settings::ConvKernel::Auto) return forced == settings::ConvKernel::ChannelVectorized;
  // Measured on the benchmark models' layers (2 threads): the flat kernel wins
  // only with few (input channel, tap) pairs (the 3-channel stems).
  return (g.Cb / g.groups) * g.kk() >= 48;
}

void cv_weight_grad(const ConvGeo& g, const float* big, const float* small, float* dw) {
  CvPlan p;
  if (!make_cv_plan(g, p)) return;
  const int64_t G = g.groups, kk = g.kk(), Cg = p.Cg, Sg = p.Sg, Cgk = Cg * kk;
  const int64_t wsize = g.Cs * Cgk, big_hw = g.Hb * g.Wb;
  const int64_t Sgp = ceil_div(Sg, kLanes) * kLanes;  // gradient row: the group's channels, padded
  const int64_t img_planes = Cg * p.PSz, img_dy = p.HW * Sgp;
  std::vector<int64_t> coff(static_cast<size_t>(Cgk));  // per (input channel, tap): its plane offset
  for (int64_t ci = 0; ci < Cg; ++ci)
    for (int64_t t = 0; t < kk; ++t) coff[static_cast<size_t>(ci * kk + t)] = ci * p.PSz + p.toff[t];
  // Images per batch: planes and gradients within ~512 KiB.
  const int64_t B =
      std::clamp<int64_t>((int64_t{1} << 17) / std::max<int64_t>(1, img_planes + img_dy), 1, g.N);
  std::fill(dw, dw + wsize, 0.0f);
  std::mutex mu;
  bool first = true;
  const int64_t macs = g.Cs * Cgk * p.HW;  // per image
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, macs));
  pool_parallel_for(0, g.N, grain, [&](int64_t n0, int64_t n1) {  // Note [GEMM pool]
    thread_local std::vector<float> scratch;
    const size_t need = static_cast<size_t>(B * (img_planes + img_dy));
    if (scratch.size() < need) scratch.resize(need);
    float* dyt = scratch.data();
    float* planes = dyt + B * img_dy;
    std::vector<float> local(static_cast<size_t>(wsize), 0.0f);
    for (int64_t nb0 = n0; nb0 < n1; nb0 += B) {
      const int64_t nimg = std::min(B, n1 - nb0);
      for (int64_t gi = 0; gi < G; ++gi) {
        for (int64_t b = 0; b < nimg; ++b) {
          const int64_t n = nb0 + b;
          const bool zero = nb0 == n0 && gi == 0;  // first use of this slot in the call
          build_padded(g, p, big + (n * g.Cb + gi * Cg) * big_hw, planes + b * img_planes, zero);
          // The gradient pixel-major: row q holds the group's Sg channels (zeros up to Sgp).
          const float* src = small + (n * g.Cs + gi * Sg) * p.HW;
          float* dst = dyt + b * img_dy;
          if (Sgp != Sg && zero) std::memset(dst, 0, static_cast<size_t>(img_dy) * sizeof(float));
          to_pixel_major(src, Sg, p.HW, dst, Sgp);
        }
        for (int64_t co0 = 0; co0 < Sg; co0 += kCvCo) {
          const int64_t nco = std::min(kCvCo, Sg - co0);
          const float* d = dyt + co0;
          float* out = local.data() + (gi * Sg + co0) * Cgk;
          switch ((nco + 15) / 16) {
            case 1:
              cv_wgrad_pairs<1, 24>(p, planes, d, Sgp, nimg, coff.data(), Cgk, nco, out);
              break;
            case 2:
              cv_wgrad_pairs<2, 12>(p, planes, d, Sgp, nimg, coff.data(), Cgk, nco, out);
              break;
            case 3:
              cv_wgrad_pairs<3, 8>(p, planes, d, Sgp, nimg, coff.data(), Cgk, nco, out);
              break;
            default:
              cv_wgrad_pairs<4, 6>(p, planes, d, Sgp, nimg, coff.data(), Cgk, nco, out);
              break;
          }
        }
      }
    }
    add_partial(mu, first, local, dw);
  });
}

// ---- strided transposed convolution (Note [Strided transposed convolution]) ----

struct TPhase {
  std::vector<int64_t> taps;        // the kernel taps (i * kw + j) that reach this phase's pixels
  std::vector<PixelClass> classes;  // its pixels by in-image taps (Note [Pixel classes])
  int64_t HW = 0;                   // pixels of this phase
};

struct TPlan {
  int64_t Cg, Sg;    // small-side (read) and big-side (written) channels per group
  int64_t Wp, PSz;   // padded small plane: width, floats
  int64_t PT, PL;    // padding above / left of the small image
  int64_t Hsm, Wsm;  // the small image
  int64_t ncob;      // blocks of kCvCo big-side channels per group
  std::vector<TPhase> phases;
};

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// The phases of a transposed convolution g (big = its output): big pixel (Y, X) with
/// Y = sh*u + a, X = sw*v + b reads small pixel (u + r_i, v + c_j) for the taps with
/// (a + ph - i*dh) % sh == 0 (and the same along W), r_i = (a + ph - i*dh) / sh.
bool make_tplan(const ConvGeo& g, TPlan& p) {
  if (g.groups < 1 || g.Cb % g.groups || g.Cs % g.groups) return false;
  if (g.sh < 1 || g.sw < 1 || g.sh > 4 || g.sw > 4 || g.dh < 1 || g.dw < 1) return false;
  if (g.Hs < 1 || g.Ws < 1 || g.Hb < 1 || g.Wb < 1) return false;
  if (g.Hb > (1 << 16) || g.Wb > (1 << 16) || g.Hs > (1 << 16) || g.Ws > (1 << 16) || g.ph > (1 << 16) ||
      g.pw > (1 << 16) || g.kh > 64 || g.kw > 64 || g.dh > 64 || g.dw > 64)
    return false;
  p.Cg = g.Cs / g.groups;  // the small image is what is read
  p.Sg = g.Cb / g.groups;
  p.Hsm = g.Hs, p.Wsm = g.Ws;
  // Reads along one dim: rows u + r for u in [0, ceil(Hb/s)), r over every phase's taps.
  auto span = [](int64_t big, int64_t s, int64_t pad, int64_t k, int64_t d, int64_t small, int64_t& lo_pad,
                 int64_t& hi_pad) {
    int64_t rmin = 0, rmax = 0;
    bool any = false;
    for (int64_t a = 0; a < s; ++a)
      for (int64_t i = 0; i < k; ++i) {
        const int64_t num = a + pad - i * d;
        if (((num % s) + s) % s) continue;
        const int64_t r = floor_div(num, s);
        rmin = any ? std::min(rmin, r) : r;
        rmax = any ? std::max(rmax, r) : r;
        any = true;
      }
    const int64_t umax = (big + s - 1) / s - 1;
    lo_pad = std::max<int64_t>(0, -rmin);
    hi_pad = std::max<int64_t>(0, umax + rmax - (small - 1));
  };
  int64_t PB = 0, PR = 0;
  span(g.Hb, g.sh, g.ph, g.kh, g.dh, g.Hs, p.PT, PB);
  span(g.Wb, g.sw, g.pw, g.kw, g.dw, g.Ws, p.PL, PR);
  p.Wp = p.PL + g.Ws + PR;
  const int64_t Hp = p.PT + g.Hs + PB;
  if (Hp * p.Wp > kMaxPlaneFloats || p.Cg > kMaxPlaneFloats / (Hp * p.Wp)) return false;
  p.PSz = Hp * p.Wp;
  p.ncob = ceil_div(p.Sg, kCvCo);
  p.phases.clear();
  for (int64_t a = 0; a < g.sh; ++a)
    for (int64_t b = 0; b < g.sw; ++b) {
      TPhase ph;
      std::vector<int64_t> toff, woff, rows, cols;  // per phase tap: offsets; small-plane row / column shift
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t ni = a + g.ph - i * g.dh;
        if (((ni % g.sh) + g.sh) % g.sh) continue;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t nj = b + g.pw - j * g.dw;
          if (((nj % g.sw) + g.sw) % g.sw) continue;
          woff.push_back(static_cast<int64_t>(ph.taps.size()) * kCvCo);
          ph.taps.push_back(i * g.kw + j);
          rows.push_back(floor_div(ni, g.sh));
          cols.push_back(floor_div(nj, g.sw));
          toff.push_back(rows.back() * p.Wp + cols.back());
        }
      }
      ClassBuilder cb(toff, woff);
      for (int64_t Y = a; Y < g.Hb; Y += g.sh)
        for (int64_t X = b; X < g.Wb; X += g.sw) {
          // Tap t reads small pixel (Y / sh + rows[t], X / sw + cols[t]).
          uint64_t mask = 0;
          for (size_t t = 0; t < toff.size() && t < 64; ++t) {
            const int64_t u = Y / g.sh + rows[t], v = X / g.sw + cols[t];
            if (u >= 0 && u < g.Hs && v >= 0 && v < g.Ws) mask |= uint64_t{1} << t;
          }
          cb.add((Y / g.sh + p.PT) * p.Wp + X / g.sw + p.PL, Y * g.Wb + X, mask);
          ++ph.HW;
        }
      if (ph.HW == 0) continue;
      ph.classes = cb.finish(static_cast<int>(std::min<int64_t>(4, ceil_div(p.Sg, 16))));
      p.phases.push_back(std::move(ph));
    }
  return true;
}

/// Weights per group, phase and block of kCvCo big-side channels: [g][phase][cob][cs][tap][kCvCo].
/// The transposed weight is (Cs, Cb/groups, kh, kw).
std::vector<float> pack_t_weights(const ConvGeo& g, const TPlan& p, const float* w,
                                  std::vector<int64_t>& phase_base) {
  const int64_t kk = g.kk();
  int64_t per_group = 0;
  phase_base.clear();
  for (const TPhase& ph : p.phases) {
    phase_base.push_back(per_group);
    per_group += p.ncob * p.Cg * static_cast<int64_t>(ph.taps.size()) * kCvCo;
  }
  std::vector<float> out(static_cast<size_t>(g.groups * per_group), 0.0f);
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (size_t f = 0; f < p.phases.size(); ++f) {
      const TPhase& ph = p.phases[f];
      const int64_t nt = static_cast<int64_t>(ph.taps.size());
      float* base = out.data() + gi * per_group + phase_base[f];
      for (int64_t cs = 0; cs < p.Cg; ++cs)
        for (int64_t cb = 0; cb < p.Sg; ++cb) {
          const float* src = w + ((gi * p.Cg + cs) * p.Sg + cb) * kk;
          float* dst = base + ((cb / kCvCo) * p.Cg + cs) * nt * kCvCo + cb % kCvCo;
          for (int64_t t = 0; t < nt; ++t) dst[t * kCvCo] = src[ph.taps[static_cast<size_t>(t)]];
        }
    }
  phase_base.push_back(per_group);  // the last entry: floats per group
  return out;
}

}  // namespace

bool direct_transposed_suits(const ConvGeo& g) {
  if (g.kk() < 2) return false;
  TPlan p;
  return make_tplan(g, p);
}

void direct_transposed(const ConvGeo& g, const float* small, const float* w, const float* bias, float* big) {
  TPlan p;
  if (!make_tplan(g, p)) return;
  std::vector<int64_t> phase_base;
  const std::vector<float> wp = pack_t_weights(g, p, w, phase_base);
  const int64_t per_group = phase_base.back();
  const int64_t G = g.groups, nph = static_cast<int64_t>(p.phases.size());
  const int64_t per_image = G * nph * p.ncob, big_hw = g.Hb * g.Wb, small_hw = g.Hs * g.Ws;
  // Pixels of phases no tap reaches (a kernel smaller than the stride) are the bias alone.
  int64_t covered = 0;
  for (const TPhase& ph : p.phases) covered += ph.taps.empty() ? 0 : ph.HW;
  if (covered != big_hw)
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t c = 0; c < g.Cb; ++c)
        std::fill(big + (n * g.Cb + c) * big_hw, big + (n * g.Cb + c + 1) * big_hw, bias ? bias[c] : 0.0f);
  const int64_t macs = std::max<int64_t>(1, p.Cg * g.kk() * kCvCo * big_hw / std::max<int64_t>(1, nph));
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / macs);
  pool_parallel_for(0, g.N * per_image, grain, [&](int64_t begin, int64_t end) {  // Note [GEMM pool]
    thread_local std::vector<float> scratch;
    const size_t need = static_cast<size_t>(p.Cg * p.PSz);
    if (scratch.size() < need) scratch.resize(need);
    float* planes = scratch.data();
    int64_t loaded = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / per_image, rest = item % per_image;
      const int64_t gi = rest / (nph * p.ncob), f = (rest / p.ncob) % nph, cob = rest % p.ncob;
      const TPhase& ph = p.phases[static_cast<size_t>(f)];
      if (ph.taps.empty()) continue;
      const int64_t key = n * G + gi;
      if (key != loaded) {
        if (loaded < 0) std::memset(planes, 0, need * sizeof(float));  // same positions for every image
        const float* img = small + (n * g.Cs + gi * p.Cg) * small_hw;
        for (int64_t c = 0; c < p.Cg; ++c)
          for (int64_t h = 0; h < g.Hs; ++h)
            copy_row(img + (c * g.Hs + h) * g.Ws, planes + c * p.PSz + (h + p.PT) * p.Wp + p.PL, g.Ws);
        loaded = key;
      }
      const int64_t co0 = gi * p.Sg + cob * kCvCo, nco = std::min(kCvCo, p.Sg - cob * kCvCo);
      const int64_t nt = static_cast<int64_t>(ph.taps.size());
      const float* wb =
          wp.data() + gi * per_group + phase_base[static_cast<size_t>(f)] + cob * p.Cg * nt * kCvCo;
      run_classes(ph.classes, p.Cg, p.PSz, nt * kCvCo, planes, wb, bias ? bias + co0 : nullptr, nco,
                  big + (n * g.Cb + co0) * big_hw, big_hw);
    }
  });
}

bool direct_weight_grad_suits(const ConvGeo& g) {
  if (g.kk() < 2) return false;
  if (prefer_cv_wgrad(g)) {
    CvPlan cp;
    return make_cv_plan(g, cp);
  }
  Plan p;
  if (!make_plan(g, p)) return false;
  return g.Hs * g.Ws * 2 >= p.nvec * kLanes;
}

void direct_weight_grad(const ConvGeo& g, const float* big, const float* small, float* dw) {
  if (prefer_cv_wgrad(g)) {
    cv_weight_grad(g, big, small, dw);
    return;
  }
  Plan p;
  if (!make_plan(g, p)) return;
  const int64_t G = g.groups, kk = g.kk(), Cg = p.Cg, Sg = p.Sg, Cgk = Cg * kk;
  const int64_t wsize = g.Cs * Cgk, big_hw = g.Hb * g.Wb, small_hw = g.Hs * g.Ws;
  const int64_t img_planes = Cg * p.CS;                   // floats of one image's phase planes
  const int64_t img_dy = p.ncob * kCo * p.nvec * kLanes;  // floats of one image's flat gradient
  // Images per batch: enough flat vectors per reduction, planes within ~256 KiB.
  const int64_t want = ceil_div(48, p.nvec);
  const int64_t fit = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, img_planes));
  const int64_t B = std::max<int64_t>(1, std::min({want, fit, g.N}));
  std::fill(dw, dw + wsize, 0.0f);
  std::mutex mu;
  bool first = true;
  const int64_t macs = g.Cs * Cgk * p.nvec * kLanes;  // per image
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, macs));
  pool_parallel_for(0, g.N, grain, [&](int64_t n0, int64_t n1) {  // Note [GEMM pool]
    thread_local std::vector<float> scratch;
    const size_t per = static_cast<size_t>(img_planes + img_dy);
    const size_t need = static_cast<size_t>(B) * per + static_cast<size_t>(p.buf) + kLanes;
    if (scratch.size() < need) scratch.resize(need);
    // 64-byte aligned flat gradients (aligned loads), then the planes.
    float* base = scratch.data();
    float* dyf = base + ((64 - reinterpret_cast<uintptr_t>(base) % 64) % 64) / sizeof(float);
    float* planes = dyf + B * img_dy;
    std::vector<float> local(static_cast<size_t>(wsize), 0.0f);
    for (int64_t nb0 = n0; nb0 < n1; nb0 += B) {
      const int64_t nimg = std::min(B, n1 - nb0);
      for (int64_t gi = 0; gi < G; ++gi) {
        for (int64_t b = 0; b < nimg; ++b) {
          const int64_t n = nb0 + b;
          // Each image's planes; the last image's are followed by read slack (p.buf covers it).
          const bool zero = nb0 == n0 && gi == 0;  // first use of this slot in the call
          build_planes(g, p, big + (n * g.Cb + gi * Cg) * big_hw, planes + b * img_planes, zero);
          build_dy_flat(g, p, small + (n * g.Cs + gi * Sg) * small_hw, Sg, dyf + b * img_dy, zero);
        }
        for (int64_t cob = 0; cob < p.ncob; ++cob) {
          const int64_t nco = std::min(kCo, Sg - cob * kCo);
          const float* dcb = dyf + cob * kCo * p.nvec * kLanes;
          float* dwc = local.data() + (gi * Sg + cob * kCo) * Cgk;
          for (int64_t ci = 0; ci < Cg; ++ci) {
            const float* pc = planes + ci * p.CS;
            for (int64_t t0 = 0; t0 < kk; t0 += 3) {
              const int64_t* to = p.toff.data() + t0;
              float* d = dwc + ci * kk + t0;
              switch (std::min<int64_t>(3, kk - t0)) {
                case 3:
                  wgrad_block<3>(p, pc, img_planes, dcb, img_dy, nimg, to, nco, d, Cgk);
                  break;
                case 2:
                  wgrad_block<2>(p, pc, img_planes, dcb, img_dy, nimg, to, nco, d, Cgk);
                  break;
                default:
                  wgrad_block<1>(p, pc, img_planes, dcb, img_dy, nimg, to, nco, d, Cgk);
                  break;
              }
            }
          }
        }
      }
    }
    add_partial(mu, first, local, dw);
  });
}

bool direct_conv_suits(const ConvGeo& g) {
  if (prefer_cv(g)) {
    CvPlan cp;
    return make_cv_plan(g, cp);
  }
  Plan p;
  if (!make_plan(g, p)) return false;
  // Most of the computed lanes should be real outputs.
  return g.Hs * g.Ws * 2 >= p.nvecR * kLanes;
}

void direct_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small) {
  if (prefer_cv(g)) {
    cv_conv(g, big, w, bias, small);
    return;
  }
  Plan p;
  if (!make_plan(g, p)) return;
  const std::vector<float> wp = pack_weight_blocks(g, p.Cg, p.Sg, kCo, w);
  const int64_t G = g.groups, per_image = G * p.ncob, kk = g.kk();
  const int64_t HW = g.Hs * g.Ws, big_hw = g.Hb * g.Wb;
  const int64_t macs = p.Cg * kk * kCo * p.nvecR * kLanes;  // per item
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, macs));
  pool_parallel_for(0, g.N * per_image, grain, [&](int64_t begin, int64_t end) {  // Note [GEMM pool]
    thread_local std::vector<float> scratch;
    if (scratch.size() < static_cast<size_t>(p.buf)) scratch.resize(static_cast<size_t>(p.buf));
    float* planes = scratch.data();
    int64_t loaded = -1;  // (image, group) whose planes are in the scratch
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / per_image, rest = item % per_image;
      const int64_t gi = rest / p.ncob, cob = rest % p.ncob;
      const int64_t key = n * G + gi;
      if (key != loaded) {
        build_planes(g, p, big + (n * g.Cb + gi * p.Cg) * big_hw, planes, loaded < 0);
        loaded = key;
      }
      const int64_t co0 = gi * p.Sg + cob * kCo, nco = std::min(kCo, p.Sg - cob * kCo);
      const float* wb = wp.data() + (gi * p.ncob + cob) * p.Cg * kk * kCo;
      const float* bb = bias ? bias + co0 : nullptr;
      float* out = small + (n * g.Cs + co0) * HW;
      conv_blocks(g, p, planes, wb, bb, nco, out);
    }
  });
}

}  // namespace flambeau::cpu::conv_avx512
