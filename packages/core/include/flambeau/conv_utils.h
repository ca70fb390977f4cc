#pragma once
// Shapes and argument checks of convolution, shared by the CPU kernels
// (src/cpu/conv.cpp), the composites conv1d/conv2d/conv_transpose*d
// (src/composite/conv.cpp) and device backends' kernels (flambeau-cuda's
// src/conv.cpp; installed with core's headers), so that every entry point
// reports a bad argument the same way, naming the op the user called.
//
// Note [Convolution geometry]
// Every convolution here is computed as a 2-D one (a 1-D one has a height of
// 1). Of the two images involved, the "big" one is the one a kernel window
// slides over and the "small" one has one value per window position:
//   forward convolution:     big = input,  small = output
//   transposed convolution:  big = output, small = input
// with small = (big + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1.
// im2col turns a big image (C, H, W) into columns (C * kH * kW, Hs * Ws);
// col2im sums such columns back into a big image.
#include <array>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau::conv {

/// "[8, 4, 32, 32]": PyTorch's spelling of a shape in convolution errors.
inline std::string bracket_shape(IntArrayRef s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

inline std::string list_str(IntArrayRef s) { return bracket_shape(s); }

/// The per-dim list of an int[] argument: one value repeats for every spatial dim.
inline Shape expand_param(IntArrayRef v, int64_t spatial, const char* op, const char* name) {
  if (v.size() == 1) return Shape(static_cast<size_t>(spatial), v[0]);
  FB_CHECK_VALUE(static_cast<int64_t>(v.size()) == spatial, "[", op, "] expected ", name,
                 " to be a single int or ", spatial, " ints, got ", list_str(v));
  return Shape(v.begin(), v.end());
}

/// small = (big + 2p - d(k-1) - 1) / s + 1, overflow-checked; raises if the
/// dilated kernel does not fit the padded input.
inline int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, const char* op,
                             IntArrayRef input_shape, IntArrayRef weight_shape) {
  int64_t padded = 0, span = 0;
  const bool overflow =
      __builtin_mul_overflow(p, int64_t{2}, &padded) || __builtin_add_overflow(padded, in, &padded) ||
      __builtin_mul_overflow(d, k - 1, &span) || __builtin_add_overflow(span, int64_t{1}, &span);
  FB_CHECK_VALUE(!overflow, "[", op, "] output size overflows for input ", bracket_shape(input_shape),
                 ", weight ", bracket_shape(weight_shape), ", padding ", p, " and dilation ", d);
  FB_CHECK_VALUE(span <= padded, "[", op, "] kernel size ", span,
                 " (dilated) is larger than the padded input size ", padded, " (input ",
                 bracket_shape(input_shape), ", weight ", bracket_shape(weight_shape), ", padding ", p,
                 ", dilation ", d, ")");
  return (padded - span) / s + 1;
}

/// big = (small - 1)s - 2p + d(k-1) + output_padding + 1, overflow-checked, positive.
inline int64_t conv_transpose_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op_pad,
                                       const char* op, IntArrayRef input_shape, IntArrayRef weight_shape) {
  int64_t a = 0, span = 0, r = 0, twice_p = 0;
  const bool overflow = __builtin_mul_overflow(in - 1, s, &a) || __builtin_mul_overflow(d, k - 1, &span) ||
                        __builtin_add_overflow(a, span, &r) || __builtin_add_overflow(r, op_pad + 1, &r) ||
                        __builtin_mul_overflow(p, int64_t{2}, &twice_p) ||
                        __builtin_sub_overflow(r, twice_p, &r);
  FB_CHECK_VALUE(!overflow, "[", op, "] output size overflows for input ", bracket_shape(input_shape),
                 ", weight ", bracket_shape(weight_shape), " and stride ", s);
  FB_CHECK_VALUE(r > 0, "[", op, "] the output size ", r, " is not positive (input ",
                 bracket_shape(input_shape), ", weight ", bracket_shape(weight_shape), ", stride ", s,
                 ", padding ", p, ", dilation ", d, ", output_padding ", op_pad, ")");
  return r;
}

/// Checks every argument of a convolution whose lists are already per spatial
/// dim (1 or 2 of them) and returns the output shape. `op` names the caller.
inline Shape check_and_output_shape(const char* op, const Tensor& input, const Tensor& weight,
                                    const std::optional<Tensor>& bias, IntArrayRef stride,
                                    IntArrayRef padding, IntArrayRef dilation, bool transposed,
                                    IntArrayRef output_padding, int64_t groups) {
  const int64_t nd = input.dim();
  const int64_t spatial = nd - 2;
  FB_CHECK_VALUE(spatial == 1 || spatial == 2, "[", op, "] expected a 3-D or 4-D (batched) input, got ",
                 bracket_shape(input.sizes()));
  FB_CHECK_VALUE(weight.dim() == nd, "[", op, "] expected a ", nd, "-D weight for the ", nd, "-D input ",
                 bracket_shape(input.sizes()), ", got weight of size ", bracket_shape(weight.sizes()));
  // bfloat16 and float16 only where a kernel takes them: the cpu's (Note [Low-precision kernels],
  // src/cpu/low_precision.h).
  const bool low = input.dtype() == ScalarType::BFloat16 || input.dtype() == ScalarType::Float16;
  FB_CHECK_TYPE(input.dtype() == ScalarType::Float32 || input.dtype() == ScalarType::Float64 ||
                    (low && input.device().type == DeviceType::CPU),
                "[", op, "] expected a float32 or float64 input (bfloat16 and float16 too on the cpu), got ",
                dtype_name(input.dtype()));
  FB_CHECK_TYPE(weight.dtype() == input.dtype(), "[", op, "] input type (", dtype_name(input.dtype()),
                ") and weight type (", dtype_name(weight.dtype()), ") should be the same");
  FB_CHECK(input.device() == weight.device(), "[", op, "] expected input and weight on the same device, got ",
           input.device().str(), " and ", weight.device().str());
  FB_CHECK_VALUE(
      static_cast<int64_t>(stride.size()) == spatial && static_cast<int64_t>(padding.size()) == spatial &&
          static_cast<int64_t>(dilation.size()) == spatial &&
          static_cast<int64_t>(output_padding.size()) == spatial,
      "[", op, "] expected stride, padding, dilation and output_padding of ", spatial, " values each, got ",
      list_str(stride), ", ", list_str(padding), ", ", list_str(dilation), ", ", list_str(output_padding));
  for (int64_t i = 0; i < spatial; ++i) {
    FB_CHECK_VALUE(stride[i] > 0, "[", op, "] stride must be positive, got ", list_str(stride));
    FB_CHECK_VALUE(dilation[i] > 0, "[", op, "] dilation must be positive, got ", list_str(dilation));
    FB_CHECK_VALUE(padding[i] >= 0, "[", op, "] padding must be non-negative, got ", list_str(padding));
    FB_CHECK_VALUE(output_padding[i] >= 0, "[", op, "] output_padding must be non-negative, got ",
                   list_str(output_padding));
    if (transposed)
      FB_CHECK_VALUE(output_padding[i] < stride[i] || output_padding[i] < dilation[i], "[", op,
                     "] output_padding must be smaller than either stride or dilation, got output_padding ",
                     list_str(output_padding), ", stride ", list_str(stride), ", dilation ",
                     list_str(dilation));
  }
  FB_CHECK_VALUE(groups > 0, "[", op, "] groups must be positive, got ", groups);
  const int64_t cin = input.sizes()[1];
  const int64_t w0 = weight.sizes()[0], w1 = weight.sizes()[1];
  for (int64_t i = 2; i < nd; ++i)
    FB_CHECK_VALUE(weight.sizes()[i] > 0, "[", op, "] expected a non-empty kernel, got weight of size ",
                   bracket_shape(weight.sizes()));
  int64_t cout = 0;
  if (!transposed) {
    FB_CHECK_VALUE(w0 % groups == 0, "[", op, "] expected the weight's out_channels ", w0,
                   " to be divisible by groups=", groups, " (weight ", bracket_shape(weight.sizes()), ")");
    FB_CHECK_VALUE(cin % groups == 0, "[", op, "] expected input channels ", cin,
                   " to be divisible by groups=", groups, " (input ", bracket_shape(input.sizes()), ")");
    FB_CHECK_VALUE(w1 * groups == cin, "[", op, "] expected input", bracket_shape(input.sizes()), " to have ",
                   w1 * groups, " channels (weight ", bracket_shape(weight.sizes()), ", groups=", groups,
                   "), but got ", cin, " channels instead");
    cout = w0;
  } else {
    FB_CHECK_VALUE(cin % groups == 0, "[", op, "] expected input channels ", cin,
                   " to be divisible by groups=", groups, " (input ", bracket_shape(input.sizes()), ")");
    FB_CHECK_VALUE(w0 == cin, "[", op, "] expected input", bracket_shape(input.sizes()), " to have ", w0,
                   " channels (weight ", bracket_shape(weight.sizes()), ", groups=", groups, "), but got ",
                   cin, " channels instead");
    FB_CHECK_VALUE(!__builtin_mul_overflow(w1, groups, &cout), "[", op, "] output channels overflow");
  }
  if (bias) {
    FB_CHECK_TYPE(bias->dtype() == input.dtype(), "[", op, "] input type (", dtype_name(input.dtype()),
                  ") and bias type (", dtype_name(bias->dtype()), ") should be the same");
    FB_CHECK_VALUE(bias->dim() == 1 && bias->sizes()[0] == cout, "[", op, "] expected bias of size [", cout,
                   "] (the output channels), got ", bracket_shape(bias->sizes()));
  }
  Shape out{input.sizes()[0], cout};
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t in = input.sizes()[2 + i], k = weight.sizes()[2 + i];
    out.push_back(transposed ? conv_transpose_out_size(in, k, stride[i], padding[i], dilation[i],
                                                       output_padding[i], op, input.sizes(), weight.sizes())
                             : conv_out_size(in, k, stride[i], padding[i], dilation[i], op, input.sizes(),
                                             weight.sizes()));
  }
  shape_nbytes(out, input.dtype(), op);
  return out;
}

// ---- im2col / col2im (F.unfold / F.fold): the sliding blocks of a (H, W) image ----

/// The per-dim pair of an int[] argument of im2col/col2im (expand_param's rule and message), without
/// allocating: these run on every call, in the meta step and the CPU out kernels.
inline std::array<int64_t, 2> expand_pair(IntArrayRef v, const char* op, const char* name) {
  FB_CHECK_VALUE(v.size() == 1 || v.size() == 2, "[", op, "] expected ", name, " to be a single int or ", 2,
                 " ints, got ", list_str(v));
  return {v[0], v.size() == 1 ? v[0] : v[1]};
}

struct BlockArgs {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
  int64_t kk;  // kh * kw, overflow-checked
};

/// kernel_size, dilation, padding and stride of im2col/col2im, each one value or one per dim, checked.
inline BlockArgs block_args(const char* op, IntArrayRef kernel_size, IntArrayRef dilation,
                            IntArrayRef padding, IntArrayRef stride) {
  const std::array<int64_t, 2> k = expand_pair(kernel_size, op, "kernel_size");
  const std::array<int64_t, 2> d = expand_pair(dilation, op, "dilation");
  const std::array<int64_t, 2> p = expand_pair(padding, op, "padding");
  const std::array<int64_t, 2> s = expand_pair(stride, op, "stride");
  FB_CHECK_VALUE(k[0] > 0 && k[1] > 0, "[", op, "] kernel_size must be positive, got ", list_str(k));
  FB_CHECK_VALUE(d[0] > 0 && d[1] > 0, "[", op, "] dilation must be positive, got ", list_str(d));
  FB_CHECK_VALUE(p[0] >= 0 && p[1] >= 0, "[", op, "] padding must be non-negative, got ", list_str(p));
  FB_CHECK_VALUE(s[0] > 0 && s[1] > 0, "[", op, "] stride must be positive, got ", list_str(s));
  int64_t kk = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(k[0], k[1], &kk), "[", op, "] kernel_size ", list_str(k),
                 " is too large: the product of its sizes overflows int64");
  return {k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1], kk};
}

/// The number of blocks along each dim of an (H, W) image; raises if below one.
inline std::array<int64_t, 2> block_counts(const char* op, const BlockArgs& a, int64_t H, int64_t W) {
  std::array<int64_t, 2> out{};
  const int64_t in[2] = {H, W}, k[2] = {a.kh, a.kw}, d[2] = {a.dh, a.dw}, p[2] = {a.ph, a.pw},
                s[2] = {a.sh, a.sw};
  for (int i = 0; i < 2; ++i) {
    int64_t padded = 0, span = 0;
    const bool overflow =
        __builtin_mul_overflow(p[i], int64_t{2}, &padded) || __builtin_add_overflow(padded, in[i], &padded) ||
        __builtin_mul_overflow(d[i], k[i] - 1, &span) || __builtin_add_overflow(span, int64_t{1}, &span);
    FB_CHECK_VALUE(!overflow, "[", op, "] the number of blocks overflows");
    FB_CHECK_VALUE(span <= padded, "[", op, "] given spatial size (", H, ", ", W, "), kernel_size (", a.kh,
                   ", ", a.kw, "), dilation (", a.dh, ", ", a.dw, "), padding (", a.ph, ", ", a.pw,
                   "): the sliding blocks do not fit (the dilated kernel is larger than the padded input)");
    out[i] = (padded - span) / s[i] + 1;
  }
  return out;
}

}  // namespace flambeau::conv
