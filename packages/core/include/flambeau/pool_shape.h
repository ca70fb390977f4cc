#pragma once
// Shape rules of the pooling ops (src/cpu/pool.cpp, src/composite/pool.cpp,
// and device backends' kernels: flambeau-cuda's src/pool.cpp), as PyTorch
// checks them: kernel, stride and dilation > 0, padding at most half the
// kernel, an output of at least one element, and every size computation
// checked for overflow. Installed with core's headers.
#include <algorithm>
#include <array>
#include <cstdint>

#include "flambeau/error.h"
#include "flambeau/tensor.h"

namespace flambeau::pool {

/// One pooling parameter (kernel_size, stride, padding, dilation) for `n`
/// spatial dims: a single value is used for every dim; an empty stride means
/// the kernel size (`fallback`).
inline Shape expand_param(IntArrayRef v, int64_t n, const char* op, const char* name,
                          IntArrayRef fallback = {}) {
  if (v.empty() && !fallback.empty()) return Shape(fallback.begin(), fallback.end());
  FB_CHECK_VALUE(static_cast<int64_t>(v.size()) == 1 || static_cast<int64_t>(v.size()) == n, "[", op, "] ",
                 name, " must be a single int or a tuple of ", n, " ints, got ", shape_str(v));
  if (v.size() == 1) return Shape(static_cast<size_t>(n), v[0]);
  return Shape(v.begin(), v.end());
}

/// PyTorch's pooling_output_shape: floor (or ceil) of
/// (in + 2*pad - dilation*(kernel-1) - 1) / stride + 1, where with ceil_mode the
/// last window must start inside the input or the left padding.
inline int64_t output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode,
                           const char* op) {
  __int128 num = static_cast<__int128>(in) + 2 * static_cast<__int128>(pad) -
                 static_cast<__int128>(dil) * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  __int128 q = num / stride;
  if (num % stride != 0 && num < 0) --q;  // round toward -inf
  __int128 out = q + 1;
  if (ceil_mode && (out - 1) * stride >= static_cast<__int128>(in) + pad) --out;
  FB_CHECK_VALUE(out <= INT64_MAX && out >= INT64_MIN, "[", op,
                 "] the output size overflows int64 (input size ", in, ", kernel ", k, ", padding ", pad,
                 ", stride ", stride, ", dilation ", dil, ")");
  return static_cast<int64_t>(out);
}

/// A 3-D (C, H, W) or 4-D (N, C, H, W) pooling input with non-zero C, H and W.
inline void check_input(IntArrayRef sz, const char* op) {
  const size_t nd = sz.size();
  FB_CHECK_VALUE(
      (nd == 3 && sz[0] != 0 && sz[1] != 0 && sz[2] != 0) ||
          (nd == 4 && sz[1] != 0 && sz[2] != 0 && sz[3] != 0),
      "[", op,
      "] expected a 3-D (C, H, W) or 4-D (N, C, H, W) input with non-zero C, H and W (N may be 0), "
      "got shape ",
      shape_str(sz));
}

/// expand_param for the two spatial dims of a 2-D pooling, without allocating (the check runs on every
/// call of the op, in its meta step).
inline std::array<int64_t, 2> expand_param2(IntArrayRef v, const char* op, const char* name,
                                            const std::array<int64_t, 2>* fallback = nullptr) {
  if (v.empty() && fallback) return *fallback;
  FB_CHECK_VALUE(v.size() == 1 || v.size() == 2, "[", op, "] ", name, " must be a single int or a tuple of ", 2,
                 " ints, got ", shape_str(v));
  return {v[0], v.size() == 1 ? v[0] : v[1]};
}

struct Pool2d {
  int64_t kH, kW, sH, sW, pH, pW, dH, dW;
  int64_t H, W, OH, OW;
  int64_t planes;  // product of the leading dims (N*C or C)
  Shape out_shape;
};

/// Checks a (N, C, H, W) or (C, H, W) input and the parameters of a 2-D pooling
/// and computes the output shape. `dilation` empty means 1.
inline Pool2d check_pool2d(IntArrayRef sz, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                           IntArrayRef dilation, bool ceil_mode, const char* op) {
  using Pair = std::array<int64_t, 2>;
  const Pair k = expand_param2(kernel_size, op, "kernel_size");
  const Pair s = expand_param2(stride, op, "stride", &k);
  const Pair p = expand_param2(padding, op, "padding");
  const Pair d = dilation.empty() ? Pair{1, 1} : expand_param2(dilation, op, "dilation");
  FB_CHECK_VALUE(k[0] > 0 && k[1] > 0, "[", op, "] kernel_size must be greater than zero, got ",
                 shape_str(k));
  FB_CHECK_VALUE(s[0] > 0 && s[1] > 0, "[", op, "] stride must be greater than zero, got ", shape_str(s));
  FB_CHECK_VALUE(d[0] > 0 && d[1] > 0, "[", op, "] dilation must be greater than zero, got ", shape_str(d));
  FB_CHECK_VALUE(p[0] >= 0 && p[1] >= 0, "[", op, "] padding must be non-negative, got ", shape_str(p));
  FB_CHECK_VALUE(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, "[", op,
                 "] pad should be at most half of effective kernel size, but got padding ", shape_str(p),
                 " for kernel_size ", shape_str(k));
  const int64_t nd = static_cast<int64_t>(sz.size());
  check_input(sz, op);
  Pool2d r{k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], sz[nd - 2], sz[nd - 1], 0, 0, 1, {}};
  r.OH = output_size(r.H, r.kH, r.pH, r.sH, r.dH, ceil_mode, op);
  r.OW = output_size(r.W, r.kW, r.pW, r.sW, r.dW, ceil_mode, op);
  FB_CHECK_VALUE(r.OH > 0 && r.OW > 0, "[", op, "] input shape ", shape_str(sz), " with kernel_size ",
                 shape_str(k), ", stride ", shape_str(s), ", padding ", shape_str(p), " and dilation ",
                 shape_str(d), " gives output size (", r.OH, ", ", r.OW,
                 "), which is too small: the kernel is larger than the padded input");
  for (int64_t i = 0; i < nd - 2; ++i) r.planes *= sz[i];
  r.out_shape.assign(sz.begin(), sz.end());  // the leading dims, then (OH, OW): one allocation
  r.out_shape[nd - 2] = r.OH;
  r.out_shape[nd - 1] = r.OW;
  return r;
}

/// Checks a (N, C, H, W) or (C, H, W) input and the output_size of a 2-D
/// adaptive pooling and returns the output shape.
inline Shape adaptive_out_shape(IntArrayRef sz, IntArrayRef output_size, const char* op) {
  const int64_t nd = static_cast<int64_t>(sz.size());
  check_input(sz, op);
  FB_CHECK_VALUE(output_size.size() == 2 || output_size.size() == 1, "[", op,
                 "] output_size must be a single int or a tuple of 2 ints, got ", shape_str(output_size));
  const int64_t oh = output_size[0], ow = output_size.size() == 2 ? output_size[1] : output_size[0];
  FB_CHECK_VALUE(oh >= 0 && ow >= 0, "[", op, "] output_size must be non-negative, got ", shape_str(output_size));
  Shape out(sz.begin(), sz.end());  // the leading dims, then (oh, ow): one allocation
  out[nd - 2] = oh;
  out[nd - 1] = ow;
  return out;
}

/// Start of adaptive window i of `out` over `in`: floor(i * in / out).
inline int64_t adaptive_start(int64_t i, int64_t out, int64_t in) {
  return static_cast<int64_t>(static_cast<__int128>(i) * in / out);
}
/// End (exclusive): ceil((i + 1) * in / out).
inline int64_t adaptive_end(int64_t i, int64_t out, int64_t in) {
  return static_cast<int64_t>((static_cast<__int128>(i + 1) * in + out - 1) / out);
}

}  // namespace flambeau::pool
