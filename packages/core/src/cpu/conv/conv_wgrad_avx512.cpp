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
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "conv_direct_plan.h"
#include "cpu/linalg/gemm_pool.h"
#include "cpu/ordered_partials.h"
#include "flambeau/parallel.h"
#include "settings.h"

namespace flambeau::cpu::conv_avx512 {
namespace {

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
  const int64_t macs = g.Cs * Cgk * p.HW;  // per image
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, macs));
  // Note [GEMM pool]; each slice of images sums into its own buffer (Note [Partial sums in slice order]).
  sum_in_slice_order(g.N, grain, wsize, dw, /*on_pool=*/true, [&](int64_t n0, int64_t n1, float* local) {
    thread_local std::vector<float> scratch;
    const size_t need = static_cast<size_t>(B * (img_planes + img_dy));
    if (scratch.size() < need) scratch.resize(need);
    float* dyt = scratch.data();
    float* planes = dyt + B * img_dy;
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
          float* out = local + (gi * Sg + co0) * Cgk;
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
  });
}

}  // namespace

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
  const int64_t macs = g.Cs * Cgk * p.nvec * kLanes;  // per image
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, macs));
  // Note [GEMM pool]; each slice of images sums into its own buffer (Note [Partial sums in slice order]).
  sum_in_slice_order(g.N, grain, wsize, dw, /*on_pool=*/true, [&](int64_t n0, int64_t n1, float* local) {
    thread_local std::vector<float> scratch;
    const size_t per = static_cast<size_t>(img_planes + img_dy);
    const size_t need = static_cast<size_t>(B) * per + static_cast<size_t>(p.buf) + kLanes;
    if (scratch.size() < need) scratch.resize(need);
    // 64-byte aligned flat gradients (aligned loads), then the planes.
    float* base = scratch.data();
    float* dyf = base + ((64 - reinterpret_cast<uintptr_t>(base) % 64) % 64) / sizeof(float);
    float* planes = dyf + B * img_dy;
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
          float* dwc = local + (gi * Sg + cob * kCo) * Cgk;
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
  });
}

}  // namespace flambeau::cpu::conv_avx512
