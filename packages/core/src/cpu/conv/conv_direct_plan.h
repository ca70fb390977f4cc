#pragma once
// What the AVX-512 direct convolution kernels share (conv_direct.h): the flat
// kernel's plan (Note [Direct convolution]; conv_direct_avx512.cpp), used by the
// weight gradient too, and the channel-vectorized layout with its pixel classes
// (Note [Pixel classes]; conv_direct_cv_avx512.cpp), used by the weight gradient and
// the strided transposed convolution. Included only by the *_avx512.cpp files.
#include <immintrin.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "conv_direct.h"

namespace flambeau::cpu::conv_avx512 {

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

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The plan of g, or false when its sizes are out of the kernel's range.
bool make_plan(const ConvGeo& g, Plan& p);

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
void build_planes(const ConvGeo& g, const Plan& p, const float* img, float* buf, bool zero);

/// Weights packed per group and block of `blk` output channels: [g][cob][ci][tap][blk], zero past
/// the group's Sg output channels (Cg input channels per group).
std::vector<float> pack_weight_blocks(const ConvGeo& g, int64_t Cg, int64_t Sg, int64_t blk, const float* w);
/// The same into out (groups * ceil(Sg / blk) * Cg * kk * blk floats).
void pack_weight_blocks(const ConvGeo& g, int64_t Cg, int64_t Sg, int64_t blk, const float* w, float* out);

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
  /// splitting saves too little (Note [Pixel classes]) or backends.cpu.conv_pixel_classes
  /// is 'off' (read per call: benchmarks compare both in one process).
  std::vector<PixelClass> finish(int CV);

 private:
  const std::vector<int64_t>& toff_;
  const std::vector<int64_t>& woff_;
  uint64_t all_;
  std::vector<std::pair<int64_t, int64_t>> pixels_;
  std::vector<uint64_t> masks_;
};

struct CvPlan {
  int64_t Cg, Sg, Hp, Wp, PSz;      // channels per group, padded plane, floats per plane
  int64_t HW;                       // output pixels
  int64_t ncob;                     // blocks of kCvCo output channels per group
  std::vector<int64_t> toff;        // per tap: offset in the padded plane
  std::vector<int64_t> poff;        // per output pixel (padded to a block): offset of its window
  std::vector<PixelClass> classes;  // the forward's (Note [Pixel classes]); empty unless asked for
};

bool make_cv_plan(const ConvGeo& g, CvPlan& p, bool classes = false);

/// The zero-padded planes of one group of one image; the padding written only when `zero`
/// (the buffer's first image in a call: the next ones write the same positions).
void build_padded(const ConvGeo& g, const CvPlan& p, const float* img, float* buf, bool zero);
/// The same from a channels-last image (img: the group's first channel of pixel 0; pixels ld floats apart).
void build_padded_nhwc(const ConvGeo& g, const CvPlan& p, const float* img, int64_t ld, float* buf, bool zero);

/// What a forward kernel does to each output before it stores it (Note [Packed convolution weight]):
/// adds the residual's value at the same index (res: the residual's pointer where out is; null: none),
/// then the relu (NaN and -0 kept, as relu's loop).
struct Epilogue {
  const float* res = nullptr;
  bool relu = false;
};

/// Every class of pixels for nco (<= kCvCo) output channels: bias (may be null) plus the gathered sums,
/// stored with channels out_hw apart and pixels out_ps apart (the epilogue only on NCHW stores).
void run_classes(const std::vector<PixelClass>& classes, int64_t Cg, int64_t PSz, int64_t wci,
                 const float* planes, const float* wp, const float* bias, int64_t nco, float* out,
                 int64_t out_hw, int64_t out_ps = 1, Epilogue epi = {});

/// The channel-vectorized forward kernel (Note [Direct convolution], last part).
/// nhwc: big and small channels-last (N, H, W, C in memory), the weight as ever. wp: the weight packed
/// by pack_weight_blocks in blocks of kCvCo (null: packed here); residual and relu: Epilogue (NCHW).
void cv_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small,
             bool nhwc = false, const float* wp = nullptr, const float* residual = nullptr,
             bool relu = false);
/// Whether the forward pass takes the channel-vectorized kernel (backends.cpu.conv_direct_kernel).
bool prefer_cv(const ConvGeo& g);

}  // namespace flambeau::cpu::conv_avx512
