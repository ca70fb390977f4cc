// Math composites of the op table (mean, max.other, all, any, contiguous) and
// helpers of flambeau/ops.h: built from ops, so they need no kernel and no
// derivative of their own.
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {

Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    FB_CHECK_VALUE(x == y || x == 1 || y == 1, "[", op, "] shapes ", shape_str(a), " and ", shape_str(b),
                   " cannot be broadcast");
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

Tensor composite::contiguous(const Tensor& self, MemoryFormat memory_format) {
  FB_CHECK_VALUE(memory_format != MemoryFormat::Preserve,
                 "[contiguous] preserve_format is not a layout a tensor can be made contiguous in");
  if (memory_format != MemoryFormat::Contiguous)  // raises for a tensor of the wrong rank
    (void)strides_for_memory_format(self.sizes(), memory_format, "contiguous");
  return is_contiguous_in(self, memory_format) ? self : op::clone(self, memory_format);
}

Tensor to_dtype(const Tensor& self, ScalarType dtype) {
  return self.dtype() == dtype ? self : op::cast(self, dtype);
}

Tensor sum_to(const Tensor& self, IntArrayRef shape) {
  const IntArrayRef sizes = self.sizes();
  if (std::ranges::equal(sizes, shape)) return self;
  const int64_t lead = self.dim() - static_cast<int64_t>(shape.size());
  FB_CHECK_VALUE(lead >= 0, "[sum_to] cannot sum shape ", shape_str(sizes), " to the larger shape ",
                 shape_str(shape));
  Shape dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    const int64_t have = sizes[lead + i];
    FB_CHECK_VALUE(shape[i] == have || shape[i] == 1, "[sum_to] cannot sum shape ", shape_str(sizes),
                   " to shape ", shape_str(shape), " (shape ", shape_str(shape),
                   " does not broadcast to it)");
    if (shape[i] == 1 && have != 1) dims.push_back(lead + i);
  }
  const std::optional<ScalarType> dtype =
      is_floating(self.dtype()) ? std::optional<ScalarType>(self.dtype()) : std::nullopt;
  if (dims.empty()) return op::view(self, shape);
  Tensor r = op::sum(self, IntArrayRef(dims), /*keepdim=*/true, dtype);
  return lead == 0 ? r : op::view(r, shape);
}

Tensor composite::mean(const Tensor& input, OptionalIntArrayRef dim, bool keepdim,
                       std::optional<ScalarType> dtype) {
  const Tensor self = dtype ? to_dtype(input, *dtype) : input;
  FB_CHECK_TYPE(is_floating(self.dtype()) || is_complex(self.dtype()),
                "[mean] could not infer the output dtype: the input dtype must be a "
                "floating point dtype, got ",
                dtype_name(self.dtype()), "; convert it first, e.g. t.float().mean(), or pass dtype=");
  int64_t count = 1;
  if (!dim || dim->empty()) {
    count = self.numel();
  } else {
    for (int64_t d : *dim) count *= self.dim() == 0 ? 1 : self.sizes()[wrap_dim(d, self.dim(), "mean")];
  }
  if (self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16) {
    // PyTorch sums a 16-bit tensor into float32, divides by the count in float32 and rounds once: neither
    // the sum (65504 is float16's largest) nor the count (257 would be 256 in bfloat16) is rounded first.
    const Tensor q =
        op::div(op::sum(self, dim, keepdim, ScalarType::Float32),
                scalar_tensor(static_cast<double>(count), ScalarType::Float32, /*wrapped=*/true));
    return op::cast(q, self.dtype());
  }
  Tensor s = op::sum(self, dim, keepdim, std::nullopt);
  return op::div(s, scalar_tensor(static_cast<double>(count), self.dtype(), /*wrapped=*/true));
}

Tensor composite::max_other(const Tensor& self, const Tensor& other) { return op::maximum(self, other); }

namespace {
// all/any: the number of nonzero elements along dim, compared with the number reduced.
Tensor all_or_any(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, bool all) {
  // PyTorch reads an empty dim list as "reduce nothing" here (unlike sum, where it means every dim).
  if (dim && dim->empty()) return op::ne(self, scalar_to_tensor(Scalar(false)));
  const Tensor count = op::sum(op::ne(self, scalar_to_tensor(Scalar(false))), dim, keepdim, std::nullopt);
  if (!all) return op::gt(count, scalar_to_tensor(Scalar(0)));
  int64_t n = self.numel();
  if (dim) {
    n = 1;
    for (int64_t d : *dim) n *= self.dim() == 0 ? 1 : self.sizes()[wrap_dim(d, self.dim(), "all")];
  }
  return op::eq(count, scalar_to_tensor(Scalar(n)));
}
}  // namespace

// As PyTorch, a uint8 input gives a uint8 result (0 or 1), every other dtype a bool one.
Tensor composite::all(const Tensor& self, OptionalIntArrayRef dim, bool keepdim) {
  const Tensor r = all_or_any(self, dim, keepdim, true);
  return self.dtype() == ScalarType::UInt8 ? op::cast(r, ScalarType::UInt8) : r;
}
Tensor composite::any(const Tensor& self, OptionalIntArrayRef dim, bool keepdim) {
  const Tensor r = all_or_any(self, dim, keepdim, false);
  return self.dtype() == ScalarType::UInt8 ? op::cast(r, ScalarType::UInt8) : r;
}

}  // namespace flambeau
