#include "flambeau/dtype.h"

#include <atomic>

#include "flambeau/error.h"

namespace flambeau {

namespace {
struct DTypeInfo {
  const char* name;
  size_t itemsize;
  TypeCategory category;
};
constexpr DTypeInfo kInfo[kNumScalarTypes] = {
    {"bool", 1, TypeCategory::Bool},           {"uint8", 1, TypeCategory::Integer},
    {"int8", 1, TypeCategory::Integer},        {"int16", 2, TypeCategory::Integer},
    {"int32", 4, TypeCategory::Integer},       {"int64", 8, TypeCategory::Integer},
    {"float16", 2, TypeCategory::Floating},    {"bfloat16", 2, TypeCategory::Floating},
    {"float32", 4, TypeCategory::Floating},    {"float64", 8, TypeCategory::Floating},
    {"uint16", 2, TypeCategory::Integer},      {"uint32", 4, TypeCategory::Integer},
    {"uint64", 8, TypeCategory::Integer},      {"complex64", 8, TypeCategory::Complex},
    {"complex128", 16, TypeCategory::Complex},
};
const DTypeInfo& info(ScalarType t) {
  auto i = static_cast<int>(t);
  FB_INTERNAL_ASSERT(i >= 0 && i < kNumScalarTypes, "bad ScalarType ", i);
  return kInfo[i];
}

std::atomic<ScalarType> g_default_float{ScalarType::Float32};
}  // namespace

size_t itemsize(ScalarType t) { return info(t).itemsize; }
const char* dtype_name(ScalarType t) { return info(t).name; }
TypeCategory category(ScalarType t) { return info(t).category; }
bool is_floating(ScalarType t) { return category(t) == TypeCategory::Floating; }
bool is_integral(ScalarType t, bool include_bool) {
  auto c = category(t);
  return c == TypeCategory::Integer || (include_bool && c == TypeCategory::Bool);
}
bool is_complex(ScalarType t) { return category(t) == TypeCategory::Complex; }
bool is_unsigned(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
    case ScalarType::UInt8:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64:
      return true;
    default:
      return false;
  }
}
ScalarType to_real_dtype(ScalarType t) {
  if (t == ScalarType::ComplexFloat) return ScalarType::Float32;
  if (t == ScalarType::ComplexDouble) return ScalarType::Float64;
  return t;
}
ScalarType to_complex_dtype(ScalarType t) {
  if (t == ScalarType::Float64 || t == ScalarType::ComplexDouble) return ScalarType::ComplexDouble;
  return ScalarType::ComplexFloat;
}

ScalarType default_float_dtype() { return g_default_float.load(std::memory_order_relaxed); }
void set_default_float_dtype(ScalarType t) {
  FB_CHECK_TYPE(is_floating(t),
                "[set_default_dtype] only floating-point types are supported as the default type, got ",
                dtype_name(t));
  g_default_float.store(t, std::memory_order_relaxed);
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  using S = ScalarType;
  if (a == b) return a;
  constexpr S b1 = S::Bool, u1 = S::UInt8, i1 = S::Int8, i2 = S::Int16, i4 = S::Int32, i8 = S::Int64,
              f2 = S::Float16, bf = S::BFloat16, f4 = S::Float32, f8 = S::Float64, u2 = S::UInt16,
              u4 = S::UInt32, u8 = S::UInt64, c8 = S::ComplexFloat, c16 = S::ComplexDouble;
  // No integer dtype holds both uint64 and a signed integer: PyTorch raises, and so does flambeau.
  constexpr S ER = static_cast<S>(-1);
  // PyTorch's promotion table (torch.promote_types), rows/cols in enum order. PyTorch refuses the
  // "barebones" unsigned types uint16/uint32/uint64 with bool, another integer or complex; flambeau
  // promotes them as NumPy and the Array API standard do (the smallest integer dtype holding both:
  // uint16 + int8 is int32, uint32 + int32 is int64), and with complex as any integer does (the complex).
  static constexpr S table[kNumScalarTypes][kNumScalarTypes] = {
      /*         b1   u1   i1   i2   i4   i8   f2   bf   f4   f8   u2   u4   u8   c8   c16 */
      /* b1  */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8, u2, u4, u8, c8, c16},
      /* u1  */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8, u2, u4, u8, c8, c16},
      /* i1  */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8, i4, i8, ER, c8, c16},
      /* i2  */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8, i4, i8, ER, c8, c16},
      /* i4  */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8, i4, i8, ER, c8, c16},
      /* i8  */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8, i8, i8, ER, c8, c16},
      /* f2  */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8, f2, f2, f2, c8, c16},
      /* bf  */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8, bf, bf, bf, c8, c16},
      /* f4  */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8, f4, f4, f4, c8, c16},
      /* f8  */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c16, c16},
      /* u2  */ {u2, u2, i4, i4, i4, i8, f2, bf, f4, f8, u2, u4, u8, c8, c16},
      /* u4  */ {u4, u4, i8, i8, i8, i8, f2, bf, f4, f8, u4, u4, u8, c8, c16},
      /* u8  */ {u8, u8, ER, ER, ER, ER, f2, bf, f4, f8, u8, u8, u8, c8, c16},
      /* c8  */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c16, c8, c8, c8, c8, c16},
      /* c16 */ {c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16},
  };
  const S r = table[static_cast<int>(a)][static_cast<int>(b)];
  if (r == ER)
    throw TypeError(detail::cat_str("Promotion of uint64 with a signed integer type is not supported (no integer "
                                    "dtype holds both), attempted to promote ",
                                    dtype_name(a), " and ", dtype_name(b)));
  return r;
}

}  // namespace flambeau
