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

#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "meta/pad_mode.h"

namespace flambeau {
namespace {

using meta::PadMode;

struct PadPlan {
  int64_t k = 0;                  // padded trailing dims
  int64_t lead = 1;               // product of the unpadded leading dims
  Shape in_pad, out_pad;          // sizes of the padded dims, input and output
  Shape map_at;                   // where each padded dim's map starts in map_data
  std::vector<int64_t> map_data;  // per padded dim: output index -> input index, or -1
  const int64_t* map(int64_t j) const { return map_data.data() + map_at[j]; }
};

/// The gather of padding an input of shape `sz` into `out_sz` by `pad` (checked by the meta step,
/// meta::pad_nd in src/meta/spatial_rules.cpp, which gave out_sz).
PadPlan plan_pad(IntArrayRef sz, IntArrayRef out_sz, IntArrayRef pad, PadMode mode) {
  const int64_t nd = static_cast<int64_t>(sz.size());
  PadPlan p;
  p.k = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t d = 0; d < nd - p.k; ++d) p.lead *= sz[d];
  // Four allocations whatever k (this runs on every call).
  p.in_pad.reserve(static_cast<size_t>(p.k));
  p.out_pad.reserve(static_cast<size_t>(p.k));
  p.map_at.reserve(static_cast<size_t>(p.k));
  int64_t total = 0;
  for (int64_t j = 0; j < p.k; ++j) {
    p.map_at.push_back(total);
    total += out_sz[nd - p.k + j];
  }
  p.map_data.resize(static_cast<size_t>(total));
  for (int64_t j = 0; j < p.k; ++j) {
    const int64_t d = nd - p.k + j;            // the tensor dim
    const int64_t l = pad[2 * (p.k - 1 - j)];  // pads list the last dim first
    const int64_t n = sz[d];
    p.in_pad.push_back(n);
    p.out_pad.push_back(out_sz[d]);
    int64_t* m = p.map_data.data() + p.map_at[j];
    for (int64_t o = 0; o < out_sz[d]; ++o) {
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
    const int64_t src = p.map(j)[c];
    if (src < 0) return -1;
    off += src * in_stride;
    in_stride *= p.in_pad[j];
  }
  return lead * in_stride + off;
}

/// self padded into out (of the padded shape).
void pad_into(const Tensor& out, const Tensor& self, IntArrayRef pad, PadMode mode, double value) {
  if (out.numel() == 0) return;
  if (pad.empty()) {  // nothing padded: a copy
    cpu::copy_out(out, self);
    return;
  }
  // The value must fit the dtype (Note [Scalar overflow]): PyTorch refuses 1e5 for float16.
  if (mode == PadMode::Constant) check_scalar_fits(Scalar(value), self.dtype(), "pad");
  const PadPlan p = plan_pad(self.sizes(), out.sizes(), pad, mode);
  const Tensor in = contiguous(self);
  const int64_t out_w = p.out_pad[p.k - 1], in_w = p.in_pad[p.k - 1];
  int64_t rows = 1;
  for (int64_t j = 0; j < p.k - 1; ++j) rows *= p.out_pad[j];
  const int64_t total_rows = p.lead * rows;
  const int64_t* last = p.map(p.k - 1);
  const int64_t l = out_w > 0 ? pad[0] : 0;
  // The columns [c0, c1) of an output row that copy input columns [c0 - l, c1 - l).
  const int64_t c0 = std::clamp<int64_t>(l, 0, out_w), c1 = std::clamp<int64_t>(l + in_w, 0, out_w);
  cpu::write_contiguous(out, self, [&](Tensor dst) {
    visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "pad", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = static_cast<T>(value);
      const T* x = in.data<T>();
      T* y = dst.data<T>();
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
  });
}

// _pad_nd and its backward are structured (Note [Structured kernels]): the meta step checked the mode,
// the pads and (backward) grad_output's shape and dtype, and allocated out.
void pad_nd_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef pad, std::string_view mode,
                    double value) {
  pad_into(out, self, pad, meta::pad_mode(mode), value);  // the meta step refused another mode
}

void pad_nd_backward_out_cpu(const Tensor& gi, const Tensor& grad_output, IntArrayRef input_size,
                             IntArrayRef pad, std::string_view mode) {
  const PadMode m = meta::pad_mode(mode);
  if (m == PadMode::Constant) {  // a crop: the constant pad by the negated pads
    pad_into(gi, grad_output, meta::negated_pads(pad), PadMode::Constant, 0.0);
    return;
  }
  if (gi.numel() == 0) return;
  const PadPlan p = plan_pad(input_size, grad_output.sizes(), pad, m);
  const Tensor go = contiguous(grad_output);
  const int64_t out_w = p.out_pad[p.k - 1];
  int64_t rows = 1, in_plane = 1;
  for (int64_t j = 0; j < p.k - 1; ++j) rows *= p.out_pad[j];
  for (int64_t j = 0; j < p.k; ++j) in_plane *= p.in_pad[j];
  const int64_t* last = p.map(p.k - 1);
  cpu::write_contiguous(gi, grad_output, [&](Tensor dst) {
    visit_dtypes<kDtFloats | kDtHalf>(grad_output.dtype(), "pad_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
        const T* g = go.data<T>();
        T* o = dst.data<T>();
        parallel_for(0, p.lead, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(rows * out_w, 1)),
                     [&](int64_t b, int64_t e) {
                       std::memset(o + b * in_plane, 0, static_cast<size_t>((e - b) * in_plane) * sizeof(T));
                       for (int64_t r = b * rows; r < e * rows; ++r) {
                         const T* gr = g + r * out_w;
                         T* orow = o + source_row(p, r, rows);
                         for (int64_t c = 0; c < out_w; ++c) {
                           // float16/bfloat16 add in the 16-bit dtype in output order, as PyTorch's kernel
                           // (bit for bit for reflect and replicate).
                           if constexpr (is_half_v<T>)
                             orow[last[c]] = T(static_cast<float>(orow[last[c]]) + static_cast<float>(gr[c]));
                           else
                             orow[last[c]] += gr[c];
                         }
                       }
                     });
      }
    });
  });
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

FB_REGISTER_OUT_KERNEL(op::_pad_nd, CPU, pad_nd_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_pad_nd_backward, CPU, pad_nd_backward_out_cpu);
FB_REGISTER_KERNEL(op::one_hot, CPU, one_hot_cpu);

}  // namespace
}  // namespace flambeau
