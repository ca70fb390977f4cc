// CPU kernels: nearest and bilinear resizing of (N, C, H, W) inputs, forward
// and backward, with PyTorch's index rules (UpSample.h): the source index of
// output position d is floor(d * scale) (nearest) or scale * (d + 0.5) - 0.5
// clamped at 0 (bilinear, align_corners=False), or d * (in - 1) / (out - 1)
// (align_corners=True); scale = 1 / scale_factor when one was given, else
// in / out. The per-row and per-column indices and weights are computed once
// per call; planes are split across threads.
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "cpu/low_precision.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {

struct Resize {
  int64_t H, W, OH, OW, planes;
};

/// The geometry of resizing a (N, C, H, W) `input` shape to the (N, C, OH, OW) `output` shape (checked by
/// the meta step: meta::upsample2d, meta::check_upsample2d_grad in src/meta/spatial_rules.cpp).
Resize resize_of(IntArrayRef input, IntArrayRef output) {
  return {input[2], input[3], output[2], output[3], input[0] * input[1]};
}

/// PyTorch's compute_scales_value: 1/scale when a positive scale was given, else in/out.
template <class A>
A scale_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<A>(1.0 / *scale) : static_cast<A>(in) / static_cast<A>(out);
}

/// Source index of each output position for 'nearest' (in float, as PyTorch), into idx[0, out).
void nearest_indices(int64_t in, int64_t out, std::optional<double> scale, int64_t* idx) {
  const float s = scale_value<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (out == in)
      idx[o] = o;
    else if (out == 2 * in)
      idx[o] = o >> 1;
    else
      idx[o] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
  }
}

/// The rows' then the columns' source indices, in one allocation.
struct NearestIndices {
  std::vector<int64_t> data;
  const int64_t* h;
  const int64_t* w;
  NearestIndices(const Resize& r, std::optional<double> scales_h, std::optional<double> scales_w)
      : data(static_cast<size_t>(r.OH + r.OW)), h(data.data()), w(data.data() + r.OH) {
    nearest_indices(r.H, r.OH, scales_h, data.data());
    nearest_indices(r.W, r.OW, scales_w, data.data() + r.OH);
  }
};

// The four ops are structured (Note [Structured kernels]): the meta step checked the arguments (and
// that the dtype has a loop here) and allocated out; these out kernels fill it.
void upsample_nearest2d_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef output_size,
                                std::optional<double> scales_h, std::optional<double> scales_w) {
  if (out.numel() == 0) return;
  if (cpu::is_low_precision(self.dtype()))  // Note [Low-precision kernels]: float32, rounded once
    return cpu::copy_out(out, op::upsample_nearest2d(cpu::to_float32(self), output_size, scales_h, scales_w));
  const char* op = "upsample_nearest2d";
  const Resize r = resize_of(self.sizes(), out.sizes());
  const Tensor in = contiguous(self);
  const NearestIndices ni(r, scales_h, scales_w);
  const int64_t *hi = ni.h, *wi = ni.w;
  cpu::write_contiguous(out, self, [&](Tensor dst) {
    visit_dtype(self.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = in.data<T>();
      T* y = dst.data<T>();
      const int64_t in_plane = r.H * r.W, out_plane = r.OH * r.OW;
      parallel_for(0, r.planes, std::max<int64_t>(1, kGrainSize / out_plane), [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c)
          for (int64_t oh = 0; oh < r.OH; ++oh) {
            const T* xr = x + c * in_plane + hi[oh] * r.W;
            T* yr = y + c * out_plane + oh * r.OW;
            for (int64_t ow = 0; ow < r.OW; ++ow) yr[ow] = xr[wi[ow]];
          }
      });
    });
  });
}

void upsample_nearest2d_backward_out_cpu(const Tensor& gi, const Tensor& grad_output, IntArrayRef input_size,
                                         IntArrayRef output_size, std::optional<double> scales_h,
                                         std::optional<double> scales_w) {
  if (gi.numel() == 0) return;
  if (cpu::is_low_precision(grad_output.dtype()))  // Note [Low-precision kernels]: float32, rounded once
    return cpu::copy_out(gi, op::upsample_nearest2d_backward(cpu::to_float32(grad_output), input_size,
                                                             output_size, scales_h, scales_w));
  const char* op = "upsample_nearest2d_backward";
  const Resize r = resize_of(input_size, grad_output.sizes());
  const Tensor go = contiguous(grad_output);
  const NearestIndices ni(r, scales_h, scales_w);
  const int64_t *hi = ni.h, *wi = ni.w;
  cpu::write_contiguous(gi, grad_output, [&](Tensor dst) {
    visit_dtype(grad_output.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* g = go.data<T>();
        T* o = dst.data<T>();
        const int64_t in_plane = r.H * r.W, out_plane = r.OH * r.OW;
        parallel_for(0, r.planes, std::max<int64_t>(1, kGrainSize / out_plane), [&](int64_t b, int64_t e) {
          std::memset(o + b * in_plane, 0, static_cast<size_t>((e - b) * in_plane) * sizeof(T));
          for (int64_t c = b; c < e; ++c)
            for (int64_t oh = 0; oh < r.OH; ++oh) {
              T* orow = o + c * in_plane + hi[oh] * r.W;
              const T* gr = g + c * out_plane + oh * r.OW;
              for (int64_t ow = 0; ow < r.OW; ++ow) orow[wi[ow]] += gr[ow];
            }
        });
      }
    });
  });
}

/// Bilinear taps of each output position along one dim: i0, i1 and their weights.
template <class A>
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<A> w0, w1;
};

template <class A>
Taps<A> linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  Taps<A> t;
  t.i0.resize(out);
  t.i1.resize(out);
  t.w0.resize(out);
  t.w1.resize(out);
  const A ratio = align_corners ? (out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0))
                                : scale_value<A>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (in == out) {
      t.i0[o] = t.i1[o] = o;
      t.w0[o] = 1;
      t.w1[o] = 0;
      continue;
    }
    A real = align_corners ? ratio * static_cast<A>(o) : ratio * (static_cast<A>(o) + A(0.5)) - A(0.5);
    if (real < 0) real = 0;
    int64_t i0 = static_cast<int64_t>(real);
    if (i0 > in - 1) i0 = in - 1;
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    const A l1 = std::min(std::max(real - static_cast<A>(i0), A(0)), A(1));
    t.i0[o] = i0;
    t.i1[o] = i1;
    t.w1[o] = l1;
    t.w0[o] = A(1) - l1;
  }
  return t;
}

void upsample_bilinear2d_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef output_size,
                                 bool align_corners, std::optional<double> scales_h,
                                 std::optional<double> scales_w) {
  if (out.numel() == 0) return;
  if (cpu::is_low_precision(self.dtype()))  // Note [Low-precision kernels]: float32, rounded once
    return cpu::copy_out(
        out, op::upsample_bilinear2d(cpu::to_float32(self), output_size, align_corners, scales_h, scales_w));
  const char* op = "upsample_bilinear2d";
  const Resize r = resize_of(self.sizes(), out.sizes());
  const Tensor in = contiguous(self);
  cpu::write_contiguous(out, self, [&](Tensor dst) {
    visit_dtype(self.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const Taps<T> th = linear_taps<T>(r.H, r.OH, align_corners, scales_h);
        const Taps<T> tw = linear_taps<T>(r.W, r.OW, align_corners, scales_w);
        const T* x = in.data<T>();
        T* y = dst.data<T>();
        const int64_t in_plane = r.H * r.W, out_plane = r.OH * r.OW;
        parallel_for(0, r.planes, std::max<int64_t>(1, kGrainSize / (4 * out_plane)),
                     [&](int64_t b, int64_t e) {
                       for (int64_t c = b; c < e; ++c)
                         for (int64_t oh = 0; oh < r.OH; ++oh) {
                           const T* r0 = x + c * in_plane + th.i0[oh] * r.W;
                           const T* r1 = x + c * in_plane + th.i1[oh] * r.W;
                           const T h0 = th.w0[oh], h1 = th.w1[oh];
                           T* yr = y + c * out_plane + oh * r.OW;
                           for (int64_t ow = 0; ow < r.OW; ++ow) {
                             const int64_t a = tw.i0[ow], bb = tw.i1[ow];
                             const T v0 = r0[a] * tw.w0[ow] + r0[bb] * tw.w1[ow];
                             const T v1 = r1[a] * tw.w0[ow] + r1[bb] * tw.w1[ow];
                             yr[ow] = v0 * h0 + v1 * h1;
                           }
                         }
                     });
      }
    });
  });
}

void upsample_bilinear2d_backward_out_cpu(const Tensor& gi, const Tensor& grad_output, IntArrayRef input_size,
                                          IntArrayRef output_size, bool align_corners,
                                          std::optional<double> scales_h, std::optional<double> scales_w) {
  if (gi.numel() == 0) return;
  if (cpu::is_low_precision(grad_output.dtype()))  // Note [Low-precision kernels]: float32, rounded once
    return cpu::copy_out(
        gi, op::upsample_bilinear2d_backward(cpu::to_float32(grad_output), input_size, output_size,
                                             align_corners, scales_h, scales_w));
  const char* op = "upsample_bilinear2d_backward";
  const Resize r = resize_of(input_size, grad_output.sizes());
  const Tensor go = contiguous(grad_output);
  cpu::write_contiguous(gi, grad_output, [&](Tensor dst) {
    visit_dtype(grad_output.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const Taps<T> th = linear_taps<T>(r.H, r.OH, align_corners, scales_h);
        const Taps<T> tw = linear_taps<T>(r.W, r.OW, align_corners, scales_w);
        const T* g = go.data<T>();
        T* o = dst.data<T>();
        const int64_t in_plane = r.H * r.W, out_plane = r.OH * r.OW;
        parallel_for(0, r.planes, std::max<int64_t>(1, kGrainSize / (4 * out_plane)),
                     [&](int64_t b, int64_t e) {
                       std::memset(o + b * in_plane, 0, static_cast<size_t>((e - b) * in_plane) * sizeof(T));
                       for (int64_t c = b; c < e; ++c)
                         for (int64_t oh = 0; oh < r.OH; ++oh) {
                           T* r0 = o + c * in_plane + th.i0[oh] * r.W;
                           T* r1 = o + c * in_plane + th.i1[oh] * r.W;
                           const T h0 = th.w0[oh], h1 = th.w1[oh];
                           const T* gr = g + c * out_plane + oh * r.OW;
                           for (int64_t ow = 0; ow < r.OW; ++ow) {
                             const int64_t a = tw.i0[ow], bb = tw.i1[ow];
                             const T v = gr[ow];
                             r0[a] += h0 * tw.w0[ow] * v;
                             r0[bb] += h0 * tw.w1[ow] * v;
                             r1[a] += h1 * tw.w0[ow] * v;
                             r1[bb] += h1 * tw.w1[ow] * v;
                           }
                         }
                     });
      }
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::upsample_nearest2d, CPU, upsample_nearest2d_out_cpu);
FB_REGISTER_OUT_KERNEL(op::upsample_nearest2d_backward, CPU, upsample_nearest2d_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::upsample_bilinear2d, CPU, upsample_bilinear2d_out_cpu);
FB_REGISTER_OUT_KERNEL(op::upsample_bilinear2d_backward, CPU, upsample_bilinear2d_backward_out_cpu);

}  // namespace
}  // namespace flambeau
