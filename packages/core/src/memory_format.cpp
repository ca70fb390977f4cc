// Memory formats: strides per format, layout predicates, and empty_like_in.
//
// Note [Preserving a layout]
// As in PyTorch, `preserve_format` (the default of clone, to, float, *_like)
// keeps an input's exact strides when its elements form a dense,
// non-overlapping block in some order (a transpose, a permute, channels-last),
// so `x.t().clone()` is again transposed. Any other input (a slice with gaps,
// an expanded tensor) gets dense strides in the order of its own strides
// (layout_order), so a slice of a channels-last tensor copies to a
// channels-last one.
#include "flambeau/memory_format.h"

#include <algorithm>
#include <numeric>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/result_layout.h"

namespace flambeau {

const char* memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous:
      return "contiguous_format";
    case MemoryFormat::Preserve:
      return "preserve_format";
    case MemoryFormat::ChannelsLast:
      return "channels_last";
    case MemoryFormat::ChannelsLast3d:
      return "channels_last_3d";
  }
  return "?";
}

namespace {
/// The dims of a channels-last layout from outermost to innermost: N, spatial..., C.
Shape channels_last_order(size_t rank) {
  Shape order{0};
  for (size_t d = 2; d < rank; ++d) order.push_back(static_cast<int64_t>(d));
  order.push_back(1);
  return order;
}

/// Dense strides for `sizes` with dims laid out in `order` (outermost first). A 0 size counts as 1,
/// as in PyTorch's contiguous and inferred strides; `raw` multiplies it as it is (PyTorch's
/// channels-last strides, where an empty dim makes the outer strides 0).
Shape strides_in_order(IntArrayRef sizes, const Shape& order, bool raw = false) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = s;
    // Sizes were validated when the tensor was made, so this product fits.
    s *= raw ? sizes[order[k]] : std::max<int64_t>(sizes[order[k]], 1);
  }
  return strides;
}

size_t channels_last_rank(MemoryFormat f) { return f == MemoryFormat::ChannelsLast ? 4 : 5; }
}  // namespace

Shape strides_for_memory_format(IntArrayRef sizes, MemoryFormat format, const char* op) {
  switch (format) {
    case MemoryFormat::Contiguous:
      return contiguous_strides(sizes);
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d: {
      const size_t rank = channels_last_rank(format);
      FB_CHECK_VALUE(sizes.size() == rank, "[", op, "] ", memory_format_name(format), " needs a ", rank,
                     "-d tensor, got shape ", shape_str(sizes));
      return strides_in_order(sizes, channels_last_order(rank), /*raw=*/true);
    }
    case MemoryFormat::Preserve:
      break;
  }
  FB_INTERNAL_ASSERT(false, "[", op, "] preserve_format has no strides of its own");
  return {};
}

namespace {
/// Strides dense in `order` (outermost first), size-1 dims skipped, sizes multiplied as they are.
bool strides_match_raw(const Tensor& self, const Shape& order) {
  int64_t expected = 1;
  for (size_t k = order.size(); k-- > 0;) {
    const int64_t size = self.sizes()[order[k]];
    if (size == 1) continue;
    if (self.strides()[order[k]] != expected) return false;
    expected *= size;
  }
  return true;
}
}  // namespace

bool is_contiguous_in(const Tensor& self, MemoryFormat format) {
  switch (format) {
    case MemoryFormat::Preserve:
      return true;
    case MemoryFormat::Contiguous:
      return self.is_contiguous();
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d:
      if (static_cast<size_t>(self.dim()) != channels_last_rank(format)) return false;
      // PyTorch's rule: dense in the order C, W, H, (D,) N, size-1 dims skipped and raw sizes
      // multiplied, so an empty tensor counts when its strides are channels-last ones.
      return strides_match_raw(self, channels_last_order(static_cast<size_t>(self.dim())));
  }
  return false;
}

bool is_non_overlapping_and_dense(const Tensor& self) {
  if (self.is_contiguous()) return true;
  const int64_t n = self.dim();
  Shape order(n);
  std::iota(order.begin(), order.end(), 0);
  // Innermost first: by stride, ties (size-1 dims) by position.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return self.strides()[a] < self.strides()[b]; });
  int64_t expected = 1;
  for (int64_t d : order) {
    const int64_t size = self.sizes()[d];
    if (size == 1) continue;
    if (self.strides()[d] != expected) return false;
    expected *= size;
  }
  return true;
}

Shape layout_order(const Tensor& self) {
  // PyTorch's infer_dense_strides: an insertion sort of the dims, innermost
  // first, by stride (equal strides: the smaller size inside); a dim of stride
  // 0 stays where it is, and ties keep the row-major order.
  const int64_t n = self.dim();
  Shape inner_first(n);
  for (int64_t i = 0; i < n; ++i) inner_first[i] = n - 1 - i;
  auto compare = [&](int64_t a, int64_t b) -> int {
    const int64_t sa = self.strides()[a], sb = self.strides()[b];
    if (sa == 0 || sb == 0) return 0;
    if (sa != sb) return sa < sb ? -1 : 1;
    return self.sizes()[a] > self.sizes()[b] ? 1 : 0;
  };
  sort_dims_innermost_first(inner_first.data(), n, compare);
  return Shape(inner_first.rbegin(), inner_first.rend());
}

Tensor empty_like_in(const Tensor& self, ScalarType dtype, MemoryFormat format) {
  Shape strides;
  if (format == MemoryFormat::Preserve) {
    strides = is_non_overlapping_and_dense(self) ? Shape(self.strides().begin(), self.strides().end())
                                                 : strides_in_order(self.sizes(), layout_order(self));
  } else {
    if (format == MemoryFormat::Contiguous) return op::empty(self.sizes(), dtype, self.device());
    strides = strides_for_memory_format(self.sizes(), format, "empty_like");
  }
  // A dense block of numel elements, viewed with the chosen strides.
  const Tensor flat = op::empty(Shape{self.numel()}, dtype, self.device());
  return Tensor(std::make_shared<TensorImpl>(
      flat.impl()->storage(), dtype, Shape(self.sizes().begin(), self.sizes().end()), std::move(strides), 0));
}

}  // namespace flambeau
