// The check steps of flip, tril/triu, masked_fill, cummax/cummin, logcumsumexp, complex, frexp,
// searchsorted, _cdist_euclidean, _sort_values and _dot_small, and the rules only they use (Note [Meta
// step], flambeau/meta.h): the checks their CPU kernels made before they became structured ops, with
// the same messages (some name the public op: cdist, sort), so every device and the meta device raise them.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "generic/nn_utils.h"
#include "tensor_iterator.h"

namespace flambeau::meta {

void check_flip_dims(const char* op, const Tensor& self, IntArrayRef dims) {
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  uint64_t seen = 0;  // dims below 64 (no allocation on every call); the others in `more`
  std::vector<bool> more;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, op);
    bool twice = false;
    if (w < 64) {
      twice = (seen >> w) & 1;
      seen |= uint64_t{1} << w;
    } else {
      more.resize(static_cast<size_t>(nd));
      twice = more[static_cast<size_t>(w)];
      more[static_cast<size_t>(w)] = true;
    }
    FB_CHECK_VALUE(!twice, "[", op, "] dim ", w, " appears multiple times in the list of dims");
  }
}

void check_triangle(const char* op, const Tensor& self) {
  FB_CHECK_VALUE(self.dim() >= 2, "[", op, "] input must have at least 2 dims, got shape ", shape_str(self.sizes()));
}

void check_masked_fill(const char* /*op*/, const Tensor& self, const Tensor& mask, const Scalar& value) {
  detail::check_masked_fill(self, mask, value);
}

void check_cum_extremum(const char* op, const Tensor& self) {
  // float16/bfloat16 compare as float32 (cpu/reduce/scan.cpp).
  if (self.numel() > 0 && dtype_set_of(self.dtype()) != kDtHalf) visit_dtype(self.dtype(), op, [](auto) {});
}

void check_logcumsumexp(const char* op, const Tensor& self) {
  FB_CHECK_TYPE(is_floating(self.dtype()), "[", op, "] expects a floating point tensor, got ",
                dtype_name(self.dtype()));
}

void check_complex_parts(const char* op, const Tensor& real, const Tensor& imag) {
  const ScalarType t = real.dtype();
  FB_CHECK_TYPE(t == imag.dtype() && (t == ScalarType::Float32 || t == ScalarType::Float64), "[", op,
                "] expects real and imag of one dtype, float32 or float64, got ", dtype_name(real.dtype()), " and ",
                dtype_name(imag.dtype()));
}

void check_frexp(const char* op, const Tensor& self) {
  const ScalarType t = self.dtype();
  FB_CHECK_TYPE(t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
                    t == ScalarType::Float64,
                "[", op, "] frexp: only supports floating-point dtypes (float16, bfloat16, float32, float64), got ",
                dtype_name(t), " (shape ", shape_str(self.sizes()), ")");
}

void check_searchsorted(const char* op, const Tensor& sorted_sequence, const Tensor& self, bool right,
                        std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  if (side) {
    FB_CHECK_VALUE(*side == "left" || *side == "right", "[", op, "] side must be 'left' or 'right', got '",
                   std::string(*side), "'");
    FB_CHECK_VALUE(!(right && *side == "left"), "[", op, "] side='left' and right=True contradict each other");
  }
  const Tensor& seq = sorted_sequence;
  FB_CHECK_VALUE(seq.dim() >= 1, "[", op, "] sorted_sequence must have at least 1 dim, got shape ",
                 shape_str(seq.sizes()));
  if (seq.dim() != 1) {
    bool ok = self.dim() == seq.dim();
    for (int64_t d = 0; ok && d + 1 < seq.dim(); ++d) ok = self.sizes()[d] == seq.sizes()[d];
    FB_CHECK_VALUE(ok, "[", op, "] sorted_sequence of shape ", shape_str(seq.sizes()), " and input of shape ",
                   shape_str(self.sizes()), " must match in all but the last dim (or sorted_sequence must be 1-D)");
  }
  if (sorter) {
    FB_CHECK_VALUE(std::ranges::equal(sorter->sizes(), seq.sizes()), "[", op, "] sorter of shape ",
                   shape_str(sorter->sizes()), " must have sorted_sequence's shape ", shape_str(seq.sizes()));
    FB_CHECK_TYPE(sorter->dtype() == ScalarType::Int64, "[", op, "] sorter must be int64, got ",
                  dtype_name(sorter->dtype()));
  }
}

void check_cdist(const char* /*op*/, const Tensor& x1, const Tensor& x2) {
  FB_CHECK_VALUE(x1.dim() == 3 && x2.dim() == 3 && x1.sizes()[0] == x2.sizes()[0] && x1.sizes()[2] == x2.sizes()[2],
                 "[cdist] expected inputs (B, P, M) and (B, R, M), got shapes ", shape_str(x1.sizes()), " and ",
                 shape_str(x2.sizes()));
  FB_CHECK_TYPE(x1.dtype() == x2.dtype() && (x1.dtype() == ScalarType::Float32 || x1.dtype() == ScalarType::Float64),
                "[cdist] expected two float32 or two float64 inputs, got ", dtype_name(x1.dtype()), " and ",
                dtype_name(x2.dtype()));
  const int64_t p = x1.sizes()[1], r = x2.sizes()[1], m = x1.sizes()[2];
  FB_CHECK_VALUE(p <= INT_MAX && r <= INT_MAX && m <= INT_MAX, "[cdist] expected at most ", INT_MAX,
                 " rows and columns for the matrix product, got shapes ", shape_str(x1.sizes()), " and ",
                 shape_str(x2.sizes()));
}

Shape cdist(const char* /*op*/, const Tensor& x1, const Tensor& x2) {
  return Shape{x1.sizes()[0], x1.sizes()[1], x2.sizes()[1]};
}

void check_sort_values(const char* /*op*/, const Tensor& self, int64_t dim) {
  // The dtypes of sort (complex raises naming the op and the dtype), then its dim.
  visit_dtypes<kDtReal>(self.dtype(), "sort", [](auto) {});
  wrap_dim(dim, self.dim(), "sort");
}

void check_dot_small(const char* op, const Tensor& self, const Tensor& tensor) {
  FB_CHECK_TYPE((self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64) &&
                    tensor.dtype() == self.dtype(),
                "[", op, "] needs two float32 or two float64 tensors, got ", dtype_name(self.dtype()), " and ",
                dtype_name(tensor.dtype()));
  FB_CHECK_VALUE(self.dim() == 1 && tensor.dim() == 1 && self.sizes()[0] == tensor.sizes()[0], "[", op,
                 "] needs two 1-D tensors of the same size, got shapes ", shape_str(self.sizes()), " and ",
                 shape_str(tensor.sizes()));
}

ScalarType real_float(const Tensor& self) {
  const ScalarType t = self.dtype();
  return to_real_dtype(is_complex(t) ? t : to_float_dtype(t));
}

}  // namespace flambeau::meta
