// _pack_conv_weight and _conv_packed (conv_packed.h; Note [Packed convolution weight] in
// conv_direct_avx512.cpp).
#include "conv_packed.h"

#include <algorithm>
#include <array>

#include "conv_direct.h"
#include "conv_direct_avx2.h"
#include "flambeau/conv_utils.h"
#include "flambeau/dispatch.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "settings.h"

namespace flambeau::cpu {
namespace {

const ConvDirectKernels* direct() {
  const auto kernels = conv_direct_stub.get();
  return kernels ? &kernels() : nullptr;
}

/// The geometry of a 2-D forward convolution (input (N, C, H, W), out its output shape).
ConvGeo geo_2d(IntArrayRef in, IntArrayRef w, IntArrayRef out, IntArrayRef stride, IntArrayRef padding,
               IntArrayRef dilation, int64_t groups) {
  ConvGeo g;
  g.N = in[0], g.Cb = in[1], g.Hb = in[2], g.Wb = in[3];
  g.Cs = out[1], g.Hs = out[2], g.Ws = out[3];
  g.kh = w[2], g.kw = w[3], g.groups = groups;
  g.sh = stride[0], g.sw = stride[1], g.ph = padding[0], g.pw = padding[1], g.dh = dilation[0],
  g.dw = dilation[1];
  return g;
}

/// The weight's geometry for packing: only its channels, kernel and groups matter.
ConvGeo weight_geo(const Tensor& w, int64_t groups) {
  ConvGeo g;
  g.Cs = w.sizes()[0], g.Cb = w.sizes()[1] * groups, g.groups = groups;
  g.kh = w.sizes()[2], g.kw = w.sizes()[3];
  return g;
}

/// Whether the direct kernel runs a convolution of weight w (as conv.cpp would choose it).
bool packable(const Tensor& w, int64_t groups) {
  return direct() && w.dtype() == ScalarType::Float32 && w.dim() == 4 && w.device().type == DeviceType::CPU &&
         groups >= 1 && w.sizes()[0] % groups == 0 && w.sizes()[0] > 0 && w.sizes()[1] > 1;
}

/// The packed floats, then a tag of the kernel they were packed for: the setting that, with the weight's
/// shape, chooses it (backends.cpu.conv_direct_kernel changed since may pick the other kernel, whose blocks
/// of as many floats are laid out differently).
int64_t packed_size(const ConvGeo& g) { return direct()->packed_weight_floats(g) + 1; }
float kernel_tag() { return static_cast<float>(static_cast<int>(settings::conv_direct_kernel())); }

bool needs_grad(const Tensor& t) { return grad_mode_enabled() && t.requires_grad(); }

}  // namespace

Tensor pack_conv_weight(const Tensor& weight, int64_t groups) {
  if (!packable(weight, groups))
    return op::empty(IntArrayRef(std::array<int64_t, 1>{0}), ScalarType::Float32, weight.device());
  const ConvGeo g = weight_geo(weight, groups);
  const Tensor w = weight.is_contiguous() ? weight : op::contiguous(weight, MemoryFormat::Contiguous);
  const int64_t n = packed_size(g);
  Tensor packed = op::empty(IntArrayRef(std::array<int64_t, 1>{n}), ScalarType::Float32, weight.device());
  direct()->pack_weight(g, w.data<float>(), packed.data<float>());
  packed.data<float>()[n - 1] = kernel_tag();
  return packed;
}

Tensor conv_packed(const Tensor& input, const Tensor& weight, const Tensor& packed,
                   const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation, int64_t groups, const std::optional<Tensor>& residual, bool relu) {
  const char* op = "_conv_packed";
  const std::array<int64_t, 2> no_pad{0, 0};
  const IntArrayRef output_padding(no_pad.data(), std::min<size_t>(2, std::max<size_t>(1, stride.size())));
  const Shape out_shape = conv::check_and_output_shape(op, input, weight, bias, stride, padding, dilation,
                                                       false, output_padding, groups);
  const bool res_fits = !residual || (std::ranges::equal(residual->sizes(), out_shape) &&
                                      residual->dtype() == ScalarType::Float32 && residual->is_contiguous() &&
                                      residual->device() == input.device());
  // The tensors either direct kernel reads as they are: float32 NCHW memory on the weight's device,
  // nothing that needs a gradient.
  const bool plain =
      weight.dtype() == ScalarType::Float32 && weight.dim() == 4 && weight.device().type == DeviceType::CPU &&
      input.dim() == 4 && input.dtype() == ScalarType::Float32 && input.is_contiguous() &&
      weight.is_contiguous() && input.device() == weight.device() &&
      (!bias || bias->device() == weight.device()) && res_fits && input.numel() > 0 &&
      (!bias || (bias->is_contiguous() && bias->dtype() == ScalarType::Float32)) && !needs_grad(input) &&
      !needs_grad(weight) && !(bias && needs_grad(*bias)) && !(residual && needs_grad(*residual));
  bool fast = plain && packable(weight, groups) && packed.dtype() == ScalarType::Float32 &&
              packed.device() == weight.device() && packed.is_contiguous();
  ConvGeo g;
  if (fast) {
    g = geo_2d(input.sizes(), weight.sizes(), out_shape, stride, padding, dilation, groups);
    fast = !g.pointwise() && packed.numel() == packed_size(g) &&
           packed.data<float>()[packed.numel() - 1] == kernel_tag() && direct()->direct_conv_suits(g);
  }
  if (!fast && plain) {
    // No AVX-512 kernel (the weight was not packed): the AVX2 direct kernel takes the residual and
    // the relu in its stores as well (Note [AVX2 direct convolution]).
    const ConvGeo f = geo_2d(input.sizes(), weight.sizes(), out_shape, stride, padding, dilation, groups);
    if (const ConvDirectAvx2Kernels* avx2 = direct_avx2_kernels(); avx2 && avx2->suits(f)) {
      Tensor out = op::empty(IntArrayRef(out_shape), ScalarType::Float32, weight.device());
      avx2->forward(f, input.data<float>(), weight.data<float>(), bias ? bias->data<float>() : nullptr,
                    out.data<float>(), residual ? residual->data<float>() : nullptr, relu);
      return out;
    }
  }
  if (!fast) {
    Tensor y = op::convolution(input, weight, bias, stride, padding, dilation, false, output_padding, groups);
    if (residual) y = op::add(y, *residual, Scalar(1));
    return relu ? op::relu(y) : y;
  }
  Tensor out = op::empty(IntArrayRef(out_shape), ScalarType::Float32, weight.device());
  direct()->direct_conv_packed(g, input.data<float>(), packed.data<float>(),
                               bias ? bias->data<float>() : nullptr, out.data<float>(),
                               residual ? residual->data<float>() : nullptr, relu);
  return out;
}

}  // namespace flambeau::cpu
