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
// channel pairs in float32, the bias added, rounded to bfloat16 once (a last panel of at most 16
// outputs: 16 channels x 16 outputs); the extra columns are squeezed out when the tile's rows are
// copied out.
//
// Transposed convolutions (the input gradient of a convolution): big y + padding = small o * stride
// + tap i * dilation (per dim). The outputs of one residue r = (y + padding) % stride take only the
// taps with i * dilation % stride == r, reading small o = Z - i * dilation / stride for
// y = Z * stride + r - padding: per residue, a stride-1 correlation of the small image (zero-padded
// in front by the largest i * dilation / stride) with its subset of the taps, each a fixed flat
// offset. So the same planes (one, of channel pairs), tiles and weight packing run stride x stride
// classes of outputs, written back with the stride; no col2im, no flipped copy of the weights.
//
// Weight gradient: dw^T (tap, input channel; output channel) = sum over q of the input window
// (phase planes per channel, not interleaved: [phase][channel][flat q], so a row of the tile is a
// channel read from flat position off(tap), and two consecutive q are one 32-bit broadcast) times
// the output gradient, stored [q pair][output channel][2] with zeros on the extra columns (which
// is what keeps them out of the sum: an infinite input value there would make 0 * inf = NaN where
// the exact sum is +-inf). Tiles of 16 rows x 16 output channels or 8 rows x 32 accumulate in
// float32 over the q pairs of an image and into float32 partial sums over images (Note [Partial
// sums in slice order]); the sum is transposed and rounded to bfloat16 once.
//
// Threads: the forward splits images over threads (each building its image's planes in its own
// scratch), the weight gradient slices of images.
// GCC 12's AVX-512 shuffle intrinsics pass an "undefined" vector that it then warns about once
// inlined (GCC bug 105593); the warnings point into the header, where they are switched off.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstring>
#include <vector>

#include "conv_bf16.h"
#include "cpu/linalg/transpose_words_avx512.h"
#include "cpu/ordered_partials.h"
#include "flambeau/error.h"
#include "flambeau/half.h"
#include "flambeau/parallel.h"

namespace flambeau::cpu::conv_bf16 {
namespace {

#define FB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

constexpr int64_t kRows = 8;   // accumulator rows of a tile
constexpr int64_t kCols = 32;  // outputs per tile (2 zmm of 16 float32 lanes)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// a * b, raising on int64 overflow (the scratch sizes).
int64_t mul_checked(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(a, b, &r), "[", op, "] the scratch size overflows");
  return r;
}

__mmask16 lanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(count, 0)) - 1u);
}

/// Bits in the even (odd: shifted by one) positions of the lowest 2 * count of 32 mask bits.
__mmask32 even_lanes(int64_t count) {
  const uint32_t low = count >= 16 ? 0xFFFFFFFFu : (1u << (2 * std::max<int64_t>(count, 0))) - 1u;
  return __mmask32(low & 0x55555555u);
}

/// d[k] = s0[k * sw] | s1[k * sw] << 16 (s1 null: no high half), k < len: a plane row of channel pairs
/// (Note [bfloat16 convolution]). Strides 1 and 2 in vectors, whose masked loads read no value past
/// the last pixel s[(len - 1) * sw].
FB_BF16_TARGET void interleave_pair(uint32_t* d, const uint16_t* s0, const uint16_t* s1, int64_t sw,
                                    int64_t len) {
  int64_t k = 0;
  if (sw == 1) {
    for (; k < len; k += 16) {
      const __mmask16 m = lanes(len - k);
      __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s0 + k));
      if (s1)
        v = _mm512_or_si512(
            v, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s1 + k)), 16));
      _mm512_mask_storeu_epi32(d + k, m, v);
    }
  } else if (sw == 2) {
    // 32 values hold 16 pixels at the even positions: the low halves of 16 words.
    const __m512i low = _mm512_set1_epi32(0xFFFF);
    for (; k < len; k += 16) {
      const int64_t n = std::min<int64_t>(16, len - k);
      const __mmask32 m = __mmask32((1u << (2 * n - 1)) - 1u);  // pixels 2i, i < n
      __m512i v = _mm512_and_si512(_mm512_maskz_loadu_epi16(m, s0 + 2 * k), low);
      if (s1) v = _mm512_or_si512(v, _mm512_slli_epi32(_mm512_maskz_loadu_epi16(m, s1 + 2 * k), 16));
      _mm512_mask_storeu_epi32(d + k, lanes(n), v);
    }
  } else {
    for (; k < len; ++k) d[k] = uint32_t(s0[k * sw]) | (s1 ? uint32_t(s1[k * sw]) << 16 : 0u);
  }
}

/// d[k] = s[k], k < n: the short rows (tens of values) the kernels move, in masked vectors; std::memcpy's
/// call and size dispatch cost more than the copy at these lengths.
FB_BF16_TARGET void copy_row(uint16_t* d, const uint16_t* s, int64_t n) {
  for (int64_t k = 0; k < n; k += 32) {
    const int64_t left = n - k;
    const __mmask32 m = left >= 32 ? __mmask32(0xFFFFFFFFu) : __mmask32((1u << left) - 1u);
    _mm512_mask_storeu_epi16(d + k, m, _mm512_maskz_loadu_epi16(m, s + k));
  }
}

/// d[k] = s[k * sw], k < len (a weight-gradient plane row); stride 2 in vectors.
FB_BF16_TARGET void take_strided(uint16_t* d, const uint16_t* s, int64_t sw, int64_t len) {
  int64_t k = 0;
  if (sw == 2) {
    for (; k < len; k += 16) {
      const int64_t n = std::min<int64_t>(16, len - k);
      const __mmask32 m = __mmask32((1u << (2 * n - 1)) - 1u);  // pixels 2i, i < n
      const __m512i v = _mm512_maskz_loadu_epi16(m, s + 2 * k);
      _mm256_mask_storeu_epi16(d + k, lanes(n), _mm512_cvtepi32_epi16(v));
    }
  }
  for (; k < len; ++k) d[k] = s[k * sw];
}

/// d[X * sx] = src[X] (src null: v), X < n: the outputs of one class in an image row. Stride 2 in
/// vectors: 16 values spread to the even 16-bit positions of 32, stored under a mask of those.
FB_BF16_TARGET void put_strided(uint16_t* d, int64_t sx, const uint16_t* src, uint16_t v, int64_t n) {
  int64_t X = 0;
  if (sx == 2) {
    const __m512i fill = _mm512_set1_epi32(v);
    for (; X < n; X += 16) {
      const __mmask16 m = lanes(n - X);
      const __m512i w = src ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src + X)) : fill;
      _mm512_mask_storeu_epi16(d + 2 * X, even_lanes(n - X), w);
    }
  }
  for (; X < n; ++X) d[X * sx] = src ? src[X] : v;
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

/// tile<R, NV, ACC> for rows = 1..kRows, or 1..2 * kRows with one vector (16 accumulators either way).
template <int NV, bool ACC>
FB_BF16_TARGET void tile_rows(int64_t rows, int64_t taps, int64_t kp, const uint16_t* a, const int64_t* arow,
                              int64_t a_tap, const uint16_t* b, const int64_t* boff, int64_t ldb, void* c,
                              int64_t ldc, const float* bias, const __mmask16* m) {
  switch (rows) {
#define FB_ROWS(R)                                                             \
  case R:                                                                      \
    tile<R, NV, ACC>(taps, kp, a, arow, a_tap, b, boff, ldb, c, ldc, bias, m); \
    break;
    FB_ROWS(1) FB_ROWS(2) FB_ROWS(3) FB_ROWS(4) FB_ROWS(5) FB_ROWS(6) FB_ROWS(7) FB_ROWS(8) default : break;
  }
  if constexpr (NV == 1) {
    switch (rows) {
      FB_ROWS(9)
      FB_ROWS(10) FB_ROWS(11) FB_ROWS(12) FB_ROWS(13) FB_ROWS(14) FB_ROWS(15) FB_ROWS(16) default : break;
    }
  }
#undef FB_ROWS
}

/// The phase geometry of Note [bfloat16 convolution] for a forward geometry g.
struct Phases {
  int64_t Hq, Wq, P;  // phase plane height and width, number of phases some tap reads
  int64_t Q;          // flat outputs: Hs * Wq
  int64_t taps;
  std::vector<int64_t> phase, off;  // per tap (i, j): its phase's plane and flat offset
  std::vector<int64_t> slot;        // per phase (of sh * sw): its plane, -1 when no tap reads it
  int64_t max_off = 0;
  Phases(const ConvGeo& g) {
    const int64_t Hp = g.Hb + 2 * g.ph, Wp = g.Wb + 2 * g.pw;
    Hq = ceil_div(Hp, g.sh), Wq = ceil_div(Wp, g.sw), P = 0;
    Q = g.Hs * Wq;
    taps = g.kk();
    slot.assign(static_cast<size_t>(g.sh * g.sw), -1);
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t di = i * g.dh, dj = j * g.dw;
        int64_t& sl = slot[static_cast<size_t>((di % g.sh) * g.sw + dj % g.sw)];
        if (sl < 0) sl = P++;
        phase.push_back(sl);
        off.push_back((di / g.sh) * Wq + dj / g.sw);
        max_off = std::max(max_off, off.back());
      }
  }
  /// Flat positions per (phase, channel) plane: the plane's pixels and every read past them.
  int64_t plane_size(int64_t reach) const { return std::max(Hq * Wq, max_off + reach) + 32; }
};

/// For each phase plane (Hq x Wq) of the image pg.Hb x pg.Wb zero-padded by (pg.ph, pg.pw) and split
/// into (pg.sh, pg.sw) stride phases that has a plane (slot[phase] >= 0), and each plane row:
/// put(plane, flat index of the row's first
/// pixel with an image pixel, image row, image column, pixel count) (the columns are pg.sw apart in
/// the image); the rest of the planes is zero (the caller zeroes the buffer).
template <class Put>
void for_phase_pixels(const ConvGeo& pg, int64_t Hq, int64_t Wq, const std::vector<int64_t>& slot,
                      const Put& put) {
  for (int64_t a = 0; a < pg.sh; ++a)
    for (int64_t b = 0; b < pg.sw; ++b) {
      const int64_t phase = slot[static_cast<size_t>(a * pg.sw + b)];
      if (phase < 0) continue;
      // Columns c of the plane with an image column: 0 <= c * sw + b - pw < Wb.
      int64_t c0 = 0;
      while (c0 < Wq && c0 * pg.sw + b - pg.pw < 0) ++c0;
      int64_t c1 = c0;
      while (c1 < Wq && c1 * pg.sw + b - pg.pw < pg.Wb) ++c1;
      for (int64_t r = 0; r < Hq; ++r) {
        const int64_t y = r * pg.sh + a - pg.ph;
        if (y < 0 || y >= pg.Hb || c0 >= c1) continue;
        put(phase, r * Wq + c0, y, c0 * pg.sw + b - pg.pw, c1 - c0);
      }
    }
}

template <class T>
T* scratch(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

/// Outputs (y0 + Y * sy, x0 + X * sx), Y < nY, X < nX, of one class: the sum of `taps` taps (from
/// tap0 in the plan's order), computed over the flat domain Y * Wq + X of the planes.
struct OutClass {
  int64_t tap0, taps, nY, nX, y0, sy, x0, sx;
};

/// A convolution on the kernel: phase planes of the input image (pg: the image's size, its zero
/// padding and stride phases; planes of Hq x Wq), the taps (plane and flat offset; the weight tap
/// each reads) and the classes of outputs.
struct Plan {
  ConvGeo pg;
  int64_t Hq = 0, Wq = 0, P = 1;
  std::vector<int64_t> phase, off, wtap, slot{0};
  std::vector<OutClass> classes;
  int64_t N = 0, groups = 1, Cin_g = 0, Cout_g = 0, Hout = 0, Wout = 0;
};

/// The plan of a forward convolution: one class, the taps of Note [bfloat16 convolution].
Plan forward_plan(const ConvGeo& g) {
  Plan pl;
  const Phases ph(g);
  pl.pg = g, pl.Hq = ph.Hq, pl.Wq = ph.Wq, pl.P = ph.P, pl.slot = ph.slot;
  pl.phase = ph.phase, pl.off = ph.off;
  for (int64_t t = 0; t < g.kk(); ++t) pl.wtap.push_back(t);
  pl.classes.push_back({0, g.kk(), g.Hs, g.Ws, 0, 1, 0, 1});
  pl.N = g.N, pl.groups = g.groups, pl.Cin_g = g.Cb / g.groups, pl.Cout_g = g.Cs / g.groups;
  pl.Hout = g.Hs, pl.Wout = g.Ws;
  return pl;
}

/// One dim of a transposed convolution (small size ns, big size nb): big y + p = o * s + i * d. The
/// outputs y with (y + p) % s == r take the taps i with i * d % s == r, reading small o = Z - e_i
/// (e_i = i * d / s) for y = Z * s + r - p: per residue r, its taps, first Z (Z0), first y (y0) and
/// count (n); E = the largest e_i, the small image's zero padding in front.
struct TransposedDim {
  int64_t E = 0, plane = 0;
  std::vector<std::vector<int64_t>> taps;
  std::vector<int64_t> Z0, y0, n;
  TransposedDim(int64_t ns, int64_t nb, int64_t k, int64_t s, int64_t p, int64_t d) {
    E = (k - 1) * d / s;
    plane = E + ns;
    for (int64_t r = 0; r < s; ++r) {
      std::vector<int64_t> t;
      for (int64_t i = 0; i < k; ++i)
        if (i * d % s == r) t.push_back(i);
      taps.push_back(t);
      const int64_t z0 = r >= p ? 0 : (p - r + s - 1) / s, first = z0 * s + r - p;
      Z0.push_back(z0), y0.push_back(first), n.push_back(first < nb ? (nb - 1 - first) / s + 1 : 0);
      plane = std::max(plane, n.back() + z0 + E);
    }
  }
  /// The plane position read by output Z' = 0 of residue r through tap i.
  int64_t start(int64_t r, int64_t i, int64_t d, int64_t s) const { return Z0[r] + E - i * d / s; }
};

/// The plan of a transposed convolution g (big = output): one class per output residue (r_h, r_w),
/// each a stride-1 correlation of the small image padded by (E_h, E_w) in front.
Plan transposed_plan(const ConvGeo& g) {
  Plan pl;
  const TransposedDim dy(g.Hs, g.Hb, g.kh, g.sh, g.ph, g.dh), dx(g.Ws, g.Wb, g.kw, g.sw, g.pw, g.dw);
  pl.pg.Hb = g.Hs, pl.pg.Wb = g.Ws, pl.pg.ph = dy.E, pl.pg.pw = dx.E;
  pl.Hq = dy.plane, pl.Wq = dx.plane;
  for (int64_t ry = 0; ry < g.sh; ++ry)
    for (int64_t rx = 0; rx < g.sw; ++rx) {
      if (dy.n[ry] == 0 || dx.n[rx] == 0) continue;
      const int64_t tap0 = static_cast<int64_t>(pl.off.size());
      for (int64_t i : dy.taps[ry])
        for (int64_t j : dx.taps[rx]) {
          pl.phase.push_back(0);
          pl.off.push_back(dy.start(ry, i, g.dh, g.sh) * pl.Wq + dx.start(rx, j, g.dw, g.sw));
          pl.wtap.push_back(i * g.kw + j);
        }
      const int64_t taps = static_cast<int64_t>(pl.off.size()) - tap0;
      pl.classes.push_back({tap0, taps, dy.n[ry], dx.n[rx], dy.y0[ry], g.sh, dx.y0[rx], g.sw});
    }
  pl.N = g.N, pl.groups = g.groups, pl.Cin_g = g.Cs / g.groups, pl.Cout_g = g.Cb / g.groups;
  pl.Hout = g.Hb, pl.Wout = g.Wb;
  return pl;
}

/// Runs a plan: out (N, groups * Cout_g, Hout, Wout) from in (N, groups * Cin_g, pg.Hb, pg.Wb) and
/// the packed weights wp ([group][out channel][plan tap][channel pair][2]), + bias (may be null).
FB_BF16_TARGET void run(const Plan& pl, const uint16_t* in, const uint16_t* wp, const float* bias,
                        uint16_t* out) {
  const char* op = "convolution";
  const int64_t G = pl.groups, Cin_g = pl.Cin_g, Cout_g = pl.Cout_g, CP = ceil_div(Cin_g, 2);
  const int64_t P = pl.P, T = static_cast<int64_t>(pl.off.size());
  int64_t Qpan = 0, max_off = 0;
  for (const OutClass& c : pl.classes)
    Qpan = std::max(Qpan, ceil_div(mul_checked(c.nY, pl.Wq, op), kCols) * kCols);
  for (int64_t o : pl.off) max_off = std::max(max_off, o);
  const int64_t PS = std::max(mul_checked(pl.Hq, pl.Wq, op), max_off + Qpan) + 32;  // words per plane
  const int64_t words = mul_checked(mul_checked(P, CP, op), PS, op);
  mul_checked(Cout_g, Qpan, op);
  const int64_t a_tap = 2 * CP, lda = T * a_tap;
  const int64_t HWin = pl.pg.Hb * pl.pg.Wb, HWout = pl.Hout * pl.Wout;
  // Per tap, in uint16 units: its plane's base + its flat offset, channel pairs interleaved.
  std::vector<int64_t> boff(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) boff[static_cast<size_t>(t)] = 2 * (pl.phase[t] * CP * PS + pl.off[t]);
  const __mmask16 full[2] = {0xFFFF, 0xFFFF};
  int64_t arow[2 * kRows];
  for (int64_t r = 0; r < 2 * kRows; ++r) arow[r] = r * lda;
  const int64_t sw = pl.pg.sw, Win = pl.pg.Wb;
  const bool zero_classes =
      std::any_of(pl.classes.begin(), pl.classes.end(), [](const OutClass& c) { return c.taps == 0; });
  parallel_for(0, pl.N * G, 1, [&](int64_t i0, int64_t i1) {
    thread_local std::vector<uint32_t> planes_buf;
    thread_local std::vector<uint16_t> tmp_buf;
    uint32_t* planes = scratch(planes_buf, words);
    uint16_t* tmp = scratch(tmp_buf, Cout_g * Qpan);
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t n = item / G, gi = item % G;
      const uint16_t* x = in + (n * G + gi) * Cin_g * HWin;
      std::memset(planes, 0, static_cast<size_t>(words) * sizeof(uint32_t));
      for_phase_pixels(pl.pg, pl.Hq, pl.Wq, pl.slot,
                       [&](int64_t phase, int64_t dst, int64_t y, int64_t x0, int64_t len) {
                         for (int64_t cp = 0; cp < CP; ++cp) {
                           uint32_t* d = planes + (phase * CP + cp) * PS + dst;
                           const uint16_t* s0 = x + (2 * cp) * HWin + y * Win + x0;
                           interleave_pair(d, s0, 2 * cp + 1 < Cin_g ? s0 + HWin : nullptr, sw, len);
                         }
                       });
      const auto* b = reinterpret_cast<const uint16_t*>(planes);
      const float* bg = bias ? bias + gi * Cout_g : nullptr;
      uint16_t* y = out + (n * G + gi) * Cout_g * HWout;
      // Outputs no tap reaches are zero without a bias: one fill of the image (the other classes write
      // over it) instead of their strided stores.
      if (!bg && zero_classes) std::memset(y, 0, static_cast<size_t>(Cout_g * HWout) * sizeof(uint16_t));
      for (const OutClass& c : pl.classes) {
        if (c.taps == 0 && !bg) continue;
        if (c.taps == 0) {  // no tap reaches these outputs (a stride above the dilated kernel): the bias
          for (int64_t o = 0; o < Cout_g; ++o) {
            const uint16_t v = bg ? detail::fp32_to_bf16_bits(bg[o]) : uint16_t{0};
            for (int64_t Y = 0; Y < c.nY; ++Y)
              put_strided(y + o * HWout + (c.y0 + Y * c.sy) * pl.Wout + c.x0, c.sx, nullptr, v, c.nX);
          }
          continue;
        }
        const int64_t Q = c.nY * pl.Wq, panels = ceil_div(Q, kCols);
        const uint16_t* w = wp + gi * Cout_g * lda + c.tap0 * a_tap;
        for (int64_t pn = 0; pn < panels; ++pn) {
          const uint16_t* bp = b + 2 * pn * kCols;
          // A last panel of at most 16 outputs (small images: 8x8 gives Q = 80) takes one vector by 16 rows.
          const bool half = Q - pn * kCols <= 16;
          const int64_t step = half ? 2 * kRows : kRows;
          for (int64_t r = 0; r < Cout_g; r += step) {
            const int64_t rows = std::min(step, Cout_g - r);
            if (half)
              tile_rows<1, false>(rows, c.taps, CP, w + r * lda, arow, a_tap, bp, boff.data() + c.tap0,
                                  2 * PS, tmp + r * Qpan + pn * kCols, Qpan, bg ? bg + r : nullptr, full);
            else
              tile_rows<2, false>(rows, c.taps, CP, w + r * lda, arow, a_tap, bp, boff.data() + c.tap0,
                                  2 * PS, tmp + r * Qpan + pn * kCols, Qpan, bg ? bg + r : nullptr, full);
          }
        }
        // The class's outputs: the valid columns of each flat row, to their place in the image.
        for (int64_t o = 0; o < Cout_g; ++o)
          for (int64_t Y = 0; Y < c.nY; ++Y) {
            const uint16_t* src = tmp + o * Qpan + Y * pl.Wq;
            uint16_t* dst = y + o * HWout + (c.y0 + Y * c.sy) * pl.Wout + c.x0;
            if (c.sx == 1)
              copy_row(dst, src, c.nX);
            else
              put_strided(dst, c.sx, src, 0, c.nX);
          }
      }
    }
  });
}

/// wp[gi][o][t][cp][2] = w(gi, o, c = 2cp (+1), the weight tap of plan tap t), zero past Cin_g;
/// `at(gi, o, c, tap)` reads one weight.
template <class At>
std::vector<uint16_t> pack_weights(const Plan& pl, const At& at) {
  const int64_t G = pl.groups, CP = ceil_div(pl.Cin_g, 2), T = static_cast<int64_t>(pl.wtap.size());
  std::vector<uint16_t> wp(static_cast<size_t>(G * pl.Cout_g * T * CP * 2), 0);
  for (int64_t gi = 0; gi < G; ++gi)
    for (int64_t o = 0; o < pl.Cout_g; ++o)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < pl.Cin_g; ++c)
          wp[static_cast<size_t>((((gi * pl.Cout_g + o) * T + t) * CP) * 2 + c)] = at(gi, o, c, pl.wtap[t]);
  return wp;
}

std::vector<float> bias_f32(const uint16_t* bias, int64_t n) {
  std::vector<float> b;
  if (bias)
    for (int64_t i = 0; i < n; ++i) b.push_back(detail::bf16_bits_to_fp32(bias[i]));
  return b;
}

void forward(const ConvGeo& g, const uint16_t* big, const uint16_t* w, const uint16_t* bias,
             uint16_t* small) {
  const Plan pl = forward_plan(g);
  const int64_t T = g.kk();
  const std::vector<uint16_t> wp = pack_weights(pl, [&](int64_t gi, int64_t o, int64_t c, int64_t t) {
    return w[((gi * pl.Cout_g + o) * pl.Cin_g + c) * T + t];
  });
  const std::vector<float> bf = bias_f32(bias, g.Cs);
  run(pl, big, wp.data(), bias ? bf.data() : nullptr, small);
}

void transposed(const ConvGeo& g, const uint16_t* small, const uint16_t* w, const uint16_t* bias,
                uint16_t* big) {
  const Plan pl = transposed_plan(g);
  const int64_t T = g.kk();
  // The weight is (small channels, big channels / groups, kh, kw).
  const std::vector<uint16_t> wp = pack_weights(pl, [&](int64_t gi, int64_t o, int64_t c, int64_t t) {
    return w[((gi * pl.Cin_g + c) * pl.Cout_g + o) * T + t];
  });
  const std::vector<float> bf = bias_f32(bias, g.Cb);
  run(pl, small, wp.data(), bias ? bf.data() : nullptr, big);
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
  // Even widths: q pairs never straddle rows or mix an output with an extra column, and Q is even.
  const bool pairs_in_rows = ph.Wq % 2 == 0 && g.Ws % 2 == 0;
  // The gather's offsets: channel o at o * HWs (uint16 units, scale 2), used where they fit int32.
  const __m512i step =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(static_cast<int>(std::min<int64_t>(HWs, 1 << 26))));
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
        for_phase_pixels(g, ph.Hq, ph.Wq, ph.slot,
                         [&](int64_t phase, int64_t dst, int64_t y, int64_t x0, int64_t len) {
                           for (int64_t c = 0; c < Cb_g; ++c) {
                             uint16_t* d = planes + (phase * Cb_g + c) * PS + dst;
                             const uint16_t* s = x + c * HWb + y * g.Wb + x0;
                             if (g.sw == 1)
                               copy_row(d, s, len);
                             else
                               take_strided(d, s, g.sw, len);
                           }
                         });
        // bw[q / 2][o][q % 2] = dy[o] at flat q, zero on the extra columns and past Q. From an even q on,
        // a row's values are 32-bit words of every channel: 16 channels' words are a 16 x 16 transpose of
        // words (rows of fewer than 8 words, where most of a transpose's shuffles would be wasted, are
        // gathered); a value alone in its pair (a row starting at an odd q, or ending one short of a
        // pair) is copied by itself.
        const uint16_t* dy = small + (n * g.Cs + gi * Cs_g) * HWs;
        const auto single = [&](int64_t q, const uint16_t* src) {
          uint16_t* d = bw + (q >> 1) * 2 * Cpad + (q & 1);
          for (int64_t o = 0; o < Cs_g; ++o) d[2 * o] = src[o * HWs];
        };
        if (!pairs_in_rows) std::memset(bw, 0, static_cast<size_t>(bw_elems) * 2);
        for (int64_t r = 0; r < g.Hs; ++r) {
          const int64_t q0 = r * ph.Wq;
          const uint16_t* row = dy + r * g.Ws;
          int64_t x = 0;
          if (q0 & 1) single(q0, row), x = 1;
          const int64_t words = (g.Ws - x) / 2;
          auto* d = reinterpret_cast<uint32_t*>(bw) + (q0 + x) / 2 * Cpad;
          const bool gather = words < 8 && 16 * HWs < (int64_t{1} << 30);  // int32 indices at scale 2
          for (int64_t j0 = 0; j0 < words; j0 += 16)
            for (int64_t o = 0; o < Cpad; o += 16) {
              const uint16_t* src = row + x + o * HWs + 2 * j0;
              if (gather) {
                for (int64_t j = 0; j < words; ++j)
                  _mm512_storeu_si512(d + j * Cpad + o,
                                      _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), lanes(Cs_g - o),
                                                                  step, src + 2 * j, 2));
              } else {
                transpose_words_16(src, HWs, std::clamp<int64_t>(Cs_g - o, 0, 16),
                                   std::min<int64_t>(16, words - j0), d + j0 * Cpad + o, Cpad);
              }
            }
          if ((g.Ws - x) & 1) single(q0 + g.Ws - 1, row + g.Ws - 1);
          // Whole pairs per row: the rest of the row's words are extra columns (bw was not cleared).
          if (pairs_in_rows)
            std::memset(d + words * Cpad, 0, static_cast<size_t>((ph.Wq - g.Ws) / 2 * Cpad) * 4);
        }
        // Rows k = (tap, input channel), 8 (16 with one vector) at a time whatever the channel count.
        float* sg = sum + gi * acc_group;
        const int64_t max_rows = NV == 1 ? 2 * kRows : kRows;
        for (int64_t k0 = 0; k0 < acc_rows; k0 += max_rows) {
          const int64_t rows = std::min(max_rows, acc_rows - k0);
          int64_t arow[2 * kRows];
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
