#pragma once
// Vectorized float16/bfloat16 <-> float32 conversion of contiguous arrays,
// chosen by half_convert_stub (Note [CPU capabilities] in dispatch_stub.h):
//  * float16: F16C's vcvtph2ps / vcvtps2ph (8 lanes), or AVX-512's 16-lane
//    forms; baseline: the exact scalar routines of flambeau/half.h;
//  * bfloat16 -> float32 is a 16-bit shift (any ISA vectorizes it);
//    float32 -> bfloat16 uses AVX512-BF16's vcvtneps2bf16 where the CPU has
//    it, else the scalar round-to-nearest-even routine (vectorized by the
//    compiler under AVX2).
// All round to nearest, ties to even, and keep NaN a NaN; the results equal
// the scalar routines bit for bit (tested in test_dtypes_half.py).
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

enum HalfUnary : int { kUnaryExp, kUnarySin, kUnaryCos };

struct HalfConvert {
  const char* f16_name;   // "f16c", "avx512" or "scalar"
  const char* bf16_name;  // "avx512_bf16", "avx2" or "scalar"
  void (*f16_to_f32)(const uint16_t* src, float* dst, int64_t n);
  void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n);
  void (*bf16_to_f32)(const uint16_t* src, float* dst, int64_t n);
  void (*f32_to_bf16)(const float* src, uint16_t* dst, int64_t n);
  /// Fused add, sub, mul, div (index: VecOp kVecAdd .. kVecDiv) of contiguous
  /// 16-bit operands: out = a op b (alpha * b for add/sub), or a op b_value for
  /// every element when b is nullptr (a float32 number: Note [16-bit op and a
  /// number] in binary.cpp); one pass, float32 in registers. nullptr where the
  /// CPU lacks AVX-512.
  using FusedBinary = void (*)(const uint16_t* a, const uint16_t* b, float b_value, uint16_t* out, int64_t n,
                               float alpha);
  FusedBinary f16_binary[4];
  FusedBinary bf16_binary[4];
  /// Fused exp, sin and cos (index: HalfUnary) of contiguous 16-bit operands: widen,
  /// compute in float32 registers (sin/cos reduce the argument in double precision),
  /// round, store; results within one ulp of the correctly rounded ones, special values
  /// exact; the tail through masked loads, so every element gets the same arithmetic.
  /// Algorithms in half_math.cpp. nullptr where the CPU lacks AVX-512.
  using FusedUnary = void (*)(const uint16_t* a, uint16_t* out, int64_t n);
  FusedUnary f16_unary[3];
  FusedUnary bf16_unary[3];
};

FB_DECLARE_DISPATCH(const HalfConvert& (*)(), half_convert_stub);

/// The converters of the active instruction set.
const HalfConvert& half_convert();
/// Puts half_math.cpp's fused AVX-512 loops into c (native_bf16: the CPU has AVX512-BF16).
void fill_half_math_avx512(HalfConvert& c, bool native_bf16);

}  // namespace flambeau::cpu
