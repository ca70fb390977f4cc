// Channels-last (NHWC) loops of max, average and adaptive average pooling, forward and backward.
//
// Note [Channels-last pooling]
// A channels-last input pools pixel by pixel: each pixel of a window is C contiguous values, so every
// inner loop runs along the channels (the same operation on each lane: vectorized) and the result is
// written NHWC, the layout the meta step gives it (Note [Result layout]). The NCHW loops would need the
// input packed to NCHW and their result copied back to NHWC (channels-last max_pool2d, (32, 64, 32, 32)
// 2x2: 20.5 us NCHW, 25.5 us with the two copies). Each channel sees the operations of the NCHW loops in
// their order (max: a strictly greater value or a NaN replaces the maximum, so the first maximum in scan
// order wins; average: the window's values added row by row, then divided; the backward's additions in
// output order), so the results are bitwise the NCHW loops', but for global average pooling, which adds
// a channel's values in order here and in 16 partial sums there. Forward, threads split the output
// rows (n, oh); backward, the windows overlap in the input, so threads split images and blocks of
// channels.
#include "cpu/pool/pool_channels_last.h"

#include "cpu/pool/pool_shape.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/memory_format.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"

namespace flambeau::cpu {

namespace {

// Note [CPU capabilities]: the float loops compiled for AVX-512, AVX2 and baseline x86-64, one chosen at
// load time (as pool.cpp's hot loops).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FB_NHWC_CLONES [[gnu::target_clones("avx512f", "avx2", "default")]]
#else
#define FB_NHWC_CLONES
#endif

// The sizes of an NHWC pooling: input (N, C, H, W), output (N, C, OH, OW).
struct Nhwc {
  int64_t N, C, H, W, OH, OW;
};

Nhwc nhwc_sizes(IntArrayRef in, IntArrayRef out) { return {in[0], in[1], in[2], in[3], out[2], out[3]}; }

// Channels per backward task: all of them when there are images enough for the threads, else blocks.
int64_t channel_block(const Nhwc& s) {
  return s.N >= get_num_threads() ? s.C : std::min<int64_t>(s.C, 32);
}

// Runs f(n, c0, c1) over the images and their channel blocks, across threads.
template <class F>
void over_image_channels(const Nhwc& s, int64_t work_per_channel, const F& f) {
  const int64_t cb = std::max<int64_t>(1, channel_block(s));
  const int64_t blocks = (s.C + cb - 1) / cb;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_channel * cb));
  parallel_for(0, s.N * blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / blocks, c0 = (t % blocks) * cb;
      f(n, c0, std::min(s.C, c0 + cb));
    }
  });
}

// ---- max pooling ----

// Output rows [r0, r1) (r = n * OH + oh) of a max pooling.
template <class T>
[[gnu::always_inline]] inline void max_rows(const T* x, T* y, int64_t* ind, const Nhwc& s, const pool::Pool2d& p,
                                            int64_t r0, int64_t r1) {
  const int64_t C = s.C;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / s.OH, oh = r % s.OH;
    const auto [h0, h1] = pool::dilated_span(oh, p.sH, p.pH, p.kH, p.dH, s.H);
    for (int64_t ow = 0; ow < s.OW; ++ow) {
      const auto [w0, w1] = pool::dilated_span(ow, p.sW, p.pW, p.kW, p.dW, s.W);
      T* yo = y + (r * s.OW + ow) * C;
      int64_t* io = ind + (r * s.OW + ow) * C;
      const int64_t first = h0 * s.W + w0;  // an empty window's index (Note [Empty pooling window])
      for (int64_t c = 0; c < C; ++c) {
        yo[c] = pool::max_identity<T>();
        io[c] = first;
      }
      for (int64_t h = h0; h < h1; h += p.dH)
        for (int64_t w = w0; w < w1; w += p.dW) {
          const T* xv = x + ((n * s.H + h) * s.W + w) * C;
          const int64_t pos = h * s.W + w;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) {
            const T v = xv[c];
            bool take = v > yo[c];
            if constexpr (std::is_floating_point_v<T>) take = take || v != v;
            yo[c] = take ? v : yo[c];
            io[c] = take ? pos : io[c];
          }
        }
    }
  }
}

FB_NHWC_CLONES void max_rows_f32(const float* x, float* y, int64_t* ind, const Nhwc& s, const pool::Pool2d& p,
                                 int64_t r0, int64_t r1) {
  max_rows<float>(x, y, ind, s, p, r0, r1);
}
FB_NHWC_CLONES void max_rows_f64(const double* x, double* y, int64_t* ind, const Nhwc& s, const pool::Pool2d& p,
                                 int64_t r0, int64_t r1) {
  max_rows<double>(x, y, ind, s, p, r0, r1);
}

// ---- average pooling ----

// A window's bounds along one dim (clipped to the input) and its size counted with the padding.
struct Span {
  int64_t lo, hi, padded;
};
Span avg_span(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t size) {
  const int64_t lo = o * stride - pad;
  const int64_t hi = std::min(lo + k, size + pad);
  return {std::max<int64_t>(lo, 0), std::min(hi, size), hi - lo};
}

int64_t avg_divisor(const Span& h, const Span& w, bool count_include_pad, std::optional<int64_t> divisor) {
  if (divisor) return *divisor;
  return count_include_pad ? h.padded * w.padded : (h.hi - h.lo) * (w.hi - w.lo);
}

// yo[c] = the mean of the window's pixels [h.lo, h.hi) x [w.lo, w.hi) (rows of x of W pixels), the
// NCHW loop's sum order.
template <class T>
[[gnu::always_inline]] inline void window_mean(const T* x, T* yo, int64_t W, int64_t C, const Span& h,
                                               const Span& w, int64_t div) {
  for (int64_t c = 0; c < C; ++c) yo[c] = 0;
  if (h.lo >= h.hi || w.lo >= w.hi) return;
  for (int64_t ih = h.lo; ih < h.hi; ++ih)
    for (int64_t iw = w.lo; iw < w.hi; ++iw) {
      const T* xv = x + (ih * W + iw) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) yo[c] += xv[c];
    }
  const T d = static_cast<T>(div);
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) yo[c] /= d;
}

// gx[window][c0, c1) += go[c0, c1) / div (gx: one image's pixels, C apart).
template <class T>
[[gnu::always_inline]] inline void window_spread(const T* go, T* gx, int64_t W, int64_t C, int64_t c0, int64_t c1,
                                                 const Span& h, const Span& w, int64_t div, T* v) {
  if (h.lo >= h.hi || w.lo >= w.hi) return;
  const T d = static_cast<T>(div);
#pragma omp simd
  for (int64_t c = c0; c < c1; ++c) v[c - c0] = go[c] / d;
  for (int64_t ih = h.lo; ih < h.hi; ++ih)
    for (int64_t iw = w.lo; iw < w.hi; ++iw) {
      T* gv = gx + (ih * W + iw) * C + c0;
#pragma omp simd
      for (int64_t c = 0; c < c1 - c0; ++c) gv[c] += v[c];
    }
}

struct AvgArgs {
  bool count_include_pad;
  std::optional<int64_t> divisor;
};

template <class T>
[[gnu::always_inline]] inline void avg_rows(const T* x, T* y, const Nhwc& s, const pool::Pool2d& p,
                                            const AvgArgs& a, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / s.OH, oh = r % s.OH;
    const Span h = avg_span(oh, p.sH, p.pH, p.kH, s.H);
    for (int64_t ow = 0; ow < s.OW; ++ow) {
      const Span w = avg_span(ow, p.sW, p.pW, p.kW, s.W);
      window_mean(x + n * s.H * s.W * s.C, y + (r * s.OW + ow) * s.C, s.W, s.C, h, w,
                  avg_divisor(h, w, a.count_include_pad, a.divisor));
    }
  }
}
FB_NHWC_CLONES void avg_rows_f32(const float* x, float* y, const Nhwc& s, const pool::Pool2d& p, const AvgArgs& a,
                                 int64_t r0, int64_t r1) {
  avg_rows<float>(x, y, s, p, a, r0, r1);
}
FB_NHWC_CLONES void avg_rows_f64(const double* x, double* y, const Nhwc& s, const pool::Pool2d& p,
                                 const AvgArgs& a, int64_t r0, int64_t r1) {
  avg_rows<double>(x, y, s, p, a, r0, r1);
}

// One image's channels [c0, c1) of an average pooling's input gradient (zeroed first).
template <class T>
[[gnu::always_inline]] inline void avg_backward_block(const T* go, T* gx, const Nhwc& s, const pool::Pool2d& p,
                                                      const AvgArgs& a, int64_t c0, int64_t c1, T* v) {
  for (int64_t i = 0; i < s.H * s.W; ++i) std::fill(gx + i * s.C + c0, gx + i * s.C + c1, T(0));
  for (int64_t oh = 0; oh < s.OH; ++oh) {
    const Span h = avg_span(oh, p.sH, p.pH, p.kH, s.H);
    for (int64_t ow = 0; ow < s.OW; ++ow) {
      const Span w = avg_span(ow, p.sW, p.pW, p.kW, s.W);
      window_spread(go + (oh * s.OW + ow) * s.C, gx, s.W, s.C, c0, c1, h, w,
                    avg_divisor(h, w, a.count_include_pad, a.divisor), v);
    }
  }
}
FB_NHWC_CLONES void avg_backward_block_f32(const float* go, float* gx, const Nhwc& s, const pool::Pool2d& p,
                                           const AvgArgs& a, int64_t c0, int64_t c1, float* v) {
  avg_backward_block<float>(go, gx, s, p, a, c0, c1, v);
}
FB_NHWC_CLONES void avg_backward_block_f64(const double* go, double* gx, const Nhwc& s, const pool::Pool2d& p,
                                           const AvgArgs& a, int64_t c0, int64_t c1, double* v) {
  avg_backward_block<double>(go, gx, s, p, a, c0, c1, v);
}

// ---- adaptive average pooling ----

// Adaptive windows as spans: [floor(i * in / out), ceil((i + 1) * in / out)), counted without padding.
Span adaptive_span(int64_t i, int64_t out, int64_t in) {
  const int64_t lo = pool::adaptive_start(i, out, in), hi = pool::adaptive_end(i, out, in);
  return {lo, hi, hi - lo};
}

template <class T>
[[gnu::always_inline]] inline void adaptive_rows(const T* x, T* y, const Nhwc& s, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / s.OH, oh = r % s.OH;
    const Span h = adaptive_span(oh, s.OH, s.H);
    for (int64_t ow = 0; ow < s.OW; ++ow) {
      const Span w = adaptive_span(ow, s.OW, s.W);
      window_mean(x + n * s.H * s.W * s.C, y + (r * s.OW + ow) * s.C, s.W, s.C, h, w, h.padded * w.padded);
    }
  }
}
FB_NHWC_CLONES void adaptive_rows_f32(const float* x, float* y, const Nhwc& s, int64_t r0, int64_t r1) {
  adaptive_rows<float>(x, y, s, r0, r1);
}
FB_NHWC_CLONES void adaptive_rows_f64(const double* x, double* y, const Nhwc& s, int64_t r0, int64_t r1) {
  adaptive_rows<double>(x, y, s, r0, r1);
}

template <class T>
[[gnu::always_inline]] inline void adaptive_backward_block(const T* go, T* gx, const Nhwc& s, int64_t c0,
                                                           int64_t c1, T* v) {
  if (s.OH == 1 && s.OW == 1) {  // global average pooling: every pixel gets go / (H * W)
    const T d = static_cast<T>(s.H * s.W);
#pragma omp simd
    for (int64_t c = c0; c < c1; ++c) v[c - c0] = go[c] / d;
    for (int64_t i = 0; i < s.H * s.W; ++i) {
      T* gv = gx + i * s.C + c0;
#pragma omp simd
      for (int64_t c = 0; c < c1 - c0; ++c) gv[c] = v[c];
    }
    return;
  }
  for (int64_t i = 0; i < s.H * s.W; ++i) std::fill(gx + i * s.C + c0, gx + i * s.C + c1, T(0));
  for (int64_t oh = 0; oh < s.OH; ++oh) {
    const Span h = adaptive_span(oh, s.OH, s.H);
    for (int64_t ow = 0; ow < s.OW; ++ow) {
      const Span w = adaptive_span(ow, s.OW, s.W);
      window_spread(go + (oh * s.OW + ow) * s.C, gx, s.W, s.C, c0, c1, h, w, h.padded * w.padded, v);
    }
  }
}
FB_NHWC_CLONES void adaptive_backward_block_f32(const float* go, float* gx, const Nhwc& s, int64_t c0, int64_t c1,
                                                float* v) {
  adaptive_backward_block<float>(go, gx, s, c0, c1, v);
}
FB_NHWC_CLONES void adaptive_backward_block_f64(const double* go, double* gx, const Nhwc& s, int64_t c0,
                                                int64_t c1, double* v) {
  adaptive_backward_block<double>(go, gx, s, c0, c1, v);
}

// Calls f with float or double (the dtypes of the average poolings' NHWC loops).
template <class F>
void float_or_double(ScalarType t, const F& f) {
  if (t == ScalarType::Float32)
    f(float{});
  else
    f(double{});
}

// Output rows (n, oh) across threads, a grain of about kGrainSize window reads.
template <class F>
void over_rows(const Nhwc& s, int64_t reads_per_output, const F& f) {
  const int64_t per_row = std::max<int64_t>(1, s.OW * s.C * reads_per_output);
  parallel_for(0, s.N * s.OH, std::max<int64_t>(1, kGrainSize / per_row), f);
}

}  // namespace

bool channels_last_pool(const Tensor& in, const Tensor& out) {
  if (in.dim() != 4 || out.dim() != 4 || in.is_contiguous() || in.sizes()[1] < kMinChannelsLastChannels)
    return false;
  if (!is_contiguous_in(in, MemoryFormat::ChannelsLast) || !is_contiguous_in(out, MemoryFormat::ChannelsLast))
    return false;
  return out.impl()->storage() != in.impl()->storage();
}

Tensor channels_last(const Tensor& t) { return op::contiguous(t, MemoryFormat::ChannelsLast); }

void max_pool2d_nhwc(const Tensor& in, const Tensor& out, const Tensor& indices, const pool::Pool2d& p) {
  const Nhwc s = nhwc_sizes(in.sizes(), out.sizes());
  int64_t* ind = indices.data<int64_t>();
  visit_dtype(in.dtype(), "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = in.data<T>();
      T* y = out.data<T>();
      over_rows(s, p.kH * p.kW, [&](int64_t r0, int64_t r1) {
        if constexpr (std::is_same_v<T, float>)
          max_rows_f32(x, y, ind, s, p, r0, r1);
        else if constexpr (std::is_same_v<T, double>)
          max_rows_f64(x, y, ind, s, p, r0, r1);
        else
          max_rows<T>(x, y, ind, s, p, r0, r1);
      });
    }
  });
}

void max_pool_backward_nhwc(const Tensor& grad_output, const Tensor& indices, const Tensor& grad_input) {
  const char* op = "max_pool_backward";
  const Nhwc s = nhwc_sizes(grad_input.sizes(), grad_output.sizes());
  const int64_t plane = s.H * s.W, out_pixels = s.OH * s.OW;
  const int64_t* id = indices.data<int64_t>();
  float_or_double(grad_output.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad_output.data<T>();
    T* o = grad_input.data<T>();
    over_image_channels(s, out_pixels + plane, [&](int64_t n, int64_t c0, int64_t c1) {
      T* on = o + n * plane * s.C;
      for (int64_t i = 0; i < plane; ++i) std::fill(on + i * s.C + c0, on + i * s.C + c1, T(0));
      for (int64_t j = 0; j < out_pixels; ++j) {
        const T* gj = g + (n * out_pixels + j) * s.C;
        const int64_t* ij = id + (n * out_pixels + j) * s.C;
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t k = ij[c];
          FB_CHECK_INDEX(k >= 0, "[", op, "] index ", k, " is out of bounds for an input plane of ", plane,
                         " elements (input_size ", shape_str(grad_input.sizes()), ")");
          if (k < plane) on[k * s.C + c] += gj[c];  // Note [Empty pooling window] (pool.cpp)
        }
      }
    });
  });
}

void avg_pool2d_nhwc(const Tensor& in, const Tensor& out, const pool::Pool2d& p, bool count_include_pad,
                     std::optional<int64_t> divisor) {
  const Nhwc s = nhwc_sizes(in.sizes(), out.sizes());
  const AvgArgs a{count_include_pad, divisor};
  float_or_double(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.data<T>();
    T* y = out.data<T>();
    over_rows(s, p.kH * p.kW, [&](int64_t r0, int64_t r1) {
      if constexpr (std::is_same_v<T, float>)
        avg_rows_f32(x, y, s, p, a, r0, r1);
      else
        avg_rows_f64(x, y, s, p, a, r0, r1);
    });
  });
}

void avg_pool2d_backward_nhwc(const Tensor& grad_output, const Tensor& grad_input, const pool::Pool2d& p,
                              bool count_include_pad, std::optional<int64_t> divisor) {
  const Nhwc s = nhwc_sizes(grad_input.sizes(), grad_output.sizes());
  const AvgArgs a{count_include_pad, divisor};
  float_or_double(grad_output.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad_output.data<T>();
    T* o = grad_input.data<T>();
    over_image_channels(s, s.OH * s.OW * p.kH * p.kW + s.H * s.W, [&](int64_t n, int64_t c0, int64_t c1) {
      std::vector<T> v(static_cast<size_t>(c1 - c0));
      const T* gn = g + n * s.OH * s.OW * s.C;
      T* on = o + n * s.H * s.W * s.C;
      if constexpr (std::is_same_v<T, float>)
        avg_backward_block_f32(gn, on, s, p, a, c0, c1, v.data());
      else
        avg_backward_block_f64(gn, on, s, p, a, c0, c1, v.data());
    });
  });
}

void adaptive_avg_pool2d_nhwc(const Tensor& in, const Tensor& out) {
  const Nhwc s = nhwc_sizes(in.sizes(), out.sizes());
  const int64_t reads = ((s.H + s.OH - 1) / s.OH + 1) * ((s.W + s.OW - 1) / s.OW + 1);
  float_or_double(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.data<T>();
    T* y = out.data<T>();
    over_rows(s, reads, [&](int64_t r0, int64_t r1) {
      if constexpr (std::is_same_v<T, float>)
        adaptive_rows_f32(x, y, s, r0, r1);
      else
        adaptive_rows_f64(x, y, s, r0, r1);
    });
  });
}

void adaptive_avg_pool2d_backward_nhwc(const Tensor& grad_output, const Tensor& grad_input) {
  const Nhwc s = nhwc_sizes(grad_input.sizes(), grad_output.sizes());
  float_or_double(grad_output.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad_output.data<T>();
    T* o = grad_input.data<T>();
    over_image_channels(s, 2 * s.H * s.W + s.OH * s.OW, [&](int64_t n, int64_t c0, int64_t c1) {
      std::vector<T> v(static_cast<size_t>(c1 - c0));
      const T* gn = g + n * s.OH * s.OW * s.C;
      T* on = o + n * s.H * s.W * s.C;
      if constexpr (std::is_same_v<T, float>)
        adaptive_backward_block_f32(gn, on, s, c0, c1, v.data());
      else
        adaptive_backward_block_f64(gn, on, s, c0, c1, v.data());
    });
  });
}

}  // namespace flambeau::cpu
