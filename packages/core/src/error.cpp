#include "flambeau/error.h"

#include "flambeau/abi.h"

namespace flambeau {

std::string shape_str(std::span<const int64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

namespace detail {
void internal_assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  throw RuntimeError(cat_str("flambeau internal error (a bug, please report it): ", cond, " failed at ", file,
                             ":", line, msg.empty() ? "" : ": ", msg));
}
}  // namespace detail

const char* core_abi_tag() { return FLAMBEAU_ABI_TAG; }

}  // namespace flambeau
