// Shape composites of the op table (reshape, flatten, expand_as, stack, index_put,
// softmax, matmul): built only from op:: calls, so autograd differentiates
// them through the ops they call, with no formula of their own.
#include <algorithm>
#include <memory>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/result_layout.h"
#include "generic/shape_utils.h"
#include "meta/bool_products.h"

namespace flambeau {

Tensor composite::reshape(const Tensor& self, IntArrayRef sizes) {
  Shape shape = detail::infer_size(sizes, self.numel(), "reshape");
  if (detail::compute_view_strides(self.sizes(), self.strides(), shape)) return op::view(self, shape);
  return op::view(op::clone(self, MemoryFormat::Contiguous), shape);
}

Tensor composite::flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) {
    wrap_dim(start_dim, 0, "flatten");
    wrap_dim(end_dim, 0, "flatten");
    return op::reshape(self, Shape{1});
  }
  const int64_t s = wrap_dim(start_dim, self.dim(), "flatten");
  const int64_t e = wrap_dim(end_dim, self.dim(), "flatten");
  FB_CHECK_VALUE(s <= e, "[flatten] start_dim (", start_dim, ") must not come after end_dim (", end_dim,
                 ") for a tensor of shape ", shape_str(self.sizes()));
  if (s == e) return self;
  Shape shape(self.sizes().begin(), self.sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= self.sizes()[d];
  shape.push_back(n);
  shape.insert(shape.end(), self.sizes().begin() + e + 1, self.sizes().end());
  return op::reshape(self, shape);
}

Tensor composite::expand_as(const Tensor& self, const Tensor& other) {
  return op::expand(self, other.sizes());
}

Tensor composite::stack(const TensorList& tensors, int64_t dim) {
  FB_CHECK_VALUE(!tensors.empty(), "[stack] expected a non-empty list of tensors");
  const auto first = tensors[0].sizes();
  for (size_t i = 1; i < tensors.size(); ++i) {
    const auto s = tensors[i].sizes();
    FB_CHECK_VALUE(std::equal(first.begin(), first.end(), s.begin(), s.end()),
                   "[stack] all tensors must have the same shape: tensor 0 has shape ", shape_str(first),
                   " but tensor ", i, " has shape ", shape_str(s));
  }
  const int64_t nd = tensors[0].dim() + 1;
  FB_CHECK_INDEX(dim >= -nd && dim < nd, "[stack] dimension ", dim, " out of range for stacking ", nd - 1,
                 "-d tensors (expected in [", -nd, ", ", nd - 1, "])");
  const int64_t d = dim < 0 ? dim + nd : dim;
  // PyTorch's stack is cat then a view when d is not the last dim: cat's layout (a channels-last one
  // included) is the result's.
  const MemoryFormat format = d < nd - 1 ? cat_memory_format(tensors) : MemoryFormat::Contiguous;
  const bool recorded = detail::g_forward_ad_active.load(std::memory_order_relaxed) ||
                        std::ranges::any_of(tensors, [](const Tensor& t) { return t.requires_grad(); });
  if (d < nd - 1 && !recorded) {
    // Note [Stack as cat]: same-shape inputs concatenated along d hold tensor k's slice j at
    // k * size(d) + j, so cat's out kernel writing a (.., n * size(d), ..) view of the stacked result
    // fills it, without a view per input. Autograd records the unsqueeze + cat form below instead.
    const OutputSpec spec = structured::cat(tensors, d);
    Shape shape = spec.shape;
    shape[d] = first[d];
    shape.insert(shape.begin() + d, static_cast<int64_t>(tensors.size()));
    if (format != MemoryFormat::Contiguous) {
      // Laid out as PyTorch's cat + view (Note [Result layout]): cat's channels-last block, its dim
      // d split in two; a tensor of its own, not a view.
      const Tensor flat = empty_in_format(spec.shape, spec.dtype, spec.device, format);
      op::cat.run_out(flat, tensors, d);
      const Tensor split = op::view(flat, shape);
      return Tensor(std::make_shared<TensorImpl>(flat.impl()->storage(), spec.dtype, shape,
                                                 Shape(split.strides().begin(), split.strides().end()), 0));
    }
    Tensor out = op::empty(shape, spec.dtype, spec.device);
    op::cat.run_out(op::view(out, spec.shape), tensors, d);
    return out;
  }
  if (format != MemoryFormat::Contiguous) {
    // Recorded: cat then a view, as PyTorch's, so the layout is cat's.
    const Tensor flat = op::cat(tensors, d);
    Shape shape(flat.sizes().begin(), flat.sizes().end());
    shape[d] = first[d];
    shape.insert(shape.begin() + d, static_cast<int64_t>(tensors.size()));
    return op::view(flat, shape);
  }
  TensorList parts;
  parts.reserve(tensors.size());
  for (const auto& t : tensors) parts.push_back(op::unsqueeze(t, d));
  return op::cat(parts, d);
}

Tensor composite::log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return op::_log_softmax(dtype ? to_dtype(self, *dtype) : self, dim);
}
Tensor composite::softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const Tensor x = dtype ? to_dtype(self, *dtype) : self;
  FB_CHECK_TYPE(is_floating(x.dtype()), "[softmax] needs a floating point tensor, got dtype ",
                dtype_name(x.dtype()));
  // CPU: one pass per row (Note [Softmax rows]); other devices: exp of their log_softmax kernel
  // (the Generic _softmax, src/generic/nn_ops.cpp).
  return op::_softmax(x, dim);
}

namespace {

[[noreturn]] void matmul_mismatch(const Tensor& a, const Tensor& b, int64_t ka, int64_t kb) {
  throw ValueError(detail::cat_str("[matmul] shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()),
                                   " cannot be multiplied: ", ka, " != ", kb));
}

}  // namespace

// NumPy semantics: 1-D operands are promoted to matrices (a row on the left,
// a column on the right) and the added dim is removed from the result; batch
// dims broadcast, then flatten to one batch dim for bmm.
Tensor composite::matmul(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  FB_CHECK_VALUE(da > 0 && db > 0, "[matmul] both arguments need at least 1 dimension, got shapes ",
                 shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  const int64_t ka = a.sizes()[da - 1];
  const int64_t kb = db == 1 ? b.sizes()[0] : b.sizes()[db - 2];
  if (ka != kb) matmul_mismatch(a, b, ka, kb);
  if (a.dtype() == ScalarType::Bool) {
    // Note [Bool products], named for matmul; 1-D @ 1-D is PyTorch's dot, which refuses bool even when empty.
    const bool dot = da == 1 && db == 1;
    const bool empty = a.numel() == 0 || b.numel() == 0;  // with ka > 0: exactly when the result is
    meta::check_bool_product("matmul", a.dtype(), dot || !empty ? 1 : 0, dot ? 1 : ka);
  }

  if (da == 1 && db == 1) return op::view(op::mm(op::unsqueeze(a, 0), op::unsqueeze(b, 1)), Shape{});
  if (da == 2 && db == 1) return op::squeeze(op::mm(a, op::unsqueeze(b, 1)), Shape{1});
  if (da == 1 && db == 2) return op::squeeze(op::mm(op::unsqueeze(a, 0), b), Shape{0});
  if (da == 2 && db == 2) return op::mm(a, b);

  // (..., n, k) @ (k, m): fold the batch into the rows, one GEMM instead of a batch of small ones.
  if (db == 2) {
    Shape out_shape(a.sizes().begin(), a.sizes().end() - 1);
    out_shape.push_back(b.sizes()[1]);
    int64_t rows = 1;
    for (int64_t i = 0; i + 1 < da; ++i) rows *= a.sizes()[i];
    return op::reshape(op::mm(op::reshape(a, Shape{rows, ka}), b), out_shape);
  }
  const Tensor a2 = da == 1 ? op::unsqueeze(a, 0) : a;
  const Tensor b2 = db == 1 ? op::unsqueeze(b, 1) : b;
  const int64_t n = a2.sizes()[a2.dim() - 2], k = ka, m = b2.sizes()[b2.dim() - 1];
  // Broadcast the batch dims (everything before the last two).
  const auto ba = a2.sizes().first(a2.dim() - 2), bb = b2.sizes().first(b2.dim() - 2);
  const size_t nb = std::max(ba.size(), bb.size());
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t x = i < nb - ba.size() ? 1 : ba[i - (nb - ba.size())];
    const int64_t y = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    FB_CHECK_VALUE(x == y || x == 1 || y == 1, "[matmul] batch dims of shapes ", shape_str(a.sizes()),
                   " and ", shape_str(b.sizes()), " cannot be broadcast: ", x, " != ", y);
    batch[i] = x == 1 ? y : x;
  }
  const int64_t batch_numel = shape_numel(batch, "matmul");  // Note [Size overflow]
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k, m});
  const Tensor a3 = op::reshape(op::expand(a2, ea), Shape{batch_numel, n, k});
  const Tensor b3 = op::reshape(op::expand(b2, eb), Shape{batch_numel, k, m});
  Shape out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(m);
  return op::reshape(op::bmm(a3, b3), out_shape);
}

Tensor composite::index_put(const Tensor& self, const OptionalTensorList& indices, const Tensor& values,
                            bool accumulate) {
  Tensor out = op::clone(self, MemoryFormat::Preserve);
  return op::index_put_(out, indices, values, accumulate);
}

}  // namespace flambeau
