// The bfloat16 convolution kernels for AVX512-BF16 CPUs (conv_bf16.h). The file is compiled for
// AVX-512; the bf16 instructions are enabled per function, and conv.cpp runs them only on a CPU that
// has them (bf16_gemm_kernel_available).
//
// Note [bfloat16 convolution]
// vdpbf16ps adds, into each float32 lane, the products of the lane's two bfloat16 values of each
// operand: the reduced dimension must come in pairs. The outputs of an image are computed over the
// flat domain q = y * Ws + x, the output image itself (no extra columns), and every tap (i, j) reads
// the flat position q + off of a plane of its own: the zero-padded input split into stride phases
// as in Note [Direct convolution], one plane per (row phase i * dh % sh, kernel column j), plane
// row r and column X holding the padded pixel (r * sh + i * dh % sh, X * sw + j * dw), Ws columns
// wide, so off = (i * dh / sh) * Ws. No im2col and no extra columns: a plane per kernel column
// costs kw copies of the image, and the planes of one row phase are the same row data shifted by
// whole columns, so one of them (the one with the most image columns) is built from the image and
// the others are one vector copy of it, shifted, with their few edge columns (mostly padding)
// written apart. (The former single plane per phase, Wq = ceil(Wp / sw) wide, computed Wq - Ws
// extra columns a row and threw them away: 25 % of the work on 8 x 8 images, 11 % on 16 x 16.)
//
// Forward: the planes hold channel pairs, interleaved, [plane][channel pair][flat q][2] (an odd
// channel count gets a zero channel), so 32 consecutive outputs of one (tap, channel pair) are one
// 64-byte load: the pair layout vdpbf16ps reads (Note [Low-precision GEMM]). The weights are packed
// [output channel][tap][channel pair][2]; a tile holds 8 output channels x 32 flat outputs in 16 zmm
// accumulators, the weight pair of each channel broadcast, summed over taps and channel pairs in
// float32, the bias added, rounded to bfloat16 once (a last panel of at most 16 outputs: 16 channels
// x 16 outputs) and stored straight into the output image, whose layout the flat domain is.
//
// Transposed convolutions (the input gradient of a convolution): big y + padding = small o * stride
// + tap i * dilation (per dim). The outputs of one residue r = (y + padding) % stride take only the
// taps with i * dilation % stride == r, reading small o = Z - i * dilation / stride for
// y = Z * stride + r - padding: per residue, a stride-1 correlation of the small image (zero-padded
// in front by the largest i * dilation / stride) with its subset of the taps, each a fixed flat
// offset. So the same planes (of channel pairs; per class a plane per kernel column, the class's
// nX columns wide: the small image shifted by the tap), tiles and weight packing run stride x
// stride classes of outputs; a stride-1 class is the whole output, written in place, the others are
// written back with the stride (the even and odd columns of the same rows together: each output row
// once, its pairs of values interleaved by vector); no col2im, no flipped copy of the weights.
//
// Weight gradient: dw^T (tap, input channel; output channel) = sum over q of the input window
// (the planes per channel, not interleaved: [plane][channel][flat q], so a row of the tile is a
// channel read from flat position off(tap), and two consecutive q are one 32-bit broadcast) times
// the output gradient, stored [q pair][output channel][2]. The planes are Ws + (Ws odd) wide: a pair
// never straddles two rows, and the extra column is zero in the planes and in the output gradient
// (an infinite input value read there would make 0 * inf = NaN where the exact sum is +-inf; the
// former padded-width planes read the next row's first pixel there). With an even width the output
// gradient's image is the flat domain: its pairs are one 16 x 16 word transpose per 16 pairs of 16
// channels. Tiles of 16 rows x 16 output channels or 8 rows x 32 accumulate in float32 over the q
// pairs of a batch of images (one, or up to 8 small ones: at least 256 pairs, so that a tile's sums
// are not read and written for every 32 pairs of an 8 x 8 image) and into float32 partial sums over
// images (Note [Partial sums in slice order]); the sum is transposed and rounded to bfloat16 once.
//
// Threads: the forward splits images over threads (each building its image's planes in its own
// scratch), the weight gradient slices of images.
//
// Note [bfloat16 convolution on AMX]
// Where the CPU also has AMX-BF16 (and Linux grants the process the tile state), the forward, transposed and
// weight-gradient tiles multiply on AMX instead (backends.cpu.bf16_amx, on by default): the same planes and
// packed weights are already the operands tdpbf16ps reads. A weight tile is 16 output channels by kc channel
// pairs of one or more taps (rows lda apart), a plane tile kc pair rows of 16 flat outputs (64 bytes each,
// rows one plane apart); four float32 tiles hold 32 channels x 32 outputs, start from the bias, sum every tap
// and chunk of pairs, and are rounded to bfloat16 once as before. Measured here at one thread, ResNet-8's
// forward and input-gradient convolutions took 3-5x less time (16->16 32x32 forward 2473 -> 506 us, 64->64
// 8x8 2383 -> 502 us): a vdpbf16ps zmm issued about once every three cycles on this machine, against 32 x 16
// x 16 products per tdpbf16ps. The tiles need the channel pairs in equal chunks of at most 16 (a tile's shape
// is fixed while it holds sums); other convolutions stay on vdpbf16ps. Output channels past a multiple of 16
// fill a last tile of 16 or 32 rows whose other rows read the weights that follow (the next group's, or
// zeros past the last group's) and are not stored: LeNet-5's 1->6 5x5 forward on AMX.
// The taps of a kernel row read planes that follow each other, so their pairs are one run of rows
// (tap t + 1's pair p is pair CP + p of tap t) and a tile's depth may span taps: a class's steps are kc
// pairs, the largest depth of at most 16 that divides each run (3 input channels: 6 pairs a step, not 2; 16:
// 12, not 8); 16 output channels take two panels at a time, the weight tile read once for four products. A
// panel's last outputs past the image read plane columns that are not the image's; their sums are not
// stored. The weight gradient likewise: a plane tile is 16 rows (tap, input channel) of one tap
// (input channels in multiples of 16, rows one plane apart) by 16 q pairs, the output gradient's tile 16 q
// pairs by 16 output channels, and four float32 tiles (32 rows x 32 channels) add the images of a batch into
// the partial sums (the columns past the output channels sum whatever the pair layout holds there; they are
// never read). 16->16 32x32 2852 -> 1059 us, 64->64 8x8 2596 -> 765 us. The sums differ from vdpbf16ps' only
// by float32 summation order: at most a bfloat16 ulp, none on exact sums.
// The tile configuration, the panel sums and the rounding are shared with the bfloat16 GEMM (amx.h).
//
// GCC 12's AVX-512 shuffle intrinsics pass an "undefined" vector that it then warns about once
// inlined (GCC bug 105593); the warnings point into the header, where they are switched off.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "conv_bf16.h"
#include "cpu/amx.h"
#include "cpu/linalg/transpose_words_avx512.h"
#include "cpu/ordered_partials.h"
#include "flambeau/error.h"
#include "flambeau/half.h"
#include "flambeau/parallel.h"
#include "settings.h"

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

/// Copies n bytes in 64-byte vectors (a masked last one). glibc's memcpy takes `rep movsb` at these
/// sizes (a few kilobytes), which ran at a fraction of this speed on the planes' offsets here.
FB_BF16_TARGET void copy_bytes(void* dst, const void* src, int64_t n) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  int64_t k = 0;
  for (; k + 64 <= n; k += 64) _mm512_storeu_si512(d + k, _mm512_loadu_si512(s + k));
  if (k < n) {
    const __mmask64 m = (uint64_t{1} << (n - k)) - 1u;
    _mm512_mask_storeu_epi8(d + k, m, _mm512_maskz_loadu_epi8(m, s + k));
  }
}

/// Zeroes n values of E (uint16 or uint32) in vectors.
template <class E>
FB_BF16_TARGET void zero_elems(E* d, int64_t n) {
  const int64_t bytes = n * static_cast<int64_t>(sizeof(E));
  auto* c = reinterpret_cast<char*>(d);
  int64_t k = 0;
  for (; k + 64 <= bytes; k += 64) _mm512_storeu_si512(c + k, _mm512_setzero_si512());
  if (k < bytes) _mm512_mask_storeu_epi8(c + k, (uint64_t{1} << (bytes - k)) - 1u, _mm512_setzero_si512());
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
/// ONE: one tap at offset 0 (taps, a_tap and boff unread), the loop the compiler then drops (16 rows
/// of row pointers leave no register for a tap's offsets).
template <int R, int NV, bool ACC, bool ONE = false>
FB_BF16_TARGET void tile(int64_t taps_, int64_t kp, const uint16_t* a, const int64_t* arow, int64_t a_tap_,
                         const uint16_t* b, const int64_t* boff, int64_t ldb, void* c, int64_t ldc,
                         const float* bias, const __mmask16* m) {
  const int64_t taps = ONE ? 1 : taps_, a_tap = ONE ? 0 : a_tap_;
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = bias ? _mm512_set1_ps(bias[r]) : _mm512_setzero_ps();
  const uint16_t* ar[R];
  for (int r = 0; r < R; ++r) ar[r] = a + arow[r];
  for (int64_t t = 0; t < taps; ++t) {
    const uint16_t* bt = ONE ? b : b + boff[t];
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
template <int NV, bool ACC, bool ONE = false>
FB_BF16_TARGET void tile_rows(int64_t rows, int64_t taps, int64_t kp, const uint16_t* a, const int64_t* arow,
                              int64_t a_tap, const uint16_t* b, const int64_t* boff, int64_t ldb, void* c,
                              int64_t ldc, const float* bias, const __mmask16* m) {
  switch (rows) {
#define FB_ROWS(R)                                                                  \
  case R:                                                                           \
    tile<R, NV, ACC, ONE>(taps, kp, a, arow, a_tap, b, boff, ldb, c, ldc, bias, m); \
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

/// The weight gradient's sums on AMX: c (float32, 16 * MR rows x 16 * NR columns, row stride ldc)
/// += over `images` images and `chunks` chunks of 16 pairs, rows of pairs at a[m] + i * a_img + 32 * j
/// (16 rows lda apart, block m), times pair rows at b + i * b_img + j * 16 * ldb (+ 32 per column
/// block); uint16 units.
template <int MR, int NR>
FB_AMX_TARGET void amx_weight_block(int64_t images, int64_t chunks, const uint16_t* const* a, int64_t a_img,
                                    int64_t lda, const uint16_t* b, int64_t b_img, int64_t ldb, float* c,
                                    int64_t ldc) {
  __asm__ volatile("" ::: "memory");  // as in amx_panel (amx.h)
  _tile_loadd(0, c, 4 * ldc);
  if constexpr (NR == 2) _tile_loadd(1, c + 16, 4 * ldc);
  if constexpr (MR == 2) _tile_loadd(2, c + 16 * ldc, 4 * ldc);
  if constexpr (MR == 2 && NR == 2) _tile_loadd(3, c + 16 * ldc + 16, 4 * ldc);
  for (int64_t i = 0; i < images; ++i)
    for (int64_t j = 0; j < chunks; ++j) {
      const uint16_t* bt = b + i * b_img + j * 16 * ldb;
      _tile_loadd(6, bt, 2 * ldb);
      if constexpr (NR == 2) _tile_loadd(7, bt + 32, 2 * ldb);
      _tile_loadd(4, a[0] + i * a_img + 32 * j, 2 * lda);
      _tile_dpbf16ps(0, 4, 6);
      if constexpr (NR == 2) _tile_dpbf16ps(1, 4, 7);
      if constexpr (MR == 2) {
        _tile_loadd(5, a[1] + i * a_img + 32 * j, 2 * lda);
        _tile_dpbf16ps(2, 5, 6);
        if constexpr (NR == 2) _tile_dpbf16ps(3, 5, 7);
      }
    }
  _tile_stored(0, c, 4 * ldc);
  if constexpr (NR == 2) _tile_stored(1, c + 16, 4 * ldc);
  if constexpr (MR == 2) _tile_stored(2, c + 16 * ldc, 4 * ldc);
  if constexpr (MR == 2 && NR == 2) _tile_stored(3, c + 16 * ldc + 16, 4 * ldc);
  __asm__ volatile("" ::: "memory");
}

/// A plane of an image (Hin x Win, zero outside it) of Note [bfloat16 convolution]: row r, column X
/// holds the pixel (r * rs + r0, X * cs + c0) for X < ncols, zero for ncols <= X < width.
struct PlaneSpec {
  int64_t rs, r0, cs, c0, width, ncols;
  bool same_rows(const PlaneSpec& o) const {
    return rs == o.rs && r0 == o.r0 && cs == o.cs && width == o.width && ncols == o.ncols;
  }
  bool operator==(const PlaneSpec& o) const { return same_rows(o) && c0 == o.c0; }
  /// The columns [X0, X1) that hold pixels of the image.
  std::pair<int64_t, int64_t> image_cols(int64_t Win) const {
    const int64_t X0 = c0 >= 0 ? 0 : ceil_div(-c0, cs);
    const int64_t X1 = Win - c0 > 0 ? std::min(ncols, ceil_div(Win - c0, cs)) : 0;
    return {std::min(X0, X1), X1};
  }
};

template <class T>
T* scratch(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

/// Outputs (y0 + Y * sy, x0 + X * sx), Y < nY, X < nX, of one class: the sum of `taps` taps (from
/// tap0 in the plan's order), computed over the flat domain Y * nX + X of the planes (the planes of
/// a class's taps are nX wide).
struct OutClass {
  int64_t tap0, taps, nY, nX, y0, sy, x0, sx;
};

/// A convolution on the kernel: the planes of the input image (Hin x Win), each Hq rows, and for each
/// plane the earlier one it is a shifted copy of (src, shift in columns; -1: built from the image);
/// the taps (plane and flat offset; the weight tap each reads) and the classes of outputs.
struct Plan {
  int64_t Hin = 0, Win = 0, Hq = 0;
  std::vector<PlaneSpec> planes;
  std::vector<int64_t> src, shift;
  std::vector<int64_t> plane, off, wtap;
  std::vector<OutClass> classes;
  int64_t N = 0, groups = 1, Cin_g = 0, Cout_g = 0, Hout = 0, Wout = 0;

  /// A tap reading plane s from row `row` on (for output row 0), for weight tap wt.
  void add_tap(const PlaneSpec& s, int64_t row, int64_t nY, int64_t wt) {
    int64_t p = 0;
    while (p < static_cast<int64_t>(planes.size()) && !(planes[static_cast<size_t>(p)] == s)) ++p;
    if (p == static_cast<int64_t>(planes.size())) planes.push_back(s), src.push_back(-1), shift.push_back(0);
    plane.push_back(p), off.push_back(row * s.width), wtap.push_back(wt);
    Hq = std::max(Hq, row + nY);
  }
  /// Of planes with the same rows whose first columns are whole columns apart, the one with the
  /// most image columns is built from the image and the others are shifted copies of it (their
  /// columns without a source: mostly padding).
  void share_planes() {
    const int64_t P = static_cast<int64_t>(planes.size());
    const auto cols = [&](int64_t q) {
      const auto [X0, X1] = planes[static_cast<size_t>(q)].image_cols(Win);
      return X1 - X0;
    };
    std::vector<bool> done(static_cast<size_t>(P), false);
    std::vector<int64_t> copies;
    order.clear();
    for (int64_t p = 0; p < P; ++p) {
      if (done[static_cast<size_t>(p)]) continue;
      const PlaneSpec& s = planes[static_cast<size_t>(p)];
      std::vector<int64_t> group;
      int64_t best = p;
      for (int64_t q = p; q < P; ++q) {
        const PlaneSpec& o = planes[static_cast<size_t>(q)];
        if (!done[static_cast<size_t>(q)] && o.same_rows(s) && (o.c0 - s.c0) % s.cs == 0 &&
            std::abs((o.c0 - s.c0) / s.cs) < s.width) {
          group.push_back(q), done[static_cast<size_t>(q)] = true;
          if (cols(q) > cols(best)) best = q;
        }
      }
      order.push_back(best);
      for (int64_t q : group)
        if (q != best) {
          src[static_cast<size_t>(q)] = best;
          shift[static_cast<size_t>(q)] =
              (planes[static_cast<size_t>(q)].c0 - planes[static_cast<size_t>(best)].c0) / s.cs;
          copies.push_back(q);
        }
    }
    // The fill order: the planes built from the image, then the copies.
    order.insert(order.end(), copies.begin(), copies.end());
  }
  std::vector<int64_t> order;
  /// Flat positions per plane (of a channel or channel pair).
  int64_t plane_size(const char* op) const {
    int64_t n = 0;
    for (const PlaneSpec& s : planes) n = std::max(n, mul_checked(Hq, s.width, op));
    return n;
  }
};

/// The plan of a forward convolution: one class; a plane per (row phase i * dh % sh, kernel column j),
/// `width` columns of which the first Ws are the outputs' (the weight gradient pads an odd width).
Plan forward_plan(const ConvGeo& g, int64_t width) {
  Plan pl;
  pl.Hin = g.Hb, pl.Win = g.Wb;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t di = i * g.dh;
      pl.add_tap({g.sh, di % g.sh - g.ph, g.sw, j * g.dw - g.pw, width, g.Ws}, di / g.sh, g.Hs, i * g.kw + j);
    }
  pl.classes.push_back({0, g.kk(), g.Hs, g.Ws, 0, 1, 0, 1});
  pl.share_planes();
  pl.N = g.N, pl.groups = g.groups, pl.Cin_g = g.Cb / g.groups, pl.Cout_g = g.Cs / g.groups;
  pl.Hout = g.Hs, pl.Wout = g.Ws;
  return pl;
}

/// One dim of a transposed convolution (small size ns, big size nb): big y + p = o * s + i * d. The
/// outputs y with (y + p) % s == r take the taps i with i * d % s == r, reading small o = Z - e_i
/// (e_i = i * d / s) for y = Z * s + r - p: per residue r, its taps, first Z (Z0), first y (y0) and
/// count (n); E = the largest e_i.
struct TransposedDim {
  int64_t E = 0;
  std::vector<std::vector<int64_t>> taps;
  std::vector<int64_t> Z0, y0, n;
  TransposedDim(int64_t nb, int64_t k, int64_t s, int64_t p, int64_t d) {
    E = (k - 1) * d / s;
    for (int64_t r = 0; r < s; ++r) {
      std::vector<int64_t> t;
      for (int64_t i = 0; i < k; ++i)
        if (i * d % s == r) t.push_back(i);
      taps.push_back(t);
      const int64_t z0 = r >= p ? 0 : (p - r + s - 1) / s, first = z0 * s + r - p;
      Z0.push_back(z0), y0.push_back(first), n.push_back(first < nb ? (nb - 1 - first) / s + 1 : 0);
    }
  }
  /// The small position read by output Z' = 0 of residue r through tap i.
  int64_t start(int64_t r, int64_t i, int64_t d, int64_t s) const { return Z0[r] - i * d / s; }
};

/// The plan of a transposed convolution g (big = output): one class per output residue (r_h, r_w),
/// each a stride-1 correlation of the small image; its planes start E_h rows above the small image
/// and are the class's nX columns wide, shifted by the tap.
Plan transposed_plan(const ConvGeo& g) {
  Plan pl;
  const TransposedDim dy(g.Hb, g.kh, g.sh, g.ph, g.dh), dx(g.Wb, g.kw, g.sw, g.pw, g.dw);
  pl.Hin = g.Hs, pl.Win = g.Ws;
  for (int64_t ry = 0; ry < g.sh; ++ry)
    for (int64_t rx = 0; rx < g.sw; ++rx) {
      if (dy.n[ry] == 0 || dx.n[rx] == 0) continue;
      const int64_t tap0 = static_cast<int64_t>(pl.off.size());
      for (int64_t i : dy.taps[ry])
        for (int64_t j : dx.taps[rx])
          pl.add_tap({1, -dy.E, 1, dx.start(rx, j, g.dw, g.sw), dx.n[rx], dx.n[rx]},
                     dy.start(ry, i, g.dh, g.sh) + dy.E, dy.n[ry], i * g.kw + j);
      const int64_t taps = static_cast<int64_t>(pl.off.size()) - tap0;
      pl.classes.push_back({tap0, taps, dy.n[ry], dx.n[rx], dy.y0[ry], g.sh, dx.y0[rx], g.sw});
    }
  pl.share_planes();
  pl.N = g.N, pl.groups = g.groups, pl.Cin_g = g.Cs / g.groups, pl.Cout_g = g.Cb / g.groups;
  pl.Hout = g.Hb, pl.Wout = g.Wb;
  return pl;
}

/// Fills plane p (Hq rows of its width, then zeros up to PS) of one channel (E = uint16) or channel
/// pair (E = uint32, Note [bfloat16 convolution]) at d; the plane it copies (pl.src[p]) is at `from`.
/// row(dst, y, col, cs, n) writes n pixels of image row y from column col, cs apart; pixel(y, col)
/// is one (zero outside the image). A shifted copy moves the whole plane at once and then writes the
/// columns whose source is not in the same row of the other plane.
template <class E, class Row, class Pixel>
void fill_plane(const Plan& pl, int64_t p, E* d, const E* from, int64_t PS, const Row& row,
                const Pixel& pixel) {
  const PlaneSpec& s = pl.planes[static_cast<size_t>(p)];
  const int64_t w = s.width, n = pl.Hq * w;
  if (pl.src[static_cast<size_t>(p)] >= 0) {
    const int64_t sh = pl.shift[static_cast<size_t>(p)];
    const int64_t k0 = std::max<int64_t>(0, -sh), k1 = n - std::max<int64_t>(0, sh);
    if (k1 > k0) copy_bytes(d + k0, from + k0 + sh, (k1 - k0) * static_cast<int64_t>(sizeof(E)));
    // The columns whose source is not in the same row of the other plane: [0, -shift) and from
    // ncols - shift on, and those past ncols; a column of padding is zero in every row.
    const int64_t a1 = std::min(w, std::max<int64_t>(0, -sh));
    const int64_t b0 = std::max(a1, std::max<int64_t>(0, s.ncols - std::max<int64_t>(sh, 0)));
    const auto fix = [&](int64_t X) {
      const int64_t col = X * s.cs + s.c0;
      if (X >= s.ncols || col < 0 || col >= pl.Win) {
        for (int64_t r = 0; r < pl.Hq; ++r) d[r * w + X] = E(0);
      } else {
        for (int64_t r = 0; r < pl.Hq; ++r) d[r * w + X] = pixel(r * s.rs + s.r0, col);
      }
    };
    for (int64_t X = 0; X < a1; ++X) fix(X);
    for (int64_t X = b0; X < w; ++X) fix(X);
  } else {
    const auto [X0, X1] = s.image_cols(pl.Win);
    for (int64_t r = 0; r < pl.Hq; ++r) {
      E* dr = d + r * w;
      const int64_t y = r * s.rs + s.r0;
      if (y < 0 || y >= pl.Hin || X0 >= X1) {
        zero_elems(dr, w);
        continue;
      }
      for (int64_t X = 0; X < X0; ++X) dr[X] = E(0);
      row(dr + X0, y, X0 * s.cs + s.c0, s.cs, X1 - X0);
      for (int64_t X = X1; X < w; ++X) dr[X] = E(0);
    }
  }
  zero_elems(d + n, PS - n);
}

/// Runs a plan: out (N, groups * Cout_g, Hout, Wout) from in (N, groups * Cin_g, Hin, Win) and
/// the packed weights wp ([group][out channel][plan tap][channel pair][2]), + bias (may be null).
FB_BF16_TARGET void run(const Plan& pl, const uint16_t* in, const uint16_t* wp, const float* bias,
                        uint16_t* out) {
  const char* op = "convolution";
  const int64_t G = pl.groups, Cin_g = pl.Cin_g, Cout_g = pl.Cout_g, CP = ceil_div(Cin_g, 2);
  const int64_t P = static_cast<int64_t>(pl.planes.size()), T = static_cast<int64_t>(pl.off.size());
  int64_t Qpan = 0, max_off = 0;
  for (const OutClass& c : pl.classes)
    Qpan = std::max(Qpan, ceil_div(mul_checked(c.nY, c.nX, op), kCols) * kCols);
  for (int64_t o : pl.off) max_off = std::max(max_off, o);
  const int64_t PS = std::max(pl.plane_size(op), max_off + Qpan) + 32;  // words per plane
  const int64_t words = mul_checked(mul_checked(P, CP, op), PS, op);
  mul_checked(mul_checked(Cout_g, Qpan, op), 2, op);
  // Classes of stride 2 in x over the same rows, one of the even columns (x0 = 0, with taps) and one of
  // the odd ones (x0 = 1; with taps, or none and no bias), are written together, each output row once:
  // pair_of[even] = the odd class, pair_of[odd] = -2.
  std::vector<int64_t> pair_of(pl.classes.size(), -1);
  for (size_t i = 0; i < pl.classes.size(); ++i)
    for (size_t j = 0; j < pl.classes.size(); ++j) {
      const OutClass &e = pl.classes[i], &o = pl.classes[j];
      if (e.sx == 2 && o.sx == 2 && e.x0 == 0 && o.x0 == 1 && e.y0 == o.y0 && e.sy == o.sy && e.nY == o.nY &&
          e.taps > 0 && (o.taps > 0 || !bias) && (e.nX == o.nX || e.nX == o.nX + 1) && pair_of[i] == -1 &&
          pair_of[j] == -1)
        pair_of[i] = static_cast<int64_t>(j), pair_of[j] = -2;
    }
  const int64_t a_tap = 2 * CP, lda = T * a_tap;
  const int64_t Hin = pl.Hin, Win = pl.Win, HWin = Hin * Win, HWout = pl.Hout * pl.Wout;
  // Per tap, in uint16 units: its plane's base + its flat offset, channel pairs interleaved.
  std::vector<int64_t> boff(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) boff[static_cast<size_t>(t)] = 2 * (pl.plane[t] * CP * PS + pl.off[t]);
  const __mmask16 full[2] = {0xFFFF, 0xFFFF};
  int64_t arow[2 * kRows];
  for (int64_t r = 0; r < 2 * kRows; ++r) arow[r] = r * lda;
  const bool zero_classes =
      std::any_of(pl.classes.begin(), pl.classes.end(), [](const OutClass& c) { return c.taps == 0; });
  // AMX (Note [bfloat16 convolution on AMX]): rows in tiles of 16, the channel pairs in equal chunks
  // of at most 16. Per class, its taps in runs whose planes follow each other (the kernel columns of a
  // kernel row: tap t + 1's pair p is pair CP + p of tap t) and each run's pairs in steps of kc, the
  // largest depth of at most 16 that divides every run (16->16 3x3: 24 pairs a run, 12 a step, where a
  // tap's 8 pairs a step used half of each tdpbf16ps).
  const bool amx = settings::bf16_amx() && CP % ceil_div(CP, 16) == 0 && amx_usable();
  struct AmxSteps {
    int64_t kc = 0;
    std::vector<int64_t> a, b;  // per step: the offsets of its weights (from the class's) and pair rows
  };
  std::vector<AmxSteps> amx_steps(amx ? pl.classes.size() : 0);
  for (size_t ci = 0; ci < amx_steps.size(); ++ci) {
    const OutClass& c = pl.classes[ci];
    std::vector<std::pair<int64_t, int64_t>> runs;  // (first tap, taps)
    for (int64_t t = c.tap0; t < c.tap0 + c.taps; ++t)
      if (!runs.empty() && runs.back().first + runs.back().second == t &&
          boff[static_cast<size_t>(t)] - boff[static_cast<size_t>(t - 1)] == 2 * CP * PS)
        ++runs.back().second;
      else
        runs.emplace_back(t, 1);
    int64_t depth = 0;
    for (const auto& [t0, len] : runs) depth = std::gcd(depth, len * CP);
    AmxSteps& st = amx_steps[ci];
    st.kc = amx_step_pairs(depth);
    for (const auto& [t0, len] : runs)
      for (int64_t k = 0; k < len * CP; k += st.kc) {
        st.a.push_back((t0 - c.tap0) * a_tap + 2 * k);
        st.b.push_back(boff[static_cast<size_t>(t0)] + 2 * PS * k);
      }
  }
  parallel_for(0, pl.N * G, 1, [&](int64_t i0, int64_t i1) {
    thread_local std::vector<uint32_t> planes_buf;
    thread_local std::vector<uint16_t> tmp_buf;
    uint32_t* planes = scratch(planes_buf, words);
    uint16_t* tmp = scratch(tmp_buf, 2 * Cout_g * Qpan);
    int64_t configured = 0;  // the depth the tiles are configured for
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t n = item / G, gi = item % G;
      const uint16_t* x = in + (n * G + gi) * Cin_g * HWin;
      for (int64_t p : pl.order) {
        const int64_t from = pl.src[static_cast<size_t>(p)];
        for (int64_t cp = 0; cp < CP; ++cp) {
          const uint16_t* x0 = x + 2 * cp * HWin;
          const uint16_t* x1 = 2 * cp + 1 < Cin_g ? x0 + HWin : nullptr;
          fill_plane<uint32_t>(
              pl, p, planes + (p * CP + cp) * PS, from >= 0 ? planes + (from * CP + cp) * PS : nullptr, PS,
              [&](uint32_t* d, int64_t yy, int64_t col, int64_t cs, int64_t len) {
                interleave_pair(d, x0 + yy * Win + col, x1 ? x1 + yy * Win + col : nullptr, cs, len);
              },
              [&](int64_t yy, int64_t col) -> uint32_t {
                if (yy < 0 || yy >= Hin || col < 0 || col >= Win) return 0;
                const int64_t k = yy * Win + col;
                return uint32_t(x0[k]) | (x1 ? uint32_t(x1[k]) << 16 : 0u);
              });
        }
      }
      const auto* b = reinterpret_cast<const uint16_t*>(planes);
      const float* bg = bias ? bias + gi * Cout_g : nullptr;
      uint16_t* y = out + (n * G + gi) * Cout_g * HWout;
      // Outputs no tap reaches are zero without a bias: one fill of the image (the other classes write
      // over it) instead of their strided stores.
      if (!bg && zero_classes) std::memset(y, 0, static_cast<size_t>(Cout_g * HWout) * sizeof(uint16_t));
      // The tiles of class c into `slot` (rows Qpan apart), or straight into the output when the class
      // is the whole output image (stride 1), its flat domain being the image's.
      const auto compute = [&](const OutClass& c, uint16_t* slot, bool direct) {
        const int64_t Q = c.nY * c.nX, panels = ceil_div(Q, kCols);
        const uint16_t* w = wp + gi * Cout_g * lda + c.tap0 * a_tap;
        const int64_t ldc = direct ? HWout : Qpan;
        if (amx) {
          const AmxSteps& st = amx_steps[static_cast<size_t>(&c - pl.classes.data())];
          if (st.kc != configured) amx_configure(configured = st.kc);
          const auto steps = static_cast<int64_t>(st.a.size());
          alignas(64) float init[4 * kRows * kCols], sums[4 * kRows * kCols];
          for (int64_t r = 0; r < Cout_g; r += 4 * kRows) {
            const int64_t rows = std::min(4 * kRows, Cout_g - r);
            // Rows past the output channels (a count that is not a multiple of 16) multiply the weights
            // that follow (pack_weights' padding); their sums are not stored.
            for (int64_t i = 0; i < 4 * kRows; ++i)
              std::fill_n(init + i * kCols, kCols, bg && i < rows ? bg[r + i] : 0.0f);
            // 16 rows take two panels at a time (the weight tile read once for four products).
            const int64_t np = rows > 2 * kRows ? 1 : 2;
            for (int64_t pn = 0; pn < panels; pn += np) {
              const uint16_t* bp = b + 2 * pn * kCols;
              const int64_t* as = st.a.data();
              const int64_t* bs = st.b.data();
              const int64_t both = std::min(np, panels - pn);
              if (np == 1)
                amx_panel<2>(steps, as, bs, w + r * lda, lda, bp, 2 * PS, init, sums);
              else if (both == 2)
                amx_panel<1, 2>(steps, as, bs, w + r * lda, lda, bp, 2 * PS, init, sums);
              else
                amx_panel<1>(steps, as, bs, w + r * lda, lda, bp, 2 * PS, init, sums);
              for (int64_t i = 0; i < both; ++i) {
                const int64_t left = Q - (pn + i) * kCols;
                const __mmask16 m[2] = {lanes(left), lanes(left - 16)};
                uint16_t* dst = (direct ? y : slot) + (pn + i) * kCols + r * ldc;
                amx_round_rows(sums + i * 2 * kRows * kCols, rows, dst, ldc, direct ? m : full);
              }
            }
          }
          return;
        }
        for (int64_t pn = 0; pn < panels; ++pn) {
          const uint16_t* bp = b + 2 * pn * kCols;
          const int64_t left = Q - pn * kCols;
          const __mmask16 m[2] = {lanes(left), lanes(left - 16)};
          uint16_t* cp = direct ? y + pn * kCols : slot + pn * kCols;
          // A last panel of at most 16 outputs (small images) takes one vector by 16 rows.
          const bool half = left <= 16;
          const int64_t step = half ? 2 * kRows : kRows;
          for (int64_t r = 0; r < Cout_g; r += step) {
            const int64_t rows = std::min(step, Cout_g - r);
            if (half)
              tile_rows<1, false>(rows, c.taps, CP, w + r * lda, arow, a_tap, bp, boff.data() + c.tap0,
                                  2 * PS, cp + r * ldc, ldc, bg ? bg + r : nullptr, direct ? m : full);
            else
              tile_rows<2, false>(rows, c.taps, CP, w + r * lda, arow, a_tap, bp, boff.data() + c.tap0,
                                  2 * PS, cp + r * ldc, ldc, bg ? bg + r : nullptr, direct ? m : full);
          }
        }
      };
      for (size_t ci = 0; ci < pl.classes.size(); ++ci) {
        const OutClass& c = pl.classes[ci];
        if (pair_of[ci] == -2) continue;  // written with its pair's even columns
        if (pair_of[ci] >= 0) {
          // Even columns c and odd columns d of the same rows: both computed, then each output row
          // written whole, the pairs of values interleaved (zeros for odd columns no tap reaches).
          const OutClass& d = pl.classes[static_cast<size_t>(pair_of[ci])];
          uint16_t* odd = tmp + Cout_g * Qpan;
          compute(c, tmp, false);
          if (d.taps > 0) compute(d, odd, false);
          for (int64_t o = 0; o < Cout_g; ++o)
            for (int64_t Y = 0; Y < c.nY; ++Y) {
              const uint16_t* even = tmp + o * Qpan + Y * c.nX;
              uint16_t* dst = y + o * HWout + (c.y0 + Y * c.sy) * pl.Wout;
              interleave_pair(reinterpret_cast<uint32_t*>(dst), even,
                              d.taps > 0 ? odd + o * Qpan + Y * d.nX : nullptr, 1, d.nX);
              if (c.nX > d.nX) dst[2 * d.nX] = even[d.nX];
            }
          continue;
        }
        if (c.taps == 0 && !bg) continue;
        if (c.taps == 0) {  // no tap reaches these outputs (a stride above the dilated kernel): the bias
          for (int64_t o = 0; o < Cout_g; ++o) {
            const uint16_t v = bg ? detail::fp32_to_bf16_bits(bg[o]) : uint16_t{0};
            for (int64_t Y = 0; Y < c.nY; ++Y)
              put_strided(y + o * HWout + (c.y0 + Y * c.sy) * pl.Wout + c.x0, c.sx, nullptr, v, c.nX);
          }
          continue;
        }
        const bool direct = c.nY == pl.Hout && c.nX == pl.Wout && c.sy == 1 && c.sx == 1;
        compute(c, tmp, direct);
        if (direct) continue;
        // The class's outputs: each flat row of nX to its place in the image.
        for (int64_t o = 0; o < Cout_g; ++o)
          for (int64_t Y = 0; Y < c.nY; ++Y) {
            const uint16_t* src = tmp + o * Qpan + Y * c.nX;
            uint16_t* dst = y + o * HWout + (c.y0 + Y * c.sy) * pl.Wout + c.x0;
            if (c.sx == 1)
              copy_row(dst, src, c.nX);
            else
              put_strided(dst, c.sx, src, 0, c.nX);
          }
      }
    }
    if (configured) amx_release();
  });
}
/// wp[gi][o][t][cp][2] = w(gi, o, c = 2cp (+1), the weight tap of plan tap t), zero past Cin_g, and
/// 31 rows of zeros past the last group's (an AMX tile of 32 rows starting at its last output channels
/// reads them); `at(gi, o, c, tap)` reads one weight.
template <class At>
std::vector<uint16_t> pack_weights(const Plan& pl, const At& at) {
  const int64_t G = pl.groups, CP = ceil_div(pl.Cin_g, 2), T = static_cast<int64_t>(pl.wtap.size());
  std::vector<uint16_t> wp(static_cast<size_t>((G * pl.Cout_g + 31) * T * CP * 2), 0);
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
  const Plan pl = forward_plan(g, g.Ws);
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
  // Planes of an even width (an odd output width gets a zero column): pairs of flat outputs never
  // straddle rows.
  const int64_t Wf = g.Ws + (g.Ws & 1);
  const Plan pl = forward_plan(g, Wf);
  const int64_t P = static_cast<int64_t>(pl.planes.size());
  const int64_t Q = mul_checked(g.Hs, Wf, op), kp = Q / 2;
  const int64_t PS = pl.plane_size(op) + 32;  // uint16 per (plane, channel)
  const int64_t Cpad = Cs_g <= 16 ? 16 : ceil_div(Cs_g, kCols) * kCols;
  const int64_t NV = Cpad == 16 ? 1 : 2, width = 16 * NV;
  const int64_t plane_elems = mul_checked(mul_checked(P, Cb_g, op), PS, op);
  const int64_t bw_elems = mul_checked(Q, Cpad, op);
  const int64_t acc_rows = mul_checked(T, Cb_g, op), acc_group = mul_checked(acc_rows, Cpad, op);
  const int64_t acc_size = mul_checked(acc_group, G, op);
  const int64_t HWb = g.big_hw(), HWs = g.small_hw(), Hb = g.Hb, Wb = g.Wb;
  // The output gradient's rows in the flat domain: with an even width its image is the flat domain
  // (one row of Q values); an odd one gives Hs rows of Ws values Wf apart.
  const bool one_row = g.Ws % 2 == 0;
  const int64_t NR = one_row ? 1 : g.Hs, RL = one_row ? Q : g.Ws, RW = one_row ? Q : Wf;
  // The gather's offsets: channel o at o * HWs (uint16 units, scale 2), used where they fit int32.
  const __m512i step =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(static_cast<int>(std::min<int64_t>(HWs, 1 << 26))));
  // Images per pass of the tiles: the q pairs of up to NB images (at least 256 pairs where the images
  // are small) are summed before a tile's float32 sums are read and written, not one image's.
  const int64_t NB =
      std::clamp<int64_t>(ceil_div(256, std::max<int64_t>(kp, 1)), 1, std::min<int64_t>(g.N, 8));
  std::vector<int64_t> bw_image(static_cast<size_t>(NB));  // the tiles' per-image offsets of bw
  for (int64_t i = 0; i < NB; ++i) bw_image[static_cast<size_t>(i)] = i * bw_elems;
  const int64_t planes_all = mul_checked(plane_elems, NB, op), bw_all = mul_checked(bw_elems, NB, op);
  std::vector<float> acc(static_cast<size_t>(acc_size));
  // AMX (Note [bfloat16 convolution on AMX]): 16 rows of one tap (input channels in multiples of 16)
  // by chunks of 16 q pairs.
  const bool amx = settings::bf16_amx() && Cb_g % 16 == 0 && kp % 16 == 0 && kp > 0 && amx_usable();
  sum_in_slice_order(g.N, 1, acc_size, acc.data(), false, [&](int64_t n0, int64_t n1, float* sum) {
    thread_local std::vector<uint16_t> planes_buf, bw_buf;
    uint16_t* planes_b = scratch(planes_buf, planes_all);
    uint16_t* bw_b = scratch(bw_buf, bw_all);
    if (amx) amx_configure(16);
    for (int64_t nb0 = n0; nb0 < n1; nb0 += NB)
      for (int64_t gi = 0; gi < G; ++gi) {
        const int64_t cnt = std::min(NB, n1 - nb0);
        for (int64_t n = nb0; n < nb0 + cnt; ++n) {
          uint16_t* planes = planes_b + (n - nb0) * plane_elems;
          uint16_t* bw = bw_b + (n - nb0) * bw_elems;
          const uint16_t* x = big + (n * g.Cb + gi * Cb_g) * HWb;
          for (int64_t p : pl.order) {
            const int64_t from = pl.src[static_cast<size_t>(p)];
            for (int64_t c = 0; c < Cb_g; ++c) {
              const uint16_t* xc = x + c * HWb;
              fill_plane<uint16_t>(
                  pl, p, planes + (p * Cb_g + c) * PS, from >= 0 ? planes + (from * Cb_g + c) * PS : nullptr,
                  PS,
                  [&](uint16_t* d, int64_t yy, int64_t col, int64_t cs, int64_t len) {
                    if (cs == 1)
                      copy_row(d, xc + yy * Wb + col, len);
                    else
                      take_strided(d, xc + yy * Wb + col, cs, len);
                  },
                  [&](int64_t yy, int64_t col) -> uint16_t {
                    return yy < 0 || yy >= Hb || col < 0 || col >= Wb ? uint16_t{0} : xc[yy * Wb + col];
                  });
            }
          }
          // bw[q / 2][o][q % 2] = dy[o] at flat q, zero on the extra column. A row's values from its
          // (even) start are 32-bit words of every channel: 16 channels' words are a 16 x 16 transpose of
          // words (rows of fewer than 8 words, where most of a transpose's shuffles would be wasted, are
          // gathered); the last value of an odd row is alone in its pair and copied by itself.
          const uint16_t* dy = small + (n * g.Cs + gi * Cs_g) * HWs;
          const auto single = [&](int64_t q, const uint16_t* src) {
            uint16_t* d = bw + (q >> 1) * 2 * Cpad + (q & 1);
            for (int64_t o = 0; o < Cs_g; ++o) d[2 * o] = src[o * HWs];
          };
          if (!one_row) std::memset(bw, 0, static_cast<size_t>(bw_elems) * 2);
          for (int64_t r = 0; r < NR; ++r) {
            const int64_t q0 = r * RW;
            const uint16_t* row = dy + r * RL;
            const int64_t words = RL / 2;
            auto* d = reinterpret_cast<uint32_t*>(bw) + q0 / 2 * Cpad;
            const bool gather = words < 8 && 16 * HWs < (int64_t{1} << 30);  // int32 indices at scale 2
            for (int64_t j0 = 0; j0 < words; j0 += 16)
              for (int64_t o = 0; o < Cpad; o += 16) {
                const uint16_t* src = row + o * HWs + 2 * j0;
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
            if (RL & 1) single(q0 + RL - 1, row + RL - 1);
          }
        }
        // Rows k = (tap, input channel), 8 (16 with one vector) at a time whatever the channel count, over
        // the batch's images (the tile's taps).
        float* sg = sum + gi * acc_group;
        if (amx) {
          for (int64_t k0 = 0; k0 < acc_rows; k0 += 32) {
            const uint16_t* a[2];
            for (int64_t m = 0; m < 2 && k0 + 16 * m < acc_rows; ++m) {
              const int64_t t = (k0 + 16 * m) / Cb_g, c = (k0 + 16 * m) % Cb_g;
              a[m] = planes_b + (pl.plane[t] * Cb_g + c) * PS + pl.off[t];
            }
            for (int64_t col = 0; col < Cpad; col += 32) {
              float* cptr = sg + k0 * Cpad + col;
              const uint16_t* bp = bw_b + 2 * col;
              const bool two_rows = acc_rows - k0 >= 32, two_cols = Cpad - col >= 32;
              if (two_rows && two_cols)
                amx_weight_block<2, 2>(cnt, kp / 16, a, plane_elems, PS, bp, bw_elems, 2 * Cpad, cptr, Cpad);
              else if (two_rows)
                amx_weight_block<2, 1>(cnt, kp / 16, a, plane_elems, PS, bp, bw_elems, 2 * Cpad, cptr, Cpad);
              else if (two_cols)
                amx_weight_block<1, 2>(cnt, kp / 16, a, plane_elems, PS, bp, bw_elems, 2 * Cpad, cptr, Cpad);
              else
                amx_weight_block<1, 1>(cnt, kp / 16, a, plane_elems, PS, bp, bw_elems, 2 * Cpad, cptr, Cpad);
            }
          }
          continue;
        }
        const int64_t max_rows = NV == 1 ? 2 * kRows : kRows;
        for (int64_t k0 = 0; k0 < acc_rows; k0 += max_rows) {
          const int64_t rows = std::min(max_rows, acc_rows - k0);
          int64_t arow[2 * kRows];
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t t = (k0 + r) / Cb_g, c = (k0 + r) % Cb_g;
            arow[r] = (pl.plane[t] * Cb_g + c) * PS + pl.off[t];
          }
          for (int64_t col = 0; col < Cs_g; col += width) {
            const __mmask16 m[2] = {lanes(Cs_g - col), lanes(Cs_g - col - 16)};
            float* cptr = sg + k0 * Cpad + col;
            const auto run_tile = [&](auto nv, auto one) {
              tile_rows<decltype(nv)::value, true, decltype(one)::value>(
                  rows, cnt, kp, planes_b, arow, plane_elems, bw_b + 2 * col, bw_image.data(), 2 * Cpad, cptr,
                  Cpad, nullptr, m);
            };
            using One = std::integral_constant<int, 1>;
            using Two = std::integral_constant<int, 2>;
            if (cnt == 1)
              NV == 1 ? run_tile(One{}, std::true_type{}) : run_tile(Two{}, std::true_type{});
            else
              NV == 1 ? run_tile(One{}, std::false_type{}) : run_tile(Two{}, std::false_type{});
          }
        }
      }
    if (amx) amx_release();
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
