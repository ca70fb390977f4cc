#pragma once
// Calls a generic lambda with the C++ type of a dtype:
//   visit_dtype(t, "op", [&](auto tag) { using T = typename decltype(tag)::type; ... });
// float16/bfloat16 exist as dtypes but have no kernels yet: TypeError naming op.
#include <cstdint>

#include "flambeau/dtype.h"
#include "flambeau/error.h"

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

}  // namespace flambeau
