#pragma once
// The vocabulary of derivatives.yaml: what a formula may call besides core's
// ops. Everything here is written with core ops (dispatched), so under
// create_graph=True a formula records a graph of its own. Included only by the
// generated nodes (autograd_generated.cpp).
#include <algorithm>
#include <array>
#include <functional>
#include <numbers>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>

#include "engine.h"
#include "flambeau/memory_format.h"
#include "flambeau/result_layout.h"

namespace flambeau::autograd::formulas {

/// An input's shape and dtype, kept to shape its gradient (Note [Generated
/// nodes] in gen_autograd.py). When the input has the output's shape (the
/// common case) the shape is not stored, which saves an allocation per op.
struct Meta {
  Shape sizes;
  ScalarType dtype = ScalarType::Float32;
  bool same_as_output = false;
  Meta() = default;
  explicit Meta(const Tensor& t) : sizes(t.sizes().begin(), t.sizes().end()), dtype(t.dtype()) {}
  Meta(const Tensor& t, const Tensor& out) : dtype(t.dtype()) {
    same_as_output = std::ranges::equal(t.sizes(), out.sizes());
    if (!same_as_output) sizes.assign(t.sizes().begin(), t.sizes().end());
  }
};

/// Runs an op below the Autograd layer (on the device kernel).
template <class OpT, class... A>
decltype(auto) below(const OpT& op_object, A&&... args) {
  AutoExcludeAutograd guard;
  return op_object(std::forward<A>(args)...);
}

template <class N>
std::shared_ptr<N> make_node(std::vector<Edge> edges) {
  auto n = std::make_shared<N>();
  n->set_next_edges(std::move(edges));
  return n;
}

/// The edge of an optional (Tensor?) argument: invalid when it is absent.
inline Edge gradient_edge(const std::optional<Tensor>& t) { return t ? autograd::gradient_edge(*t) : Edge(); }

/// A saved Tensor? argument as formulas see it: std::nullopt when it was absent.
inline std::optional<Tensor> optional_tensor(Tensor t) {
  if (!t.defined()) return std::nullopt;
  return std::optional<Tensor>(std::move(t));
}

inline std::vector<Edge> list_edges(const TensorList& tensors) {
  std::vector<Edge> edges;
  edges.reserve(tensors.size());
  for (const Tensor& t : tensors) edges.push_back(gradient_edge(t));
  return edges;
}

/// A saved Tensor?[] argument (advanced indexing's indices): each tensor is a
/// SavedVariable (version-checked, freed by release_variables); an undefined
/// one stands for std::nullopt.
struct SavedOptionalTensorList {
  std::vector<SavedVariable> saved;
  SavedOptionalTensorList() = default;
  explicit SavedOptionalTensorList(const OptionalTensorList& tensors) {
    saved.reserve(tensors.size());
    for (const auto& t : tensors) saved.emplace_back(t ? *t : Tensor(), false);
  }
  OptionalTensorList unpack(Node* owner) const {
    OptionalTensorList out;
    out.reserve(saved.size());
    for (const auto& s : saved) {
      Tensor t = s.unpack(owner);
      out.emplace_back(t.defined() ? std::optional<Tensor>(std::move(t)) : std::nullopt);
    }
    return out;
  }
  void reset() {
    for (auto& s : saved) s.reset();
  }
};

/// Sums a broadcast gradient back to the input's shape and casts it to its dtype.
inline Tensor reduce(const Tensor& g, const Meta& in) {
  if (!g.defined()) return g;
  Tensor r = g;
  if (!in.same_as_output && !std::ranges::equal(r.sizes(), in.sizes)) r = sum_to(r, in.sizes);
  if (r.dtype() != in.dtype) r = op::cast(r, in.dtype);
  return r;
}

/// A Python-like ("weak") number: it never changes the dtype of the other operand.
inline Tensor num(double v) { return scalar_tensor(v, ScalarType::Float64, /*wrapped=*/true); }

// Operators, so formulas read as math: `grad * other / (other * other)`.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return op::add(a, b, 1); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return op::sub(a, b, 1); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return op::mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return op::div(a, b); }
inline Tensor operator-(const Tensor& a) { return op::neg(a); }
inline Tensor operator+(const Tensor& a, double b) { return a + num(b); }
inline Tensor operator-(double a, const Tensor& b) { return num(a) - b; }
inline Tensor operator+(double a, const Tensor& b) { return num(a) + b; }
inline Tensor operator-(const Tensor& a, double b) { return a - num(b); }
inline Tensor operator*(const Tensor& a, double b) { return a * num(b); }
inline Tensor operator*(double a, const Tensor& b) { return num(a) * b; }
inline Tensor operator/(const Tensor& a, double b) { return a / num(b); }
inline Tensor operator<=(const Tensor& a, double b) { return op::le(a, num(b)); }
inline Tensor operator>(const Tensor& a, double b) { return op::gt(a, num(b)); }
inline Tensor operator<(const Tensor& a, double b) { return op::lt(a, num(b)); }

inline Tensor where(const Tensor& c, const Tensor& a, double b) { return op::where(c, a, num(b)); }
inline Tensor where(const Tensor& c, double a, const Tensor& b) { return op::where(c, num(a), b); }

inline Tensor scale(const Tensor& g, const Scalar& alpha) {
  if (!alpha.is_floating() && alpha.to_int() == 1) return g;
  return g * alpha.to_double();
}

/// sign(x) with sign(NaN) = 0, as PyTorch's sgn (the gradient of abs).
inline Tensor sign_of(const Tensor& x) {
  return op::sub(op::cast(x > 0.0, x.dtype()), op::cast(x < 0.0, x.dtype()), 1);
}

// ---- complex gradients: PyTorch's convention, the conjugate Wirtinger
// derivative: for a holomorphic f, grad_input = grad * conj(f'(z)). ----

/// conj(x) for complex x, x itself otherwise (no copy for real tensors).
inline Tensor cj(const Tensor& x) { return is_complex(x.dtype()) ? op::conj_physical(x) : x; }
/// The gradient of abs: grad * sgn(x), sgn(z) = z / |z| (0 at 0) for complex z.
inline Tensor abs_backward(const Tensor& grad, const Tensor& x) {
  if (!is_complex(x.dtype())) return grad * sign_of(x);
  const Tensor a = op::abs(x);
  return op::where(op::eq(a, num(0)), num(0), grad * op::div(x, a));
}
/// The gradient of angle: grad * i z / |z|^2 for complex z (0 at 0); 0 for real inputs.
inline Tensor angle_backward(const Tensor& grad, const Tensor& x) {
  if (!is_complex(x.dtype())) return op::mul(grad, num(0));
  const Tensor a2 = op::mul(op::abs(x), op::abs(x));
  const Tensor iz = op::complex(op::neg(op::imag(x)), op::real(x));
  return op::where(op::eq(a2, num(0)), num(0), grad * op::div(iz, a2));
}

/// PyTorch's threshold_backward: the gradient where result > threshold, else 0
/// (a NaN result passes the gradient, as in PyTorch).
/// clamp with number bounds: the gradient passes where min <= self <= max (bounds included), as PyTorch.
inline Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                             const std::optional<Scalar>& max) {
  Tensor keep;
  if (min) keep = op::ge(self, scalar_to_tensor(*min, /*wrapped=*/true));
  if (max) {
    const Tensor le = op::le(self, scalar_to_tensor(*max, /*wrapped=*/true));
    keep = min ? op::logical_and(keep, le) : le;
  }
  return op::where(keep, grad, num(0.0));
}

/// 1 / (self^2 + other^2) for atan2's gradient, 0 at the origin (where PyTorch's gradient is 0).
inline Tensor atan2_denominator_reciprocal(const Tensor& self, const Tensor& other) {
  const Tensor d = self * self + other * other;
  return op::where(op::eq(d, num(0.0)), num(0.0), op::reciprocal(d));
}

inline Tensor threshold_backward(const Tensor& grad, const Tensor& result, double threshold) {
  return where(result <= threshold, 0.0, grad);
}

/// d/da of a^b: b * a^(b-1), and 0 where b == 0 (avoids 0 * inf at a == 0).
inline Tensor pow_backward_self(const Tensor& grad, const Tensor& a, const Tensor& b) {
  // b - 1 in b's own dtype: two wrapped numbers would compute in the default float32 and round a
  // float64 exponent such as 1/3.
  Tensor d = b * op::pow(a, op::sub(b, scalar_tensor(1, b.dtype()), 1));
  return where(op::eq(b, num(0)), 0.0, grad * cj(d));
}
/// d/db of a^b: a^b * log(a), and 0 where a == 0 and b >= 0 (PyTorch's convention).
inline Tensor pow_backward_exponent(const Tensor& grad, const Tensor& a, const Tensor& b,
                                    const Tensor& result) {
  Tensor d = grad * (result * op::log(a));
  return op::where(op::eq(a, num(0)), op::where(op::ge(b, num(0)), num(0), d), d);
}

/// maximum/minimum: the gradient goes to the larger (smaller) input; ties split it evenly (as PyTorch).
/// Written as "unless it loses" so that where either input is NaN (no order: no tie, no loser) both get
/// the whole gradient, as PyTorch's `where(a == b, g / 2, g).masked_fill_(a < b, 0)`.
inline Tensor extremum_backward(const Tensor& grad, const Tensor& a, const Tensor& b, bool is_max) {
  Tensor loses = is_max ? op::lt(a, b) : op::gt(a, b);
  return op::where(op::eq(a, b), grad * 0.5, where(loses, 0.0, grad));
}

/// scatter with reduce= has no derivative in PyTorch (its backward raises "derivative for
/// aten::scatter is not implemented"); flambeau raises the same RuntimeError. Without reduce
/// the gradient passes through.
inline const Tensor& scatter_grad_without_reduce(const Tensor& grad,
                                                 const std::optional<std::string>& reduce) {
  if (reduce)
    throw RuntimeError(
        detail::cat_str("[scatter] derivative for scatter with reduce='", *reduce,
                        "' is not implemented (as in PyTorch); use scatter_reduce, which has one"));
  return grad;
}

/// tanh's gradient from its result, grad * (1 - y^2): for real tensors in two passes over the data
/// (grad - (grad * y) * y) instead of three.
inline Tensor tanh_backward(const Tensor& grad, const Tensor& result) {
  if (is_complex(result.dtype()) || is_complex(grad.dtype())) return grad * cj(1.0 - result * result);
  return op::addcmul(grad, grad * result, result, Scalar(-1.0));
}

/// The gradient of a scatter's `src` from its values at the index's positions (`gather(grad, dim, index)`,
/// shaped as the index). `src` may be larger than the index in any dim: only its leading index-shaped block
/// is scattered, so the rest of it gets zeros (PyTorch's formula returns the index-shaped block, which its
/// engine then refuses).
inline Tensor scattered_src_grad(const Tensor& g, const Shape& src_sizes) {
  if (std::ranges::equal(g.sizes(), src_sizes)) return g;
  std::vector<int64_t> pad;  // _pad_nd's order: the last dim's (before, after) first
  for (int64_t d = g.dim() - 1; d >= 0; --d) {
    pad.push_back(0);
    pad.push_back(src_sizes[d] - g.sizes()[d]);
  }
  return op::_pad_nd(g, pad, "constant", 0.0);
}

/// max over all elements: the gradient is shared evenly among the maxima (or the NaNs).
inline Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  Tensor mask = op::where(op::ne(result, result), op::ne(self, self), op::eq(self, result));
  Tensor count = op::sum(mask, std::nullopt, false, std::nullopt);
  return op::cast(mask, grad.dtype()) * (grad / count);
}

/// max along a dim: the gradient goes to the index max_dim returned.
inline Tensor value_selecting_reduction_backward(const Tensor& grad, int64_t dim, const Tensor& indices,
                                                 const Shape& sizes, bool keepdim) {
  Tensor g = grad, idx = indices;
  if (!sizes.empty()) {
    const int64_t d = wrap_dim(dim, static_cast<int64_t>(sizes.size()), "max");
    if (!keepdim) {
      g = op::unsqueeze(g, d);
      idx = op::unsqueeze(idx, d);
    }
    return op::scatter_add(zeros(sizes, g.dtype(), g.device()), d, idx, g);
  }
  return g;
}

/// sum: the gradient broadcast back over the reduced dims.
inline Tensor sum_backward(const Tensor& grad, const Shape& sizes, const std::optional<Shape>& dim,
                           bool keepdim) {
  Tensor r = grad;
  const int64_t nd = static_cast<int64_t>(sizes.size());
  if (!keepdim && nd > 0) {
    Shape dims;
    if (!dim || dim->empty()) {
      dims.resize(nd);
      std::iota(dims.begin(), dims.end(), 0);
    } else {
      for (int64_t d : *dim) dims.push_back(wrap_dim(d, nd, "sum"));
      std::ranges::sort(dims);
    }
    for (int64_t d : dims) r = op::unsqueeze(r, d);
  }
  return op::expand(r, sizes);
}

inline Tensor permute_backward(const Tensor& grad, const Shape& dims) {
  Shape inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[wrap_dim(dims[i], static_cast<int64_t>(dims.size()), "permute")] = static_cast<int64_t>(i);
  return op::permute(grad, inverse);
}

/// The gradient of a slice/select: g placed at `index` (int64, g's shape) along
/// `dim` of a zero tensor. Without grad mode a plain copy into a view does it;
/// under create_graph scatter_add keeps it differentiable.
inline Tensor place(const Shape& sizes, const Tensor& g, int64_t dim,
                    const std::function<Tensor(Tensor&)>& view_of, const std::function<Tensor()>& index) {
  Tensor z = zeros(sizes, g.dtype(), g.device());
  if (!grad_mode_enabled()) {
    Tensor v = view_of(z);
    op::copy_(v, g);
    return z;
  }
  return op::scatter_add(z, dim, index(), g);
}

inline Tensor slice_backward(const Tensor& grad, const Shape& sizes, int64_t dim,
                             std::optional<int64_t> start, int64_t step) {
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(sizes.size()), "slice");
  int64_t s = start.value_or(0);
  if (s < 0) s += sizes[d];
  s = std::clamp<int64_t>(s, 0, sizes[d]);
  const int64_t length = grad.sizes()[d];
  return place(
      sizes, grad, d, [&](Tensor& z) { return op::slice(z, d, s, s + length * step, step); },
      [&] {
        Shape shape(grad.dim(), 1);
        shape[d] = length;
        Tensor idx = op::arange(s, s + length * step, step, ScalarType::Int64, grad.device());
        return op::contiguous(op::expand(op::view(idx, shape), grad.sizes()), MemoryFormat::Contiguous);
      });
}

inline Tensor select_backward(const Tensor& grad, const Shape& sizes, int64_t dim, int64_t index) {
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(sizes.size()), "select");
  const int64_t i = index < 0 ? index + sizes[d] : index;
  Tensor g1 = op::unsqueeze(grad, d);
  return place(
      sizes, g1, d, [&](Tensor& z) { return op::slice(z, d, i, i + 1, 1); },
      [&] { return full(g1.sizes(), i, ScalarType::Int64, g1.device()); });
}

/// True if no two elements of a (sizes, strides) view share a memory location.
inline bool non_overlapping(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims with size > 1
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] > 1) dims.emplace_back(strides[i], sizes[i]);
  std::ranges::sort(dims);
  int64_t extent = 0;  // the largest offset the smaller-stride dims reach
  for (auto [stride, size] : dims) {
    if (stride <= extent) return false;
    extent += (size - 1) * stride;
  }
  return true;
}

/// view_as_real's gradient: the real pairs viewed as complex numbers, from a contiguous copy. An empty
/// gradient is made anew: contiguous() keeps an empty tensor's strides (an expanded one's are 0), which
/// view_as_complex refuses.
inline Tensor view_as_real_backward(const Tensor& grad) {
  const Tensor g = grad.numel() == 0 ? zeros(grad.sizes(), grad.dtype(), grad.device())
                                     : op::contiguous(grad, MemoryFormat::Contiguous);
  return op::view_as_complex(g);
}

/// The storage positions [first, last] a (sizes, strides, offset) geometry touches; nullopt when it has no
/// elements.
inline std::optional<std::pair<int64_t, int64_t>> storage_extent(IntArrayRef sizes, IntArrayRef strides,
                                                                  int64_t offset) {
  int64_t lo = offset, hi = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return std::nullopt;
    (strides[i] < 0 ? lo : hi) += (sizes[i] - 1) * strides[i];
  }
  return std::pair{lo, hi};
}

/// The storage position of each element of a geometry (its offset counted from the start of a buffer of
/// `span` elements), flattened in the geometry's order.
inline Tensor storage_positions(IntArrayRef sizes, IntArrayRef strides, int64_t offset, int64_t span,
                                Device device) {
  const Tensor all = op::arange(0, span, 1, ScalarType::Int64, device);
  return op::reshape(op::as_strided(all, sizes, strides, offset), Shape{-1});
}

/// as_strided's gradient, PyTorch's algorithm for any input and view geometry (both on one storage): the
/// gradient is summed into a zero buffer over the storage both touch, through the view's strides (a
/// scatter-add, so view elements that share a location add up), and the input reads its elements from it.
/// An input that itself shows one location k times gets 1/k of it in each (their sum is the location's
/// gradient). Built from differentiable ops, so create_graph records it; the common case (a contiguous
/// input, a view without overlaps, no graph to record) writes the gradient in place instead.
inline Tensor as_strided_backward(const Tensor& grad, const Shape& self_sizes, const Shape& self_strides,
                                  bool self_contiguous, int64_t self_offset, const Shape& sizes,
                                  const Shape& strides, int64_t offset) {
  const auto in = storage_extent(self_sizes, self_strides, self_offset);
  const auto out = storage_extent(sizes, strides, offset);
  if (!in) return zeros(self_sizes, grad.dtype(), grad.device());
  const bool view_overlaps = !non_overlapping(sizes, strides);
  if (self_contiguous && offset >= self_offset && !view_overlaps && !grad_mode_enabled()) {
    AutoExcludeAutograd guard;
    Tensor z = zeros(self_sizes, grad.dtype(), grad.device());
    if (out) {
      Tensor region = op::as_strided(z, sizes, strides, offset - self_offset);
      op::copy_(region, grad);
    }
    return z;
  }
  const int64_t base = out ? std::min(in->first, out->first) : in->first;
  const int64_t span = (out ? std::max(in->second, out->second) : in->second) - base + 1;
  Tensor storage = zeros(Shape{span}, grad.dtype(), grad.device());
  if (out)
    storage = op::index_add(storage, 0, storage_positions(sizes, strides, offset - base, span, grad.device()),
                            op::reshape(grad, Shape{-1}), Scalar(int64_t{1}));
  const Tensor in_pos = storage_positions(self_sizes, self_strides, self_offset - base, span, grad.device());
  if (!non_overlapping(self_sizes, self_strides)) {
    const Tensor ones_in = full(in_pos.sizes(), 1, grad.dtype(), grad.device());
    const Tensor count = op::index_add(zeros(Shape{span}, grad.dtype(), grad.device()), 0, in_pos, ones_in,
                                       Scalar(int64_t{1}));
    storage = op::div(storage, op::clamp_min(count, Scalar(int64_t{1})));
  }
  return op::reshape(op::index_select(storage, 0, in_pos), self_sizes);
}

/// Whether the softmax/log_softmax backward ops (Note [Softmax rows]: one pass per row on the
/// CPU, composed elsewhere) apply: float32/float64, same dtype and device, and no graph of the
/// backward recorded (create_graph goes through the composed, differentiable formulas).
inline bool fused_softmax_backward(const Tensor& grad, const Tensor& result) {
  const ScalarType dt = result.dtype();
  return !grad_mode_enabled() && (dt == ScalarType::Float32 || dt == ScalarType::Float64) &&
         grad.dtype() == dt && result.device() == grad.device() &&
         std::ranges::equal(grad.sizes(), result.sizes());
}

/// g - exp(out) * g.sum(dim, keepdim)
inline Tensor log_softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim) {
  if (fused_softmax_backward(grad, result)) return op::_log_softmax_backward_data(grad, result, dim);
  const int64_t d[1] = {dim};
  return grad - op::exp(result) * op::sum(grad, IntArrayRef(d), true, std::nullopt);
}

/// out * (g - (g * out).sum(dim, keepdim))
inline Tensor softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim) {
  if (fused_softmax_backward(grad, result)) return op::_softmax_backward_data(grad, result, dim);
  const int64_t d[1] = {dim};
  return result * (grad - op::sum(grad * result, IntArrayRef(d), true, std::nullopt));
}

/// cat: the slice of the gradient that each input filled.
inline variable_list cat_backward(const Tensor& grad, const std::vector<Meta>& metas, int64_t dim) {
  variable_list out(metas.size());
  const int64_t d = wrap_dim(dim, grad.dim(), "cat");
  int64_t offset = 0;
  for (size_t i = 0; i < metas.size(); ++i) {
    const int64_t n = metas[i].sizes.empty() ? 0 : metas[i].sizes[d];
    out[i] = op::slice(grad, d, offset, offset + n, 1);
    offset += n;
  }
  return out;
}

/// linear: d input = grad @ weight (grad is (*, out), weight (out, in)).
inline Tensor linear_input_backward(const Tensor& grad, const Tensor& weight) {
  return grad.dim() == 2 ? op::mm(grad, weight) : op::matmul(grad, weight);
}

/// linear: d weight = grad^T @ input, both flattened to 2-D over their leading dims.
inline Tensor linear_weight_backward(const Tensor& grad, const Tensor& input) {
  const auto as_2d = [](const Tensor& t) {
    if (t.dim() == 2) return t;
    const int64_t shape[2] = {-1, t.dim() == 0 ? 1 : t.sizes()[t.dim() - 1]};
    return op::reshape(t, IntArrayRef(shape));
  };
  return op::mm(op::transpose(as_2d(grad), 0, 1), as_2d(input));
}

/// linear's three gradients (grad_input_mask: input, weight, bias). float32/float64/bfloat16 outside
/// create_graph: core's _linear_backward, one call (on the CPU its GEMMs and the bias's column
/// sum run side by side on the GEMM pool; other devices compose it of mm and sum). Otherwise, or
/// for a bias that only broadcasts, the composed forms above (differentiable under create_graph;
/// the bias's gradient is grad, reduced to the bias's shape by the caller).
inline std::tuple<Tensor, Tensor, Tensor> linear_backward_grads(const Tensor& grad, const Tensor& input,
                                                                const Tensor& weight,
                                                                const std::optional<Tensor>& bias,
                                                                const std::array<bool, 3>& mask) {
  const ScalarType dt = grad.dtype();
  const bool row_bias = !bias || (bias->dim() == 1 && bias->sizes()[0] == weight.sizes()[0]);
  // bfloat16: autocast's linear, whose products and bias sum core runs as one job (Note [bfloat16 linear
  // backward] in core's lowp_gemm.h).
  const bool own_dtype = dt == ScalarType::Float32 || dt == ScalarType::Float64 || dt == ScalarType::BFloat16;
  if (!grad_mode_enabled() && own_dtype && input.dtype() == dt && weight.dtype() == dt && weight.dim() == 2 &&
      input.dim() >= 1 && grad.dim() == input.dim() && input.device() == grad.device() &&
      weight.device() == grad.device()) {
    const int64_t out_f = weight.sizes()[0], in_f = weight.sizes()[1];
    const auto as_2d = [](const Tensor& t, int64_t cols) {
      if (t.dim() == 2) return t;
      int64_t rows = 1;  // the leading dims' product (with cols == 0, -1 would be ambiguous)
      for (int64_t d = 0; d + 1 < t.dim(); ++d) rows *= t.sizes()[d];
      const int64_t shape[2] = {rows, cols};
      return op::reshape(t, IntArrayRef(shape));
    };
    const bool bias_g = mask[2] && row_bias;
    auto [gi, gw, gb] =
        op::_linear_backward(as_2d(grad, out_f), as_2d(input, in_f), weight, mask[0], mask[1], bias_g);
    if (mask[0] && gi.defined() && input.dim() != 2) gi = op::reshape(gi, input.sizes());
    if (mask[2] && !bias_g) gb = grad;
    return {gi, gw, gb};
  }
  Tensor gi, gw;
  if (mask[0]) gi = linear_input_backward(grad, weight);
  if (mask[1]) gw = linear_weight_backward(grad, input);
  return {gi, gw, mask[2] ? grad : Tensor()};
}

/// linalg_slogdet's gradient (PyTorch's): (g_logabs - i Im(conj(g_sign) sign)) A^{-H}, each matrix
/// scaled by its scalar; the sign of a real determinant is piecewise constant (no gradient).
inline Tensor slogdet_backward(const Tensor& g_abs, const Tensor& g_sign, const Tensor& self,
                               const Tensor& sign) {
  Tensor g = g_abs.defined() ? g_abs : op::mul(op::abs(sign), num(0));
  if (is_complex(self.dtype()) && g_sign.defined())
    g = op::complex(g, op::neg(op::imag(op::mul(cj(g_sign), sign))));
  const Tensor inv_h = cj(op::transpose(op::_linalg_inv(self), -2, -1));
  return op::mul(op::unsqueeze(op::unsqueeze(g, -1), -1), inv_h);
}

/// The gradient of max_pool_backward's grad_output: grad (the input's shape) gathered at each index; an
/// index past the plane (a pooling window with no element inside the image, Note [Empty pooling window] in
/// core's pool.cpp) received nothing forward, so it gets zero.
inline Tensor max_pool_backward_grad_output(const Tensor& grad, const Tensor& indices) {
  const int64_t d = grad.dim();
  const int64_t plane = grad.sizes()[d - 1] * grad.sizes()[d - 2];
  const Tensor idx = op::flatten(indices, -2, -1);
  const Tensor inside = idx < static_cast<double>(plane);
  const Tensor g = op::gather(op::flatten(grad, -2, -1), -1, op::clamp_max(idx, Scalar(plane - 1)));
  return op::reshape(where(inside, g, 0.0), indices.sizes());
}


/// native_group_norm's gradients including those reaching its mean and rstd outputs (differentiable
/// outputs, as PyTorch's). Per (batch, group) of m elements, mean = sum(x) / m and rstd = (var + eps)^-1/2
/// with the biased variance, so d mean/dx = 1/m and d rstd/dx = -rstd^3 (x - mean) / m.
inline std::tuple<Tensor, Tensor, Tensor> group_norm_backward_with_stats(
    const Tensor& grad, const Tensor& grad_mean, const Tensor& grad_rstd, const Tensor& input, const Tensor& mean,
    const Tensor& rstd, const std::optional<Tensor>& weight, int64_t batch, int64_t channels, int64_t hxw,
    int64_t group, bool input_g, bool weight_g, bool bias_g) {
  // Only the statistics may have been used: the normalized output then contributes nothing.
  const Tensor g = grad.defined() ? grad : zeros_like(input);
  auto grads = op::native_group_norm_backward(g, input, mean, rstd, weight, batch, channels, hxw, group, input_g,
                                              weight_g, bias_g);
  if (!input_g || (!grad_mean.defined() && !grad_rstd.defined())) return grads;
  const double m = static_cast<double>(channels / group * hxw);
  const Tensor x = op::reshape(input, Shape{batch, group, -1});
  Tensor stats_grad = zeros_like(x);
  if (grad_mean.defined()) stats_grad = stats_grad + op::unsqueeze(grad_mean, -1) / m;
  if (grad_rstd.defined())
    stats_grad = stats_grad + op::unsqueeze(op::neg(grad_rstd * rstd * rstd * rstd), -1) *
                                  (x - op::unsqueeze(mean, -1)) / m;
  std::get<0>(grads) = std::get<0>(grads) + op::reshape(stats_grad, input.sizes());
  return grads;
}

// ---- second derivatives of the fused activation and loss backward kernels ----
// Each backward op is linear in grad_output, so its grad_output gradient is the op
// itself applied to grad (or, for a reduced loss, grad times the op at grad_output = 1,
// summed by the caller back to grad_output's shape). Its self gradient is
// grad * grad_output * f''(x) for an activation f; the helpers below give f''.

/// gelu''(x): phi(x) (2 - x^2) (approximate='none'); for the tanh form, with
/// u = k (x + c x^3) and t = tanh(u): (1 - t^2) (u' - x t u'^2 + x u'' / 2).
inline Tensor gelu_second_derivative(const Tensor& x, std::string_view approximate) {
  if (approximate == "tanh") {
    constexpr double k = 0.79788456080286535588, c = 0.044715;  // sqrt(2 / pi), as the kernel
    const Tensor x2 = x * x;
    const Tensor t = op::tanh(k * (x + c * x2 * x));
    const Tensor du = k * (1.0 + (3.0 * c) * x2);
    return (1.0 - t * t) * (du - x * t * du * du + (3.0 * k * c) * x2);
  }
  constexpr double inv_sqrt_2pi = 0.39894228040143267794;
  return op::exp(x * x * -0.5) * inv_sqrt_2pi * (2.0 - x * x);
}

/// silu''(x) = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x).
inline Tensor silu_second_derivative(const Tensor& x) {
  const Tensor s = op::sigmoid(x);
  return s * (1.0 - s) * (2.0 + x * (1.0 - 2.0 * s));
}

/// mish''(x) = s (1 - T^2) (2 + x (1 - s - 2 s T)), s = sigmoid(x), T = tanh(softplus(x)).
inline Tensor mish_second_derivative(const Tensor& x) {
  const Tensor s = op::sigmoid(x);
  const Tensor t = op::tanh(op::softplus(x, Scalar(1.0), Scalar(20.0)));
  return s * (1.0 - t * t) * (2.0 + x * (1.0 - s - 2.0 * s * t));
}

/// elu''(x): 0 for x > 0, alpha scale input_scale^2 exp(input_scale x) otherwise.
inline Tensor elu_second_derivative(const Tensor& x, const Scalar& alpha, const Scalar& scale,
                                    const Scalar& input_scale) {
  const double is = input_scale.to_double();
  return where(x > 0.0, 0.0, op::exp(x * is) * (alpha.to_double() * scale.to_double() * is * is));
}

/// softplus''(x): beta s (1 - s), s = sigmoid(beta x); 0 where beta x > threshold (the linear part).
inline Tensor softplus_second_derivative(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  const double b = beta.to_double();
  const Tensor bx = x * b;
  const Tensor s = op::sigmoid(bx);
  return where(bx > threshold.to_double(), 0.0, s * (1.0 - s) * b);
}

/// hardswish''(x): 1/3 strictly inside (-3, 3), 0 outside (PyTorch's choice at the kinks).
inline Tensor hardswish_second_derivative(const Tensor& x) {
  return where(op::logical_and(x > -3.0, x < 3.0), op::mul(ones_like(x), num(1.0 / 3.0)), 0.0);
}

/// log_sigmoid''(x) = -s (1 - s), s = sigmoid(x).
inline Tensor log_sigmoid_second_derivative(const Tensor& x) {
  const Tensor s = op::sigmoid(x);
  return -(s * (1.0 - s));
}

/// softsign''(x) = -2 sign(x) / (1 + |x|)^3.
inline Tensor softsign_second_derivative(const Tensor& x) {
  const Tensor d = 1.0 + op::abs(x);
  return sign_of(x) * -2.0 / (d * d * d);
}

/// glu's halves along dim: a (the value) and b (the gate).
inline std::pair<Tensor, Tensor> glu_halves(const Tensor& t, int64_t dim) {
  const int64_t d = wrap_dim(dim, t.dim(), "glu_backward");
  const int64_t h = t.sizes()[d] / 2;
  return {op::slice(t, d, 0, h, 1), op::slice(t, d, h, 2 * h, 1)};
}

/// glu_backward = cat(go s, go a s (1 - s)) (s = sigmoid(b)); its gradient in grad_output
/// from grad = cat(ga, gb): ga s + gb a s (1 - s).
inline Tensor glu_backward_grad_output_backward(const Tensor& grad, const Tensor& self, int64_t dim) {
  const auto [a, b] = glu_halves(self, dim);
  const auto [ga, gb] = glu_halves(grad, dim);
  const Tensor s = op::sigmoid(b);
  return s * (ga + gb * a * (1.0 - s));
}

/// glu_backward's gradient in self: cat(gb go s', go (ga s' + gb a s'')), s' = s (1 - s),
/// s'' = s' (1 - 2 s).
inline Tensor glu_backward_self_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self,
                                         int64_t dim) {
  const auto [a, b] = glu_halves(self, dim);
  const auto [ga, gb] = glu_halves(grad, dim);
  const Tensor s = op::sigmoid(b);
  const Tensor ds = s * (1.0 - s);
  const Tensor da = gb * grad_output * ds;
  const Tensor db = grad_output * ds * (ga + gb * a * (1.0 - 2.0 * s));
  return op::cat(TensorList{da, db}, wrap_dim(dim, self.dim(), "glu_backward"));
}

/// prelu's weight seen against the input: one value, or one per channel (dim 1) shaped
/// (C, 1, ...) to broadcast over the input's trailing dims.
inline Tensor prelu_weight_broadcast(const Tensor& weight, const Tensor& self) {
  if (weight.numel() == 1 || self.dim() < 2) return op::reshape(weight, Shape{});
  Shape shape(static_cast<size_t>(self.dim() - 1), 1);
  shape[0] = weight.numel();
  return op::reshape(weight, shape);
}

/// An input-shaped tensor summed to prelu's weight shape (over all but the channel dim).
inline Tensor prelu_reduce_to_weight(const Tensor& t, const Tensor& weight) {
  if (weight.numel() == 1 || t.dim() < 2)
    return op::reshape(op::sum(t, std::nullopt, false, std::nullopt), weight.sizes());
  Shape dims;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != 1) dims.push_back(d);
  return op::reshape(op::sum(t, IntArrayRef(dims), false, std::nullopt), weight.sizes());
}

/// x where x <= 0, else 0: the input's share of prelu's weight gradient.
inline Tensor prelu_negative_part(const Tensor& x) { return where(x > 0.0, 0.0, x); }

/// The factor a pointwise loss's backward puts on its elementwise derivative: grad_output
/// (reduction none or sum) or grad_output / numel (mean); numel is the loss's unreduced size.
inline Tensor pointwise_loss_scale(const Tensor& grad_output, int64_t reduction, int64_t numel) {
  return reduction == 1 ? grad_output / static_cast<double>(numel) : grad_output;
}

/// An optional loss weight as a factor (1 when absent).
inline Tensor weight_or_one(const std::optional<Tensor>& weight) { return weight ? *weight : num(1.0); }

/// binary_cross_entropy_backward's gradient in self: grad scale w f'(x) with
/// f = (x - t) / max(x (1 - x), 1e-12) (the kernel's clamp; constant denominator below it).
inline Tensor binary_cross_entropy_backward_self_backward(const Tensor& grad, const Tensor& grad_output,
                                                          const Tensor& self, const Tensor& target,
                                                          const std::optional<Tensor>& weight,
                                                          int64_t reduction) {
  constexpr double eps = 1e-12;
  const Tensor d = self * (1.0 - self);
  const Tensor clamped = op::clamp_min(d, Scalar(eps));
  const Tensor slope = where(d < eps, 0.0, (self - target) * (1.0 - 2.0 * self) / clamped);
  const Tensor df = (1.0 - slope) / clamped;
  return grad * pointwise_loss_scale(grad_output, reduction, grad.numel()) * weight_or_one(weight) * df;
}

/// binary_cross_entropy_with_logits_backward's gradient in self:
/// grad scale w (pw t + 1 - t) s (1 - s), s = sigmoid(x).
inline Tensor binary_cross_entropy_with_logits_backward_self_backward(
    const Tensor& grad, const Tensor& grad_output, const Tensor& self, const Tensor& target,
    const std::optional<Tensor>& weight, const std::optional<Tensor>& pos_weight, int64_t reduction) {
  const Tensor s = op::sigmoid(self);
  const Tensor lw = pos_weight ? *pos_weight * target + (1.0 - target) : num(1.0);
  return grad * pointwise_loss_scale(grad_output, reduction, grad.numel()) * weight_or_one(weight) * lw *
         (s * (1.0 - s));
}

/// smooth_l1_loss_backward's gradient in self (minus it in target): grad scale / beta where
/// |x - t| < beta, 0 elsewhere (and everywhere for beta = 0, a scaled sign).
inline Tensor smooth_l1_loss_backward_self_backward(const Tensor& grad, const Tensor& grad_output,
                                                    const Tensor& self, const Tensor& target,
                                                    int64_t reduction, double beta) {
  const Tensor g = grad * pointwise_loss_scale(grad_output, reduction, grad.numel());
  if (beta <= 0.0) return g * 0.0;
  return where(op::abs(self - target) < beta, g / beta, 0.0);
}

/// huber_loss_backward's gradient in self (minus it in target): grad scale where
/// |x - t| < delta, 0 elsewhere.
inline Tensor huber_loss_backward_self_backward(const Tensor& grad, const Tensor& grad_output,
                                                const Tensor& self, const Tensor& target, int64_t reduction,
                                                double delta) {
  const Tensor g = grad * pointwise_loss_scale(grad_output, reduction, grad.numel());
  return where(op::abs(self - target) < delta, g, 0.0);
}

/// The class dim of cross entropy's (N, C, d1, ...) or (C,) logits.
inline int64_t class_dim(const Tensor& self) { return self.dim() >= 2 ? 1 : 0; }

/// _cross_entropy_backward's gradient in grad_output: the backward op is linear in it, so
/// this is grad times the op at grad_output = 1, summed over the classes (reduction none,
/// one value per row) or over everything (mean, sum).
inline Tensor cross_entropy_backward_grad_output_backward(const Tensor& grad, const Tensor& grad_output,
                                                          const Tensor& self, const Tensor& target,
                                                          const Tensor& lse,
                                                          const std::optional<Tensor>& weight,
                                                          int64_t reduction, int64_t ignore_index,
                                                          double label_smoothing) {
  const Tensor unit = op::_cross_entropy_backward(ones_like(grad_output), self, target, lse, weight,
                                                  reduction, ignore_index, label_smoothing);
  const Tensor g = grad * unit;
  if (reduction != 0) return op::sum(g, std::nullopt, false, std::nullopt);
  const int64_t d[1] = {class_dim(self)};
  return op::sum(g, IntArrayRef(d), false, std::nullopt);
}

/// _cross_entropy_backward is, per row, A softmax(x) - B with A, B constant in x; its gradient
/// in self is A J grad with J = diag(p) - p p^T, the softmax's (symmetric) Jacobian:
/// A p (grad - sum(grad p)). A row's A is its gradient scale times its weight: for a class
/// index k, (1 - eps) w_k + eps / C sum(w) (0 for an ignored row); for class probabilities y,
/// sum_c w_c ((1 - eps) y_c + eps / C). The scale is grad_output (none, sum) or grad_output
/// over the total weight of the rows that count (mean). The softmax is recomputed from self
/// (not from the saved lse), so a third derivative follows it.
inline Tensor cross_entropy_backward_self_backward(const Tensor& grad, const Tensor& grad_output,
                                                   const Tensor& self, const Tensor& target,
                                                   const std::optional<Tensor>& weight, int64_t reduction,
                                                   int64_t ignore_index, double label_smoothing) {
  const int64_t cd = class_dim(self);
  const int64_t classes = self.sizes()[cd];
  const int64_t cdim[1] = {cd};
  const double eps = label_smoothing, smooth = label_smoothing / static_cast<double>(classes);
  std::optional<Tensor> w;
  if (weight) w = weight->dtype() == self.dtype() ? *weight : op::cast(*weight, self.dtype());
  Tensor coef, total;
  const bool probs = is_floating(target.dtype()) && target.dim() == self.dim();
  if (probs) {
    Tensor wy = target * (1.0 - eps) + smooth;
    if (w) {
      Shape wshape(static_cast<size_t>(self.dim() - cd), 1);
      wshape[0] = classes;
      wy = wy * op::reshape(*w, wshape);
    }
    coef = op::sum(wy, IntArrayRef(cdim), false, std::nullopt);
    total = num(static_cast<double>(self.numel() / std::max<int64_t>(1, classes)));
  } else {
    const Tensor valid = op::ne(target, num(static_cast<double>(ignore_index)));
    const Tensor k = op::where(valid, target, zeros_like(target));
    Tensor wk = ones_like(op::cast(target, self.dtype()));
    Tensor wsum_t = num(static_cast<double>(classes));
    if (w) {
      const int64_t flat[1] = {-1};
      wk = op::reshape(op::index_select(*w, 0, op::reshape(k, IntArrayRef(flat))), target.sizes());
      wsum_t = op::sum(*w, std::nullopt, false, std::nullopt);
    }
    wk = where(valid, wk, 0.0);
    coef = where(valid, wk * (1.0 - eps) + wsum_t * smooth, 0.0);
    total = op::sum(wk, std::nullopt, false, std::nullopt);
  }
  Tensor a = coef * (reduction == 1 ? grad_output / total : grad_output);
  if (self.dim() >= 2) a = op::unsqueeze(a, cd);
  const Tensor p = op::softmax(self, cd, std::nullopt);
  return a * p * (grad - op::sum(grad * p, IntArrayRef(cdim), true, std::nullopt));
}


// ---- loss gradients in the target (and class weights) ----

/// PyTorch refuses a gradient for these loss arguments (its forward raises "not differentiable
/// with respect to argument"); flambeau raises when the gradient is asked for instead of
/// silently dropping it.
inline Tensor not_differentiable(const char* op, const char* arg, const char* when = "") {
  throw RuntimeError(detail::cat_str("[", op, "] is not differentiable with respect to argument '", arg, "'",
                                     when, " (as in PyTorch)"));
}

/// PyTorch has no formula for this argument either (its backward raises NotImplementedError "the
/// derivative for '<what>' is not implemented."): raised when that gradient is asked for.
inline Tensor not_implemented_gradient(const char* op, const char* what) {
  throw NotImplementedError(
      detail::cat_str("[", op, "] the derivative for '", what, "' is not implemented (as in PyTorch)"));
}

/// binary_cross_entropy's gradient in its target: -grad scale w logit(x), PyTorch's formula
/// (the log of the logit is not clamped, unlike the loss's logs).
inline Tensor binary_cross_entropy_target_backward(const Tensor& grad, const Tensor& self,
                                                   const std::optional<Tensor>& weight, int64_t reduction) {
  const Tensor logit = op::log(self) - op::log1p(-self);
  return -pointwise_loss_scale(grad, reduction, self.numel()) * weight_or_one(weight) * logit;
}

/// binary_cross_entropy_with_logits' gradient in its target: grad scale w (log(1 - s) - pw log s),
/// s = sigmoid(x), from log_sigmoid (stable); -x without pos_weight.
inline Tensor binary_cross_entropy_with_logits_target_backward(const Tensor& grad, const Tensor& self,
                                                               const std::optional<Tensor>& weight,
                                                               const std::optional<Tensor>& pos_weight,
                                                               int64_t reduction) {
  const Tensor d = pos_weight ? op::log_sigmoid(-self) - *pos_weight * op::log_sigmoid(self) : -self;
  return pointwise_loss_scale(grad, reduction, self.numel()) * weight_or_one(weight) * d;
}

/// binary_cross_entropy_backward's gradient in target: -grad scale w / max(x (1 - x), 1e-12).
inline Tensor binary_cross_entropy_backward_target_backward(const Tensor& grad, const Tensor& grad_output,
                                                            const Tensor& self,
                                                            const std::optional<Tensor>& weight,
                                                            int64_t reduction) {
  const Tensor clamped = op::clamp_min(self * (1.0 - self), Scalar(1e-12));
  return -grad * pointwise_loss_scale(grad_output, reduction, grad.numel()) * weight_or_one(weight) / clamped;
}

/// binary_cross_entropy_with_logits_backward's gradient in target: the backward is
/// scale w ((pw t + 1 - t) s - pw t), so grad scale w ((pw - 1) s - pw) (-grad scale w without pw).
inline Tensor binary_cross_entropy_with_logits_backward_target_backward(
    const Tensor& grad, const Tensor& grad_output, const Tensor& self, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& pos_weight, int64_t reduction) {
  const Tensor d = pos_weight ? (*pos_weight - 1.0) * op::sigmoid(self) - *pos_weight : num(-1.0);
  return grad * pointwise_loss_scale(grad_output, reduction, grad.numel()) * weight_or_one(weight) * d;
}

/// Whether a cross entropy target holds class probabilities (the kernel's test), not class indices.
inline bool cross_entropy_probability_target(const Tensor& self, const Tensor& target) {
  return is_floating(target.dtype()) && target.dim() == self.dim();
}

/// Class weights shaped (C, 1, ...) to broadcast over self from its class dim, in self's dtype.
inline Tensor cross_entropy_class_weight(const Tensor& weight, const Tensor& self) {
  const int64_t cd = class_dim(self);
  Shape shape(static_cast<size_t>(self.dim() - cd), 1);
  shape[0] = self.sizes()[cd];
  return op::reshape(weight.dtype() == self.dtype() ? weight : op::cast(weight, self.dtype()), shape);
}

/// The gradient scale of each row of a probability-target cross entropy, broadcast over its
/// classes: grad (reduction none, one per row; sum) or grad / rows (mean).
inline Tensor cross_entropy_row_scale(const Tensor& grad, const Tensor& self, int64_t reduction) {
  const int64_t cd = class_dim(self);
  if (reduction == 1)
    return grad / static_cast<double>(self.numel() / std::max<int64_t>(1, self.sizes()[cd]));
  return reduction == 0 && self.dim() >= 2 ? op::unsqueeze(grad, cd) : grad;
}

/// Sums a per-element (self-shaped) gradient to the (C,) class weights.
inline Tensor cross_entropy_sum_to_classes(const Tensor& g, const Tensor& self) {
  if (self.dim() < 2) return g;
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < self.dim(); ++d) dims.push_back(d);
  return op::sum(g, IntArrayRef(dims), false, std::nullopt);
}

/// With class probabilities y, each row's loss is -sum_c w_c ((1 - eps) y_c + eps / C) log_softmax(x)_c:
/// linear in y, so its gradient in the target is -grad scale (1 - eps) w log_softmax(x). Class
/// indices (integers) cannot require a gradient.
inline Tensor cross_entropy_target_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                            const std::optional<Tensor>& weight, int64_t reduction,
                                            double label_smoothing) {
  if (!cross_entropy_probability_target(self, target))
    return not_differentiable("cross_entropy", "target", " for class-index targets");
  const Tensor logp = op::_log_softmax(self, class_dim(self));
  Tensor g = -cross_entropy_row_scale(grad, self, reduction) * (1.0 - label_smoothing) * logp;
  return weight ? g * cross_entropy_class_weight(*weight, self) : g;
}

/// The same loss is linear in the class weights: -grad scale ((1 - eps) y + eps / C) log_softmax(x),
/// summed over rows. With class indices PyTorch has no weight gradient (mean divides by the
/// weights of the targets' classes) and neither has flambeau.
inline Tensor cross_entropy_weight_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                            int64_t reduction, double label_smoothing) {
  if (!cross_entropy_probability_target(self, target))
    return not_differentiable("cross_entropy", "weight", " for class-index targets");
  const double smooth = label_smoothing / static_cast<double>(self.sizes()[class_dim(self)]);
  const Tensor y = target * (1.0 - label_smoothing) + smooth;
  const Tensor logp = op::_log_softmax(self, class_dim(self));
  return cross_entropy_sum_to_classes(-cross_entropy_row_scale(grad, self, reduction) * y * logp, self);
}

/// _cross_entropy_backward with class probabilities is, per row, scale (A p - w y') with
/// A = sum_c w_c y'_c, y' = (1 - eps) y + eps / C and p = softmax(x). Against grad G, its gradient
/// in y is scale (1 - eps) w (sum_k G_k p_k - G).
inline Tensor cross_entropy_backward_target_backward(const Tensor& grad, const Tensor& grad_output,
                                                     const Tensor& self, const Tensor& target,
                                                     const std::optional<Tensor>& weight, int64_t reduction,
                                                     double label_smoothing) {
  if (!cross_entropy_probability_target(self, target))
    return not_differentiable("cross_entropy", "target", " for class-index targets");
  const int64_t cdim[1] = {class_dim(self)};
  const Tensor p = op::softmax(self, cdim[0], std::nullopt);
  Tensor g = cross_entropy_row_scale(grad_output, self, reduction) * (1.0 - label_smoothing) *
             (op::sum(grad * p, IntArrayRef(cdim), true, std::nullopt) - grad);
  return weight ? g * cross_entropy_class_weight(*weight, self) : g;
}

/// ... and in the class weights: scale y' (sum_k G_k p_k - G), summed over rows.
inline Tensor cross_entropy_backward_weight_backward(const Tensor& grad, const Tensor& grad_output,
                                                     const Tensor& self, const Tensor& target,
                                                     int64_t reduction, double label_smoothing) {
  if (!cross_entropy_probability_target(self, target))
    return not_differentiable("cross_entropy", "weight", " for class-index targets");
  const int64_t cdim[1] = {class_dim(self)};
  const double smooth = label_smoothing / static_cast<double>(self.sizes()[cdim[0]]);
  const Tensor y = target * (1.0 - label_smoothing) + smooth;
  const Tensor p = op::softmax(self, cdim[0], std::nullopt);
  const Tensor g = cross_entropy_row_scale(grad_output, self, reduction) * y *
                   (op::sum(grad * p, IntArrayRef(cdim), true, std::nullopt) - grad);
  return cross_entropy_sum_to_classes(g, self);
}

// ---- forward formulas of the nn entries (Note [Forward formulas] in gen_autograd.py) ----

/// log_softmax's tangent: d log p = dx - sum(p dx) along dim (p = exp(result)).
inline Tensor log_softmax_jvp(const Tensor& self_t, const Tensor& result, int64_t dim) {
  const int64_t d[1] = {dim};
  return self_t - op::sum(op::exp(result) * self_t, IntArrayRef(d), true, std::nullopt);
}

/// convolution's bias tangent (C_out,) shaped (C_out, 1, ...) to broadcast over the output's channel
/// dim and its `spatial` trailing dims.
inline Tensor conv_bias_jvp(const Tensor& bias_t, size_t spatial) {
  Shape shape(spatial + 1, 1);
  shape[0] = bias_t.numel();
  return op::reshape(bias_t, shape);
}

/// A gradient of convolution's input or weight laid out as PyTorch's (Note [Result layout] in core's
/// result_layout.cpp): in conv_memory_format(input, weight), which the backward ops cannot see (they
/// lay theirs out from grad_output, e.g. a sum's expanded gradient); a copy only when it differs.
inline Tensor conv_grad_in_format(const Tensor& g, const Tensor& input, const Tensor& weight) {
  if (g.dim() != 4) return g;
  const MemoryFormat f = conv_memory_format(input, weight);
  if (std::ranges::equal(g.strides(), strides_for_memory_format(g.sizes(), f, "convolution_backward"))) return g;
  return op::clone(g, f);
}

/// A pooling's incoming gradient in the suggested format of `like` (its output or indices, laid out as
/// the forward's input), so that the backward op, which lays the input's gradient out from grad_output
/// (Note [Result layout]), gives PyTorch's layout, the forward input's, whatever strides grad has (a
/// global pooling's (N, C, 1, 1) gradient is often a view of an (N, C) one); a copy only when they differ.
inline Tensor grad_in_format_of(const Tensor& grad, const Tensor& like) {
  if (grad.dim() != 4) return grad;
  const MemoryFormat f = suggest_memory_format(like);
  if (suggest_memory_format(grad) == f) return grad;
  return op::clone(grad, f);
}

/// A per-channel (C,) tensor shaped (1, C, 1, ...) against an (N, C, ...) input of `dim` dims.
inline Tensor channel_view(const Tensor& t, int64_t dim) {
  Shape shape(static_cast<size_t>(dim), 1);
  shape[1] = t.numel();
  return op::reshape(t, shape);
}

/// The tangent of a normalization xhat = (x - mean) rstd whose statistics are taken over `dims`
/// (mean and the biased variance): rstd (dx - mean(dx) - xhat mean(xhat dx)).
inline Tensor normalized_jvp(const Tensor& x_t, const Tensor& xhat, const Tensor& rstd, IntArrayRef dims) {
  return rstd * (x_t - op::mean(x_t, dims, true, std::nullopt) -
                 xhat * op::mean(x_t * xhat, dims, true, std::nullopt));
}

/// Whether a forward formula must record how its tangent depends on `t` (reverse over forward: a
/// tangent's graph reaching its primal): grad mode on and t requiring grad. Statistics an op returns
/// without history (layer and batch norm's mean and rstd) are then recomputed from t with recorded ops.
inline bool graph_through(const Tensor& t) { return grad_mode_enabled() && t.requires_grad(); }

/// The mean and rstd = (biased variance + eps)^-1/2 of x over `dims` (kept), recorded.
inline std::pair<Tensor, Tensor> recorded_stats(const Tensor& x, IntArrayRef dims, double eps) {
  const Tensor mean = op::mean(x, dims, true, std::nullopt);
  const Tensor centered = x - mean;
  return {mean, op::rsqrt(op::mean(centered * centered, dims, true, std::nullopt) + eps)};
}

/// The dims of an (N, C, ...) input but the channel dim (batch norm's statistics).
inline Shape batch_norm_dims(const Tensor& input) {
  Shape dims;
  for (int64_t d = 0; d < input.dim(); ++d)
    if (d != 1) dims.push_back(d);
  return dims;
}

/// The statistics native_batch_norm normalized with: in training the batch's it saved (save_mean,
/// save_invstd); evaluation mode saves none (shape (0,), as PyTorch), so the running mean and
/// 1/sqrt(running_var + eps), as its kernel computes them (in float64, rounded to the statistics' dtype).
inline std::pair<Tensor, Tensor> batch_norm_used_stats(const std::optional<Tensor>& running_mean,
                                                       const std::optional<Tensor>& running_var,
                                                       const Tensor& save_mean, const Tensor& save_invstd,
                                                       bool training, double eps) {
  if (training) return {save_mean, save_invstd};
  // meta::check_batch_norm: evaluation mode has both running statistics.
  FB_CHECK(running_mean && running_var,
           "[batch_norm_backward] evaluation mode needs running_mean and running_var");
  const Tensor& rv = *running_var;
  const Tensor invstd = op::rsqrt(op::cast(rv, ScalarType::Float64) + eps);
  return {*running_mean, invstd.dtype() == rv.dtype() ? invstd : op::cast(invstd, rv.dtype())};
}

/// native_batch_norm's gradients (input, weight, bias; those asked in `mask`) by its fused backward, from the
/// statistics the forward used (batch_norm_used_stats).
inline std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(
    const Tensor& grad, const Tensor& input, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const Tensor& save_mean, const Tensor& save_invstd, bool training, double eps,
    const std::array<bool, 3>& mask) {
  const auto [mean, invstd] =
      batch_norm_used_stats(running_mean, running_var, save_mean, save_invstd, training, eps);
  return op::native_batch_norm_backward(grad, input, weight, mean, invstd, training, mask[0], mask[1],
                                        mask[2]);
}

/// batch norm's statistics shaped (1, C, 1, ...) in the input's dtype (they are float32 for a
/// mixed-precision input): those the forward used (batch_norm_used_stats: the batch's in training, the
/// running ones in evaluation), or in training the batch's recomputed when the graph must reach the input.
inline std::pair<Tensor, Tensor> batch_norm_stats_view(const Tensor& input,
                                                       const std::optional<Tensor>& running_mean,
                                                       const std::optional<Tensor>& running_var,
                                                       const Tensor& save_mean, const Tensor& save_invstd,
                                                       bool training, double eps) {
  if (training && graph_through(input)) return recorded_stats(input, batch_norm_dims(input), eps);
  const auto [mean, invstd] =
      batch_norm_used_stats(running_mean, running_var, save_mean, save_invstd, training, eps);
  const auto view = [&](const Tensor& s) {
    return channel_view(s.dtype() == input.dtype() ? s : op::cast(s, input.dtype()), input.dim());
  };
  return {view(mean), view(invstd)};
}

/// native_batch_norm's tangent in its input: the normalization's (its statistics follow the input in
/// training; the running statistics of evaluation are constants), times the weight.
inline Tensor batch_norm_input_jvp(const Tensor& input_t, const Tensor& input, const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& running_mean,
                                   const std::optional<Tensor>& running_var, const Tensor& save_mean,
                                   const Tensor& save_invstd, bool training, double eps) {
  const auto [mean, invstd] =
      batch_norm_stats_view(input, running_mean, running_var, save_mean, save_invstd, training, eps);
  const Tensor d = training ? normalized_jvp(input_t, (input - mean) * invstd, invstd, batch_norm_dims(input))
                            : input_t * invstd;
  return weight ? d * channel_view(*weight, input.dim()) : d;
}

/// native_batch_norm's tangent in its weight: xhat times the weight's tangent per channel.
inline Tensor batch_norm_weight_jvp(const Tensor& weight_t, const Tensor& input,
                                    const std::optional<Tensor>& running_mean,
                                    const std::optional<Tensor>& running_var, const Tensor& save_mean,
                                    const Tensor& save_invstd, bool training, double eps) {
  const auto [mean, invstd] =
      batch_norm_stats_view(input, running_mean, running_var, save_mean, save_invstd, training, eps);
  return (input - mean) * invstd * channel_view(weight_t, input.dim());
}

/// native_layer_norm's dims (the trailing len(normalized_shape)) and statistics (mean and rstd: the
/// input's leading dims, then ones), recomputed when the graph must reach the input.
inline std::tuple<Shape, Tensor, Tensor> layer_norm_stats(const Tensor& input, const Tensor& mean,
                                                          const Tensor& rstd, const Shape& normalized_shape,
                                                          double eps) {
  Shape dims;
  for (int64_t d = input.dim() - static_cast<int64_t>(normalized_shape.size()); d < input.dim(); ++d)
    dims.push_back(d);
  if (!graph_through(input)) return {dims, mean, rstd};
  auto [m, r] = recorded_stats(input, dims, eps);
  return {dims, m, r};
}

/// native_layer_norm's tangent in its input.
inline Tensor layer_norm_input_jvp(const Tensor& input_t, const Tensor& input, const std::optional<Tensor>& weight,
                                   const Tensor& mean, const Tensor& rstd, const Shape& normalized_shape,
                                   double eps) {
  const auto [dims, m, r] = layer_norm_stats(input, mean, rstd, normalized_shape, eps);
  const Tensor d = normalized_jvp(input_t, (input - m) * r, r, dims);
  return weight ? d * *weight : d;
}

/// native_layer_norm's tangent in its weight: xhat times the weight's tangent.
inline Tensor layer_norm_weight_jvp(const Tensor& weight_t, const Tensor& input, const Tensor& mean,
                                    const Tensor& rstd, const Shape& normalized_shape, double eps) {
  const auto [dims, m, r] = layer_norm_stats(input, mean, rstd, normalized_shape, eps);
  return (input - m) * r * weight_t;
}

/// An input of native_group_norm seen as (batch, group, elements of a group).
inline Tensor group_norm_rows(const Tensor& t, int64_t batch, int64_t group) {
  return op::reshape(t, Shape{batch, group, -1});
}

/// native_group_norm's normalized input xhat, as (batch, group, m) rows.
inline Tensor group_norm_xhat_rows(const Tensor& input, const Tensor& mean, const Tensor& rstd, int64_t batch,
                                   int64_t group) {
  return (group_norm_rows(input, batch, group) - op::unsqueeze(mean, -1)) * op::unsqueeze(rstd, -1);
}

/// native_group_norm's tangent in its input.
inline Tensor group_norm_input_jvp(const Tensor& input_t, const Tensor& input, const std::optional<Tensor>& weight,
                                   const Tensor& mean, const Tensor& rstd, int64_t batch, int64_t group) {
  const int64_t last[1] = {-1};
  const Tensor d = normalized_jvp(group_norm_rows(input_t, batch, group),
                                  group_norm_xhat_rows(input, mean, rstd, batch, group), op::unsqueeze(rstd, -1),
                                  IntArrayRef(last));
  const Tensor out = op::reshape(d, input.sizes());
  return weight ? out * channel_view(*weight, input.dim()) : out;
}

/// native_group_norm's tangent in its weight: xhat times the weight's tangent per channel.
inline Tensor group_norm_weight_jvp(const Tensor& weight_t, const Tensor& input, const Tensor& mean,
                                    const Tensor& rstd, int64_t batch, int64_t group) {
  const Tensor xhat = op::reshape(group_norm_xhat_rows(input, mean, rstd, batch, group), input.sizes());
  return xhat * channel_view(weight_t, input.dim());
}

/// native_group_norm's mean output's tangent: the mean of the tangent over each group.
inline Tensor group_norm_mean_jvp(const Tensor& input_t, int64_t batch, int64_t group) {
  const int64_t last[1] = {-1};
  return op::mean(group_norm_rows(input_t, batch, group), IntArrayRef(last), false, std::nullopt);
}

/// native_group_norm's rstd output's tangent: rstd = (var + eps)^-1/2 with var = mean((x - mean)^2),
/// so d rstd = -rstd^3 mean((x - mean) dx).
inline Tensor group_norm_rstd_jvp(const Tensor& input_t, const Tensor& input, const Tensor& mean,
                                  const Tensor& rstd, int64_t batch, int64_t group) {
  const int64_t last[1] = {-1};
  const Tensor centered = group_norm_rows(input, batch, group) - op::unsqueeze(mean, -1);
  const Tensor dvar_half =
      op::mean(centered * group_norm_rows(input_t, batch, group), IntArrayRef(last), false, std::nullopt);
  return -(rstd * rstd * rstd * dvar_half);
}

/// _embedding_bag's tangent in its weight: a sum or mean bag is linear in the rows (the op on the
/// tangent, with the same per-sample weights); a max bag takes each feature from the row max_indices
/// names (-1, an empty bag: 0).
inline Tensor embedding_bag_weight_jvp(const Tensor& weight_t, const Tensor& indices, const Tensor& offsets,
                                       int64_t mode, const std::optional<Tensor>& per_sample_weights,
                                       bool include_last_offset, int64_t padding_idx, const Tensor& max_indices) {
  if (mode == 2)
    return where(max_indices < 0.0, 0.0, op::gather(weight_t, 0, op::clamp_min(max_indices, Scalar(0))));
  return std::get<0>(op::_embedding_bag(weight_t, indices, offsets, false, mode, false, per_sample_weights,
                                        include_last_offset, padding_idx));
}

/// _embedding_bag's tangent in its per-sample weights (sum mode, the only one that takes them): the
/// bags are linear in them.
inline Tensor embedding_bag_per_sample_weights_jvp(const Tensor& per_sample_weights_t, const Tensor& weight,
                                                   const Tensor& indices, const Tensor& offsets, int64_t mode,
                                                   bool include_last_offset, int64_t padding_idx) {
  return std::get<0>(op::_embedding_bag(weight, indices, offsets, false, mode, false, per_sample_weights_t,
                                        include_last_offset, padding_idx));
}

/// Ones of a pointwise loss's unreduced shape (self and target broadcast): the grad_output at which a
/// loss's backward kernel, with reduction none, gives the elementwise derivative.
inline Tensor pointwise_loss_ones(const Tensor& self, const Tensor& target) {
  return ones_like(self - target);
}

/// A pointwise loss's tangent from its elementwise tangent d (the unreduced loss's shape).
inline Tensor pointwise_loss_jvp(const Tensor& d, int64_t reduction) {
  if (reduction == 0) return d;
  const Tensor s = op::sum(d, std::nullopt, false, std::nullopt);
  return reduction == 1 ? s / static_cast<double>(d.numel()) : s;
}

/// An argument flambeau's backward refuses a gradient for (not_differentiable): a tangent for it
/// raises too, rather than being dropped.
inline Tensor not_differentiable_tangent(const Tensor& tangent, const char* op, const char* arg) {
  (void)tangent;
  return not_differentiable(op, arg);
}

/// A class loss's tangent from its gradient in an argument at grad_output = 1 times that argument's
/// tangent (both self-shaped): summed over the classes (reduction none: one value per row) or over
/// everything (mean, sum).
inline Tensor class_loss_contract(const Tensor& g, const Tensor& self, int64_t reduction) {
  if (reduction != 0 || self.dim() < 2) return op::sum(g, std::nullopt, false, std::nullopt);
  const int64_t d[1] = {1};
  return op::sum(g, IntArrayRef(d), false, std::nullopt);
}

/// _cross_entropy's tangent in its class weights: with class probabilities the loss is linear in
/// them (-scale ((1 - eps) y + eps / C) log_softmax(x) per class); with class indices, no gradient
/// (cross_entropy_weight_backward).
inline Tensor cross_entropy_weight_jvp(const Tensor& weight_t, const Tensor& result, const Tensor& self,
                                       const Tensor& target, int64_t reduction, double label_smoothing) {
  if (!cross_entropy_probability_target(self, target))
    return not_differentiable("cross_entropy", "weight", " for class-index targets");
  const double smooth = label_smoothing / static_cast<double>(self.sizes()[class_dim(self)]);
  const Tensor y = target * (1.0 - label_smoothing) + smooth;
  const Tensor logp = op::_log_softmax(self, class_dim(self));
  const Tensor g = -cross_entropy_row_scale(ones_like(result), self, reduction) * y * logp;
  return class_loss_contract(g * cross_entropy_class_weight(weight_t, self), self, reduction);
}

/// _cross_entropy_backward with class probabilities, scale (A p - w y') with A = sum_c w_c y'_c and
/// y' = (1 - eps) y + eps / C, is affine in y and linear in w: its tangent in y is (1 - eps) times the
/// op at y = y_t without smoothing, in w the op at w = w_t. With class indices (mean: scale over the
/// weights of the targets' classes) there is no weight gradient (cross_entropy_backward_weight_backward).
inline Tensor cross_entropy_backward_target_jvp(const Tensor& target_t, const Tensor& grad_output,
                                                const Tensor& self, const Tensor& lse,
                                                const std::optional<Tensor>& weight, int64_t reduction,
                                                int64_t ignore_index, double label_smoothing) {
  return op::_cross_entropy_backward(grad_output, self, target_t, lse, weight, reduction, ignore_index, 0.0) *
         (1.0 - label_smoothing);
}
inline Tensor cross_entropy_backward_weight_jvp(const Tensor& weight_t, const Tensor& grad_output,
                                                const Tensor& self, const Tensor& target, const Tensor& lse,
                                                int64_t reduction, int64_t ignore_index, double label_smoothing) {
  if (!cross_entropy_probability_target(self, target))
    return not_differentiable("cross_entropy", "weight", " for class-index targets");
  return op::_cross_entropy_backward(grad_output, self, target, lse, weight_t, reduction, ignore_index,
                                     label_smoothing);
}

/// A recurrent state (B, H) whose first `rows` rows a step replaced by `head` (the others keep theirs).
inline Tensor replace_rows(const Tensor& state, const Tensor& head, int64_t rows) {
  if (rows == state.sizes()[0]) return head;
  return op::cat(TensorList{head, op::slice(state, 0, rows, state.sizes()[0], 1)}, 0);
}

/// _rnn_layer's tangents (output, hy, cy): the recurrence of Note [Recurrent layer kernel] in core's
/// rnn.cpp differentiated step by step, in the kernel's step order, the state tangents kept beside
/// the states. Each step's gate values come from the workspace (LSTM: i f g o c tanh(c); GRU: r z n
/// and hn = h_prev @ w_hh_n^T + b_hh_n), or are recomputed with recorded ops when the graph must reach
/// the primal inputs (graph_through: the workspace has no history), and its new h from output. With
/// a = x + h_prev @ w_hh^T + b: tanh: dh = (1 - h^2) da; relu: dh = [h > 0] da; LSTM:
/// dc = df c_prev + f dc_prev + di g + i dg, dh = do tanh(c) + o (1 - tanh(c)^2) dc; GRU:
/// dn = (1 - n^2) (dx_n + dr hn + r dhn), dh = dn + dz (h_prev - n) + z (dh_prev - dn). An empty b_hh
/// (no bias) or cx (not an LSTM) has no tangent.
inline std::tuple<Tensor, Tensor, Tensor> rnn_layer_jvp(
    const Tensor& igates, const Tensor& w_hh, const Tensor& b_hh, const Tensor& hx, const Tensor& cx,
    const Tensor& output, const Tensor& workspace, int64_t mode, const Shape& batch_sizes, bool reverse,
    const Tensor& igates_t, const Tensor& w_hh_t, const Tensor& b_hh_t, const Tensor& hx_t, const Tensor& cx_t) {
  constexpr int64_t kRelu = 1, kLstm = 2, kGru = 3;
  const int64_t steps = static_cast<int64_t>(batch_sizes.size()), H = hx.sizes()[1];
  if (steps == 0) return {zeros_like(output), hx_t, mode == kLstm ? cx_t : Tensor()};
  std::vector<int64_t> offsets(static_cast<size_t>(steps));
  for (int64_t t = 0, n = 0; t < steps; ++t) {
    offsets[static_cast<size_t>(t)] = n;
    n += batch_sizes[static_cast<size_t>(t)];
  }
  const auto gate = [H](const Tensor& t, int64_t k) { return op::slice(t, 1, k * H, (k + 1) * H, 1); };
  const auto rows_of = [](const Tensor& t, int64_t from, int64_t to) { return op::slice(t, 0, from, to, 1); };
  const bool recompute = (mode == kLstm || mode == kGru) &&
                         std::ranges::any_of(std::array{&igates, &w_hh, &b_hh, &hx, &cx},
                                             [](const Tensor* t) { return graph_through(*t); });
  const Tensor w_t = op::transpose(w_hh, 0, 1), dw_t = op::transpose(w_hh_t, 0, 1);
  const bool bias = b_hh.numel() > 0;
  Tensor h = hx, dh = hx_t, c = cx, dc = cx_t;
  std::vector<Tensor> out_rows(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    const int64_t bs = batch_sizes[static_cast<size_t>(t)], off = offsets[static_cast<size_t>(t)];
    const Tensor hp = rows_of(h, 0, bs), dhp = rows_of(dh, 0, bs), h_new = rows_of(output, off, off + bs);
    const Tensor dx = rows_of(igates_t, off, off + bs);
    Tensor dy = op::mm(dhp, w_t) + op::mm(hp, dw_t);  // the tangent of h_prev @ w_hh^T + b_hh
    if (bias) dy = dy + b_hh_t;
    Tensor y, x;  // h_prev @ w_hh^T + b_hh and igates of this step, when the gates are recomputed
    if (recompute) {
      y = bias ? op::mm(hp, w_t) + b_hh : op::mm(hp, w_t);
      x = rows_of(igates, off, off + bs);
    }
    const Tensor ws = recompute ? Tensor() : rows_of(workspace, off, off + bs);
    Tensor dh_new;
    if (mode == kLstm) {
      const Tensor a = recompute ? x + y : Tensor(), da = dx + dy, cp = rows_of(c, 0, bs);
      const Tensor i = recompute ? op::sigmoid(gate(a, 0)) : gate(ws, 0);
      const Tensor f = recompute ? op::sigmoid(gate(a, 1)) : gate(ws, 1);
      const Tensor g = recompute ? op::tanh(gate(a, 2)) : gate(ws, 2);
      const Tensor o = recompute ? op::sigmoid(gate(a, 3)) : gate(ws, 3);
      const Tensor c_new = recompute ? f * cp + i * g : gate(ws, 4);
      const Tensor tc = recompute ? op::tanh(c_new) : gate(ws, 5);
      const Tensor dc_new = gate(da, 1) * f * (1.0 - f) * cp + f * rows_of(dc, 0, bs) +
                            gate(da, 0) * i * (1.0 - i) * g + i * (1.0 - g * g) * gate(da, 2);
      dh_new = gate(da, 3) * o * (1.0 - o) * tc + o * (1.0 - tc * tc) * dc_new;
      c = replace_rows(c, c_new, bs);
      dc = replace_rows(dc, dc_new, bs);
    } else if (mode == kGru) {
      const Tensor r = recompute ? op::sigmoid(gate(x, 0) + gate(y, 0)) : gate(ws, 0);
      const Tensor z = recompute ? op::sigmoid(gate(x, 1) + gate(y, 1)) : gate(ws, 1);
      const Tensor hn = recompute ? gate(y, 2) : gate(ws, 3);
      const Tensor n = recompute ? op::tanh(gate(x, 2) + r * hn) : gate(ws, 2);
      const Tensor dr = r * (1.0 - r) * (gate(dx, 0) + gate(dy, 0));
      const Tensor dz = z * (1.0 - z) * (gate(dx, 1) + gate(dy, 1));
      const Tensor dn = (1.0 - n * n) * (gate(dx, 2) + dr * hn + r * gate(dy, 2));
      dh_new = dn + dz * (hp - n) + z * (dhp - dn);
    } else if (mode == kRelu) {
      dh_new = where(h_new > 0.0, dx + dy, 0.0);
    } else {
      dh_new = (1.0 - h_new * h_new) * (dx + dy);
    }
    out_rows[static_cast<size_t>(t)] = dh_new;
    h = replace_rows(h, h_new, bs);
    dh = replace_rows(dh, dh_new, bs);
  }
  return {op::cat(TensorList(out_rows), 0), dh, mode == kLstm ? dc : Tensor()};
}


// ---- forward mode (Note [Forward formulas] in gen_autograd.py) ----

/// Whether a tensor argument of any form requires grad (the kernel records a node only then).
/// Whether an Autograd kernel records a node for `t`: it requires grad and grad mode is on (the kernel also
/// runs under no_grad while a dual level is active, for tangents alone: Note [Grad mode and below autograd]).
inline bool requires_grad_of(const Tensor& t) { return t.defined() && t.requires_grad() && grad_mode_enabled(); }
inline bool requires_grad_of(const std::optional<Tensor>& t) { return t && requires_grad_of(*t); }
inline bool requires_grad_of(const TensorList& ts) {
  return std::ranges::any_of(ts, [](const Tensor& t) { return requires_grad_of(t); });
}

/// The tangents of a tensor list's elements (undefined where one has none).
inline variable_list fw_grads(const TensorList& ts) {
  variable_list out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(fw_grad(t));
  return out;
}
inline bool any_defined(const variable_list& ts) {
  return std::ranges::any_of(ts, [](const Tensor& t) { return t.defined(); });
}

/// A tangent, or zeros shaped like its primal when the input has none.
inline Tensor fw_or_zeros(const Tensor& tangent, const Tensor& primal) {
  return tangent.defined() ? tangent : zeros_like(primal);
}
inline std::optional<Tensor> fw_or_zeros(const Tensor& tangent, const std::optional<Tensor>& primal) {
  if (!primal) return std::nullopt;
  return fw_or_zeros(tangent, *primal);
}
inline variable_list fw_or_zeros(const variable_list& tangents, const TensorList& primals) {
  variable_list out;
  out.reserve(primals.size());
  for (size_t i = 0; i < primals.size(); ++i)
    out.push_back(fw_or_zeros(i < tangents.size() ? tangents[i] : Tensor(), primals[i]));
  return out;
}

/// An input's tangent as an element-wise formula reads `grad`: broadcast to the
/// result's shape, conjugated for complex values (auto_element_wise).
inline Tensor fw_in(const Tensor& tangent, const Tensor& result, bool complex) {
  Tensor t = tangent;
  if (!std::ranges::equal(t.sizes(), result.sizes())) t = op::expand(t, result.sizes());
  return complex || is_complex(t.dtype()) ? op::conj(t) : t;
}
inline Tensor fw_out(const Tensor& term, bool complex) {
  return complex || is_complex(term.dtype()) ? op::conj(term) : term;
}
/// Sums tangent terms (an undefined one is zero).
inline Tensor fw_acc(const Tensor& sum, const Tensor& term) {
  if (!sum.defined()) return term;
  if (!term.defined()) return sum;
  return sum + term;
}

/// A tangent made to match its output: a real output keeps a complex term's
/// real part, the dtype is the output's, the shape is broadcast to it.
inline Tensor fw_finish(const Tensor& tangent, const Tensor& out) {
  if (!tangent.defined()) return tangent;
  Tensor t = tangent;
  if (is_complex(t.dtype()) && !is_complex(out.dtype())) t = op::real(t);
  if (t.dtype() != out.dtype()) t = op::cast(t, out.dtype());
  if (!std::ranges::equal(t.sizes(), out.sizes())) t = op::expand(t, out.sizes());
  return t;
}

[[noreturn]] inline void not_implemented_forward(const char* op) {
  throw NotImplementedError(detail::cat_str(
      "[", op, "] forward-mode AD is not implemented for this op (derivatives.yaml has no `result:` "
      "formula for it); use reverse mode (fb.func.jacrev, autograd.grad) instead"));
}

}  // namespace flambeau::autograd::formulas

#include "reduce_formulas.h"  // the reductions, scans and sorts (reduce section of derivatives.yaml)
#include "linalg_formulas.h"  // forward formulas of the linear-algebra entries
