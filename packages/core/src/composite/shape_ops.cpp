// Manipulation, indexing and creation composites of the op table's "shape"
// section (split/chunk, flips and rolls, repeat, movedim, diagonal, meshgrid,
// masked_select, put, linspace, eye, ...): built only from op:: calls, so
// autograd differentiates them through the ops they call; views stay views.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "generic/shape_utils.h"
#include "host_read.h"

namespace flambeau {
namespace {

std::string list_str(IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Tensor wrapped(double v) { return scalar_tensor(v, ScalarType::Float64, /*wrapped=*/true); }

Tensor new_size_view(const Tensor& t, Shape shape) { return op::reshape(t, shape); }

TensorList atleast(const TensorList& tensors, int64_t n) {
  TensorList out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors)
    out.push_back(n == 1 ? op::atleast_1d(t) : n == 2 ? op::atleast_2d(t) : op::atleast_3d(t));
  return out;
}

void check_nonempty(const TensorList& tensors, const char* op) {
  FB_CHECK_VALUE(!tensors.empty(), "[", op, "] expected a non-empty list of tensors");
}

/// arange(n) as int64 on `device`.
Tensor arange_n(int64_t n, Device device) {
  return op::arange(Scalar(int64_t{0}), Scalar(n), Scalar(int64_t{1}), ScalarType::Int64, device);
}

}  // namespace

// ---- concatenation ----

Tensor composite::concat(const TensorList& tensors, int64_t dim) { return op::cat(tensors, dim); }
Tensor composite::concatenate(const TensorList& tensors, int64_t dim) { return op::cat(tensors, dim); }

Tensor composite::hstack(const TensorList& tensors) {
  check_nonempty(tensors, "hstack");
  const TensorList parts = atleast(tensors, 1);
  return op::cat(parts, parts[0].dim() == 1 ? 0 : 1);
}

Tensor composite::vstack(const TensorList& tensors) {
  check_nonempty(tensors, "vstack");
  return op::cat(atleast(tensors, 2), 0);
}

Tensor composite::dstack(const TensorList& tensors) {
  check_nonempty(tensors, "dstack");
  return op::cat(atleast(tensors, 3), 2);
}

Tensor composite::column_stack(const TensorList& tensors) {
  check_nonempty(tensors, "column_stack");
  TensorList parts;
  for (const Tensor& t : tensors) parts.push_back(t.dim() <= 1 ? op::reshape(t, Shape{t.numel(), 1}) : t);
  return op::cat(parts, 1);
}

// ---- splitting (views) ----

TensorList composite::split(const Tensor& self, int64_t split_size, int64_t dim) {
  FB_CHECK_INDEX(self.dim() > 0, "[split] cannot split a 0-d tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "split");
  const int64_t n = self.sizes()[d];
  FB_CHECK_VALUE(split_size >= 0, "[split] split_size must be non-negative, got ", split_size);
  FB_CHECK_VALUE(split_size > 0 || n == 0, "[split] split_size can only be 0 if dimension ", d,
                 " has size 0, but got size ", n);
  TensorList out;
  if (split_size == 0 || n == 0) {
    out.push_back(op::slice(self, d, 0, n, 1));
    return out;
  }
  for (int64_t start = 0; start < n; start += split_size)
    out.push_back(op::slice(self, d, start, std::min(n, start + split_size), 1));
  return out;
}

TensorList composite::split_sizes(const Tensor& self, IntArrayRef split_size, int64_t dim) {
  FB_CHECK_INDEX(self.dim() > 0, "[split] cannot split a 0-d tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "split");
  const int64_t n = self.sizes()[d];
  int64_t total = 0;
  for (int64_t s : split_size) {
    FB_CHECK_VALUE(s >= 0, "[split] split sizes must be non-negative, got ", list_str(split_size));
    FB_CHECK_VALUE(!__builtin_add_overflow(total, s, &total), "[split] split sizes ", list_str(split_size),
                   " overflow int64");
  }
  FB_CHECK_VALUE(total == n, "[split] split sizes ", list_str(split_size), " must sum exactly to ", n,
                 " (the size of dimension ", d, " of the tensor of shape ", shape_str(self.sizes()),
                 "), but sum to ", total);
  TensorList out;
  int64_t start = 0;
  for (int64_t s : split_size) {
    out.push_back(op::slice(self, d, start, start + s, 1));
    start += s;
  }
  return out;
}

TensorList composite::tensor_split(const Tensor& self, int64_t sections, int64_t dim) {
  FB_CHECK_INDEX(self.dim() > 0, "[tensor_split] expected at least a 1-dimensional tensor");
  FB_CHECK_VALUE(sections > 0, "[tensor_split] number of sections must be larger than 0, got ", sections);
  const int64_t d = wrap_dim(dim, self.dim(), "tensor_split");
  const int64_t n = self.sizes()[d];
  // More sections than elements give empty views; a list of 2**40 of them is refused, naming the op, not
  // built until memory runs out (as chunk).
  FB_CHECK_VALUE(sections <= std::max<int64_t>(n, int64_t{1} << 24), "[tensor_split] splitting dim ", d,
                 " of shape ", shape_str(self.sizes()), " into ", sections, " sections would return ", sections,
                 " tensors, most of them empty; at most max(size, 2**24) are returned");
  const int64_t base = n / sections, extra = n % sections;
  TensorList out;
  int64_t start = 0;
  for (int64_t i = 0; i < sections; ++i) {
    const int64_t len = base + (i < extra ? 1 : 0);
    out.push_back(op::slice(self, d, start, start + len, 1));
    start += len;
  }
  return out;
}

TensorList composite::tensor_split_indices(const Tensor& self, IntArrayRef indices, int64_t dim) {
  FB_CHECK_INDEX(self.dim() > 0, "[tensor_split] expected at least a 1-dimensional tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "tensor_split");
  TensorList out;
  std::optional<int64_t> start = 0;
  for (int64_t i : indices) {
    out.push_back(op::slice(self, d, start, i, 1));
    start = i;
  }
  out.push_back(op::slice(self, d, start, std::nullopt, 1));
  return out;
}

// PyTorch reads the split points on the host, so it takes them only from a cpu int64 tensor.
TensorList composite::tensor_split_tensor(const Tensor& self, const Tensor& points, int64_t dim) {
  FB_CHECK_VALUE(points.dtype() == ScalarType::Int64, "[tensor_split] expected tensor_indices_or_sections to have ",
                 "dtype int64, got ", dtype_name(points.dtype()));
  FB_CHECK_VALUE(points.device().is_cpu(), "[tensor_split] expected tensor_indices_or_sections to be on cpu, got ",
                 points.device().str());
  FB_CHECK_VALUE(points.dim() <= 1, "[tensor_split] expected tensor_indices_or_sections to be 0-d or 1-d, got shape ",
                 shape_str(points.sizes()));
  const Tensor host = op::contiguous(points, MemoryFormat::Contiguous);
  const int64_t* p = host.data<int64_t>();
  if (points.dim() == 0) return op::tensor_split(self, p[0], dim);
  return op::tensor_split_indices(self, Shape(p, p + points.numel()), dim);
}

TensorList composite::chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  FB_CHECK_INDEX(self.dim() > 0, "[chunk] cannot chunk a 0-d tensor");
  FB_CHECK_VALUE(chunks > 0, "[chunk] chunks must be greater than 0, got ", chunks);
  const int64_t d = wrap_dim(dim, self.dim(), "chunk");
  const int64_t n = self.sizes()[d];
  const int64_t size = n / chunks + (n % chunks != 0 ? 1 : 0);
  if (size == 0) {  // an empty dim: `chunks` empty views, as PyTorch
    // (A list of 2**31 views, ~200 bytes each, is never built: refused naming the op, not with bad_alloc.)
    FB_CHECK_VALUE(chunks <= (int64_t{1} << 24), "[chunk] splitting the empty dim ", d, " of shape ",
                   shape_str(self.sizes()), " into ", chunks, " chunks would return ", chunks,
                   " empty tensors; at most 2**24 are returned");
    TensorList out;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(op::slice(self, d, 0, 0, 1));
    return out;
  }
  return op::split(self, size, d);
}

Tensor composite::unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  FB_CHECK_INDEX(self.dim() > 0, "[unflatten] cannot unflatten a 0-d tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "unflatten");
  FB_CHECK_VALUE(!sizes.empty(), "[unflatten] sizes must be non-empty");
  const Shape inner = detail::infer_size(sizes, self.sizes()[d], "unflatten");
  Shape shape(self.sizes().begin(), self.sizes().begin() + d);
  shape.insert(shape.end(), inner.begin(), inner.end());
  shape.insert(shape.end(), self.sizes().begin() + d + 1, self.sizes().end());
  return op::reshape(self, shape);
}

// ---- reordering ----

Tensor composite::fliplr(const Tensor& self) {
  FB_CHECK_VALUE(self.dim() >= 2, "[fliplr] input must be >= 2-d, got shape ", shape_str(self.sizes()));
  return op::flip(self, Shape{1});
}

Tensor composite::flipud(const Tensor& self) {
  FB_CHECK_VALUE(self.dim() >= 1, "[flipud] input must be >= 1-d, got shape ", shape_str(self.sizes()));
  return op::flip(self, Shape{0});
}

Tensor composite::roll(const Tensor& self, IntArrayRef shifts, OptionalIntArrayRef dims) {
  if (!dims || dims->empty()) {
    FB_CHECK_VALUE(shifts.size() == 1, "[roll] without dims, shifts must hold one value, got ",
                   list_str(shifts));
    return op::view(op::roll(op::flatten(self, 0, -1), shifts, Shape{0}), self.sizes());
  }
  FB_CHECK_VALUE(shifts.size() == dims->size(), "[roll] shifts and dims must align: shifts ",
                 list_str(shifts), ", dims ", list_str(*dims));
  Tensor t = self;
  bool moved = false;
  for (size_t i = 0; i < shifts.size(); ++i) {
    const int64_t d = wrap_dim((*dims)[i], std::max<int64_t>(self.dim(), 1), "roll");
    const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    t = op::cat({op::slice(t, d, n - s, n, 1), op::slice(t, d, 0, n - s, 1)}, d);
    moved = true;
  }
  return moved ? t : op::clone(self, MemoryFormat::Preserve);
}

Tensor composite::rot90(const Tensor& self, int64_t k, OptionalIntArrayRef dims) {
  const Shape dv = dims ? Shape(dims->begin(), dims->end()) : Shape{0, 1};
  FB_CHECK_VALUE(dv.size() == 2, "[rot90] expected total rotation dims == 2, got dims ", list_str(dv));
  FB_CHECK_VALUE(self.dim() >= 2, "[rot90] expected total dims >= 2, got shape ", shape_str(self.sizes()));
  const int64_t d0 = wrap_dim(dv[0], self.dim(), "rot90"), d1 = wrap_dim(dv[1], self.dim(), "rot90");
  FB_CHECK_VALUE(d0 != d1, "[rot90] expected rotation dims to be different, got dims ", list_str(dv));
  switch (((k % 4) + 4) % 4) {
    case 1:
      return op::transpose(op::flip(self, Shape{d1}), d0, d1);
    case 2:
      return op::flip(self, Shape{d0, d1});
    case 3:
      return op::transpose(op::flip(self, Shape{d0}), d0, d1);
    default:
      return op::clone(self, MemoryFormat::Preserve);
  }
}

Tensor composite::movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  FB_CHECK_VALUE(source.size() == destination.size(), "[movedim] source ", list_str(source),
                 " and destination ", list_str(destination), " must have the same number of dims");
  const int64_t nd = self.dim(), w = std::max<int64_t>(nd, 1);
  std::vector<int64_t> order(nd, -1);
  std::vector<bool> used(nd, false);
  for (size_t i = 0; i < source.size(); ++i) {
    const int64_t s = wrap_dim(source[i], w, "movedim"), t = wrap_dim(destination[i], w, "movedim");
    if (nd == 0) continue;
    FB_CHECK_VALUE(!used[s], "[movedim] repeated dim in source ", list_str(source));
    FB_CHECK_VALUE(order[t] < 0, "[movedim] repeated dim in destination ", list_str(destination));
    used[s] = true;
    order[t] = s;
  }
  if (nd == 0) return op::view(self, Shape{});
  int64_t next = 0;
  for (int64_t i = 0; i < nd; ++i) {
    if (order[i] >= 0) continue;
    while (used[next]) ++next;
    order[i] = next;
    used[next] = true;
  }
  return op::permute(self, order);
}

Tensor composite::moveaxis(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  return op::movedim(self, source, destination);
}
Tensor composite::swapaxes(const Tensor& self, int64_t axis0, int64_t axis1) {
  return op::transpose(self, axis0, axis1);
}
Tensor composite::swapdims(const Tensor& self, int64_t dim0, int64_t dim1) {
  return op::transpose(self, dim0, dim1);
}

// ---- repetition ----

Tensor composite::repeat(const Tensor& self, IntArrayRef repeats) {
  const auto nr = static_cast<int64_t>(repeats.size());
  FB_CHECK_VALUE(nr >= self.dim(), "[repeat] the number of repeats (", nr,
                 ") can not be smaller than the number of dims of the tensor of shape ",
                 shape_str(self.sizes()));
  for (int64_t r : repeats)
    FB_CHECK_VALUE(r >= 0, "[repeat] repeats must be non-negative, got ", list_str(repeats));
  Tensor x = self;
  while (x.dim() < nr) x = op::unsqueeze(x, 0);
  Shape expanded, result;
  for (int64_t i = 0; i < nr; ++i) {
    x = op::unsqueeze(x, 2 * i);
    expanded.push_back(repeats[i]);
    expanded.push_back(x.sizes()[2 * i + 1]);
    int64_t r = 0;
    FB_CHECK_VALUE(!__builtin_mul_overflow(repeats[i], x.sizes()[2 * i + 1], &r), "[repeat] repeats ",
                   list_str(repeats), " of shape ", shape_str(self.sizes()), " overflow int64");
    result.push_back(r);
  }
  shape_nbytes(result, self.dtype(), "repeat");  // Note [Size overflow]
  return op::reshape(op::expand(x, expanded), result);
}

Tensor composite::tile(const Tensor& self, IntArrayRef dims) {
  Shape reps(dims.begin(), dims.end());
  while (static_cast<int64_t>(reps.size()) < self.dim()) reps.insert(reps.begin(), 1);
  return op::repeat(self, reps);
}

Tensor composite::repeat_interleave_self_int(const Tensor& self, int64_t repeats, std::optional<int64_t> dim,
                                             std::optional<int64_t> output_size) {
  FB_CHECK_VALUE(repeats >= 0, "[repeat_interleave] repeats must be non-negative, got ", repeats);
  const Tensor x = dim ? self : op::flatten(self, 0, -1);
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "repeat_interleave") : 0;
  const Tensor y = x.dim() == 0 ? op::reshape(x, Shape{1}) : x;
  int64_t total = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(y.sizes()[d], repeats, &total), "[repeat_interleave] ", repeats,
                 " repeats of a tensor of shape ", shape_str(self.sizes()), " overflow int64");
  FB_CHECK_VALUE(!output_size || *output_size == total, "[repeat_interleave] output_size ",
                 output_size.value_or(0), " does not match the repeated size ", total);
  Shape exp(y.sizes().begin(), y.sizes().end());
  exp.insert(exp.begin() + d + 1, repeats);
  Shape res(y.sizes().begin(), y.sizes().end());
  res[d] = total;
  shape_nbytes(res, self.dtype(), "repeat_interleave");
  return op::reshape(op::expand(op::unsqueeze(y, d + 1), exp), res);
}

Tensor composite::repeat_interleave_self_tensor(const Tensor& self, const Tensor& repeats,
                                                std::optional<int64_t> dim,
                                                std::optional<int64_t> output_size) {
  const Tensor x = dim ? self : op::flatten(self, 0, -1);
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "repeat_interleave") : 0;
  const Tensor y = x.dim() == 0 ? op::reshape(x, Shape{1}) : x;
  FB_CHECK_VALUE(repeats.dim() <= 1, "[repeat_interleave] repeats must be 0-d or 1-d, got shape ",
                 shape_str(repeats.sizes()));
  if (repeats.numel() == 1 && y.sizes()[d] != 1) {
    const Tensor r = to_dtype(repeats, ScalarType::Int64);
    return op::repeat_interleave_self_int(
        self, composite_detail::read_first<int64_t>(op::sum(r, std::nullopt, false, std::nullopt)), dim,
        output_size);
  }
  FB_CHECK_VALUE(repeats.numel() == y.sizes()[d],
                 "[repeat_interleave] repeats must have the same size as input "
                 "along dim: repeats has ",
                 repeats.numel(), " elements, input has size ", y.sizes()[d], " in dimension ", d);
  return op::index_select(y, d, op::repeat_interleave_tensor(op::reshape(repeats, Shape{-1}), output_size));
}

// ---- indexing composites ----

Tensor composite::take(const Tensor& self, const Tensor& index) {
  FB_CHECK_TYPE(index.dtype() == ScalarType::Int64, "[take] index must be an int64 tensor, got dtype ",
                dtype_name(index.dtype()));
  const Tensor flat = op::index(op::flatten(self, 0, -1), {op::flatten(index, 0, -1)});
  return op::view(flat, index.sizes());
}

Tensor composite::take_along_dim(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim) {
  // Without dim, as PyTorch: gather on the flattened tensors, whose checks apply (an int32 index, or an
  // empty one of any dtype, is taken).
  if (!dim) return op::gather(op::flatten(self, 0, -1), 0, op::flatten(indices, 0, -1));
  FB_CHECK_TYPE(indices.dtype() == ScalarType::Int64,
                "[take_along_dim] indices must be an int64 tensor, got dtype ", dtype_name(indices.dtype()));
  FB_CHECK_VALUE(self.dim() == indices.dim(),
                 "[take_along_dim] input and indices must have the same number of "
                 "dims: input shape ",
                 shape_str(self.sizes()), ", indices shape ", shape_str(indices.sizes()));
  // A 0-d input has no dim to take along (PyTorch's IndexError).
  FB_CHECK_INDEX(self.dim() > 0, "[take_along_dim] dim ", *dim,
                 " given but the input is 0-d (no dimensions)");
  const int64_t d = wrap_dim(*dim, self.dim(), "take_along_dim");
  Shape s(self.sizes().begin(), self.sizes().end());
  s[d] = indices.sizes()[d];
  const Shape b = broadcast_shapes(s, indices.sizes(), "take_along_dim");
  Shape sb = b;
  sb[d] = self.sizes()[d];
  // As torch's, indices along dim are taken modulo its size, so -1 is the last (the flattened form, without
  // dim, does not wrap). An empty dim keeps them as they are: gather then reports the index out of range.
  const int64_t n = self.sizes()[d];
  const Tensor wrapped_indices =
      n > 0 ? op::remainder(indices, scalar_tensor(n, ScalarType::Int64, /*wrapped=*/true)) : indices;
  return op::gather(op::expand(self, sb), d, op::expand(wrapped_indices, b));
}

// The fills with a tensor value select it with where, so its gradient is the sum of the gradient over the
// filled places (PyTorch's; the Scalar overloads have none to give).
static Tensor zero_dim_value(const char* op_name, const Tensor& value, const Tensor& self) {
  FB_CHECK_VALUE(value.dim() == 0, "[", op_name, "] expected a 0-dimensional value tensor, got one of shape ",
                 shape_str(value.sizes()));
  return value.dtype() == self.dtype() ? value : op::cast(value, self.dtype());
}

Tensor composite::masked_fill_tensor(const Tensor& self, const Tensor& mask, const Tensor& value) {
  const Tensor v = zero_dim_value("masked_fill", value, self);
  FB_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "[masked_fill] expected a bool mask, got ",
                dtype_name(mask.dtype()));
  return op::where(mask, v, self);
}

Tensor composite::index_fill_tensor(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  const Tensor v = zero_dim_value("index_fill", value, self);
  const Tensor filled = op::ne(op::index_fill(zeros_like(self), dim, index, Scalar(int64_t{1})),
                               scalar_to_tensor(Scalar(int64_t{0})));
  return op::where(filled, v, self);
}

Tensor composite::masked_select(const Tensor& self, const Tensor& mask) {
  FB_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "[masked_select] mask must be a bool tensor, got dtype ",
                dtype_name(mask.dtype()));
  const Shape b = broadcast_shapes(self.sizes(), mask.sizes(), "masked_select");
  // A 0-d bool index adds a dim instead of selecting elements, so 0-d operands are selected as 1-element ones.
  const Shape shape = b.empty() ? Shape{1} : b;
  return op::index(op::reshape(op::expand(self, b), shape), {op::reshape(op::expand(mask, b), shape)});
}

Tensor composite::masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  FB_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "[masked_scatter] mask must be a bool tensor, got dtype ",
                dtype_name(mask.dtype()));
  FB_CHECK_TYPE(source.dtype() == self.dtype(), "[masked_scatter] source dtype ", dtype_name(source.dtype()),
                " must match self dtype ", dtype_name(self.dtype()));
  // Out of place, self and mask broadcast together (masked_scatter_ then refuses a result larger than self).
  const Shape b = broadcast_shapes(self.sizes(), mask.sizes(), "masked_scatter");
  const Tensor m = op::expand(mask, b);
  const Tensor count = op::sum(m, std::nullopt, false, std::nullopt);
  const int64_t n = composite_detail::read_first<int64_t>(count);
  FB_CHECK_VALUE(n <= source.numel(), "[masked_scatter] the mask has ", n,
                 " True elements but source of shape ", shape_str(source.sizes()), " only ", source.numel());
  return op::index_put(op::expand(self, b), {m}, op::slice(op::flatten(source, 0, -1), 0, 0, n, 1), false);
}

Tensor composite::put(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  FB_CHECK_TYPE(index.dtype() == ScalarType::Int64, "[put] index must be an int64 tensor, got dtype ",
                dtype_name(index.dtype()));
  FB_CHECK_TYPE(source.dtype() == self.dtype(), "[put] source dtype ", dtype_name(source.dtype()),
                " must match self dtype ", dtype_name(self.dtype()));
  FB_CHECK_VALUE(index.numel() == source.numel(),
                 "[put] source and index must have the same number of "
                 "elements: source shape ",
                 shape_str(source.sizes()), ", index shape ", shape_str(index.sizes()));
  const Tensor flat = op::index_put(op::flatten(self, 0, -1), {op::flatten(index, 0, -1)},
                                    op::flatten(source, 0, -1), accumulate);
  return op::view(flat, self.sizes());
}

std::tuple<Tensor, Tensor> composite::_scatter_reduce_backward(const Tensor& grad, const Tensor& self,
                                                               int64_t dim, const Tensor& index,
                                                               const Tensor& whole_src, std::string_view reduce,
                                                               bool include_self, const Tensor& result) {
  meta::check_scatter_reduce("scatter_reduce", reduce, true, self);  // the forward's check step
  const ScalarType gt = grad.dtype();
  // whole_src may be larger than the index: only its leading index-shaped block is scattered, so the
  // formulas run on that block and the rest of whole_src gets a zero gradient (padded at the end).
  Tensor src = whole_src;
  for (int64_t d = 0; d < index.dim(); ++d)
    if (src.sizes()[d] != index.sizes()[d]) src = op::slice(src, d, 0, index.sizes()[d], 1);
  Tensor gs, gsrc;
  if (reduce == "sum") {
    gs = grad;
    gsrc = op::gather(grad, dim, index);
  } else if (reduce == "mean") {
    Tensor n = full(self.sizes(), Scalar(include_self ? 1.0 : 0.0), gt, self.device());
    n = op::scatter_add(n, dim, index, ones(src.sizes(), gt, src.device()));
    n = op::clamp_min(n, Scalar(1.0));
    gs = op::div(grad, n);
    gsrc = op::gather(gs, dim, index);
  } else if (reduce == "amax" || reduce == "amin") {
    const Tensor value = op::gather(result, dim, index);
    Tensor self_is = to_dtype(op::eq(self, result), gt);
    // Without include_self, self takes no part where src was scattered (even if it equals the result).
    if (!include_self) self_is = op::scatter_value(self_is, dim, index, Scalar(0.0), std::nullopt);
    const Tensor src_is = to_dtype(op::eq(src, value), gt);
    const Tensor n = op::scatter_add(self_is, dim, index, src_is);
    const Tensor g = op::div(grad, n);
    gs = op::mul(self_is, g);
    gsrc = op::mul(src_is, op::gather(g, dim, index));
  } else {
    FB_INTERNAL_ASSERT(reduce == "prod", "[scatter_reduce] reduce '", reduce, "' passed meta::check_scatter_reduce");
    // d(prod)/dx = prod of the others: result / x where x != 0; where x is 0 the product of the others
    // is recomputed with x replaced by 1 (PyTorch's formula). Two zeros or more scattered to one place
    // give every one of them a zero gradient, as in PyTorch.
    const Tensor zero = scalar_tensor(Scalar(0.0), self.dtype(), /*wrapped=*/true);
    const Tensor one = scalar_tensor(Scalar(1.0), self.dtype(), /*wrapped=*/true);
    const Tensor masked_self = op::where(op::eq(self, zero), one, self);
    const Tensor masked_self_result = op::scatter_reduce(masked_self, dim, index, src, "prod", include_self);
    gs = op::div(op::mul(grad, masked_self_result), masked_self);
    const Tensor src_zero = op::eq(src, zero);
    const Tensor zeros_at = op::gather(op::scatter_add(zeros(self.sizes(), self.dtype(), self.device()), dim,
                                                       index, to_dtype(src_zero, self.dtype())),
                                       dim, index);
    const Tensor single_zero = op::logical_and(src_zero, op::eq(zeros_at, one));
    const Tensor masked_src = op::where(single_zero, one, src);
    const Tensor masked_src_result = op::scatter_reduce(self, dim, index, masked_src, "prod", include_self);
    const Tensor g_single = op::gather(op::mul(grad, masked_src_result), dim, index);
    const Tensor g_other =
        op::div(op::gather(op::mul(grad, result), dim, index), op::where(src_zero, one, src));
    gsrc = op::where(single_zero, g_single, g_other);
  }
  if (!include_self) gs = op::scatter_value(gs, dim, index, Scalar(0.0), std::nullopt);
  if (!std::ranges::equal(src.sizes(), whole_src.sizes())) {
    std::vector<int64_t> pad;  // _pad_nd's order: the last dim's (before, after) first
    for (int64_t d = src.dim() - 1; d >= 0; --d) {
      pad.push_back(0);
      pad.push_back(whole_src.sizes()[d] - src.sizes()[d]);
    }
    gsrc = op::_pad_nd(gsrc, pad, "constant", 0.0);
  }
  return {gs, gsrc};
}

// ---- diagonals ----

Tensor composite::diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  FB_CHECK_VALUE(self.dim() >= 2, "[diagonal] expects a tensor with at least 2 dims, got shape ",
                 shape_str(self.sizes()));
  const int64_t d1 = wrap_dim(dim1, self.dim(), "diagonal"), d2 = wrap_dim(dim2, self.dim(), "diagonal");
  FB_CHECK_VALUE(d1 != d2, "[diagonal] diagonal dimensions cannot be identical: ", dim1, ", ", dim2);
  const int64_t s1 = self.sizes()[d1], s2 = self.sizes()[d2];
  int64_t len = 0, off = self.storage_offset();
  if (offset >= 0) {
    len = offset >= s2 ? 0 : std::min(s1, s2 - offset);
    if (len > 0) off += offset * self.strides()[d2];
  } else {
    len = offset <= -s1 ? 0 : std::min(s1 + offset, s2);  // (not -offset: INT64_MIN has no negation)
    if (len > 0) off -= offset * self.strides()[d1];
  }
  Shape sizes, strides;
  for (int64_t k = 0; k < self.dim(); ++k) {
    if (k == d1 || k == d2) continue;
    sizes.push_back(self.sizes()[k]);
    strides.push_back(self.strides()[k]);
  }
  sizes.push_back(len);
  strides.push_back(self.strides()[d1] + self.strides()[d2]);
  return op::as_strided(self, sizes, strides, off);
}

Tensor composite::diag_embed(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  FB_CHECK_VALUE(self.dim() >= 1, "[diag_embed] expects a tensor with at least 1 dim, got a 0-d tensor");
  const int64_t nd = self.dim() + 1;
  const int64_t d1 = wrap_dim(dim1, nd, "diag_embed"), d2 = wrap_dim(dim2, nd, "diag_embed");
  FB_CHECK_VALUE(d1 != d2, "[diag_embed] diagonal dimensions cannot be identical: ", dim1, ", ", dim2);
  const int64_t n = self.sizes()[self.dim() - 1];
  FB_CHECK_VALUE(offset != std::numeric_limits<int64_t>::min(), "[diag_embed] offset ", offset, " is too large");
  const int64_t k = offset < 0 ? -offset : offset;
  int64_t m = 0;
  FB_CHECK_VALUE(!__builtin_add_overflow(n, k, &m), "[diag_embed] offset ", offset, " is too large");
  Tensor x = self;
  if (k > 0) {
    Shape pad(self.sizes().begin(), self.sizes().end());
    pad.back() = k;
    x = op::cat({self, zeros(pad, self.dtype(), self.device())}, -1);
  }
  const Tensor r = op::view(arange_n(m, self.device()), Shape{m, 1});
  const Tensor c = op::view(arange_n(m, self.device()), Shape{1, m});
  const Tensor on =
      op::eq(op::sub(c, r, Scalar(int64_t{1})), scalar_tensor(Scalar(offset), ScalarType::Int64));
  const Tensor vals = offset >= 0 ? op::unsqueeze(x, -1) : op::unsqueeze(x, -2);
  const Tensor out = op::where(on, vals, scalar_tensor(Scalar(int64_t{0}), self.dtype()));
  return op::movedim(out, Shape{nd - 2, nd - 1}, Shape{d1, d2});
}

Tensor composite::diag(const Tensor& self, int64_t diagonal) {
  if (self.dim() == 1) return op::diag_embed(self, diagonal, 0, 1);
  FB_CHECK_VALUE(self.dim() == 2, "[diag] supports 1-D or 2-D tensors, got shape ", shape_str(self.sizes()));
  return op::clone(op::diagonal(self, diagonal, 0, 1), MemoryFormat::Contiguous);
}

// ---- broadcasting and dims ----

TensorList composite::meshgrid(const TensorList& tensors, std::optional<std::string_view> indexing) {
  check_nonempty(tensors, "meshgrid");
  const std::string_view mode = indexing.value_or("ij");
  FB_CHECK_VALUE(mode == "ij" || mode == "xy", "[meshgrid] indexing must be 'ij' or 'xy', got '", mode, "'");
  for (size_t i = 0; i < tensors.size(); ++i) {
    FB_CHECK_VALUE(tensors[i].dim() <= 1, "[meshgrid] expects 0-D or 1-D tensors, got tensor ", i,
                   " of shape ", shape_str(tensors[i].sizes()));
    FB_CHECK_TYPE(tensors[i].dtype() == tensors[0].dtype(),
                  "[meshgrid] expects all tensors to have the same "
                  "dtype, got ",
                  dtype_name(tensors[0].dtype()), " (tensor 0) and ", dtype_name(tensors[i].dtype()),
                  " (tensor ", i, ")");
  }
  const bool swap = mode == "xy" && tensors.size() >= 2;
  TensorList ts = tensors;
  if (swap) std::swap(ts[0], ts[1]);
  Shape shape;
  for (const Tensor& t : ts) shape.push_back(t.numel());
  TensorList out;
  for (size_t i = 0; i < ts.size(); ++i) {
    Shape v(ts.size(), 1);
    v[i] = ts[i].numel();
    out.push_back(op::expand(op::reshape(ts[i], v), shape));
  }
  if (swap) std::swap(out[0], out[1]);
  return out;
}

Tensor composite::broadcast_to(const Tensor& self, IntArrayRef size) { return op::expand(self, size); }

TensorList composite::broadcast_tensors(const TensorList& tensors) {
  Shape shape;
  for (const Tensor& t : tensors) shape = broadcast_shapes(shape, t.sizes(), "broadcast_tensors");
  TensorList out;
  for (const Tensor& t : tensors) out.push_back(op::expand(t, shape));
  return out;
}

Tensor composite::atleast_1d(const Tensor& self) {
  return self.dim() >= 1 ? self : op::reshape(self, Shape{1});
}

Tensor composite::atleast_2d(const Tensor& self) {
  if (self.dim() >= 2) return self;
  return self.dim() == 0 ? op::reshape(self, Shape{1, 1}) : op::unsqueeze(self, 0);
}

Tensor composite::atleast_3d(const Tensor& self) {
  switch (self.dim()) {
    case 0:
      return op::reshape(self, Shape{1, 1, 1});
    case 1:
      return op::unsqueeze(op::unsqueeze(self, 0), -1);
    case 2:
      return op::unsqueeze(self, -1);
    default:
      return self;
  }
}

// ---- creation ----

Tensor composite::linspace(const Scalar& start, const Scalar& end, int64_t steps,
                           std::optional<ScalarType> dtype, Device device) {
  FB_CHECK_VALUE(steps >= 0, "[linspace] number of steps must be non-negative, got ", steps);
  const ScalarType dt = dtype.value_or(kDefaultFloat);
  FB_CHECK_TYPE(dt != ScalarType::Bool, "[linspace] dtype bool is not supported (as in PyTorch)");
  // An integer dtype takes start and end as integers first, as PyTorch (linspace(0, 4.5, 4, dtype=int64)
  // is [0, 1, 2, 4]: steps of 4/3 from 0 and back from 4, truncated).
  const bool integral = is_integral(dt, false);
  const double a = integral ? std::trunc(start.to_double()) : start.to_double();
  const double b = integral ? std::trunc(end.to_double()) : end.to_double();
  if (steps <= 1) return to_dtype(full(Shape{steps}, Scalar(a), ScalarType::Float64, device), dt);
  const double step = (b - a) / static_cast<double>(steps - 1);
  if (device.is_cpu() && (dt == ScalarType::Float32 || dt == ScalarType::Float64)) {
    // The values the general path below computes, written in one loop (it makes nine tensors).
    shape_nbytes(Shape{steps}, dt, "linspace");
    Tensor out = op::empty(Shape{steps}, dt, device);
    const int64_t half = steps / 2;
    auto fill = [&](auto* o) {
      using T = std::remove_pointer_t<decltype(o)>;
#pragma omp simd
      for (int64_t i = 0; i < steps; ++i) {
        const double di = static_cast<double>(i);
        const double v = i < half ? a + di * step : b - (static_cast<double>(steps - 1) - di) * step;
        o[i] = static_cast<T>(v);
      }
    };
    if (dt == ScalarType::Float32)
      fill(out.data<float>());
    else
      fill(out.data<double>());
    return out;
  }
  const Tensor i =
      op::arange(Scalar(int64_t{0}), Scalar(steps), Scalar(int64_t{1}), ScalarType::Float64, device);
  // Symmetric, as PyTorch: the first half counts up from start, the second down from end (end is exact).
  const Tensor up = op::add(op::mul(i, wrapped(step)), wrapped(a), Scalar(int64_t{1}));
  const Tensor down =
      op::sub(wrapped(b), op::mul(op::sub(wrapped(static_cast<double>(steps - 1)), i, 1), wrapped(step)),
              Scalar(int64_t{1}));
  const Tensor first = op::lt(i, wrapped(static_cast<double>(steps / 2)));
  return to_dtype(op::where(first, up, down), dt);
}

Tensor composite::logspace(const Scalar& start, const Scalar& end, int64_t steps, double base,
                           std::optional<ScalarType> dtype, Device device) {
  FB_CHECK_VALUE(steps >= 0, "[logspace] number of steps must be non-negative, got ", steps);
  FB_CHECK_TYPE(dtype != ScalarType::Bool, "[logspace] dtype bool is not supported (as in PyTorch)");
  const Tensor e = op::linspace(start, end, steps, ScalarType::Float64, device);
  return to_dtype(op::pow(wrapped(base), e), dtype.value_or(kDefaultFloat));
}

Tensor composite::eye(int64_t n, std::optional<int64_t> m, std::optional<ScalarType> dtype, Device device) {
  FB_CHECK_VALUE(n >= 0, "[eye] n must be greater or equal to 0, got ", n);
  const int64_t cols = m.value_or(n);
  FB_CHECK_VALUE(cols >= 0, "[eye] m must be greater or equal to 0, got ", cols);
  const ScalarType dt = dtype.value_or(kDefaultFloat);
  shape_nbytes(Shape{n, cols}, dt, "eye");
  Tensor out = zeros(Shape{n, cols}, dt, device);
  if (n > 0 && cols > 0) {
    Tensor diag = op::diagonal(out, 0, 0, 1);
    op::fill_(diag, Scalar(int64_t{1}));
  }
  return out;
}

Tensor composite::empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                                Device device) {
  FB_CHECK_VALUE(size.size() == stride.size(), "[empty_strided] size ", list_str(size), " and stride ",
                 list_str(stride), " must have the same length");
  int64_t extent = 1;
  bool empty = false;
  for (size_t k = 0; k < size.size(); ++k) {
    FB_CHECK_VALUE(size[k] >= 0 && stride[k] >= 0,
                   "[empty_strided] sizes and strides must be non-negative, got size ", list_str(size),
                   ", stride ", list_str(stride));
    if (size[k] == 0) empty = true;
    int64_t span = 0;
    FB_CHECK_VALUE(!__builtin_mul_overflow(size[k] == 0 ? 0 : size[k] - 1, stride[k], &span) &&
                       !__builtin_add_overflow(extent, span, &extent),
                   "[empty_strided] size ", list_str(size), " and stride ", list_str(stride),
                   " overflow int64");
  }
  const ScalarType dt = dtype.value_or(kDefaultFloat);
  const Tensor base = op::empty(Shape{empty ? 0 : extent}, dt, device);
  return op::as_strided(base, size, stride, 0);
}

namespace {
Tensor triangle_indices(int64_t row, int64_t col, int64_t offset, ScalarType dtype, Device device, bool lower,
                        const char* op) {
  FB_CHECK_VALUE(row >= 0, "[", op, "] row must be non-negative, got ", row);
  FB_CHECK_VALUE(col >= 0, "[", op, "] col must be non-negative, got ", col);
  FB_CHECK_TYPE(dtype == ScalarType::Int64 || dtype == ScalarType::Int32, "[", op,
                "] dtype must be int64 or int32, got ", dtype_name(dtype));
  shape_nbytes(Shape{row, col}, ScalarType::Int64, op);
  const Tensor r = op::expand(op::view(arange_n(row, device), Shape{row, 1}), Shape{row, col});
  const Tensor c = op::expand(op::view(arange_n(col, device), Shape{1, col}), Shape{row, col});
  const Tensor diff = op::sub(c, r, Scalar(int64_t{1}));
  const Tensor off = scalar_tensor(Scalar(offset), ScalarType::Int64);
  const Tensor mask = lower ? op::le(diff, off) : op::ge(diff, off);
  return to_dtype(op::stack({op::index(r, {mask}), op::index(c, {mask})}, 0), dtype);
}
}  // namespace

Tensor composite::tril_indices(int64_t row, int64_t col, int64_t offset, ScalarType dtype, Device device) {
  return triangle_indices(row, col, offset, dtype, device, true, "tril_indices");
}
Tensor composite::triu_indices(int64_t row, int64_t col, int64_t offset, ScalarType dtype, Device device) {
  return triangle_indices(row, col, offset, dtype, device, false, "triu_indices");
}

}  // namespace flambeau
