#pragma once
// Note [Errors]
// User errors throw one of the classes below; core's Python module maps each to
// a Python exception, in every extension module, because the translator is
// registered globally:
//   TypeError           -> TypeError            wrong type or dtype
//   ValueError          -> flambeau_core.FlambeauError, a subclass of both
//                          RuntimeError (what PyTorch raises, so PyTorch code
//                          catches it) and ValueError: bad shapes, sizes, values
//                          and memory layouts
//   IndexError          -> IndexError           an index or dim out of range
//   NotImplementedError -> NotImplementedError
//   RuntimeError        -> RuntimeError         failures that are not a bad
//                          argument (out of memory, a missing package, state)
// Python code in the other packages raises flambeau_core.FlambeauError for the
// same kind of error. Messages start with "[op]" and name the shapes, dtypes
// and devices involved. Internal bugs use FB_INTERNAL_ASSERT, which says so in
// the message.
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "flambeau/macros.h"

namespace flambeau {

struct FB_API Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct FB_API TypeError : Error {
  using Error::Error;
};
/// A bad shape, size, value or memory layout (flambeau_core.FlambeauError in Python).
struct FB_API ValueError : Error {
  using Error::Error;
};
struct FB_API IndexError : Error {
  using Error::Error;
};
struct FB_API NotImplementedError : Error {
  using Error::Error;
};
/// Generic runtime failure (RuntimeError in Python).
struct FB_API RuntimeError : Error {
  using Error::Error;
};

/// "(2, 3)" for a shape; "()" for a scalar.
FB_API std::string shape_str(std::span<const int64_t> shape);
inline std::string shape_str(const std::vector<int64_t>& s) { return shape_str(std::span<const int64_t>(s)); }

namespace detail {
template <class... Args>
std::string cat_str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] FB_API void internal_assert_fail(const char* cond, const char* file, int line,
                                              const std::string& msg);
}  // namespace detail

}  // namespace flambeau

#define FB_CHECK_IMPL(cls, cond, ...)                                  \
  do {                                                                 \
    if (!(cond)) [[unlikely]]                                          \
      throw ::flambeau::cls(::flambeau::detail::cat_str(__VA_ARGS__)); \
  } while (0)
/// FB_CHECK_VALUE(a.dim() == 2, "[mm] expected a 2-D tensor, got shape ", shape_str(a.sizes()));
#define FB_CHECK_VALUE(cond, ...) FB_CHECK_IMPL(ValueError, cond, __VA_ARGS__)
#define FB_CHECK_TYPE(cond, ...) FB_CHECK_IMPL(TypeError, cond, __VA_ARGS__)
#define FB_CHECK_INDEX(cond, ...) FB_CHECK_IMPL(IndexError, cond, __VA_ARGS__)
#define FB_CHECK(cond, ...) FB_CHECK_IMPL(RuntimeError, cond, __VA_ARGS__)
#define FB_INTERNAL_ASSERT(cond, ...)                                                                       \
  do {                                                                                                      \
    if (!(cond)) [[unlikely]]                                                                               \
      ::flambeau::detail::internal_assert_fail(#cond, __FILE__, __LINE__,                                   \
                                               ::flambeau::detail::cat_str("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
