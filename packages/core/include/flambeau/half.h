#pragma once
// Element types of the 16-bit floats and the complex dtypes.
//
// Half (float16, IEEE binary16) and BFloat16 (the top half of a float32) are
// storage types: kernels load them into float32, compute there and round back
// (round to nearest, ties to even, as PyTorch and the CPU instructions do).
// The scalar conversions below are exact bit manipulations and serve as the
// fallback of the vectorized ones (F16C, AVX512-BF16) in src/cpu/half_convert.cpp.
#include <bit>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "flambeau/dtype.h"

namespace flambeau {

namespace detail {

inline uint16_t fp32_to_fp16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return static_cast<uint16_t>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (x < 0x38800000u) {
    // |f| < 2^-14: a subnormal half. Adding 0.5 lines the half's units (2^-24)
    // up with float's mantissa at 0.5, and the FPU rounds to nearest even.
    const float a = std::bit_cast<float>(x) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(a) - 0x3f000000u));
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // rebias the exponent (127 -> 15) and round to nearest even
  return static_cast<uint16_t>(sign | (x >> 13));
}

inline float fp16_bits_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  if (em >= 0x7c00u) return std::bit_cast<float>(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
  if (em >= 0x400u) return std::bit_cast<float>(sign | ((em << 13) + 0x38000000u));
  const float v = static_cast<float>(em) * 5.9604644775390625e-08f;  // em * 2^-24
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(v));
}

inline uint16_t fp32_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

inline float bf16_bits_to_fp32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace detail

/// float16 element. Converts implicitly to and from float, so `a + b` computes in float32.
struct Half {
  uint16_t x;
  Half() = default;
  Half(float f) : x(detail::fp32_to_fp16_bits(f)) {}  // NOLINT(google-explicit-constructor)
  template <class T>
    requires std::is_arithmetic_v<T>
  explicit Half(T v) : Half(static_cast<float>(v)) {}
  static Half from_bits(uint16_t b) {
    Half h;
    h.x = b;
    return h;
  }
  operator float() const { return detail::fp16_bits_to_fp32(x); }  // NOLINT(google-explicit-constructor)
};

/// bfloat16 element (float32's sign, exponent and top 7 mantissa bits).
struct BFloat16 {
  uint16_t x;
  BFloat16() = default;
  BFloat16(float f) : x(detail::fp32_to_bf16_bits(f)) {}  // NOLINT(google-explicit-constructor)
  template <class T>
    requires std::is_arithmetic_v<T>
  explicit BFloat16(T v) : BFloat16(static_cast<float>(v)) {}
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.x = b;
    return h;
  }
  operator float() const { return detail::bf16_bits_to_fp32(x); }  // NOLINT(google-explicit-constructor)
};

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

template <>
struct CppTypeToScalarType<Half> {
  static constexpr ScalarType value = ScalarType::Float16;
};
template <>
struct CppTypeToScalarType<BFloat16> {
  static constexpr ScalarType value = ScalarType::BFloat16;
};
template <>
struct CppTypeToScalarType<complex64> {
  static constexpr ScalarType value = ScalarType::ComplexFloat;
};
template <>
struct CppTypeToScalarType<complex128> {
  static constexpr ScalarType value = ScalarType::ComplexDouble;
};

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool is_complex_v = std::is_same_v<T, complex64> || std::is_same_v<T, complex128>;

/// Converts between any two element types as PyTorch's static_cast_with_inter_type:
/// complex -> real keeps the real part; 16-bit floats go through float.
template <class To, class From>
inline To convert_element_as(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_complex_v<From>) {
    if constexpr (is_complex_v<To>)
      return To(static_cast<typename To::value_type>(v.real()),
                static_cast<typename To::value_type>(v.imag()));
    else
      return convert_element_as<To>(v.real());
  } else if constexpr (is_half_v<From>) {
    return convert_element_as<To>(static_cast<float>(v));
  } else if constexpr (is_complex_v<To>) {
    return To(convert_element_as<typename To::value_type>(v), 0);
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace flambeau
