// The channel-vectorized direct convolution for AVX-512 (Note [Direct convolution], last part, in
// conv_direct_avx512.cpp) and its pixel classes (Note [Pixel classes] in conv_direct_plan.h).
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

}  // namespace

std::vector<PixelClass> ClassBuilder::finish(int CV) {
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

namespace {

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

}  // namespace

bool make_cv_plan(const ConvGeo& g, CvPlan& p, bool classes) {
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

/// The same from a channels-last image: pixels ld floats apart, the group's Cg channels in each.
void build_padded_nhwc(const ConvGeo& g, const CvPlan& p, const float* img, int64_t ld, float* buf, bool zero) {
  if (zero) std::memset(buf, 0, static_cast<size_t>(p.Cg * p.PSz) * sizeof(float));
  for (int64_t h = 0; h < g.Hb; ++h)
    for (int64_t w = 0; w < g.Wb; ++w) {
      const float* px = img + (h * g.Wb + w) * ld;
      float* dst = buf + (h + g.ph) * p.Wp + g.pw + w;
      for (int64_t c = 0; c < p.Cg; ++c) dst[c * p.PSz] = px[c];
    }
}

namespace {

/// CV vectors of 16 output channels x P pixels [q0, q0 + np) of one class in
/// registers (Note [Pixel classes]), summed over Cg input channels (planes PSz
/// floats apart, weights wci floats apart) and the class's taps: per (channel,
/// tap) CV weight vectors and P broadcast pixels. Stored through a small tile at
/// the pixels' output indices, channels out_hw apart, pixels out_ps apart (1: NCHW; channels-last:
/// out_hw 1 and out_ps the output's channels).
template <int CV, int P>
void gather_block(const PixelClass& pc, int64_t q0, int64_t np, int64_t Cg, int64_t PSz, int64_t wci,
                  const float* planes, const float* wp, const float* bpad, int64_t nco, float* out,
                  int64_t out_hw, int64_t out_ps, Epilogue epi) {
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
  const int64_t* oi = pc.oidx.data() + q0;
  const __m512 zero = _mm512_setzero_ps();
  if (epi.res && out_hw != 1) {  // Note [Packed convolution weight]: + residual, then the relu (NaN, -0 kept)
#pragma GCC unroll 24
    for (int k = 0; k < P; ++k)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) _mm512_store_ps(&tile[k][16 * c], acc[k][c]);
    for (int64_t co = 0; co < nco; ++co) {
      const float* r = epi.res + co * out_hw;
      for (int64_t k = 0; k < np; ++k) tile[k][co] += r[oi[k] * out_ps];
    }
    if (epi.relu)
      for (int64_t k = 0; k < np; ++k)
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c)
          _mm512_store_ps(&tile[k][16 * c], _mm512_max_ps(zero, _mm512_load_ps(&tile[k][16 * c])));
  } else {
    const bool relu = epi.relu && out_hw != 1;  // maxps(0, a): a where a is NaN or -0, as relu's loop
#pragma GCC unroll 24
    for (int k = 0; k < P; ++k)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c)
        _mm512_store_ps(&tile[k][16 * c], relu ? _mm512_max_ps(zero, acc[k][c]) : acc[k][c]);
  }
  if (out_hw == 1) {  // channels-last: each pixel's channels are contiguous
    for (int64_t k = 0; k < np; ++k)
      std::memcpy(out + oi[k] * out_ps, tile[k], static_cast<size_t>(nco) * sizeof(float));
    return;
  }
  for (int64_t co = 0; co < nco; ++co) {
    float* o = out + co * out_hw;
    for (int64_t k = 0; k < np; ++k) o[oi[k] * out_ps] = tile[k][co];
  }
}

/// The pixels [q0, HW) of one class in blocks of P; a remainder of at most P/2 in smaller blocks.
template <int CV, int P>
void class_blocks(const PixelClass& pc, int64_t q0, int64_t Cg, int64_t PSz, int64_t wci, const float* planes,
                  const float* wp, const float* bpad, int64_t nco, float* out, int64_t out_hw, int64_t out_ps,
                  Epilogue epi) {
  for (; q0 + P <= pc.HW; q0 += P)
    gather_block<CV, P>(pc, q0, P, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw, out_ps, epi);
  const int64_t r = pc.HW - q0;
  if (r <= 0) return;
  if constexpr (P > 1) {
    if (r <= P / 2) {
      class_blocks<CV, P / 2>(pc, q0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw, out_ps, epi);
      return;
    }
  }
  gather_block<CV, P>(pc, q0, r, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw, out_ps, epi);
}

}  // namespace

/// Every class of pixels for nco (<= kCvCo) output channels: bias (may be null) plus the gathered sums.
void run_classes(const std::vector<PixelClass>& classes, int64_t Cg, int64_t PSz, int64_t wci,
                 const float* planes, const float* wp, const float* bias, int64_t nco, float* out,
                 int64_t out_hw, int64_t out_ps, Epilogue epi) {
  alignas(64) float bpad[kCvCo];
  for (int64_t k = 0; k < kCvCo; ++k) bpad[k] = bias && k < nco ? bias[k] : 0.0f;
  for (const PixelClass& pc : classes) {
    switch ((nco + 15) / 16) {
      case 1:
        class_blocks<1, 24>(pc, 0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw, out_ps, epi);
        break;
      case 2:
        class_blocks<2, 12>(pc, 0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw, out_ps, epi);
        break;
      case 3:
        class_blocks<3, 8>(pc, 0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw, out_ps, epi);
        break;
      default:
        class_blocks<4, 6>(pc, 0, Cg, PSz, wci, planes, wp, bpad, nco, out, out_hw, out_ps, epi);
        break;
    }
  }
}

void cv_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small, bool nhwc,
             const float* packed, const float* residual, bool relu) {
  CvPlan p;
  if (!make_cv_plan(g, p, true)) return;
  std::vector<float> own;
  if (!packed) own = pack_weight_blocks(g, p.Cg, p.Sg, kCvCo, w);
  const float* wp = packed ? packed : own.data();
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
        if (nhwc)
          build_padded_nhwc(g, p, big + n * big_hw * g.Cb + gi * p.Cg, g.Cb, planes, loaded < 0);
        else
          build_padded(g, p, big + (n * g.Cb + gi * p.Cg) * big_hw, planes, loaded < 0);
        loaded = key;
      }
      const int64_t co0 = gi * p.Sg + cob * kCvCo, nco = std::min(kCvCo, p.Sg - cob * kCvCo);
      const float* wb = wp + (gi * p.ncob + cob) * p.Cg * kk * kCvCo;
      const float* bb = bias ? bias + co0 : nullptr;
      if (nhwc)  // Note [Direct convolution], channels-last: each pixel's output channels in a row
        run_classes(p.classes, p.Cg, p.PSz, kk * kCvCo, planes, wb, bb, nco, small + n * p.HW * g.Cs + co0, 1, g.Cs);
      else
        run_classes(p.classes, p.Cg, p.PSz, kk * kCvCo, planes, wb, bb, nco, small + (n * g.Cs + co0) * p.HW,
                    p.HW, 1, Epilogue{residual ? residual + (n * g.Cs + co0) * p.HW : nullptr, relu});
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

}  // namespace flambeau::cpu::conv_avx512
