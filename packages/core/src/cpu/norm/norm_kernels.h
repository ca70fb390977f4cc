#pragma once
// Note [Normalization kernels]
// The inner loops of batch/layer/group norm, dropout and embedding_bag, on raw
// pointers, compiled per instruction set like the elementwise loops (Note [CPU
// capabilities] in dispatch_stub.h): norm_kernels.inc is included by
// norm_kernels_base.cpp, norm_kernels_avx2.cpp and norm_kernels_avx512.cpp,
// which register their tables with norm_table_stub. The kernels in
// norm_batch.cpp, norm_layer.cpp, norm_dropout.cpp and embedding.cpp do the
// checks, the layout and the threading, and call these loops per row (a row is
// L contiguous elements) or per column block.
//
// Statistics are one pass, shifted: sum(x - pivot) and sum((x - pivot)^2) with
// a pivot near the data (an element of it), so var = s2/n - (s1/n)^2 does not
// cancel catastrophically when |mean| >> std. Partial sums run in SIMD lanes of
// the element type over blocks of at most kNormBlock elements and are added
// into double accumulators.
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

inline constexpr int64_t kNormBlock = 2048;

template <class T>
struct NormFns {
  /// s1 += sum(x - pivot), s2 += sum((x - pivot)^2) over a row.
  void (*row_moments)(const T* x, int64_t n, T pivot, double* s1, double* s2);
  /// y = (x - m) * a + b over a row (x - m first: exact near the mean when |mean| >> std).
  void (*row_affine)(const T* x, T* y, int64_t n, T m, T a, T b);
  /// sdy += sum(dy), sdyx += sum(dy * (x - m)) over a row.
  void (*row_dot2)(const T* dy, const T* x, int64_t n, T m, double* sdy, double* sdyx);
  /// dx = dy * a + (x - m) * k2 + k3 over a row.
  void (*row_bwd)(const T* dy, const T* x, T* dx, int64_t n, T a, T m, T k2, T k3);
  /// Per column j: s1[j] += x[j] - pivot[j], s2[j] += (x[j] - pivot[j])^2.
  void (*col_moments)(const T* x, int64_t n, const T* pivot, double* s1, double* s2);
  /// Per column j: sdy[j] += dy[j], sdyx[j] += dy[j] * (x[j] - m[j]).
  void (*col_dot2)(const T* dy, const T* x, int64_t n, const T* m, double* sdy, double* sdyx);
  /// y[j] = (x[j] - m[j]) * a[j] + b[j].
  void (*vec_affine)(const T* x, T* y, int64_t n, const T* m, const T* a, const T* b);
  /// dx[j] = dy[j] * a[j] + (x[j] - m[j]) * k2[j] + k3[j].
  void (*vec_bwd)(const T* dy, const T* x, T* dx, int64_t n, const T* a, const T* m, const T* k2,
                  const T* k3);
  /// Layer norm row: y = (x - mean) * rstd * w + b (w, b may be null).
  void (*ln_row)(const T* x, T* y, int64_t n, T mean, T rstd, const T* w, const T* b);
  /// Layer norm backward sums: s1 += sum(dy * w), s2 += sum(dy * w * (x - mean)) (w may be null).
  void (*ln_row_sums)(const T* dy, const T* x, const T* w, int64_t n, T mean, double* s1, double* s2);
  /// Layer norm backward row: dx = dy * w * rstd + (x - mean) * k2 + k3 (w may be null).
  void (*ln_row_bwd)(const T* dy, const T* x, const T* w, T* dx, int64_t n, T mean, T rstd, T k2, T k3);
  /// gw[j] += dy[j] * (x[j] - mean) * rstd (gw may be null), gb[j] += dy[j] (gb may be null).
  void (*ln_accum_wb)(const T* dy, const T* x, int64_t n, T mean, T rstd, double* gw, double* gb);
  /// Dropout of elements i = hi * 2^32 + lo + k, k < n (the caller splits at 2^32 boundaries):
  /// keep = mix(mix(i_lo ^ key_lo) + (hi ^ key_hi)) < threshold; y = keep ? x * scale : 0; mask = keep.
  void (*dropout)(const T* x, T* y, uint8_t* mask, int64_t n, uint32_t lo, uint32_t hi, uint64_t key,
                  uint32_t threshold, T scale);
  /// out = mask ? g * scale : 0.
  void (*dropout_bwd)(const T* g, const uint8_t* mask, T* out, int64_t n, T scale);
  /// dst += src * alpha.
  void (*row_axpy)(T* dst, const T* src, int64_t n, T alpha);
  /// dst = src * alpha.
  void (*row_scale)(T* dst, const T* src, int64_t n, T alpha);
  /// sum(a * b) in double.
  double (*row_dot)(const T* a, const T* b, int64_t n);
};

/// NormFns<float>'s row loops on bfloat16 tensors (Note [Batch norm in bfloat16] in norm_batch.cpp): each
/// value widened to float32 in the loop (exactly), the float32 loop's arithmetic in its order, and each
/// result rounded to nearest even (NaN kept a quiet NaN) as half_convert's f32_to_bf16 does, without a
/// float32 row in between. Bit for bit the float32 loop on widened copies, rounded, but for the sign of
/// a NaN that an invalid operation (inf - inf) makes: it comes from the operand order the compiler picks
/// per loop.
struct NormBf16Fns {
  /// s1 += sum(x - pivot), s2 += sum((x - pivot)^2) over a row.
  void (*row_moments)(const uint16_t* x, int64_t n, float pivot, double* s1, double* s2);
  /// y = bf16((x - m) * a + b).
  void (*row_affine)(const uint16_t* x, uint16_t* y, int64_t n, float m, float a, float b);
  /// sdy += sum(dy), sdyx += sum(dy * (x - m)) over a row.
  void (*row_dot2)(const uint16_t* dy, const uint16_t* x, int64_t n, float m, double* sdy, double* sdyx);
  /// dx = bf16(dy * a + (x - m) * k2 + k3).
  void (*row_bwd)(const uint16_t* dy, const uint16_t* x, uint16_t* dx, int64_t n, float a, float m, float k2,
                  float k3);
};

struct NormTable {
  const char* name;
  NormFns<float> f32;
  NormFns<double> f64;
  NormBf16Fns bf16;
};

void fill_norm_table_base(NormTable& t);
void fill_norm_table_avx2(NormTable& t);
void fill_norm_table_avx512(NormTable& t);

FB_DECLARE_DISPATCH(const NormTable& (*)(), norm_table_stub);

/// The table of the active instruction set (Note [CPU capabilities] in dispatch_stub.h).
const NormTable& norm_table();

template <class T>
const NormFns<T>& norm_fns() {
  if constexpr (sizeof(T) == 4)
    return norm_table().f32;
  else
    return norm_table().f64;
}

/// Note [Dropout hash]: the keep decision of dropout element i is a 32-bit
/// hash of i under a 64-bit key drawn from the generator (two rounds of a
/// multiply-xorshift finalizer: the low word of i, then its high word), kept
/// when below threshold = round((1 - p) * 2^32). It depends only on (key, i),
/// so results do not depend on the thread count.
static inline uint32_t dropout_mix(uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352dU;
  h ^= h >> 15;
  h *= 0x846ca68bU;
  h ^= h >> 16;
  return h;
}

}  // namespace flambeau::cpu
