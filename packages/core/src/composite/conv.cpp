// Convolution composites: conv1d/conv2d/conv_transpose1d/conv_transpose2d
// (argument checks in the caller's name, one int for every dim, unbatched
// inputs) over the primitive `convolution` (src/cpu/conv/conv.cpp), and the input
// and bias gradients of convolution, written with ops so that they are
// differentiable again (double backward).
#include "composite_generated.h"
#include "cpu/conv/conv_utils.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

Tensor conv_nd(const char* op, int64_t spatial, const Tensor& input, const Tensor& weight,
               const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
               IntArrayRef dilation, bool transposed, IntArrayRef output_padding, int64_t groups) {
  FB_CHECK_VALUE(input.dim() == spatial + 1 || input.dim() == spatial + 2, "[", op, "] expected a ",
                 spatial + 1, "-D (unbatched) or ", spatial + 2, "-D (batched) input, got input of size ",
                 conv::bracket_shape(input.sizes()));
  const bool unbatched = input.dim() == spatial + 1;
  const Tensor x = unbatched ? unsqueeze(input, 0) : input;
  const Shape s = conv::expand_param(stride, spatial, op, "stride");
  const Shape p = conv::expand_param(padding, spatial, op, "padding");
  const Shape d = conv::expand_param(dilation, spatial, op, "dilation");
  const Shape o = conv::expand_param(output_padding, spatial, op, "output_padding");
  FB_CHECK_VALUE(weight.dim() == spatial + 2, "[", op, "] expected a ", spatial + 2,
                 "-D weight, got weight of size ", conv::bracket_shape(weight.sizes()));
  conv::check_and_output_shape(op, x, weight, bias, s, p, d, transposed, o, groups);
  const Tensor out = op::convolution(x, weight, bias, s, p, d, transposed, o, groups);
  return unbatched ? squeeze(out, Shape{0}) : out;
}

}  // namespace

Tensor composite::conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, false, Shape{0}, groups);
}

Tensor composite::conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, false, Shape{0}, groups);
}

Tensor composite::conv_transpose1d(const Tensor& input, const Tensor& weight,
                                   const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                                   IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation, true, output_padding,
                 groups);
}

Tensor composite::conv_transpose2d(const Tensor& input, const Tensor& weight,
                                   const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                                   IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation, true, output_padding,
                 groups);
}

// The input gradient of convolution: a convolution of grad_output with the same
// weight, transposed when the forward was not (with the output_padding that gives
// back the input's size), and a plain one when the forward was transposed.
Tensor composite::convolution_backward_input(const Tensor& grad_output, const Tensor& weight,
                                             IntArrayRef input_size, IntArrayRef stride, IntArrayRef padding,
                                             IntArrayRef dilation, bool transposed,
                                             IntArrayRef output_padding, int64_t groups) {
  const int64_t spatial = static_cast<int64_t>(input_size.size()) - 2;
  FB_CHECK_VALUE(spatial >= 1 && grad_output.dim() == spatial + 2 && weight.dim() == spatial + 2,
                 "[convolution_backward_input] expected grad_output ",
                 conv::bracket_shape(grad_output.sizes()), " and weight ",
                 conv::bracket_shape(weight.sizes()), " to match the input size ",
                 conv::bracket_shape(input_size));
  if (!transposed) {
    Shape op_pad(static_cast<size_t>(spatial));
    for (int64_t i = 0; i < spatial; ++i) {
      const int64_t natural = (grad_output.sizes()[2 + i] - 1) * stride[i] - 2 * padding[i] +
                              dilation[i] * (weight.sizes()[2 + i] - 1) + 1;
      op_pad[i] = input_size[2 + i] - natural;
    }
    return op::convolution(grad_output, weight, std::nullopt, stride, padding, dilation, true, op_pad,
                           groups);
  }
  (void)output_padding;  // only widens the forward output; the slice below drops what it added
  Tensor r = op::convolution(grad_output, weight, std::nullopt, stride, padding, dilation, false,
                             Shape(static_cast<size_t>(spatial), 0), groups);
  // An output_padding of at least the stride (allowed below the dilation) adds
  // positions no input value reached: the plain convolution then yields more.
  for (int64_t i = 0; i < spatial; ++i)
    if (r.sizes()[2 + i] != input_size[2 + i]) r = op::slice(r, 2 + i, 0, input_size[2 + i], 1);
  return r;
}

Tensor composite::convolution_backward_bias(const Tensor& grad_output) {
  Shape dims{0};
  for (int64_t d = 2; d < grad_output.dim(); ++d) dims.push_back(d);
  return sum(grad_output, IntArrayRef(dims), false, std::nullopt);
}

}  // namespace flambeau
