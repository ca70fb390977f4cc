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
  // Appended later: existing tables indexed by the first ten keep their order.
  UInt16,
  UInt32,
  UInt64,
  ComplexFloat,   // complex64: two float32
  ComplexDouble,  // complex128: two float64
};
inline constexpr int kNumScalarTypes = 15;

FB_API size_t itemsize(ScalarType t);
FB_API const char* dtype_name(ScalarType t);  // "float32", "int64", ...
FB_API bool is_floating(ScalarType t);  // real floating point (not complex), as torch's is_floating_point
FB_API bool is_integral(ScalarType t, bool include_bool);
FB_API bool is_complex(ScalarType t);
FB_API bool is_unsigned(ScalarType t);  // bool, uint8, uint16, uint32, uint64
/// complex64 -> float32, complex128 -> float64; other dtypes unchanged.
FB_API ScalarType to_real_dtype(ScalarType t);
/// float32 (and float16, bfloat16) -> complex64, float64 -> complex128; complex unchanged.
FB_API ScalarType to_complex_dtype(ScalarType t);

/// Category used by promotion: bool < integer < floating < complex.
enum class TypeCategory : int8_t { Bool = 0, Integer = 1, Floating = 2, Complex = 3 };
FB_API TypeCategory category(ScalarType t);

/// The result type of combining two tensors (PyTorch's torch.promote_types).
/// TypeError for uint16/uint32/uint64 with another integer or complex dtype, as PyTorch.
FB_API ScalarType promote_types(ScalarType a, ScalarType b);

/// Default dtypes for Python scalars that become tensors. kDefaultFloat is the
/// built-in default; the one in effect is default_float_dtype() (set_default_dtype).
inline constexpr ScalarType kDefaultFloat = ScalarType::Float32;
inline constexpr ScalarType kDefaultInt = ScalarType::Int64;
/// torch.get_default_dtype(): float32 unless set_default_dtype changed it.
FB_API ScalarType default_float_dtype();
/// torch.set_default_dtype(): float32 or float64 (also float16/bfloat16); TypeError otherwise.
FB_API void set_default_float_dtype(ScalarType t);
/// The complex dtype matching the default float dtype (complex64 for float32).
inline ScalarType default_complex_dtype() { return to_complex_dtype(default_float_dtype()); }

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
struct CppTypeToScalarType<uint16_t> {
  static constexpr ScalarType value = ScalarType::UInt16;
};
template <>
struct CppTypeToScalarType<uint32_t> {
  static constexpr ScalarType value = ScalarType::UInt32;
};
template <>
struct CppTypeToScalarType<uint64_t> {
  static constexpr ScalarType value = ScalarType::UInt64;
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
