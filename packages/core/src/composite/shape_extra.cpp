// Shape and construction composites of PyTorch's vocabulary (ravel, cartesian_prod,
// combinations, block_diag, vander, unravel_index): built from op:: calls, so
// autograd differentiates them through the ops they call.
#include <string>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {

Tensor composite::ravel(const Tensor& self) { return op::reshape(self, Shape{-1}); }

Tensor composite::cartesian_prod(const TensorList& tensors) {
  FB_CHECK_VALUE(!tensors.empty(), "[cartesian_prod] expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i)
    FB_CHECK_VALUE(tensors[i].dim() == 1, "[cartesian_prod] expected 1-D tensors, got tensor ", i, " of shape ",
                   shape_str(tensors[i].sizes()));
  if (tensors.size() == 1) return tensors[0];
  TensorList columns = op::meshgrid(tensors, "ij");
  for (Tensor& c : columns) c = op::reshape(c, Shape{-1});
  return op::stack(columns, 1);
}

Tensor composite::combinations(const Tensor& self, int64_t r, bool with_replacement) {
  FB_CHECK_VALUE(self.dim() == 1, "[combinations] expected a 1-D tensor, got shape ", shape_str(self.sizes()));
  FB_CHECK_VALUE(r >= 0, "[combinations] expected a non-negative r, got ", r);
  if (r == 0) return empty(Shape{0}, self.dtype(), self.device());
  // The r-tuples of positions that increase (or do not decrease, with replacement), in lexicographic order.
  const Tensor pos = op::arange(Scalar(int64_t(0)), Scalar(self.numel()), Scalar(int64_t(1)), ScalarType::Int64,
                                self.device());
  const TensorList grids = op::meshgrid(TensorList(static_cast<size_t>(r), pos), "ij");
  Tensor keep = ones(grids[0].sizes(), ScalarType::Bool, self.device());
  for (int64_t i = 0; i + 1 < r; ++i)
    keep = op::logical_and(keep, with_replacement ? op::le(grids[i], grids[i + 1]) : op::lt(grids[i], grids[i + 1]));
  TensorList columns;
  for (const Tensor& g : grids) columns.push_back(op::index_select(self, 0, op::masked_select(g, keep)));
  return op::stack(columns, 1);
}

Tensor composite::block_diag(const TensorList& tensors) {
  if (tensors.empty()) return empty(Shape{1, 0}, default_float_dtype(), Device());
  ScalarType dtype = tensors[0].dtype();
  TensorList blocks;
  int64_t cols = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    FB_CHECK_VALUE(t.dim() <= 2, "[block_diag] input tensors must have 2 or fewer dimensions, input ", i, " has ",
                   t.dim(), " dimensions");
    FB_CHECK_VALUE(t.device() == tensors[0].device(), "[block_diag] expected all tensors on the same device");
    dtype = promote_types(dtype, t.dtype());
    blocks.push_back(t.dim() == 2 ? t : op::reshape(t, Shape{1, t.numel()}));  // 0-d: (1, 1); 1-D: (1, n)
    cols += blocks.back().sizes()[1];
  }
  const Device device = tensors[0].device();
  TensorList rows;
  int64_t before = 0;
  for (const Tensor& b : blocks) {
    const int64_t r = b.sizes()[0], c = b.sizes()[1];
    rows.push_back(op::cat({zeros(Shape{r, before}, dtype, device), to_dtype(b, dtype),
                            zeros(Shape{r, cols - before - c}, dtype, device)},
                           1));
    before += c;
  }
  return op::cat(rows, 0);
}

Tensor composite::vander(const Tensor& x, std::optional<int64_t> N, bool increasing) {
  FB_CHECK_VALUE(x.dim() == 1, "[vander] x must be a one-dimensional tensor, got shape ", shape_str(x.sizes()));
  const int64_t n = N.value_or(x.numel());
  FB_CHECK_VALUE(n >= 0, "[vander] N must be non-negative, got ", n);
  // Integer and bool inputs give int64, as PyTorch's.
  const ScalarType dtype = is_integral(x.dtype(), true) ? ScalarType::Int64 : x.dtype();
  const Tensor col = op::unsqueeze(to_dtype(x, dtype), 1);
  Tensor powers = ones(Shape{x.numel(), std::min<int64_t>(n, 1)}, dtype, x.device());
  if (n > 1) powers = op::cat({powers, op::cumprod(op::expand(col, Shape{x.numel(), n - 1}), 1, std::nullopt)}, 1);
  return increasing ? powers : op::flip(powers, Shape{1});
}

TensorList composite::unravel_index(const Tensor& indices, IntArrayRef shape) {
  FB_CHECK_TYPE(is_integral(indices.dtype(), false), "[unravel_index] expected 'indices' to be an integer tensor, got ",
                dtype_name(indices.dtype()));
  int64_t numel = 1;
  for (int64_t s : shape) {
    FB_CHECK_VALUE(s >= 0, "[unravel_index] 'shape' cannot have negative values, got ", shape_str(shape));
    numel *= s;
  }
  // Indices wrap modulo the number of elements (-1 is the last one), as PyTorch's: it does not raise for
  // an index outside [-numel, numel).
  Tensor idx = to_dtype(indices, ScalarType::Int64);
  if (numel > 0) idx = op::remainder(idx, scalar_to_tensor(Scalar(numel)));
  TensorList coords(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    const Tensor size = scalar_to_tensor(Scalar(shape[i] > 0 ? shape[i] : int64_t(1)));
    coords[i] = op::remainder(idx, size);
    idx = op::floor_divide(idx, size);
  }
  return coords;
}

}  // namespace flambeau
