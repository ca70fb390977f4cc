// Note [Direct convolution]
// A float32 forward convolution without im2col, for AVX-512 CPUs (conv.cpp
// runs it when conv_direct_stub has it; other CPUs and float64 keep
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
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "conv_direct_plan.h"
#include "cpu/linalg/gemm_pool.h"
#include "flambeau/parallel.h"
#include "settings.h"

namespace flambeau::cpu::conv_avx512 {
namespace {

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

}  // namespace

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
  std::vector<float> out(static_cast<size_t>(g.groups * ceil_div(Sg, blk) * Cg * g.kk() * blk));
  pack_weight_blocks(g, Cg, Sg, blk, w, out.data());
  return out;
}

void pack_weight_blocks(const ConvGeo& g, int64_t Cg, int64_t Sg, int64_t blk, const float* w, float* out) {
  const int64_t kk = g.kk(), ncob = ceil_div(Sg, blk);
  std::fill(out, out + g.groups * ncob * Cg * kk * blk, 0.0f);
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t co = 0; co < Sg; ++co) {
      const int64_t cob = co / blk, k = co % blk;
      const float* src = w + (gi * Sg + co) * Cg * kk;
      float* dst = out + ((gi * ncob + cob) * Cg * kk) * blk + k;
      for (int64_t t = 0; t < Cg * kk; ++t) dst[t * blk] = src[t];
    }
}

namespace {

/// One register block (Plan::Block) of kCo output channels of one image.
template <int V>
void conv_block(const Plan& p, const Plan::Block& blk, int64_t kk, int64_t HW, const float* planes,
                const float* wp, const __m512* b, int64_t nco, float* out, Epilogue epi) {
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
    if (epi.res || epi.relu) {  // Note [Packed convolution weight]: + residual, relu as relu's loop
      const __mmask16 keep = m == 0xFFFF ? m : head;
      const float* r = epi.res ? epi.res + blk.dst[v] : nullptr;
      for (int k = 0; k < kCo; ++k) {
        if (k >= nco) continue;
        __m512 a = m == 0xFFFF ? acc[k][v] : _mm512_maskz_compress_ps(m, acc[k][v]);
        if (r) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(keep, r + k * HW));
        if (epi.relu) a = _mm512_max_ps(_mm512_setzero_ps(), a);  // NaN, -0: a (maxps's second operand)
        _mm512_mask_storeu_ps(o + k * HW, keep, a);
      }
      continue;
    }
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
                 int64_t nco, float* out, Epilogue epi) {
  const int64_t kk = g.kk(), HW = g.Hs * g.Ws;
  __m512 b[kCo];
  for (int k = 0; k < kCo; ++k) b[k] = _mm512_set1_ps(bias && k < nco ? bias[k] : 0.0f);
  for (const Plan::Block& blk : p.blocks) {
    switch (blk.V) {
      case 3:
        conv_block<3>(p, blk, kk, HW, planes, wp, b, nco, out, epi);
        break;
      case 2:
        conv_block<2>(p, blk, kk, HW, planes, wp, b, nco, out, epi);
        break;
      default:
        conv_block<1>(p, blk, kk, HW, planes, wp, b, nco, out, epi);
        break;
    }
  }
}

}  // namespace

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

bool direct_conv_nhwc_suits(const ConvGeo& g) {
  CvPlan cp;
  return prefer_cv(g) && make_cv_plan(g, cp);
}

void direct_conv_nhwc(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small) {
  cv_conv(g, big, w, bias, small, true);
}

namespace {

/// direct_conv on the weight packed in blocks of kCo (wp) with an epilogue (Note [Packed convolution
/// weight]).
void flat_conv(const ConvGeo& g, const Plan& p, const float* big, const float* wp, const float* bias,
               float* small, const float* residual, bool relu) {
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
      const float* wb = wp + (gi * p.ncob + cob) * p.Cg * kk * kCo;
      const float* bb = bias ? bias + co0 : nullptr;
      float* out = small + (n * g.Cs + co0) * HW;
      conv_blocks(g, p, planes, wb, bb, nco, out,
                  Epilogue{residual ? residual + (n * g.Cs + co0) * HW : nullptr, relu});
    }
  });
}

}  // namespace

void direct_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small) {
  if (prefer_cv(g)) {
    cv_conv(g, big, w, bias, small);
    return;
  }
  Plan p;
  if (!make_plan(g, p)) return;
  const std::vector<float> wp = pack_weight_blocks(g, p.Cg, p.Sg, kCo, w);
  flat_conv(g, p, big, wp.data(), bias, small, nullptr, false);
}

// Note [Packed convolution weight]
// A caller that runs one float32 convolution many times on one weight (fb.compile's eval graphs, a
// batch norm folded in) packs the weight once (pack_weight: the layout direct_conv packs into on every
// call, blocks of kCo or, for the channel-vectorized kernel, kCvCo output channels) and calls
// direct_conv_packed, which also applies an epilogue to each output as it stores it: the residual of a
// ResNet block added, then a relu. The sums are direct_conv's (the same kernel and order), the addition
// and the relu are add's and relu's on the stored value, so the results are the separate ops' bits.
int64_t packed_weight_floats(const ConvGeo& g) {
  const int64_t blk = prefer_cv(g) ? kCvCo : kCo, Cg = g.Cb / g.groups, Sg = g.Cs / g.groups;
  return g.groups * ceil_div(Sg, blk) * Cg * g.kk() * blk;
}

void pack_weight(const ConvGeo& g, const float* w, float* packed) {
  pack_weight_blocks(g, g.Cb / g.groups, g.Cs / g.groups, prefer_cv(g) ? kCvCo : kCo, w, packed);
}

void direct_conv_packed(const ConvGeo& g, const float* big, const float* packed, const float* bias,
                        float* small, const float* residual, bool relu) {
  if (prefer_cv(g)) {
    cv_conv(g, big, nullptr, bias, small, false, packed, residual, relu);
    return;
  }
  Plan p;
  if (!make_plan(g, p)) return;
  flat_conv(g, p, big, packed, bias, small, residual, relu);
}

}  // namespace flambeau::cpu::conv_avx512

namespace flambeau::cpu {
namespace {
void fill_direct_kernels(ConvDirectKernels& t) {
  t = {conv_avx512::direct_conv_suits,        conv_avx512::direct_conv,
       conv_avx512::direct_weight_grad_suits, conv_avx512::direct_weight_grad,
       conv_avx512::direct_transposed_suits,  conv_avx512::direct_transposed,
       conv_avx512::direct_conv_nhwc_suits,   conv_avx512::direct_conv_nhwc,
       conv_avx512::packed_weight_floats,     conv_avx512::pack_weight,
       conv_avx512::direct_conv_packed};
}
}  // namespace
FB_REGISTER_DISPATCH(conv_direct_stub, avx512, (&table_of<ConvDirectKernels, fill_direct_kernels>));
}  // namespace flambeau::cpu
