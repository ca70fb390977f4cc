#pragma once
// Data types of tensor elements, their sizes and names, and PyTorch's type
// promotion rules.
#include <cstddef>
#include <cstdint>
#include <string>

#include "flambeau/macros.h"

namespace flambeau {

enum class ScalarType : int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};
inline constexpr int kNumScalarTypes = 10;

FB_API size_t itemsize(ScalarType t);
FB_API const char* dtype_name(ScalarType t);  // "float32", "int64", ...
FB_API bool is_floating(ScalarType t);
FB_API bool is_integral(ScalarType t, bool include_bool);

/// Category used by promotion: bool < integer < floating.
enum class TypeCategory : int8_t { Bool = 0, Integer = 1, Floating = 2 };
FB_API TypeCategory category(ScalarType t);

/// The result type of combining two tensors (PyTorch's torch.promote_types).
FB_API ScalarType promote_types(ScalarType a, ScalarType b);

/// Default dtypes for Python scalars that become tensors.
inline constexpr ScalarType kDefaultFloat = ScalarType::Float32;
inline constexpr ScalarType kDefaultInt = ScalarType::Int64;

template <class T>
struct CppTypeToScalarType;
template <>
struct CppTypeToScalarType<bool> {
  static constexpr ScalarType value = ScalarType::Bool;
};
template <>
struct CppTypeToScalarType<uint8_t> {
  static constexpr ScalarType value = ScalarType::UInt8;
};
template <>
struct CppTypeToScalarType<int8_t> {
  static constexpr ScalarType value = ScalarType::Int8;
};
template <>
struct CppTypeToScalarType<int16_t> {
  static constexpr ScalarType value = ScalarType::Int16;
};
template <>
struct CppTypeToScalarType<int32_t> {
  static constexpr ScalarType value = ScalarType::Int32;
};
template <>
struct CppTypeToScalarType<int64_t> {
  static constexpr ScalarType value = ScalarType::Int64;
};
template <>
struct CppTypeToScalarType<float> {
  static constexpr ScalarType value = ScalarType::Float32;
};
template <>
struct CppTypeToScalarType<double> {
  static constexpr ScalarType value = ScalarType::Float64;
};

}  // namespace flambeau
