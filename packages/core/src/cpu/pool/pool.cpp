// CPU kernels of the poolings over (N, C, H, W) or (C, H, W) inputs: max (with
// int64 indices flattened per plane, as PyTorch), average, adaptive average and
// adaptive max, forward and backward. Each (H, W) plane is independent, so the
// work is split across threads by planes, with a grain size (Note [Grain size])
// that keeps small inputs on one thread. Non-contiguous inputs are packed first.
// float16/bfloat16 run in float32, rounded once (Note [Low-precision kernels]),
// except bfloat16 max pooling: compared as float32 in registers, no copies (Lane).
// Every op here is structured (Note [Structured kernels]): out kernels filling the
// outputs the meta step allocated (write_contiguous(_outs) when out= is strided or
// shares memory). Channels-last float32/float64 inputs (and integer ones, max pooling) run the NHWC
// loops of pool_channels_last.cpp instead (Note [Channels-last pooling]).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/elementwise/half_convert.h"
#include "cpu/low_precision.h"
#include "cpu/pool/pool_2x2.h"
#include "cpu/pool/pool_channels_last.h"
#include "cpu/pool/pool_shape.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {

namespace cpu {
FB_DEFINE_DISPATCH(max_pool_2x2_stub);
FB_REGISTER_NO_DISPATCH(max_pool_2x2_stub, base);
FB_REGISTER_NO_DISPATCH(max_pool_2x2_stub, avx2);
}  // namespace cpu

namespace {

// Note [CPU capabilities] for the two hot loops of the benchmark models (LeNet's
// 2x2 max pooling, ResNet's and MobileNet's global average pooling): GCC
// compiles each for AVX-512, AVX2 and baseline x86-64 and picks one at load
// time (target_clones), like the *_avx2.cpp / *_avx512.cpp files do for the
// vector table. The results do not depend on the ISA: the partial sums are explicit.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FB_POOL_CLONES [[gnu::target_clones("avx512f", "avx2", "default")]]
#else
#define FB_POOL_CLONES
#endif

/// Planes per thread chunk so that a chunk holds about kGrainSize units of work.
int64_t plane_grain(int64_t work_per_plane) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work_per_plane, 1));
}

// A float16/bfloat16 result (Note [Low-precision kernels]): the float32 out kernel `run` fills a float32
// tensor, rounded once into out.
template <class F>
void in_float32(const Tensor& out, F&& run) {
  const Tensor tmp = op::empty(out.sizes(), ScalarType::Float32, out.device());
  run(tmp);
  cpu::copy_out(out, tmp);
}

template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

// The geometry of an out kernel's 2-D pooling from `in` and `out` (the input's and output's sizes) and
// the parameters, which the meta step checked (pool::check_pool2d): read without making its shapes again,
// which costs as much as a small pooling.
pool::Pool2d pool2d_geometry(IntArrayRef in, IntArrayRef out, IntArrayRef kernel_size, IntArrayRef stride,
                             IntArrayRef padding, IntArrayRef dilation = {}) {
  // A parameter's value for spatial dim i: one value for both dims, or one each; an empty stride is the
  // kernel, an empty dilation 1.
  const auto at = [](IntArrayRef v, size_t i) { return v[v.size() == 1 ? 0 : i]; };
  const IntArrayRef s = stride.empty() ? kernel_size : stride;
  const int64_t dH = dilation.empty() ? 1 : at(dilation, 0), dW = dilation.empty() ? 1 : at(dilation, 1);
  const size_t nd = in.size();
  pool::Pool2d p{at(kernel_size, 0), at(kernel_size, 1), at(s, 0), at(s, 1), at(padding, 0), at(padding, 1), dH, dW,
                 in[nd - 2], in[nd - 1], out[nd - 2], out[nd - 1], 1, {}};
  for (size_t i = 0; i + 2 < nd; ++i) p.planes *= in[i];
  return p;
}

// Note [Channels-last pooling]: a gradient laid out channels-last (its grad_output suggested it, Note
// [Result layout]) of float32/float64 and enough channels, sharing no memory with the inputs, runs the
// NHWC loops.
bool channels_last_grad(const Tensor& grad_input, std::initializer_list<const Tensor*> inputs) {
  if (grad_input.dim() != 4 || grad_input.is_contiguous() ||
      grad_input.sizes()[1] < cpu::kMinChannelsLastChannels ||
      !is_contiguous_in(grad_input, MemoryFormat::ChannelsLast))
    return false;
  const ScalarType t = grad_input.dtype();
  return (t == ScalarType::Float32 || t == ScalarType::Float64) && !cpu::shares_storage(grad_input, inputs);
}

// ---- max pooling ----

// One plane, 2x2 windows with stride 2, no padding or dilation (LeNet, VGG).
// Full windows are branch-free (selects the compiler vectorizes): a later
// element replaces the maximum only when strictly greater or NaN, so the
// first maximum in scan order wins, as in PyTorch. Partial windows at the
// bottom/right edge (ceil_mode) take the general path.
// Elements of storage S compared as L::T: L::T is S itself, or float for bfloat16 bits (widened
// exactly, and a maximum narrowed back to the same bits: max pooling of bfloat16 is exact).
template <class S>
struct Lane {
  using T = S;
  static T widen(S v) { return v; }
  static S narrow(T v) { return v; }
};
struct Bf16Bits {};  // bfloat16 data seen as uint16_t (not the uint16 dtype)
template <>
struct Lane<Bf16Bits> {
  using T = float;
  using S = uint16_t;
  static float widen(uint16_t b) { return detail::bf16_bits_to_fp32(b); }
  static uint16_t narrow(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return static_cast<uint16_t>(u >> 16);
  }
};
template <class S>
using StorageOf = std::conditional_t<std::is_same_v<S, Bf16Bits>, uint16_t, S>;

// The windows of a 2x2 / stride 2 pooling that are not full (ceil_mode's last row and column).
template <class K, class S = StorageOf<K>>
void max_pool_2x2_edges(const S* in, S* out, int64_t* idx, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  using L = Lane<K>;
  using T = typename L::T;
  const int64_t full_w = std::min(OW, W / 2);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t ih = 2 * oh;
    for (int64_t ow = ih + 1 < H ? full_w : 0; ow < OW; ++ow) {
      const int64_t iw = 2 * ow;
      T m = pool::max_identity<T>();
      int64_t mi = ih * W + iw;
      for (int64_t h = ih; h < std::min(ih + 2, H); ++h)
        for (int64_t w = iw; w < std::min(iw + 2, W); ++w) {
          const T v = L::widen(in[h * W + w]);
          if (v > m || is_nan(v)) {
            m = v;
            mi = h * W + w;
          }
        }
      out[oh * OW + ow] = L::narrow(m);
      idx[oh * OW + ow] = mi;
    }
  }
}

template <class K, class S = StorageOf<K>>
[[gnu::always_inline]] inline void max_pool_2x2(const S* in, S* out, int64_t* idx, int64_t H, int64_t W,
                                                int64_t OH, int64_t OW) {
  using L = Lane<K>;
  using T = typename L::T;
  const int64_t full_w = std::min(OW, W / 2);  // windows with two columns inside the input
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t ih = 2 * oh;
    const S* r0 = in + ih * W;
    S* yr = out + oh * OW;
    int64_t* ir = idx + oh * OW;
    if (ih + 1 < H) {
      const S* r1 = r0 + W;
      const int64_t base = ih * W;
#pragma omp simd
      for (int64_t ow = 0; ow < full_w; ++ow) {
        const T a = L::widen(r0[2 * ow]), b = L::widen(r0[2 * ow + 1]), c = L::widen(r1[2 * ow]),
                d = L::widen(r1[2 * ow + 1]);
        const bool ub = (b > a) || (b != b);
        T m = ub ? b : a;
        int64_t mi = ub ? 1 : 0;
        const bool uc = (c > m) || (c != c);
        m = uc ? c : m;
        mi = uc ? W : mi;
        const bool ud = (d > m) || (d != d);
        m = ud ? d : m;
        mi = ud ? W + 1 : mi;
        yr[ow] = L::narrow(m);
        ir[ow] = base + 2 * ow + mi;
      }
    }
  }
  max_pool_2x2_edges<K>(in, out, idx, H, W, OH, OW);
}

FB_POOL_CLONES void max_pool_2x2_f32(const float* in, float* out, int64_t* idx, int64_t H, int64_t W,
                                     int64_t OH, int64_t OW) {
  max_pool_2x2<float>(in, out, idx, H, W, OH, OW);
}

template <class K, class S = StorageOf<K>>
void max_pool_plane(const S* in, S* out, int64_t* idx, const pool::Pool2d& p) {
  using L = Lane<K>;
  using T = typename L::T;
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const auto [h0, h1] = pool::dilated_span(oh, p.sH, p.pH, p.kH, p.dH, p.H);
    for (int64_t ow = 0; ow < p.OW; ++ow) {
      const auto [w0, w1] = pool::dilated_span(ow, p.sW, p.pW, p.kW, p.dW, p.W);
      T m = pool::max_identity<T>();
      int64_t mi = h0 * p.W + w0;
      for (int64_t h = h0; h < h1; h += p.dH) {
        const S* row = in + h * p.W;
        for (int64_t w = w0; w < w1; w += p.dW) {
          const T v = L::widen(row[w]);
          if (v > m || is_nan(v)) {
            m = v;
            mi = h * p.W + w;
          }
        }
      }
      out[oh * p.OW + ow] = L::narrow(m);
      idx[oh * p.OW + ow] = mi;
    }
  }
}

void max_pool2d_with_indices_out_cpu(const Tensor& out_arg, const Tensor& indices_arg, const Tensor& self,
                                     IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                     IntArrayRef dilation, bool ceil_mode) {
  if (self.dtype() == ScalarType::Float16)  // the indices written as they are, the values rounded once
    return in_float32(out_arg, [&](const Tensor& tmp) {
      max_pool2d_with_indices_out_cpu(tmp, indices_arg, cpu::to_float32(self), kernel_size, stride, padding,
                                      dilation, ceil_mode);
    });
  if (out_arg.numel() == 0) return;
  const pool::Pool2d p = pool2d_geometry(self.sizes(), out_arg.sizes(), kernel_size, stride, padding, dilation);
  if (self.dtype() != ScalarType::BFloat16 && cpu::channels_last_pool(self, out_arg) &&
      is_contiguous_in(indices_arg, MemoryFormat::ChannelsLast) &&
      !cpu::shares_storage(indices_arg, std::initializer_list<const Tensor*>{&self, &out_arg}))
    return cpu::max_pool2d_nhwc(self, out_arg, indices_arg, p);  // Note [Channels-last pooling]
  const Tensor in = contiguous(self);
  cpu::write_contiguous_outs<2>({out_arg, indices_arg}, self, [&](const std::array<Tensor, 2>& dst) {
    const Tensor &out = dst[0], &indices = dst[1];
    const bool fast =
        p.kH == 2 && p.kW == 2 && p.sH == 2 && p.sW == 2 && p.pH == 0 && p.pW == 0 && p.dH == 1 && p.dW == 1;
    const int64_t in_plane = p.H * p.W, out_plane = p.OH * p.OW;
    int64_t* ind = indices.data<int64_t>();
    // Note [2x2 max pooling] (pool_avx512.cpp): the AVX-512 kernels take the full windows of float32 and
    // bfloat16 planes, the edges' partial windows stay here.
    const auto vec2x2 = fast && p.W < (int64_t{1} << 30) ? cpu::max_pool_2x2_stub.get() : nullptr;
    const cpu::MaxPool2x2Kernels* k2x2 = vec2x2 ? &vec2x2() : nullptr;
    auto run = [&](auto tag) {
      using K = typename decltype(tag)::type;  // the element type, or Bf16Bits
      using S = StorageOf<K>;
      const S* x = static_cast<const S*>(in.data_ptr());
      S* y = static_cast<S*>(out.data_ptr());
      parallel_for(0, p.planes, plane_grain(out_plane * p.kH * p.kW), [&](int64_t b, int64_t e) {
        // bfloat16 2x2 without AVX-512: the plane widened in cache, the float32 loop, the maxima narrowed
        // back (exact: each is one of the widened values; the 16-bit compares in one loop did not vectorize).
        std::vector<float> buf;
        if constexpr (std::is_same_v<K, Bf16Bits>)
          if (fast && !k2x2) buf.resize(static_cast<size_t>(in_plane + out_plane));
        for (int64_t c = b; c < e; ++c) {
          const S* xc = x + c * in_plane;
          S* yc = y + c * out_plane;
          int64_t* ic = ind + c * out_plane;
          if (fast && k2x2 && (std::is_same_v<K, float> || std::is_same_v<K, Bf16Bits>)) {
            if constexpr (std::is_same_v<K, float>)
              k2x2->f32(xc, yc, ic, p.H, p.W, p.OH, p.OW);
            else if constexpr (std::is_same_v<K, Bf16Bits>)
              k2x2->bf16(xc, yc, ic, p.H, p.W, p.OH, p.OW);
            max_pool_2x2_edges<K>(xc, yc, ic, p.H, p.W, p.OH, p.OW);
          } else if (fast) {
            if constexpr (std::is_same_v<K, float>)
              max_pool_2x2_f32(xc, yc, ic, p.H, p.W, p.OH, p.OW);
            else if constexpr (std::is_same_v<K, Bf16Bits>) {
              const cpu::HalfConvert& cv = cpu::half_convert();
              cv.bf16_to_f32(xc, buf.data(), in_plane);
              max_pool_2x2_f32(buf.data(), buf.data() + in_plane, ic, p.H, p.W, p.OH, p.OW);
              cv.f32_to_bf16(buf.data() + in_plane, yc, out_plane);
            } else
              max_pool_2x2<K>(xc, yc, ic, p.H, p.W, p.OH, p.OW);
          } else {
            max_pool_plane<K>(xc, yc, ic, p);
          }
        }
      });
    };
    // bfloat16 (autocast): compared as float32 in registers, no float32 copies (exact).
    if (self.dtype() == ScalarType::BFloat16)
      run(type_tag<Bf16Bits>{});
    else
      visit_dtype(self.dtype(), "max_pool2d", run);
  });
}

void max_pool_backward_out_cpu(const Tensor& out, const Tensor& grad_output, const Tensor& indices,
                               IntArrayRef input_size) {
  if (grad_output.dtype() == ScalarType::Float16)
    return in_float32(out, [&](const Tensor& tmp) {
      max_pool_backward_out_cpu(tmp, cpu::to_float32(grad_output), indices, input_size);
    });
  const char* op = "max_pool_backward";
  const int64_t nd = static_cast<int64_t>(input_size.size());
  if (out.numel() == 0) return;
  const int64_t in_plane = input_size[nd - 1] * input_size[nd - 2];
  const int64_t planes = out.numel() / in_plane;
  const int64_t out_plane = indices.numel() / std::max<int64_t>(planes, 1);
  if (channels_last_grad(out, {&grad_output, &indices}))  // Note [Channels-last pooling]
    return cpu::max_pool_backward_nhwc(cpu::channels_last(grad_output), cpu::channels_last(indices), out);
  const Tensor go = contiguous(grad_output);
  // Indices in out's memory (a view of another dtype) are read from a copy.
  const bool ix_in_out = indices.impl()->storage() == out.impl()->storage();
  const Tensor ix = ix_in_out ? op::clone(indices, MemoryFormat::Contiguous) : contiguous(indices);
  cpu::write_contiguous(out, grad_output, [&](const Tensor& gi) {
    if (grad_output.dtype() == ScalarType::BFloat16) {
      // bfloat16 (autocast): each plane's gradient is summed in a float32 plane of the thread (windows
      // may overlap), then rounded once to bfloat16, as the float32 copies did, without them.
      const auto* g = static_cast<const uint16_t*>(go.data_ptr());
      const int64_t* id = ix.data<int64_t>();
      auto* o = static_cast<uint16_t*>(gi.data_ptr());
      const auto to_bf16 = cpu::half_convert().f32_to_bf16;
      parallel_for(0, planes, plane_grain(in_plane + out_plane), [&](int64_t b, int64_t e) {
        std::vector<float> acc(static_cast<size_t>(in_plane));
        for (int64_t c = b; c < e; ++c) {
          std::fill(acc.begin(), acc.end(), 0.0f);
          const uint16_t* gc = g + c * out_plane;
          const int64_t* ic = id + c * out_plane;
          for (int64_t j = 0; j < out_plane; ++j) {
            const int64_t k = ic[j];
            FB_CHECK_INDEX(k >= 0, "[", op, "] index ", k, " is out of bounds for an input plane of ", in_plane,
                           " elements (input_size ", shape_str(input_size), ")");
            // Note [Empty pooling window] (below).
            if (k < in_plane) acc[static_cast<size_t>(k)] += Lane<Bf16Bits>::widen(gc[j]);
          }
          to_bf16(acc.data(), o + c * in_plane, in_plane);
        }
      });
      return;
    }
    visit_dtype(grad_output.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* g = go.data<T>();
        const int64_t* id = ix.data<int64_t>();
        T* o = gi.data<T>();
        parallel_for(0, planes, plane_grain(in_plane + out_plane), [&](int64_t b, int64_t e) {
          std::memset(o + b * in_plane, 0, static_cast<size_t>((e - b) * in_plane) * sizeof(T));
          for (int64_t c = b; c < e; ++c) {
            T* oc = o + c * in_plane;
            const T* gc = g + c * out_plane;
            const int64_t* ic = id + c * out_plane;
            for (int64_t j = 0; j < out_plane; ++j) {
              const int64_t k = ic[j];
              FB_CHECK_INDEX(k >= 0, "[", op, "] index ", k, " is out of bounds for an input plane of ",
                             in_plane, " elements (input_size ", shape_str(input_size), ")");
              // Note [Empty pooling window]: a dilated window with no element inside the image gives -inf and
              // the index of its first position, past the plane (as PyTorch's forward); that output cell has
              // no input to send its gradient to (PyTorch's CPU backward writes past the plane there).
              if (k < in_plane) oc[k] += gc[j];
            }
          }
        });
      }
    });
  });
}

// ---- average pooling ----

template <class T>
void avg_pool_plane(const T* in, T* out, const pool::Pool2d& p, bool count_include_pad,
                    std::optional<int64_t> divisor) {
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    int64_t h0 = oh * p.sH - p.pH;
    int64_t h1 = std::min(h0 + p.kH, p.H + p.pH);
    const int64_t pool_h = h1 - h0;
    h0 = std::max<int64_t>(h0, 0);
    h1 = std::min(h1, p.H);
    for (int64_t ow = 0; ow < p.OW; ++ow) {
      int64_t w0 = ow * p.sW - p.pW;
      int64_t w1 = std::min(w0 + p.kW, p.W + p.pW);
      const int64_t pool_w = w1 - w0;
      w0 = std::max<int64_t>(w0, 0);
      w1 = std::min(w1, p.W);
      if (h0 >= h1 || w0 >= w1) {
        out[oh * p.OW + ow] = 0;
        continue;
      }
      T s = 0;
      for (int64_t h = h0; h < h1; ++h) {
        const T* row = in + h * p.W;
        for (int64_t w = w0; w < w1; ++w) s += row[w];
      }
      const int64_t div = divisor ? *divisor : count_include_pad ? pool_h * pool_w : (h1 - h0) * (w1 - w0);
      out[oh * p.OW + ow] = s / static_cast<T>(div);
    }
  }
}

void avg_pool2d_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                        IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                        std::optional<int64_t> divisor_override) {
  if (cpu::is_low_precision(self.dtype()))
    return in_float32(out, [&](const Tensor& tmp) {
      avg_pool2d_out_cpu(tmp, cpu::to_float32(self), kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override);
    });
  if (self.dtype() == ScalarType::Int64 && !self.is_contiguous())  // int64 runs the NCHW loop only
    return avg_pool2d_out_cpu(out, contiguous(self), kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override);
  if (out.numel() == 0) return;
  const pool::Pool2d p = pool2d_geometry(self.sizes(), out.sizes(), kernel_size, stride, padding);
  if (cpu::channels_last_pool(self, out))  // Note [Channels-last pooling]
    return cpu::avg_pool2d_nhwc(self, out, p, count_include_pad, divisor_override);
  const Tensor in = contiguous(self);
  cpu::write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtype(self.dtype(), "avg_pool2d", [&](auto tag) {
      using T = typename decltype(tag)::type;
      // int64 as PyTorch: an int64 sum divided by the window's size, rounded toward zero.
      if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, int64_t>) {
        const T* x = in.data<T>();
        T* y = dst.data<T>();
        const int64_t in_plane = p.H * p.W, out_plane = p.OH * p.OW;
        parallel_for(0, p.planes, plane_grain(out_plane * p.kH * p.kW), [&](int64_t b, int64_t e) {
          for (int64_t c = b; c < e; ++c)
            avg_pool_plane<T>(x + c * in_plane, y + c * out_plane, p, count_include_pad, divisor_override);
        });
      }
    });
  });
}

void avg_pool2d_backward_out_cpu(const Tensor& out, const Tensor& grad_output, IntArrayRef input_size,
                                 IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                                 bool count_include_pad, std::optional<int64_t> divisor_override) {
  if (cpu::is_low_precision(grad_output.dtype()))
    return in_float32(out, [&](const Tensor& tmp) {
      avg_pool2d_backward_out_cpu(tmp, cpu::to_float32(grad_output), input_size, kernel_size, stride, padding,
                                  ceil_mode, count_include_pad, divisor_override);
    });
  const char* op = "avg_pool2d_backward";
  if (out.numel() == 0) return;
  const pool::Pool2d p = pool2d_geometry(input_size, grad_output.sizes(), kernel_size, stride, padding);
  if (channels_last_grad(out, {&grad_output}))  // Note [Channels-last pooling]
    return cpu::avg_pool2d_backward_nhwc(cpu::channels_last(grad_output), out, p, count_include_pad,
                                         divisor_override);
  const Tensor go = contiguous(grad_output);
  cpu::write_contiguous(out, grad_output, [&](const Tensor& gi) {
    visit_dtype(grad_output.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* g = go.data<T>();
        T* o = gi.data<T>();
        const int64_t in_plane = p.H * p.W, out_plane = p.OH * p.OW;
        parallel_for(0, p.planes, plane_grain(out_plane * p.kH * p.kW), [&](int64_t b, int64_t e) {
          std::memset(o + b * in_plane, 0, static_cast<size_t>((e - b) * in_plane) * sizeof(T));
          for (int64_t c = b; c < e; ++c) {
            T* oc = o + c * in_plane;
            const T* gc = g + c * out_plane;
            for (int64_t oh = 0; oh < p.OH; ++oh) {
              int64_t h0 = oh * p.sH - p.pH;
              int64_t h1 = std::min(h0 + p.kH, p.H + p.pH);
              const int64_t pool_h = h1 - h0;
              h0 = std::max<int64_t>(h0, 0);
              h1 = std::min(h1, p.H);
              for (int64_t ow = 0; ow < p.OW; ++ow) {
                int64_t w0 = ow * p.sW - p.pW;
                int64_t w1 = std::min(w0 + p.kW, p.W + p.pW);
                const int64_t pool_w = w1 - w0;
                w0 = std::max<int64_t>(w0, 0);
                w1 = std::min(w1, p.W);
                if (h0 >= h1 || w0 >= w1) continue;
                const int64_t div = divisor_override    ? *divisor_override
                                    : count_include_pad ? pool_h * pool_w
                                                        : (h1 - h0) * (w1 - w0);
                const T v = gc[oh * p.OW + ow] / static_cast<T>(div);
                for (int64_t h = h0; h < h1; ++h) {
                  T* row = oc + h * p.W;
                  for (int64_t w = w0; w < w1; ++w) row[w] += v;
                }
              }
            }
          }
        });
      }
    });
  });
}

// ---- adaptive pooling ----

struct Adaptive {
  int64_t H, W, OH, OW, planes = 1;
  std::vector<int64_t> hs, he, ws, we;  // window bounds per output row / column
};

// The planes and window bounds of an adaptive pooling of an input of sizes `sz` to (OH, OW); `windows`
// false leaves the bounds out (global average pooling does not read them).
Adaptive adaptive_windows(IntArrayRef sz, int64_t OH, int64_t OW, bool windows = true) {
  const int64_t nd = static_cast<int64_t>(sz.size());
  Adaptive a;
  a.H = sz[nd - 2];
  a.W = sz[nd - 1];
  a.OH = OH;
  a.OW = OW;
  for (int64_t i = 0; i < nd - 2; ++i) a.planes *= sz[i];
  if (!windows) return a;
  a.hs.resize(a.OH);
  a.he.resize(a.OH);
  a.ws.resize(a.OW);
  a.we.resize(a.OW);
  for (int64_t i = 0; i < a.OH; ++i) {
    a.hs[i] = pool::adaptive_start(i, a.OH, a.H);
    a.he[i] = pool::adaptive_end(i, a.OH, a.H);
  }
  for (int64_t i = 0; i < a.OW; ++i) {
    a.ws[i] = pool::adaptive_start(i, a.OW, a.W);
    a.we[i] = pool::adaptive_end(i, a.OW, a.W);
  }
  return a;
}

// The geometry of an out kernel's adaptive pooling from `in` (the input's sizes) to `out` (the output's):
// the meta step checked both, so no shape is made or checked again.
Adaptive adaptive_geometry(IntArrayRef in, IntArrayRef out) {
  const size_t nd = out.size();
  const int64_t OH = out[nd - 2], OW = out[nd - 1];
  return adaptive_windows(in, OH, OW, OH * OW != 1);
}

// Sum of n contiguous values with 16 independent partial sums, so that the
// adds of a short plane (64 values in ResNet's last stage) do not wait on one
// another: one accumulator chain would cost the add latency per vector.
template <class T>
[[gnu::always_inline]] inline T plane_sum(const T* x, int64_t n) {
  constexpr int64_t kLanes = 16;
  T acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
#pragma omp simd
    for (int64_t j = 0; j < kLanes; ++j) acc[j] += x[i + j];
  T s = 0;
  for (; i < n; ++i) s += x[i];
  for (int64_t j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

template <class T>
[[gnu::always_inline]] inline void global_avg_planes(const T* x, T* y, int64_t b, int64_t e, int64_t n) {
  const T count = static_cast<T>(n);
  for (int64_t c = b; c < e; ++c) y[c] = plane_sum(x + c * n, n) / count;
}
FB_POOL_CLONES void global_avg_planes_f32(const float* x, float* y, int64_t b, int64_t e, int64_t n) {
  global_avg_planes<float>(x, y, b, e, n);
}
FB_POOL_CLONES void global_avg_planes_f64(const double* x, double* y, int64_t b, int64_t e, int64_t n) {
  global_avg_planes<double>(x, y, b, e, n);
}

void adaptive_avg_pool2d_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef output_size) {
  if (cpu::is_low_precision(self.dtype()))
    return in_float32(out, [&](const Tensor& tmp) {
      adaptive_avg_pool2d_out_cpu(tmp, cpu::to_float32(self), output_size);
    });
  const char* op = "adaptive_avg_pool2d";
  if (out.numel() == 0) return;
  if (cpu::channels_last_pool(self, out))  // Note [Channels-last pooling]
    return cpu::adaptive_avg_pool2d_nhwc(self, out);
  const Adaptive a = adaptive_geometry(self.sizes(), out.sizes());
  const Tensor in = contiguous(self);
  cpu::write_contiguous(out, self, [&](const Tensor& dst) {
    visit_dtype(self.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* x = in.data<T>();
        T* y = dst.data<T>();
        const int64_t in_plane = a.H * a.W, out_plane = a.OH * a.OW;
        if (out_plane == 1) {  // global average pooling (ResNet, MobileNet): one vectorized sum per plane
          parallel_for(0, a.planes, plane_grain(in_plane), [&](int64_t b, int64_t e) {
            if constexpr (std::is_same_v<T, float>)
              global_avg_planes_f32(x, y, b, e, in_plane);
            else
              global_avg_planes_f64(x, y, b, e, in_plane);
          });
          return;
        }
        parallel_for(0, a.planes, plane_grain(std::max(in_plane, out_plane)), [&](int64_t b, int64_t e) {
          for (int64_t c = b; c < e; ++c) {
            const T* xc = x + c * in_plane;
            T* yc = y + c * out_plane;
            for (int64_t oh = 0; oh < a.OH; ++oh)
              for (int64_t ow = 0; ow < a.OW; ++ow) {
                T s = 0;
                for (int64_t h = a.hs[oh]; h < a.he[oh]; ++h)
                  for (int64_t w = a.ws[ow]; w < a.we[ow]; ++w) s += xc[h * a.W + w];
                yc[oh * a.OW + ow] = s / static_cast<T>((a.he[oh] - a.hs[oh]) * (a.we[ow] - a.ws[ow]));
              }
          }
        });
      }
    });
  });
}

void adaptive_avg_pool2d_backward_out_cpu(const Tensor& out, const Tensor& grad_output, IntArrayRef input_size) {
  if (cpu::is_low_precision(grad_output.dtype()))
    return in_float32(out, [&](const Tensor& tmp) {
      adaptive_avg_pool2d_backward_out_cpu(tmp, cpu::to_float32(grad_output), input_size);
    });
  const char* op = "adaptive_avg_pool2d_backward";
  if (out.numel() == 0) return;
  if (channels_last_grad(out, {&grad_output}))  // Note [Channels-last pooling]
    return cpu::adaptive_avg_pool2d_backward_nhwc(cpu::channels_last(grad_output), out);
  const Adaptive a = adaptive_geometry(input_size, grad_output.sizes());
  const Tensor go = contiguous(grad_output);
  cpu::write_contiguous(out, grad_output, [&](const Tensor& gi) {
    visit_dtype(grad_output.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* g = go.data<T>();
        T* o = gi.data<T>();
        const int64_t in_plane = a.H * a.W, out_plane = a.OH * a.OW;
        if (out_plane == 1) {
          const T inv = static_cast<T>(in_plane);
          parallel_for(0, a.planes, plane_grain(in_plane), [&](int64_t b, int64_t e) {
            for (int64_t c = b; c < e; ++c) {
              const T v = g[c] / inv;
              T* oc = o + c * in_plane;
#pragma omp simd
              for (int64_t i = 0; i < in_plane; ++i) oc[i] = v;
            }
          });
          return;
        }
        parallel_for(0, a.planes, plane_grain(std::max(in_plane, out_plane)), [&](int64_t b, int64_t e) {
          std::memset(o + b * in_plane, 0, static_cast<size_t>((e - b) * in_plane) * sizeof(T));
          for (int64_t c = b; c < e; ++c) {
            T* oc = o + c * in_plane;
            const T* gc = g + c * out_plane;
            for (int64_t oh = 0; oh < a.OH; ++oh)
              for (int64_t ow = 0; ow < a.OW; ++ow) {
                const T v =
                    gc[oh * a.OW + ow] / static_cast<T>((a.he[oh] - a.hs[oh]) * (a.we[ow] - a.ws[ow]));
                for (int64_t h = a.hs[oh]; h < a.he[oh]; ++h)
                  for (int64_t w = a.ws[ow]; w < a.we[ow]; ++w) oc[h * a.W + w] += v;
              }
          }
        });
      }
    });
  });
}

void adaptive_max_pool2d_out_cpu(const Tensor& out_arg, const Tensor& indices_arg, const Tensor& self,
                                 IntArrayRef output_size) {
  if (cpu::is_low_precision(self.dtype()))
    return in_float32(out_arg, [&](const Tensor& tmp) {
      adaptive_max_pool2d_out_cpu(tmp, indices_arg, cpu::to_float32(self), output_size);
    });
  const char* op = "adaptive_max_pool2d";
  if (out_arg.numel() == 0) return;
  const size_t nd = out_arg.sizes().size();
  const Adaptive a = adaptive_windows(self.sizes(), out_arg.sizes()[nd - 2], out_arg.sizes()[nd - 1]);
  const Tensor in = contiguous(self);
  cpu::write_contiguous_outs<2>({out_arg, indices_arg}, self, [&](const std::array<Tensor, 2>& dst) {
    const Tensor &out = dst[0], &indices = dst[1];
    visit_dtype(self.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = in.data<T>();
      T* y = out.data<T>();
      int64_t* ind = indices.data<int64_t>();
      const int64_t in_plane = a.H * a.W, out_plane = a.OH * a.OW;
      parallel_for(0, a.planes, plane_grain(std::max(in_plane, out_plane)), [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          const T* xc = x + c * in_plane;
          for (int64_t oh = 0; oh < a.OH; ++oh)
            for (int64_t ow = 0; ow < a.OW; ++ow) {
              T m = pool::max_identity<T>();
              int64_t mi = a.hs[oh] * a.W + a.ws[ow];
              for (int64_t h = a.hs[oh]; h < a.he[oh]; ++h)
                for (int64_t w = a.ws[ow]; w < a.we[ow]; ++w) {
                  const T v = xc[h * a.W + w];
                  if (v > m || is_nan(v)) {
                    m = v;
                    mi = h * a.W + w;
                  }
                }
              y[c * out_plane + oh * a.OW + ow] = m;
              ind[c * out_plane + oh * a.OW + ow] = mi;
            }
        }
      });
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::max_pool2d_with_indices, CPU, max_pool2d_with_indices_out_cpu);
FB_REGISTER_OUT_KERNEL(op::max_pool_backward, CPU, max_pool_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::avg_pool2d, CPU, avg_pool2d_out_cpu);
FB_REGISTER_OUT_KERNEL(op::avg_pool2d_backward, CPU, avg_pool2d_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::adaptive_avg_pool2d, CPU, adaptive_avg_pool2d_out_cpu);
FB_REGISTER_OUT_KERNEL(op::adaptive_avg_pool2d_backward, CPU, adaptive_avg_pool2d_backward_out_cpu);
FB_REGISTER_OUT_KERNEL(op::adaptive_max_pool2d, CPU, adaptive_max_pool2d_out_cpu);

}  // namespace
}  // namespace flambeau
