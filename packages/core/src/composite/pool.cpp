// Pooling and resampling composites of the op table: the 1-D poolings run the
// 2-D kernels over a height of 1 (as PyTorch does), pixel_shuffle and
// pixel_unshuffle are a reshape, a permute and a reshape. Built only from op::
// calls, so autograd differentiates them through the ops they call.
#include "composite_generated.h"
#include "cpu/pool/pool_shape.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

void check_1d_input(const Tensor& self, const char* op) {
  FB_CHECK_VALUE(self.dim() == 2 || self.dim() == 3, "[", op,
                 "] expected a 2-D (C, L) or 3-D (N, C, L) input, got shape ", shape_str(self.sizes()));
}

/// The one value of a 1-D pooling parameter, checked to be a single int.
int64_t one(IntArrayRef v, const char* op, const char* name) {
  FB_CHECK_VALUE(v.size() == 1, "[", op, "] ", name, " must be a single int or a tuple of 1 int, got ",
                 shape_str(v));
  return v[0];
}

struct Params1d {
  Shape kernel, stride, padding, dilation;
};

Params1d params_1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation, bool ceil_mode, const char* op) {
  check_1d_input(self, op);
  const int64_t k = one(kernel_size, op, "kernel_size");
  const int64_t s = stride.empty() ? k : one(stride, op, "stride");
  const int64_t p = one(padding, op, "padding");
  const int64_t d = dilation.empty() ? 1 : one(dilation, op, "dilation");
  FB_CHECK_VALUE(k > 0, "[", op, "] kernel_size must be greater than zero, got ", k);
  FB_CHECK_VALUE(s > 0, "[", op, "] stride must be greater than zero, got ", s);
  FB_CHECK_VALUE(d > 0, "[", op, "] dilation must be greater than zero, got ", d);
  FB_CHECK_VALUE(p >= 0, "[", op, "] padding must be non-negative, got ", p);
  FB_CHECK_VALUE(p <= k / 2, "[", op,
                 "] pad should be at most half of effective kernel size, but got padding ", p,
                 " for kernel_size ", k);
  const auto sz = self.sizes();
  FB_CHECK_VALUE(sz[self.dim() - 1] > 0 && sz[self.dim() - 2] > 0, "[", op,
                 "] expected an input with non-zero C and L, got shape ", shape_str(sz));
  const int64_t L = sz[self.dim() - 1];
  const int64_t out = pool::output_size(L, k, p, s, d, ceil_mode, op);
  FB_CHECK_VALUE(out > 0, "[", op, "] input shape ", shape_str(sz), " with kernel_size ", k, ", stride ", s,
                 ", padding ", p, " and dilation ", d, " gives output size ", out,
                 ", which is too small: the kernel is larger than the padded input");
  return {{1, k}, {1, s}, {0, p}, {1, d}};
}

Shape output_size_1d(IntArrayRef output_size, const char* op) {
  const int64_t o = one(output_size, op, "output_size");
  return {1, o};
}

}  // namespace

std::tuple<Tensor, Tensor> composite::max_pool1d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                              IntArrayRef stride, IntArrayRef padding,
                                                              IntArrayRef dilation, bool ceil_mode) {
  const Params1d p = params_1d(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool1d");
  auto [out, idx] = op::max_pool2d_with_indices(op::unsqueeze(self, -2), p.kernel, p.stride, p.padding,
                                                p.dilation, ceil_mode);
  return {op::squeeze(out, Shape{-2}), op::squeeze(idx, Shape{-2})};
}

Tensor composite::avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                             IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  const Params1d p = params_1d(self, kernel_size, stride, padding, {}, ceil_mode, "avg_pool1d");
  Tensor out = op::avg_pool2d(op::unsqueeze(self, -2), p.kernel, p.stride, p.padding, ceil_mode,
                              count_include_pad, std::nullopt);
  return op::squeeze(out, Shape{-2});
}

Tensor composite::adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size) {
  check_1d_input(self, "adaptive_avg_pool1d");
  const Shape os = output_size_1d(output_size, "adaptive_avg_pool1d");
  return op::squeeze(op::adaptive_avg_pool2d(op::unsqueeze(self, -2), os), Shape{-2});
}

std::tuple<Tensor, Tensor> composite::adaptive_max_pool1d(const Tensor& self, IntArrayRef output_size) {
  check_1d_input(self, "adaptive_max_pool1d");
  const Shape os = output_size_1d(output_size, "adaptive_max_pool1d");
  auto [out, idx] = op::adaptive_max_pool2d(op::unsqueeze(self, -2), os);
  return {op::squeeze(out, Shape{-2}), op::squeeze(idx, Shape{-2})};
}

Tensor composite::pixel_shuffle(const Tensor& self, int64_t upscale_factor) {
  FB_CHECK_VALUE(self.dim() >= 3,
                 "[pixel_shuffle] expects input to have at least 3 dims (*, C, H, W), got shape ",
                 shape_str(self.sizes()));
  const int64_t r = upscale_factor;
  FB_CHECK_VALUE(r > 0, "[pixel_shuffle] upscale_factor must be greater than 0, got ", r);
  const int64_t nd = self.dim();
  const auto sz = self.sizes();
  const int64_t c = sz[nd - 3], h = sz[nd - 2], w = sz[nd - 1];
  int64_t rr = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(r, r, &rr) && c % rr == 0, "[pixel_shuffle] the channel dim (", c,
                 ") of input shape ", shape_str(sz), " must be divisible by upscale_factor**2 (", r, "**2)");
  const int64_t oc = c / rr;
  int64_t oh = 0, ow = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(h, r, &oh) && !__builtin_mul_overflow(w, r, &ow),
                 "[pixel_shuffle] the output size overflows int64 for input shape ", shape_str(sz),
                 " and upscale_factor ", r);
  Shape lead(sz.begin(), sz.end() - 3);
  const int64_t b = static_cast<int64_t>(lead.size());
  Shape split = lead;
  split.insert(split.end(), {oc, r, r, h, w});
  Shape perm;
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  perm.insert(perm.end(), {b, b + 3, b + 1, b + 4, b + 2});
  Shape out = lead;
  out.insert(out.end(), {oc, oh, ow});
  return op::reshape(op::permute(op::reshape(self, split), perm), out);
}

Tensor composite::pixel_unshuffle(const Tensor& self, int64_t downscale_factor) {
  FB_CHECK_VALUE(self.dim() >= 3,
                 "[pixel_unshuffle] expects input to have at least 3 dims (*, C, H, W), got shape ",
                 shape_str(self.sizes()));
  const int64_t r = downscale_factor;
  FB_CHECK_VALUE(r > 0, "[pixel_unshuffle] downscale_factor must be greater than 0, got ", r);
  const int64_t nd = self.dim();
  const auto sz = self.sizes();
  const int64_t c = sz[nd - 3], h = sz[nd - 2], w = sz[nd - 1];
  FB_CHECK_VALUE(h % r == 0 && w % r == 0, "[pixel_unshuffle] the height (", h, ") and width (", w,
                 ") of input shape ", shape_str(sz), " must be divisible by downscale_factor (", r, ")");
  int64_t rr = 0, oc = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(r, r, &rr) && !__builtin_mul_overflow(c, rr, &oc),
                 "[pixel_unshuffle] the output size overflows int64 for input shape ", shape_str(sz),
                 " and downscale_factor ", r);
  Shape lead(sz.begin(), sz.end() - 3);
  const int64_t b = static_cast<int64_t>(lead.size());
  Shape split = lead;
  split.insert(split.end(), {c, h / r, r, w / r, r});
  Shape perm;
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  perm.insert(perm.end(), {b, b + 2, b + 4, b + 1, b + 3});
  Shape out = lead;
  out.insert(out.end(), {oc, h / r, w / r});
  return op::reshape(op::permute(op::reshape(self, split), perm), out);
}

}  // namespace flambeau
