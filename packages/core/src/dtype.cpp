#include "flambeau/dtype.h"

#include "flambeau/error.h"

namespace flambeau {

namespace {
struct DTypeInfo {
  const char* name;
  size_t itemsize;
  TypeCategory category;
};
constexpr DTypeInfo kInfo[kNumScalarTypes] = {
    {"bool", 1, TypeCategory::Bool},        {"uint8", 1, TypeCategory::Integer},
    {"int8", 1, TypeCategory::Integer},     {"int16", 2, TypeCategory::Integer},
    {"int32", 4, TypeCategory::Integer},    {"int64", 8, TypeCategory::Integer},
    {"float16", 2, TypeCategory::Floating}, {"bfloat16", 2, TypeCategory::Floating},
    {"float32", 4, TypeCategory::Floating}, {"float64", 8, TypeCategory::Floating},
};
const DTypeInfo& info(ScalarType t) {
  auto i = static_cast<int>(t);
  FB_INTERNAL_ASSERT(i >= 0 && i < kNumScalarTypes, "bad ScalarType ", i);
  return kInfo[i];
}
}  // namespace

size_t itemsize(ScalarType t) { return info(t).itemsize; }
const char* dtype_name(ScalarType t) { return info(t).name; }
TypeCategory category(ScalarType t) { return info(t).category; }
bool is_floating(ScalarType t) { return category(t) == TypeCategory::Floating; }
bool is_integral(ScalarType t, bool include_bool) {
  auto c = category(t);
  return c == TypeCategory::Integer || (include_bool && c == TypeCategory::Bool);
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  using S = ScalarType;
  if (a == b) return a;
  constexpr S b1 = S::Bool, u1 = S::UInt8, i1 = S::Int8, i2 = S::Int16, i4 = S::Int32, i8 = S::Int64,
              f2 = S::Float16, bf = S::BFloat16, f4 = S::Float32, f8 = S::Float64;
  // PyTorch's promotion table (torch.promote_types), rows/cols in enum order.
  static constexpr S table[kNumScalarTypes][kNumScalarTypes] = {
      /*        b1  u1  i1  i2  i4  i8  f2  bf  f4  f8 */
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

}  // namespace flambeau
