// Composites of the "complex" section of the op table: trace and kron,
// built from op:: calls (any dtype, complex included; autograd goes through them).
#include <algorithm>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "generic/shape_utils.h"

namespace flambeau {

// The sum of the main diagonal of a 2-D tensor; integer and bool inputs give int64 (as sum).
Tensor composite::trace(const Tensor& self) {
  FB_CHECK_VALUE(self.dim() == 2, "[trace] expected a matrix (2-D tensor), got shape ",
                 shape_str(self.sizes()), " of dtype ", dtype_name(self.dtype()));
  return op::sum(op::diagonal(self, 0, 0, 1), std::nullopt, false, std::nullopt);
}

// Kronecker product: the shorter shape is padded with leading 1s; result size a_i * b_i in each dim.
// self is viewed as (a0, 1, a1, 1, ...), other as (1, b0, 1, b1, ...), their broadcast product
// (a0, b0, a1, b1, ...) reshaped to (a0*b0, a1*b1, ...).
Tensor composite::kron(const Tensor& self, const Tensor& other) {
  const int64_t nd = std::max(self.dim(), other.dim());
  Shape sa(static_cast<size_t>(2 * nd), 1), sb(static_cast<size_t>(2 * nd), 1),
      out(static_cast<size_t>(nd), 1);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t ia = i - (nd - self.dim()), ib = i - (nd - other.dim());
    const int64_t a = ia >= 0 ? self.sizes()[ia] : 1, b = ib >= 0 ? other.sizes()[ib] : 1;
    sa[2 * i] = a;
    sb[2 * i + 1] = b;
    FB_CHECK_VALUE(!__builtin_mul_overflow(a, b, &out[i]), "[kron] the result size in dim ", i,
                   " overflows int64: shapes ", shape_str(self.sizes()), " and ", shape_str(other.sizes()));
  }
  // The result's numel, checked before the inputs are made contiguous (an expanded input could be huge).
  int64_t numel = 1;
  for (int64_t s : out)
    FB_CHECK_VALUE(!__builtin_mul_overflow(numel, s, &numel), "[kron] the result of shapes ",
                   shape_str(self.sizes()), " and ", shape_str(other.sizes()), " is too large: shape ",
                   shape_str(out), " has more elements than int64 can count");
  const Tensor a = op::contiguous(self, MemoryFormat::Contiguous),
               b = op::contiguous(other, MemoryFormat::Contiguous);
  return op::reshape(op::mul(op::reshape(a, sa), op::reshape(b, sb)), out);
}

}  // namespace flambeau
