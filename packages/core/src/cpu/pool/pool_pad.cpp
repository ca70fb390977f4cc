// CPU kernels: padding (_pad_nd: constant, reflect, replicate, circular, forward
// and backward) and one_hot.
//
// Padding is a gather: each padded dim gets a map from output index to input
// index (-1 for a constant element), computed once per call; an output row along
// the last dim is then a memcpy plus fills (constant) or a gather through the
// last dim's map. Rows are split across threads. The backward of a constant pad
// is the same kernel with the pads negated (a crop); the others scatter-add
// through the maps, split across threads by the leading (unpadded) dims, since
// reflected rows of one plane land on the same input row.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {

enum class PadMode { Constant, Reflect, Replicate, Circular };

PadMode parse_mode(std::string_view mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  if (mode == "circular") return PadMode::Circular;
  throw ValueError(detail::cat_str(
      "[pad] mode must be one of 'constant', 'reflect', 'replicate' or 'circular', got '", mode, "'"));
}

struct PadPlan {
  int64_t k = 0;                           // padded trailing dims
  int64_t lead = 1;                        // product of the unpadded leading dims
  Shape out_shape;                         // full output shape
  Shape in_pad, out_pad;                   // sizes of the padded dims, input and output
  std::vector<std::vector<int64_t>> maps;  // per padded dim: output index -> input index, or -1
};

/// Checks `pad` for an input of shape `sz` as PyTorch's F.pad does and plans the gather.
PadPlan plan_pad(IntArrayRef sz, IntArrayRef pad, PadMode mode, std::string_view mode_name) {
  const int64_t nd = static_cast<int64_t>(sz.size());
  const int64_t np = static_cast<int64_t>(pad.size());
  FB_CHECK_VALUE(np % 2 == 0, "[pad] padding length must be divisible by 2, got ", np, " values ",
                 shape_str(pad));
  FB_CHECK_VALUE(np <= 2 * nd,
                 "[pad] padding length should be less than or equal to two times the input dimension, ",
                 "but got padding length ", np, " and an input of shape ", shape_str(sz));
  PadPlan p;
  p.k = np / 2;
  if (mode != PadMode::Constant) {
    const bool ok = (p.k == 1 && (nd == 2 || nd == 3)) || (p.k == 2 && (nd == 3 || nd == 4)) ||
                    (p.k == 3 && (nd == 4 || nd == 5));
    if (!ok)
      throw NotImplementedError(
          detail::cat_str("[pad] mode '", mode_name, "' with padding of length ", np,
                          " is not supported for an input of shape ", shape_str(sz),
                          ": non-constant padding pads the last dim of a 2-D or 3-D input (length 2), the "
                          "last 2 dims of a 3-D "
                          "or 4-D input (length 4), or the last 3 dims of a 4-D or 5-D input (length 6)"));
    for (int64_t d = 1; d < nd - p.k; ++d)  // a zero batch dim is fine, other zero dims are not
      FB_CHECK_VALUE(sz[d] != 0 || mode == PadMode::Constant, "[pad] mode '", mode_name,
                     "' needs non-zero dims except the batch dim, got input shape ", shape_str(sz));
  }
  p.out_shape.assign(sz.begin(), sz.end());
  for (int64_t d = 0; d < nd - p.k; ++d) p.lead *= sz[d];
  p.maps.resize(static_cast<size_t>(p.k));
  for (int64_t j = 0; j < p.k; ++j) {
    const int64_t d = nd - p.k + j;            // the tensor dim
    const int64_t l = pad[2 * (p.k - 1 - j)];  // pads list the last dim first
    const int64_t r = pad[2 * (p.k - 1 - j) + 1];
    const int64_t n = sz[d];
    __int128 o = static_cast<__int128>(n) + l + r;
    FB_CHECK_VALUE(o >= 0, "[pad] the input size ", n, " plus padding (", l, ", ", r,
                   ") gives a negative output size in dim ", d, " of input shape ", shape_str(sz));
    FB_CHECK_VALUE(o <= INT64_MAX, "[pad] the output size overflows int64 in dim ", d, " of input shape ",
                   shape_str(sz), " with padding (", l, ", ", r, ")");
    if (mode == PadMode::Reflect)
      FB_CHECK_VALUE(l < n && r < n, "[pad] reflect padding must be less than the input size: got padding (",
                     l, ", ", r, ") in dim ", d, " of input shape ", shape_str(sz));
    if (mode == PadMode::Circular) {
      // Negative pads crop first; the positive ones wrap around what is left, at most once.
      const int64_t kept = n - std::max<int64_t>(-l, 0) - std::max<int64_t>(-r, 0);
      FB_CHECK_VALUE(l <= n && r <= n && (o == 0 || (l <= kept && r <= kept)), "[pad] circular padding may ",
                     "wrap around at most once: got padding (", l, ", ", r, ") in dim ", d,
                     " of input shape ", shape_str(sz));
    }
    if (mode == PadMode::Reflect || mode == PadMode::Replicate)
      FB_CHECK_VALUE(n > 0 && o > 0, "[pad] mode '", mode_name, "' gives an empty dim ", d, " (input shape ",
                     shape_str(sz), ", padding (", l, ", ", r, "))");
    p.out_shape[d] = static_cast<int64_t>(o);
    p.in_pad.push_back(n);
    p.out_pad.push_back(static_cast<int64_t>(o));
  }
  shape_nbytes(p.out_shape, ScalarType::Float64, "pad");  // Note [Size overflow]
  for (int64_t j = 0; j < p.k; ++j) {
    const int64_t d = nd - p.k + j;
    const int64_t l = pad[2 * (p.k - 1 - j)];
    const int64_t n = sz[d];
    auto& m = p.maps[j];
    m.resize(static_cast<size_t>(p.out_shape[d]));
    for (int64_t o = 0; o < p.out_shape[d]; ++o) {
      int64_t i = o - l;
      switch (mode) {
        case PadMode::Constant:
          if (i < 0 || i >= n) i = -1;
          break;
        case PadMode::Reflect:
          if (n == 1) i = 0;
          if (i < 0) i = -i;
          if (i >= n) i = 2 * (n - 1) - i;
          break;
        case PadMode::Replicate:
          i = std::clamp<int64_t>(i, 0, n - 1);
          break;
        case PadMode::Circular: {
          // As PyTorch: negative pads crop first; positive ones wrap around the cropped dim.
          const int64_t r = pad[2 * (p.k - 1 - j) + 1];
          const int64_t lo = std::max<int64_t>(-l, 0);
          const int64_t kept = n - lo - std::max<int64_t>(-r, 0);
          i = (o - std::max<int64_t>(l, 0)) % kept;
          if (i < 0) i += kept;
          i += lo;
          break;
        }
      }
      m[o] = i;
    }
  }
  return p;
}

/// The input row (offset, in elements) that output row `r` (counted over the
/// leading dims and all padded dims but the last) reads, or -1 if it is all padding.
int64_t source_row(const PadPlan& p, int64_t r, int64_t rows) {
  const int64_t lead = r / rows;
  int64_t rem = r % rows;
  int64_t off = 0, in_stride = p.in_pad[p.k - 1];
  for (int64_t j = p.k - 2; j >= 0; --j) {
    const int64_t c = rem % p.out_pad[j];
    rem /= p.out_pad[j];
    const int64_t src = p.maps[j][c];
    if (src < 0) return -1;
    off += src * in_stride;
    in_stride *= p.in_pad[j];
  }
  return lead * in_stride + off;
}

Tensor pad_forward(const Tensor& self, IntArrayRef pad, PadMode mode, std::string_view mode_name,
                   double value) {
  const PadPlan p = plan_pad(self.sizes(), pad, mode, mode_name);
  Tensor out = op::empty(p.out_shape, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  if (p.k == 0) return op::clone(self, MemoryFormat::Contiguous);
  const Tensor in = contiguous(self);
  const int64_t out_w = p.out_pad[p.k - 1], in_w = p.in_pad[p.k - 1];
  int64_t rows = 1;
  for (int64_t j = 0; j < p.k - 1; ++j) rows *= p.out_pad[j];
  const int64_t total_rows = p.lead * rows;
  const int64_t* last = p.maps[p.k - 1].data();
  const int64_t l = out_w > 0 ? pad[0] : 0;
  // The columns [c0, c1) of an output row that copy input columns [c0 - l, c1 - l).
  const int64_t c0 = std::clamp<int64_t>(l, 0, out_w), c1 = std::clamp<int64_t>(l + in_w, 0, out_w);
  visit_dtype(self.dtype(), "pad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = static_cast<T>(value);
    const T* x = in.data<T>();
    T* y = out.data<T>();
    parallel_for(0, total_rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(out_w, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t r = b; r < e; ++r) {
                     T* yr = y + r * out_w;
                     const int64_t src = source_row(p, r, rows);
                     if (src < 0) {
                       std::fill(yr, yr + out_w, v);
                       continue;
                     }
                     const T* xr = x + src;
                     if (mode == PadMode::Constant) {
                       std::fill(yr, yr + c0, v);
                       if (c1 > c0)
                         std::memcpy(yr + c0, xr + (c0 - l), static_cast<size_t>(c1 - c0) * sizeof(T));
                       std::fill(yr + std::max(c0, c1), yr + out_w, v);
                     } else {
                       for (int64_t o = 0; o < out_w; ++o) yr[o] = xr[last[o]];
                     }
                   }
                 });
  });
  return out;
}

Tensor pad_nd_cpu(const Tensor& self, IntArrayRef pad, std::string_view mode, double value) {
  const PadMode m = parse_mode(mode);
  FB_CHECK_VALUE(m == PadMode::Constant || value == 0.0, "[pad] padding mode '", mode,
                 "' doesn't take in value argument");
  return pad_forward(self, pad, m, mode, value);
}

Tensor pad_nd_backward_cpu(const Tensor& grad_output, IntArrayRef input_size, IntArrayRef pad,
                           std::string_view mode) {
  const PadMode m = parse_mode(mode);
  shape_nbytes(input_size, grad_output.dtype(), "pad_backward");
  const PadPlan p = plan_pad(input_size, pad, m, mode);
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), p.out_shape),
                 "[pad_backward] grad_output has shape ", shape_str(grad_output.sizes()),
                 " but padding input shape ", shape_str(input_size), " by ", shape_str(pad), " gives ",
                 shape_str(p.out_shape));
  if (m == PadMode::Constant) {  // a crop: the constant pad by the negated pads
    Shape neg(pad.begin(), pad.end());
    for (auto& v : neg) v = -v;
    return pad_forward(grad_output, neg, PadMode::Constant, mode, 0.0);
  }
  FB_CHECK_TYPE(grad_output.dtype() == ScalarType::Float32 || grad_output.dtype() == ScalarType::Float64,
                "[pad_backward] needs a float32 or float64 gradient, got dtype ",
                dtype_name(grad_output.dtype()));
  Tensor gi = op::empty(input_size, grad_output.dtype(), grad_output.device());
  if (gi.numel() == 0) return gi;
  const Tensor go = contiguous(grad_output);
  const int64_t out_w = p.out_pad[p.k - 1];
  int64_t rows = 1, in_plane = 1;
  for (int64_t j = 0; j < p.k - 1; ++j) rows *= p.out_pad[j];
  for (int64_t j = 0; j < p.k; ++j) in_plane *= p.in_pad[j];
  const int64_t* last = p.maps[p.k - 1].data();
  visit_dtype(grad_output.dtype(), "pad_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* g = go.data<T>();
      T* o = gi.data<T>();
      parallel_for(0, p.lead, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(rows * out_w, 1)),
                   [&](int64_t b, int64_t e) {
                     std::memset(o + b * in_plane, 0, static_cast<size_t>((e - b) * in_plane) * sizeof(T));
                     for (int64_t r = b * rows; r < e * rows; ++r) {
                       const T* gr = g + r * out_w;
                       T* orow = o + source_row(p, r, rows);
                       for (int64_t c = 0; c < out_w; ++c) orow[last[c]] += gr[c];
                     }
                   });
    }
  });
  return gi;
}

Tensor one_hot_cpu(const Tensor& self, int64_t num_classes) {
  FB_CHECK_TYPE(self.dtype() == ScalarType::Int64,
                "[one_hot] needs an int64 tensor of class indices, got dtype ", dtype_name(self.dtype()));
  FB_CHECK_VALUE(num_classes >= -1,
                 "[one_hot] num_classes must be -1 (inferred from the data) or non-negative, got ",
                 num_classes);
  const Tensor in = contiguous(self);
  const int64_t n = in.numel();
  const int64_t* x = in.data<int64_t>();
  Shape shape(self.sizes().begin(), self.sizes().end());
  if (n == 0) {
    FB_CHECK_VALUE(num_classes > 0,
                   "[one_hot] can not infer the number of classes from an empty tensor of shape ",
                   shape_str(self.sizes()), ": pass num_classes");
    shape.push_back(num_classes);
    return op::empty(shape, ScalarType::Int64, self.device());
  }
  int64_t mn = x[0], mx = x[0];
  for (int64_t i = 1; i < n; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  FB_CHECK_VALUE(mn >= 0, "[one_hot] class values must be non-negative, got ", mn);
  if (num_classes == -1) {
    FB_CHECK_VALUE(mx < INT64_MAX, "[one_hot] class value ", mx, " is too large");
    num_classes = mx + 1;
  }
  FB_CHECK_VALUE(mx < num_classes, "[one_hot] class values must be smaller than num_classes (", num_classes,
                 "), got ", mx);
  shape.push_back(num_classes);
  shape_nbytes(shape, ScalarType::Int64, "one_hot");
  Tensor out = op::empty(shape, ScalarType::Int64, self.device());
  int64_t* y = out.data<int64_t>();
  parallel_for(0, n, std::max<int64_t>(1, kGrainSize / num_classes), [&](int64_t b, int64_t e) {
    std::memset(y + b * num_classes, 0, static_cast<size_t>((e - b) * num_classes) * sizeof(int64_t));
    for (int64_t i = b; i < e; ++i) y[i * num_classes + x[i]] = 1;
  });
  return out;
}

FB_REGISTER_KERNEL(op::_pad_nd, CPU, pad_nd_cpu);
FB_REGISTER_KERNEL(op::_pad_nd_backward, CPU, pad_nd_backward_cpu);
FB_REGISTER_KERNEL(op::one_hot, CPU, one_hot_cpu);

}  // namespace
}  // namespace flambeau
