#pragma once
// Calls a generic lambda with the C++ type of a dtype:
//   visit_dtype(t, "op", [&](auto tag) { using T = typename decltype(tag)::type; ... });
// visit_dtype covers bool, uint8, int8..int64, float32 and float64; the other
// dtypes (float16, bfloat16, uint16..uint64, complex) raise a TypeError naming
// op. Kernels widened to them opt in with visit_dtypes<Set> / visit_dtype_all
// (below), which pass Half, BFloat16, uint16_t.., complex64/complex128.
#include <cstdint>
#include <utility>

#include "flambeau/dtype.h"
#include "flambeau/error.h"
#include "flambeau/half.h"

namespace flambeau {

template <class T>
struct type_tag {
  using type = T;
};

template <class F>
decltype(auto) visit_dtype(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Bool:
      return f(type_tag<bool>{});
    case ScalarType::UInt8:
      return f(type_tag<uint8_t>{});
    case ScalarType::Int8:
      return f(type_tag<int8_t>{});
    case ScalarType::Int16:
      return f(type_tag<int16_t>{});
    case ScalarType::Int32:
      return f(type_tag<int32_t>{});
    case ScalarType::Int64:
      return f(type_tag<int64_t>{});
    case ScalarType::Float32:
      return f(type_tag<float>{});
    case ScalarType::Float64:
      return f(type_tag<double>{});
    default:
      break;
  }
  throw TypeError(detail::cat_str("[", op, "] dtype ", dtype_name(t), " is not supported yet"));
}

/// Dtype sets of visit_dtypes (or them together).
enum DtypeSet : unsigned {
  kDtBool = 1,      // bool
  kDtInts = 2,      // uint8, int8, int16, int32, int64
  kDtUInts = 4,     // uint16, uint32, uint64
  kDtFloats = 8,    // float32, float64
  kDtHalf = 16,     // float16, bfloat16
  kDtComplex = 32,  // complex64, complex128
  kDtReal = kDtBool | kDtInts | kDtUInts | kDtFloats | kDtHalf,
  kDtAll = kDtReal | kDtComplex,
};

/// The set a dtype belongs to.
inline unsigned dtype_set_of(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return kDtBool;
    case ScalarType::UInt8:
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64:
      return kDtInts;
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64:
      return kDtUInts;
    case ScalarType::Float32:
    case ScalarType::Float64:
      return kDtFloats;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return kDtHalf;
    default:
      return kDtComplex;
  }
}

/// As visit_dtype, for the dtypes in Set (a DtypeSet mask); the others raise
/// "[op] is not supported for dtype X" (TypeError).
template <unsigned Set, class F>
decltype(auto) visit_dtypes(ScalarType t, const char* op, F&& f) {
  if (Set & dtype_set_of(t)) {
    switch (t) {
#define FB_VISIT_CASE(S, T, set)        \
  case ScalarType::S:                   \
    if constexpr ((Set & (set)) != 0) { \
      return f(type_tag<T>{});          \
    }                                   \
    break;
      FB_VISIT_CASE(Bool, bool, kDtBool)
      FB_VISIT_CASE(UInt8, uint8_t, kDtInts)
      FB_VISIT_CASE(Int8, int8_t, kDtInts)
      FB_VISIT_CASE(Int16, int16_t, kDtInts)
      FB_VISIT_CASE(Int32, int32_t, kDtInts)
      FB_VISIT_CASE(Int64, int64_t, kDtInts)
      FB_VISIT_CASE(Float16, Half, kDtHalf)
      FB_VISIT_CASE(BFloat16, BFloat16, kDtHalf)
      FB_VISIT_CASE(Float32, float, kDtFloats)
      FB_VISIT_CASE(Float64, double, kDtFloats)
      FB_VISIT_CASE(UInt16, uint16_t, kDtUInts)
      FB_VISIT_CASE(UInt32, uint32_t, kDtUInts)
      FB_VISIT_CASE(UInt64, uint64_t, kDtUInts)
      FB_VISIT_CASE(ComplexFloat, complex64, kDtComplex)
      FB_VISIT_CASE(ComplexDouble, complex128, kDtComplex)
#undef FB_VISIT_CASE
    }
  }
  throw TypeError(detail::cat_str("[", op, "] is not supported for dtype ", dtype_name(t)));
}

/// visit_dtypes over every dtype.
template <class F>
decltype(auto) visit_dtype_all(ScalarType t, const char* op, F&& f) {
  return visit_dtypes<kDtAll>(t, op, std::forward<F>(f));
}

}  // namespace flambeau
