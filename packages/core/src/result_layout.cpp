// The layout of an op's new result: suggest_memory_format, cat's format, the elementwise rule.
//
// Note [Result layout]
// As in PyTorch, an op's new result keeps its inputs' memory layout, by one of the rules an op's
// row in ops.yaml names (`layout:`; model.py's LAYOUT_RULES):
//   * elementwise (TensorIterator's): when every input has the result's shape and they are all
//     contiguous, all channels-last (3d) or all dense with one set of strides, the result is laid
//     out the same way; otherwise the result's dims are ordered by the inputs' strides: an insertion
//     sort, innermost first, where the first input whose strides of two dims differ decides (a
//     broadcast dim, stride 0, decides nothing; equal strides put the smaller dim inside), and the
//     result is dense in that order. So a channels-last input, alone or with a broadcast bias or a
//     scalar, gives a channels-last result, and in a mix of layouts the first input's wins.
//   * suggest(x) (pooling, batch norm, upsampling, padding): channels-last when x's strides are
//     channels-last-like (PyTorch's suggest_memory_format), else contiguous.
//   * suggest_unless_contiguous(x) (batch norm): contiguous when x is row-major (a channels-last x with
//     size-1 channels or a 1x1 image is both), else suggest(x), as PyTorch's CPU batch norm.
//   * conv_format(input, weight) (the convolutions and their weight gradient): channels-last when either
//     suggests it and the input has elements (conv_memory_format), as PyTorch's CPU backends lay out
//     the output, grad_input and grad_weight; the autograd formulas convert a gradient an op laid
//     out from another grad_output's layout (autograd's conv_grad_in_format).
//   * suggest_list (cat): the inputs' common suggested format, else contiguous.
//   * preserve(x) (sort): x's strides when x is dense, as clone's (Note [Preserving a layout]).
// The strides are PyTorch's, size-1 and size-0 dims included (a channels-last result multiplies
// the raw sizes, a contiguous one treats 0 as 1), so .stride() reads as PyTorch's. Out= and in-place
// forms write into the tensor they are given, whatever its layout.
#include "flambeau/result_layout.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "flambeau/ops.h"

namespace flambeau {

namespace {
// PyTorch's is_channels_last_strides_2d/3d: dims visited C, W, H, (D,) N, each stride at least the
// previous one times its size.
bool strides_like_channels_last(const Tensor& self, std::initializer_list<int> order) {
  const IntArrayRef sizes = self.sizes(), strides = self.strides();
  if (strides[1] == 0) return false;  // a broadcast channel dim: default to contiguous
  int64_t min = 0;
  for (int d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    // N111 with equal strides, or an N11W slice: ambiguous, contiguous.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

constexpr std::initializer_list<int> kOrder2d = {1, 3, 2, 0};
constexpr std::initializer_list<int> kOrder3d = {1, 4, 3, 2, 0};

// A tensor of `sizes` with `strides` that are dense in some order: numel elements in one block.
Tensor empty_strided_dense(IntArrayRef sizes, Shape strides, ScalarType dtype, Device device) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;  // the caller checked the result's size (Note [Size overflow])
  const Tensor flat = op::empty(Shape{numel}, dtype, device);
  return Tensor(std::make_shared<TensorImpl>(flat.impl()->storage(), dtype, Shape(sizes.begin(), sizes.end()),
                                             std::move(strides), 0));
}

// Strides exactly those of a contiguous tensor of its sizes (a size-1 dim's too).
bool has_row_major_strides(const Tensor& t) {
  int64_t expected = 1;
  for (int64_t d = t.dim(); d-- > 0;) {
    if (t.strides()[d] != expected) return false;
    expected *= std::max<int64_t>(t.sizes()[d], 1);
  }
  return true;
}

// TensorIterator's reorder_dimensions and compatible strides over `inputs` broadcast to `sizes`.
Shape reordered_strides(IntArrayRef sizes, std::span<const Tensor* const> inputs) {
  const int nd = static_cast<int>(sizes.size());
  // Per input, the stride of each result dim: 0 where the input is broadcast (or has no such dim).
  // A size-1 dim of a size-1 result keeps its stride, as PyTorch's compute_strides.
  constexpr int kMaxDims = 64;
  if (nd > kMaxDims) return {};
  auto stride_of = [&](const Tensor& t, int d) -> int64_t {
    const int off = nd - static_cast<int>(t.dim());
    if (d < off) return 0;
    const int64_t size = t.sizes()[d - off];
    return (size == 1 && sizes[d] != 1) ? 0 : t.strides()[d - off];
  };
  auto should_swap = [&](int d0, int d1) -> int {
    for (const Tensor* t : inputs) {
      const int64_t s0 = stride_of(*t, d0), s1 = stride_of(*t, d1);
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (sizes[d0] > sizes[d1]) return 1;  // equal strides: the smaller dim goes inside
    }
    return 0;
  };
  int perm[kMaxDims];  // innermost first
  for (int i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  sort_dims_innermost_first(perm, nd, should_swap);
  bool row_major = true;
  for (int i = 0; i < nd && row_major; ++i) row_major = perm[i] == nd - 1 - i;
  if (row_major) return {};
  Shape strides(nd);
  int64_t s = 1;
  for (int i = 0; i < nd; ++i) {
    strides[perm[i]] = s;
    s *= sizes[perm[i]];
  }
  return strides;
}
}  // namespace

MemoryFormat suggest_memory_format(const Tensor& self) {
  if (self.dim() == 4 && strides_like_channels_last(self, kOrder2d)) return MemoryFormat::ChannelsLast;
  if (self.dim() == 5 && strides_like_channels_last(self, kOrder3d)) return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

MemoryFormat conv_memory_format(const Tensor& input, const Tensor& weight) {
  if (input.dim() != 4 || input.numel() == 0) return MemoryFormat::Contiguous;
  if (suggest_memory_format(input) == MemoryFormat::ChannelsLast ||
      (weight.dim() == 4 && suggest_memory_format(weight) == MemoryFormat::ChannelsLast))
    return MemoryFormat::ChannelsLast;
  return MemoryFormat::Contiguous;
}

MemoryFormat cat_memory_format(std::span<const Tensor> tensors) {
  std::optional<MemoryFormat> format;
  for (const Tensor& t : tensors) {
    const MemoryFormat f = suggest_memory_format(t);
    if (f == MemoryFormat::Contiguous || (format && *format != f)) return MemoryFormat::Contiguous;
    format = f;
  }
  return format.value_or(MemoryFormat::Contiguous);
}

Tensor empty_in_format(IntArrayRef sizes, ScalarType dtype, Device device, MemoryFormat format) {
  // PyTorch's strides (strides_for_memory_format): an empty dim makes the outer strides 0.
  if ((format == MemoryFormat::ChannelsLast && sizes.size() == 4) ||
      (format == MemoryFormat::ChannelsLast3d && sizes.size() == 5))
    return empty_strided_dense(sizes, strides_for_memory_format(sizes, format, "empty"), dtype, device);
  return op::empty(sizes, dtype, device);
}

Shape elementwise_result_strides(IntArrayRef sizes, std::span<const Tensor* const> inputs) {
  if (inputs.empty()) return {};
  // PyTorch's fast setup: every input of one shape (0-d inputs among others break it).
  bool same_shape = true, contiguous = true;
  for (const Tensor* t : inputs) {
    same_shape = same_shape && std::ranges::equal(t->sizes(), inputs[0]->sizes());
    contiguous = contiguous && t->is_contiguous();
  }
  same_shape = same_shape && std::ranges::equal(inputs[0]->sizes(), sizes);
  if (same_shape) {
    if (contiguous) return {};
    bool cl = sizes.size() == 4, cl3d = sizes.size() == 5, dense = true;
    for (const Tensor* t : inputs) {
      cl = cl && is_contiguous_in(*t, MemoryFormat::ChannelsLast);
      cl3d = cl3d && is_contiguous_in(*t, MemoryFormat::ChannelsLast3d);
      dense = dense && is_non_overlapping_and_dense(*t) &&
              std::ranges::equal(t->strides(), inputs.back()->strides());
    }
    if (cl) return strides_for_memory_format(sizes, MemoryFormat::ChannelsLast, "empty");
    if (cl3d) return strides_for_memory_format(sizes, MemoryFormat::ChannelsLast3d, "empty");
    if (dense) return Shape(inputs[0]->strides().begin(), inputs[0]->strides().end());
  }
  if (sizes.size() <= 1) return {};
  // Inputs with row-major strides (size-1 dims included), broadcast or 0-d, order no dims: the sort
  // below would keep the row-major order (`t + 2.5`, `t * bias`), so skip it. A 0 in the result's
  // sizes can reorder even these (equal strides, the smaller dim inside): sort then.
  bool row_major = std::ranges::none_of(sizes, [](int64_t s) { return s == 0; });
  for (const Tensor* t : inputs) {
    if (t->dim() > static_cast<int64_t>(sizes.size())) return {};  // malformed (the meta step raises)
    row_major = row_major && has_row_major_strides(*t);
  }
  if (row_major) return {};
  return reordered_strides(sizes, inputs);
}

Tensor empty_elementwise(IntArrayRef sizes, ScalarType dtype, Device device,
                         std::span<const Tensor* const> inputs) {
  Shape strides = elementwise_result_strides(sizes, inputs);
  if (strides.empty()) return op::empty(sizes, dtype, device);
  return empty_strided_dense(sizes, std::move(strides), dtype, device);
}

}  // namespace flambeau
