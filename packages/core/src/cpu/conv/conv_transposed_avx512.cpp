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

#include "conv_direct_plan.h"
#include "cpu/linalg/gemm_pool.h"
#include "flambeau/parallel.h"
#include "settings.h"

namespace flambeau::cpu::conv_avx512 {
namespace {

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

}  // namespace flambeau::cpu::conv_avx512
